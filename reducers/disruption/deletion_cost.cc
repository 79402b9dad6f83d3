// Pod deletion cost management (FEATURE_GATES PodDeletionCostManagement), as Karpenter's
// pod.deletioncost controller: the ReplicaSet pods on the nodes Karpenter would rather remove get
// the lower controller.kubernetes.io/pod-deletion-cost, so a ReplicaSet scaling down empties
// those nodes first and consolidation has less to move.
//
//   A  nodes already going (their NodeClaim deleting, or tainted karpenter.sh/disrupted): the
//      lowest value there is, -2147483648.
//   B  drifted nodes, then C the others consolidation could take, each in consolidation's order
//      (highest savings ratio: price over 1 plus the pods' eviction costs, then by name), within
//      their NodePool's Drifted and Underutilized budgets: -n .. -1 over the n of them.
//   D  nodes that cannot be disrupted (not initialized, nominated, do-not-disrupt, a
//      PodDisruptionBudget, a bare or StatefulSet pod, no price, consolidateAfter Never, over
//      budget): the annotation is removed.
//
// Ranked at most every minute, and only when the cluster changed or 5 minutes have passed; each
// pass writes at most 50 nodes of B and C and clears D with what is left of them (A is never
// capped). Each write is a PatchPodDeletionCost command, so the log holds every value written.
#include <algorithm>
#include <climits>
#include <set>

#include "reducers/disruption/decider.h"

namespace tenon::core::disruption {
namespace {

constexpr Duration kRankEvery{kMinute.value};
constexpr Duration kRankAtLeastEvery{5 * kMinute.value};
constexpr std::size_t kNodesPerPassMax = 50;
constexpr std::int32_t kGoing = INT32_MIN;

struct Ranked {
  const NodeClaim* claim = nullptr;
  const PodTable::Bound* bound = nullptr;
  std::int64_t price = 0;       // Micro-dollars an hour.
  std::int64_t reschedule = 0;  // kCostUnit plus the pods' positive eviction costs.
};

// Consolidation's order: the higher price over reschedule cost first, then by node name.
bool Before(const Ranked& a, const Ranked& b) {
  const __int128 left = static_cast<__int128>(a.price) * b.reschedule;
  const __int128 right = static_cast<__int128>(b.price) * a.reschedule;
  if (left != right) return left > right;
  return a.claim->node_name < b.claim->node_name;
}

bool Disrupted(const Node& node) {
  return std::any_of(node.taints.begin(), node.taints.end(),
                     [](const Taint& t) { return t.key == label::kDisruptedTaint; });
}

// A pod that keeps its node from being disrupted: outside kube-system, owned by nothing a
// controller recreates elsewhere (a bare pod) or by a StatefulSet.
bool Pins(const Pod& pod) {
  if (!IsActive(pod) || pod.ns == "kube-system") return false;
  return !(pod.owner_kind == "ReplicaSet") && !(pod.owner_kind == "Job") &&
         !(pod.owner_kind == "DaemonSet") && !(pod.owner_kind == "Node");
}

// Whether the node goes to D (its annotation removed) whatever its pool's budget.
bool Undisruptable(const State& state, const ClaimFacts& facts) {
  const NodeClaim& claim = *facts.claim;
  if (claim.nominated_until > state.now || claim.price.value <= 0) return true;
  Candidate c;
  c.claim = facts.claim;
  c.node = facts.node;
  c.pool = facts.pool;
  c.bound = facts.bound;
  std::optional<Instant> ignored;
  if (!GracefulBlocker(state, c, &ignored).empty()) return true;
  return std::any_of(facts.bound->pods.begin(), facts.bound->pods.end(),
                     [](const auto& entry) { return Pins(*entry.second); });
}

// Whether the pod is one the controller writes and does not have `cost` yet (none: removed; an
// annotation of 0 is as good as none to the ReplicaSet controller).
bool Wants(const Pod& pod, std::optional<std::int32_t> cost) {
  return !pod.Terminating() && pod.owner_kind == "ReplicaSet" &&
         pod.deletion_cost != cost.value_or(0);
}

// Whether a write to the node would change any pod (what counts against the pass's cap).
bool Needs(const PodTable::Bound& bound, std::optional<std::int32_t> cost) {
  return std::any_of(bound.pods.begin(), bound.pods.end(),
                     [&](const auto& entry) { return Wants(*entry.second, cost); });
}

// Writes `cost` on the node's pods that want it, but those with a write in flight.
void Write(State& state, Seq seq, const PodTable::Bound& bound, std::optional<std::int32_t> cost,
           const std::set<std::string>& inflight, Output& out) {
  for (const auto& [key, pod] : bound.pods) {
    if (!Wants(*pod, cost) || inflight.contains(std::string(key))) continue;
    Issue(state, seq, PatchPodDeletionCost{pod->ns.str(), pod->name, pod->uid, cost}, out);
  }
}

}  // namespace
}  // namespace tenon::core::disruption

