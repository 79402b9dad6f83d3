#include "adapters/sim/world.h"

#include <algorithm>
#include <cassert>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

namespace tenon::sim {
namespace {

using json = nlohmann::json;

constexpr const char* kVersion = "tenon-sim/1";
constexpr std::size_t kTimersMax = 1'000'000;

std::uint64_t Mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// ---- persistence: plain JSON, written whole and renamed into place ----

json ResourcesJson(const Resources& r) {
  return {r.cpu.value, r.memory.value, r.pods};
}
Resources ResourcesFrom(const json& j) {
  return {Millicores{j.at(0).get<std::int64_t>()},
          Bytes{j.at(1).get<std::int64_t>()},
          j.at(2).get<std::int64_t>(),
          {}};
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
          {"phase", p.phase},
          {"owner", p.owner_kind},
          {"created", p.created.value},
          {"labels", p.labels},
          {"selector", p.node_selector},
          {"tolerations", TolerationsJson(p.tolerations)}};
}
Pod PodFrom(const json& j) {
  Pod p;
  p.ns = j.at("ns");
  p.name = j.at("name");
  p.uid = j.at("uid");
  p.requests = ResourcesFrom(j.at("requests"));
  p.node_name = j.at("node");
  p.unschedulable = j.at("unschedulable");
  p.phase = j.at("phase");
  p.owner_kind = j.at("owner");
  p.created = Nanos{j.at("created").get<std::int64_t>()};
  p.labels = j.at("labels").get<Labels>();
  p.node_selector = j.at("selector").get<Labels>();
  p.tolerations = TolerationsFrom(j.at("tolerations"));
  return p;
}

json NodeJson(const Node& n) {
  return {{"name", n.name},
          {"provider", n.provider_id},
          {"labels", n.labels},
          {"taints", TaintsJson(n.taints)},
          {"ready", n.ready},
          {"allocatable", ResourcesJson(n.allocatable)},
          {"created", n.created.value}};
}
Node NodeFrom(const json& j) {
  return {j.at("name"),
          j.at("provider"),
          j.at("labels").get<Labels>(),
          TaintsFrom(j.at("taints")),
          j.at("ready"),
          ResourcesFrom(j.at("allocatable")),
          Nanos{j.at("created").get<std::int64_t>()}};
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
          {"node", i.node_name}};
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
          j.at("node")};
}

bool Tolerated(const std::vector<Toleration>& tolerations, const Taint& taint) {
  return std::any_of(tolerations.begin(), tolerations.end(), [&](const Toleration& t) {
    if (t.effect && *t.effect != taint.effect) return false;
    if (t.key.empty()) return t.op_exists;
    return t.key == taint.key && (t.op_exists || t.value == taint.value);
  });
}

// kube-scheduler's filter, reduced to what the simulated workloads use.
bool NodeAccepts(const Node& node, const Pod& pod, const Resources& free) {
  if (!node.ready) return false;
  for (const auto& taint : node.taints) {
    if (taint.effect != TaintEffect::kPreferNoSchedule && !Tolerated(pod.tolerations, taint)) {
      return false;
    }
  }
  for (const auto& [key, value] : pod.node_selector) {
    auto it = node.labels.find(key);
    if (it == node.labels.end() || it->second != value) return false;
  }
  Resources need = pod.requests;
  need.pods = 1;
  return Fits(need, free);
}

}  // namespace

World::World(const Scenario& scenario, std::filesystem::path state_file)
    : scenario_(scenario), state_file_(std::move(state_file)), now_(scenario.start) {}

