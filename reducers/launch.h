// Private to reducers/: turning a planned claim into a launch: which offerings go to its
// CreateFleet request, and in what order, as Karpenter's AWS provider chooses them.
#pragma once

#include <string>

#include "reducers/scheduling.h"

namespace tenon::core {

// Empty when the types in `mask` offer enough distinct values for every minValues in `reqs`,
// else which key falls short.
std::string MinValuesShortfall(const PoolTemplate& t, const TypeMask& mask,
                               const Requirements& reqs);

// Capacity type (reserved > spot > on-demand), exotic types dropped unless nothing else is
// left, spot dearer than the cheapest on-demand dropped, and the cheapest kFleetOverridesMax
// types that still honour minValues, with one override per (type, zone).
PlannedClaim ChooseLaunch(const PoolTemplate& t, const Bin& bin);

}  // namespace tenon::core
