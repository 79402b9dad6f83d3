// The table of disruption methods. Its order is the order the disruption pass consults the
// graceful methods in, Karpenter's: emptiness, (soft expiration,) drift, multi-node and then
// single-node consolidation; the first with something to do acts, the rest wait. The forceful
// methods follow: the pass does not consult them.
#include <algorithm>
#include <iterator>

#include "reducers/disruption/decider.h"

namespace tenon {
namespace {

namespace decider = core::disruption;

constexpr DisruptionMethodInfo kMethods[] = {
    {.method = DisruptionMethod::kEmptiness,
     .reason = "Empty",
     .consolidation_type = "empty",
     .decider = &decider::kEmptiness},
    {.method = DisruptionMethod::kSoftExpiration,
     .reason = "Expired",
     .replaces = true,
     .decider = &decider::kSoftExpiration},
    {.method = DisruptionMethod::kDrift,
     .reason = "Drifted",
     .replaces = true,
     .decider = &decider::kDrift},
    {.method = DisruptionMethod::kMultiNodeConsolidation,
     .reason = "Underutilized",
     .consolidation_type = "multi",
     .underutilized = true,
     .replaces = true,
     .decider = &decider::kMultiNodeConsolidation},
    {.method = DisruptionMethod::kSingleNodeConsolidation,
     .reason = "Underutilized",
     .consolidation_type = "single",
     .underutilized = true,
     .replaces = true,
     .decider = &decider::kSingleNodeConsolidation},
    // Forceful: Karpenter v1's expiration (expiration.cc) and interruption messages
    // (interruption.cc) act on their own, unbudgeted.
    {.method = DisruptionMethod::kExpiration, .reason = "Expired"},
    {.method = DisruptionMethod::kInterruption, .reason = "Interrupted"},
};

constexpr DisruptionMethodInfo kUnknown{.reason = "Unknown"};

// Every enumerator of DisruptionMethod has exactly one entry.
static_assert(std::size(kMethods) ==
              static_cast<std::size_t>(DisruptionMethod::kMultiNodeConsolidation) + 1);
static_assert([] {
  for (std::size_t i = 0; i < std::size(kMethods); ++i) {
    if (std::count_if(std::begin(kMethods), std::end(kMethods), [&](const auto& m) {
          return static_cast<std::size_t>(m.method) == i;
        }) != 1) {
      return false;
    }
  }
  return true;
}());

}  // namespace

std::span<const DisruptionMethodInfo> DisruptionMethods() {
  return kMethods;
}

const DisruptionMethodInfo& MethodInfo(DisruptionMethod method) {
  for (const DisruptionMethodInfo& info : kMethods) {
    if (info.method == method) return info;
  }
  return kUnknown;
}

const DisruptionMethodInfo& MethodInfo(const core::disruption::Decider& decider) {
  for (const DisruptionMethodInfo& info : kMethods) {
    if (info.decider == &decider) return info;
  }
  return kUnknown;
}

}  // namespace tenon