bool World::Load() {
  std::ifstream in(state_file_);
  if (!in) return false;
  json j = json::parse(in);
  if (j.at("version") != kVersion) throw ScenarioError("world file has an unknown version");
  now_ = Nanos{j.at("now").get<std::int64_t>()};
  started_ = j.at("started");
  next_workload_ = j.at("next_workload");
  next_instance_ = j.at("next_instance");
  next_timer_ = j.at("next_timer");
  next_pod_ = j.at("next_pod");
  launch_calls_ = j.at("launch_calls");
  for (const auto& i : j.at("instances")) instances_[i.at("id")] = InstanceFrom(i);
  client_tokens_ = j.at("tokens").get<std::map<std::string, std::string>>();
  nodeclaims_ = j.at("nodeclaims").get<std::map<std::string, std::string>>();
  for (const auto& n : j.at("nodes")) nodes_[n.at("name")] = NodeFrom(n);
  for (const auto& p : j.at("pods")) {
    Pod pod = PodFrom(p);
    pods_[PodKey(pod.ns, pod.name)] = pod;
  }
  replicas_ = j.at("replicas").get<std::map<std::string, std::int64_t>>();
  for (const auto& t : j.at("timers")) {
    timers_[{t.at(0).get<std::int64_t>(), t.at(1).get<std::uint64_t>()}] =
        Timer{static_cast<Timer::Kind>(t.at(2).get<int>()), t.at(3).get<std::string>()};
  }
  return true;
}

