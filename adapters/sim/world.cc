// The world's own part: its construction, the clock and its timers, what informers list, the
// API server's objects the controller changes, and the count of pods per node and per owner.
// The rest is by job: the kube-scheduler (world_scheduler.cc), the kubelet (world_kubelet.cc),
// the cloud (world_cloud.cc), PodDisruptionBudgets (world_budgets.cc), the workload
// controllers (world_workloads.cc), the scenario's actions (world_actions.cc) and the world's
// file (world_persistence.cc).
#include "adapters/sim/world.h"

#include <algorithm>
#include <cassert>

#include "adapters/sim/world_parts.h"

namespace tenon::sim {
namespace {

[[maybe_unused]] constexpr std::size_t kTimersMax = 1'000'000;  // Only asserted.

}  // namespace

std::uint64_t Mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// What a bound pod takes of its node's room: its requests and one pod.
Resources Need(const Pod& pod) {
  Resources need = pod.requests;
  need.pods = 1;
  return need;
}

// A zone topology spread constraint over the pods of app `app` (DoNotSchedule).
TopologySpreadConstraint ZoneSpread(std::int32_t max_skew, const std::string& app) {
  TopologySpreadConstraint spread;
  spread.max_skew = max_skew;
  spread.topology_key = label::kZone;
  spread.selector.match_labels["app"] = app;
  return spread;
}

// A deployment's pods' labels: app=<name> over the step's others.
Labels PodLabels(const WorkloadStep& step) {
  Labels labels = step.labels;
  labels["app"] = step.name;
  return labels;
}

World::World(const Scenario& scenario, std::filesystem::path state_file)
    : scenario_(scenario),
      state_file_(std::move(state_file)),
      catalog_(scenario.catalog),
      nodepools_(scenario.nodepools) {
  record_.now = scenario.start;
  for (const auto& sc : scenario.storage_classes) storage_classes_[sc.name] = sc;
  for (const auto& c : scenario.claims) {
    PersistentVolumeClaim& claim = record_.claims[PodKey(c.ns, c.name)] = c;
    ProvisionAtOnce(claim);
  }
  for (const auto& v : scenario.volumes) record_.volumes[v.name] = v;
  for (const auto& n : scenario.nodes) {
    Node& node = record_.nodes[n.name] = n;
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
    record_.client_tokens[claim.name] = instance.id;
    record_.nodeclaims[claim.name] = claim.nodepool;
    record_.instances[instance.id] = std::move(instance);
  }
}

const Pod* World::TemplateOf(const std::string& key) const {
  auto it = scenario_.templates.find(key);
  return it == scenario_.templates.end() ? nullptr : &it->second;
}

ClusterView World::View() const {
  return {record_.nodes,     pods_, on_node_, record_.claims, record_.volumes, storage_classes_,
          refusing_pods_ > 0};
}

std::vector<Event> World::StartupEvents(const State& known) const {
  std::vector<Event> events;
  events.push_back(Tick{record_.now});
  events.push_back(ControllerStarted{kVersion, scenario_.seed, scenario_.settings});
  events.push_back(CatalogRefreshed{catalog_});
  for (auto& e : Relist(known)) events.push_back(std::move(e));
  return events;
}

std::vector<Event> World::Relist(const State& known) const {
  std::vector<Event> events = ListEvents();
  for (const auto& [key, pod] : known.cluster.pods) {
    if (!pods_.contains(key)) events.push_back(PodDeleted{pod.ns, pod.name});
  }
  for (const auto& [name, node] : known.cluster.nodes) {
    if (!record_.nodes.contains(name)) events.push_back(NodeDeleted{name});
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
  for (const auto& o : scenario_.overlays) events.push_back(NodeOverlayUpserted{o});
  for (const auto& d : scenario_.daemonsets) {
    events.push_back(DaemonSetUpserted{DaemonSet{d.ns, d.name, DaemonPod(d)}});
  }
  for (const auto& [name, sc] : storage_classes_) events.push_back(StorageClassUpserted{sc});
  for (const auto& [name, v] : record_.volumes) events.push_back(PersistentVolumeUpserted{v});
  for (const auto& [key, c] : record_.claims) events.push_back(PersistentVolumeClaimUpserted{c});
  for (const auto& c : scenario_.csi_nodes) events.push_back(CsiNodeUpserted{c});
  for (const auto& claim : scenario_.nodeclaims) {
    if (record_.nodeclaims.contains(claim.name)) events.push_back(NodeClaimObserved{claim});
  }
  for (const auto& [name, node] : record_.nodes) events.push_back(NodeUpserted{node});
  for (const auto& [key, pod] : pods_) events.push_back(PodUpserted{pod});
  return events;
}

std::vector<Event> World::Advance(Instant now) {
  assert(now >= record_.now);
  record_.now = now;
  record_.started = true;
  std::vector<Event> events = CreatePods();
  for (auto& e : ScaleWorkloads()) events.push_back(std::move(e));
  for (auto& e : StartJobs()) events.push_back(std::move(e));
  for (auto& e : RunActions()) events.push_back(std::move(e));
  for (auto& e : FireTimers()) events.push_back(std::move(e));
  for (auto& e : TopUp()) events.push_back(std::move(e));
  for (auto& e : Schedule()) events.push_back(std::move(e));
  for (auto& e : PublishBudgets()) events.push_back(std::move(e));
  for (auto& e : ListInstances()) events.push_back(std::move(e));
  events.push_back(Tick{record_.now});
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
  if (auto t = record_.pod_template.find(key); t != record_.pod_template.end()) {
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
  record_.pod_template.erase(it->first);
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

NodePool World::Pool(const NodePool& original) const {
  NodePool pool = original;
  if (budget_skew_for_test_ != 0) {
    for (auto& budget : pool.budgets) {
      if (budget.nodes.find('%') == std::string::npos) {
        budget.nodes = std::to_string(std::stoll(budget.nodes) + budget_skew_for_test_);
      }
    }
  }
  if (auto added = record_.added_pool_labels.find(pool.name);
      added != record_.added_pool_labels.end()) {
    for (const auto& [k, v] : added->second) pool.labels[k] = v;
  }
  return pool;
}

void World::AddTimer(Instant at, Timer timer) {
  assert(record_.timers.size() < kTimersMax);
  record_.timers[{at.value, record_.next_timer++}] = std::move(timer);
}

std::vector<Event> World::FireTimers() {
  std::vector<Event> events;
  while (!record_.timers.empty() && record_.timers.begin()->first.first <= record_.now.value) {
    Timer timer = record_.timers.begin()->second;
    record_.timers.erase(record_.timers.begin());
    room_may_have_changed_ = true;
    if (timer.kind == Timer::Kind::kJobDone) {
      // The pod finished (unless it was evicted first: its replacement has its own timer).
      auto pod = pods_.find(timer.instance_id);
      if (pod == pods_.end() || pod->second.node_name.empty()) continue;
      auto left =
          record_.job_pods_left.find(pod->second.ns + "/" + pod->second.labels->at("job-name"));
      if (left != record_.job_pods_left.end() && --left->second <= 0)
        record_.job_pods_left.erase(left);
      events.push_back(PodDeleted{pod->second.ns, pod->second.name});
      ErasePod(pod);
      continue;
    }
    auto it = record_.instances.find(timer.instance_id);
    if (it == record_.instances.end()) continue;  // Terminated before the timer fired.
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
      events.push_back(Register(instance));
    } else {
      for (auto& e : BecomeReady(instance)) events.push_back(std::move(e));
    }
  }
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
  record_.nodeclaims.erase(remove.nodeclaim);
  record_.deleting.erase(remove.nodeclaim);
  record_.planned.erase(remove.nodeclaim);
  std::vector<Event> events{CommandSucceeded{command.id}};
  if (!remove.node_name.empty() && record_.nodes.erase(remove.node_name) > 0) {
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
      record_.nodeclass_finalizers.insert(c.name);
    } else {
      record_.nodeclass_finalizers.erase(c.name);
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
          record_.nodeclaims[body.claim.name] = body.claim.nodepool;  // Create is idempotent.
          return {CommandSucceeded{command.id}};
        } else if constexpr (std::is_same_v<T, DeleteNodeClaim>) {
          // The finalizer holds the object until termination removes it.
          if (record_.nodeclaims.contains(body.name)) record_.deleting.insert(body.name);
          return {CommandSucceeded{command.id}};
        } else if constexpr (std::is_same_v<T, LaunchInstance>) {
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
          record_.pool_status[body.nodepool] = body.status;
          return {CommandSucceeded{command.id}};
        } else if constexpr (std::is_same_v<T, DeleteQueueMessage>) {
          return {CommandSucceeded{command.id}};  // Deleted from the queue.
        } else if constexpr (std::is_same_v<T, PatchNodeClassStatus>) {
          // The simulated EC2NodeClasses carry their resolution already (Resolved).
          return {CommandSucceeded{command.id}};
        } else if constexpr (std::is_same_v<T, PatchNodeOverlayStatus>) {
          record_.overlay_status[body.overlay] = body.status;
          return {CommandSucceeded{command.id}};
        } else if constexpr (std::is_same_v<T, SetNodeClassFinalizer>) {
          return SetFinalizer(command, body);
        } else if constexpr (std::is_same_v<T, EnsureInstanceProfile> ||
                             std::is_same_v<T, DeleteNodeClassResources>) {
          // Instance profiles and launch templates are not modelled.
          return {CommandSucceeded{command.id}};
        } else if constexpr (std::is_same_v<T, RecordKubeEvent>) {
          return {};  // Events are not modelled; best effort, no answer.
        } else if constexpr (std::is_same_v<T, PatchPodDeletionCost>) {
          return PatchDeletionCost(command, body);
        } else if constexpr (std::is_same_v<T, TagInstance>) {
          // Tags are not modelled; an instance that is gone cannot be tagged.
          if (!record_.instances.contains(body.instance_id)) {
            return {CommandFailed{command.id, ErrorCode::kNotFound,
                                  "InvalidInstanceID.NotFound: " + body.instance_id}};
          }
          return {CommandSucceeded{command.id}};
        } else {
          static_assert(std::is_same_v<T, PatchNodeClaimStatus>);
          if (!record_.nodeclaims.contains(body.nodeclaim)) {
            return {CommandFailed{command.id, ErrorCode::kNotFound,
                                  "nodeclaim " + body.nodeclaim + " not found"}};
          }
          if (body.allocatable != Resources{}) {
            record_.planned[body.nodeclaim] = body.allocatable;
            CheckPlanned(body.nodeclaim);
          }
          return {CommandSucceeded{command.id}};
        }
      },
      command.body);
}

WorldSummary World::Summary() const {
  WorldSummary s;
  s.instances = record_.instances.size();
  s.nodes = record_.nodes.size();
  for (const auto& [key, pod] : pods_) (pod.node_name.empty() ? s.pods_pending : s.pods_bound)++;
  for (const auto& [id, i] : record_.instances) s.cost += PriceNow(i);
  s.launch_calls = record_.launch_calls;
  s.allocatable_overestimates = record_.overestimated.size();
  if (!record_.overestimated.empty()) s.first_overestimate = record_.overestimated.begin()->second;
  return s;
}

}  // namespace tenon::sim
