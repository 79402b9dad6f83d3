// Kubernetes Events for what the core decided, with Karpenter's reasons (Nominated,
// DisruptionBlocked, Unconsolidatable, DisruptionLaunching, DisruptionWaitingReadiness,
// DisruptionTerminating, SpotInterrupted, Evicted, FailedDraining, InsufficientCapacityError...),
// so `kubectl describe` and event-based tooling read the same as under Karpenter.
//
// A pure mapping: no rate limiting or deduplication here (the writer does that).
#pragma once

#include <string>
#include <vector>

#include "adapters/kube/executor.h"
#include "reducers/core.h"

namespace tenon::kube {

struct KubeEvent {
  ObjectRef object;
  std::string type;  // Normal | Warning
  std::string reason;
  std::string message;
};

// The events for one output of the core. `state` is the state after the fold that produced it
// (for the node a NodeClaim runs on); claims already gone are named from the decisions.
std::vector<KubeEvent> EventsFor(const Output& output, const State& state);

}  // namespace tenon::kube
