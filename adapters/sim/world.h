// The simulated world: an EC2-like cloud and a Kubernetes-like cluster on a virtual clock.
//
// It stands where AWS and the API server stand in production, outside the controller: it is
// persisted to a file after every change the controller could observe, so a controller that
// is killed and restarted finds the world as it left it. CreateFleet is idempotent on its
// client token, exactly like EC2's, so a re-driven launch never starts a second instance.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "adapters/runtime/runtime.h"
#include "adapters/sim/kube_scheduler.h"
#include "adapters/sim/scenario.h"

namespace tenon::sim {

struct SimInstance {
  std::string id;
  std::string nodeclaim;  // The client token.
  std::string nodepool;
  std::string instance_type;
  std::string zone;
  std::string capacity_type;
  MicroUsdPerHour price{0};
  Instant launched;
  std::string node_name;  // Set once the kubelet registers.
  std::string image_id;   // The AMI it was launched from.
};

// Something the world will do at a given virtual time.
struct Timer {
  // kJobDone: a Job's pod (instance_id holds its ns/name key) finishes. kLaunchAnswer: the
  // answer to CreateFleet `command` (for the instance `instance_id`) reaches the controller.
  // The world file stores it as world.capnp's TimerKind, in this order: a new kind goes last,
  // in both.
  enum class Kind : std::uint8_t { kRegister, kReady, kReclaim, kJobDone, kLaunchAnswer };
  Kind kind = Kind::kRegister;
  std::string instance_id;
  std::uint64_t command = 0;
};

struct WorldSummary {
  std::size_t instances = 0;
  std::size_t nodes = 0;
  std::size_t pods_bound = 0;
  std::size_t pods_pending = 0;
  MicroUsdPerHour cost{0};
  std::size_t launch_calls = 0;
  // Nodes whose kubelet reported less allocatable than the controller planned on (the
  // NodeClaim status it wrote at launch), with the first such node's account.
  std::size_t allocatable_overestimates = 0;
  std::string first_overestimate;
};

// What the world's file holds (world_persistence.cc), the part of the world a restart must find
// as it was: the clock and the counters that name new objects, the cloud's instances, the
// API server's objects and the controllers' progress. Pods are kept beside it (World::pods_),
// where their indexes are. What is not here is made again from the scenario on load.
struct WorldRecord {
  Instant now;
  bool started = false;
  std::size_t next_workload = 0;
  std::uint64_t next_instance = 1;
  std::uint64_t next_timer = 1;
  std::uint64_t next_pod = 1;
  std::int64_t ami_release = 1;  // Bumped by releaseAmi.
  std::size_t launch_calls = 0;
  Instant next_listing;
  std::uint64_t next_message = 1;
  std::size_t next_bare_pod = 0;  // Scenario::pods created so far.
  std::size_t next_job = 0;
  std::size_t next_action = 0;
  std::map<std::string, SimInstance> instances;      // By instance id.
  std::map<std::string, std::string> client_tokens;  // Token -> instance id.
  std::map<std::string, std::string> nodeclaims;     // NodeClaim objects: name -> nodepool.
  std::set<std::string> deleting;                    // NodeClaims with a deletion timestamp.
  // The EC2NodeClasses holding karpenter.k8s.aws/termination (SetNodeClassFinalizer).
  std::set<std::string> nodeclass_finalizers;
  // NodeClaim -> the allocatable the controller wrote on its status at launch; and the claims
  // whose node's kubelet reported less, with what fell short.
  std::map<std::string, Resources> planned;
  std::map<std::string, std::string> overestimated;
  std::map<std::string, Node> nodes;
  // Pod key -> the template it was made from (templates change by apply).
  std::map<std::string, std::string> pod_template;
  std::map<std::string, PersistentVolumeClaim> claims;      // By namespace/name.
  std::map<std::string, PersistentVolume> volumes;          // By name.
  std::map<std::string, std::int64_t> replicas;             // Deployment -> desired.
  std::map<std::string, std::size_t> deployments;           // ns/name -> its latest workload step.
  std::map<std::string, std::int64_t> job_pods_left;        // ns/job -> pods not yet finished.
  std::map<std::string, Labels> added_pool_labels;          // Template labels users added since.
  std::map<std::string, NodePoolStatus> pool_status;        // As the controller last patched it.
  std::map<std::string, NodeOverlayStatus> overlay_status;  // Likewise.
  std::map<std::pair<std::int64_t, std::uint64_t>, Timer> timers;
};

class World : public runtime::Executor {
 public:
  // An empty `state_file` keeps the world in memory only (Load finds nothing, Save does
  // nothing): for benchmarks, where rewriting a 50,000-pod world after every command would
  // measure the file, not the controller.
  World(const Scenario& scenario, std::filesystem::path state_file);

