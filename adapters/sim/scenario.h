// A simulation scenario: the user's NodePools and EC2NodeClasses as they write them, a catalog,
// workloads over time, and the simulated cloud's behaviour. Loaded from YAML.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "model/model.h"

namespace tenon::sim {

class ScenarioError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Throws ScenarioError ("WHAT PATH is not a file" / "does not exist") unless `path` is a
// regular file: reading a folder would fail with a message that names nothing.
void RequireFile(const std::filesystem::path& path, const std::string& what);

// A volumeClaimTemplates entry of a StatefulSet: each pod gets its own claim
// "<name>-<pod name>" of this storage class.
struct ClaimTemplate {
  std::string name;
  std::string storage_class;
};

// A deployment's desired replica count from time `at` on. A step made from a Kubernetes object
// (Deployment, ReplicaSet, StatefulSet) names its pod template in Scenario::templates; a step
// with neither a template nor requests only scales the workload it names.
struct WorkloadStep {
  Duration at{0};
  std::string ns = "default";
  std::string name;
  std::int64_t replicas = 0;
  Resources requests;
  Labels node_selector;
  std::vector<Toleration> tolerations;
  bool do_not_disrupt = false;                 // karpenter.sh/do-not-disrupt on its pods.
  std::optional<Duration> do_not_disrupt_for;  // Its duration form ("30m"), if given.
  Duration termination_grace{30 * kSecond};    // terminationGracePeriodSeconds.
  std::string priority_class;
  std::optional<std::int32_t> priority;  // spec.priority of its pods.
  // topologySpreadConstraints over zones (whenUnsatisfiable DoNotSchedule), 0: none.
  std::int32_t zone_spread_max_skew = 0;
  // Its pods' labels besides app=<name> (a recorded pod's, for budgets that select on them).
  Labels labels;
  std::string template_key;  // "Kind/namespace/name" in Scenario::templates, or empty.
  bool stateful = false;     // A StatefulSet: pods named by ordinal, each with its own claims.
  std::vector<ClaimTemplate> claim_templates;
};

// A batch Job: `pods` pods created at `at`, each finishing `run_for` after it starts running
// (then deleted, as a Job with ttlSecondsAfterFinished: 0 leaves it).
struct Job {
  Duration at{0};
  std::string ns = "default";
  std::string name;
  std::int64_t pods = 0;         // spec.completions.
  std::int64_t parallelism = 0;  // spec.parallelism: at most this many at once (0: all).
  Duration run_for{kMinute.value};
  Resources requests;
  Labels node_selector;
  std::vector<Toleration> tolerations;
  std::string template_key;  // As WorkloadStep's.
};

// A DaemonSet: one pod on every node it tolerates (and whose labels match its nodeSelector).
struct DaemonSetSpec {
  std::string ns = "kube-system";
  std::string name;
  Resources requests;
  Labels node_selector;
  std::vector<Toleration> tolerations;
  std::string template_key;  // As WorkloadStep's.
};

// A PodDisruptionBudget over the pods its selector matches: a scenario's `app: X` selects one
// workload's pods (matchLabels app=X); a recorded budget keeps its own selector.
struct Budget {
  std::string ns = "default";
  std::string name;
  LabelSelector selector;
  std::optional<std::int64_t> min_available;
  std::optional<std::int64_t> max_unavailable;
  bool percent = false;  // The value given is a percent of the pods its workloads want.
};

// Something done to the world from outside the controller at a given time.
struct Action {
  enum class Kind : std::uint8_t {
    kDeleteNodeClaim,    // kubectl delete nodeclaim <the oldest one>
    kTerminateInstance,  // the oldest instance terminated behind the controller's back
    kStrayInstance,      // an instance tagged for the cluster with no NodeClaim
    // Interruption queue messages about the oldest instance (a spot warning also has EC2
    // reclaim it two minutes later).
    kSpotInterruption,
    kRebalanceRecommendation,
    kScheduledChange,
    kInstanceStopping,
    kMalformedMessage,  // a queue message no one can read
    kProtectNode,       // karpenter.sh/do-not-disrupt on the oldest node
    kLabelNodePool,     // the user adds `label` (key=value) to the first NodePool's template
    kReleaseAmi,        // a new AMI is released: every EC2NodeClass now resolves to it
    // `count` spot instances (the oldest first) get the two-minute warning at once.
    kSpotInterruptionStorm,
    // The price of `instance_type` (`capacity_type`, every zone or `zone`) becomes
    // `price_permille`/1000 of what it is; the controller sees a catalog refresh.
    kPriceChange,
    // A what-if replaying a recorded log (whatif/whatif.h): the controller sees `catalog` as
    // the recording's CatalogRefreshed had it.
    kCatalogRefresh,
    // A recorded interruption message (`interruption`, `detail`) about an instance of offering
    // `instance_type`/`zone`/`capacity_type`, delivered to the oldest instance not yet
    // interrupted of that offering, else of that capacity type in the zone, else of that
    // capacity type anywhere; with none, it is counted as unmatched.
    kInterruptOffering,
    // A what-if replaying a recorded log: a NodeClaim deleted by hand, or an instance
    // terminated behind the controller's back, in the recording, done to the instance
    // kInterruptOffering would find for offering `instance_type`/`zone`/`capacity_type`.
    kDeleteNodeClaimOfOffering,
    kTerminateInstanceOfOffering,
    // A what-if replaying a recorded log: `nodepool` as a recorded edit left it (replacing the
    // NodePool of its name, or added).
    kApplyNodePool,
    // kubectl cordon / uncordon of the Node `node` (one the scenario starts with): the node
    // lifecycle controller's node.kubernetes.io/unschedulable:NoSchedule taint goes on or off.
    kCordonNode,
    kUncordonNode,
    // The `count` oldest Nodes (of NodePool `in_pool` when given) report `condition`
    // ("Type=Status", e.g. Ready=False or AcceleratedHardwareReady=False) from now on, as a
    // failing kubelet or the EKS node monitoring agent reports it.
    kNodeCondition,
  };
  Duration at{0};
  Kind kind = Kind::kDeleteNodeClaim;
  std::string instance_type;                                            // kStrayInstance
  std::string zone;                                                     // kStrayInstance
  std::string label;                                                    // kLabelNodePool: key=value
  std::string capacity_type;                                            // kPriceChange
  std::int64_t count = 1;                                               // kSpotInterruptionStorm
  std::int64_t price_permille = 1000;                                   // kPriceChange
  std::vector<InstanceType> catalog;                                    // kCatalogRefresh
  InterruptionKind interruption = InterruptionKind::kSpotInterruption;  // kInterruptOffering
  std::string detail;                                                   // kInterruptOffering
  NodePool nodepool;                                                    // kApplyNodePool
  std::string node;                                                     // kCordonNode
  std::string condition;                                                // kNodeCondition
  std::string in_pool;                                                  // kNodeCondition
};

// An offering ("type/zone/capacity-type") out of capacity from `from` until `until` (scenario
// time; until 0: to the end).
struct CapacityWindow {
  std::string offering;
  Duration from{0};
  Duration until{0};
};

struct CloudModel {
  Duration registration_delay{30 * kSecond.value};  // Launch -> Node object appears.
  Duration ready_delay{10 * kSecond.value};         // Node appears -> Ready.
  // CreateFleet's own latency: its answer reaches the controller this long after the call.
  Duration launch_latency{0};
  // Offerings ("type/zone/capacity-type") that answer InsufficientInstanceCapacity.
  std::set<std::string> insufficient_capacity;
  std::vector<CapacityWindow> capacity_windows;  // The same, for a while.
  // Instance types whose kubelet never registers a Node.
  std::set<std::string> never_register;
  // How often the controller is told every instance the cluster owns (garbage collection).
  Duration list_interval{2 * kMinute.value};
};

struct Scenario {
  std::string name;
  std::uint64_t seed = 1;
  Instant start;
  Duration duration{10 * kMinute};
  Duration tick{kSecond.value};
  Settings settings;
  std::vector<NodePool> nodepools;
  std::vector<NodeClass> nodeclasses;
  std::vector<NodeOverlay> overlays;  // karpenter.sh/v1alpha1 NodeOverlays, from the start.
  std::vector<InstanceType> catalog;
  std::vector<WorkloadStep> workloads;  // Sorted by time, then name.
  std::vector<Job> jobs;                // Sorted by time, then name.
  std::vector<DaemonSetSpec> daemonsets;
  std::vector<Budget> budgets;
  std::vector<Action> actions;  // Sorted by time.
  CloudModel cloud;
  // What Kubernetes objects in the scenario bring besides NodePools and EC2NodeClasses:
  // pod templates by "Kind/namespace/name" (labels, constraints and requests as the API server
  // would serve the pods, priority and RuntimeClass overhead resolved), bare pods and nodes
  // present at the start, and the storage objects the scheduler reads.
  std::map<std::string, Pod> templates;
  std::vector<Pod> pods;
  std::vector<Node> nodes;
  // Pods of a dump that a workload of the scenario made, by "namespace/name": the template key
  // of that workload. They start bound where they ran and count among its replicas.
  std::map<std::string, std::string> adopted;
  // NodeClaims of a dump whose node is among `nodes`: the instances the cloud starts with.
  std::vector<NodeClaim> nodeclaims;
  std::vector<PersistentVolumeClaim> claims;
  std::vector<PersistentVolume> volumes;
  std::vector<StorageClass> storage_classes;
  std::vector<CsiNode> csi_nodes;
};

// Reads a scenario: a YAML file of one or more documents, or a folder of them (*.yaml, *.yml,
// *.json, in name order, as `kubectl apply -f` takes a folder). One document holds the
// simulation's own settings (kind: Scenario, or the document without a kind); the others are
// Kubernetes objects, `kind: List` included. Relative paths inside it (the catalog) resolve
// against its folder.
Scenario LoadScenario(const std::filesystem::path& path);
// The same from the YAML text, with relative paths resolved against `folder`. Errors are
// ScenarioError, as LoadScenario's without the file's name in front.
Scenario ParseScenario(const std::string& yaml, const std::filesystem::path& folder);

// `base` run under the configuration of `config`: its NodePools, EC2NodeClasses, NodeOverlays,
// settings and name, with everything else (catalog, workloads, jobs, actions, cloud) from `base`.
// What `tenon simulate --compare` runs, so both configurations see the same workload.
Scenario WithConfigurationOf(const Scenario& base, const Scenario& config);

// Reads a catalog in the JSON shape of data/catalog/ec2-us-east-1.json. Prices become integer
// micro-dollars; spot prices, which the file does not carry, are modelled from the seed.
std::vector<InstanceType> LoadCatalogJson(const std::filesystem::path& path, std::uint64_t seed);

}  // namespace tenon::sim
