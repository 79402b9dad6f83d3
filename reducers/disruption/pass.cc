// The disruption pass, every 10 s, as Karpenter's disruption controller runs it: the graceful
// methods consulted in the order of their table (methods.cc), the first with something to do
// proposing it for validation 15 s later; the blocked candidates recorded when what blocks them
// changes. Expiration and replacements move on at every tick.
#include <xxhash.h>

#include <cassert>

#include "reducers/disruption/decider.h"

namespace tenon::core {
namespace disruption {
namespace {

// The pass as its digest reads it, appended to `text` (no temporary string per candidate).
void AppendSummary(const Pass& pass, std::string& text) {
  for (const auto& c : pass.candidates) {
    text.append(c.nodeclaim).append("|").append(c.outcome) += '\n';
  }
  for (const auto& b : pass.budgets) {
    text.append(b.nodepool).append("|").append(std::to_string(b.allowed)) += '\n';
  }
}

// Karpenter's consolidation state: consolidation that found nothing is not recomputed until
// the cluster changes, or kConsolidationRecheck has passed, or (beyond Karpenter) a blocker
// it found runs out by itself. Drift and expiration still are.
bool Consolidated(const State& state) {
  return state.disruption.consolidated_generation == state.cluster_generation &&
         state.disruption.consolidated_at &&
         state.now - *state.disruption.consolidated_at < kConsolidationRecheck &&
         (!state.disruption.recheck_at || state.now < *state.disruption.recheck_at);
}

// The method's selection, proposed: validated 15 s from now.
void Propose(State& state, Seq seq, DisruptionMethod method, const Pass& pass, Output& out) {
  state.disruption.pending = PendingDisruption{method, pass.selected};
  state.disruption.latest_proposal = {state.now, 0};
  for (const Plan& plan : pass.plans)
    state.disruption.latest_proposal.replacements += plan.replacements.size();
  Decide(state, seq,
         DisruptionDecision{method, DisruptionPhase::kProposed, pass.selected, pass.candidates,
                            pass.budgets, "validating for 15 s", Prices(pass.plans)},
         out);
}

using Passes = std::vector<std::pair<DisruptionMethod, Pass>>;

// Nothing to consolidate at this generation of the cluster: not again until it changes, the
// recheck, or the earliest a blocker found runs out.
void NoteConsolidated(State& state, const Passes& passes) {
  state.disruption.consolidated_generation = state.cluster_generation;
  state.disruption.consolidated_at = state.now;
  state.disruption.recheck_at.reset();
  for (const auto& [method, pass] : passes) KeepEarlier(state.disruption.recheck_at, pass.runs_out);
}

// Blocked candidates are recorded when what blocks them changes, not every 10 s.
void RecordBlocked(State& state, Seq seq, Passes& passes, Output& out) {
  std::string text;
  for (const auto& [method, pass] : passes) {
    text.append(Name(method)) += '\n';
    AppendSummary(pass, text);
  }
  std::uint64_t digest = passes.empty() ? 0 : XXH3_64bits(text.data(), text.size());
  if (digest == state.disruption.last_digest) return;
  state.disruption.last_digest = digest;
  for (auto& [method, pass] : passes) {
    Decide(state, seq,
           DisruptionDecision{method,
                              DisruptionPhase::kBlocked,
                              {},
                              std::move(pass.candidates),
                              std::move(pass.budgets),
                              "no candidate can go now",
                              {}},
           out);
  }
}

// Karpenter's order: the first method with something to do acts; the others wait. True when no
// method acted and none but consolidation's had a candidate at all, blocked or not: with nothing
// changed, the next pass would find the same (consolidation, settled now, is not looked at then).
bool ConsultMethods(State& state, Seq seq, Lookups& looked, Output& out) {
  const bool consolidated = Consolidated(state);
  bool none = true;
  Simulation sim(state);
  Passes passes;
  Gathered shared;
  for (const DisruptionMethodInfo& method : DisruptionMethods()) {
    if (!method.graceful()) continue;
    const Decider& decider = *method.decider;
    if (decider.enabled != nullptr && !decider.enabled(state.settings)) continue;
    if (consolidated && method.consolidation_or_emptiness()) continue;
    Pass pass =
        Evaluate(state, method, sim, looked, nullptr, method.underutilized ? &shared : nullptr);
    if (!pass.selected.empty()) {
      Propose(state, seq, method.method, pass, out);
      return false;
    }
    none = none && (pass.candidates.empty() || method.consolidation_or_emptiness());
    if (!pass.candidates.empty() && decider.records_blocked) {
      passes.emplace_back(method.method, std::move(pass));
    }
  }
  // A pass that skipped consolidation has seen no blocker change.
  if (consolidated) return none;
  NoteConsolidated(state, passes);
  RecordBlocked(state, seq, passes, out);
  return none;
}

// NodeClaim conditions Consolidatable (consolidateAfter has passed since the last pod change)
// and Drifted, published when they change, as Karpenter's status controllers do. Returns the
// earliest a claim not yet consolidatable becomes so by itself, if one does.
std::optional<Instant> PublishConditions(State& state, const Claims& claims, Seq seq, Output& out) {
  std::optional<Instant> next;
  for (const ClaimFacts& facts : claims) {
    const NodeClaim& claim = *facts.claim;
    Candidate c;
    c.claim = &claim;
    c.node = facts.node;
    c.pool = facts.pool;
    const bool consolidatable = Consolidatable(state, c);
    if (!consolidatable && c.pool->consolidate_after) {
      KeepEarlier(next,
                  std::max(claim.initialized, claim.last_pod_change) + *c.pool->consolidate_after);
    }
    const std::string& drift = facts.drifted;
    // Most claims, most passes: both conditions already published as they are now.
    if (const auto& held = claim.disruption_conditions; held.size() == 2) {
      const auto& [first, second] = std::tie(*held.begin(), *std::next(held.begin()));
      if ((first.second != 0) == consolidatable && (second.second != 0) == !drift.empty() &&
          first.first == "Consolidatable" && second.first == "Drifted") {
        continue;
      }
    }
    const std::pair<const char*, bool> conditions[] = {{"Consolidatable", consolidatable},
                                                       {"Drifted", !drift.empty()}};
    for (const auto& [type, value] : conditions) {
      const std::int64_t since = value ? std::max<std::int64_t>(state.now.value, 1) : 0;
      auto held = claim.disruption_conditions.find(type);
      if (held != claim.disruption_conditions.end() && (held->second != 0) == value) continue;
      SetDisruptionCondition(state, claim.name, type, since);
      // The message is written only when the condition changes.
      std::string message = type == std::string_view("Drifted")
                                ? (value ? drift : "NotDrifted")
                                : (value ? "Consolidatable" : ConsolidatableBlocker(state, c));
      Issue(state, seq,
            ClaimCondition(claim.name, type, value, std::move(message), claim.provider_id,
                           claim.node_name),
            out);
    }
  }
  return next;
}

// Under soft expiration, the earliest a claim not yet expired becomes so.
std::optional<Instant> NextSoftExpiry(const State& state, const Claims& claims) {
  std::optional<Instant> next;
  if (!state.settings.soft_expiration) return next;
  for (const ClaimFacts& facts : claims) {
    const std::optional<Duration>& after = facts.pool->expire_after;
    if (after && state.now - facts.claim->created < *after) {
      KeepEarlier(next, facts.claim->created + *after);
    }
  }
  return next;
}

}  // namespace

Pass Evaluate(const State& state, const DisruptionMethodInfo& method, Simulation& sim,
              Lookups& looked, const std::vector<std::string>* only, Gathered* shared) {
  assert(method.decider != nullptr);
  const Decider& decider = *method.decider;
  Pass pass;
  std::vector<Candidate> cands;
  if (shared != nullptr && shared->filled) {
    // The second to ask takes them: no third does.
    pass = std::move(shared->pass);
    cands = std::move(shared->cands);
    shared->filled = false;
  } else {
    cands = Gather(state, looked.claims, decider, pass, only);
    if (shared != nullptr) *shared = {true, pass, cands};
  }
  if (cands.empty()) return pass;
  decider.select(state, sim, cands, pass, looked, only != nullptr);
  return pass;
}

// What carrying out `plans` removes, their replacements' first choices, and the saving at
// those prices.
DisruptionPrices Prices(const std::vector<Plan>& plans) {
  DisruptionPrices prices;
  for (const Plan& plan : plans) {
    prices.removed += plan.removed;
    for (const PlannedClaim& replacement : plan.replacements) {
      assert(!replacement.offerings.empty());
      prices.replacements.push_back(replacement.offerings.front());
    }
  }
  prices.saving = prices.removed;
  for (const OfferingChoice& o : prices.replacements) prices.saving -= o.price;
  return prices;
}

}  // namespace disruption

void AdvanceDisruption(State& state, Seq seq, const std::vector<const NodeClaim*>& expired,
                       Output& out) {
  const std::size_t before = out.size();
  disruption::Expire(state, seq, expired, out);
  disruption::AdvanceReplacements(state, seq, out);
  const bool due = !state.disruption.last_pass ||
                   state.now - *state.disruption.last_pass >= kDisruptionPassInterval;
  // The last pass found nothing to do and nothing has changed since: no condition to publish,
  // consolidation still settled, no claim drifted or expired. This one would find the same.
  if (due && out.size() == before && !state.disruption.pending &&
      state.disruption.replacing.empty() &&
      state.idle.disruption.Holds(state.idle.changes, state.now) &&
      disruption::Consolidated(state)) {
    state.disruption.last_pass = state.now;
    return;
  }
  disruption::Lookups looked;
  std::optional<Instant> next;  // The earliest this pass's findings change by themselves.
  if (due) {
    state.disruption.last_pass = state.now;
    looked = disruption::LookUpClaims(state);
    next = disruption::PublishConditions(state, looked.claims, seq, out);
  }
  // Whatever this tick has done so far (expiry, replacements, conditions) is a change.
  if (out.size() != before) ++state.cluster_generation;
  if (!due) return;
  state.idle.disruption = {};
  if (state.disruption.pending) {
    if (state.now - state.disruption.latest_proposal.at >= kDisruptionValidation) {
      disruption::Validate(state, looked, seq, out);
    }
    return;  // One method per pass; a pending one holds the pass until it is validated.
  }
  const bool none = disruption::ConsultMethods(state, seq, looked, out);
  if (!none || out.size() != before || state.disruption.pending ||
      !state.disruption.replacing.empty() || !disruption::Consolidated(state)) {
    return;
  }
  disruption::KeepEarlier(next, *state.disruption.consolidated_at + kConsolidationRecheck);
  disruption::KeepEarlier(next, state.disruption.recheck_at);
  disruption::KeepEarlier(next, disruption::NextSoftExpiry(state, looked.claims));
  state.idle.disruption = {true, state.idle.changes, next};
}

}  // namespace tenon::core