  // Restores the world from its file; false when there is none (a fresh world). A file that is
  // damaged, or of another scenario, is a ScenarioError naming it, and leaves the world as it
  // was.
  bool Load();
  // Writes the world atomically (temporary file, then rename).
  void Save() const;

  // What a (re)starting controller learns first: its settings, the catalog, and a list of
  // every object the cluster holds (NodeClasses, NodePools, Nodes, Pods), with deletions for
  // the pods and nodes `known` (the state it recovered) still holds but the cluster does not:
  // they went while it was down.
  std::vector<Event> StartupEvents(const State& known) const;
  // What an informer's full list hands over: every NodeClass, NodePool, DaemonSet, Node and Pod.
  std::vector<Event> ListEvents() const;
  // An informer's relist: ListEvents, then deletions for what `known` holds and the cluster
  // no longer does.
  std::vector<Event> Relist(const State& known) const;
  // Moves the clock to `now`: scales workloads, fires timers, runs the kube-scheduler, and
  // ends with a Tick. Returns the watch events that produced, in order.
  std::vector<Event> Advance(Instant now);

  std::vector<Event> Execute(const Command& command) override;

  Instant now() const { return record_.now; }
  bool started() const { return record_.started; }
  WorldSummary Summary() const;
  const std::map<std::string, SimInstance>& instances() const { return record_.instances; }
  const std::map<std::string, std::string>& nodeclaims() const { return record_.nodeclaims; }
  const std::map<std::string, Node>& nodes() const { return record_.nodes; }
  const std::map<std::string, Pod>& pods() const { return pods_; }
  const std::map<std::string, NodePoolStatus>& pool_status() const { return record_.pool_status; }
  const std::map<std::string, NodeOverlayStatus>& overlay_status() const {
    return record_.overlay_status;
  }
  const std::set<std::string>& deleting() const { return record_.deleting; }
  // kInterruptOffering actions that found no instance to deliver their message to.
  std::size_t unmatched_interruptions() const { return unmatched_interruptions_; }
  // kDeleteNodeClaimOfOffering and kTerminateInstanceOfOffering actions that found no instance.
  std::size_t unmatched_by_hand() const { return unmatched_by_hand_; }
  // The catalog as the cloud prices it now (price changes applied).
  const std::vector<InstanceType>& catalog() const { return catalog_; }
  // NodePool `pool` as the API server serves it (labels users added applied).
  NodePool ServedPool(const NodePool& pool) const { return Pool(pool); }

  // The pods bound to each node and what they request (Schedule subtracts it from the node's
  // allocatable, DeletePodsOn deletes them): kept up to date as pods bind and go, for tests to
  // recount.
  const std::map<std::string, PodsOnNode>& pods_on_nodes_for_test() const { return on_node_; }
  // How many pods each owner has (see OwnerOf): a Deployment's, StatefulSet's or Job's, kept up
  // to date as pods come and go, for tests to recount.
  const std::map<std::string, std::int64_t>& pods_by_owner_for_test() const {
    return pods_by_owner_;
  }

  // A planted bug for the fault tests' checker: every NodePool the controller is served has
  // `delta` more nodes in each of its count budgets than the scenario wrote.
  void SkewBudgetsForTest(std::int64_t delta) { budget_skew_for_test_ = delta; }

 private:
  // ---- The world itself (world.cc): the API server's objects, the clock, the pod garbage
  // collector and the bookkeeping of pods per node and per owner.
  std::vector<Event> Apply(const Command& command);
  ClusterView View() const;
  // The pod template a workload step, Job or DaemonSet names, if any.
  const Pod* TemplateOf(const std::string& key) const;
  NodePool Pool(const NodePool& original) const;  // With the labels users added.
  void AddTimer(Instant at, Timer timer);
  std::vector<Event> FireTimers();
  // Pods bound to `node` are deleted with it (the pod garbage collector's part).
  std::vector<Event> DeletePodsOn(const std::string& node);
  std::vector<Event> Finalize(const Command& command, const RemoveFinalizer& remove);
  std::vector<Event> SetFinalizer(const Command& command, const SetNodeClassFinalizer& set);
  // The pods of deployment `ns/name` (named `name-<n>`), a range of `pods_`.
  std::vector<std::map<std::string, Pod>::iterator> PodsOf(const std::string& ns,
                                                           const std::string& name);
  // The owner "ns/name" a pod (by key) counts for: the workload or Job of its template, else
  // "ns/name" for a pod named "name-<digits>"; empty for other pods.
  std::string OwnerOf(const std::string& key) const;
  // How many there are (PodsOf(ns, name).size(), from pods_by_owner_).
  std::int64_t PodsCountOf(const std::string& ns, const std::string& name) const;
  // Keep on_node_, pods_by_owner_ and unbound_ in step with pods_: InsertPod puts a pod in
  // pods_ (replacing one of its name), Binding is called after giving a pod in pods_ its node,
  // ErasePod removes a pod from pods_ (bound or not).
  Pod& InsertPod(Pod pod);
  void Binding(const Pod& pod);
  std::map<std::string, Pod>::iterator ErasePod(std::map<std::string, Pod>::iterator it);

