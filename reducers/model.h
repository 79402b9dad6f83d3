// The domain model shared by the core, the log codec and the adapters: plain values with
// integer units, ordered containers, and the Event / Command / Decision unions.
//
// Units go last in names and are carried by strong types, so millicores never meet bytes.
#pragma once

#include <compare>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace tenon {

template <class Tag, class Rep = std::int64_t>
struct Strong {
  Rep value{};
  constexpr Strong() = default;
  constexpr explicit Strong(Rep v) : value(v) {}
  friend constexpr auto operator<=>(Strong, Strong) = default;
  friend constexpr Strong operator+(Strong a, Strong b) { return Strong(a.value + b.value); }
  friend constexpr Strong operator-(Strong a, Strong b) { return Strong(a.value - b.value); }
  constexpr Strong& operator+=(Strong o) {
    value += o.value;
    return *this;
  }
  constexpr Strong& operator-=(Strong o) {
    value -= o.value;
    return *this;
  }
};

using Millicores = Strong<struct MillicoresTag>;
using Bytes = Strong<struct BytesTag>;
using MicroUsdPerHour = Strong<struct MicroUsdPerHourTag>;
using Nanos = Strong<struct NanosTag>;  // Time since the Unix epoch, or a duration.
using Seq = Strong<struct SeqTag, std::uint64_t>;
using CommandId = Strong<struct CommandIdTag, std::uint64_t>;
using DecisionId = Strong<struct DecisionIdTag, std::uint64_t>;

