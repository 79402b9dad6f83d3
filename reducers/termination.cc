// Termination, timeouts and garbage collection of NodeClaims, as Karpenter's lifecycle and
// termination controllers do them.
//
// A NodeClaim being deleted moves through: the karpenter.sh/disrupted:NoSchedule taint on its
// Node; a drain through the Eviction API in four tiers (non-critical workload, non-critical
// DaemonSet, critical workload, critical DaemonSet), each eviction a command and each 429 an
// event retried with backoff; force deletion of pods whose own grace period no longer fits
// before the NodePool's terminationGracePeriod runs out; terminating the instance; removing
// the finalizer. Each step is a command, each result an event, each transition a decision.
// Every step is level-triggered from the state on each tick, so a lost result or a restart
// only delays it.
#include <algorithm>
#include <cassert>
#include <limits>

#include "reducers/internal.h"

namespace tenon::core {
namespace {

bool IsCritical(const Pod& pod) {
  return pod.priority_class == "system-cluster-critical" ||
         pod.priority_class == "system-node-critical";
}

// Drain order: non-critical workload, non-critical DaemonSet, critical workload, critical
// DaemonSet.
int Tier(const Pod& pod) {
  return (IsCritical(pod) ? 2 : 0) + (pod.owner_kind == "DaemonSet" ? 1 : 0);
}

const Taint kDisrupted{label::kDisruptedTaint, "", TaintEffect::kNoSchedule};

// Pods the drain must see off the node: active, not mirror pods, not pods that tolerate the
// disrupted taint (they would only be scheduled straight back), and not pods stuck terminating:
// a minute past the time their deletion gave them, as Karpenter has it, the node's kubelet is
// taken not to be removing them (it may be gone) and the drain stops waiting for them.
std::vector<const Pod*> PodsToDrain(const State& state, const std::string& node) {
  std::vector<const Pod*> out;
  for (const auto& [key, pod_ptr] : state.cluster.pods.OnNode(node).pods) {
    const Pod& pod = *pod_ptr;
    if (!IsActive(pod) || pod.owner_kind == "Node") continue;
    if (pod.deletion && state.now > *pod.deletion + kMinute) continue;
    if (Tolerates(pod.constraints->tolerations, kDisrupted)) continue;
    out.push_back(&pod);
  }
  return out;
}

// An accepted eviction's pod deletion reaches the core with the pod's watch, after the
// eviction's own result: until it does (at most this long) the pod is not evicted again.
constexpr Duration kEvictedWatchWait{10 * kSecond.value};

template <class T, class Match>
bool Inflight(const State& state, Match&& match) {
  return std::any_of(state.inflight.begin(), state.inflight.end(), [&](const auto& entry) {
    const T* body = std::get_if<T>(&entry.second.body);
    return body != nullptr && match(*body);
  });
}

// The earlier of its NodePool's terminationGracePeriod after deletion and the deadline a node
// repair set.
std::optional<Instant> DrainDeadline(const State& state, const NodeClaim& claim) {
  std::optional<Instant> deadline = claim.termination_deadline;
  auto pool = state.cluster.nodepools.find(claim.nodepool);
  if (pool == state.cluster.nodepools.end() || !pool->second.termination_grace_period)
    return deadline;
  const Instant from_pool = claim.deleting_since + *pool->second.termination_grace_period;
  return deadline ? std::min(*deadline, from_pool) : from_pool;
}

Duration Backoff(std::int32_t refusals) {
  Duration delay = kEvictionBackoffBase;
  for (std::int32_t i = 1; i < refusals && delay < kEvictionBackoffMax; ++i) {
    delay = Duration{delay.value * 2};
  }
  return std::min(delay, kEvictionBackoffMax);
}

// Evicts (or, past the deadline, force-deletes) what is left on the node. True once nothing
// the drain waits for is left.
bool Drain(State& state, Seq seq, NodeClaim& claim, const Node& node, Output& out) {
  if (std::none_of(node.taints.begin(), node.taints.end(),
                   [](const Taint& t) { return t.key == label::kDisruptedTaint; }) &&
      !Inflight<PatchNode>(state, [&](const PatchNode& p) { return p.node_name == node.name; })) {
    Issue(state, seq, PatchNode{node.name, {}, {}, {kDisrupted}, {}}, out);
  }
  std::vector<const Pod*> pods = PodsToDrain(state, node.name);
  if (pods.empty()) return true;
  std::optional<Instant> deadline = DrainDeadline(state, claim);
  if (deadline && state.now >= *deadline) return true;  // The grace period is spent.
  auto evicting = [&](const Pod& pod) {
    return Inflight<EvictPod>(
               state, [&](const EvictPod& e) { return e.ns == pod.ns && e.name == pod.name; }) ||
           Inflight<DeletePod>(
               state, [&](const DeletePod& d) { return d.ns == pod.ns && d.name == pod.name; });
  };
  // Pods whose own grace period no longer fits before the deadline go now, whatever their
  // PDBs or do-not-disrupt say. A pod already being deleted is only waited for: evicting it
  // again would ask the API server for what it is doing already (Karpenter skips them too).
  std::vector<const Pod*> waiting;
  for (const Pod* pod : pods) {
    if (pod->Terminating()) continue;
    if (deadline && state.now + pod->termination_grace >= *deadline) {
      if (!evicting(*pod)) Issue(state, seq, DeletePod{pod->ns, pod->name, claim.name}, out);
    } else {
      waiting.push_back(pod);
    }
  }
  if (waiting.empty()) return false;
  // A later tier waits while a pod of an earlier one is still terminating, as it waits while
  // one is evicted.
  int tier =
      Tier(**std::min_element(waiting.begin(), waiting.end(),
                              [](const Pod* a, const Pod* b) { return Tier(*a) < Tier(*b); }));
  for (const Pod* pod : pods) {
    if (pod->Terminating()) tier = std::min(tier, Tier(*pod));
  }
  for (const Pod* pod : waiting) {
    if (Tier(*pod) != tier || DoNotDisrupt(*pod, state.now) || evicting(*pod)) continue;
    std::string key = PodKey(pod->ns, pod->name);
    if (auto it = claim.evict_after.find(key);
        it != claim.evict_after.end() && state.now < it->second) {
      continue;
    }
    Issue(state, seq, EvictPod{pod->ns, pod->name, claim.name}, out);
  }
  return false;
}

// The status condition a transition sets, if any: (condition, status).
std::optional<std::pair<const char*, bool>> ConditionOf(Transition transition) {
  if (transition == Transition::kLaunched) return std::pair{"Launched", true};
  if (transition == Transition::kLaunchFailed) return std::pair{"Launched", false};
  if (transition == Transition::kRegistered) return std::pair{"Registered", true};
  if (transition == Transition::kInitialized) return std::pair{"Initialized", true};
  if (transition == Transition::kDrained) return std::pair{"Drained", true};
  if (transition == Transition::kInstanceTerminated) return std::pair{"InstanceTerminating", true};
  return std::nullopt;
}

// What a launched instance tells of its NodeClaim, as Karpenter writes it: the instance type's
// well-known labels with zone and capacity type, and the status's image, capacity, allocatable.
// A launched claim's capacity as its status gives it: the instance type's CPU and memory, and
// the pods and extended resources of its allocatable. Empty for a type the catalog lacks.
Resources ClaimCapacity(const State& state, const NodeClaim& claim) {
  const Catalog& catalog = CatalogFor(state, claim.nodepool);
  const auto entry = catalog.find(claim.instance_type);
  if (entry == catalog.end()) return {};
  Resources capacity = entry->second.allocatable;
  capacity.cpu = entry->second.type.cpu;
  capacity.memory = entry->second.type.memory;
  return capacity;
}

void AddLaunchDetails(const State& state, const NodeClaim& claim, PatchNodeClaimStatus& patch) {
  patch.image_id = claim.image_id;
  patch.allocatable = claim.allocatable;
  const auto entry = state.cluster.catalog->find(claim.instance_type);
  if (entry != state.cluster.catalog->end()) {
    patch.labels = entry->second.labels;
    patch.capacity = ClaimCapacity(state, claim);
  }
  patch.labels[label::kInstanceType] = claim.instance_type;
  patch.labels[label::kZone] = claim.zone;
  patch.labels[label::kCapacityType] = claim.capacity_type;
}

void Record(State& state, Seq seq, const NodeClaim& claim, Transition transition,
            std::string reason, Output& out, Cause cause = Cause::kNone, std::string subject = {}) {
  if (auto condition = ConditionOf(transition)) {
    PatchNodeClaimStatus patch = ClaimCondition(claim.name, condition->first, condition->second,
                                                reason, claim.provider_id, claim.node_name);
    if (transition == Transition::kLaunched) AddLaunchDetails(state, claim, patch);
    Issue(state, seq, std::move(patch), out);
  }
  Decide(state, seq,
         LifecycleDecision{claim.name, transition, std::move(reason), claim.node_name,
                           claim.instance_id, cause, std::move(subject)},
         out);
}

// One claim's next termination step.
void Advance(State& state, Seq seq, NodeClaim& claim, Output& out) {
  const std::string name = claim.name;
  if (Inflight<TerminateInstance>(state, [&](const auto& t) { return t.nodeclaim == name; }) ||
      Inflight<RemoveFinalizer>(state, [&](const auto& r) { return r.nodeclaim == name; })) {
    return;
  }
  if (!claim.instance_gone && !claim.instance_id.empty()) {
    auto node = state.cluster.nodes.find(claim.node_name);
    if (node != state.cluster.nodes.end() && !Drain(state, seq, claim, node->second, out)) return;
    // Volumes detach before the instance goes, unless the grace period has run out.
    auto deadline = DrainDeadline(state, claim);
    bool expired = deadline && state.now >= *deadline;
    if (node != state.cluster.nodes.end() && !node->second.volumes_attached.empty() && !expired)
      return;
    bool cut = node != state.cluster.nodes.end() && !PodsToDrain(state, node->first).empty();
    Record(state, seq, claim, Transition::kDrained,
           cut ? (claim.termination_deadline && state.now >= *claim.termination_deadline
                      ? "repaired: its pods are not waited for"
                      : "terminationGracePeriod reached with pods left")
               : (node == state.cluster.nodes.end() ? "no node to drain" : "no pod left to evict"),
           out);
    Issue(state, seq, TerminateInstance{claim.instance_id, name}, out);
    return;
  }
  Issue(state, seq, RemoveFinalizer{name, claim.node_name}, out);
}

// Each pool's nodes and resources as its status publishes them, summed by the walk
// AdvanceLifecycle makes anyway. As Karpenter's cluster state counts a pool: every launched
// claim that is not being deleted, by its capacity (what the pool's limits are checked against).
class PoolSums {
 public:
  void Add(const State& state, const NodeClaim& claim) {
    if (claim.phase == ClaimPhase::kPending || claim.deleting) return;
    if (last_ == nullptr || last_->first != claim.nodepool) {
      last_ = &*sums_.try_emplace(claim.nodepool).first;  // A pool's claims are often neighbours.
    }
    last_->second.nodes++;
    last_->second.resources += ClaimCapacity(state, claim);
  }
  const std::map<std::string, NodePoolStatus>& sums() const { return sums_; }