  // ---- The world's file (world_persistence.cc), which reads and writes the private parts.
  friend class WorldFile;

  // ---- The workload controllers and the volume provisioner (world_workloads.cc).
  std::vector<Event> ScaleWorkloads();
  std::vector<Event> StartJobs();
  // Bare pods of the scenario whose time has come.
  std::vector<Event> CreatePods();
  // A new pod of a template: its labels, requests and constraints, with a numbered name.
  Pod FromTemplate(const std::string& template_key, const std::string& ns, const std::string& name,
                   const char* owner_kind);
  // A StatefulSet's pod `name` gets its own claim for each of the step's claim templates.
  std::vector<Event> ClaimsFor(const WorkloadStep& step, Pod& pod);
  // A volume for a claim whose StorageClass binds at once (Immediate), made when the claim is.
  const PersistentVolume* ProvisionAtOnce(PersistentVolumeClaim& claim);
  // Volumes for the pod's unbound claims, provisioned where it was bound (WaitForFirstConsumer).
  std::vector<Event> ProvisionFor(const Pod& pod);
  Pod NewJobPod(const Job& job);
  template <class Template>
  Pod TemplatePod(const Template& t, const char* owner_kind);
  // A new pod, not yet bound, in the cluster; returns its watch event.
  PodUpserted AddPending(Pod pod);
  void StartJobTimer(const Pod& pod);
  // A workload step's new pod (and a StatefulSet pod's claims), appended to `events`.
  void AddWorkloadPod(const WorkloadStep& step, std::vector<Event>& events);
  // How many of a Job's `left` pods run at once (its parallelism).
  std::int64_t JobPodsAtOnce(const Job& job, std::int64_t left) const;
  // A DaemonSet's pod as its template (or the scenario's shorthand) makes it.
  Pod DaemonPod(const DaemonSetSpec& d) const;
  // DaemonSet pods for a node that just became Ready.
  std::vector<Event> PlaceDaemonPods(const Node& node);
  std::vector<Event> TopUp();
  Pod NewPod(const WorkloadStep& step);

  // ---- The kube-scheduler's binding pass (world_scheduler.cc).
  std::vector<Event> Schedule();

  // ---- The kubelet and the Node object (world_kubelet.cc).
  // The instance's kubelet registers its Node (not Ready, with the unregistered taint); the
  // node becomes Ready after the cloud's ready delay.
  NodeUpserted Register(SimInstance& instance);
  // The node is Ready: its startup taints go, and the DaemonSets place their pods on it.
  std::vector<Event> BecomeReady(const SimInstance& instance);
  Node NewNode(const SimInstance& instance) const;
  // Compares what the controller planned on for `nodeclaim` with what its node's kubelet
  // reported, once both are known.
  void CheckPlanned(const std::string& nodeclaim);
  std::vector<Event> Patch(const Command& command, const PatchNode& patch);

  // ---- The cloud (world_cloud.cc).
  // Applies the price change `action` to catalog_.
  void ChangePrice(const Action& action);
  std::vector<Event> InterruptSpot(const SimInstance& instance);
  bool OutOfCapacity(const std::string& offering) const;
  MicroUsdPerHour PriceNow(const SimInstance& instance) const;
  FleetLaunched Answer(CommandId command, const SimInstance& instance,
                       std::vector<FleetError> errors) const;
  std::vector<Event> Launch(const Command& command, const LaunchInstance& launch);
  std::vector<Event> Terminate(const Command& command, const TerminateInstance& terminate);
  std::vector<Event> RemoveInstance(const std::string& id);
  std::vector<Event> ListInstances();
  // EC2NodeClass status: the AMI of the current release, a subnet per zone, one security
  // group; `releaseAmi` publishes a new AMI.
  NodeClass Resolved(const NodeClass& nodeclass) const;
  // What the simulated cloud resolves its selector terms to (NodeClassResolved): the same AMI
  // (for every architecture), subnets with the addresses the instances in each zone leave
  // free, the security group, and the instance profile for its role.
  NodeClassResolution Resolution(const NodeClass& nodeclass) const;
  std::string CurrentAmi(const NodeClass& nodeclass) const;

