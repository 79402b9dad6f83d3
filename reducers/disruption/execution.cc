// Carrying out a validated disruption: the candidates deleted now, or tainted while their
// replacements launch, and deleted once those are initialized (or untainted again when one
// fails).
#include <algorithm>

#include "reducers/disruption/decider.h"

namespace tenon::core {
namespace {

const Taint kDisruptedTaint{label::kDisruptedTaint, "", TaintEffect::kNoSchedule};

}  // namespace

namespace disruption {
namespace {

// What a deletion by `method` is, by kind (a forceful method's: underutilized, as before kinds
// were kept per method).
Cause DeletionCause(DisruptionMethod method) {
  const Decider* decider = MethodInfo(method).decider;
  return decider != nullptr ? decider->deletion_cause : Cause::kUnderutilized;
}

}  // namespace

void Execute(State& state, Seq seq, DisruptionMethod method, const std::vector<std::string>& claims,
             const Plan& plan, const std::string& reason, Output& out) {
  if (plan.replacements.empty()) {
    for (const auto& name : claims) {
      BeginDeletion(state, seq, name, reason, DeletionCause(method), true, out);
    }
    return;
  }
  ReplacementWait wait{method, claims, {}, state.now, reason};
  for (const auto& name : claims) {
    const NodeClaim& claim = state.lifecycle.nodeclaims.at(name);
    Issue(state, seq, PatchNode{claim.node_name, {}, {}, {kDisruptedTaint}, {}}, out);
    RecordTransition(state, seq, claim, Transition::kTainted,
                     "disrupted taint before replacement: " + reason, out);
  }
  for (const PlannedClaim& replacement : plan.replacements) {
    wait.replacements.push_back(LaunchClaim(state, seq, replacement, out).nodeclaim);
  }
  state.disruption.replacing.push_back(std::move(wait));
}

// Disruptions waiting on replacements: once every replacement is initialized the candidates
// are deleted (and the wait stays, keeping the replacements out of disruption, until they are
// gone); if one fails, the disrupted taint comes off and the candidates stay.
void AdvanceReplacements(State& state, Seq seq, Output& out) {
  for (std::size_t i = 0; i < state.disruption.replacing.size();) {
    ReplacementWait& w = state.disruption.replacing[i];
    if (w.draining) {
      bool gone = std::none_of(w.candidates.begin(), w.candidates.end(), [&](const auto& name) {
        return state.lifecycle.nodeclaims.contains(name);
      });
      if (gone) {
        state.disruption.replacing.erase(state.disruption.replacing.begin() +
                                         static_cast<std::ptrdiff_t>(i));
      } else {
        ++i;
      }
      continue;
    }
    std::string failed;
    bool ready = true;
    for (const auto& name : w.replacements) {
      auto claim = state.lifecycle.nodeclaims.find(name);
      if (claim == state.lifecycle.nodeclaims.end() || claim->second.deleting ||
          claim->second.phase == ClaimPhase::kFailed) {
        failed = name + (claim == state.lifecycle.nodeclaims.end()
                             ? " is gone"
                             : " failed: " + claim->second.deleting_reason);
        break;
      }
      ready = ready && claim->second.phase == ClaimPhase::kInitialized;
    }
    if (failed.empty() && !ready) {
      ++i;
      continue;
    }
    std::vector<DisruptionCandidate> candidates;
    for (const auto& name : w.candidates) {
      auto claim = state.lifecycle.nodeclaims.find(name);
      if (claim == state.lifecycle.nodeclaims.end() || claim->second.deleting) continue;
      candidates.push_back(
          {name, claim->second.nodepool, failed.empty() ? w.reason : "kept", Cause::kNone, ""});
      if (failed.empty()) {
        BeginDeletion(state, seq, claim->first, w.reason, DeletionCause(w.method), true, out);
      } else {
        Issue(state, seq, PatchNode{claim->second.node_name, {}, {label::kDisruptedTaint}, {}, {}},
              out);
        RecordTransition(state, seq, claim->second, Transition::kUntainted,
                         "replacement " + failed + "; disruption rolled back", out);
      }
    }
    Decide(state, seq,
           DisruptionDecision{
               w.method,
               failed.empty() ? DisruptionPhase::kReplaced : DisruptionPhase::kRolledBack,
               w.candidates,
               std::move(candidates),
               {},
               failed.empty() ? "replacements initialized: " + Join(w.replacements)
                              : "replacement " + failed + "; the disrupted taint is removed",
               {}},
           out);
    if (failed.empty()) {
      w.draining = true;
      ++i;
    } else {
      state.disruption.replacing.erase(state.disruption.replacing.begin() +
                                       static_cast<std::ptrdiff_t>(i));
    }
  }
}

}  // namespace disruption
}  // namespace tenon::core