inline constexpr Nanos kSecond{1'000'000'000};
inline constexpr Nanos kMinute{60 * kSecond.value};
inline constexpr Bytes kMebibyte{1 << 20};

using Labels = std::map<std::string, std::string>;

// A value held out of line, immutable and shared by its copies: copying a Shared<T> copies a
// pointer. It reads as T{} when it holds nothing and compares by value, so the sharing is seen
// by memory only, never by ==, the state hash or the codec. Pods of one template hold their
// labels and constraints this way, and the State keeps one copy of each distinct value (see
// SharedParts in core.h).
template <class T>
class Shared {
 public:
  Shared() = default;
  Shared(T value)  // NOLINT(google-explicit-constructor): a Shared<T> stands for its T.
      : ptr_(value == Empty() ? nullptr : std::make_shared<T>(std::move(value))) {}
  const T& operator*() const { return ptr_ ? *ptr_ : Empty(); }
  const T* operator->() const { return &**this; }
  // The value to change in place: this holder's own copy, made first unless it already is the
  // only holder. Take it while building a value; a copy of this Shared made while the reference
  // is still held would see the changes too.
  T& Mutable() {
    if (!ptr_ || ptr_.use_count() > 1) ptr_ = std::make_shared<T>(**this);
    return *ptr_;
  }
  friend bool operator==(const Shared& a, const Shared& b) { return a.ptr_ == b.ptr_ || *a == *b; }

 private:
  template <class>
  friend class Interner;
  static const T& Empty() {
    static const T empty{};
    return empty;
  }
  std::shared_ptr<T> ptr_;
};

// A string many records repeat, held as a Shared<std::string>: a pod's node name (EKS
// hostnames are 46 characters, and each node's tens of pods name it), one copy per node once
// the State interns it. It reads, compares and converts as the std::string it holds, so the
// sharing is seen by memory only.
class SharedText {
 public:
  SharedText() = default;
  SharedText(std::string text)  // NOLINT(google-explicit-constructor): stands for its text.
      : text_(std::move(text)) {}
  SharedText(const char* text)  // NOLINT(google-explicit-constructor)
      : text_(std::string(text)) {}
  operator const std::string&() const { return *text_; }  // NOLINT(google-explicit-constructor)
  const std::string& str() const { return *text_; }
  bool empty() const { return text_->empty(); }
  std::size_t size() const { return text_->size(); }
  void clear() { text_ = Shared<std::string>(); }
  // For the State's interner (core.h) only.
  Shared<std::string>& SharedForInterning() { return text_; }
  friend bool operator==(const SharedText& a, const SharedText& b) { return a.text_ == b.text_; }
  friend bool operator==(const SharedText& a, const std::string& b) { return *a.text_ == b; }
  friend bool operator==(const SharedText& a, std::string_view b) { return *a.text_ == b; }
  friend bool operator==(const SharedText& a, const char* b) { return *a.text_ == b; }
  friend auto operator<=>(const SharedText& a, const std::string& b) { return *a.text_ <=> b; }
  friend std::string operator+(const SharedText& a, const char* b) { return *a.text_ + b; }

 private:
  Shared<std::string> text_;
};

// A node's labels: read as a Labels map is (find, at, contains, iteration in key order), held
// as (key, value) pairs of SharedText sorted by key. Thousands of nodes repeat the same dozen
// keys and a few dozen values (zone, instance type, capacity type, pool, ...), one copy of each
// once the State interns them (SharedNodeParts in core.h); a map's node and a key's heap copy
// for every label of every node was most of a node's memory. Equality, the state hash and the
// codec see the same pairs, in the same order, as a Labels with the same contents.
class NodeLabels {
 public:
  using Entry = std::pair<SharedText, SharedText>;
  using const_iterator = std::vector<Entry>::const_iterator;
  NodeLabels() = default;
  NodeLabels(const Labels& labels);  // NOLINT(google-explicit-constructor): stands for its map.
  NodeLabels(std::initializer_list<Labels::value_type> labels) : NodeLabels(Labels(labels)) {}
  const_iterator begin() const { return entries_.begin(); }
  const_iterator end() const { return entries_.end(); }
  std::size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }
  const_iterator find(std::string_view key) const;
  bool contains(std::string_view key) const { return find(key) != end(); }
  // The value of `key`, or nullopt when absent.
  std::optional<std::string_view> Lookup(std::string_view key) const {
    auto it = find(key);
    return it == end() ? std::nullopt : std::optional<std::string_view>(it->second.str());
  }
  // The value of `key`; throws std::out_of_range when absent, as Labels::at does.
  const std::string& at(std::string_view key) const;
  // Adds `key` or replaces its value.
  void Set(const std::string& key, const std::string& value);
  Labels ToLabels() const;
  // For the State's interner (core.h) only.
  std::vector<Entry>& EntriesForInterning() { return entries_; }
  friend bool operator==(const NodeLabels&, const NodeLabels&) = default;

 private:
  std::vector<Entry> entries_;
};

// Requests, capacity and allocatable. `extended` holds every other resource by its Kubernetes
// name (nvidia.com/gpu, aws.amazon.com/neuron, ...), in its integer unit; a key that is absent
// is zero.
struct Resources {
  Millicores cpu{0};
  Bytes memory{0};
  std::int64_t pods = 0;
  std::map<std::string, std::int64_t> extended;
  friend bool operator==(const Resources&, const Resources&) = default;
};

Resources operator+(const Resources& a, const Resources& b);
Resources operator-(const Resources& a, const Resources& b);
// In place, without the temporaries of a = a + b.
Resources& operator+=(Resources& a, const Resources& b);
Resources& operator-=(Resources& a, const Resources& b);
// True when `need` fits inside `have` on every dimension.
bool Fits(const Resources& need, const Resources& have);
// The larger (smaller) of each dimension.
Resources Max(const Resources& a, const Resources& b);
Resources Min(const Resources& a, const Resources& b);

