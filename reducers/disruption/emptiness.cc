// Emptiness, as Karpenter's emptiness method: a node no workload pod would have to leave, once
// consolidateAfter has passed, is deleted; as many at once as the budgets allow.
#include "reducers/disruption/decider.h"

namespace tenon::core::disruption {
namespace {

std::string EmptinessBlocker(const State& state, Candidate& c) {
  // consolidateAfter: Never turns emptiness off for the pool: it does not look at its nodes,
  // so its passes record nothing about them.
  if (!c.pool->consolidate_after) return "-";
  if (c.pool->replicas) return "-";  // A static pool keeps its empty nodes.
  return c.bound->reschedulable.empty() ? ConsolidatableBlocker(state, c) : "-";
}

// Nothing moves and nothing is launched: the nodes are deleted.
Plan PlanDelete(const State& /*state*/, Simulation& /*sim*/,
                const std::vector<const Candidate*>& group) {
  Plan plan;
  for (const Candidate* c : group) plan.removed += c->claim->price;
  return plan;
}

// Every candidate within its pool's budget goes.
void SelectEmpty(const State& state, Simulation& sim, std::vector<Candidate>& cands, Pass& pass,
                 Lookups& looked, bool /*validating*/) {
  Budgets budgets(state, MethodInfo(kEmptiness).reason, pass, looked);
  for (const Candidate& c : cands) {
    std::int64_t& left = budgets.Left(c.claim->nodepool);
    if (left <= 0) {
      SetOutcome(pass.candidates[c.record], budgets.Over(c.claim->nodepool),
                 Cause::kDisruptionBudget, c.claim->nodepool);
      continue;
    }
    --left;
    pass.selected.push_back(c.claim->name);
    pass.plans.push_back(kEmptiness.plan(state, sim, {&c}));
  }
}

std::string EmptyDeletionReason(const std::string& /*outcome*/) {
  return "empty: no workload pods";
}

}  // namespace

const Decider kEmptiness{
    .blocker = EmptinessBlocker,
    .plan = PlanDelete,
    .select = SelectEmpty,
    .deletion_cause = Cause::kEmpty,
    .deletion_reason = EmptyDeletionReason,
    .gone = "no longer empty or no longer exists",
};

}  // namespace tenon::core::disruption
