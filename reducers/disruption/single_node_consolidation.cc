// Single-node consolidation, as Karpenter's: candidates in disruption-cost order, each on its
// own (no timeout: it is fast enough); the first within budget whose pods fit on the rest of
// the cluster or on one cheaper replacement goes.
#include "reducers/disruption/decider.h"

namespace tenon::core::disruption {
namespace {

void SelectOne(const State& state, Simulation& sim, std::vector<Candidate>& cands, Pass& pass,
               Lookups& looked, bool /*validating*/) {
  if (AwaitSettled(cands, pass, looked)) return;
  Budgets budgets(state, MethodInfo(kSingleNodeConsolidation).reason, pass, looked);
  SelectFirst(state, sim, kSingleNodeConsolidation, cands, pass, budgets);
}

}  // namespace

const Decider kSingleNodeConsolidation{
    .blocker = ConsolidationBlocker,
    .plan = PlanCheaper,
    .select = SelectOne,
    .deletion_cause = Cause::kUnderutilized,
    .deletion_reason = ConsolidationDeletionReason,
    .gone = "no longer a candidate or no longer exists",
};

}  // namespace tenon::core::disruption
