// The State the core folds from the log, and the containers it keeps its values in: one copy
// of each distinct shared value (Interner), pods indexed by node (PodTable), claims by node
// (ClaimsByNode). The log's snapshots store it; the core's Step changes it.
#pragma once

#include <cassert>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <string_view>

#include "model/model.h"

namespace tenon {

// Limits, each a named constant: what one request, pass or rejected payload may hold.
inline constexpr std::size_t kFleetOverridesMax = 60;          // CreateFleet overrides per request.
inline constexpr std::size_t kPodsPerBatchMax = 100'000;       // Pending pods one pass considers.
inline constexpr std::size_t kNodeClaimsPerBatchMax = 10'000;  // New NodeClaims one pass plans.
inline constexpr std::size_t kRejectedPayloadBytesMax = 1 << 20;

// An instance type with the numbers the scheduler needs, computed once per catalog refresh.
struct CatalogEntry {
  InstanceType type;
  Resources allocatable;
  Labels labels;  // Well-known labels derived from the type (not zone or capacity type).
  friend bool operator==(const CatalogEntry&, const CatalogEntry&) = default;
};

// A content hash of the values pods share (Shared<T> in units.h), for the Interner.
std::uint64_t ValueHash(const Labels& labels);
std::uint64_t ValueHash(const PodConstraints& constraints);
std::uint64_t ValueHash(const std::string& text);
std::uint64_t ValueHash(const std::vector<Requirement>& requirements);
std::uint64_t ValueHash(const std::vector<std::string>& texts);

// One copy of each distinct value, so equal values held as Shared<T> share their memory. Only
// memory sees it: no output, hash or snapshot depends on which copy a holder points at. A
// value no holder keeps any more is dropped when the table has grown well past what was live.
template <class T>
class Interner {
 public:
  void Intern(Shared<T>& value) {
    if (!value.ptr_) return;
    if (*value.ptr_ == T{}) {
      value.ptr_.reset();
      return;
    }
    std::vector<std::shared_ptr<T>>& same_hash = by_hash_[ValueHash(*value.ptr_)];
    for (const auto& kept : same_hash) {
      if (*kept == *value.ptr_) {
        value.ptr_ = kept;
        return;
      }
    }
    same_hash.push_back(value.ptr_);
    if (++kept_ > 2 * live_ + kSlack) Prune();
  }
  std::size_t size() const { return kept_; }