void World::Save() const {
  json j;
  j["version"] = kVersion;
  j["now"] = now_.value;
  j["started"] = started_;
  j["next_workload"] = next_workload_;
  j["next_instance"] = next_instance_;
  j["next_timer"] = next_timer_;
  j["next_pod"] = next_pod_;
  j["launch_calls"] = launch_calls_;
  j["instances"] = json::array();
  for (const auto& [id, i] : instances_) j["instances"].push_back(InstanceJson(i));
  j["tokens"] = client_tokens_;
  j["nodeclaims"] = nodeclaims_;
  j["nodes"] = json::array();
  for (const auto& [name, n] : nodes_) j["nodes"].push_back(NodeJson(n));
  j["pods"] = json::array();
  for (const auto& [key, p] : pods_) j["pods"].push_back(PodJson(p));
  j["replicas"] = replicas_;
  j["timers"] = json::array();
  for (const auto& [key, t] : timers_) {
    j["timers"].push_back({key.first, key.second, static_cast<int>(t.kind), t.instance_id});
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

std::vector<Event> World::StartupEvents() const {
  std::vector<Event> events;
  events.push_back(Tick{now_});
  events.push_back(ControllerStarted{kVersion, scenario_.seed, scenario_.settings});
  events.push_back(CatalogRefreshed{scenario_.catalog});
  for (const auto& c : scenario_.nodeclasses) events.push_back(NodeClassUpserted{c});
  for (const auto& p : scenario_.nodepools) events.push_back(NodePoolUpserted{p});
  for (const auto& [name, node] : nodes_) events.push_back(NodeUpserted{node});
  for (const auto& [key, pod] : pods_) events.push_back(PodUpserted{pod});
  return events;
}

std::vector<Event> World::Advance(Nanos now) {
  assert(now >= now_);
  now_ = now;
  started_ = true;
  std::vector<Event> events = ScaleWorkloads();
  for (auto& e : FireTimers()) events.push_back(std::move(e));
  for (auto& e : Schedule()) events.push_back(std::move(e));
  events.push_back(Tick{now_});
  return events;
}

std::vector<Event> World::ScaleWorkloads() {
  std::vector<Event> events;
  while (next_workload_ < scenario_.workloads.size() &&
         scenario_.start + scenario_.workloads[next_workload_].at <= now_) {
    const WorkloadStep& step = scenario_.workloads[next_workload_++];
    std::string prefix = step.name + "-";
    std::vector<std::string> existing;
    for (const auto& [key, pod] : pods_) {
      if (pod.ns == step.ns && pod.name.rfind(prefix, 0) == 0) existing.push_back(key);
    }
    std::int64_t have = static_cast<std::int64_t>(existing.size());
    for (std::int64_t i = have; i < step.replicas; ++i) {
      Pod pod;
      pod.ns = step.ns;
      pod.name = prefix + std::to_string(next_pod_);
      pod.uid = "uid-" + std::to_string(next_pod_++);
      pod.requests = step.requests;
      pod.owner_kind = "ReplicaSet";
      pod.created = now_;
      pod.labels = {{"app", step.name}};
      pod.node_selector = step.node_selector;
      pod.tolerations = step.tolerations;
      pods_[PodKey(pod.ns, pod.name)] = pod;
      events.push_back(PodUpserted{pod});
    }
    // Scale down removes the newest pods first, as a ReplicaSet prefers.
    std::sort(existing.begin(), existing.end(), [&](const auto& a, const auto& b) {
      return pods_.at(a).uid.size() != pods_.at(b).uid.size()
                 ? pods_.at(a).uid.size() > pods_.at(b).uid.size()
                 : pods_.at(a).uid > pods_.at(b).uid;
    });
    for (std::int64_t i = 0; i < have - step.replicas; ++i) {
      const Pod& pod = pods_.at(existing[i]);
      events.push_back(PodDeleted{pod.ns, pod.name});
      pods_.erase(existing[i]);
    }
    replicas_[step.ns + "/" + step.name] = step.replicas;
  }
  return events;
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
  for (const auto& pool : scenario_.nodepools) {
    if (pool.name != instance.nodepool) continue;
    node.labels = pool.labels;
    node.taints.insert(node.taints.end(), pool.taints.begin(), pool.taints.end());
    node.taints.insert(node.taints.end(), pool.startup_taints.begin(), pool.startup_taints.end());
  }
  node.labels[label::kHostname] = node.name;
  node.labels[label::kInstanceType] = instance.instance_type;
  node.labels[label::kZone] = instance.zone;
  node.labels[label::kCapacityType] = instance.capacity_type;
  node.labels[label::kOs] = "linux";
  for (const auto& type : scenario_.catalog) {
    if (type.name != instance.instance_type) continue;
    node.labels[label::kArch] = type.arch;
    node.allocatable = MakeCatalogEntry(type, scenario_.settings).allocatable;
  }
  return node;
}

std::vector<Event> World::FireTimers() {
  std::vector<Event> events;
  while (!timers_.empty() && timers_.begin()->first.first <= now_.value) {
    Timer timer = timers_.begin()->second;
    timers_.erase(timers_.begin());
    auto it = instances_.find(timer.instance_id);
    if (it == instances_.end()) continue;  // Terminated before the timer fired.
    SimInstance& instance = it->second;
    if (timer.kind == Timer::Kind::kRegister) {
      Node node = NewNode(instance);
      instance.node_name = node.name;
      nodes_[node.name] = node;
      events.push_back(NodeUpserted{node});
      AddTimer(now_ + scenario_.cloud.ready_delay, Timer{Timer::Kind::kReady, instance.id});
    } else if (auto node = nodes_.find(instance.node_name); node != nodes_.end()) {
      node->second.ready = true;
      // Startup taints are removed by the agents that own them once the node is up.
      for (const auto& pool : scenario_.nodepools) {
        if (pool.name != instance.nodepool) continue;
        std::erase_if(node->second.taints, [&](const Taint& t) {
          return std::any_of(pool.startup_taints.begin(), pool.startup_taints.end(),
                             [&](const Taint& s) { return s.key == t.key; });
        });
      }
      events.push_back(NodeUpserted{node->second});
    }
  }
  return events;
}

std::vector<Event> World::Schedule() {
  std::map<std::string, Resources> free;
  for (const auto& [name, node] : nodes_) free[name] = node.allocatable;
  for (const auto& [key, pod] : pods_) {
    if (pod.node_name.empty()) continue;
    Resources need = pod.requests;
    need.pods = 1;
    free[pod.node_name] = free[pod.node_name] - need;
  }
  std::vector<Pod*> pending;
  for (auto& [key, pod] : pods_) {
    if (pod.node_name.empty()) pending.push_back(&pod);
  }
  std::sort(pending.begin(), pending.end(), [](const Pod* a, const Pod* b) {
    return a->created != b->created ? a->created < b->created : a->uid < b->uid;
  });
  std::vector<Event> events;
  for (Pod* pod : pending) {
    bool bound = false;
    for (auto& [name, node] : nodes_) {
      if (!NodeAccepts(node, *pod, free[name])) continue;
      pod->node_name = name;
      pod->phase = "Running";
      pod->unschedulable = false;
      free[name] = free[name] - Resources{pod->requests.cpu, pod->requests.memory, 1, {}};
      bound = true;
      break;
    }
    if (!bound && pod->unschedulable) continue;  // Already reported as unschedulable.
    if (!bound) pod->unschedulable = true;
    events.push_back(PodUpserted{*pod});
  }
  return events;
}

std::vector<Event> World::Launch(const Command& command, const LaunchInstances& launch) {
  ++launch_calls_;
  if (auto token = client_tokens_.find(launch.client_token); token != client_tokens_.end()) {
    const SimInstance& i = instances_.at(token->second);
    return {FleetLaunched{command.id, i.nodeclaim, i.id, "aws:///" + i.zone + "/" + i.id,
                          i.instance_type, i.zone, i.capacity_type, i.price}};
  }
  FleetFailed failed{command.id, launch.nodeclaim, {}};
  for (const auto& o : launch.overrides) {
    std::string key = o.instance_type + "/" + o.zone + "/" + o.capacity_type;
    if (scenario_.cloud.insufficient_capacity.contains(key)) {
      failed.errors.push_back({o.instance_type, o.zone, o.capacity_type,
                               ErrorCode::kInsufficientCapacity,
                               "InsufficientInstanceCapacity: no capacity in the pool"});
      continue;
    }
    char id[32];
    std::snprintf(id, sizeof id, "i-%017llx",
                  static_cast<unsigned long long>(Mix(scenario_.seed ^ next_instance_++) >> 4));
    SimInstance instance{id,     launch.nodeclaim, launch.nodepool, o.instance_type,
                         o.zone, o.capacity_type,  o.price,         now_,
                         ""};
    instances_[instance.id] = instance;
    client_tokens_[launch.client_token] = instance.id;
    AddTimer(now_ + scenario_.cloud.registration_delay, Timer{Timer::Kind::kRegister, instance.id});
    return {FleetLaunched{command.id, instance.nodeclaim, instance.id,
                          "aws:///" + instance.zone + "/" + instance.id, instance.instance_type,
                          instance.zone, instance.capacity_type, instance.price}};
  }
  return {failed};
}

std::vector<Event> World::Patch(const Command& command, const PatchNode& patch) {
  auto it = nodes_.find(patch.node_name);
  if (it == nodes_.end()) {
    return {
        CommandFailed{command.id, ErrorCode::kNotFound, "node " + patch.node_name + " not found"}};
  }
  Node& node = it->second;
  for (const auto& [k, v] : patch.add_labels) node.labels[k] = v;
  std::erase_if(node.taints, [&](const Taint& t) {
    return std::find(patch.remove_taints.begin(), patch.remove_taints.end(), t.key) !=
           patch.remove_taints.end();
  });
  return {CommandSucceeded{command.id}, NodeUpserted{node}};
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
          nodeclaims_.erase(body.name);
          return {CommandSucceeded{command.id}};
        } else if constexpr (std::is_same_v<T, LaunchInstances>) {
          return Launch(command, body);
        } else {
          return Patch(command, body);
        }
      },
      command.body);
}

WorldSummary World::Summary() const {
  WorldSummary s;
  s.instances = instances_.size();
  s.nodes = nodes_.size();
  for (const auto& [key, pod] : pods_) (pod.node_name.empty() ? s.pods_pending : s.pods_bound)++;
  for (const auto& [id, i] : instances_) s.cost += i.price;
  s.launch_calls = launch_calls_;
  return s;
}

}  // namespace tenon::sim
