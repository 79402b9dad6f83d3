// Validation, as Karpenter's: a proposal waits 15 s, then its candidates are evaluated again,
// alone; it is carried out only if each is still selected and the simulation needs as many
// replacements as before.
#include <algorithm>

#include "reducers/disruption/decider.h"

namespace tenon::core::disruption {
namespace {

// What changed since the proposal, or empty: a claim no longer selected (its outcome now), or
// the number of replacements.
std::string WhatChanged(const State& state, const Decider& decider,
                        const std::vector<std::string>& claims, const Pass& now) {
  for (const auto& name : claims) {
    if (std::find(now.selected.begin(), now.selected.end(), name) != now.selected.end()) continue;
    auto it = std::find_if(now.candidates.begin(), now.candidates.end(),
                           [&](const auto& c) { return c.nodeclaim == name; });
    return name + ": " + (it != now.candidates.end() ? it->outcome : std::string(decider.gone));
  }
  std::size_t replacements = 0;
  for (const Plan& plan : now.plans) replacements += plan.replacements.size();
  if (replacements != state.disruption.latest_proposal.replacements) {
    return "the simulation now needs " + std::to_string(replacements) + " replacement(s), not " +
           std::to_string(state.disruption.latest_proposal.replacements);
  }
  return {};
}

// Carries out the validated selection: one group with one plan (consolidation of underutilized
// nodes), or each claim with its own.
void Carry(State& state, Seq seq, const DisruptionMethodInfo& method,
           const std::vector<std::string>& claims, const Pass& now, Output& out) {
  auto outcome_of = [&](const std::string& name) {
    auto it = std::find_if(now.candidates.begin(), now.candidates.end(),
                           [&](const auto& c) { return c.nodeclaim == name; });
    return method.decider->deletion_reason(it->outcome);
  };
  if (method.underutilized) {
    Execute(state, seq, method.method, claims, now.plans.front(), outcome_of(claims.front()), out);
    return;
  }
  for (std::size_t i = 0; i < now.selected.size(); ++i) {
    const std::string& name = now.selected[i];
    Execute(state, seq, method.method, {name}, now.plans[i], outcome_of(name), out);
  }
}

}  // namespace

void Validate(State& state, Lookups& looked, Seq seq, Output& out) {
  const DisruptionMethodInfo& method = MethodInfo(state.disruption.pending->method);
  std::vector<std::string> claims = std::move(state.disruption.pending->nodeclaims);
  state.disruption.pending.reset();
  state.disruption.last_digest = 0;
  Simulation sim(state);
  Pass now = Evaluate(state, method, sim, looked, &claims);
  if (std::string changed = WhatChanged(state, *method.decider, claims, now); !changed.empty()) {
    Decide(state, seq,
           DisruptionDecision{method.method,
                              DisruptionPhase::kInvalidated,
                              claims,
                              now.candidates,
                              now.budgets,
                              "after 15 s: " + changed,
                              {}},
           out);
    return;
  }
  std::size_t replacements = 0;
  for (const Plan& plan : now.plans) replacements += plan.replacements.size();
  Decide(state, seq,
         DisruptionDecision{
             method.method,
             replacements > 0 ? DisruptionPhase::kReplacing : DisruptionPhase::kExecuted, claims,
             now.candidates, now.budgets,
             replacements > 0 ? "unchanged after 15 s; tainting and launching " +
                                    std::to_string(replacements) + " replacement(s)"
                              : "unchanged after 15 s",
             Prices(now.plans)},
         out);
  Carry(state, seq, method, claims, now, out);
}

}  // namespace tenon::core::disruption
