// The Kubernetes objects as the core sees them: requirements, taints, selectors, pods and
// what they claim (volumes, PDBs, DaemonSets), nodes, NodePools, EC2NodeClasses and NodeClaims.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "model/units.h"

namespace tenon {

enum class RequirementOp : std::uint8_t { kIn, kNotIn, kExists, kDoesNotExist, kGt, kLt };

struct Requirement {
  std::string key;
  RequirementOp op = RequirementOp::kIn;
  std::vector<std::string> values;
  std::int32_t min_values = 0;  // 0: not set.
  friend bool operator==(const Requirement&, const Requirement&) = default;
};

enum class TaintEffect : std::uint8_t { kNoSchedule, kPreferNoSchedule, kNoExecute };

struct Taint {
  std::string key;
  std::string value;
  TaintEffect effect = TaintEffect::kNoSchedule;
  friend bool operator==(const Taint&, const Taint&) = default;
};

struct Toleration {
  std::string key;  // Empty with op Exists tolerates everything.
  bool op_exists = false;
  std::string value;
  std::optional<TaintEffect> effect;  // nullopt: every effect.
  friend bool operator==(const Toleration&, const Toleration&) = default;
};

// The closed set of errors adapters report; reducers switch over it without a default.
enum class ErrorCode : std::uint8_t {
  kInsufficientCapacity,
  kThrottled,
  kNotFound,
  kUnauthorized,
  kInvalid,
  kTransient,
  kDisruptionBudget,  // An eviction refused (429) because a PodDisruptionBudget forbids it.
};

// A label selector (metav1.LabelSelector): matchLabels and matchExpressions (In, NotIn, Exists,
// DoesNotExist) all hold. An empty selector selects everything.
struct LabelSelector {
  Labels match_labels;
  std::vector<Requirement> match_expressions;
  friend bool operator==(const LabelSelector&, const LabelSelector&) = default;
};

// One node selector term (its matchExpressions, all of which must hold). Terms of a required
// node affinity are ORed; `weight` is set for preferred terms only.
struct NodeSelectorTerm {
  std::vector<Requirement> requirements;
  std::int32_t weight = 0;
  friend bool operator==(const NodeSelectorTerm&, const NodeSelectorTerm&) = default;
};

// A pod (anti-)affinity term. `namespaces` empty and `all_namespaces` false means the pod's
// own namespace; an empty namespaceSelector ({}) sets `all_namespaces`. `weight` is set for
// preferred terms only.
struct PodAffinityTerm {
  LabelSelector selector;
  std::vector<std::string> namespaces;
  bool all_namespaces = false;
  std::string topology_key;
  std::vector<std::string> match_label_keys;
  std::int32_t weight = 0;
  friend bool operator==(const PodAffinityTerm&, const PodAffinityTerm&) = default;
};

struct TopologySpreadConstraint {
  std::int32_t max_skew = 1;
  std::string topology_key;
  bool do_not_schedule = true;  // whenUnsatisfiable: DoNotSchedule (else ScheduleAnyway)
  LabelSelector selector;
  std::int32_t min_domains = 0;     // 0: not set.
  bool node_affinity_honor = true;  // nodeAffinityPolicy (default Honor)
  bool node_taints_honor = false;   // nodeTaintsPolicy (default Ignore)
  std::vector<std::string> match_label_keys;
  friend bool operator==(const TopologySpreadConstraint&,
                         const TopologySpreadConstraint&) = default;
};

struct HostPort {
  std::int32_t port = 0;
  std::string protocol = "TCP";
  std::string host_ip;  // Empty: every address (0.0.0.0).
  friend bool operator==(const HostPort&, const HostPort&) = default;
};

// A container's requests, for the effective-request calculation.
struct ContainerRequests {
  Resources requests;
  bool sidecar = false;  // An init container with restartPolicy Always.
  friend bool operator==(const ContainerRequests&, const ContainerRequests&) = default;
};

// What a pod asks of the node it runs on and of its neighbours, beyond its requests. Most
// pods set none of it and the pods of one template all set the same, so a Pod holds it out of
// line, shared (Pod::constraints).
struct PodConstraints {
  Labels node_selector;
  std::vector<Toleration> tolerations;
  std::vector<NodeSelectorTerm> node_affinity_required;  // ORed terms.
  std::vector<NodeSelectorTerm> node_affinity_preferred;
  std::vector<PodAffinityTerm> pod_affinity_required;
  std::vector<PodAffinityTerm> pod_affinity_preferred;
  std::vector<PodAffinityTerm> pod_anti_affinity_required;
  std::vector<PodAffinityTerm> pod_anti_affinity_preferred;
  std::vector<TopologySpreadConstraint> topology_spread;
  std::vector<std::string> volume_claims;  // PersistentVolumeClaim names in the pod's namespace.
  std::vector<HostPort> host_ports;
  friend bool operator==(const PodConstraints&, const PodConstraints&) = default;
};

// status.phase. The core does not read it; it is kept, hashed and logged as its text.
enum class PodPhase : std::uint8_t { kPending, kRunning, kSucceeded, kFailed, kUnknown };
const char* PodPhaseText(PodPhase phase);
// "Pending", "Running", ... as Kubernetes spells them; any other text is kUnknown.
PodPhase PodPhaseFrom(const std::string& text);

// The texts many pods repeat (namespace, owner kind, priority class, nominated node) are
// SharedText, one copy of each once the State interns them (SharedPodParts in state.h): a pod
// is mostly its fixed-size fields, and fifty thousand of them is most of the State.
struct Pod {
  SharedText ns;
  std::string name;
  std::string uid;
  Resources requests;  // Effective requests (PodRequests in state.h): init, sidecars, overhead.
  SharedText node_name;
  bool unschedulable = false;  // PodScheduled=False, reason=Unschedulable.
  PodPhase phase = PodPhase::kPending;
  bool do_not_disrupt = false;     // Annotation karpenter.sh/do-not-disrupt: "true" or a duration.
  std::int32_t deletion_cost = 0;  // Annotation controller.kubernetes.io/pod-deletion-cost.
  // Annotation karpenter.sh/disruption-cost: what consolidation takes as the pod's cost in place
  // of pod-deletion-cost (which PodDeletionCostManagement writes and so never reads).
  std::optional<std::int32_t> disruption_cost;
  SharedText owner_kind;  // "DaemonSet", "ReplicaSet", "Node" (mirror pod), ... or empty.
  Instant created;
  Shared<Labels> labels;
  Shared<PodConstraints> constraints;
  SharedText nominated_node;  // status.nominatedNodeName: a preemption is in progress.
  // The duration form: protected that long after creation.
  std::optional<Duration> do_not_disrupt_for;
  SharedText priority_class;  // system-cluster-critical / system-node-critical are critical.
  std::optional<std::int32_t> priority;  // spec.priority (resolved from the class by admission).
  Duration termination_grace{30 * kSecond};  // spec.terminationGracePeriodSeconds
  // metadata.deletionTimestamp: when a pod being deleted should be gone (the deletion's time
  // plus its grace period). None when it is not being deleted.
  std::optional<Instant> deletion;
  bool Terminating() const { return deletion.has_value(); }
  friend bool operator==(const Pod&, const Pod&) = default;
};

// A DaemonSet's pod template, for the overhead it adds to every node it would run on.
struct DaemonSet {
  std::string ns;
  std::string name;
  Pod pod;  // requests, tolerations, nodeSelector and node affinity of the template.
  friend bool operator==(const DaemonSet&, const DaemonSet&) = default;
};

// policy/v1 PodDisruptionBudget: its selector (in its namespace) and what its status allows.
struct PodDisruptionBudget {
  std::string ns;
  std::string name;
  LabelSelector selector;
  std::int32_t disruptions_allowed = 0;  // status.disruptionsAllowed
  friend bool operator==(const PodDisruptionBudget&, const PodDisruptionBudget&) = default;
};

struct PersistentVolumeClaim {
  std::string ns;
  std::string name;
  std::string storage_class;
  std::string volume_name;  // Bound PersistentVolume, or empty.
  friend bool operator==(const PersistentVolumeClaim&, const PersistentVolumeClaim&) = default;
};

struct PersistentVolume {
  std::string name;
  std::string csi_driver;                       // spec.csi.driver, or empty.
  std::vector<NodeSelectorTerm> node_affinity;  // spec.nodeAffinity.required (ORed terms).
  friend bool operator==(const PersistentVolume&, const PersistentVolume&) = default;
};

struct StorageClass {
  std::string name;
  std::string provisioner;
  bool wait_for_first_consumer = false;
  std::vector<NodeSelectorTerm> allowed_topologies;  // ORed terms of In requirements.
  friend bool operator==(const StorageClass&, const StorageClass&) = default;
};

// storage.k8s.io/v1 CSINode: per-driver volume attach limits of one node.
struct CsiNode {
  std::string name;
  std::map<std::string, std::int64_t> attach_limits;  // driver -> allocatable.count
  friend bool operator==(const CsiNode&, const CsiNode&) = default;
};

// A node condition a repair policy watches, in the state it watches for (Karpenter's node repair:
// the kubelet's Ready False or Unknown, the EKS node monitoring agent's AcceleratedHardwareReady,
// StorageReady, NetworkingReady, KernelReady and ContainerRuntimeReady False), and since when.
struct NodeCondition {
  std::string type;
  std::string status;  // False | Unknown
  Instant since;       // lastTransitionTime
  friend bool operator==(const NodeCondition&, const NodeCondition&) = default;
};

// The repair policies of Karpenter's AWS provider: a node whose condition has had this status
// for the toleration is repaired (its NodeClaim deleted at once, FEATURE_GATES NodeRepair).
struct RepairPolicy {
  const char* type;
  const char* status;
  Duration toleration;
};
inline constexpr RepairPolicy kRepairPolicies[] = {
    {"Ready", "False", Duration{30 * kMinute.value}},
    {"Ready", "Unknown", Duration{30 * kMinute.value}},
    {"AcceleratedHardwareReady", "False", Duration{10 * kMinute.value}},
    {"StorageReady", "False", Duration{30 * kMinute.value}},
    {"NetworkingReady", "False", Duration{30 * kMinute.value}},
    {"KernelReady", "False", Duration{30 * kMinute.value}},
    {"ContainerRuntimeReady", "False", Duration{30 * kMinute.value}},
};

struct Node {
  std::string name;
  std::string provider_id;
  NodeLabels labels;
  std::vector<Taint> taints;
  bool ready = false;
  Resources allocatable;
  Instant created;
  std::vector<std::string> volumes_attached;  // status.volumesAttached[].name
  bool do_not_disrupt = false;                // Annotation karpenter.sh/do-not-disrupt: "true".
  bool deleting = false;  // metadata.deletionTimestamp is set (its finalizer holds it).
  // Its conditions a repair policy watches for, in that state (kRepairPolicies); empty while
  // healthy.
  std::vector<NodeCondition> unhealthy;
  friend bool operator==(const Node&, const Node&) = default;
};

struct NodePoolLimits {
  std::optional<Millicores> cpu;
  std::optional<Bytes> memory;
  std::optional<std::int64_t> nodes;
  std::map<std::string, std::int64_t> extended;  // Any other resource, e.g. nvidia.com/gpu.
  friend bool operator==(const NodePoolLimits&, const NodePoolLimits&) = default;
};

// spec.disruption.consolidationPolicy. Balanced (Karpenter 1.14) consolidates as
// WhenEmptyOrUnderutilized does, but a move of underutilized nodes goes ahead only when its
// savings, as a share of the NodePool's cost, are at least half its disruption, as a share of
// the NodePool's disruption cost (reducers/disruption/balanced.cc).
enum class ConsolidationPolicy : std::uint8_t { kWhenEmptyOrUnderutilized, kWhenEmpty, kBalanced };

// spec.disruption.budgets[]: at most `nodes` (a count or a percent of the pool's nodes) may be
// disrupted at once for `reasons` (all when empty), always or from each `schedule` hit for
// `duration`.
struct DisruptionBudget {
  std::string nodes = "10%";
  std::string schedule;  // Cron (UTC), empty: always active.
  Duration duration{0};
  std::vector<std::string> reasons;  // Empty, Drifted, Underutilized.
  friend bool operator==(const DisruptionBudget&, const DisruptionBudget&) = default;
};

struct NodePool {
  std::string name;
  std::int32_t weight = 0;
  Labels labels;  // spec.template.metadata.labels
  std::vector<Requirement> requirements;
  std::vector<Taint> taints;
  std::vector<Taint> startup_taints;
  std::string nodeclass;  // nodeClassRef.name
  NodePoolLimits limits;
  std::optional<Duration> expire_after{720 * kHour};  // None: Never.
  std::optional<Duration> termination_grace_period;   // None: unset (drain waits forever).
  ConsolidationPolicy consolidation_policy = ConsolidationPolicy::kWhenEmptyOrUnderutilized;
  std::optional<Duration> consolidate_after{Duration{0}};     // None: Never.
  std::vector<DisruptionBudget> budgets{DisruptionBudget{}};  // Karpenter's default: 10%.
  // spec.replicas: a static NodePool of this many nodes whatever the pods (Karpenter's static
  // capacity, FEATURE_GATES StaticCapacity); none: launched for pending pods.
  std::optional<std::int64_t> replicas;
  friend bool operator==(const NodePool&, const NodePool&) = default;
};

// A NodeOverlay (karpenter.sh/v1alpha1, FEATURE_GATES NodeOverlay): what the cloud says of
// the instance types its requirements match, changed before any decision sees it. A price
// change applies to the offerings it matches (zone, capacity type); capacity adds extended
// resources to the whole type (hugepages also leave the memory). Applied per NodePool, heaviest
// weight first, the later name first among equals (reducers/overlays.cc).
struct PriceChange {
  enum class Kind : std::uint8_t {
    kSet,      // spec.price: the offering costs `value` micro-USD an hour.
    kAdd,      // spec.priceAdjustment "+0.5" / "-0.5": `value` micro-USD an hour more (less).
    kPercent,  // spec.priceAdjustment "+10%" / "-10%": `value` billionths of the price more.
  };
  Kind kind = Kind::kSet;
  std::int64_t value = 0;
  friend bool operator==(const PriceChange&, const PriceChange&) = default;
};

struct NodeOverlay {
  std::string name;
  std::int32_t weight = 0;  // spec.weight; unset is 0.
  std::vector<Requirement> requirements;
  std::optional<PriceChange> price;  // spec.price or spec.priceAdjustment (never both).
  // spec.capacity: extended resources as whole counts, hugepages in bytes.
  std::map<std::string, std::int64_t> capacity;
  // Why Karpenter's runtime validation refuses it (its ValidationSucceeded condition is then
  // False with reason RuntimeValidation); empty when it is valid.
  std::string invalid;
  friend bool operator==(const NodeOverlay&, const NodeOverlay&) = default;
};

// A NodeOverlay's status as the core publishes it: ValidationSucceeded (and Ready with it) true,
// or false with reason RuntimeValidation or Conflict and a message.
struct NodeOverlayStatus {
  bool valid = true;
  std::string reason;
  std::string message;
  friend bool operator==(const NodeOverlayStatus&, const NodeOverlayStatus&) = default;
};

// What an EC2NodeClass's selector terms resolve to in AWS now (NodeClassResolved): the AMIs,
// subnets and security groups, and the instance profile; or why they do not resolve. The core
// keeps the latest (State::nodeclass_resolutions) and writes the EC2NodeClass status from it.
struct ResolvedAmi {
  std::string id;
  std::string name;
  std::string arch;     // amd64 | arm64
  std::string created;  // The image's creationDate (ISO 8601).
  friend bool operator==(const ResolvedAmi&, const ResolvedAmi&) = default;
};
struct ResolvedSubnet {
  std::string id;
  std::string zone;
  std::string zone_id;
  std::int64_t free_ips = 0;  // AvailableIpAddressCount when resolved.
  friend bool operator==(const ResolvedSubnet&, const ResolvedSubnet&) = default;
};
struct ResolvedSecurityGroup {
  std::string id;
  std::string name;
  friend bool operator==(const ResolvedSecurityGroup&, const ResolvedSecurityGroup&) = default;
};
// The reasons of a resolution that did not resolve, as Karpenter names them.
inline constexpr char kAmiNotFound[] = "AMINotFound";
inline constexpr char kSubnetsNotFound[] = "SubnetsNotFound";
inline constexpr char kSecurityGroupsNotFound[] = "SecurityGroupsNotFound";
inline constexpr char kInstanceProfileNotFound[] = "InstanceProfileNotFound";
inline constexpr char kInvalidSpec[] = "InvalidSpec";
struct NodeClassResolution {
  std::vector<ResolvedAmi> amis;  // Sorted by id, as each list.
  std::vector<ResolvedSubnet> subnets;
  std::vector<ResolvedSecurityGroup> security_groups;
  std::string instance_profile;
  // Empty when every part resolved; else the reason of the Ready condition that is not true,
  // as Karpenter names it (AMINotFound, SubnetsNotFound, SecurityGroupsNotFound,
  // InstanceProfileNotFound, InvalidSpec), and what went wrong.
  std::string reason;
  std::string message;
  friend bool operator==(const NodeClassResolution&, const NodeClassResolution&) = default;
};

struct NodeClass {
  std::string name;
  std::string ami_family;
  std::string role;
  bool ready = true;
  std::optional<std::int32_t> max_pods;       // kubelet.maxPods
  std::optional<std::int32_t> pods_per_core;  // kubelet.podsPerCore
  // Status: what the selector terms resolve to now (ids). Empty: not resolved yet, so not
  // used for drift.
  std::vector<std::string> amis;
  std::vector<std::string> subnets;
  std::vector<std::string> security_groups;
  bool terminating = false;  // metadata.deletionTimestamp is set: nothing new launches with it.
  // Where it can launch, from the same status: the zones its subnets are in and the
  // architectures its AMIs serve. An offering in another zone, or a type of another
  // architecture, cannot be launched with it. Empty: not known, nothing ruled out.
  std::vector<std::string> zones;
  std::vector<std::string> archs;
  // What the nodes boot with beyond the AMI family: spec.userData (merged into the family's
  // own by the AWS adapter) and spec.tags (on the launch template, its instances and volumes).
  std::string user_data;
  Labels tags;
  // karpenter.k8s.aws/termination is among its finalizers: its deletion waits for the core to
  // let it go (SetNodeClassFinalizer) once no NodeClaim uses it and what tenon made for it in
  // AWS is deleted.
  bool finalizer = false;
  friend bool operator==(const NodeClass&, const NodeClass&) = default;
};

enum class ClaimPhase : std::uint8_t { kPending, kLaunched, kRegistered, kInitialized, kFailed };

struct NodeClaim {
  std::string name;
  std::string nodepool;
  std::string nodeclass;
  // Shared: the claims one NodePool launches mostly carry the same requirements and candidate
  // types, one copy of each once the State interns them (SharedClaimParts in state.h).
  Shared<std::vector<Requirement>> requirements;
  Resources requests;
  Shared<std::vector<std::string>> instance_types;  // Candidates, cheapest first.
  ClaimPhase phase = ClaimPhase::kPending;
  std::string provider_id;
  std::string instance_id;
  std::string instance_type;
  std::string zone;
  std::string capacity_type;
  MicroUsdPerHour price{0};
  std::string node_name;
  Resources allocatable;
  Instant created;
  Instant launched;
  Instant registered;
  Instant initialized;
  // Termination: deletion requested (by tenon or by someone else), then drain, terminate the
  // instance, remove the finalizer.
  bool deleting = false;
  Instant deleting_since;
  std::string deleting_reason;
  bool instance_gone = false;  // Terminated by tenon, or found missing by garbage collection.
  // Drain: per pod (namespace/name), evictions refused by a PDB and when to try again.
  std::map<std::string, std::int32_t> evictions_refused;
  std::map<std::string, Instant> evict_after;
  Instant last_pod_change;  // Last pod bound to or removed from its node (consolidateAfter).
  std::uint64_t nodepool_hash = 0;   // TemplateHash of its NodePool at creation.
  std::uint64_t nodeclass_hash = 0;  // NodeClassHash of its EC2NodeClass at creation.
  // What the instance was launched with (drift when its EC2NodeClass no longer resolves to it).
  std::string image_id;
  std::string subnet_id;
  std::vector<std::string> security_groups;
  // Provisioning placed pending pods on it: disruption leaves it alone until then.
  Instant nominated_until;
  // The disruption conditions (Consolidatable, Drifted) as last published: 0 false, else true
  // since that time (nanoseconds; drift takes the longest drifted first).
  std::map<std::string, std::int64_t> disruption_conditions;
  // A launch that failed for a reason other than capacity is sent again after a backoff, as
  // Karpenter's lifecycle controller requeues it: how many failed, and when the next is due
  // (none waiting: nullopt; the launch to send is State::relaunches').
  std::int32_t launch_failures = 0;
  std::optional<Instant> relaunch_at;
  // When its drain must end whatever PDBs and do-not-disrupt say (Karpenter's
  // karpenter.sh/nodeclaim-termination-timestamp): set to the moment of a node repair.
  std::optional<Instant> termination_deadline;
  friend bool operator==(const NodeClaim&, const NodeClaim&) = default;
};

}  // namespace tenon