 private:
  static constexpr std::size_t kSlack = 256;
  void Prune() {
    for (auto it = by_hash_.begin(); it != by_hash_.end();) {
      std::erase_if(it->second, [](const auto& kept) { return kept.use_count() == 1; });
      it = it->second.empty() ? by_hash_.erase(it) : std::next(it);
    }
    kept_ = 0;
    for (const auto& [hash, same_hash] : by_hash_) kept_ += same_hash.size();
    live_ = kept_;
  }
  std::map<std::uint64_t, std::vector<std::shared_ptr<T>>> by_hash_;
  std::size_t kept_ = 0;
  std::size_t live_ = 0;
};

// What pods share: their labels, constraints, node names and repeated texts, one copy of each
// distinct value. A cache, not part of the State's value: two States are equal whatever their
// caches hold.
struct SharedPodParts {
  Interner<Labels> labels;
  Interner<PodConstraints> constraints;
  Interner<std::string> node_names;
  Interner<std::string> texts;  // Namespaces, owner kinds, priority classes.
  void Share(Pod& pod) {
    labels.Intern(pod.labels);
    constraints.Intern(pod.constraints);
    node_names.Intern(pod.node_name.SharedForInterning());
    node_names.Intern(pod.nominated_node.SharedForInterning());
    texts.Intern(pod.ns.SharedForInterning());
    texts.Intern(pod.owner_kind.SharedForInterning());
    texts.Intern(pod.priority_class.SharedForInterning());
  }
  friend bool operator==(const SharedPodParts&, const SharedPodParts&) { return true; }
};

// What NodeClaims share: their requirements and candidate instance types. A cache like
// SharedPodParts, filled where a claim enters the State.
struct SharedClaimParts {
  Interner<std::vector<Requirement>> requirements;
  Interner<std::vector<std::string>> instance_types;
  void Share(NodeClaim& claim) {
    requirements.Intern(claim.requirements);
    instance_types.Intern(claim.instance_types);
  }
  friend bool operator==(const SharedClaimParts&, const SharedClaimParts&) { return true; }
};

// NodeClaims by their Node's name (NodeClaim::node_name), so a pod bound to or removed from a
// node finds the node's claim without a walk over every claim. Derived from State::nodeclaims:
// kept by the reducers that give a claim its node, take it away, or add or remove a claim
// (SetClaimNode, IndexClaim, ForgetClaim in reducers/internal.h), rebuilt from the claims when a
// snapshot is loaded; equality, hash and snapshot ignore it.
class ClaimsByNode {
 public:
  void Add(const std::string& node, const std::string& claim) {
    if (!node.empty()) entries_.emplace(node, claim);
  }
  void Remove(const std::string& node, const std::string& claim) {
    if (!node.empty()) entries_.erase({node, claim});
  }
  // The claims on `node`, in name order.
  template <class F>
  void ForEach(const std::string& node, F&& f) const {
    for (auto it = entries_.lower_bound({node, std::string()});
         it != entries_.end() && it->first == node; ++it) {
      f(it->second);
    }
  }
  bool Has(const std::string& node) const {
    auto it = entries_.lower_bound({node, std::string()});
    return it != entries_.end() && it->first == node;
  }
  // Whether it holds exactly the (node, claim) pairs of `claims` (for tests).
  bool Matches(const std::map<std::string, NodeClaim>& claims) const;
  friend bool operator==(const ClaimsByNode&, const ClaimsByNode&) { return true; }

 private:
  std::set<std::pair<std::string, std::string>> entries_;
};

// What nodes share: the texts of their labels, one copy of each distinct key and value. A cache
// like SharedPodParts, filled where a node enters the State. A node's hostname label is its
// name, which its pods already hold: it is taken from the pods' node names so that the node and
// its pods keep one copy.
struct SharedNodeParts {
  Interner<std::string> label_texts;
  void Share(Node& node, Interner<std::string>& node_names) {
    for (auto& [key, value] : node.labels.EntriesForInterning()) {
      label_texts.Intern(key.SharedForInterning());
      Interner<std::string>& values = key == label::kHostname ? node_names : label_texts;
      values.Intern(value.SharedForInterning());
    }
  }
  friend bool operator==(const SharedNodeParts&, const SharedNodeParts&) { return true; }
};

// The State's pods, keyed by namespace/name, with the views every pass reads: the pods bound to
// each node, the pods waiting for capacity (IsProvisionable) and the bound pods carrying a
// required anti-affinity term, each in key order. Only Upsert and Erase change a pod, so the
// views cannot drift from it; equality, hash and snapshot see the pods alone.
class PodTable {
 public:
  using Map = std::map<std::string, Pod>;
  using const_iterator = Map::const_iterator;
  using value_type = Map::value_type;
  // Pods in key order, by pointer into the table (stable while they are in it).
  using View = std::map<std::string_view, const Pod*>;

  PodTable() = default;
  // A copy's views point into the copy; a move keeps the nodes they point at.
  PodTable(const PodTable& other);
  PodTable& operator=(const PodTable& other);
  PodTable(PodTable&&) noexcept = default;
  PodTable& operator=(PodTable&&) noexcept = default;
  ~PodTable() = default;
  // A copy of the pods alone, without the views: what a snapshot encodes and hashes (equality,
  // hash and the snapshot see the pods alone), read by nothing else. Rebuilding the views was
  // half of copying a 10,000-pod State for each snapshot.
  static PodTable PodsOnly(const PodTable& other);

