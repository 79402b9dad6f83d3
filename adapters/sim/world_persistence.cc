// The world's file: plain JSON, written whole and renamed into place, read back whole. What it
// holds is read as outside input: an enum's number or a pod's phase that its type does not have
// is an error naming the file and the field, never a value made up.
#include "adapters/sim/world.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "adapters/sim/world_parts.h"

namespace tenon::sim {
namespace {

using json = nlohmann::json;

// A field of the world file holds a value its type does not have (Load names the file).
class BadField : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The path of item `i` of the array at `field`: "nodes[3]".
std::string Item(const std::string& field, std::size_t i) {
  return field + "[" + std::to_string(i) + "]";
}

// The number at `field` as an `E`, which it must be: an integer from 0 to `last`; `what` names
// the type in the error.
template <class E>
E EnumFrom(const json& j, E last, const std::string& field, const char* what) {
  const auto top = static_cast<std::int64_t>(last);
  if (!j.is_number_integer() || j.get<std::int64_t>() < 0 || j.get<std::int64_t>() > top) {
    throw BadField(field + ": " + j.dump() + " is not " + what + " (0 to " + std::to_string(top) +
                   ")");
  }
  return static_cast<E>(j.get<std::int64_t>());
}

TaintEffect EffectFrom(const json& j, const std::string& field) {
  return EnumFrom(j, TaintEffect::kNoExecute, field, "a taint effect");
}

json ResourcesJson(const Resources& r) {
  return {r.cpu.value, r.memory.value, r.pods, r.extended};
}
Resources ResourcesFrom(const json& j) {
  return {Millicores{j.at(0).get<std::int64_t>()}, Bytes{j.at(1).get<std::int64_t>()},
          j.at(2).get<std::int64_t>(),
          j.size() > 3 ? j.at(3).get<std::map<std::string, std::int64_t>>()
                       : std::map<std::string, std::int64_t>{}};
}

json TaintsJson(const std::vector<Taint>& taints) {
  json out = json::array();
  for (const auto& t : taints) out.push_back({t.key, t.value, static_cast<int>(t.effect)});
  return out;
}
std::vector<Taint> TaintsFrom(const json& j, const std::string& field) {
  std::vector<Taint> out;
  for (const auto& t : j) {
    out.push_back({t.at(0).get<std::string>(), t.at(1).get<std::string>(),
                   EffectFrom(t.at(2), Item(Item(field, out.size()), 2))});
  }
  return out;
}

json TolerationsJson(const std::vector<Toleration>& tolerations) {
  json out = json::array();
  for (const auto& t : tolerations) {
    out.push_back({t.key, t.op_exists, t.value, t.effect ? static_cast<int>(*t.effect) : -1});
  }
  return out;
}
std::vector<Toleration> TolerationsFrom(const json& j, const std::string& field) {
  std::vector<Toleration> out;
  for (const auto& t : j) {
    Toleration tol{t.at(0).get<std::string>(), t.at(1).get<bool>(), t.at(2).get<std::string>(),
                   std::nullopt};
    // -1: the toleration names no effect (it tolerates every effect).
    if (t.at(3) != -1) tol.effect = EffectFrom(t.at(3), Item(Item(field, out.size()), 3));
    out.push_back(std::move(tol));
  }
  return out;
}

json PodJson(const Pod& p) {
  return {{"ns", p.ns},
          {"name", p.name},
          {"uid", p.uid},
          {"requests", ResourcesJson(p.requests)},
          {"node", p.node_name},
          {"unschedulable", p.unschedulable},
          {"phase", PodPhaseText(p.phase)},
          {"owner", p.owner_kind},
          {"created", p.created.value},
          {"labels", *p.labels},
          {"selector", p.constraints->node_selector},
          {"tolerations", TolerationsJson(p.constraints->tolerations)},
          {"doNotDisrupt", p.do_not_disrupt},
          {"doNotDisruptFor", p.do_not_disrupt_for.value},
          {"priorityValue", p.priority ? json(*p.priority) : json()},
          {"grace", p.termination_grace.value},
          {"zoneSpread", p.constraints->topology_spread.empty()
                             ? 0
                             : p.constraints->topology_spread.front().max_skew},
          {"priority", p.priority_class}};
}
Pod PodFrom(const json& j, const std::string& field) {
  Pod p;
  p.ns = j.at("ns").get<std::string>();
  p.name = j.at("name");
  p.uid = j.at("uid");
  p.requests = ResourcesFrom(j.at("requests"));
  p.node_name = j.at("node").get<std::string>();
  p.unschedulable = j.at("unschedulable");
  const std::string phase = j.at("phase");
  p.phase = PodPhaseFrom(phase);
  if (phase != PodPhaseText(p.phase)) {
    throw BadField(field + ".phase: \"" + phase + "\" is not a pod phase");
  }
  p.owner_kind = j.at("owner").get<std::string>();
  p.created = Nanos{j.at("created").get<std::int64_t>()};
  p.labels = j.at("labels").get<Labels>();
  PodConstraints constraints;
  constraints.node_selector = j.at("selector").get<Labels>();
  constraints.tolerations = TolerationsFrom(j.at("tolerations"), field + ".tolerations");
  p.do_not_disrupt = j.at("doNotDisrupt");
  p.do_not_disrupt_for = Nanos{j.value("doNotDisruptFor", std::int64_t{0})};
  if (j.contains("priorityValue") && !j.at("priorityValue").is_null()) {
    p.priority = j.at("priorityValue").get<std::int32_t>();
  }
  p.termination_grace = Nanos{j.at("grace").get<std::int64_t>()};
  if (auto skew = j.value("zoneSpread", 0); skew > 0) {
    constraints.topology_spread.push_back(ZoneSpread(skew, p.labels->at("app")));
  }
  p.constraints = std::move(constraints);
  p.priority_class = j.at("priority").get<std::string>();
  return p;
}

json TermsJson(const std::vector<NodeSelectorTerm>& terms) {
  json out = json::array();
  for (const auto& term : terms) {
    json t = json::array();
    for (const auto& r : term.requirements) t.push_back({r.key, static_cast<int>(r.op), r.values});
    out.push_back(t);
  }
  return out;
}
std::vector<NodeSelectorTerm> TermsFrom(const json& j, const std::string& field) {
  std::vector<NodeSelectorTerm> out;
  for (const auto& t : j) {
    NodeSelectorTerm term;
    for (const auto& r : t) {
      const std::string at = Item(Item(Item(field, out.size()), term.requirements.size()), 1);
      term.requirements.push_back({r.at(0).get<std::string>(),
                                   EnumFrom(r.at(1), RequirementOp::kLt, at, "an operator"),
                                   r.at(2).get<std::vector<std::string>>()});
    }
    out.push_back(std::move(term));
  }
  return out;
}

json NodeJson(const Node& n) {
  return {{"name", n.name},
          {"provider", n.provider_id},
          {"labels", n.labels.ToLabels()},
          {"taints", TaintsJson(n.taints)},
          {"ready", n.ready},
          {"allocatable", ResourcesJson(n.allocatable)},
          {"created", n.created.value},
          {"doNotDisrupt", n.do_not_disrupt}};
}
Node NodeFrom(const json& j, const std::string& field) {
  return {j.at("name"),
          j.at("provider"),
          j.at("labels").get<Labels>(),
          TaintsFrom(j.at("taints"), field + ".taints"),
          j.at("ready"),
          ResourcesFrom(j.at("allocatable")),
          Nanos{j.at("created").get<std::int64_t>()},
          {},
          j.at("doNotDisrupt").get<bool>()};
}

json InstanceJson(const SimInstance& i) {
  return {{"id", i.id},
          {"nodeclaim", i.nodeclaim},
          {"nodepool", i.nodepool},
          {"type", i.instance_type},
          {"zone", i.zone},
          {"capacity", i.capacity_type},
          {"price", i.price.value},
          {"launched", i.launched.value},
          {"node", i.node_name},
          {"image", i.image_id}};
}
SimInstance InstanceFrom(const json& j) {
  return {j.at("id"),
          j.at("nodeclaim"),
          j.at("nodepool"),
          j.at("type"),
          j.at("zone"),
          j.at("capacity"),
          MicroUsdPerHour{j.at("price").get<std::int64_t>()},
          Nanos{j.at("launched").get<std::int64_t>()},
          j.at("node"),
          j.value("image", std::string())};
}

}  // namespace

bool World::Load() {
  if (state_file_.empty() || !std::filesystem::exists(state_file_)) return false;
  std::ifstream in(state_file_);
  if (!in) throw ScenarioError("cannot read the world file " + state_file_.string());
  try {
    LoadFrom(json::parse(in));
  } catch (const json::exception& e) {
    throw ScenarioError(state_file_.string() + ": damaged world file: " + e.what());
  } catch (const BadField& e) {
    throw ScenarioError(state_file_.string() + ": damaged world file: " + e.what());
  }
  return true;
}

void World::LoadFrom(const json& j) {
  if (j.at("version") != kVersion)
    throw ScenarioError(state_file_.string() + ": world file of an unknown version");
  now_ = Nanos{j.at("now").get<std::int64_t>()};
  started_ = j.at("started");
  next_workload_ = j.at("next_workload");
  next_instance_ = j.at("next_instance");
  next_timer_ = j.at("next_timer");
  next_pod_ = j.at("next_pod");
  ami_release_ = j.value("ami_release", std::int64_t{1});
  launch_calls_ = j.at("launch_calls");
  next_listing_ = Nanos{j.at("next_listing").get<std::int64_t>()};
  next_message_ = j.at("next_message");
  LoadCloud(j);
  LoadObjects(j);
  LoadWorkloads(j);
  LoadActionsRun(j);
  LoadNodePools(j);
  LoadTimers(j);
}

void World::LoadCloud(const json& j) {
  if (j.contains("planned")) {
    for (const auto& [claim, r] : j.at("planned").items()) planned_[claim] = ResourcesFrom(r);
  }
  overestimated_ = j.value("overestimated", std::map<std::string, std::string>{});
  for (const auto& i : j.at("instances")) instances_[i.at("id")] = InstanceFrom(i);
  client_tokens_ = j.at("tokens").get<std::map<std::string, std::string>>();
  nodeclaims_ = j.at("nodeclaims").get<std::map<std::string, std::string>>();
  deleting_ = j.at("deleting").get<std::set<std::string>>();
  nodeclass_finalizers_ = j.value("nodeclass_finalizers", std::set<std::string>{});
}

void World::LoadObjects(const json& j) {
  // The world as it was saved replaces the scenario's starting objects.
  nodes_.clear();
  claims_.clear();
  volumes_.clear();
  std::size_t i = 0;
  for (const auto& n : j.at("nodes")) {
    node_parts_.Share(nodes_[n.at("name")] = NodeFrom(n, Item("nodes", i++)),
                      pod_parts_.node_names);
  }
  for (const auto& c : j.value("claims", json::array())) {
    PersistentVolumeClaim claim{c.at(0), c.at(1), c.at(2), c.at(3)};
    claims_[PodKey(claim.ns, claim.name)] = claim;
  }
  i = 0;
  for (const auto& v : j.value("volumes", json::array())) {
    volumes_[v.at(0)] =
        PersistentVolume{v.at(0), v.at(1), TermsFrom(v.at(2), Item(Item("volumes", i++), 2))};
  }
  i = 0;
  for (const auto& p : j.at("pods")) LoadPod(p, Item("pods", i++));
}

void World::LoadPod(const json& p, const std::string& field) {
  Pod pod = PodFrom(p, field);
  if (p.contains("template")) {
    // Constraints come from the template the pod was made from, its own claims from the file.
    const std::string key = p.at("template");
    const Pod* made_from = TemplateOf(key);
    if (made_from == nullptr) {
      throw ScenarioError(state_file_.string() + ": the world file is of another scenario (" +
                          "no pod template " + key + ")");
    }
    PodConstraints constraints = *made_from->constraints;
    constraints.volume_claims = p.at("claims").get<std::vector<std::string>>();
    pod.constraints = std::move(constraints);
    pod.deletion_cost = made_from->deletion_cost;
    pod_template_[PodKey(pod.ns, pod.name)] = key;
  }
  InsertPod(std::move(pod));
}

void World::LoadWorkloads(const json& j) {
  next_bare_pod_ = j.value("next_bare_pod", std::size_t{0});
  replicas_ = j.at("replicas").get<std::map<std::string, std::int64_t>>();
  deployments_ = j.at("deployments").get<std::map<std::string, std::size_t>>();
  next_job_ = j.value("next_job", std::size_t{0});
  job_pods_left_ = j.value("job_pods_left", std::map<std::string, std::int64_t>{});
}

void World::LoadActionsRun(const json& j) {
  next_action_ = j.at("next_action");
  if (next_action_ > scenario_.actions.size()) {
    throw ScenarioError(state_file_.string() + ": the world file is of another scenario (" +
                        std::to_string(next_action_) + " actions run, the scenario has " +
                        std::to_string(scenario_.actions.size()) + ")");
  }
  // Price changes and NodePool edits are not stored: the actions already run say what they were.
  for (std::size_t i = 0; i < next_action_; ++i) {
    if (scenario_.actions[i].kind == Action::Kind::kPriceChange) ChangePrice(scenario_.actions[i]);
    if (scenario_.actions[i].kind == Action::Kind::kCatalogRefresh) {
      catalog_ = scenario_.actions[i].catalog;
    }
    if (scenario_.actions[i].kind == Action::Kind::kApplyNodePool) {
      ApplyNodePool(scenario_.actions[i].nodepool);
    }
  }
}

void World::LoadNodePools(const json& j) {
  added_pool_labels_ = j.at("added_pool_labels").get<std::map<std::string, Labels>>();
  for (const auto& [pool, st] : j.at("pool_status").items()) {
    NodePoolStatus status;
    // Registration health: -1 not known, 0 unhealthy, 1 healthy.
    if (st.at(0) != -1 && st.at(0) != 0 && st.at(0) != 1) {
      throw BadField("pool_status." + pool + "[0]: " + st.at(0).dump() + " is not -1, 0 or 1");
    }
    if (st.at(0).get<int>() >= 0) status.registration_healthy = st.at(0).get<int>() == 1;
    status.nodes = st.at(1).get<std::int64_t>();
    pool_status_[pool] = status;
  }
}

void World::LoadTimers(const json& j) {
  std::size_t i = 0;
  for (const auto& t : j.at("timers")) {
    const Timer::Kind kind =
        EnumFrom(t.at(2), Timer::Kind::kLaunchAnswer, Item(Item("timers", i++), 2), "a timer kind");
    timers_[{t.at(0).get<std::int64_t>(), t.at(1).get<std::uint64_t>()}] =
        Timer{kind, t.at(3).get<std::string>(), t.size() > 4 ? t.at(4).get<std::uint64_t>() : 0};
  }
}

void World::Save() const {
  if (state_file_.empty()) return;
  json j;
  j["version"] = kVersion;
  j["now"] = now_.value;
  j["started"] = started_;
  j["next_workload"] = next_workload_;
  j["next_instance"] = next_instance_;
  j["next_timer"] = next_timer_;
  j["next_pod"] = next_pod_;
  j["launch_calls"] = launch_calls_;
  j["planned"] = json::object();
  for (const auto& [claim, r] : planned_) j["planned"][claim] = ResourcesJson(r);
  j["overestimated"] = overestimated_;
  j["ami_release"] = ami_release_;
  j["instances"] = json::array();
  for (const auto& [id, i] : instances_) j["instances"].push_back(InstanceJson(i));
  j["tokens"] = client_tokens_;
  j["nodeclaims"] = nodeclaims_;
  j["nodeclass_finalizers"] = nodeclass_finalizers_;
  j["nodes"] = json::array();
  for (const auto& [name, n] : nodes_) j["nodes"].push_back(NodeJson(n));
  j["pods"] = json::array();
  for (const auto& [key, p] : pods_) {
    json pod = PodJson(p);
    if (auto t = pod_template_.find(key); t != pod_template_.end()) {
      pod["template"] = t->second;
      pod["claims"] = p.constraints->volume_claims;
    }
    j["pods"].push_back(std::move(pod));
  }
  j["next_bare_pod"] = next_bare_pod_;
  j["claims"] = json::array();
  for (const auto& [key, c] : claims_) {
    j["claims"].push_back({c.ns, c.name, c.storage_class, c.volume_name});
  }
  j["volumes"] = json::array();
  for (const auto& [name, v] : volumes_) {
    j["volumes"].push_back({v.name, v.csi_driver, TermsJson(v.node_affinity)});
  }
  j["replicas"] = replicas_;
  j["deleting"] = deleting_;
  j["deployments"] = deployments_;
  j["next_action"] = next_action_;
  j["next_job"] = next_job_;
  j["job_pods_left"] = job_pods_left_;
  j["next_listing"] = next_listing_.value;
  j["next_message"] = next_message_;
  j["added_pool_labels"] = added_pool_labels_;
  j["pool_status"] = json::object();
  for (const auto& [pool, status] : pool_status_) {
    int healthy = status.registration_healthy ? (*status.registration_healthy ? 1 : 0) : -1;
    j["pool_status"][pool] = {healthy, status.nodes};
  }
  j["timers"] = json::array();
  for (const auto& [key, t] : timers_) {
    j["timers"].push_back(
        {key.first, key.second, static_cast<int>(t.kind), t.instance_id, t.command});
  }
  auto tmp = state_file_;
  tmp += ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << j.dump();
    if (!out) throw ScenarioError("cannot write " + tmp.string());
  }
  std::filesystem::rename(tmp, state_file_);
}

}  // namespace tenon::sim
