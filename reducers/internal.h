// Private to reducers/: the pieces Step is made of. Not included outside this folder.
#pragma once

#include <xxhash.h>

#include <algorithm>
#include <functional>
#include <optional>
#include <set>
#include <string_view>

#include "model/pod_rules.h"
#include "reducers/core.h"
#include "reducers/requirements.h"

namespace tenon::core {

bool Tolerates(const std::vector<Toleration>& tolerations, const Taint& taint);
// The pod's karpenter.sh/do-not-disrupt at `now`: "true" always, the duration form until that
// long after the pod's creation.
inline bool DoNotDisrupt(const Pod& pod, Instant now) {
  if (!pod.do_not_disrupt) return false;
  const std::optional<Duration>& lasts = pod.do_not_disrupt_for;
  return !lasts || lasts->value <= 0 || now < pod.created + *lasts;
}

// Names to values in a flat array sorted by a hash of the name: a lookup is a binary search
// and one comparison, where a std::map of thousands of long names misses the cache at every
// level. For lookups only (the core iterates nothing in hash order); the names must outlive it.
template <class T>
class NameIndex {
 public:
  void Reserve(std::size_t n) { entries_.reserve(n); }
  void Add(std::string_view name, T value) { entries_.push_back({Hash(name), name, value}); }
  // After the last Add, before the first Find. A sealed index copied and then extended sorts
  // only what was added since, and merges it in.
  void Seal() {
    const auto by_hash = [](const Entry& a, const Entry& b) { return a.hash < b.hash; };
    const auto added = std::is_sorted_until(entries_.begin(), entries_.end(), by_hash);
    std::sort(added, entries_.end(), by_hash);
    std::inplace_merge(entries_.begin(), added, entries_.end(), by_hash);
  }
  const T* Find(std::string_view name) const {
    const std::uint64_t hash = Hash(name);
    auto it = std::lower_bound(entries_.begin(), entries_.end(), hash,
                               [](const Entry& e, std::uint64_t h) { return e.hash < h; });
    for (; it != entries_.end() && it->hash == hash; ++it) {
      if (it->name == name) return &it->value;
    }
    return nullptr;
  }

 private:
  struct Entry {
    std::uint64_t hash = 0;
    std::string_view name;
    T value;
  };
  static std::uint64_t Hash(std::string_view s) { return XXH3_64bits(s.data(), s.size()); }
  std::vector<Entry> entries_;
};

// What is bound to each of a series of nodes named in ascending order, found by walking the
// PodTable's name-ordered nodes alongside rather than looking each name up (a pass over
// thousands of nodes).
class BoundWalk {
 public:
  explicit BoundWalk(const PodTable& pods)
      : nodes_(pods.Nodes()), at_(nodes_.begin()), none_(pods.OnNode({})) {}
  // `name` must not sort before the name asked for last.
  const PodTable::Bound& At(std::string_view name) {
    for (; at_ != nodes_.end(); ++at_) {
      const int order = std::string_view(at_->first).compare(name);  // One comparison a step.
      if (order == 0) return at_->second;
      if (order > 0) break;
    }
    return none_;
  }