  // ---- PodDisruptionBudgets and evictions (world_budgets.cc).
  std::vector<Event> Evict(const Command& command, const EvictPod& evict);
  std::int64_t DisruptionsAllowed(const Budget& budget) const;
  std::vector<Event> PublishBudgets();
  std::vector<Event> DeletePodNow(const Command& command, const std::string& ns,
                                  const std::string& name);

  // ---- The scenario's scripted actions (world_actions.cc).
  std::vector<Event> RunActions();
  // One action's effect on the world, and the watch events it makes.
  std::vector<Event> RunAction(const Action& action);
  // kDeleteNodeClaim: the oldest NodeClaim not already going gets its deletion timestamp.
  std::vector<Event> DeleteOldestNodeClaim();
  // An interruption message about the oldest instance: a spot warning (its reclaim follows),
  // a rebalance recommendation, a scheduled retirement or a stopping state change.
  std::vector<Event> MessageOnOldest(Action::Kind kind);
  // Spot warnings to the `count` oldest spot instances at once.
  std::vector<Event> SpotInterruptionStorm(std::int64_t count);
  // kCordonNode and kUncordonNode: the node's unschedulable taint set or cleared.
  std::vector<Event> Cordon(const Action& action);
  // kProtectNode: the oldest instance's Node gets karpenter.sh/do-not-disrupt.
  std::vector<Event> ProtectOldestNode();
  // kNodeCondition: the oldest Nodes report the condition, since now.
  std::vector<Event> ReportCondition(const Action& action);
  // PatchPodDeletionCost: the pod's controller.kubernetes.io/pod-deletion-cost.
  std::vector<Event> PatchDeletionCost(const Command& command, const PatchPodDeletionCost& patch);
  // kReleaseAmi: a new AMI release, published in every NodeClass's status.
  std::vector<Event> ReleaseAmi();
  // kLabelNodePool: a user adds `label` ("key=value") to the first NodePool's template.
  std::vector<Event> LabelNodePool(const std::string& label);
  // kStrayInstance: an instance tagged for the cluster with no NodeClaim.
  void AddStrayInstance(const Action& action);
  std::vector<Event> InterruptOffering(const Action& action);
  std::vector<Event> ByHandOnOffering(const Action& action);
  const SimInstance* OfOffering(const Action& action,
                                const std::function<bool(const SimInstance&)>& keep) const;
  void ApplyNodePool(const NodePool& pool);
  // The instance launched first (earliest, then by id) among those `keep` accepts.
  const SimInstance* Oldest(const std::function<bool(const SimInstance&)>& keep) const;

  const Scenario& scenario_;
  std::filesystem::path state_file_;
  std::map<std::string, std::int32_t> published_budgets_;  // PDB status last published.
  std::vector<InstanceType> catalog_;                      // Current prices.
  std::vector<NodePool> nodepools_;                        // With recorded edits applied.
  std::int64_t budget_skew_for_test_ = 0;
  std::map<std::string, StorageClass> storage_classes_;  // By name (not persisted: scenario's).
  std::size_t refusing_pods_ = 0;  // Pods with required anti-affinity (derived).
  // Capacity errors CreateFleet met before the instance it launched, held until its delayed
  // answer (not persisted: a re-driven launch after a restart is answered without them).
  std::map<std::string, std::vector<FleetError>> answer_errors_;

  WorldRecord record_;
  std::map<std::string, Pod> pods_;  // By namespace/name.
  // Pods' and nodes' repeated parts shared as the controller's State shares them, so thousands
  // of simulated pods and nodes keep one copy of each. Not persisted: caches.
  SharedPodParts pod_parts_;
  SharedNodeParts node_parts_;
  // Not persisted (a loaded world starts with both set): kube-scheduler retries a pod it found
  // unschedulable only after the cluster changed in a way that could make room (a node added,
  // readied or patched, a pod deleted), and the ReplicaSet controller tops up only after pods
  // went away. Without them every tick would walk every pending pod over every node.
  bool room_may_have_changed_ = true;
  bool pods_removed_ = true;
  std::set<std::string> unbound_;  // Keys of the pods bound to no node (not persisted: derived).
  // Node name -> its bound pods (not persisted: derived). Schedule's room per node is
  // allocatable less what they request, and a node's deletion deletes them, without walking
  // every pod of the cluster.
  std::map<std::string, PodsOnNode> on_node_;
  // Owner (see pods_by_owner_for_test) -> its pods in pods_ (not persisted: derived), so the
  // ReplicaSet and Job controllers count a workload's pods without walking them.
  std::map<std::string, std::int64_t> pods_by_owner_;
  // Instances a kInterruptOffering message went to, and the messages that found none (not
  // persisted: a what-if runs in one process).
  std::set<std::string> interrupted_;
  std::size_t unmatched_interruptions_ = 0;
  std::size_t unmatched_by_hand_ = 0;
};

}  // namespace tenon::sim
