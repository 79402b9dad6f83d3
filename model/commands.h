// Commands: imperative, effects as data. The core asks for every effect with one of these;
// the adapters carry it out and report back with CommandSucceeded or CommandFailed.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "model/catalog.h"
#include "model/kube.h"

namespace tenon {

struct CreateNodeClaim {
  NodeClaim claim;
  friend bool operator==(const CreateNodeClaim&, const CreateNodeClaim&) = default;
};
struct DeleteNodeClaim {
  std::string name;
  friend bool operator==(const DeleteNodeClaim&, const DeleteNodeClaim&) = default;
};
struct LaunchOverride {
  std::string instance_type;
  std::string zone;
  std::string capacity_type;
  MicroUsdPerHour price{0};
  // From the EC2NodeClass's resolution: the zone's subnet with the most free addresses and the
  // newest AMI of the type's architecture (empty: the NodeClass had no resolution).
  std::string subnet;
  std::string image;
  friend bool operator==(const LaunchOverride&, const LaunchOverride&) = default;
};
// What the nodes of a launch boot with: the launch template's contents and the inputs of the
// user data, from the EC2NodeClass, its resolution, the NodePool and the settings. The AWS
// adapter renders the launch templates (one per AMI) and the user data from this alone.
struct LaunchNode {
  std::string ami_family;  // As the EC2NodeClass says it: AL2023, or an alias (al2023@latest).
  std::string instance_profile;
  std::vector<std::string> security_groups;
  std::string user_data;  // The EC2NodeClass's spec.userData.
  std::optional<std::int32_t> max_pods;
  Labels labels;              // The NodePool's template labels and karpenter.sh/nodepool.
  std::vector<Taint> taints;  // Its taints, then its startup taints.
  Labels tags;                // The EC2NodeClass's tags and the two that mark tenon's templates.
  std::string cluster_name;
  std::string cluster_endpoint;
  std::string cluster_ca_bundle;
  friend bool operator==(const LaunchNode&, const LaunchNode&) = default;
};
// One CreateFleet request (type instant, target capacity 1). The client token is the NodeClaim
// name, so re-driving the command after a crash never launches a second instance. It holds all
// the request needs: re-driving it after a restart reads nothing else.
struct LaunchInstance {
  std::string nodeclaim;
  std::string nodepool;
  std::string nodeclass;
  std::string client_token;
  std::string capacity_type;
  std::vector<LaunchOverride> overrides;
  Labels tags;
  std::string allocation_strategy;  // price-capacity-optimized (spot) | lowest-price (on-demand)
  LaunchNode node;
  friend bool operator==(const LaunchInstance&, const LaunchInstance&) = default;
};
// Registration sync and the termination taint: labels and taints added, taints removed.
struct PatchNode {
  std::string node_name;
  Labels add_labels;
  std::vector<std::string> remove_taints;
  std::vector<Taint> add_taints;
  // Set: the Node gets an ownerReference to this NodeClaim and the karpenter.sh/termination
  // finalizer, as Karpenter's registration gives it (both kept if present).
  std::string owner_nodeclaim;
  friend bool operator==(const PatchNode&, const PatchNode&) = default;
};
// POST pods/eviction: the API server answers 429 while a PodDisruptionBudget forbids it.
struct EvictPod {
  std::string ns;
  std::string name;
  std::string nodeclaim;  // Whose drain asked for it.
  friend bool operator==(const EvictPod&, const EvictPod&) = default;
};
// DELETE pod with grace period 0: the drain deadline has come, PDBs no longer hold it.
struct DeletePod {
  std::string ns;
  std::string name;
  std::string nodeclaim;
  friend bool operator==(const DeletePod&, const DeletePod&) = default;
};
// TerminateInstances; a missing instance counts as terminated.
struct TerminateInstance {
  std::string instance_id;
  std::string nodeclaim;  // Empty for a leaked instance.
  friend bool operator==(const TerminateInstance&, const TerminateInstance&) = default;
};
// Removes karpenter.sh/termination from the NodeClaim and its Node, letting both go.
struct RemoveFinalizer {
  std::string nodeclaim;
  std::string node_name;  // Empty when the claim never registered a Node.
  friend bool operator==(const RemoveFinalizer&, const RemoveFinalizer&) = default;
};
// NodePool status: its conditions and what the pool holds.
struct NodePoolStatus {
  std::optional<bool> registration_healthy;  // Unknown until a claim registers or times out.
  std::int64_t nodes = 0;
  Resources resources;  // Sum of the capacity of its launched claims not being deleted.
  // ValidationSucceeded: the pool passed tenon's checks (a pool that fails them never reaches
  // the core). Set on every status the core publishes, so the first is never "no change".
  bool validated = false;
  // NodeClassReady, as Karpenter's readiness controller sets it: empty when the pool's
  // EC2NodeClass exists and is Ready, else the reason it is not (NodeClassNotFound,
  // NodeClassNotReady, NodeClassTerminating). Ready is the root of the two.
  std::string nodeclass_unready;
  friend bool operator==(const NodePoolStatus&, const NodePoolStatus&) = default;
};
struct PatchNodePoolStatus {
  std::string nodepool;
  NodePoolStatus status;
  friend bool operator==(const PatchNodePoolStatus&, const PatchNodePoolStatus&) = default;
};

// One NodeClaim status condition (merged by type, as the API server merges conditions),
// with the claim's providerID and node name once known.
struct PatchNodeClaimStatus {
  std::string nodeclaim;
  std::string condition;  // Launched, Registered, Initialized, Drained, InstanceTerminating
  bool status = true;
  std::string reason;
  std::string provider_id;
  std::string node_name;
  // Set when the instance is launched, as Karpenter fills a NodeClaim in: the instance type's
  // well-known labels with its zone and capacity type, and the status's imageID, capacity and
  // allocatable. Empty on every other condition.
  Labels labels;
  std::string image_id;
  Resources capacity;
  Resources allocatable;
  friend bool operator==(const PatchNodeClaimStatus&, const PatchNodeClaimStatus&) = default;
};
// A condition with the claim's providerID and node name, no launch details.
inline PatchNodeClaimStatus ClaimCondition(std::string nodeclaim, std::string condition,
                                           bool status, std::string reason, std::string provider_id,
                                           std::string node_name) {
  PatchNodeClaimStatus patch;
  patch.nodeclaim = std::move(nodeclaim);
  patch.condition = std::move(condition);
  patch.status = status;
  patch.reason = std::move(reason);
  patch.provider_id = std::move(provider_id);
  patch.node_name = std::move(node_name);
  return patch;
}

// Deletes a handled message from the interruption queue.
struct DeleteQueueMessage {
  std::string message_id;
  friend bool operator==(const DeleteQueueMessage&, const DeleteQueueMessage&) = default;
};

// CreateTags on a registered NodeClaim's instance, as Karpenter's tagging controller tags it:
// Name (the Node's name), karpenter.sh/nodeclaim and eks:eks-cluster-name. A key the instance
// already carries keeps its value.
struct TagInstance {
  std::string instance_id;
  std::string nodeclaim;
  Labels tags;
  friend bool operator==(const TagInstance&, const TagInstance&) = default;
};

// The EC2NodeClass status written from its resolution: the AMIs (each with its
// kubernetes.io/arch requirement), subnets, security groups and instance profile, and the Ready
// condition (false, with the reason and message, when it did not resolve).
struct PatchNodeClassStatus {
  std::string nodeclass;
  NodeClassResolution resolution;
  friend bool operator==(const PatchNodeClassStatus&, const PatchNodeClassStatus&) = default;
};

// Adds karpenter.k8s.aws/termination to an EC2NodeClass (present), or removes it, letting a
// deleted EC2NodeClass go.
struct SetNodeClassFinalizer {
  std::string nodeclass;
  bool present = true;
  friend bool operator==(const SetNodeClassFinalizer&, const SetNodeClassFinalizer&) = default;
};

// The instance profile for an EC2NodeClass's spec.role, named after the cluster and the
// EC2NodeClass (the AWS adapter derives the name and the owner tags from the two): created when
// missing, with the role as its only role.
struct EnsureInstanceProfile {
  std::string nodeclass;
  std::string role;
  std::string cluster_name;
  friend bool operator==(const EnsureInstanceProfile&, const EnsureInstanceProfile&) = default;
};

// What tenon made in AWS for a deleted EC2NodeClass: its launch templates, and the instance
// profile it made for spec.role (instance_profile; one named in spec.instanceProfile is the
// user's and stays).
struct DeleteNodeClassResources {
  std::string nodeclass;
  std::string cluster_name;
  bool instance_profile = false;
  friend bool operator==(const DeleteNodeClassResources&,
                         const DeleteNodeClassResources&) = default;
};

// The Kubernetes object an Event is about.
struct KubeObjectRef {
  std::string api_version;
  std::string kind;
  std::string ns;  // Empty for cluster-scoped objects.
  std::string name;
  friend bool operator==(const KubeObjectRef&, const KubeObjectRef&) = default;
};

// A Kubernetes Event, as Karpenter records it. Best effort, as client-go's recorder is: no
// result comes back and it is not sent again after a restart.
struct RecordKubeEvent {
  KubeObjectRef object;
  std::string type;  // Normal | Warning
  std::string reason;
  std::string message;
  friend bool operator==(const RecordKubeEvent&, const RecordKubeEvent&) = default;
};

// A NodeOverlay's status: ValidationSucceeded and the Ready condition derived from it.
struct PatchNodeOverlayStatus {
  std::string overlay;
  NodeOverlayStatus status;
  friend bool operator==(const PatchNodeOverlayStatus&, const PatchNodeOverlayStatus&) = default;
};

// A ReplicaSet pod's controller.kubernetes.io/pod-deletion-cost set to `cost`, or removed (none),
// by a JSON merge patch (PodDeletionCostManagement): the ReplicaSet controller scales down the
// pods of the lowest cost first.
struct PatchPodDeletionCost {
  std::string ns;
  std::string name;
  std::string uid;  // The pod the value was computed for: another of the same name is left alone.
  std::optional<std::int32_t> cost;
  friend bool operator==(const PatchPodDeletionCost&, const PatchPodDeletionCost&) = default;
};

using CommandBody =
    std::variant<CreateNodeClaim, DeleteNodeClaim, LaunchInstance, PatchNode, EvictPod, DeletePod,
                 TerminateInstance, RemoveFinalizer, PatchNodePoolStatus, PatchNodeClaimStatus,
                 DeleteQueueMessage, TagInstance, PatchNodeClassStatus, SetNodeClassFinalizer,
                 EnsureInstanceProfile, DeleteNodeClassResources, RecordKubeEvent,
                 PatchNodeOverlayStatus, PatchPodDeletionCost>;

struct Command {
  CommandId id{0};
  Seq cause{0};
  CommandBody body;
  friend bool operator==(const Command&, const Command&) = default;
};

}  // namespace tenon
