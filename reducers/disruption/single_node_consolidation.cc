// Single-node consolidation, as Karpenter's: candidates in disruption-cost order, each on its
// own (no timeout: it is fast enough); the first within budget whose pods fit on the rest of
// the cluster or on one cheaper replacement goes (and, in a Balanced pool, whose score passes).
#include "reducers/disruption/decider.h"

namespace tenon::core::disruption {
namespace {

void SelectOne(const State& state, Simulation& sim, std::vector<Candidate>& cands, Pass& pass,
               Lookups& looked, bool /*validating*/) {
  if (AwaitSettled(cands, pass, looked)) return;
  Budgets budgets(state, MethodInfo(kSingleNodeConsolidation).reason, pass, looked);
  SelectFirst(state, sim, kSingleNodeConsolidation, cands, pass, budgets);
}

// A node of a Balanced pool that could not pass its pool's score even deleted outright (all its
// price saved) is not simulated.
Plan PlanOne(const State& state, Simulation& sim, const std::vector<const Candidate*>& group) {
  if (group.size() != 1) return PlanCheaper(state, sim, group);
  const std::optional<BalancedScore> bound = DeleteWouldFail(*group.front());
  if (!bound) return PlanCheaper(state, sim, group);
  Plan plan;
  plan.removed = group.front()->claim->price;
  plan.cause = Cause::kBalancedScore;
  plan.blocker = "not simulated: deleted outright, NodePool " + group.front()->claim->nodepool +
                 " (Balanced): " + bound->Text();
  return plan;
}

}  // namespace

const Decider kSingleNodeConsolidation{
    .blocker = ConsolidationBlocker,
    .plan = PlanOne,
    .select = SelectOne,
    .deletion_cause = Cause::kUnderutilized,
    .deletion_reason = ConsolidationDeletionReason,
    .gone = "no longer a candidate or no longer exists",
};

}  // namespace tenon::core::disruption
