// What the files of the simulated world share (world.h declares the World they implement).
#pragma once

#include <cstdint>
#include <string>

#include "adapters/sim/scenario.h"
#include "model/model.h"

namespace tenon::sim {

// The version a world file carries, and the controller version the world announces.
inline constexpr const char* kVersion = "tenon-sim/1";

// A 64-bit mix of `x` (SplitMix64's finaliser): instance ids from the seed and a counter.
std::uint64_t Mix(std::uint64_t x);

// What a bound pod takes of its node's room: its requests and one pod.
Resources Need(const Pod& pod);

// A zone topology spread constraint over the pods of app `app` (DoNotSchedule).
TopologySpreadConstraint ZoneSpread(std::int32_t max_skew, const std::string& app);

// A deployment's pods' labels: app=<name> over the step's others.
Labels PodLabels(const WorkloadStep& step);

}  // namespace tenon::sim