  const_iterator begin() const { return pods_.begin(); }
  const_iterator end() const { return pods_.end(); }
  const_iterator find(const std::string& key) const { return pods_.find(key); }
  bool contains(const std::string& key) const { return pods_.contains(key); }
  const Pod& at(const std::string& key) const { return pods_.at(key); }
  std::size_t size() const { return pods_.size(); }
  bool empty() const { return pods_.empty(); }

  // Adds the pod at `key`, or replaces the one there; returns it as stored.
  const Pod& Upsert(const std::string& key, Pod pod);
  void Erase(const_iterator it);
  void clear();
  void swap(PodTable& other) noexcept;

  // What is bound to one node: its pods, the sum of the active ones' requests (pods: how many
  // are active), and how many active ones hold host ports or volume claims (a bin must see those
  // one by one).
  struct Bound {
    // In key order. A sorted vector, not a map: a node holds tens of pods, and a map node per
    // bound pod cost megabytes at 50,000 pods.
    std::vector<std::pair<std::string_view, const Pod*>> pods;
    Resources active;
    std::size_t ports_or_volumes = 0;
    // Disruption's view, so a pass over every node reads no pod: the pods that would have to
    // move if the node went (active, not DaemonSet or mirror pods) in key order, how many
    // active pods (those included) carry karpenter.sh/do-not-disrupt, and the sum of the
    // movable pods' eviction costs.
    std::vector<const Pod*> reschedulable;
    // The same pods in the order the scheduler places them (largest first, then oldest), so a
    // consolidation trial of this node needs no sort of its own.
    std::vector<const Pod*> reschedulable_in_placement_order;
    std::size_t do_not_disrupt = 0;
    std::int64_t eviction_cost = 0;
    // The same sum with each pod's cost taken as at least 0: what Balanced consolidation counts
    // as moving the pods.
    std::int64_t positive_eviction_cost = 0;
  };
  // What is bound to `node` (nothing when none).
  const Bound& OnNode(std::string_view node) const;
  // Every node with pods bound to it, in name order (for a pass over all nodes: one walk
  // instead of a lookup per node).
  const std::map<std::string, Bound, std::less<>>& Nodes() const {
    assert(indexed_);
    return by_node_;
  }
  // The pods the next provisioning pass plans for.
  const View& Provisionable() const {
    assert(indexed_);
    return provisionable_;
  }
  // Bound pods with at least one required pod anti-affinity term.
  const View& BoundWithAntiAffinity() const {
    assert(indexed_);
    return anti_affinity_;
  }

  // With PodDeletionCostManagement the controller writes pod-deletion-cost itself, so the
  // eviction costs leave it out (Karpenter reads karpenter.sh/disruption-cost alone then).
  void IgnoreDeletionCost(bool ignore);

  friend bool operator==(const PodTable& a, const PodTable& b) { return a.pods_ == b.pods_; }