 private:
  const std::map<std::string, PodTable::Bound, std::less<>>& nodes_;
  std::map<std::string, PodTable::Bound, std::less<>>::const_iterator at_;
  const PodTable::Bound& none_;
};

// Command and decision construction with the state's deterministic counters.
Command& Issue(State& state, Seq cause, CommandBody body, Output& out);
Decision& Decide(State& state, Seq cause, DecisionBody body, Output& out);
// A Kubernetes Event, best effort: a command that is not waited on (not in flight) and is not
// sent again after a restart (nodeclass.cc).
void Announce(State& state, Seq cause, RecordKubeEvent event, Output& out);
// The Events of the decisions in `out` (KubeEventsFor) that Karpenter's limits let through,
// announced (events.cc).
void AnnounceDecisionEvents(State& state, Seq cause, Output& out);
// One Event outside a decision, under Karpenter's dedupe: dropped while an Event of its reason
// on its object was recorded within `timeout` (events.cc).
void AnnounceDeduped(State& state, Seq cause, RecordKubeEvent event, Duration timeout, Output& out);

// The EC2NodeClass's lifecycle (nodeclass.cc): its finalizer and instance profile, and the
// termination of a deleted one. Reconciled when it or its resolution changes, and on each
// tick while a deletion waits.
void ReconcileNodeClass(State& state, Seq seq, const std::string& name, Output& out);
void AdvanceNodeClassTerminations(State& state, Seq seq, Output& out);
// The result of an EC2NodeClass command (it leaves the in-flight set); false when the
// command `id` is not one.
bool OnNodeClassResult(State& state, Seq seq, CommandId id, bool succeeded, Output& out);
// A resolution of the EC2NodeClass's selectors: kept, and its status written when what it shows
// changes. A deleted EC2NodeClass's resolution and termination are forgotten.
void OnNodeClassResolved(State& state, Seq seq, const NodeClassResolved& event, Output& out);
void ForgetNodeClass(State& state, const std::string& name);

inline std::string Join(const std::vector<std::string>& items, const char* sep = ", ") {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : sep) + item;
  return out;
}

// Provisioning: runs one scheduling pass over the pending pods when the batch window closes.
void MaybeProvision(State& state, Seq seq, Output& out);
void NotePodForBatch(State& state, const Pod& pod);
// Pods still pending are planned for again in the next batch (capacity or config changed).
void ReconsiderPendingPods(State& state);
// Names a planned claim and issues its CreateNodeClaim + LaunchInstance (provisioning and
// disruption replacements alike); returns its record.
ClaimPlan LaunchClaim(State& state, Seq seq, const PlannedClaim& plan, Output& out);
// Fills in what a launch needs beyond its offerings, from the state alone: each override's
// subnet and AMI from the EC2NodeClass's resolution (dropping overrides it has none for), and
// the node's launch template inputs. Without a resolution, subnets and AMIs stay empty.
void FillLaunch(const State& state, LaunchInstance& launch);

// Lifecycle: results of launches and the nodes that register for them.
void OnFleetLaunched(State& state, Seq seq, const FleetLaunched& event, Output& out);
// `launch`: the launch that failed (taken from the in-flight commands before it completes).
void OnFleetFailed(State& state, Seq seq, const FleetFailed& event,
                   const std::optional<LaunchInstance>& launch, Output& out);
// Sends again the launch of a claim whose retry is due (NodeClaim::relaunch_at).
void Relaunch(State& state, Seq seq, NodeClaim& claim, Output& out);
void OnCommandFailed(State& state, Seq seq, const CommandFailed& event, Output& out);
// A node stored (or erased) by Step: its claim registers, initialises or loses its node.
void OnNodeUpserted(State& state, Seq seq, const Node& node, Output& out);
void OnNodeDeleted(State& state, const std::string& name);
// A patch of the node landed: an initialization that came while it was in flight is synced
// now, not on the node's next change, which may never come. Asks for nothing `landed` asked for
// already: its echo from the watch may still be on its way.
void ResyncNode(State& state, Seq seq, const PatchNode& landed, Output& out);
void ExpireUnavailableOfferings(State& state);
// The rest of what other reducers ask of the NodeClaims' lifecycle, which alone changes
// State::lifecycle (lifecycle.cc). An offering out of capacity ("type/zone/capacity-type"), for
// kUnavailableOfferingTtl.
void NoteOfferingUnavailable(State& state, const std::string& offering);
// A new claim's name, "<nodepool>-<5 characters>" drawn from the logged seed; then the claim
// itself, taken into the state.
std::string NewClaimName(State& state, const std::string& pool);
void AddClaim(State& state, NodeClaim claim);
// Claims that are, or whose nodes are, the targets of a provisioning pass are nominated until
// `until`: consolidation leaves them alone meanwhile.
void Nominate(State& state, const std::set<std::string_view>& targets, Instant until);
// A pod came to or left the node: its claims' last_pod_change (consolidateAfter).
void NotePodMoved(State& state, const std::string& node_name);
// The claims of `pools` priced again as their NodePool's catalog now has them (overlays.cc).
void RepriceClaims(State& state, const std::set<std::string>& pools);
// A disruption condition (Consolidatable, Drifted) as published: true since `since`, or false (0).
void SetDisruptionCondition(State& state, const std::string& name, const std::string& type,
                            std::int64_t since);
