// What the model says of a pod, wherever it is asked (the core's passes, the State's pod
// indexes): whether it holds its node, must move with it or waits for a node, the order a
// scheduling pass places pods in, and its eviction cost.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "model/kube.h"

namespace tenon {

// Owner kinds of pods that belong to their node: a DaemonSet's, and a mirror pod (a static
// pod, owned by its Node).
inline constexpr const char* kDaemonSetKind = "DaemonSet";
inline constexpr const char* kMirrorKind = "Node";

// A pod that still holds its node's resources (not Succeeded or Failed).
inline bool IsActive(const Pod& pod) {
  return pod.phase != PodPhase::kSucceeded && pod.phase != PodPhase::kFailed;
}

// A pod that would have to move if its node went: active, not a DaemonSet or mirror pod.
inline bool IsReschedulable(const Pod& pod) {
  return IsActive(pod) && pod.owner_kind != kDaemonSetKind && pod.owner_kind != kMirrorKind;
}

// The order a scheduling pass places pods in: largest (CPU, then memory) first, then oldest,
// then by uid (a total order: the same pods always come in the same order).
inline bool PlacedBefore(const Pod* a, const Pod* b) {
  if (a->requests.cpu != b->requests.cpu) return a->requests.cpu > b->requests.cpu;
  if (a->requests.memory != b->requests.memory) return a->requests.memory > b->requests.memory;
  if (a->created != b->created) return a->created < b->created;
  return a->uid < b->uid;
}

// A pod waiting for a node the provisioner may make: unbound, marked unschedulable by the
// scheduler, pending, not nominated to a node in flight, and not a DaemonSet or mirror pod.
inline bool IsProvisionable(const Pod& pod) {
  return pod.node_name.empty() && pod.unschedulable && pod.phase == PodPhase::kPending &&
         pod.nominated_node.empty() && pod.owner_kind != kDaemonSetKind &&
         pod.owner_kind != kMirrorKind;
}

// A pod's effective requests as the Kubernetes scheduler computes them: the larger of the
// containers' sum (plus sidecars) and each init container's peak (plus the sidecars started
// before it), plus the pod overhead.
Resources PodRequests(const std::vector<ContainerRequests>& containers,
                      const std::vector<ContainerRequests>& init_containers,
                      const Resources& overhead);

// Karpenter's eviction cost of a pod, 1 + disruption cost / 2^27 + priority / 2^25 clamped to
// [-10, 10], in integer units of 2^-27 (no floating point on a decision path). The disruption cost
// is karpenter.sh/disruption-cost, else pod-deletion-cost unless `ignore_deletion_cost`.
inline constexpr std::int64_t kCostUnit = std::int64_t{1} << 27;
inline std::int64_t EvictionCost(const Pod& pod, bool ignore_deletion_cost = false) {
  const std::int32_t disruption =
      pod.disruption_cost ? *pod.disruption_cost : (ignore_deletion_cost ? 0 : pod.deletion_cost);
  std::int64_t cost = kCostUnit + disruption;
  if (pod.priority) cost += std::int64_t{*pod.priority} * 4;  // 2^27 / 2^25
  return std::clamp(cost, -10 * kCostUnit, 10 * kCostUnit);
}

}  // namespace tenon
