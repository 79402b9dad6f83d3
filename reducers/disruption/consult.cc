// Consulting the simulation about a group of candidates: where their pods would go if they were
// gone, and, one node per command, the first candidate that can go.
#include <span>

#include "reducers/disruption/decider.h"

namespace tenon::core::disruption {

std::string MovesText(Simulation& sim, const Simulated& simulated) {
  const ScheduleResult result = sim.Without(simulated.removals, simulated.offerings);
  std::string where;
  for (const auto& outcome : result.pods) {
    where += (where.empty() ? "" : ", ") + outcome.pod + " -> " + outcome.target;
  }
  return where;
}

Simulated Simulate(const State& state, Simulation& sim, const std::vector<const Candidate*>& group,
                   bool brief) {
  Simulated out;
  std::vector<Simulation::Removal>& removals = out.removals;
  MicroUsdPerHour total{0};
  for (const Candidate* c : group) {
    removals.push_back({c->claim, c->node,
                        c->past_blocked_pods ? std::span<const Pod* const>(c->moving)
                                             : c->bound->reschedulable_in_placement_order,
                        true});
    total += c->claim->price;
  }
  out.offerings = !brief;
  // Stopped once a moving pod lands on an uninitialized node: the loop below reads no further.
  out.result = sim.Without(removals, out.offerings, false, true);
  if (brief && out.result.claims.size() == 1 &&
      out.result.claims.front().capacity_type != kCapacitySpot) {
    out.offerings = true;
    out.result = sim.Without(removals, true, false);
  }
  const ScheduleResult& result = out.result;
  Plan& plan = out.plan;
  plan.removed = total;
  out.settled = true;
  for (const auto& outcome : result.pods) {
    // A pending pod that fits nowhere does not hold the move back (Karpenter's
    // AllNonPendingPodsScheduled); a moving pod that fits nowhere does.
    if (state.cluster.pods.Provisionable().contains(outcome.pod)) continue;
    if (outcome.target.empty()) {
      plan.blocker = "pod " + outcome.pod + " would not reschedule: " + outcome.reason;
      return out;
    }
    if (UninitializedTarget(state, outcome.target)) {
      plan.blocker =
          "pod " + outcome.pod + " would schedule against uninitialized " + outcome.target;
      return out;
    }
  }
  if (result.claims.empty()) {
    std::string moves = MovesText(sim, out);
    plan.text =
        "delete, saving " + PriceText(total) + (moves.empty() ? "" : "; its pods move: ") + moves;
    return out;
  }
  out.settled = false;
  return out;
}

void SelectFirst(const State& state, Simulation& sim, const Decider& decider,
                 const std::vector<Candidate>& cands, Pass& pass, Budgets& budgets) {
  for (const Candidate& c : cands) {
    auto& record = pass.candidates[c.record];
    if (budgets.Left(c.claim->nodepool) <= 0) {
      SetOutcome(record, budgets.Over(c.claim->nodepool), Cause::kDisruptionBudget,
                 c.claim->nodepool);
      continue;
    }
    const std::string why = c.why.empty() ? "" : c.why + "; ";
    if (!pass.selected.empty()) {
      SetOutcome(record, why + "not simulated: another node was selected (one node per command)",
                 Cause::kNotConsidered);
      continue;
    }
    Plan plan = decider.plan(state, sim, {&c});
    if (!plan.blocker.empty()) {
      SetOutcome(record, (c.why.empty() ? "" : c.why + ", but ") + plan.blocker, plan.cause);
      continue;
    }
    SetOutcome(record, "selected: " + why + plan.text);
    pass.selected.push_back(c.claim->name);
    pass.plans.push_back(std::move(plan));
  }
}

}  // namespace tenon::core::disruption