namespace tenon::core {

using namespace disruption;

void AdvanceDeletionCost(State& state, Seq seq, Output& out) {
  if (!state.settings.pod_deletion_cost) return;
  if (const auto& at = state.disruption.deletion_cost_ranked_at) {
    const Duration since = state.now - *at;
    if (since < kRankEvery) return;
    if (state.cluster_generation == state.disruption.deletion_cost_generation &&
        since < kRankAtLeastEvery) {
      return;
    }
  }
  state.disruption.deletion_cost_ranked_at = state.now;
  state.disruption.deletion_cost_generation = state.cluster_generation;
  std::set<std::string> inflight;
  for (const auto& [id, command] : state.inflight) {
    if (const auto* p = std::get_if<PatchPodDeletionCost>(&command.body)) {
      inflight.insert(PodKey(p->ns, p->name));
    }
  }
  // A: every claim on its way out (the deleting ones are not among the pass's claims).
  std::set<std::string> going;
  for (const auto& [name, claim] : state.lifecycle.nodeclaims) {
    auto node = state.cluster.nodes.find(claim.node_name);
    if (claim.node_name.empty() || node == state.cluster.nodes.end()) continue;
    if (!claim.deleting && !Disrupted(node->second)) continue;
    going.insert(name);
    Write(state, seq, state.cluster.pods.OnNode(claim.node_name), kGoing, inflight, out);
  }
  Lookups looked = LookUpClaims(state);
  std::vector<Ranked> drifted, normal;
  std::vector<const PodTable::Bound*> cleared;
  for (const ClaimFacts& facts : looked.claims) {
    if (going.contains(facts.claim->name)) continue;
    const bool is_drifted = !facts.drifted.empty() && !facts.pool->replicas;
    if (Undisruptable(state, facts) || (!is_drifted && !facts.pool->consolidate_after)) {
      cleared.push_back(facts.bound);
      continue;
    }
    Ranked r{facts.claim, facts.bound, facts.claim->price.value,
             kCostUnit + facts.bound->positive_eviction_cost};
    (is_drifted ? drifted : normal).push_back(r);
  }
  std::sort(drifted.begin(), drifted.end(), Before);
  std::sort(normal.begin(), normal.end(), Before);
  // Each pool's budget for the reason admits the nodes in order; the rest are cleared.
  Pass pass;
  std::vector<const Ranked*> ranked;
  for (auto [group, reason] :
       {std::pair{&drifted, "Drifted"}, std::pair{&normal, "Underutilized"}}) {
    Budgets budgets(state, reason, pass, looked);
    for (const Ranked& r : *group) {
      std::int64_t& left = budgets.Left(r.claim->nodepool);
      if (left > 0) {
        --left;
        ranked.push_back(&r);
      } else {
        cleared.push_back(r.bound);
      }
    }
  }
  const auto n = static_cast<std::int32_t>(ranked.size());
  std::size_t written = 0;
  for (std::int32_t i = 0; i < n && written < kNodesPerPassMax; ++i) {
    const std::int32_t cost = -n + i;
    if (!Needs(*ranked[i]->bound, cost)) continue;
    Write(state, seq, *ranked[i]->bound, cost, inflight, out);
    ++written;
  }
  for (const PodTable::Bound* bound : cleared) {
    if (written >= kNodesPerPassMax) break;
    if (!Needs(*bound, std::nullopt)) continue;
    Write(state, seq, *bound, std::nullopt, inflight, out);
    ++written;
  }
}

}  // namespace tenon::core
