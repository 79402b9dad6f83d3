// The simulated kubelet: what a node reports as allocatable once it joins, computed as the EKS
// AMI's bootstrap and the kubelet compute it on a real instance. This is the simulator's own
// code and never the core's estimate (reducers/catalog.cc): a simulation exists to check that
// estimate, and a node that reports less than the core planned on shows up in its report.
#pragma once

#include <cstdint>

#include "model/model.h"

namespace tenon::sim {

// What the hypervisor, firmware and kernel keep of an instance's memory before the kubelet sees
// it (MemTotal against the instance type's memory), in thousandths: the share Karpenter's
// default estimate assumes for the catalog's instance types.
inline constexpr std::int64_t kKernelMemoryPermille = 75;

// status.allocatable of a node on an instance of `type`: capacity less kube-reserved and the
// eviction threshold, pods as the node's kubelet configuration sets them (the NodeClass's
// kubelet maxPods and podsPerCore, else the ENI limit less the ENIs `reserved_enis` keeps for
// other uses), and the extended resources its device plugins advertise. `nodeclass` may be null.
Resources KubeletAllocatable(const InstanceType& type, const NodeClass* nodeclass,
                             std::int32_t reserved_enis);

// What the node's own device plugins and huge-page setup add, as the NodeOverlays describe them:
// every resource of an overlay whose requirements the node's labels satisfy, the heaviest
// overlay's amount first (the later name among equals), huge pages taken from the memory.
void AddOverlaidDevices(const std::vector<NodeOverlay>& overlays, const Labels& labels,
                        Resources& allocatable);

}  // namespace tenon::sim
