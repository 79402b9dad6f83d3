// Words of Karpenter's the core and its observers share.
#pragma once

#include "model/model.h"

namespace tenon {

// Karpenter's disruption reason for a disruption method: what its Events say ("Disrupting
// Node: Underutilized") and, lower-cased, its metrics' reason label.
inline const char* DisruptionReason(DisruptionMethod method) {
  switch (method) {
    case DisruptionMethod::kEmptiness:
      return "Empty";
    case DisruptionMethod::kSingleNodeConsolidation:
    case DisruptionMethod::kMultiNodeConsolidation:
      return "Underutilized";
    case DisruptionMethod::kDrift:
      return "Drifted";
    case DisruptionMethod::kExpiration:
    case DisruptionMethod::kSoftExpiration:
      return "Expired";
    case DisruptionMethod::kInterruption:
      return "Interrupted";
  }
  return "Unknown";
}

}  // namespace tenon
