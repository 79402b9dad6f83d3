// Events: past tense, the only input to the core. Every watch, cloud answer, queue message
// and clock tick reaches the core as one of these, appended to the log first.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "model/catalog.h"
#include "model/kube.h"

namespace tenon {

struct Tick {
  Instant now;
  friend bool operator==(const Tick&, const Tick&) = default;
};
struct ControllerStarted {
  std::string version;
  std::uint64_t seed = 0;
  Settings settings;
  friend bool operator==(const ControllerStarted&, const ControllerStarted&) = default;
};
struct CatalogRefreshed {
  std::vector<InstanceType> instance_types;
  friend bool operator==(const CatalogRefreshed&, const CatalogRefreshed&) = default;
};
struct NodePoolUpserted {
  NodePool nodepool;
  friend bool operator==(const NodePoolUpserted&, const NodePoolUpserted&) = default;
};
struct NodePoolDeleted {
  std::string name;
  friend bool operator==(const NodePoolDeleted&, const NodePoolDeleted&) = default;
};
struct NodeClassUpserted {
  NodeClass nodeclass;
  friend bool operator==(const NodeClassUpserted&, const NodeClassUpserted&) = default;
};
struct NodeClassDeleted {
  std::string name;
  friend bool operator==(const NodeClassDeleted&, const NodeClassDeleted&) = default;
};
struct PodUpserted {
  Pod pod;
  friend bool operator==(const PodUpserted&, const PodUpserted&) = default;
};
struct PodDeleted {
  std::string ns;
  std::string name;
  friend bool operator==(const PodDeleted&, const PodDeleted&) = default;
};
struct NodeUpserted {
  Node node;
  friend bool operator==(const NodeUpserted&, const NodeUpserted&) = default;
};
struct NodeDeleted {
  std::string name;
  friend bool operator==(const NodeDeleted&, const NodeDeleted&) = default;
};
struct FleetError {
  std::string instance_type;
  std::string zone;
  std::string capacity_type;
  ErrorCode code = ErrorCode::kTransient;
  std::string message;
  friend bool operator==(const FleetError&, const FleetError&) = default;
};
struct FleetLaunched {
  CommandId command{0};
  std::string nodeclaim;
  std::string instance_id;
  std::string provider_id;
  std::string instance_type;
  std::string zone;
  std::string capacity_type;
  MicroUsdPerHour price{0};
  std::vector<FleetError> errors;  // Overrides that failed before one succeeded.
  std::string image_id;            // The AMI, subnet and security groups it runs with.
  std::string subnet_id;
  std::vector<std::string> security_groups;
  // The CreateFleet request body as sent (form-encoded); a replay renders it again from the
  // LaunchInstance alone and checks it is the same.
  std::string request;
  friend bool operator==(const FleetLaunched&, const FleetLaunched&) = default;
};
struct FleetFailed {
  CommandId command{0};
  std::string nodeclaim;
  std::vector<FleetError> errors;
  std::string request;  // The CreateFleet body sent; empty when none was.
  friend bool operator==(const FleetFailed&, const FleetFailed&) = default;
};
struct CommandSucceeded {
  CommandId command{0};
  friend bool operator==(const CommandSucceeded&, const CommandSucceeded&) = default;
};
struct CommandFailed {
  CommandId command{0};
  ErrorCode code = ErrorCode::kTransient;
  std::string message;
  friend bool operator==(const CommandFailed&, const CommandFailed&) = default;
};
// Outside input that could not be decoded: kept whole for audit, counted by the core.
struct InputRejected {
  std::string source;
  std::string reason;
  std::string payload;
  // The interruption queue's message it came in: the core deletes the message from the queue
  // once the rejection is in the log. Empty for input from elsewhere.
  std::string message_id;
  friend bool operator==(const InputRejected&, const InputRejected&) = default;
};

struct DaemonSetUpserted {
  DaemonSet daemonset;
  friend bool operator==(const DaemonSetUpserted&, const DaemonSetUpserted&) = default;
};
struct DaemonSetDeleted {
  std::string ns;
  std::string name;
  friend bool operator==(const DaemonSetDeleted&, const DaemonSetDeleted&) = default;
};
struct PersistentVolumeClaimUpserted {
  PersistentVolumeClaim claim;
  friend bool operator==(const PersistentVolumeClaimUpserted&,
                         const PersistentVolumeClaimUpserted&) = default;
};
struct PersistentVolumeClaimDeleted {
  std::string ns;
  std::string name;
  friend bool operator==(const PersistentVolumeClaimDeleted&,
                         const PersistentVolumeClaimDeleted&) = default;
};
struct PersistentVolumeUpserted {
  PersistentVolume volume;
  friend bool operator==(const PersistentVolumeUpserted&,
                         const PersistentVolumeUpserted&) = default;
};
struct PersistentVolumeDeleted {
  std::string name;
  friend bool operator==(const PersistentVolumeDeleted&, const PersistentVolumeDeleted&) = default;
};
struct StorageClassUpserted {
  StorageClass storage_class;
  friend bool operator==(const StorageClassUpserted&, const StorageClassUpserted&) = default;
};
struct StorageClassDeleted {
  std::string name;
  friend bool operator==(const StorageClassDeleted&, const StorageClassDeleted&) = default;
};
struct CsiNodeUpserted {
  CsiNode csi_node;
  friend bool operator==(const CsiNodeUpserted&, const CsiNodeUpserted&) = default;
};
struct CsiNodeDeleted {
  std::string name;
  friend bool operator==(const CsiNodeDeleted&, const CsiNodeDeleted&) = default;
};

// Someone asked the API server to delete a NodeClaim (its deletionTimestamp is set).
struct NodeClaimDeletionRequested {
  std::string name;
  friend bool operator==(const NodeClaimDeletionRequested&,
                         const NodeClaimDeletionRequested&) = default;
};
// An instance as DescribeInstances reports it, found by the cluster's ownership tag.
struct CloudInstance {
  std::string id;
  std::string nodeclaim;  // The karpenter.sh/nodeclaim tag.
  Instant launched;
  std::string state;  // pending | running | shutting-down | terminated | ...
  friend bool operator==(const CloudInstance&, const CloudInstance&) = default;
};
// Every instance the cluster owns, listed for garbage collection.
struct InstancesListed {
  std::vector<CloudInstance> instances;
  friend bool operator==(const InstancesListed&, const InstancesListed&) = default;
};

// An EventBridge message from the interruption queue, already classified by the adapter.
enum class InterruptionKind : std::uint8_t {
  kSpotInterruption,         // EC2 Spot Instance Interruption Warning
  kRebalanceRecommendation,  // EC2 Instance Rebalance Recommendation
  kScheduledChange,          // AWS Health Event
  kStateChange,              // EC2 Instance State-change Notification
};
struct InterruptionReceived {
  std::string message_id;
  InterruptionKind kind = InterruptionKind::kSpotInterruption;
  std::string instance_id;
  std::string detail;  // The new state for a state change; the event's description otherwise.
  friend bool operator==(const InterruptionReceived&, const InterruptionReceived&) = default;
};

struct PodDisruptionBudgetUpserted {
  PodDisruptionBudget pdb;
  friend bool operator==(const PodDisruptionBudgetUpserted&,
                         const PodDisruptionBudgetUpserted&) = default;
};
struct PodDisruptionBudgetDeleted {
  std::string ns;
  std::string name;
  friend bool operator==(const PodDisruptionBudgetDeleted&,
                         const PodDisruptionBudgetDeleted&) = default;
};

// The Kubernetes informers started listing the cluster. Provisioning and disruption wait for
// WatchesSynced, as Karpenter waits for its cluster state to sync, so no decision is taken on a
// half-read cluster. (The log stores both as one flag, false for this one.)
struct WatchesStarted {
  friend bool operator==(const WatchesStarted&, const WatchesStarted&) = default;
};
// Every watched resource has been listed and handed over.
struct WatchesSynced {
  friend bool operator==(const WatchesSynced&, const WatchesSynced&) = default;
};

// A NodeClaim as the API server shows it. Claims the core made itself are already known and
// change nothing; one it does not know (made by Karpenter before a migration, or by tenon
// before its log was lost) is adopted, so its node is managed, disrupted and finally
// terminated like any other instead of being leaked or killed as an unknown instance.
struct NodeClaimObserved {
  NodeClaim claim;
  friend bool operator==(const NodeClaimObserved&, const NodeClaimObserved&) = default;
};

// The EC2NodeClass's selector terms resolved in AWS (its resolution adapter, every minute and
// when the EC2NodeClass changes).
struct NodeClassResolved {
  std::string nodeclass;
  NodeClassResolution resolution;
  friend bool operator==(const NodeClassResolved&, const NodeClassResolved&) = default;
};

// A NodeOverlay created or changed, and deleted (its name).
struct NodeOverlayUpserted {
  NodeOverlay overlay;
  friend bool operator==(const NodeOverlayUpserted&, const NodeOverlayUpserted&) = default;
};
struct NodeOverlayDeleted {
  std::string name;
  friend bool operator==(const NodeOverlayDeleted&, const NodeOverlayDeleted&) = default;
};

// New kinds go at the end: the variant index is part of the state hash and the codec.
using Event = std::variant<
    Tick, ControllerStarted, CatalogRefreshed, NodePoolUpserted, NodePoolDeleted, NodeClassUpserted,
    NodeClassDeleted, PodUpserted, PodDeleted, NodeUpserted, NodeDeleted, FleetLaunched,
    FleetFailed, CommandSucceeded, CommandFailed, InputRejected, DaemonSetUpserted,
    DaemonSetDeleted, PersistentVolumeClaimUpserted, PersistentVolumeClaimDeleted,
    PersistentVolumeUpserted, PersistentVolumeDeleted, StorageClassUpserted, StorageClassDeleted,
    CsiNodeUpserted, CsiNodeDeleted, NodeClaimDeletionRequested, InstancesListed,
    InterruptionReceived, PodDisruptionBudgetUpserted, PodDisruptionBudgetDeleted, WatchesStarted,
    WatchesSynced, NodeClaimObserved, NodeClassResolved, NodeOverlayUpserted, NodeOverlayDeleted>;

}  // namespace tenon