// Well-known label keys (Kubernetes, Karpenter, Karpenter AWS).
namespace label {
inline constexpr const char* kNodePool = "karpenter.sh/nodepool";
inline constexpr const char* kCapacityType = "karpenter.sh/capacity-type";
inline constexpr const char* kRegistered = "karpenter.sh/registered";
inline constexpr const char* kInitialized = "karpenter.sh/initialized";
inline constexpr const char* kInstanceType = "node.kubernetes.io/instance-type";
inline constexpr const char* kZone = "topology.kubernetes.io/zone";
inline constexpr const char* kArch = "kubernetes.io/arch";
inline constexpr const char* kOs = "kubernetes.io/os";
inline constexpr const char* kHostname = "kubernetes.io/hostname";
inline constexpr const char* kInstanceFamily = "karpenter.k8s.aws/instance-family";
inline constexpr const char* kInstanceSize = "karpenter.k8s.aws/instance-size";
inline constexpr const char* kInstanceCategory = "karpenter.k8s.aws/instance-category";
inline constexpr const char* kInstanceGeneration = "karpenter.k8s.aws/instance-generation";
inline constexpr const char* kInstanceCpu = "karpenter.k8s.aws/instance-cpu";
inline constexpr const char* kInstanceMemory = "karpenter.k8s.aws/instance-memory";
inline constexpr const char* kInstanceCpuManufacturer =
    "karpenter.k8s.aws/instance-cpu-manufacturer";
inline constexpr const char* kInstanceHypervisor = "karpenter.k8s.aws/instance-hypervisor";
inline constexpr const char* kInstanceGpuName = "karpenter.k8s.aws/instance-gpu-name";
inline constexpr const char* kInstanceGpuManufacturer =
    "karpenter.k8s.aws/instance-gpu-manufacturer";
inline constexpr const char* kInstanceGpuCount = "karpenter.k8s.aws/instance-gpu-count";
inline constexpr const char* kInstanceGpuMemory = "karpenter.k8s.aws/instance-gpu-memory";
inline constexpr const char* kInstanceLocalNvme = "karpenter.k8s.aws/instance-local-nvme";
inline constexpr const char* kInstanceEbsBandwidth = "karpenter.k8s.aws/instance-ebs-bandwidth";
inline constexpr const char* kNodeClaim = "karpenter.sh/nodeclaim";
inline constexpr const char* kUnregisteredTaint = "karpenter.sh/unregistered";
inline constexpr const char* kDisruptedTaint = "karpenter.sh/disrupted";
inline constexpr const char* kTerminationFinalizer = "karpenter.sh/termination";
// An EC2NodeClass's: its deletion waits for its NodeClaims and its AWS resources.
inline constexpr const char* kNodeClassFinalizer = "karpenter.k8s.aws/termination";
inline constexpr const char* kDoNotDisrupt = "karpenter.sh/do-not-disrupt";  // Pod/Node annotation.
// Instance tags, as Karpenter's: the cluster's name, and the Node's name once it registers.
inline constexpr const char* kEksClusterName = "eks:eks-cluster-name";
inline constexpr const char* kNameTag = "Name";
}  // namespace label

inline constexpr const char* kCapacityOnDemand = "on-demand";
inline constexpr const char* kCapacitySpot = "spot";
inline constexpr const char* kCapacityReserved = "reserved";

