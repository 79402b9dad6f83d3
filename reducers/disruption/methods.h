// The disruption methods, in one ordered table: what the log calls each, the reason Karpenter
// gives for it, which kind it is, and the decider that carries it out in the disruption pass.
// The core consults the methods in the table's order; the Events, the metrics and the reports
// tell them apart by the table's kinds.
#pragma once

#include <span>

#include "model/model.h"

namespace tenon {
namespace core::disruption {
struct Decider;  // The pass's half of a method (reducers/disruption/decider.h).
}  // namespace core::disruption

struct DisruptionMethodInfo {
  DisruptionMethod method = DisruptionMethod::kEmptiness;
  // Karpenter's disruption reason: what its Events say ("Disrupting Node: Underutilized") and,
  // lower-cased, its metrics' reason label.
  const char* reason = "";
  // Karpenter's consolidation_type label: "empty", "single" or "multi"; "" for a method that is
  // not one of Karpenter's consolidations.
  const char* consolidation_type = "";
  // Consolidation of underutilized nodes (multi- and single-node): a replacement only when it
  // is cheaper, the same candidates for both, and a selection carried out as one group.
  bool underutilized = false;
  // It may launch replacements before its candidates go (emptiness only ever deletes).
  bool replaces = false;
  // The decider the disruption pass consults; null for a forceful method (expiration,
  // interruption), which acts on its own, unbudgeted.
  const core::disruption::Decider* decider = nullptr;

  // Graceful: consulted by the disruption pass, budgeted and validated (Karpenter's voluntary
  // disruption).
  bool graceful() const { return decider != nullptr; }
  // Emptiness, multi- or single-node consolidation, as Karpenter counts its consolidations:
  // consolidateAfter governs them, their verdicts are Unconsolidatable Events, and none is
  // looked at again until the cluster changes.
  bool consolidation_or_emptiness() const { return consolidation_type[0] != '\0'; }
};

// Every method: the graceful ones in the order the disruption pass consults them (Karpenter's:
// the first with something to do acts, the rest wait), then the forceful ones.
std::span<const DisruptionMethodInfo> DisruptionMethods();
// The method's entry (one with reason "Unknown" for a value out of range). Its name, what the
// log records, is the model's: Name(method) (model/text.cc).
const DisruptionMethodInfo& MethodInfo(DisruptionMethod method);
// The entry of the method `decider` carries out (the unknown one for a decider not in the table).
const DisruptionMethodInfo& MethodInfo(const core::disruption::Decider& decider);

}  // namespace tenon