// When the claim's drain ends at the latest (node repair ends it now).
void SetTerminationDeadline(State& state, const std::string& name, Instant deadline);

// Termination, timeouts and garbage collection (termination.cc).
// Starts a claim's termination, for `reason` of kind `cause`; `requested_by_tenon` issues the
// API deletion too.
void BeginDeletion(State& state, Seq seq, const std::string& claim, const std::string& reason,
                   Cause cause, bool requested_by_tenon, Output& out);
// A LifecycleDecision: one step of the claim's life, its reason and the reason's code.
void RecordTransition(State& state, Seq seq, const NodeClaim& claim, Transition transition,
                      const std::string& reason, Output& out, Cause cause = Cause::kNone);
void OnNodeClaimDeletionRequested(State& state, Seq seq, const NodeClaimDeletionRequested& event,
                                  Output& out);
// A NodeClaim seen in the API: adopted when the core does not know it (lifecycle.cc).
void OnNodeClaimObserved(State& state, Seq seq, const NodeClaim& observed, Output& out);
// On each tick: launch and registration timeouts, the next step of every termination, and
// NodePool status. Returns, from the same walk over the claims, those whose NodePool's
// expireAfter has passed (launched, not deleting), in name order: AdvanceDisruption expires
// them (nothing between the two changes which claims those are).
std::vector<const NodeClaim*> AdvanceLifecycle(State& state, Seq seq, Output& out);
// Whether `claim` (launched, not deleting) has outlived its NodePool's expireAfter. `pool`:
// the pool last looked up (PoolOf), updated.
bool Expired(const State& state, const NodeClaim& claim, const NodePool*& pool);
// The claim's NodePool, or null. `last`, the pool found for the claim before, is asked first
// (walking the claims in name order, a pool's claims are often neighbours), and updated.
inline const NodePool* PoolOf(const State& state, const NodeClaim& claim, const NodePool*& last) {
  if (last == nullptr || last->name != claim.nodepool) {
    auto it = state.cluster.nodepools.find(claim.nodepool);
    last = it == state.cluster.nodepools.end() ? nullptr : &it->second;
  }
  return last;
}
// The result of a termination command (eviction, pod deletion, instance termination,
// finalizer removal, status patch); false when `id` is not one. `error` empty on success.
bool OnTerminationResult(State& state, Seq seq, CommandId id, std::optional<ErrorCode> error,
                         Output& out);
void OnInstancesListed(State& state, Seq seq, const InstancesListed& event, Output& out);

// Disruption (reducers/disruption/): expiration on every tick, then the 10 s pass (the graceful
// methods' deciders, in the order of their table, with budgets and validation); interruption
// messages (interruption.cc); pod moves for consolidateAfter.
// `expired`: what AdvanceLifecycle returned on this tick.
void AdvanceDisruption(State& state, Seq seq, const std::vector<const NodeClaim*>& expired,
                       Output& out);

// ---- Static NodePools (static_pools.cc). ----

// A static pool's NodeClaims: active (not deleting, not waiting for a drift replacement),
// being deleted, and waiting for their replacement.
struct StaticCount {
  std::int64_t active = 0;
  std::int64_t deleting = 0;
  std::int64_t pending = 0;
};
StaticCount CountStatic(const State& state, const std::string& pool);
// A NodeClaim of the pool's template alone, with no pods; none when it cannot launch now.
std::optional<PlannedClaim> StaticClaim(const State& state, const NodePool& pool);
// Launches what a static pool lacks of its replicas, and deletes what it has over them.
void AdvanceStaticPools(State& state, Seq seq, Output& out);