// Extended resource names for accelerators, as the device plugins advertise them.
namespace resource {
inline constexpr const char* kNvidiaGpu = "nvidia.com/gpu";
inline constexpr const char* kAmdGpu = "amd.com/gpu";
inline constexpr const char* kHabanaGaudi = "habana.ai/gaudi";
inline constexpr const char* kNeuron = "aws.amazon.com/neuron";
}  // namespace resource

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
// SharedText, one copy of each once the State interns them (SharedPodParts in core.h): a pod
// is mostly its fixed-size fields, and fifty thousand of them is most of the State.
struct Pod {
  SharedText ns;
  std::string name;
  std::string uid;
  Resources requests;  // Effective requests (PodRequests in core.h): init, sidecars, overhead.
  SharedText node_name;
  bool unschedulable = false;  // PodScheduled=False, reason=Unschedulable.
  PodPhase phase = PodPhase::kPending;
  bool do_not_disrupt = false;     // Annotation karpenter.sh/do-not-disrupt: "true" or a duration.
  std::int32_t deletion_cost = 0;  // Annotation controller.kubernetes.io/pod-deletion-cost.
  SharedText owner_kind;           // "DaemonSet", "ReplicaSet", "Node" (mirror pod), ... or empty.
  Nanos created{0};
  Shared<Labels> labels;
  Shared<PodConstraints> constraints;
  SharedText nominated_node;    // status.nominatedNodeName: a preemption is in progress.
  Nanos do_not_disrupt_for{0};  // The duration form: protected that long after creation.
  SharedText priority_class;    // system-cluster-critical / system-node-critical are critical.
  std::optional<std::int32_t> priority;  // spec.priority (resolved from the class by admission).
  Nanos termination_grace{30 * kSecond.value};  // spec.terminationGracePeriodSeconds
  // metadata.deletionTimestamp: when a pod being deleted should be gone (the deletion's time
  // plus its grace period). Zero when it is not being deleted.
  Nanos deletion{0};
  bool Terminating() const { return deletion.value != 0; }
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

struct Node {
  std::string name;
  std::string provider_id;
  NodeLabels labels;
  std::vector<Taint> taints;
  bool ready = false;
  Resources allocatable;
  Nanos created{0};
  std::vector<std::string> volumes_attached;  // status.volumesAttached[].name
  bool do_not_disrupt = false;                // Annotation karpenter.sh/do-not-disrupt: "true".
  bool deleting = false;  // metadata.deletionTimestamp is set (its finalizer holds it).
  friend bool operator==(const Node&, const Node&) = default;
};

struct NodePoolLimits {
  std::optional<Millicores> cpu;
  std::optional<Bytes> memory;
  std::optional<std::int64_t> nodes;
  std::map<std::string, std::int64_t> extended;  // Any other resource, e.g. nvidia.com/gpu.
  friend bool operator==(const NodePoolLimits&, const NodePoolLimits&) = default;
};

enum class ConsolidationPolicy : std::uint8_t { kWhenEmptyOrUnderutilized, kWhenEmpty };

// spec.disruption.budgets[]: at most `nodes` (a count or a percent of the pool's nodes) may be
// disrupted at once for `reasons` (all when empty), always or from each `schedule` hit for
// `duration`.
struct DisruptionBudget {
  std::string nodes = "10%";
  std::string schedule;  // Cron (UTC), empty: always active.
  Nanos duration{0};
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
  Nanos expire_after{720 * 60 * kMinute.value};  // Negative: Never.
  Nanos termination_grace_period{-1};            // Negative: unset (drain waits forever).
  ConsolidationPolicy consolidation_policy = ConsolidationPolicy::kWhenEmptyOrUnderutilized;
  Nanos consolidate_after{0};                                 // Negative: Never.
  std::vector<DisruptionBudget> budgets{DisruptionBudget{}};  // Karpenter's default: 10%.
  friend bool operator==(const NodePool&, const NodePool&) = default;
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

struct Offering {
  std::string zone;
  std::string capacity_type;
  MicroUsdPerHour price{0};
  bool available = true;
  friend bool operator==(const Offering&, const Offering&) = default;
};

// One instance type as the cloud describes it; allocatable is derived by the core.
struct InstanceType {
  std::string name;
  std::string arch;  // amd64 | arm64
  Millicores cpu{0};
  Bytes memory{0};
  std::int32_t max_enis = 0;
  std::int32_t ipv4_per_eni = 0;
  std::int32_t gpu_count = 0;
  std::string gpu_name;                // e.g. "T4", "A10G"; empty without GPUs.
  std::string gpu_manufacturer;        // e.g. "NVIDIA"
  Bytes gpu_memory{0};                 // Per GPU.
  std::int32_t accelerator_count = 0;  // Inferentia / Trainium devices.
  std::string cpu_manufacturer;        // "Intel", "AMD", "AWS"
  std::string hypervisor;              // "nitro", "xen", or empty for metal.
  std::int64_t local_nvme_gib = 0;
  bool bare_metal = false;
  std::vector<Offering> offerings;
  // What a catalog file may add to AWS's description (a test catalog, as Karpenter's fake cloud
  // provider has one): labels its nodes carry besides the derived ones (their keys are then
  // labels an instance type determines, as well-known as the instance type's own), extended
  // resources its nodes advertise, and allocatable written by hand in place of the computed one.
  Labels labels;
  std::map<std::string, std::int64_t> extended;
  std::optional<Resources> allocatable;
  friend bool operator==(const InstanceType&, const InstanceType&) = default;
};

enum class ClaimPhase : std::uint8_t { kPending, kLaunched, kRegistered, kInitialized, kFailed };

struct NodeClaim {
  std::string name;
  std::string nodepool;
  std::string nodeclass;
  // Shared: the claims one NodePool launches mostly carry the same requirements and candidate
  // types, one copy of each once the State interns them (SharedClaimParts in core.h).
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
  Nanos created{0};
  Nanos launched{0};
  Nanos registered{0};
  Nanos initialized{0};
  // Termination: deletion requested (by tenon or by someone else), then drain, terminate the
  // instance, remove the finalizer.
  bool deleting = false;
  Nanos deleting_since{0};
  std::string deleting_reason;
  bool instance_gone = false;  // Terminated by tenon, or found missing by garbage collection.
  // Drain: per pod (namespace/name), evictions refused by a PDB and when to try again.
  std::map<std::string, std::int32_t> evictions_refused;
  std::map<std::string, Nanos> evict_after;
  Nanos last_pod_change{0};  // Last pod bound to or removed from its node (consolidateAfter).
  std::uint64_t nodepool_hash = 0;   // TemplateHash of its NodePool at creation.
  std::uint64_t nodeclass_hash = 0;  // NodeClassHash of its EC2NodeClass at creation.
  // What the instance was launched with (drift when its EC2NodeClass no longer resolves to it).
  std::string image_id;
  std::string subnet_id;
  std::vector<std::string> security_groups;
  // Provisioning placed pending pods on it: disruption leaves it alone until then.
  Nanos nominated_until{0};
  // The disruption conditions (Consolidatable, Drifted) as last published: 0 false, else true
  // since that time (nanoseconds; drift takes the longest drifted first).
  std::map<std::string, std::int64_t> disruption_conditions;
  // A launch that failed for a reason other than capacity is sent again after a backoff, as
  // Karpenter's lifecycle controller requeues it: how many failed, and when the next is due
  // (0: none waiting; the launch to send is State::relaunches').
  std::int32_t launch_failures = 0;
  Nanos relaunch_at{0};
  friend bool operator==(const NodeClaim&, const NodeClaim&) = default;
};

struct Settings {
  std::string cluster_name = "tenon";
  Nanos batch_idle{1 * kSecond.value};            // BATCH_IDLE_DURATION
  Nanos batch_max{10 * kSecond.value};            // BATCH_MAX_DURATION
  std::int32_t vm_memory_overhead_permille = 75;  // VM_MEMORY_OVERHEAD_PERCENT 0.075
  bool ignore_preferences = false;                // PREFERENCE_POLICY=Ignore
  bool min_values_best_effort = false;            // MIN_VALUES_POLICY=BestEffort
  bool spot_to_spot_consolidation = false;        // FEATURE_GATES SpotToSpotConsolidation
  // Beyond Karpenter, off by default: a replacement must save at least this much, absolute
  // and as a percent of the price of the nodes it replaces (the larger applies).
  MicroUsdPerHour consolidation_min_savings{0};
  std::int32_t consolidation_min_savings_percent = 0;
  // Beyond Karpenter, off by default: expired nodes go through the budgets and are replaced
  // before they are drained, like drifted ones, instead of being deleted at once.
  bool soft_expiration = false;
  // RESERVED_ENIS: network interfaces kept from pods (the VPC CNI's max-pods formula).
  std::int32_t reserved_enis = 0;
  // Where the nodes find the API server (CLUSTER_ENDPOINT) and its CA bundle (base64): the
  // user data of every launch carries them.
  std::string cluster_endpoint;
  std::string cluster_ca_bundle;
  friend bool operator==(const Settings&, const Settings&) = default;
};

// ---- Events: past tense, the only input to the core. ----

struct Tick {
  Nanos now{0};
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
  // LaunchInstances alone and checks it is the same.
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
struct NodeClaimDeleting {
  std::string name;
  friend bool operator==(const NodeClaimDeleting&, const NodeClaimDeleting&) = default;
};
// An instance as DescribeInstances reports it, found by the cluster's ownership tag.
struct CloudInstance {
  std::string id;
  std::string nodeclaim;  // The karpenter.sh/nodeclaim tag.
  Nanos launched{0};
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

// The Kubernetes informers: false when they start listing, true once every watched resource
// has been listed and handed over. Provisioning and disruption wait for true, as Karpenter waits
// for its cluster state to sync, so no decision is taken on a half-read cluster.
struct WatchesSynced {
  bool synced = true;
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

// New kinds go at the end: the variant index is part of the state hash and the codec.
using Event =
    std::variant<Tick, ControllerStarted, CatalogRefreshed, NodePoolUpserted, NodePoolDeleted,
                 NodeClassUpserted, NodeClassDeleted, PodUpserted, PodDeleted, NodeUpserted,
                 NodeDeleted, FleetLaunched, FleetFailed, CommandSucceeded, CommandFailed,
                 InputRejected, DaemonSetUpserted, DaemonSetDeleted, PersistentVolumeClaimUpserted,
                 PersistentVolumeClaimDeleted, PersistentVolumeUpserted, PersistentVolumeDeleted,
                 StorageClassUpserted, StorageClassDeleted, CsiNodeUpserted, CsiNodeDeleted,
                 NodeClaimDeleting, InstancesListed, InterruptionReceived,
                 PodDisruptionBudgetUpserted, PodDisruptionBudgetDeleted, WatchesSynced,
                 NodeClaimObserved, NodeClassResolved>;

// ---- Commands: imperative, effects as data. ----

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
struct LaunchInstances {
  std::string nodeclaim;
  std::string nodepool;
  std::string nodeclass;
  std::string client_token;
  std::string capacity_type;
  std::vector<LaunchOverride> overrides;
  Labels tags;
  std::string allocation_strategy;  // price-capacity-optimized (spot) | lowest-price (on-demand)
  LaunchNode node;
  friend bool operator==(const LaunchInstances&, const LaunchInstances&) = default;
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

using CommandBody =
    std::variant<CreateNodeClaim, DeleteNodeClaim, LaunchInstances, PatchNode, EvictPod, DeletePod,
                 TerminateInstance, RemoveFinalizer, PatchNodePoolStatus, PatchNodeClaimStatus,
                 DeleteQueueMessage, TagInstance, PatchNodeClassStatus, SetNodeClassFinalizer,
                 EnsureInstanceProfile, DeleteNodeClassResources, RecordKubeEvent>;

struct Command {
  CommandId id{0};
  Seq cause{0};
  CommandBody body;
  friend bool operator==(const Command&, const Command&) = default;
};

// ---- Decisions: what the core chose and why, kept for audit. ----

struct OfferingChoice {
  std::string instance_type;
  std::string zone;
  std::string capacity_type;
  MicroUsdPerHour price{0};
  friend bool operator==(const OfferingChoice&, const OfferingChoice&) = default;
};

struct ClaimPlan {
  std::string nodeclaim;
  std::string nodepool;
  std::vector<std::string> pods;  // ns/name
  Resources requests;
  std::vector<OfferingChoice> offerings;  // Cheapest first, at most kFleetOverridesMax.
  friend bool operator==(const ClaimPlan&, const ClaimPlan&) = default;
};

// What kind of thing a decision's cause is, as a code: Kubernetes Events, metric labels, reports
// and tests read it, never the English of a reason or an outcome. kNone in decisions recorded
// before causes were coded, and where a decision has no cause to name.
enum class Cause : std::uint8_t {
  kNone,
  // Why a disruption candidate cannot go now.
  kDoNotDisrupt,         // karpenter.sh/do-not-disrupt on its node or one of its pods
  kPodDisruptionBudget,  // a PodDisruptionBudget would refuse an eviction
  kDisruptionBudget,     // its NodePool's disruption budget allows no more now
  kNotSettled,           // NodeClaims are still launching: what they will be is not known
  kNominated,            // nominated for pending pods
  kPolicy,               // consolidationPolicy or consolidateAfter says not (yet)
  kNoBetterPlacement,    // the method's own verdict: its pods would not fit, nothing cheaper
  kNotConsidered,        // others went first (one node per command, the group's size)
  // What happened to an instance.
  kInsufficientCapacity,  // a launch found no capacity
  kLaunchError,           // a launch failed otherwise
  kSpotInterruption,
  kRebalanceRecommendation,
  kScheduledChange,
  kInstanceStopping,
  kInstanceTerminating,
  // Why a NodeClaim is deleted, besides a launch failure or an interruption above.
  kEmpty,                   // Emptiness: no pods but daemons
  kUnderutilized,           // consolidation: its pods fit elsewhere, or on something cheaper
  kDrifted,                 // its NodePool or EC2NodeClass no longer describes it
  kExpired,                 // older than its NodePool's expireAfter
  kDeletedThroughApi,       // someone deleted the NodeClaim
  kNodeDeleted,             // someone deleted its Node
  kAdoptedWithoutInstance,  // found in the cluster with no instance behind it
  kLaunchTimeout,           // not launched in time
  kRegistrationTimeout,     // its node never registered in time
  kInstanceGone,            // its instance went away under it
};
inline constexpr Cause kCauseLast = Cause::kInstanceGone;
// The code as metric labels spell it ("DoNotDisrupt"); "" for kNone.
const char* CauseName(Cause cause);

// How a NodeClaim is disrupted: Karpenter's disruption methods, and SoftExpiration beyond them
// (Settings::soft_expiration: expiration as a graceful, budgeted method).
enum class DisruptionMethod : std::uint8_t {
  kEmptiness,
  kDrift,
  kExpiration,
  kSoftExpiration,
  kInterruption,
  kSingleNodeConsolidation,
  kMultiNodeConsolidation,
};
// Where a disruption stands: a pass that found candidates but could not act (blocked), one
// proposing an action and waiting out its validation (proposed), an action dropped by that
// validation (invalidated), replacing its candidates (replacing) and done with that (replaced,
// or rolled back when a replacement failed), or deleting its candidates outright (executed).
enum class DisruptionPhase : std::uint8_t {
  kBlocked,
  kProposed,
  kInvalidated,
  kReplacing,
  kReplaced,
  kRolledBack,
  kExecuted,
};
// One step of a NodeClaim's life (or of an instance no NodeClaim owns).
enum class Transition : std::uint8_t {
  kLaunched,
  kLaunchFailed,
  kRegistered,
  kInitialized,
  kAdopted,
  kTainted,    // karpenter.sh/disrupted before its replacements launch
  kUntainted,  // a replacement failed: the disruption rolled back
  kRebalanceRecommendation,
  kInstanceStateChange,
  kInterrupted,
  kInterruptionIgnored,  // a message about an instance no NodeClaim has
  kDeleting,
  kEvicted,
  kEvictionRefused,
  kPodForceDeleted,  // terminationGracePeriod left no time to evict
  kDrained,
  kInstanceTerminated,
  kInstanceGone,
  kFinalized,
  kLeakedInstance,
  kLeakedInstanceTerminated,
};
// The names the log, the metrics and the incident tools use ("SingleNodeConsolidation",
// "rolled back", "LaunchFailed"), and back; nullopt for a name that is none of them.
const char* Name(DisruptionMethod method);
const char* Name(DisruptionPhase phase);
const char* Name(Transition transition);
std::optional<DisruptionMethod> ParseDisruptionMethod(std::string_view name);
std::optional<DisruptionPhase> ParseDisruptionPhase(std::string_view name);
std::optional<Transition> ParseTransition(std::string_view name);

struct PodOutcome {
  std::string pod;     // ns/name
  std::string target;  // node or nodeclaim the pod was placed on; empty when unschedulable.
  std::string reason;  // Why it was placed there, or why nothing fitted (per NodePool).
  std::vector<std::string> relaxed;  // Preferences dropped, in the order they were dropped.
  friend bool operator==(const PodOutcome&, const PodOutcome&) = default;
};

struct ProvisioningDecision {
  Nanos batch_opened{0};
  std::vector<ClaimPlan> new_claims;
  std::vector<PodOutcome> pods;
  friend bool operator==(const ProvisioningDecision&, const ProvisioningDecision&) = default;
};

// One step of a NodeClaim's life, with its cause: what `tenon replay` shows as its history.
struct LifecycleDecision {
  std::string nodeclaim;  // Empty for a leaked instance.
  Transition transition = Transition::kLaunched;
  std::string reason;
  std::string node_name;
  std::string instance_id;
  Cause cause = Cause::kNone;  // Set for launch failures and interruptions.
  std::string subject;         // The pod an eviction was of (ns/name); empty otherwise.
  friend bool operator==(const LifecycleDecision&, const LifecycleDecision&) = default;
};

// One disruption pass or action: what was considered, what stood in the way, what was done.
struct DisruptionCandidate {
  std::string nodeclaim;
  std::string nodepool;
  std::string outcome;  // "selected", or the precise blocker.
  // The outcome's kind: kNone when it may go (or the method did not look at it); why not
  // otherwise; for an interruption, what the message said.
  Cause cause = Cause::kNone;
  std::string subject;  // The pod, node or NodePool the cause names; empty when none.
  friend bool operator==(const DisruptionCandidate&, const DisruptionCandidate&) = default;
};
struct BudgetState {
  std::string nodepool;
  std::string reason;  // Empty, Drifted, Underutilized.
  std::int64_t allowed = 0;
  std::string detail;  // Which budget decided it, and until when.
  friend bool operator==(const BudgetState&, const BudgetState&) = default;
};
// What a disruption costs and saves, per hour: the nodes it removes, each replacement's first
// choice (the cheapest offering its fleet request may launch), and removed minus those. Set on
// proposed, replacing and executed graceful disruptions; zero and empty otherwise, and in
// decisions recorded before tenon kept them.
struct DisruptionPrices {
  MicroUsdPerHour removed{0};
  std::vector<OfferingChoice> replacements;
  MicroUsdPerHour saving{0};
  friend bool operator==(const DisruptionPrices&, const DisruptionPrices&) = default;
};
struct DisruptionDecision {
  DisruptionMethod method = DisruptionMethod::kEmptiness;
  DisruptionPhase phase = DisruptionPhase::kBlocked;
  std::vector<std::string> nodeclaims;  // Acted on (or to be, once validated).
  std::vector<DisruptionCandidate> candidates;
  std::vector<BudgetState> budgets;
  std::string reason;
  DisruptionPrices prices;
  friend bool operator==(const DisruptionDecision&, const DisruptionDecision&) = default;
};

using DecisionBody = std::variant<ProvisioningDecision, LifecycleDecision, DisruptionDecision>;

struct Decision {
  DecisionId id{0};
  Seq cause{0};
  Nanos at{0};
  DecisionBody body;
  friend bool operator==(const Decision&, const Decision&) = default;
};

struct Output {
  std::vector<Command> commands;
  std::vector<Decision> decisions;
  bool empty() const { return commands.empty() && decisions.empty(); }
  std::size_t size() const { return commands.size() + decisions.size(); }
  friend bool operator==(const Output&, const Output&) = default;
};

}  // namespace tenon
