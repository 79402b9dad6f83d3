// Interruption, as Karpenter AWS's interruption controller does it: each SQS message (a spot
// interruption warning, a rebalance recommendation, a scheduled change, an instance state
// change) is acknowledged, remembered for a day against redelivery, and, when it says the
// instance is going, starts the forceful, unbudgeted deletion of its NodeClaim.
#include <string>

#include "reducers/internal.h"

namespace tenon::core {
namespace {

// What an interruption message says will happen to the instance, as a code (kNone for a state
// change that stops nothing).
Cause InterruptionCause(const InterruptionReceived& event) {
  switch (event.kind) {
    case InterruptionKind::kSpotInterruption:
      return Cause::kSpotInterruption;
    case InterruptionKind::kRebalanceRecommendation:
      return Cause::kRebalanceRecommendation;
    case InterruptionKind::kScheduledChange:
      return Cause::kScheduledChange;
    case InterruptionKind::kStateChange:
      break;
  }
  if (event.detail == "stopping" || event.detail == "stopped") return Cause::kInstanceStopping;
  if (event.detail == "shutting-down" || event.detail == "terminated") {
    return Cause::kInstanceTerminating;
  }
  return Cause::kNone;
}

}  // namespace

void OnInterruption(State& state, Seq seq, const InterruptionReceived& event, Output& out) {
  Issue(state, seq, DeleteQueueMessage{event.message_id}, out);
  std::erase_if(state.disruption.handled_messages,
                [&](const auto& entry) { return state.now - entry.second > kHandledMessagesKept; });
  // At-least-once delivery: a message handled before is acknowledged again, nothing more.
  if (!state.disruption.handled_messages.try_emplace(event.message_id, state.now).second) return;
  const NodeClaim* claim = nullptr;
  for (const auto& [name, c] : state.lifecycle.nodeclaims) {
    if (!event.instance_id.empty() && c.instance_id == event.instance_id) claim = &c;
  }
  static constexpr const char* kNames[] = {"spot interruption warning", "rebalance recommendation",
                                           "scheduled change", "instance state change"};
  std::string what = std::string(kNames[static_cast<int>(event.kind)]) +
                     (event.detail.empty() ? "" : " (" + event.detail + ")") + ", message " +
                     event.message_id;
  const Cause cause = InterruptionCause(event);
  if (claim == nullptr) {
    Decide(state, seq,
           LifecycleDecision{"", Transition::kInterruptionIgnored,
                             what + ": no NodeClaim has this instance", "", event.instance_id,
                             cause, ""},
           out);
    return;
  }
  switch (event.kind) {
    case InterruptionKind::kRebalanceRecommendation:
      RecordTransition(state, seq, *claim, Transition::kRebalanceRecommendation, what, out, cause);
      return;
    case InterruptionKind::kStateChange:
      if (event.detail != "stopping" && event.detail != "stopped" &&
          event.detail != "shutting-down" && event.detail != "terminated") {
        RecordTransition(state, seq, *claim, Transition::kInstanceStateChange, what, out, cause);
        return;
      }
      break;
    case InterruptionKind::kSpotInterruption:
      // As Karpenter's interruption controller: the type's spot offering in the zone is out of
      // capacity (whatever the claim says it runs as; only spot is interrupted).
      NoteOfferingUnavailable(state, OfferingKey(claim->instance_type, claim->zone, kCapacitySpot));
      break;
    case InterruptionKind::kScheduledChange:
      break;
  }
  if (claim->deleting) {
    // Karpenter reports the message on the node all the same; there is nothing left to do.
    RecordTransition(state, seq, *claim, Transition::kInterrupted, what + "; already being deleted",
                     out, cause);
    return;
  }
  Decide(state, seq,
         DisruptionDecision{DisruptionMethod::kInterruption,
                            DisruptionPhase::kExecuted,
                            {claim->name},
                            {{claim->name, claim->nodepool, what, cause, ""}},
                            {},
                            "forceful and not budgeted",
                            {}},
         out);
  BeginDeletion(state, seq, claim->name, "interrupted: " + what, cause, true, out);
}

}  // namespace tenon::core