 private:
  void Index(const value_type& entry);
  void Unindex(const value_type& entry);
  void Recount(Bound& bound) const;
  Map pods_;
  bool ignore_deletion_cost_ = false;
  std::map<std::string, Bound, std::less<>> by_node_;
  View provisionable_;
  View anti_affinity_;
  bool indexed_ = true;  // False for PodsOnly's copies: the views are empty.
};

struct BatchWindow {
  bool open = false;
  Instant opened;
  Instant last_pod;
  friend bool operator==(const BatchWindow&, const BatchWindow&) = default;
};

// When the latest disruption decision was proposed and how many new NodeClaims its plans
// needed: what validation compares the recomputed plans with. Kept after the decision is
// carried out or dropped (the state hash has always covered it).
struct DisruptionProposal {
  Instant at;
  std::uint64_t replacements = 0;
  friend bool operator==(const DisruptionProposal&, const DisruptionProposal&) = default;
};

// A disruption decision waiting out its 15 s validation: its method and candidates.
struct PendingDisruption {
  DisruptionMethod method = DisruptionMethod::kDrift;
  std::vector<std::string> nodeclaims;
  friend bool operator==(const PendingDisruption&, const PendingDisruption&) = default;
};

// A disruption waiting for its replacements to initialise before its candidates go.
struct ReplacementWait {
  DisruptionMethod method = DisruptionMethod::kDrift;
  std::vector<std::string> candidates;    // Tainted karpenter.sh/disrupted, not yet deleted.
  std::vector<std::string> replacements;  // NodeClaims launched for their pods.
  Instant started;
  std::string reason;     // What the candidates' deletion will say.
  bool draining = false;  // Replacements ready, candidates being deleted.
  friend bool operator==(const ReplacementWait&, const ReplacementWait&) = default;
};

using Catalog = std::map<std::string, CatalogEntry>;

// A deleted EC2NodeClass whose finalizer the core still holds: the WaitingOnNodeClaimTermination
// Event last recorded (repeated when its message changes and every 10 minutes), and when the
// cleanup may be tried again after a failure.
struct NodeClassTermination {
  std::string waiting_message;
  Instant waiting_at;
  Instant retry_at;
  friend bool operator==(const NodeClassTermination&, const NodeClassTermination&) = default;
};

// Karpenter's limits on the Events it records, kept by the core so that each Event it records is
// a command in the log: an Event whose dedupe key (its reason, its object and sometimes a
// detail) was recorded within that key's timeout is dropped, and Nominated Events also pass a
// token bucket of 5 a second with a burst of 10. From core time only, so a replay records the
// same Events.
struct EventLimits {
  std::map<std::string, Instant> recorded;       // Dedupe key -> until when it holds.
  std::int64_t nominated_milli_tokens = 10'000;  // Thousandths of a token; the bucket starts full.
  Instant nominated_at;                          // When the bucket was last topped up.
  Instant pruned_at;  // When `recorded` was last rid of lapsed keys (once a minute).
  friend bool operator==(const EventLimits&, const EventLimits&) = default;
};

// What an idle tick may skip. Each tick walks every NodeClaim (timeouts, expiry, the pools'
// sums) and every 10 s disruption pass walks the cluster; a walk that found nothing to do notes
// until when that holds, provided nothing changes meanwhile. `changes` counts what could change
// it: every event but a tick, and every tick with an output. A note taken at another count is
// void, and so is one whose time has come. Derived, and left out of equality, the hash and
// snapshots: a state loaded from a snapshot holds no note and walks once, as a fresh one does.
struct IdleNote {
  bool taken = false;
  std::uint64_t changes = 0;     // The count it was taken at.
  std::optional<Instant> until;  // Holds before this time; none: until something changes.
  bool Holds(std::uint64_t changes_now, Instant now) const {
    return taken && changes == changes_now && (!until || now < *until);
  }
};
struct IdleNotes {
  std::uint64_t changes = 0;
  IdleNote lifecycle;   // AdvanceLifecycle found nothing to do.
  IdleNote disruption;  // The disruption pass found nothing to do.
  friend bool operator==(const IdleNotes&, const IdleNotes&) { return true; }
};

// Checks the core makes of its own shortcuts, which tests turn on in the states they fold: a
// check that fails throws std::logic_error. Not part of what the state says, so left out of
// equality, the hash and snapshots.
struct SelfChecks {
  // Consolidation's trials (reducers/simulation.cc): each one placed with the base run's hints
  // is placed again without them (Pass::BaseRun), and the two answers must be the same; each
  // one stopped once blocked is placed again in full, and must have placed the moving pods up
  // to the blocked one alike; each one's pods must be in placement order.
  bool simulation = false;
  friend bool operator==(const SelfChecks&, const SelfChecks&) { return true; }
};

// The catalog as the NodeOverlays change it for one NodePool, and which overlay made each
// change: an offering's price (by OfferingKey) and a type's capacity (by name, heaviest first).
struct OverlaidCatalog {
  Shared<Catalog> catalog;
  std::map<std::string, std::string> priced_by;
  std::map<std::string, std::vector<std::string>> capacity_by;
};

// What the NodeOverlays make of the catalog, for the NodePools they change (reducers/overlays.cc).
// Made from the catalog, the NodePools, the NodeOverlays and the settings, so neither hashed nor
// in snapshots: `stale` until made, and made again whenever one of them changes.
struct OverlaidCatalogs {
  std::map<std::string, OverlaidCatalog> by_pool;
  bool stale = true;
  friend bool operator==(const OverlaidCatalogs&, const OverlaidCatalogs&) { return true; }
};

// The State is made of slices, each with one writer: the reducers named above each slice change
// it, and every other part of the core only reads it (scripts/lint-writers checks the core's
// sources for writes from elsewhere). A reducer that needs another slice changed asks its
// writer, through the functions reducers/internal.h declares.

// The cluster as its inputs report it: the objects watched in Kubernetes, the catalog, and what
// is made of them. Written by the fold of the events that carry them (reducers/step.cc) and by
// the NodeOverlays' catalogs and status (reducers/overlays.cc).
struct ClusterView {
  std::map<std::string, NodePool> nodepools;
  std::map<std::string, NodeClass> nodeclasses;
  // The catalog, shared between copies of the state (a snapshot's copy among them): it is the
  // same between refreshes, and a quarter of what copying the state took.
  Shared<Catalog> catalog;
  PodTable pods;
  SharedPodParts pod_parts;  // Each pod's labels and constraints, shared.
  std::map<std::string, Node> nodes;
  SharedNodeParts node_parts;                         // Each node's label keys and values, shared.
  std::map<std::string, DaemonSet> daemonsets;        // Keyed by namespace/name.
  std::map<std::string, PersistentVolumeClaim> pvcs;  // Keyed by namespace/name.
  std::map<std::string, PersistentVolume> pvs;
  std::map<std::string, StorageClass> storage_classes;
  std::map<std::string, CsiNode> csi_nodes;
  std::map<std::string, PodDisruptionBudget> pdbs;  // Keyed by namespace/name.
  // NodeOverlays by name, each one's status as last published (PatchNodeOverlayStatus), and the
  // catalogs they make per NodePool.
  std::map<std::string, NodeOverlay> nodeoverlays;
  std::map<std::string, NodeOverlayStatus> nodeoverlay_status;
  OverlaidCatalogs overlaid;
  // WatchesSynced: a simulated world is always in sync; the kube adapter says when it is not.
  bool watches_synced = true;
  friend bool operator==(const ClusterView&, const ClusterView&) = default;
};

// The NodeClaims and their lifecycle: launch, registration, initialisation, termination and the
// NodePools' status. Written by reducers/lifecycle.cc and reducers/termination.cc; the other
// reducers ask them (AddClaim, BeginDeletion, Nominate, ...).
struct ClaimLifecycle {
  std::map<std::string, NodeClaim> nodeclaims;
  SharedClaimParts claim_parts;  // Each claim's requirements and candidate types, shared.
  ClaimsByNode claims_by_node;
  // Per NodeClaim waiting to launch again (NodeClaim::relaunch_at), the launch it will send.
  std::map<std::string, Command> relaunches;
  // Offerings that failed with a capacity error, keyed "type/zone/capacity-type", until when.
  std::map<std::string, Instant> unavailable_offerings;
  // NodeRegistrationHealthy per pool: false after a registration timeout, true once a claim
  // of the pool registers. Absent: unknown.
  std::map<std::string, bool> registration_healthy;
  Instant last_instance_listing;  // When InstancesListed last arrived.
  // NodeClaims the core finished (finalizer removed), by name, and when; kept an hour. A late
  // watch event about one of them is not mistaken for a claim to adopt.
  std::map<std::string, Instant> finished_nodeclaims;
  std::uint64_t next_nodeclaim = 1;
  // NodePool status as last published (PatchNodePoolStatus), by pool name.
  std::map<std::string, NodePoolStatus> nodepool_status;
  friend bool operator==(const ClaimLifecycle&, const ClaimLifecycle&) = default;
};

// The EC2NodeClasses' lifecycle. Written by reducers/nodeclass.cc.
struct NodeClassLifecycle {
  // Each EC2NodeClass's latest NodeClassResolved, by name: what its status is written from.
  std::map<std::string, NodeClassResolution> resolutions;
  // Deleted EC2NodeClasses waiting on their NodeClaims or their cleanup, by name.
  std::map<std::string, NodeClassTermination> terminations;
  friend bool operator==(const NodeClassLifecycle&, const NodeClassLifecycle&) = default;
};

// Disruption: the graceful methods' 10 s pass, validation, replacements, interruption messages
// and pod deletion costs. Written by reducers/disruption/ and reducers/interruption.cc.
struct DisruptionState {
  // The last 10 s pass (none yet: nullopt), the latest decision proposed, and the decision
  // waiting out its 15 s validation, if any.
  std::optional<Instant> last_pass;
  DisruptionProposal latest_proposal;
  std::optional<PendingDisruption> pending;
  std::vector<ReplacementWait> replacing;
  std::uint64_t last_digest = 0;  // Of the last "nothing to do" record, to not repeat it.
  // Karpenter's consolidation state: State::cluster_generation when the last pass found nothing
  // to consolidate, and when. While the count stands still, consolidation is not recomputed, for
  // at most kConsolidationRecheck, or (beyond Karpenter, which waits for its recheck) until
  // recheck_at: the earliest a blocker that pass found runs out on its own (a do-not-disrupt
  // duration, a nomination), if one does.
  std::uint64_t consolidated_generation = 0;
  std::optional<Instant> consolidated_at;
  std::optional<Instant> recheck_at;
  // PodDeletionCostManagement: when pods' deletion costs were last ranked (at most every minute,
  // at least every 5 minutes) and the cluster_generation they were ranked at.
  std::optional<Instant> deletion_cost_ranked_at;
  std::uint64_t deletion_cost_generation = 0;
  // Interruption messages handled, by message id, and when: SQS delivers at least once, so a
  // message seen again (say after a restart) is only acknowledged again. Kept for a day.
  std::map<std::string, Instant> handled_messages;
  friend bool operator==(const DisruptionState&, const DisruptionState&) = default;
};

struct State {
  Seq last_seq{0};
  Instant now;
  bool started = false;
  std::uint64_t seed = 0;
  std::string version;
  Settings settings;

