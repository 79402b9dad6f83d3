// Static NodePools (spec.replicas), as Karpenter's static capacity behind the StaticCapacity
// feature gate: a pool of a fixed number of nodes whatever the pending pods. Each tick, a static
// pool short of its replicas launches the difference (within limits.nodes), and one over them
// deletes the surplus, the empty nodes first, then the cheapest to disrupt, nodes with
// do-not-disrupt pods last; neither waits for a disruption budget. The provisioner never
// launches from a static pool for pods (scheduler.cc), consolidation and emptiness leave its
// nodes alone, and drift replaces one of its nodes one for one, the replacement first
// (disruption/drift.cc). Expired, interrupted or deleted nodes are refilled here.
#include <algorithm>
#include <tuple>

#include "reducers/internal.h"
#include "reducers/launch.h"
#include "reducers/templates.h"

namespace tenon::core {
namespace {

// A claim waiting, tainted, for its drift replacement: counted apart, as Karpenter's pending
// disruption, so that neither the refill nor the trim acts on the replacement in flight.
bool BeingReplaced(const State& state, const std::string& claim) {
  for (const ReplacementWait& wait : state.disruption.replacing) {
    if (std::find(wait.candidates.begin(), wait.candidates.end(), claim) != wait.candidates.end()) {
      return true;
    }
  }
  return false;
}

// Karpenter's order for removing a static pool's surplus: empty nodes (no pods but DaemonSet
// ones, none of them do-not-disrupt) first, then by disruption cost; nodes with a
// do-not-disrupt pod last. Claims not registered yet hold no pods and go first.
struct Surplus {
  bool holds_pods = false;
  bool do_not_disrupt = false;
  std::int64_t cost = 0;
  const std::string* name = nullptr;
  auto Key() const { return std::tie(holds_pods, do_not_disrupt, cost, *name); }
};

void Trim(State& state, Seq seq, const NodePool& pool, std::int64_t surplus, Output& out) {
  std::vector<Surplus> order;
  for (const auto& [name, claim] : state.lifecycle.nodeclaims) {
    if (claim.nodepool != pool.name || claim.deleting || BeingReplaced(state, name)) continue;
    const PodTable::Bound& bound = state.cluster.pods.OnNode(claim.node_name);
    const bool holds = !bound.reschedulable.empty() || bound.do_not_disrupt > 0;
    order.push_back({holds, bound.do_not_disrupt > 0, holds ? bound.eviction_cost : 0, &name});
  }
  std::sort(order.begin(), order.end(),
            [](const Surplus& a, const Surplus& b) { return a.Key() < b.Key(); });
  const std::string reason = "overprovisioned: static NodePool " + pool.name + " has " +
                             std::to_string(*pool.replicas + surplus) + " nodes for " +
                             std::to_string(*pool.replicas) + " replicas";
  for (std::int64_t i = 0; i < surplus && i < static_cast<std::int64_t>(order.size()); ++i) {
    BeginDeletion(state, seq, *order[i].name, reason, Cause::kOverprovisioned, true, out);
  }
}

void Fill(State& state, Seq seq, const NodePool& pool, const StaticCount& n, Output& out) {
  std::int64_t granted = *pool.replicas - n.active;
  if (pool.limits.nodes) {
    granted = std::min(granted, *pool.limits.nodes - (n.active + n.deleting + n.pending));
  }
  if (granted <= 0) return;  // At its node limit: the next tick tries again.
  const std::optional<PlannedClaim> plan = StaticClaim(state, pool);
  if (!plan) return;  // Its EC2NodeClass cannot launch now.
  ProvisioningDecision decision{state.now, {}, {}};
  for (std::int64_t i = 0; i < granted; ++i) {
    decision.new_claims.push_back(LaunchClaim(state, seq, *plan, out));
  }
  Decide(state, seq, std::move(decision), out);
}

}  // namespace

StaticCount CountStatic(const State& state, const std::string& pool) {
  StaticCount n;
  for (const auto& [name, claim] : state.lifecycle.nodeclaims) {
    if (claim.nodepool != pool) continue;
    if (claim.deleting) {
      ++n.deleting;
    } else if (BeingReplaced(state, name)) {
      ++n.pending;
    } else {
      ++n.active;
    }
  }
  return n;
}

std::optional<PlannedClaim> StaticClaim(const State& state, const NodePool& pool) {
  std::vector<PoolTemplate> templates = BuildTemplates(state);
  auto t = std::find_if(templates.begin(), templates.end(),
                        [&](const PoolTemplate& x) { return x.pool == &pool; });
  if (t == templates.end() || t->nodeclass == nullptr) return std::nullopt;
  AllocatableCache cache;
  FillTypes(state, *t, cache);
  if (t->types.empty() || !t->all.Any()) return std::nullopt;
  // The template alone: no pod asks anything of it, so the launch takes the cheapest offering
  // the pool's requirements allow, as Karpenter leaves a static claim's type to the launch.
  Bin bin;
  bin.planned = true;
  bin.requirements = t->requirements;
  bin.types = t->all;
  PlannedClaim claim = ChooseLaunch(*t, bin);
  if (claim.offerings.empty()) return std::nullopt;
  return claim;
}

void AdvanceStaticPools(State& state, Seq seq, Output& out) {
  if (!state.settings.static_capacity) return;
  for (const auto& [name, pool] : state.cluster.nodepools) {
    if (!pool.replicas) continue;
    const StaticCount n = CountStatic(state, name);
    if (n.active + n.pending < *pool.replicas) {
      Fill(state, seq, pool, n, out);
    } else if (n.active > *pool.replicas) {
      Trim(state, seq, pool, n.active - *pool.replicas, out);
    }
  }
}

}  // namespace tenon::core
