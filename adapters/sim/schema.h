// The fields the Kubernetes API (and Karpenter's CRDs) define for the objects a scenario holds,
// so that a misspelt field is an error, as `kubectl apply --validate=strict` makes it, instead of
// a setting silently ignored.
#pragma once

#include <yaml-cpp/yaml.h>

#include "adapters/sim/scenario.h"

namespace tenon::sim {

// Throws ScenarioError for the first field of `object` that the Kubernetes API (or Karpenter's
// CRDs) does not define for its kind: "line N: PATH: unknown field (did you mean 'X'?)", the
// suggestion only when a known field is spelt nearly the same. A `kind: List` has its items
// checked. Kinds the simulator does not read, and API versions other than the one each kind is
// written with (v1, apps/v1, batch/v1, policy/v1, storage.k8s.io/v1, scheduling.k8s.io/v1,
// node.k8s.io/v1, karpenter.sh/v1, karpenter.k8s.aws/v1), are not checked.
void CheckFields(const YAML::Node& object);

}  // namespace tenon::sim
