#include "adapters/sim/world.h"
#include "adapters/sim/kubelet.h"

#include <algorithm>
#include <cassert>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

namespace tenon::sim {
namespace {

using json = nlohmann::json;

constexpr const char* kVersion = "tenon-sim/1";
// What the node lifecycle controller taints a cordoned (spec.unschedulable) node with.
constexpr const char* kUnschedulableTaint = "node.kubernetes.io/unschedulable";
[[maybe_unused]] constexpr std::size_t kTimersMax = 1'000'000;  // Only asserted.

std::uint64_t Mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// ---- persistence: plain JSON, written whole and renamed into place ----

json ResourcesJson(const Resources& r) {
  return {r.cpu.value, r.memory.value, r.pods, r.extended};
}
Resources ResourcesFrom(const json& j) {
  return {Millicores{j.at(0).get<std::int64_t>()}, Bytes{j.at(1).get<std::int64_t>()},
          j.at(2).get<std::int64_t>(),
          j.size() > 3 ? j.at(3).get<std::map<std::string, std::int64_t>>()
                       : std::map<std::string, std::int64_t>{}};
}

// A zone topology spread constraint over the pods of app `app` (DoNotSchedule).
TopologySpreadConstraint ZoneSpread(std::int32_t max_skew, const std::string& app) {
  TopologySpreadConstraint spread;
  spread.max_skew = max_skew;
  spread.topology_key = label::kZone;
  spread.selector.match_labels["app"] = app;
  return spread;
}

json TaintsJson(const std::vector<Taint>& taints) {
  json out = json::array();
  for (const auto& t : taints) out.push_back({t.key, t.value, static_cast<int>(t.effect)});
  return out;
}
std::vector<Taint> TaintsFrom(const json& j) {
  std::vector<Taint> out;
  for (const auto& t : j) {
    out.push_back({t.at(0).get<std::string>(), t.at(1).get<std::string>(),
                   static_cast<TaintEffect>(t.at(2).get<int>())});
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
std::vector<Toleration> TolerationsFrom(const json& j) {
  std::vector<Toleration> out;
  for (const auto& t : j) {
    Toleration tol{t.at(0).get<std::string>(), t.at(1).get<bool>(), t.at(2).get<std::string>(),
                   std::nullopt};
    if (int e = t.at(3).get<int>(); e >= 0) tol.effect = static_cast<TaintEffect>(e);
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
Pod PodFrom(const json& j) {
  Pod p;
  p.ns = j.at("ns").get<std::string>();
  p.name = j.at("name");
  p.uid = j.at("uid");
  p.requests = ResourcesFrom(j.at("requests"));
  p.node_name = j.at("node").get<std::string>();
  p.unschedulable = j.at("unschedulable");
  p.phase = PodPhaseFrom(j.at("phase"));
  p.owner_kind = j.at("owner").get<std::string>();
  p.created = Nanos{j.at("created").get<std::int64_t>()};
  p.labels = j.at("labels").get<Labels>();
  PodConstraints constraints;
  constraints.node_selector = j.at("selector").get<Labels>();
  constraints.tolerations = TolerationsFrom(j.at("tolerations"));
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
std::vector<NodeSelectorTerm> TermsFrom(const json& j) {
  std::vector<NodeSelectorTerm> out;
  for (const auto& t : j) {
    NodeSelectorTerm term;
    for (const auto& r : t) {
      term.requirements.push_back({r.at(0).get<std::string>(),
                                   static_cast<RequirementOp>(r.at(1).get<int>()),
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
Node NodeFrom(const json& j) {
  return {j.at("name"),
          j.at("provider"),
          j.at("labels").get<Labels>(),
          TaintsFrom(j.at("taints")),
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

// What a bound pod takes of its node's room: its requests and one pod.
Resources Need(const Pod& pod) {
  Resources need = pod.requests;
  need.pods = 1;
  return need;
}

// The constraints a scenario's workload gives its pods: a nodeSelector and tolerations.
template <class Workload>
PodConstraints Placement(const Workload& w) {
  PodConstraints c;
  c.node_selector = w.node_selector;
  c.tolerations = w.tolerations;
  return c;
}

// What kube-scheduler's filter looks at in a pod: pods with the same shape fit the same nodes.
std::string Shape(const Pod& pod) {
  std::string shape =
      std::to_string(pod.requests.cpu.value) + " " + std::to_string(pod.requests.memory.value);
  for (const auto& [name, count] : pod.requests.extended) {
    shape += " " + name + "=" + std::to_string(count);
  }
  shape += " |";
  for (const auto& [key, value] : pod.constraints->node_selector) {
    shape += " " + key + "=" + value;
  }
  shape += " |";
  for (const auto& t : pod.constraints->tolerations) {
    shape += " " + t.key + (t.op_exists ? "?" : "=" + t.value) + ":" +
             std::to_string(t.effect ? static_cast<int>(*t.effect) : -1);
  }
  return shape;
}

}  // namespace

World::World(const Scenario& scenario, std::filesystem::path state_file)
    : scenario_(scenario),
      state_file_(std::move(state_file)),
      catalog_(scenario.catalog),
      nodepools_(scenario.nodepools),
      now_(scenario.start) {
  for (const auto& sc : scenario.storage_classes) storage_classes_[sc.name] = sc;
  for (const auto& c : scenario.claims) {
    PersistentVolumeClaim& claim = claims_[PodKey(c.ns, c.name)] = c;
    ProvisionAtOnce(claim);
  }
  for (const auto& v : scenario.volumes) volumes_[v.name] = v;
  for (const auto& n : scenario.nodes) {
    Node& node = nodes_[n.name] = n;
    node_parts_.Share(node, pod_parts_.node_names);
  }
  // A dump's NodeClaims are instances the cloud already runs, each behind its Node.
  for (const auto& claim : scenario.nodeclaims) {
    SimInstance instance;
    instance.id = claim.instance_id;
    instance.nodeclaim = claim.name;
    instance.nodepool = claim.nodepool;
    instance.instance_type = claim.instance_type;
    instance.zone = claim.zone;
    instance.capacity_type = claim.capacity_type;
    instance.launched = claim.created;
    instance.node_name = claim.node_name;
    instance.image_id = claim.image_id;
    instance.price = PriceNow(instance);
    client_tokens_[claim.name] = instance.id;
    nodeclaims_[claim.name] = claim.nodepool;
    instances_[instance.id] = std::move(instance);
  }
}

const Pod* World::TemplateOf(const std::string& key) const {
  auto it = scenario_.templates.find(key);
  return it == scenario_.templates.end() ? nullptr : &it->second;
}

ClusterView World::View() const {
  return {nodes_, pods_, on_node_, claims_, volumes_, storage_classes_, refusing_pods_ > 0};
}

bool World::Load() {
  if (state_file_.empty() || !std::filesystem::exists(state_file_)) return false;
  std::ifstream in(state_file_);
  if (!in) throw ScenarioError("cannot read the world file " + state_file_.string());
  try {
    LoadFrom(json::parse(in));
  } catch (const json::exception& e) {
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
  if (j.contains("planned")) {
    for (const auto& [claim, r] : j.at("planned").items()) planned_[claim] = ResourcesFrom(r);
  }
  overestimated_ = j.value("overestimated", std::map<std::string, std::string>{});
  for (const auto& i : j.at("instances")) instances_[i.at("id")] = InstanceFrom(i);
  client_tokens_ = j.at("tokens").get<std::map<std::string, std::string>>();
  nodeclaims_ = j.at("nodeclaims").get<std::map<std::string, std::string>>();
  nodeclass_finalizers_ = j.value("nodeclass_finalizers", std::set<std::string>{});
  // The world as it was saved replaces the scenario's starting objects.
  nodes_.clear();
  claims_.clear();
  volumes_.clear();
  for (const auto& n : j.at("nodes")) {
    node_parts_.Share(nodes_[n.at("name")] = NodeFrom(n), pod_parts_.node_names);
  }
  for (const auto& c : j.value("claims", json::array())) {
    PersistentVolumeClaim claim{c.at(0), c.at(1), c.at(2), c.at(3)};
    claims_[PodKey(claim.ns, claim.name)] = claim;
  }
  for (const auto& v : j.value("volumes", json::array())) {
    volumes_[v.at(0)] = PersistentVolume{v.at(0), v.at(1), TermsFrom(v.at(2))};
  }
  for (const auto& p : j.at("pods")) {
    Pod pod = PodFrom(p);
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
  next_bare_pod_ = j.value("next_bare_pod", std::size_t{0});
  replicas_ = j.at("replicas").get<std::map<std::string, std::int64_t>>();
  deleting_ = j.at("deleting").get<std::set<std::string>>();
  deployments_ = j.at("deployments").get<std::map<std::string, std::size_t>>();
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
  next_job_ = j.value("next_job", std::size_t{0});
  job_pods_left_ = j.value("job_pods_left", std::map<std::string, std::int64_t>{});
  next_listing_ = Nanos{j.at("next_listing").get<std::int64_t>()};
  next_message_ = j.at("next_message");
  added_pool_labels_ = j.at("added_pool_labels").get<std::map<std::string, Labels>>();
  for (const auto& [pool, st] : j.at("pool_status").items()) {
    NodePoolStatus status;
    if (st.at(0).get<int>() >= 0) status.registration_healthy = st.at(0).get<int>() == 1;
    status.nodes = st.at(1).get<std::int64_t>();
    pool_status_[pool] = status;
  }
  for (const auto& t : j.at("timers")) {
    timers_[{t.at(0).get<std::int64_t>(), t.at(1).get<std::uint64_t>()}] =
        Timer{static_cast<Timer::Kind>(t.at(2).get<int>()), t.at(3).get<std::string>(),
              t.size() > 4 ? t.at(4).get<std::uint64_t>() : 0};
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

std::vector<Event> World::StartupEvents(const State& known) const {
  std::vector<Event> events;
  events.push_back(Tick{now_});
  events.push_back(ControllerStarted{kVersion, scenario_.seed, scenario_.settings});
  events.push_back(CatalogRefreshed{catalog_});
  for (auto& e : Relist(known)) events.push_back(std::move(e));
  return events;
}

std::vector<Event> World::Relist(const State& known) const {
  std::vector<Event> events = ListEvents();
  for (const auto& [key, pod] : known.pods) {
    if (!pods_.contains(key)) events.push_back(PodDeleted{pod.ns, pod.name});
  }
  for (const auto& [name, node] : known.nodes) {
    if (!nodes_.contains(name)) events.push_back(NodeDeleted{name});
  }
  return events;
}

std::vector<Event> World::ListEvents() const {
  std::vector<Event> events;
  for (const auto& c : scenario_.nodeclasses) {
    events.push_back(NodeClassUpserted{Resolved(c)});
    events.push_back(NodeClassResolved{c.name, Resolution(c)});
  }
  for (const auto& p : nodepools_) events.push_back(NodePoolUpserted{Pool(p)});
  for (const auto& d : scenario_.daemonsets) {
    events.push_back(DaemonSetUpserted{DaemonSet{d.ns, d.name, DaemonPod(d)}});
  }
  for (const auto& [name, sc] : storage_classes_) events.push_back(StorageClassUpserted{sc});
  for (const auto& [name, v] : volumes_) events.push_back(PersistentVolumeUpserted{v});
  for (const auto& [key, c] : claims_) events.push_back(PersistentVolumeClaimUpserted{c});
  for (const auto& c : scenario_.csi_nodes) events.push_back(CsiNodeUpserted{c});
  for (const auto& claim : scenario_.nodeclaims) {
    if (nodeclaims_.contains(claim.name)) events.push_back(NodeClaimObserved{claim});
  }
  for (const auto& [name, node] : nodes_) events.push_back(NodeUpserted{node});
  for (const auto& [key, pod] : pods_) events.push_back(PodUpserted{pod});
  return events;
}

std::vector<Event> World::Advance(Nanos now) {
  assert(now >= now_);
  now_ = now;
  started_ = true;
  std::vector<Event> events = CreatePods();
  for (auto& e : ScaleWorkloads()) events.push_back(std::move(e));
  for (auto& e : StartJobs()) events.push_back(std::move(e));
  for (auto& e : RunActions()) events.push_back(std::move(e));
  for (auto& e : FireTimers()) events.push_back(std::move(e));
  for (auto& e : TopUp()) events.push_back(std::move(e));
  for (auto& e : Schedule()) events.push_back(std::move(e));
  for (auto& e : PublishBudgets()) events.push_back(std::move(e));
  for (auto& e : ListInstances()) events.push_back(std::move(e));
  events.push_back(Tick{now_});
  return events;
}

std::vector<Event> World::ScaleWorkloads() {
  std::vector<Event> events;
  while (next_workload_ < scenario_.workloads.size() &&
         scenario_.start + scenario_.workloads[next_workload_].at <= now_) {
    const WorkloadStep& step = scenario_.workloads[next_workload_++];
    // A step that only scales (no requests given) keeps the deployment's pod template.
    std::string key = step.ns + "/" + step.name;
    auto known = deployments_.find(key);
    bool scale_only =
        known != deployments_.end() && step.template_key.empty() && step.requests == Resources{};
    const WorkloadStep& pod_template = scale_only ? scenario_.workloads[known->second] : step;
    auto existing = PodsOf(step.ns, step.name);
    std::int64_t have = static_cast<std::int64_t>(existing.size());
    // Scale down removes the newest pods first, as a ReplicaSet prefers.
    std::sort(existing.begin(), existing.end(), [](const auto& a, const auto& b) {
      const std::string &x = a->second.uid, &y = b->second.uid;
      return x.size() != y.size() ? x.size() > y.size() : x > y;
    });
    for (std::int64_t i = 0; i < have - step.replicas; ++i) {
      events.push_back(PodDeleted{existing[i]->second.ns, existing[i]->second.name});
      ErasePod(existing[i]);
      room_may_have_changed_ = true;
    }
    for (std::int64_t i = have; i < step.replicas; ++i) AddWorkloadPod(pod_template, events);
    replicas_[key] = step.replicas;
    if (!scale_only) deployments_[key] = next_workload_ - 1;
  }
  return events;
}

// What a deployment's and a job's pods share: a numbered name and uid, the owner, the template.
template <class Template>
Pod World::TemplatePod(const Template& t, const char* owner_kind) {
  Pod pod;
  pod.ns = t.ns;
  pod.name = t.name + "-" + std::to_string(next_pod_);
  pod.uid = "uid-" + std::to_string(next_pod_++);
  pod.requests = t.requests;
  pod.owner_kind = owner_kind;
  pod.created = now_;
  pod.labels = Labels{{"app", t.name}};
  pod.constraints = Placement(t);
  return pod;
}

namespace {

// A deployment's pods' labels: app=<name> over the step's others.
Labels PodLabels(const WorkloadStep& step) {
  Labels labels = step.labels;
  labels["app"] = step.name;
  return labels;
}

}  // namespace

Pod World::FromTemplate(const std::string& template_key, const std::string& ns,
                        const std::string& name, const char* owner_kind) {
  Pod pod = *TemplateOf(template_key);
  pod.ns = ns;
  pod.name = name;
  pod.uid = "uid-" + std::to_string(next_pod_++);
  pod.owner_kind = owner_kind;
  pod.created = now_;
  pod.unschedulable = false;  // The scheduler has not looked at it yet.
  pod_template_[PodKey(ns, name)] = template_key;
  return pod;
}

void World::AddWorkloadPod(const WorkloadStep& step, std::vector<Event>& events) {
  if (step.template_key.empty()) {
    events.push_back(AddPending(NewPod(step)));
    return;
  }
  std::string name = step.name + "-" + std::to_string(next_pod_);
  if (step.stateful) {
    // A StatefulSet's pods are named by ordinal: the lowest one missing comes back.
    std::int64_t ordinal = 0;
    while (pods_.contains(PodKey(step.ns, step.name + "-" + std::to_string(ordinal)))) ++ordinal;
    name = step.name + "-" + std::to_string(ordinal);
  }
  Pod pod =
      FromTemplate(step.template_key, step.ns, name, step.stateful ? "StatefulSet" : "ReplicaSet");
  if (step.stateful) {
    for (auto& e : ClaimsFor(step, pod)) events.push_back(std::move(e));
  }
  events.push_back(AddPending(std::move(pod)));
}

std::vector<Event> World::ClaimsFor(const WorkloadStep& step, Pod& pod) {
  std::vector<Event> events;
  PodConstraints& constraints = pod.constraints.Mutable();
  for (const auto& t : step.claim_templates) {
    const std::string name = t.name + "-" + pod.name;
    constraints.volume_claims.push_back(name);
    // The claim outlives its pod, as a StatefulSet's does: a replacement finds its volume.
    auto [it, fresh] = claims_.try_emplace(
        PodKey(step.ns, name), PersistentVolumeClaim{step.ns, name, t.storage_class, ""});
    if (!fresh) continue;
    if (const PersistentVolume* volume = ProvisionAtOnce(it->second)) {
      events.push_back(PersistentVolumeUpserted{*volume});
    }
    events.push_back(PersistentVolumeClaimUpserted{it->second});
  }
  return events;
}

const PersistentVolume* World::ProvisionAtOnce(PersistentVolumeClaim& claim) {
  auto sc = storage_classes_.find(claim.storage_class);
  if (!claim.volume_name.empty() || sc == storage_classes_.end() ||
      sc->second.wait_for_first_consumer) {
    return nullptr;
  }
  // The provisioner picks the zone, knowing nothing of the pods: the first the class allows,
  // else the first the cloud offers.
  std::string zone;
  for (const auto& term : sc->second.allowed_topologies) {
    for (const auto& r : term.requirements) {
      if (r.key == label::kZone && !r.values.empty() && zone.empty()) zone = r.values.front();
    }
  }
  if (zone.empty()) {
    for (const auto& type : catalog_) {
      for (const auto& o : type.offerings) {
        if (zone.empty() || o.zone < zone) zone = o.zone;
      }
    }
  }
  PersistentVolume volume;
  volume.name = "pv-" + claim.ns + "-" + claim.name;
  volume.csi_driver = sc->second.provisioner;
  if (!zone.empty()) {
    volume.node_affinity.push_back({{{std::string(label::kZone), RequirementOp::kIn, {zone}}}});
  }
  claim.volume_name = volume.name;
  return &(volumes_[volume.name] = volume);
}

std::vector<Event> World::ProvisionFor(const Pod& pod) {
  std::vector<Event> events;
  const Node& node = nodes_.at(pod.node_name.str());
  for (const auto& name : pod.constraints->volume_claims) {
    auto claim = claims_.find(PodKey(pod.ns.str(), name));
    if (claim == claims_.end() || !claim->second.volume_name.empty()) continue;
    PersistentVolume volume;
    volume.name = "pv-" + pod.ns.str() + "-" + name;
    if (auto sc = storage_classes_.find(claim->second.storage_class);
        sc != storage_classes_.end()) {
      volume.csi_driver = sc->second.provisioner;
    }
    // The volume lives in the zone of the node it was made for.
    if (auto zone = node.labels.Lookup(label::kZone)) {
      volume.node_affinity.push_back(
          {{{std::string(label::kZone), RequirementOp::kIn, {std::string(*zone)}}}});
    }
    claim->second.volume_name = volume.name;
    volumes_[volume.name] = volume;
    events.push_back(PersistentVolumeUpserted{volume});
    events.push_back(PersistentVolumeClaimUpserted{claim->second});
  }
  return events;
}

// Bare pods of the scenario appear at their time, bound when they name their node.
std::vector<Event> World::CreatePods() {
  std::vector<Event> events;
  while (next_bare_pod_ < scenario_.pods.size() && scenario_.pods[next_bare_pod_].created <= now_) {
    Pod pod = scenario_.pods[next_bare_pod_++];
    if (!pod.node_name.empty() && !nodes_.contains(pod.node_name.str())) {
      pod.node_name = SharedText();  // Its node is gone: the pod waits to be scheduled.
      pod.phase = PodPhase::kPending;
    }
    if (!pod.node_name.empty()) pod_parts_.node_names.Intern(pod.node_name.SharedForInterning());
    pod.unschedulable = false;  // The simulated scheduler looks at it afresh.
    const std::string key = PodKey(pod.ns, pod.name);
    if (auto adopted = scenario_.adopted.find(key); adopted != scenario_.adopted.end()) {
      pod_template_[key] = adopted->second;  // A replica of that workload from now on.
    }
    events.push_back(PodUpserted{InsertPod(std::move(pod))});
  }
  return events;
}

Pod World::NewPod(const WorkloadStep& step) {
  Pod pod = TemplatePod(step, "ReplicaSet");
  if (!step.labels.empty()) pod.labels = PodLabels(step);
  pod.do_not_disrupt = step.do_not_disrupt;
  pod.do_not_disrupt_for = step.do_not_disrupt_for;
  pod.termination_grace = step.termination_grace;
  pod.priority_class = step.priority_class;
  pod.priority = step.priority;
  if (step.zone_spread_max_skew > 0) {
    pod.constraints.Mutable().topology_spread.push_back(
        ZoneSpread(step.zone_spread_max_skew, step.name));
  }
  return pod;
}

PodUpserted World::AddPending(Pod pod) {
  assert(pod.node_name.empty());
  return PodUpserted{InsertPod(std::move(pod))};
}

Pod World::NewJobPod(const Job& job) {
  Pod pod = job.template_key.empty()
                ? TemplatePod(job, "Job")
                : FromTemplate(job.template_key, job.ns, job.name + "-" + std::to_string(next_pod_),
                               "Job");
  pod.labels.Mutable()["job-name"] = job.name;
  return pod;
}

std::int64_t World::JobPodsAtOnce(const Job& job, std::int64_t left) const {
  return job.parallelism > 0 ? std::min(left, job.parallelism) : left;
}

// The Job controller: a job's pods appear at its time.
std::vector<Event> World::StartJobs() {
  std::vector<Event> events;
  while (next_job_ < scenario_.jobs.size() &&
         scenario_.start + scenario_.jobs[next_job_].at <= now_) {
    const Job& job = scenario_.jobs[next_job_++];
    job_pods_left_[job.ns + "/" + job.name] += job.pods;
    for (std::int64_t i = 0; i < JobPodsAtOnce(job, job.pods); ++i) {
      events.push_back(AddPending(NewJobPod(job)));
    }
  }
  return events;
}

std::int64_t World::PodsCountOf(const std::string& ns, const std::string& name) const {
  auto count = pods_by_owner_.find(PodKey(ns, name));
  return count == pods_by_owner_.end() ? 0 : count->second;
}

std::vector<std::map<std::string, Pod>::iterator> World::PodsOf(const std::string& ns,
                                                                const std::string& name) {
  // Keys are "ns/name-<n>", so a deployment's pods are one range of the ordered map.
  const std::string prefix = PodKey(ns, name + "-");
  std::vector<std::map<std::string, Pod>::iterator> pods;
  for (auto it = pods_.lower_bound(prefix);
       it != pods_.end() && it->first.compare(0, prefix.size(), prefix) == 0; ++it) {
    // "web-7" is web's, "web-batch-7" is not.
    if (OwnerOf(it->first) == PodKey(ns, name)) pods.push_back(it);
  }
  return pods;
}

std::string World::OwnerOf(const std::string& key) const {
  // A pod made from (or adopted by) a workload's template "Kind/ns/name[@time]" is its.
  if (auto t = pod_template_.find(key); t != pod_template_.end()) {
    const std::string& tk = t->second;
    const std::string kind = tk.substr(0, tk.find('/'));
    if (kind == "Deployment" || kind == "ReplicaSet" || kind == "StatefulSet" || kind == "Job") {
      return tk.substr(kind.size() + 1, tk.find('@') - kind.size() - 1);
    }
  }
  // Otherwise "ns/name-<digits>" counts for "ns/name" (other names for no one).
  const std::size_t dash = key.rfind('-');
  if (dash == std::string::npos) return {};
  if (key.find_first_not_of("0123456789", dash + 1) != std::string::npos) return {};
  return key.substr(0, dash);
}

Pod& World::InsertPod(Pod pod) {
  const std::string key = PodKey(pod.ns, pod.name);
  if (auto old = pods_.find(key); old != pods_.end()) ErasePod(old);
  Pod& slot = pods_[key] = std::move(pod);
  pod_parts_.Share(slot);
  if (RefusesNeighbours(slot)) ++refusing_pods_;
  if (slot.node_name.empty()) {
    unbound_.insert(key);
  } else {
    Binding(slot);
  }
  if (const std::string owner = OwnerOf(key); !owner.empty()) ++pods_by_owner_[owner];
  return slot;
}

void World::Binding(const Pod& pod) {
  assert(!pod.node_name.empty());
  PodsOnNode& on = on_node_[pod.node_name];
  on.pods.insert(PodKey(pod.ns, pod.name));
  on.requested = on.requested + Need(pod);
}

std::map<std::string, Pod>::iterator World::ErasePod(std::map<std::string, Pod>::iterator it) {
  const Pod& pod = it->second;
  if (RefusesNeighbours(pod)) --refusing_pods_;
  const std::string owner = OwnerOf(it->first);
  pod_template_.erase(it->first);
  if (!pod.node_name.empty()) {
    auto on = on_node_.find(pod.node_name);
    assert(on != on_node_.end() && on->second.pods.contains(it->first));
    on->second.pods.erase(it->first);
    on->second.requested = on->second.requested - Need(pod);
    if (on->second.pods.empty()) {
      assert(on->second.requested == Resources{});
      on_node_.erase(on);
    }
  }
  if (!owner.empty()) {
    auto count = pods_by_owner_.find(owner);
    assert(count != pods_by_owner_.end() && count->second > 0);
    if (--count->second == 0) pods_by_owner_.erase(count);
  }
  unbound_.erase(it->first);
  return pods_.erase(it);
}

// The ReplicaSet controller: replaces pods that were evicted or deleted.
std::vector<Event> World::TopUp() {
  std::vector<Event> events;
  if (!pods_removed_) return events;  // Nothing went away since the last top-up.
  pods_removed_ = false;
  for (const auto& [key, index] : deployments_) {
    const WorkloadStep& step = scenario_.workloads[index];
    const std::int64_t have = PodsCountOf(step.ns, step.name);
    for (std::int64_t i = have; i < replicas_[key]; ++i) AddWorkloadPod(step, events);
  }
  // The Job controller replaces a job's pods evicted before they finished.
  for (const Job& job : scenario_.jobs) {
    auto left = job_pods_left_.find(job.ns + "/" + job.name);
    if (left == job_pods_left_.end()) continue;
    const std::int64_t have = PodsCountOf(job.ns, job.name);
    for (std::int64_t i = have; i < JobPodsAtOnce(job, left->second); ++i) {
      events.push_back(AddPending(NewJobPod(job)));
    }
  }
  return events;
}

NodePool World::Pool(const NodePool& original) const {
  NodePool pool = original;
  if (budget_skew_for_test_ != 0) {
    for (auto& budget : pool.budgets) {
      if (budget.nodes.find('%') == std::string::npos) {
        budget.nodes = std::to_string(std::stoll(budget.nodes) + budget_skew_for_test_);
      }
    }
  }
  if (auto added = added_pool_labels_.find(pool.name); added != added_pool_labels_.end()) {
    for (const auto& [k, v] : added->second) pool.labels[k] = v;
  }
  return pool;
}

const SimInstance* World::Oldest(const std::function<bool(const SimInstance&)>& keep) const {
  const SimInstance* best = nullptr;
  for (const auto& [id, i] : instances_) {
    if (!keep(i)) continue;
    if (best == nullptr || i.launched < best->launched) best = &i;
  }
  return best;
}

std::vector<Event> World::RunActions() {
  std::vector<Event> events;
  while (next_action_ < scenario_.actions.size() &&
         scenario_.start + scenario_.actions[next_action_].at <= now_) {
    const Action& action = scenario_.actions[next_action_++];
    room_may_have_changed_ = true;
    switch (action.kind) {
      case Action::Kind::kDeleteNodeClaim: {
        const SimInstance* i = Oldest([&](const SimInstance& x) {
          return nodeclaims_.contains(x.nodeclaim) && !deleting_.contains(x.nodeclaim);
        });
        if (i == nullptr) break;
        deleting_.insert(i->nodeclaim);
        events.push_back(NodeClaimDeleting{i->nodeclaim});
        break;
      }
      case Action::Kind::kTerminateInstance: {
        const SimInstance* i = Oldest([](const SimInstance&) { return true; });
        if (i == nullptr) break;
        for (auto& e : RemoveInstance(i->id)) events.push_back(std::move(e));
        break;
      }
      case Action::Kind::kSpotInterruption:
      case Action::Kind::kRebalanceRecommendation:
      case Action::Kind::kScheduledChange:
      case Action::Kind::kInstanceStopping: {
        const SimInstance* i = Oldest([](const SimInstance&) { return true; });
        if (i == nullptr) break;
        std::string id = "msg-" + std::to_string(next_message_++);
        switch (action.kind) {
          case Action::Kind::kSpotInterruption:
            --next_message_;  // InterruptSpot names the message.
            for (auto& e : InterruptSpot(*i)) events.push_back(std::move(e));
            break;
          case Action::Kind::kRebalanceRecommendation:
            events.push_back(
                InterruptionReceived{id, InterruptionKind::kRebalanceRecommendation, i->id, ""});
            break;
          case Action::Kind::kScheduledChange:
            events.push_back(InterruptionReceived{id, InterruptionKind::kScheduledChange, i->id,
                                                  "AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED"});
            break;
          default:
            events.push_back(
                InterruptionReceived{id, InterruptionKind::kStateChange, i->id, "stopping"});
            break;
        }
        break;
      }
      case Action::Kind::kSpotInterruptionStorm: {
        std::vector<const SimInstance*> spot;
        for (const auto& [id, i] : instances_) {
          if (i.capacity_type == kCapacitySpot) spot.push_back(&i);
        }
        std::sort(spot.begin(), spot.end(), [](const SimInstance* a, const SimInstance* b) {
          return a->launched != b->launched ? a->launched < b->launched : a->id < b->id;
        });
        if (spot.size() > static_cast<std::size_t>(action.count)) spot.resize(action.count);
        for (const SimInstance* i : spot) {
          for (auto& e : InterruptSpot(*i)) events.push_back(std::move(e));
        }
        break;
      }
      case Action::Kind::kPriceChange:
        ChangePrice(action);
        events.push_back(CatalogRefreshed{catalog_});
        break;
      case Action::Kind::kCatalogRefresh:
        catalog_ = action.catalog;
        events.push_back(CatalogRefreshed{catalog_});
        break;
      case Action::Kind::kInterruptOffering:
        for (auto& e : InterruptOffering(action)) events.push_back(std::move(e));
        break;
      case Action::Kind::kDeleteNodeClaimOfOffering:
      case Action::Kind::kTerminateInstanceOfOffering:
        for (auto& e : ByHandOnOffering(action)) events.push_back(std::move(e));
        break;
      case Action::Kind::kApplyNodePool:
        ApplyNodePool(action.nodepool);
        events.push_back(NodePoolUpserted{Pool(action.nodepool)});
        break;
      case Action::Kind::kMalformedMessage:
        // The queue adapter keeps what it cannot read for audit; the core deletes it.
        events.push_back(InputRejected{"sqs", "not an EventBridge event: missing detail-type",
                                       "{\"version\":\"0\",\"source\":\"aws.ec2\"}",
                                       "msg-" + std::to_string(next_message_++)});
        break;
      case Action::Kind::kCordonNode:
      case Action::Kind::kUncordonNode: {
        auto node = nodes_.find(action.node);
        if (node == nodes_.end()) break;  // Gone since: nothing to cordon.
        std::vector<Taint>& taints = node->second.taints;
        std::erase_if(taints, [](const Taint& t) { return t.key == kUnschedulableTaint; });
        if (action.kind == Action::Kind::kCordonNode) {
          taints.push_back({kUnschedulableTaint, "", TaintEffect::kNoSchedule});
        }
        room_may_have_changed_ = true;
        events.push_back(NodeUpserted{node->second});
        break;
      }
      case Action::Kind::kProtectNode: {
        const SimInstance* i =
            Oldest([&](const SimInstance& x) { return nodes_.contains(x.node_name); });
        if (i == nullptr) break;
        Node& node = nodes_.at(i->node_name);
        node.do_not_disrupt = true;
        events.push_back(NodeUpserted{node});
        break;
      }
      case Action::Kind::kReleaseAmi: {
        ++ami_release_;
        for (const auto& c : scenario_.nodeclasses) {
          events.push_back(NodeClassUpserted{Resolved(c)});
          events.push_back(NodeClassResolved{c.name, Resolution(c)});
        }
        break;
      }
      case Action::Kind::kLabelNodePool: {
        const NodePool& pool = nodepools_.front();
        auto eq = action.label.find('=');
        added_pool_labels_[pool.name][action.label.substr(0, eq)] = action.label.substr(eq + 1);
        events.push_back(NodePoolUpserted{Pool(pool)});
        break;
      }
      case Action::Kind::kStrayInstance: {
        char id[32];
        std::snprintf(id, sizeof id, "i-%017llx",
                      static_cast<unsigned long long>(Mix(scenario_.seed ^ next_instance_++) >> 4));
        instances_[id] = SimInstance{id,
                                     "stray-" + std::string(id),
                                     "",
                                     action.instance_type,
                                     action.zone,
                                     kCapacityOnDemand,
                                     MicroUsdPerHour{0},
                                     now_,
                                     "",
                                     ""};
        break;
      }
    }
  }
  return events;
}

std::vector<Event> World::InterruptSpot(const SimInstance& instance) {
  std::string id = "msg-" + std::to_string(next_message_++);
  // EC2 reclaims the instance two minutes after the warning.
  AddTimer(now_ + Nanos{2 * kMinute.value}, Timer{Timer::Kind::kReclaim, instance.id});
  return {InterruptionReceived{id, InterruptionKind::kSpotInterruption, instance.id,
                               "two-minute warning"}};
}

// The oldest instance `keep` accepts of the action's offering, else of its capacity type in its
// zone, else of its capacity type anywhere; null when there is none.
const SimInstance* World::OfOffering(const Action& action,
                                     const std::function<bool(const SimInstance&)>& keep) const {
  auto fresh = [&](const SimInstance& i) {
    return keep(i) && i.capacity_type == action.capacity_type;
  };
  const SimInstance* i = Oldest([&](const SimInstance& x) {
    return fresh(x) && x.instance_type == action.instance_type && x.zone == action.zone;
  });
  if (i == nullptr)
    i = Oldest([&](const SimInstance& x) { return fresh(x) && x.zone == action.zone; });
  if (i == nullptr) i = Oldest(fresh);
  return i;
}

// A recorded deletion of a NodeClaim or termination of an instance, done by hand to an instance
// of the what-if's that is not already going.
std::vector<Event> World::ByHandOnOffering(const Action& action) {
  const SimInstance* i = OfOffering(action, [&](const SimInstance& x) {
    return nodeclaims_.contains(x.nodeclaim) && !deleting_.contains(x.nodeclaim);
  });
  if (i == nullptr) {
    ++unmatched_by_hand_;
    return {};
  }
  if (action.kind == Action::Kind::kTerminateInstanceOfOffering) return RemoveInstance(i->id);
  deleting_.insert(i->nodeclaim);
  return {NodeClaimDeleting{i->nodeclaim}};
}

// A recorded NodePool edit: the world serves the pool as edited from now on.
void World::ApplyNodePool(const NodePool& pool) {
  auto it = std::find_if(nodepools_.begin(), nodepools_.end(),
                         [&](const NodePool& p) { return p.name == pool.name; });
  if (it == nodepools_.end()) {
    nodepools_.push_back(pool);
  } else {
    *it = pool;
  }
}

std::vector<Event> World::InterruptOffering(const Action& action) {
  const SimInstance* i =
      OfOffering(action, [&](const SimInstance& x) { return !interrupted_.contains(x.id); });
  if (i == nullptr) {
    ++unmatched_interruptions_;
    return {};
  }
  interrupted_.insert(i->id);
  if (action.interruption == InterruptionKind::kSpotInterruption) return InterruptSpot(*i);
  return {InterruptionReceived{"msg-" + std::to_string(next_message_++), action.interruption, i->id,
                               action.detail}};
}

void World::ChangePrice(const Action& action) {
  for (auto& type : catalog_) {
    if (type.name != action.instance_type) continue;
    for (auto& o : type.offerings) {
      if (o.capacity_type != action.capacity_type) continue;
      if (!action.zone.empty() && o.zone != action.zone) continue;
      o.price = MicroUsdPerHour{o.price.value * action.price_permille / 1000};
    }
  }
}

// What the instance costs now: its offering's current price (spot prices move), else what it
// was launched at.
MicroUsdPerHour World::PriceNow(const SimInstance& instance) const {
  for (const auto& type : catalog_) {
    if (type.name != instance.instance_type) continue;
    for (const auto& o : type.offerings) {
      if (o.zone == instance.zone && o.capacity_type == instance.capacity_type) return o.price;
    }
  }
  return instance.price;
}

bool World::OutOfCapacity(const std::string& offering) const {
  if (scenario_.cloud.insufficient_capacity.contains(offering)) return true;
  const Nanos at = now_ - scenario_.start;
  return std::any_of(scenario_.cloud.capacity_windows.begin(),
                     scenario_.cloud.capacity_windows.end(), [&](const CapacityWindow& w) {
                       return w.offering == offering && w.from <= at &&
                              (w.until.value == 0 || at < w.until);
                     });
}

std::vector<Event> World::ListInstances() {
  if (now_ < next_listing_) return {};
  next_listing_ = now_ + scenario_.cloud.list_interval;
  InstancesListed listed;
  for (const auto& [id, i] : instances_)
    listed.instances.push_back({id, i.nodeclaim, i.launched, "running"});
  return {listed};
}

void World::AddTimer(Nanos at, Timer timer) {
  assert(timers_.size() < kTimersMax);
  timers_[{at.value, next_timer_++}] = std::move(timer);
}

Node World::NewNode(const SimInstance& instance) const {
  Node node;
  // EKS resource-name hostnames: i-0123456789abcdef0.us-east-1.compute.internal.
  std::string region = instance.zone.substr(0, instance.zone.size() - 1);
  node.name = instance.id + "." + region + ".compute.internal";
  node.provider_id = "aws:///" + instance.zone + "/" + instance.id;
  node.created = now_;
  node.ready = false;
  node.taints.push_back({label::kUnregisteredTaint, "", TaintEffect::kNoExecute});
  Labels labels;
  const NodeClass* nodeclass = nullptr;  // Its kubelet configuration: maxPods, podsPerCore.
  for (const auto& original : nodepools_) {
    if (original.name != instance.nodepool) continue;
    NodePool pool = Pool(original);
    for (const auto& c : scenario_.nodeclasses) {
      if (c.name == pool.nodeclass) nodeclass = &c;
    }
    labels = pool.labels;
    node.taints.insert(node.taints.end(), pool.taints.begin(), pool.taints.end());
    node.taints.insert(node.taints.end(), pool.startup_taints.begin(), pool.startup_taints.end());
  }
  labels[label::kHostname] = node.name;
  labels[label::kInstanceType] = instance.instance_type;
  labels[label::kZone] = instance.zone;
  labels["topology.kubernetes.io/region"] = instance.zone.substr(0, instance.zone.size() - 1);
  labels[label::kCapacityType] = instance.capacity_type;
  labels[label::kOs] = "linux";
  for (const auto& type : catalog_) {
    if (type.name != instance.instance_type) continue;
    labels[label::kArch] = type.arch;
    node.allocatable = KubeletAllocatable(type, nodeclass, scenario_.settings.reserved_enis);
  }
  node.labels = labels;
  return node;
}

void World::CheckPlanned(const std::string& nodeclaim) {
  const auto planned = planned_.find(nodeclaim);
  const auto id = client_tokens_.find(nodeclaim);
  if (planned == planned_.end() || id == client_tokens_.end()) return;
  const auto instance = instances_.find(id->second);
  if (instance == instances_.end()) return;
  const auto node = nodes_.find(instance->second.node_name);
  if (node == nodes_.end() || overestimated_.contains(nodeclaim)) return;
  const Resources& want = planned->second;
  const Resources& have = node->second.allocatable;
  std::string short_of;
  auto compare = [&](const std::string& name, std::int64_t wanted, std::int64_t had) {
    if (wanted <= had) return;
    short_of += (short_of.empty() ? "" : ", ") + name + " " + std::to_string(wanted) +
                " planned, " + std::to_string(had) + " reported";
  };
  compare("cpu (millicores)", want.cpu.value, have.cpu.value);
  compare("memory (bytes)", want.memory.value, have.memory.value);
  compare("pods", want.pods, have.pods);
  for (const auto& [name, count] : want.extended) {
    const auto it = have.extended.find(name);
    compare(name, count, it == have.extended.end() ? 0 : it->second);
  }
  if (short_of.empty()) return;
  overestimated_[nodeclaim] = "NodeClaim " + nodeclaim + " (" + instance->second.instance_type +
                              ", node " + node->first + "): " + short_of;
}

std::vector<Event> World::FireTimers() {
  std::vector<Event> events;
  while (!timers_.empty() && timers_.begin()->first.first <= now_.value) {
    Timer timer = timers_.begin()->second;
    timers_.erase(timers_.begin());
    room_may_have_changed_ = true;
    if (timer.kind == Timer::Kind::kJobDone) {
      // The pod finished (unless it was evicted first: its replacement has its own timer).
      auto pod = pods_.find(timer.instance_id);
      if (pod == pods_.end() || pod->second.node_name.empty()) continue;
      auto left = job_pods_left_.find(pod->second.ns + "/" + pod->second.labels->at("job-name"));
      if (left != job_pods_left_.end() && --left->second <= 0) job_pods_left_.erase(left);
      events.push_back(PodDeleted{pod->second.ns, pod->second.name});
      ErasePod(pod);
      continue;
    }
    auto it = instances_.find(timer.instance_id);
    if (it == instances_.end()) continue;  // Terminated before the timer fired.
    SimInstance& instance = it->second;
    if (timer.kind == Timer::Kind::kLaunchAnswer) {
      std::vector<FleetError> errors;
      if (auto e = answer_errors_.find(it->first); e != answer_errors_.end()) {
        errors = std::move(e->second);
        answer_errors_.erase(e);
      }
      events.push_back(Answer(CommandId{timer.command}, it->second, std::move(errors)));
      continue;
    }
    if (timer.kind == Timer::Kind::kReclaim) {
      for (auto& e : RemoveInstance(it->first)) events.push_back(std::move(e));
      continue;
    }
    if (timer.kind == Timer::Kind::kRegister) {
      Node node = NewNode(instance);
      instance.node_name = node.name;
      node_parts_.Share(node, pod_parts_.node_names);
      nodes_[node.name] = node;
      events.push_back(NodeUpserted{node});
      AddTimer(now_ + scenario_.cloud.ready_delay, Timer{Timer::Kind::kReady, instance.id});
      CheckPlanned(instance.nodeclaim);
    } else if (auto node = nodes_.find(instance.node_name); node != nodes_.end()) {
      node->second.ready = true;
      // Startup taints are removed by the agents that own them once the node is up.
      for (const auto& pool : nodepools_) {
        if (pool.name != instance.nodepool) continue;
        std::erase_if(node->second.taints, [&](const Taint& t) {
          return std::any_of(pool.startup_taints.begin(), pool.startup_taints.end(),
                             [&](const Taint& s) { return s.key == t.key; });
        });
      }
      events.push_back(NodeUpserted{node->second});
      for (auto& e : PlaceDaemonPods(node->second)) events.push_back(std::move(e));
    }
  }
  return events;
}

Pod World::DaemonPod(const DaemonSetSpec& d) const {
  if (const Pod* made_from = TemplateOf(d.template_key)) {
    Pod pod = *made_from;
    pod.owner_kind = "DaemonSet";
    return pod;
  }
  Pod pod;
  pod.ns = d.ns;
  pod.requests = d.requests;
  pod.owner_kind = "DaemonSet";
  pod.constraints = Placement(d);
  return pod;
}

std::vector<Event> World::PlaceDaemonPods(const Node& node) {
  std::vector<Event> events;
  for (const auto& d : scenario_.daemonsets) {
    Pod pod = DaemonPod(d);
    // The DaemonSet controller's own filter: the node's taints and the pod's node affinity.
    if (!TaintsTolerated(pod, node) || !NodeAffinityMatches(pod, node)) continue;
    pod.ns = d.ns;
    if (d.template_key.empty()) pod.labels = Labels{{"app", d.name}};
    pod.name = d.name + "-" + node.name.substr(0, node.name.find('.'));
    pod.uid = "uid-" + std::to_string(next_pod_++);
    pod.created = now_;
    pod.node_name = node.name;
    pod.phase = PodPhase::kRunning;
    events.push_back(PodUpserted{InsertPod(std::move(pod))});
  }
  return events;
}

void World::StartJobTimer(const Pod& pod) {
  for (const Job& job : scenario_.jobs) {
    if (job.ns == pod.ns && job.name == pod.labels->at("job-name")) {
      AddTimer(now_ + job.run_for, Timer{Timer::Kind::kJobDone, PodKey(pod.ns, pod.name)});
      return;
    }
  }
}

std::vector<Event> World::Schedule() {
  // A pod already found unschedulable is retried only once room may have appeared; until then
  // it would fail again, so leaving it out changes no binding.
  const bool retry = room_may_have_changed_;
  room_may_have_changed_ = false;
  std::vector<Pod*> pending;
  for (const auto& key : unbound_) {
    Pod& pod = pods_.at(key);
    assert(pod.node_name.empty());
    if (retry || !pod.unschedulable) pending.push_back(&pod);
  }
  if (pending.empty()) return {};
  std::sort(pending.begin(), pending.end(), [](const Pod* a, const Pod* b) {
    return a->created != b->created ? a->created < b->created : a->uid < b->uid;
  });
  // Free room per node, in the nodes' (name) order. Pods bound to a node that is gone take no
  // room: their entry in on_node_ matches no node.
  std::vector<std::pair<const Node*, Resources>> free;
  auto on = on_node_.begin();
  for (const auto& [name, node] : nodes_) {
    while (on != on_node_.end() && on->first < name) ++on;
    const bool used = on != on_node_.end() && on->first == name;
    free.emplace_back(&node, used ? node.allocatable - on->second.requested : node.allocatable);
  }
  // Within this pass room only shrinks, so a pod is not tried on the nodes that rejected an
  // earlier pod of its shape: first fit, without walking every node for every pod. Pods whose
  // place depends on other pods (spreads, affinity, ports, volumes), or any pod while some pod
  // refuses neighbours, are tried on every node: room alone does not decide for them.
  std::map<std::string, std::size_t> first_try;  // Shape -> index into `free`.
  std::vector<Event> events;
  bool waiting_on_neighbours = false;
  bool bound_any = false;
  for (Pod* pod : pending) {
    bool bound = false;
    std::size_t every_node = 0;
    // Required node affinity is not part of a shape either: such pods see every node too.
    const bool neighbours = refusing_pods_ > 0 || DependsOnNeighbours(*pod) ||
                            !pod->constraints->node_affinity_required.empty();
    std::size_t& i = neighbours ? every_node : first_try[Shape(*pod)];
    for (; i < free.size(); ++i) {
      auto& [node, room] = free[i];
      if (!Accepts(View(), *pod, *node, room)) continue;
      unbound_.erase(PodKey(pod->ns, pod->name));
      pod->node_name = node->name;
      pod_parts_.node_names.Intern(pod->node_name.SharedForInterning());
      pod->phase = PodPhase::kRunning;
      pod->unschedulable = false;
      Binding(*pod);
      room = room - Need(*pod);
      bound = bound_any = true;
      if (pod->owner_kind == "Job") StartJobTimer(*pod);
      for (auto& e : ProvisionFor(*pod)) events.push_back(std::move(e));
      break;
    }
    if (!bound && neighbours) waiting_on_neighbours = true;
    // Already reported as unschedulable: reported again only after a retry the cluster's change
    // prompted, as kube-scheduler rewrites the PodScheduled condition's message ("0/N nodes are
    // available: ...") on each failed attempt. A controller waiting on a NodeClaim that another
    // pod filled learns from it that this pod is still pending.
    if (!bound && pod->unschedulable && !retry) continue;
    if (!bound) pod->unschedulable = true;
    events.push_back(PodUpserted{*pod});
  }
  // A pod that waits on others (its affinity, a spread's skew) may fit once they are bound.
  if (bound_any && waiting_on_neighbours) room_may_have_changed_ = true;
  return events;
}

std::string World::CurrentAmi(const NodeClass& nodeclass) const {
  std::string family = nodeclass.ami_family.empty() ? "al2023" : nodeclass.ami_family;
  std::transform(family.begin(), family.end(), family.begin(), ::tolower);
  return "ami-" + family + "-r" + std::to_string(ami_release_);
}

NodeClass World::Resolved(const NodeClass& nodeclass) const {
  NodeClass out = nodeclass;
  out.amis = {CurrentAmi(nodeclass)};
  std::set<std::string> zones;
  for (const auto& type : scenario_.catalog) {
    for (const auto& o : type.offerings) zones.insert(o.zone);
  }
  out.subnets.clear();
  for (const auto& zone : zones) out.subnets.push_back("subnet-" + zone);
  out.zones.assign(zones.begin(), zones.end());
  out.security_groups = {"sg-" + scenario_.settings.cluster_name + "-nodes"};
  out.finalizer = nodeclass_finalizers_.contains(nodeclass.name);
  return out;
}

NodeClassResolution World::Resolution(const NodeClass& nodeclass) const {
  constexpr std::int64_t kSubnetAddresses = 8187;  // A /19 less the five AWS keeps.
  NodeClassResolution out;
  // One image serves every architecture the catalog has; the simulated images carry no
  // creation date.
  std::set<std::string> archs;
  for (const auto& type : scenario_.catalog) archs.insert(type.arch);
  for (const std::string& arch : archs) {
    out.amis.push_back({CurrentAmi(nodeclass),
                        nodeclass.ami_family + " release " + std::to_string(ami_release_), arch,
                        ""});
  }
  std::map<std::string, std::int64_t> used;
  for (const auto& [id, instance] : instances_) ++used[instance.zone];
  const NodeClass ids = Resolved(nodeclass);
  for (std::size_t i = 0; i < ids.zones.size(); ++i) {
    const std::string& zone = ids.zones[i];
    out.subnets.push_back(
        {"subnet-" + zone, zone, "use1-az" + std::to_string(i + 1), kSubnetAddresses - used[zone]});
  }
  const std::string group = scenario_.settings.cluster_name + "-nodes";
  out.security_groups.push_back({"sg-" + group, group});
  if (!nodeclass.role.empty()) {
    out.instance_profile = scenario_.settings.cluster_name + "_" + nodeclass.name;
  }
  return out;
}

FleetLaunched World::Answer(CommandId command, const SimInstance& i,
                            std::vector<FleetError> errors) const {
  return FleetLaunched{command,
                       i.nodeclaim,
                       i.id,
                       "aws:///" + i.zone + "/" + i.id,
                       i.instance_type,
                       i.zone,
                       i.capacity_type,
                       i.price,
                       std::move(errors),
                       i.image_id,
                       "subnet-" + i.zone,
                       {"sg-" + scenario_.settings.cluster_name + "-nodes"},
                       ""};
}

std::vector<Event> World::Launch(const Command& command, const LaunchInstances& launch) {
  ++launch_calls_;
  if (auto token = client_tokens_.find(launch.client_token); token != client_tokens_.end()) {
    auto i = instances_.find(token->second);
    if (i == instances_.end()) {
      // The token's instance was launched and has since terminated. EC2 would describe the
      // terminated instance again; the simulated cloud answers NotFound, which fails the
      // NodeClaim if it is still waiting for its launch.
      return {CommandFailed{command.id, ErrorCode::kNotFound,
                            "instance of client token " + launch.client_token + " terminated"}};
    }
    return {Answer(command.id, i->second, {})};
  }
  std::vector<FleetError> errors;
  for (const auto& o : launch.overrides) {
    std::string key = o.instance_type + "/" + o.zone + "/" + o.capacity_type;
    if (OutOfCapacity(key)) {
      errors.push_back({o.instance_type, o.zone, o.capacity_type, ErrorCode::kInsufficientCapacity,
                        "InsufficientInstanceCapacity: no capacity in the pool"});
      continue;
    }
    char id[32];
    std::snprintf(id, sizeof id, "i-%017llx",
                  static_cast<unsigned long long>(Mix(scenario_.seed ^ next_instance_++) >> 4));
    // The AMI the launch names, as EC2 launches the template's image.
    std::string image = o.image;
    for (const auto& c : scenario_.nodeclasses) {
      if (c.name == launch.nodeclass && image.empty()) image = CurrentAmi(c);
    }
    SimInstance instance{id,
                         launch.nodeclaim,
                         launch.nodepool,
                         o.instance_type,
                         o.zone,
                         o.capacity_type,
                         o.price,
                         now_,
                         "",
                         image};
    instances_[instance.id] = instance;
    client_tokens_[launch.client_token] = instance.id;
    if (!scenario_.cloud.never_register.contains(o.instance_type)) {
      AddTimer(now_ + scenario_.cloud.registration_delay,
               Timer{Timer::Kind::kRegister, instance.id});
    }
    // CreateFleet (instant) answers with the instance and the errors of the overrides it
    // tried before it; with a launch latency that answer comes back that much later.
    if (scenario_.cloud.launch_latency.value > 0) {
      AddTimer(now_ + scenario_.cloud.launch_latency,
               Timer{Timer::Kind::kLaunchAnswer, instance.id, command.id.value});
      if (!errors.empty()) answer_errors_[instance.id] = std::move(errors);
      return {};
    }
    return {Answer(command.id, instance, std::move(errors))};
  }
  return {FleetFailed{command.id, launch.nodeclaim, errors, ""}};
}

std::vector<Event> World::Patch(const Command& command, const PatchNode& patch) {
  auto it = nodes_.find(patch.node_name);
  if (it == nodes_.end()) {
    return {
        CommandFailed{command.id, ErrorCode::kNotFound, "node " + patch.node_name + " not found"}};
  }
  Node& node = it->second;
  room_may_have_changed_ = true;
  for (const auto& [k, v] : patch.add_labels) node.labels.Set(k, v);
  node_parts_.Share(node, pod_parts_.node_names);
  std::erase_if(node.taints, [&](const Taint& t) {
    return std::find(patch.remove_taints.begin(), patch.remove_taints.end(), t.key) !=
           patch.remove_taints.end();
  });
  for (const auto& t : patch.add_taints) {
    if (std::find(node.taints.begin(), node.taints.end(), t) == node.taints.end()) {
      node.taints.push_back(t);
    }
  }
  return {CommandSucceeded{command.id}, NodeUpserted{node}};
}

// What the PDB controller would publish as status.disruptionsAllowed.
std::int64_t World::DisruptionsAllowed(const Budget& budget) const {
  std::int64_t healthy = 0;
  std::int64_t want = 0;      // The pods the selected workloads want.
  bool uncontrolled = false;  // A selected pod no workload owns.
  for (const auto& [key, pod] : pods_) {
    if (pod.ns != budget.ns || !LabelsMatch(budget.selector, *pod.labels)) continue;
    if (pod.owner_kind.empty()) uncontrolled = true;
    if (pod.owner_kind == "DaemonSet") ++want;  // A DaemonSet wants its pods where they run.
    auto node = nodes_.find(pod.node_name);
    if (pod.phase == PodPhase::kRunning && node != nodes_.end() && node->second.ready) ++healthy;
  }
  // The replicas wanted of every deployment whose pods it selects.
  for (const auto& [key, index] : deployments_) {
    const WorkloadStep& step = scenario_.workloads[index];
    const Pod* made_from = TemplateOf(step.template_key);
    const Labels labels = made_from != nullptr ? *made_from->labels : PodLabels(step);
    if (step.ns != budget.ns || !LabelsMatch(budget.selector, labels)) continue;
    auto desired = replicas_.find(key);
    want += desired == replicas_.end() ? 0 : desired->second;
  }
  // The disruption controller counts the pods wanted through their controllers; for a pod
  // none owns it cannot, and a budget that needs that count (maxUnavailable, a percent)
  // allows nothing.
  if (uncontrolled && (budget.max_unavailable || budget.percent)) return 0;
  // A percent is of the pods wanted, rounded up, as the disruption controller scales it.
  const auto value = [&](std::int64_t v) { return budget.percent ? (v * want + 99) / 100 : v; };
  return budget.min_available ? healthy - value(*budget.min_available)
                              : value(*budget.max_unavailable) - (want - healthy);
}

// The PDB controller: each budget's status, published when it changes.
std::vector<Event> World::PublishBudgets() {
  std::vector<Event> events;
  for (const Budget& budget : scenario_.budgets) {
    auto allowed = static_cast<std::int32_t>(std::max<std::int64_t>(0, DisruptionsAllowed(budget)));
    auto [it, fresh] = published_budgets_.try_emplace(budget.ns + "/" + budget.name, allowed);
    if (!fresh && it->second == allowed) continue;
    it->second = allowed;
    events.push_back(
        PodDisruptionBudgetUpserted{{budget.ns, budget.name, budget.selector, allowed}});
  }
  return events;
}

// The Eviction API: 429 while the pod's PodDisruptionBudget allows no disruption.
std::vector<Event> World::Evict(const Command& command, const EvictPod& evict) {
  auto it = pods_.find(PodKey(evict.ns, evict.name));
  if (it == pods_.end()) {
    return {CommandFailed{command.id, ErrorCode::kNotFound, "pod " + evict.name + " not found"}};
  }
  for (const Budget& budget : scenario_.budgets) {
    if (budget.ns != evict.ns || !LabelsMatch(budget.selector, *it->second.labels)) continue;
    if (DisruptionsAllowed(budget) <= 0) {
      return {CommandFailed{
          command.id, ErrorCode::kDisruptionBudget,
          "Cannot evict pod as it would violate the pod's disruption budget " + budget.name}};
    }
  }
  return DeletePodNow(command, evict.ns, evict.name);
}

std::vector<Event> World::DeletePodNow(const Command& command, const std::string& ns,
                                       const std::string& name) {
  auto it = pods_.find(PodKey(ns, name));
  if (it == pods_.end()) {
    return {CommandFailed{command.id, ErrorCode::kNotFound, "pod " + name + " not found"}};
  }
  ErasePod(it);
  room_may_have_changed_ = pods_removed_ = true;
  return {CommandSucceeded{command.id}, PodDeleted{ns, name}};
}

std::vector<Event> World::Terminate(const Command& command, const TerminateInstance& terminate) {
  auto it = instances_.find(terminate.instance_id);
  if (it == instances_.end()) {
    return {CommandFailed{command.id, ErrorCode::kNotFound,
                          "InvalidInstanceID.NotFound: " + terminate.instance_id}};
  }
  std::vector<Event> events{CommandSucceeded{command.id}};
  for (auto& e : RemoveInstance(it->first)) events.push_back(std::move(e));
  return events;
}

// The instance is gone, and its kubelet with it: the Node stops being Ready. The node-lifecycle
// controller deletes a Node whose instance is gone unless a finalizer holds it, which only a
// NodeClaim's Node has (karpenter.sh/termination); a leaked instance's Node goes at once.
std::vector<Event> World::RemoveInstance(const std::string& id) {
  const SimInstance instance = instances_.at(id);
  instances_.erase(id);
  room_may_have_changed_ = true;
  auto node = nodes_.find(instance.node_name);
  if (node == nodes_.end()) return {};
  if (nodeclaims_.contains(instance.nodeclaim)) {
    node->second.ready = false;
    return {NodeUpserted{node->second}};
  }
  nodes_.erase(node);
  std::vector<Event> events{NodeDeleted{instance.node_name}};
  for (auto& e : DeletePodsOn(instance.node_name)) events.push_back(std::move(e));
  return events;
}

std::vector<Event> World::DeletePodsOn(const std::string& node) {
  std::vector<Event> events;
  auto on = on_node_.find(node);
  if (on == on_node_.end()) return events;
  // In key order, as pods_ holds them; a copy, since each ErasePod shrinks the set.
  const std::set<std::string> keys = on->second.pods;
  for (const auto& key : keys) {
    auto it = pods_.find(key);
    events.push_back(PodDeleted{it->second.ns, it->second.name});
    ErasePod(it);
  }
  room_may_have_changed_ = pods_removed_ = true;
  return events;
}

std::vector<Event> World::Finalize(const Command& command, const RemoveFinalizer& remove) {
  nodeclaims_.erase(remove.nodeclaim);
  deleting_.erase(remove.nodeclaim);
  planned_.erase(remove.nodeclaim);
  std::vector<Event> events{CommandSucceeded{command.id}};
  if (!remove.node_name.empty() && nodes_.erase(remove.node_name) > 0) {
    events.push_back(NodeDeleted{remove.node_name});
    for (auto& e : DeletePodsOn(remove.node_name)) events.push_back(std::move(e));
  }
  return events;
}

// The EC2NodeClass object changes, and its watch says so.
std::vector<Event> World::SetFinalizer(const Command& command, const SetNodeClassFinalizer& set) {
  for (const auto& c : scenario_.nodeclasses) {
    if (c.name != set.nodeclass) continue;
    if (set.present) {
      nodeclass_finalizers_.insert(c.name);
    } else {
      nodeclass_finalizers_.erase(c.name);
    }
    return {CommandSucceeded{command.id}, NodeClassUpserted{Resolved(c)}};
  }
  return {CommandFailed{command.id, ErrorCode::kNotFound,
                        "ec2nodeclass " + set.nodeclass + " not found"}};
}

std::vector<Event> World::Execute(const Command& command) {
  // Like the real API servers, the world's change is durable before its answer is given.
  std::vector<Event> results = Apply(command);
  Save();
  return results;
}

std::vector<Event> World::Apply(const Command& command) {
  return std::visit(
      [&](const auto& body) -> std::vector<Event> {
        using T = std::decay_t<decltype(body)>;
        if constexpr (std::is_same_v<T, CreateNodeClaim>) {
          nodeclaims_[body.claim.name] = body.claim.nodepool;  // Create is idempotent.
          return {CommandSucceeded{command.id}};
        } else if constexpr (std::is_same_v<T, DeleteNodeClaim>) {
          // The finalizer holds the object until termination removes it.
          if (nodeclaims_.contains(body.name)) deleting_.insert(body.name);
          return {CommandSucceeded{command.id}};
        } else if constexpr (std::is_same_v<T, LaunchInstances>) {
          return Launch(command, body);
        } else if constexpr (std::is_same_v<T, PatchNode>) {
          return Patch(command, body);
        } else if constexpr (std::is_same_v<T, EvictPod>) {
          return Evict(command, body);
        } else if constexpr (std::is_same_v<T, DeletePod>) {
          return DeletePodNow(command, body.ns, body.name);
        } else if constexpr (std::is_same_v<T, TerminateInstance>) {
          return Terminate(command, body);
        } else if constexpr (std::is_same_v<T, RemoveFinalizer>) {
          return Finalize(command, body);
        } else if constexpr (std::is_same_v<T, PatchNodePoolStatus>) {
          pool_status_[body.nodepool] = body.status;
          return {CommandSucceeded{command.id}};
        } else if constexpr (std::is_same_v<T, DeleteQueueMessage>) {
          return {CommandSucceeded{command.id}};  // Deleted from the queue.
        } else if constexpr (std::is_same_v<T, PatchNodeClassStatus>) {
          // The simulated EC2NodeClasses carry their resolution already (Resolved).
          return {CommandSucceeded{command.id}};
        } else if constexpr (std::is_same_v<T, SetNodeClassFinalizer>) {
          return SetFinalizer(command, body);
        } else if constexpr (std::is_same_v<T, EnsureInstanceProfile> ||
                             std::is_same_v<T, DeleteNodeClassResources>) {
          // Instance profiles and launch templates are not modelled.
          return {CommandSucceeded{command.id}};
        } else if constexpr (std::is_same_v<T, RecordKubeEvent>) {
          return {};  // Events are not modelled; best effort, no answer.
        } else if constexpr (std::is_same_v<T, TagInstance>) {
          // Tags are not modelled; an instance that is gone cannot be tagged.
          if (!instances_.contains(body.instance_id)) {
            return {CommandFailed{command.id, ErrorCode::kNotFound,
                                  "InvalidInstanceID.NotFound: " + body.instance_id}};
          }
          return {CommandSucceeded{command.id}};
        } else {
          static_assert(std::is_same_v<T, PatchNodeClaimStatus>);
          if (!nodeclaims_.contains(body.nodeclaim)) {
            return {CommandFailed{command.id, ErrorCode::kNotFound,
                                  "nodeclaim " + body.nodeclaim + " not found"}};
          }
          if (body.allocatable != Resources{}) {
            planned_[body.nodeclaim] = body.allocatable;
            CheckPlanned(body.nodeclaim);
          }
          return {CommandSucceeded{command.id}};
        }
      },
      command.body);
}

WorldSummary World::Summary() const {
  WorldSummary s;
  s.instances = instances_.size();
  s.nodes = nodes_.size();
  for (const auto& [key, pod] : pods_) (pod.node_name.empty() ? s.pods_pending : s.pods_bound)++;
  for (const auto& [id, i] : instances_) s.cost += PriceNow(i);
  s.launch_calls = launch_calls_;
  s.allocatable_overestimates = overestimated_.size();
  if (!overestimated_.empty()) s.first_overestimate = overestimated_.begin()->second;
  return s;
}

}  // namespace tenon::sim