// Node repair (repair.cc, FEATURE_GATES NodeRepair): deletes the NodeClaims of nodes unhealthy
// past their repair policy's toleration, within the NodePool's 20% unhealthy limit.
void AdvanceNodeRepair(State& state, Seq seq, Output& out);

// Pod deletion cost management (disruption/deletion_cost.cc, FEATURE_GATES
// PodDeletionCostManagement): ranks the nodes and writes their ReplicaSet pods'
// pod-deletion-cost, at most every minute.
void AdvanceDeletionCost(State& state, Seq seq, Output& out);

// NodeOverlays (overlays.cc). The catalog a NodePool's decisions see: the cloud's, or the one
// the overlays changed for it; and which overlays changed it (none: nullptr).
const Catalog& CatalogFor(const State& state, const std::string& nodepool);
const OverlaidCatalog* OverlaidFor(const State& state, const std::string& nodepool);
// `price` changed by an overlay's price or priceAdjustment, never below zero.
MicroUsdPerHour AdjustedPrice(MicroUsdPerHour price, const PriceChange& change);
// Makes the overlaid catalogs again (a state read from a snapshot has none yet).
void RebuildOverlays(State& state);
// After a change to the catalog, the NodePools, the NodeOverlays or the settings: makes the
// overlaid catalogs again, prices the claims of the pools concerned as they now see them, and
// publishes each overlay's status where it changed.
void RefreshOverlays(State& state, Seq seq, Output& out);
// What overlays changed of a new claim's offerings, for the pods' outcome; empty when none.
std::string OverlayNote(const State& state, const std::string& nodepool,
                        const std::vector<OfferingChoice>& offerings);
void OnInterruption(State& state, Seq seq, const InterruptionReceived& event, Output& out);
// The pod is gone (deleted, or an eviction or deletion of it answered NotFound).
void ForgetPod(State& state, const std::string& ns, const std::string& name);

// Every change to which claims State::nodeclaims holds, or to a claim's node_name, goes
// through these, so that State::claims_by_node stays in step (lifecycle.cc).
void IndexClaim(State& state, const NodeClaim& claim);   // After it is added.
void ForgetClaim(State& state, const NodeClaim& claim);  // Before it is erased.
void SetClaimNode(State& state, NodeClaim& claim, const std::string& node);

// The labels a claim's node carries for its own requirement keys (neither well known nor
// restricted), as Karpenter's Requirements.Labels gives them: a single-valued set's value; for
// NotIn, Exists, Gt and Lt on a key the NodePool's own requirements name, an integer the set
// allows (the smallest from the lower bound, or 0, where Karpenter draws one at random); none
// for DoesNotExist, a key left open, or a key only the pods constrain that way.
inline Labels OwnRequirementLabels(const std::vector<Requirement>& list, const NodePool* pool) {
  Labels out;
  const Requirements requirements(list);
  for (const auto& entry : requirements.sets()) {
    const std::string& key = entry.first;  // Named, not bound: lambdas below capture it.
    const ValueSet& set = entry.second;
    if (IsWellKnownLabel(key) || !RestrictedLabel(key).empty()) continue;
    if (!set.complement) {
      if (set.values.size() == 1) out[key] = set.values.front();
      continue;
    }
    if (set.absent_ok && set.values.empty() && !set.gt && !set.lt) continue;
    if (pool == nullptr || std::none_of(pool->requirements.begin(), pool->requirements.end(),
                                        [&](const Requirement& r) { return r.key == key; })) {
      continue;
    }
    if (set.gt && *set.gt == INT64_MAX) continue;
    std::int64_t value = set.gt ? *set.gt + 1 : 0;
    // At most one candidate per excluded value is taken before one is allowed.
    for (std::size_t tries = 0; tries <= set.values.size(); ++tries, ++value) {
      if (set.lt && value >= *set.lt) break;
      if (set.Has(std::to_string(value))) {
        out[key] = std::to_string(value);
        break;
      }
    }
  }
  return out;
}

}  // namespace tenon::core