  ClusterView cluster;
  ClaimLifecycle lifecycle;
  NodeClassLifecycle nodeclass;
  BatchWindow batch;  // Provisioning's batch window. Written by reducers/provisioning.cc.
  DisruptionState disruption;

  // The fold's own bookkeeping (reducers/step.cc, and Issue, Decide and Announce): commands
  // issued and not answered yet, the counters that name commands and decisions, the inputs
  // refused, the Event limits, and the count of changes consolidation watches.
  std::map<CommandId, Command> inflight;
  CommandId next_command{1};
  DecisionId next_decision{1};
  std::uint64_t rejected_inputs = 0;
  EventLimits event_limits;
  // Bumped by every change that could change what consolidation finds.
  std::uint64_t cluster_generation = 0;
  IdleNotes idle;
  SelfChecks checks;

  friend bool operator==(const State&, const State&) = default;
};

// A 64-bit hash of the whole state, stable across runs, machines and builds.
std::uint64_t StateHash(const State& state);
// Drift hashes (Karpenter's karpenter.sh/nodepool-hash and the EC2NodeClass hash): what a
// NodeClaim was launched from. Requirements are not hashed; they drift by no longer matching.
std::uint64_t TemplateHash(const NodePool& pool);
std::uint64_t NodeClassHash(const NodeClass& nodeclass);

// The key of a namespaced object ("namespace/name") and of an offering ("type/zone/capacity").
std::string PodKey(const std::string& ns, const std::string& name);
std::string OfferingKey(const std::string& type, const std::string& zone,
                        const std::string& capacity_type);

}  // namespace tenon
