// Words of Karpenter's the core and its observers share.
#pragma once

#include <string>

namespace tenon {

// Karpenter's disruption reason for a disruption method: what its Events say ("Disrupting
// Node: Underutilized") and, lower-cased, its metrics' reason label.
inline std::string DisruptionReason(const std::string& method) {
  if (method == "Emptiness") return "Empty";
  if (method == "SingleNodeConsolidation" || method == "MultiNodeConsolidation") {
    return "Underutilized";
  }
  if (method == "Drift") return "Drifted";
  if (method == "Expiration" || method == "SoftExpiration") return "Expired";
  if (method == "Interruption") return "Interrupted";
  return method;
}

}  // namespace tenon