 private:
  std::map<std::string, NodePoolStatus> sums_;  // Only nodes and resources are set.
  std::pair<const std::string, NodePoolStatus>* last_ = nullptr;
};

// Why the pool's EC2NodeClass keeps it from being Ready; empty when nothing does.
std::string NodeClassUnready(const State& state, const NodePool& pool) {
  const auto nodeclass = state.cluster.nodeclasses.find(pool.nodeclass);
  if (nodeclass == state.cluster.nodeclasses.end()) return "NodeClassNotFound";
  if (nodeclass->second.terminating) return "NodeClassTerminating";
  if (!nodeclass->second.ready) return "NodeClassNotReady";
  return "";
}

// `sums`: of the claims as they are now.
void Republish(State& state, const PoolSums& sums, Seq seq, Output& out) {
  std::map<std::string, NodePoolStatus> now;
  for (const auto& [name, pool] : state.cluster.nodepools) {
    NodePoolStatus status;
    status.validated = true;
    status.nodeclass_unready = NodeClassUnready(state, pool);
    if (auto h = state.lifecycle.registration_healthy.find(name);
        h != state.lifecycle.registration_healthy.end()) {
      status.registration_healthy = h->second;
    }
    if (auto sum = sums.sums().find(name); sum != sums.sums().end()) {
      status.nodes = sum->second.nodes;
      status.resources = sum->second.resources;
    }
    now[name] = status;
  }
  for (auto& [name, status] : now) {
    // Never published counts as the empty status: a pool with nothing to say stays quiet.
    auto prior = state.lifecycle.nodepool_status.find(name);
    const NodePoolStatus& published =
        prior != state.lifecycle.nodepool_status.end() ? prior->second : NodePoolStatus{};
    if (published == status) continue;
    state.lifecycle.nodepool_status[name] = status;
    Issue(state, seq, PatchNodePoolStatus{name, status}, out);
  }
  std::erase_if(state.lifecycle.nodepool_status,
                [&](const auto& entry) { return !state.cluster.nodepools.contains(entry.first); });
  std::erase_if(state.lifecycle.registration_healthy,
                [&](const auto& entry) { return !state.cluster.nodepools.contains(entry.first); });
}

}  // namespace

void BeginDeletion(State& state, Seq seq, const std::string& name, const std::string& reason,
                   Cause cause, bool requested_by_tenon, Output& out) {
  auto it = state.lifecycle.nodeclaims.find(name);
  if (it == state.lifecycle.nodeclaims.end()) return;
  NodeClaim& claim = it->second;
  if (claim.deleting) return;
  claim.deleting = true;
  claim.deleting_since = state.now;
  claim.deleting_reason = reason;
  claim.relaunch_at.reset();
  state.lifecycle.relaunches.erase(claim.name);
  Record(state, seq, claim, Transition::kDeleting, reason, out, cause);
  if (requested_by_tenon) Issue(state, seq, DeleteNodeClaim{claim.name}, out);
  // Its pods are back in the market: the next batch plans for them.
  ReconsiderPendingPods(state);
}

void RecordTransition(State& state, Seq seq, const NodeClaim& claim, Transition transition,
                      const std::string& reason, Output& out, Cause cause) {
  Record(state, seq, claim, transition, reason, out, cause);
}

void OnNodeClaimDeletionRequested(State& state, Seq seq, const NodeClaimDeletionRequested& event,
                                  Output& out) {
  auto it = state.lifecycle.nodeclaims.find(event.name);
  if (it == state.lifecycle.nodeclaims.end()) return;
  BeginDeletion(state, seq, it->first, "deleted through the API", Cause::kDeletedThroughApi, false,
                out);
}

std::vector<const NodeClaim*> AdvanceLifecycle(State& state, Seq seq, Output& out) {
  // The last walk found nothing to do, nothing has changed since, and no claim's time comes
  // before its note runs out: this walk would find nothing either.
  if (state.idle.lifecycle.Holds(state.idle.changes, state.now)) return {};
  // Timeouts judge what the cluster shows: not before it has been read whole (a Node that
  // registered while tenon was down, a claim still to be adopted).
  // One walk over the claims: the timeouts, and the claims deleting after them, which then
  // take their next step in the same order (a step changes no other claim).
  const std::size_t before = out.size();
  std::vector<NodeClaim*> deleting;
  std::vector<const NodeClaim*> expired;
  const NodePool* pool = nullptr;
  PoolSums sums;  // Nothing it sums changes after: a step issues commands, not claim fields.
  // No claim younger than the shortest expireAfter of any pool has expired: most claims, most
  // ticks, are ruled out without looking up their pool.
  Duration shortest{std::numeric_limits<std::int64_t>::max()};
  for (const auto& [name, p] : state.cluster.nodepools) {
    if (p.expire_after) shortest = std::min(shortest, *p.expire_after);
  }
  // The earliest a claim's time comes (a timeout, a relaunch, an expiry): until then, with
  // nothing changed, a walk finds what this one did.
  std::optional<Instant> next;
  auto due_at = [&next](Instant at) {
    if (!next || at < *next) next = at;
  };
  for (auto& [name, claim] : state.lifecycle.nodeclaims) {
    sums.Add(state, claim);
    if (!claim.deleting && state.cluster.watches_synced) {
      if (claim.phase == ClaimPhase::kPending && state.now - claim.created >= kLaunchTimeout) {
        BeginDeletion(state, seq, claim.name, "not launched within 5m", Cause::kLaunchTimeout, true,
                      out);
      } else if (claim.phase == ClaimPhase::kPending && claim.relaunch_at &&
                 state.now >= *claim.relaunch_at) {
        Relaunch(state, seq, claim, out);
      } else if (claim.phase == ClaimPhase::kLaunched &&
                 state.now - claim.launched >= kRegistrationTtl) {
        BeginDeletion(state, seq, claim.name, "no node registered within 15m",
                      Cause::kRegistrationTimeout, true, out);
        state.lifecycle.registration_healthy[claim.nodepool] =
            false;  // NodeRegistrationHealthy=False
      } else if (claim.phase == ClaimPhase::kPending) {
        due_at(claim.created + kLaunchTimeout);
        if (claim.relaunch_at) due_at(*claim.relaunch_at);
      } else if (claim.phase == ClaimPhase::kLaunched) {
        due_at(claim.launched + kRegistrationTtl);
      }
    }
    if (claim.deleting) {
      deleting.push_back(&claim);
    } else if (state.now - claim.created < shortest) {
      if (shortest.value != std::numeric_limits<std::int64_t>::max()) {
        due_at(claim.created + shortest);
      }
    } else if (Expired(state, claim, pool)) {
      expired.push_back(&claim);
    } else if (claim.phase != ClaimPhase::kPending && pool != nullptr && pool->expire_after) {
      due_at(claim.created + *pool->expire_after);  // Its own pool's expireAfter.
    }
  }
  for (NodeClaim* claim : deleting) Advance(state, seq, *claim, out);
  Republish(state, sums, seq, out);
  // Expired claims are only handed on under soft expiration, where the disruption pass judges
  // them by itself.
  if (deleting.empty() && out.size() == before &&
      (expired.empty() || state.settings.soft_expiration)) {
    state.idle.lifecycle = {true, state.idle.changes, next};
  } else {
    state.idle.lifecycle = {};
  }
  return expired;
}

bool OnTerminationResult(State& state, Seq seq, CommandId id, std::optional<ErrorCode> error,
                         Output& out) {
  auto it = state.inflight.find(id);
  if (it == state.inflight.end()) return false;
  const CommandBody& body = it->second.body;
  if (const auto* evict = std::get_if<EvictPod>(&body)) {
    auto claim = state.lifecycle.nodeclaims.find(evict->nodeclaim);
    if (claim == state.lifecycle.nodeclaims.end()) return true;
    std::string key = PodKey(evict->ns, evict->name);
    if (error == ErrorCode::kDisruptionBudget) {
      std::int32_t refusals = ++claim->second.evictions_refused[key];
      claim->second.evict_after[key] = state.now + Backoff(refusals);
      Record(state, seq, claim->second, Transition::kEvictionRefused,
             "pod " + key + ": a PodDisruptionBudget forbids it (refusal " +
                 std::to_string(refusals) + ", next try in " +
                 std::to_string(Backoff(refusals).value / 1'000'000) + "ms)",
             out, Cause::kPodDisruptionBudget, key);
    } else if (!error || error == ErrorCode::kNotFound) {
      claim->second.evictions_refused.erase(key);
      // The API server has the pod deleting; the watch says so after this answer, and the
      // drain must not evict it again meanwhile.
      claim->second.evict_after[key] = state.now + kEvictedWatchWait;
      Record(state, seq, claim->second, Transition::kEvicted,
             "pod " + key + (error ? " (already gone)" : ""), out, Cause::kNone, key);
      // NotFound: the pod is gone, whether or not its deletion was seen (a restart may have
      // missed it); the drain must not wait for it.
      if (error) ForgetPod(state, evict->ns, evict->name);
    }
    return true;
  }
  if (const auto* del = std::get_if<DeletePod>(&body)) {
    auto claim = state.lifecycle.nodeclaims.find(del->nodeclaim);
    if (claim != state.lifecycle.nodeclaims.end() && (!error || error == ErrorCode::kNotFound)) {
      Record(
          state, seq, claim->second, Transition::kPodForceDeleted,
          "pod " + PodKey(del->ns, del->name) + ": terminationGracePeriod leaves no time to evict",
          out);
    }
    if (error == ErrorCode::kNotFound) ForgetPod(state, del->ns, del->name);
    return true;
  }
  if (const auto* term = std::get_if<TerminateInstance>(&body)) {
    bool gone = !error || error == ErrorCode::kNotFound;
    auto claim = state.lifecycle.nodeclaims.find(term->nodeclaim);
    if (claim != state.lifecycle.nodeclaims.end() && gone) {
      claim->second.instance_gone = true;
      Record(state, seq, claim->second, Transition::kInstanceTerminated, term->instance_id, out);
    } else if (term->nodeclaim.empty() && gone) {
      Decide(state, seq,
             LifecycleDecision{"", Transition::kLeakedInstanceTerminated, "no NodeClaim owns it",
                               "", term->instance_id, Cause::kNone, ""},
             out);
    }
    return true;
  }
  if (const auto* fin = std::get_if<RemoveFinalizer>(&body)) {
    auto claim = state.lifecycle.nodeclaims.find(fin->nodeclaim);
    if (claim != state.lifecycle.nodeclaims.end() && (!error || error == ErrorCode::kNotFound)) {
      Record(state, seq, claim->second, Transition::kFinalized,
             "finalizer removed; NodeClaim and Node gone", out);
      std::erase_if(state.lifecycle.finished_nodeclaims, [&](const auto& entry) {
        return state.now - entry.second > kFinishedNodeClaimsKept;
      });
      state.lifecycle.finished_nodeclaims[claim->first] = state.now;
      ForgetClaim(state, claim->second);
      state.lifecycle.nodeclaims.erase(claim);
    }
    return true;
  }
  if (const auto* status = std::get_if<PatchNodePoolStatus>(&body)) {
    if (error)
      state.lifecycle.nodepool_status.erase(status->nodepool);  // Published again next tick.
    return true;
  }
  return false;
}

void OnInstancesListed(State& state, Seq seq, const InstancesListed& event, Output& out) {
  state.lifecycle.last_instance_listing = state.now;
  std::map<std::string, const CloudInstance*> alive;
  for (const auto& i : event.instances) {
    if (i.state != "terminated" && i.state != "shutting-down") alive[i.id] = &i;
  }
  // A claim whose instance is gone: nothing to drain or terminate, only the finalizer left.
  for (auto& [name, claim] : state.lifecycle.nodeclaims) {
    if (claim.deleting || claim.phase == ClaimPhase::kPending || claim.instance_id.empty())
      continue;
    if (alive.contains(claim.instance_id)) continue;
    // The listing may have been taken before this launch was recorded: judge it next time.
    if (state.now - claim.launched < kLeakedInstanceAge) continue;
    claim.instance_gone = true;
    Record(state, seq, claim, Transition::kInstanceGone,
           "instance " + claim.instance_id + " no longer exists (garbage collection)", out);
    BeginDeletion(state, seq, claim.name, "instance " + claim.instance_id + " is gone",
                  Cause::kInstanceGone, true, out);
  }
  // An instance no NodeClaim tracks, old enough not to be a launch still being recorded. Not
  // before the cluster's NodeClaims have been read: one may be about to be adopted.
  if (!state.cluster.watches_synced) return;
  for (const auto& [id, instance] : alive) {
    bool owned =
        !instance->nodeclaim.empty() && state.lifecycle.nodeclaims.contains(instance->nodeclaim);
    if (owned || state.now - instance->launched < kLeakedInstanceAge) continue;
    // The binding passed by name: clang before 16 cannot capture a structured binding.
    if (Inflight<TerminateInstance>(
            state, [&instance_id = id](const auto& t) { return t.instance_id == instance_id; })) {
      continue;
    }
    Decide(state, seq,
           LifecycleDecision{
               instance->nodeclaim, Transition::kLeakedInstance,
               "tagged for this cluster, no NodeClaim, launched " +
                   std::to_string((state.now - instance->launched).value / kSecond.value) + "s ago",
               "", id, Cause::kNone, ""},
           out);
    Issue(state, seq, TerminateInstance{id, ""}, out);
  }
}

}  // namespace tenon::core
