// Multi-node consolidation, as Karpenter's: the longest prefix (at least two) of the cheapest
// candidates to disrupt, within budget, whose pods fit on the rest of the cluster or on one
// cheaper replacement, found by binary search.
#include "reducers/disruption/decider.h"

namespace tenon::core::disruption {
namespace {

// Karpenter's limit: multi-node consolidation looks at the cheapest 100 candidates to disrupt.
constexpr std::size_t kMultiNodeCandidatesMax = 100;

// The candidates within budget, among the cheapest 100; the others' outcomes are recorded.
std::vector<const Candidate*> WithinBudget(const State& state, std::vector<Candidate>& cands,
                                           Pass& pass, Lookups& looked) {
  Budgets budgets(state, MethodInfo(kMultiNodeConsolidation).reason, pass, looked);
  std::vector<const Candidate*> within;
  for (const Candidate& c : cands) {
    std::int64_t& left = budgets.Left(c.claim->nodepool);
    if (left <= 0) {
      SetOutcome(pass.candidates[c.record], budgets.Over(c.claim->nodepool),
                 Cause::kDisruptionBudget, c.claim->nodepool);
      continue;
    }
    if (within.size() >= kMultiNodeCandidatesMax) {
      SetOutcome(pass.candidates[c.record], "beyond the 100 cheapest to disrupt",
                 Cause::kNotConsidered);
      continue;
    }
    --left;
    within.push_back(&c);
  }
  return within;
}

void SelectGroup(const State& state, Simulation& sim, std::vector<Candidate>& cands, Pass& pass,
                 Lookups& looked, bool validating) {
  if (AwaitSettled(cands, pass, looked)) return;
  std::vector<const Candidate*> within = WithinBudget(state, cands, pass, looked);
  std::size_t best = 0;
  Plan chosen;
  if (validating) {
    Plan plan = kMultiNodeConsolidation.plan(state, sim, within);
    if (plan.blocker.empty() && within.size() >= 2) best = within.size(), chosen = std::move(plan);
  } else if (within.size() >= 2) {
    std::size_t lo = 2, hi = within.size();
    while (lo <= hi) {
      std::size_t mid = (lo + hi) / 2;
      std::vector<const Candidate*> prefix(within.begin(), within.begin() + mid);
      Plan plan = kMultiNodeConsolidation.plan(state, sim, prefix);
      if (plan.blocker.empty()) {
        best = mid;
        chosen = std::move(plan);
        lo = mid + 1;
      } else {
        hi = mid - 1;
      }
    }
  }
  for (std::size_t i = 0; i < within.size(); ++i) {
    auto& record = pass.candidates[within[i]->record];
    if (i < best) {
      SetOutcome(record, "selected: " + std::to_string(best) + " nodes together: " + chosen.text);
      pass.selected.push_back(within[i]->claim->name);
    } else if (best == 0) {
      SetOutcome(record, "no group of two or more can go together", Cause::kNoBetterPlacement);
    } else {
      SetOutcome(record, "not in the largest group that can go together", Cause::kNotConsidered);
    }
  }
  if (best > 0) pass.plans.push_back(std::move(chosen));
}

}  // namespace

const Decider kMultiNodeConsolidation{
    .blocker = ConsolidationBlocker,
    .plan = PlanCheaper,
    .select = SelectGroup,
    .deletion_cause = Cause::kUnderutilized,
    .deletion_reason = ConsolidationDeletionReason,
    .gone = "no longer a candidate or no longer exists",
    // Its candidates are single-node's too: their blockers are recorded there.
    .records_blocked = false,
};

}  // namespace tenon::core::disruption
