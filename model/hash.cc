// StateHash: XXH3-64 over a canonical, length-prefixed walk of the state. Maps are ordered,
// integers are fed as little-endian 64-bit values, so the hash is the same on every machine.
#include <xxhash.h>

#include <bit>
#include <cassert>
#include <cstring>
#include <string_view>

#include "model/fields.h"
#include "model/state.h"

namespace tenon {
namespace {

static_assert(std::endian::native == std::endian::little, "hash assumes a little-endian host");

class Hasher {
 public:
  Hasher() : state_(XXH3_createState()) {
    assert(state_ != nullptr);
    XXH3_64bits_reset(state_);
  }
  ~Hasher() { XXH3_freeState(state_); }
  Hasher(const Hasher&) = delete;
  Hasher& operator=(const Hasher&) = delete;

  void Int(std::int64_t v) { Put(&v, sizeof v); }
  void Uint(std::uint64_t v) { Put(&v, sizeof v); }
  void Str(std::string_view s) {
    Uint(s.size());
    Put(s.data(), s.size());
  }
  std::uint64_t Digest() {
    Flush();
    return XXH3_64bits_digest(state_);
  }

 private:
  // The walk feeds millions of 8-byte fields; XXH3's streaming digest does not depend on how
  // its input is cut, so they are gathered here and handed over a buffer at a time.
  static constexpr std::size_t kBufferBytes = 16 * 1024;
  void Put(const void* data, std::size_t n) {
    if (n > kBufferBytes - used_) {
      Flush();
      if (n >= kBufferBytes) {
        XXH3_64bits_update(state_, data, n);
        return;
      }
    }
    std::memcpy(buffer_ + used_, data, n);
    used_ += n;
  }
  void Flush() {
    if (used_ > 0) XXH3_64bits_update(state_, buffer_, used_);
    used_ = 0;
  }
  XXH3_state_t* state_;
  std::size_t used_ = 0;
  unsigned char buffer_[kBufferBytes];
};

template <class Tag, class Rep>
void H(Hasher& h, const Strong<Tag, Rep>& v) {
  h.Uint(static_cast<std::uint64_t>(v.value));
}
void H(Hasher& h, Instant v) {
  h.Uint(static_cast<std::uint64_t>(v.value));
}
// Times that may be absent are fed as the log stores them (OrStoredNone, OrStoredNever in
// model/units.h), so states hash as they did before those times were optional.
void H(Hasher& h, const std::string& v) {
  h.Str(v);
}
void H(Hasher& h, std::string_view v) {
  h.Str(v);
}
void H(Hasher& h, bool v) {
  h.Uint(v ? 1 : 0);
}
void H(Hasher& h, std::int64_t v) {
  h.Int(v);
}
void H(Hasher& h, std::int32_t v) {
  h.Int(v);
}
void H(Hasher& h, std::uint64_t v) {
  h.Uint(v);
}
template <class E>
requires std::is_enum_v<E>
void H(Hasher& h, E v) {
  h.Uint(static_cast<std::uint64_t>(v));
}
template <class T>
void H(Hasher& h, const std::optional<T>& v) {
  h.Uint(v.has_value());
  if (v) H(h, *v);
}
template <class T>
void H(Hasher& h, const std::vector<T>& v) {
  h.Uint(v.size());
  for (const auto& item : v) H(h, item);
}
template <class K, class V>
void H(Hasher& h, const std::map<K, V>& m) {
  h.Uint(m.size());
  for (const auto& [k, v] : m) {
    H(h, k);
    H(h, v);
  }
}
// The same walk as a Labels map with the same contents.
void H(Hasher& h, const NodeLabels& labels) {
  h.Uint(labels.size());
  for (const auto& [key, value] : labels) {
    h.Str(key.str());
    h.Str(value.str());
  }
}
void H(Hasher& h, const Pod& p);
void H(Hasher& h, const PodTable& t) {
  h.Uint(t.size());
  for (const auto& [k, v] : t) {
    H(h, k);
    H(h, v);
  }
}
template <class... Ts>
void H(Hasher& h, const std::variant<Ts...>& v) {
  h.Uint(v.index());
  std::visit([&](const auto& alt) { H(h, alt); }, v);
}
template <class... Ts>
void All(Hasher& h, const Ts&... fields) {
  (H(h, fields), ...);
}

void H(Hasher& h, const Resources& r) {
  All(h, r.cpu, r.memory, r.pods, r.extended);
}
void H(Hasher& h, const Requirement& r) {
  All(h, r.key, r.op, r.values, r.min_values);
}
void H(Hasher& h, const Taint& t) {
  All(h, t.key, t.value, t.effect);
}
void H(Hasher& h, const Toleration& t) {
  All(h, t.key, t.op_exists, t.value, t.effect);
}
void H(Hasher& h, const Settings& s) {
  All(h, s.cluster_name, s.batch_idle, s.batch_max, s.vm_memory_overhead_permille,
      s.ignore_preferences, s.min_values_best_effort);
  All(h, s.spot_to_spot_consolidation, s.consolidation_min_savings,
      s.consolidation_min_savings_percent, s.soft_expiration, s.reserved_enis);
  if (!s.cluster_endpoint.empty() || !s.cluster_ca_bundle.empty()) {
    All(h, s.cluster_endpoint, s.cluster_ca_bundle);  // Added later: hashed when set.
  }
  if (s.static_capacity) All(h, std::string_view("static_capacity"), true);  // Likewise.
  if (s.node_overlay) All(h, std::string_view("node_overlay"), true);
  if (s.node_repair) All(h, std::string_view("node_repair"), true);
  if (s.pod_deletion_cost) All(h, std::string_view("pod_deletion_cost"), true);
}
void H(Hasher& h, const LabelSelector& s) {
  All(h, s.match_labels, s.match_expressions);
}
void H(Hasher& h, const NodeSelectorTerm& t) {
  All(h, t.requirements, t.weight);
}
void H(Hasher& h, const PodAffinityTerm& t) {
  All(h, t.selector, t.namespaces, t.all_namespaces, t.topology_key, t.match_label_keys, t.weight);
}
void H(Hasher& h, const TopologySpreadConstraint& c) {
  All(h, c.max_skew, c.topology_key, c.do_not_schedule, c.selector, c.min_domains,
      c.node_affinity_honor, c.node_taints_honor, c.match_label_keys);
}
void H(Hasher& h, const HostPort& p) {
  All(h, p.port, p.protocol, p.host_ip);
}
// The fields in the order the hash has always taken them, the phase as its text, so a state
// hashes the same however its pods are laid out in memory.
void H(Hasher& h, const Pod& p) {
  const PodConstraints& c = *p.constraints;
  All(h, p.ns, p.name, p.uid, p.requests, p.node_name.str(), p.unschedulable,
      std::string_view(PodPhaseText(p.phase)), p.owner_kind, p.created, *p.labels, c.node_selector,
      c.tolerations);
  All(h, c.node_affinity_required, c.node_affinity_preferred, c.pod_affinity_required,
      c.pod_affinity_preferred, c.pod_anti_affinity_required, c.pod_anti_affinity_preferred,
      c.topology_spread, c.volume_claims, c.host_ports, p.nominated_node);
  All(h, p.do_not_disrupt, OrStoredNone(p.do_not_disrupt_for), p.priority_class,
      p.termination_grace, p.priority, p.deletion_cost);
  if (p.deletion) H(h, *p.deletion);  // Added later: hashed only when set (see StateHash).
  if (p.disruption_cost) All(h, std::string_view("disruption_cost"), *p.disruption_cost);
}
void H(Hasher& h, const PodDisruptionBudget& b) {
  All(h, b.ns, b.name, b.selector, b.disruptions_allowed);
}
void H(Hasher& h, const ReplacementWait& w) {
  // The method by its name, as it was hashed when it was a string.
  All(h, std::string_view(Name(w.method)), w.candidates, w.replacements, w.started, w.reason,
      w.draining);
}
void H(Hasher& h, const DaemonSet& d) {
  All(h, d.ns, d.name, d.pod);
}
void H(Hasher& h, const PersistentVolumeClaim& c) {
  All(h, c.ns, c.name, c.storage_class, c.volume_name);
}
void H(Hasher& h, const PersistentVolume& v) {
  All(h, v.name, v.csi_driver, v.node_affinity);
}
void H(Hasher& h, const StorageClass& c) {
  All(h, c.name, c.provisioner, c.wait_for_first_consumer, c.allowed_topologies);
}
void H(Hasher& h, const CsiNode& c) {
  All(h, c.name, c.attach_limits);
}
void H(Hasher& h, const NodeCondition& c) {
  All(h, c.type, c.status, c.since);
}
void H(Hasher& h, const Node& n) {
  All(h, n.name, n.provider_id, n.labels, n.taints, n.ready, n.allocatable, n.created,
      n.volumes_attached, n.do_not_disrupt);
  if (n.deleting) H(h, n.deleting);  // Added later: hashed only when set.
  if (!n.unhealthy.empty()) All(h, std::string_view("unhealthy"), n.unhealthy);  // Likewise.
}
void H(Hasher& h, const DisruptionBudget& b) {
  All(h, b.nodes, b.schedule, b.duration, b.reasons);
}
void H(Hasher& h, const NodePoolLimits& l) {
  All(h, l.cpu, l.memory, l.nodes, l.extended);
}
void H(Hasher& h, const NodePool& p) {
  All(h, p.name, p.weight, p.labels, p.requirements, p.taints, p.startup_taints, p.nodeclass,
      p.limits, OrStoredNever(p.expire_after), OrStoredNever(p.termination_grace_period));
  All(h, p.consolidation_policy, OrStoredNever(p.consolidate_after), p.budgets);
  if (p.replicas) All(h, std::string_view("replicas"), *p.replicas);  // Added later: when set.
}
void H(Hasher& h, const ResolvedAmi& a) {
  All(h, a.id, a.name, a.arch, a.created);
}
void H(Hasher& h, const ResolvedSubnet& s) {
  All(h, s.id, s.zone, s.zone_id, s.free_ips);
}
void H(Hasher& h, const ResolvedSecurityGroup& g) {
  All(h, g.id, g.name);
}
void H(Hasher& h, const NodeClassResolution& r) {
  All(h, r.amis, r.subnets, r.security_groups, r.instance_profile, r.reason, r.message);
}
void H(Hasher& h, const NodeClass& c) {
  All(h, c.name, c.ami_family, c.role, c.ready, c.max_pods, c.pods_per_core, c.amis, c.subnets,
      c.security_groups);
  if (c.terminating) H(h, c.terminating);  // Added later: hashed only when set.
  if (!c.zones.empty() || !c.archs.empty()) All(h, c.zones, c.archs);
  if (!c.user_data.empty() || !c.tags.empty()) All(h, c.user_data, c.tags);
  if (c.finalizer) All(h, std::string_view("finalizer"), c.finalizer);
}
void H(Hasher& h, const Offering& o) {
  All(h, o.zone, o.capacity_type, o.price, o.available);
}
void H(Hasher& h, const InstanceType& t) {
  All(h, t.name, t.arch, t.cpu, t.memory, t.max_enis, t.ipv4_per_eni, t.gpu_count, t.bare_metal,
      t.offerings);
  All(h, t.gpu_name, t.gpu_manufacturer, t.gpu_memory, t.accelerator_count, t.cpu_manufacturer,
      t.hypervisor, t.local_nvme_gib);
  // Added later: hashed only when set, each behind its name.
  if (!t.labels.empty()) All(h, std::string_view("labels"), t.labels);
  if (!t.extended.empty()) All(h, std::string_view("extended"), t.extended);
  if (t.allocatable) All(h, std::string_view("allocatable"), *t.allocatable);
}
void H(Hasher& h, const CatalogEntry& e) {
  All(h, e.type, e.allocatable, e.labels);
}
void H(Hasher& h, const NodeClaim& c) {
  All(h, c.name, c.nodepool, c.nodeclass, *c.requirements, c.requests, *c.instance_types, c.phase,
      c.provider_id, c.instance_id, c.instance_type, c.zone, c.capacity_type, c.price, c.node_name,
      c.allocatable, c.created, c.launched, c.registered, c.initialized);
  All(h, c.deleting, c.deleting_since, c.deleting_reason, c.instance_gone, c.evictions_refused,
      c.evict_after, c.last_pod_change, c.nodepool_hash, c.nodeclass_hash);
  All(h, c.image_id, c.subnet_id, c.security_groups, c.nominated_until, c.disruption_conditions);
  // Fed only when set, so a snapshot written before launches were retried hashes as it did.
  if (c.launch_failures != 0 || c.relaunch_at) {
    All(h, c.launch_failures, OrStoredNone(c.relaunch_at));
  }
  if (c.termination_deadline)
    All(h, std::string_view("termination_deadline"), *c.termination_deadline);
}
void H(Hasher& h, const BatchWindow& b) {
  All(h, b.open, b.opened, b.last_pod);
}
void H(Hasher& h, const CreateNodeClaim& c) {
  H(h, c.claim);
}
void H(Hasher& h, const DeleteNodeClaim& c) {
  H(h, c.name);
}
void H(Hasher& h, const LaunchOverride& o) {
  All(h, o.instance_type, o.zone, o.capacity_type, o.price);
  if (!o.subnet.empty() || !o.image.empty()) All(h, o.subnet, o.image);  // Added later.
}
void H(Hasher& h, const LaunchNode& n) {
  All(h, n.ami_family, n.instance_profile, n.security_groups, n.user_data, n.max_pods, n.labels,
      n.taints, n.tags);
  All(h, n.cluster_name, n.cluster_endpoint, n.cluster_ca_bundle);
}
void H(Hasher& h, const LaunchInstance& c) {
  All(h, c.nodeclaim, c.nodepool, c.nodeclass, c.client_token, c.capacity_type, c.overrides, c.tags,
      c.allocation_strategy);
  if (c.node != LaunchNode{}) H(h, c.node);  // Added later: hashed when set.
}
void H(Hasher& h, const PatchNode& c) {
  All(h, c.node_name, c.add_labels, c.remove_taints, c.add_taints);
  if (!c.owner_nodeclaim.empty()) H(h, c.owner_nodeclaim);  // Added later: hashed when set.
}
void H(Hasher& h, const EvictPod& c) {
  All(h, c.ns, c.name, c.nodeclaim);
}
void H(Hasher& h, const DeletePod& c) {
  All(h, c.ns, c.name, c.nodeclaim);
}
void H(Hasher& h, const TerminateInstance& c) {
  All(h, c.instance_id, c.nodeclaim);
}
void H(Hasher& h, const RemoveFinalizer& c) {
  All(h, c.nodeclaim, c.node_name);
}
void H(Hasher& h, const NodePoolStatus& s) {
  All(h, s.registration_healthy, s.nodes, s.resources);
  // Added later: hashed only when set.
  if (s.validated || !s.nodeclass_unready.empty()) All(h, s.validated, s.nodeclass_unready);
}
void H(Hasher& h, const DeleteQueueMessage& c) {
  H(h, c.message_id);
}
void H(Hasher& h, const TagInstance& c) {
  All(h, c.instance_id, c.nodeclaim, c.tags);
}
void H(Hasher& h, const PatchNodeClassStatus& c) {
  All(h, c.nodeclass, c.resolution);
}
void H(Hasher& h, const SetNodeClassFinalizer& c) {
  All(h, c.nodeclass, c.present);
}
void H(Hasher& h, const EnsureInstanceProfile& c) {
  All(h, c.nodeclass, c.role, c.cluster_name);
}
void H(Hasher& h, const DeleteNodeClassResources& c) {
  All(h, c.nodeclass, c.cluster_name, c.instance_profile);
}
void H(Hasher& h, const RecordKubeEvent& c) {
  All(h, c.object.api_version, c.object.kind, c.object.ns, c.object.name, c.type, c.reason,
      c.message);
}
void H(Hasher& h, const NodeClassTermination& t) {
  All(h, t.waiting_message, t.waiting_at, t.retry_at);
}
void H(Hasher& h, const EventLimits& l) {
  All(h, l.recorded, l.nominated_milli_tokens, l.nominated_at, l.pruned_at);
}
void H(Hasher& h, const PatchNodeClaimStatus& c) {
  All(h, c.nodeclaim, c.condition, c.status, c.reason, c.provider_id, c.node_name, c.labels,
      c.image_id, c.capacity, c.allocatable);
}
void H(Hasher& h, const PatchNodePoolStatus& c) {
  All(h, c.nodepool, c.status);
}
void H(Hasher& h, const PriceChange& c) {
  All(h, c.kind, c.value);
}
void H(Hasher& h, const NodeOverlay& o) {
  All(h, o.name, o.weight, o.requirements, o.price, o.capacity, o.invalid);
}
void H(Hasher& h, const NodeOverlayStatus& s) {
  All(h, s.valid, s.reason, s.message);
}
void H(Hasher& h, const PatchNodeOverlayStatus& c) {
  All(h, c.overlay, c.status);
}
void H(Hasher& h, const PatchPodDeletionCost& c) {
  All(h, c.ns, c.name, c.uid, c.cost);
}
void H(Hasher& h, const Command& c) {
  All(h, c.id, c.cause, c.body);
}

// The field count of every type the walk above takes field by field: a field added to one of
// them fails the build here until the walk takes it too (or says why it may not) and the count
// is raised. A field the hash misses is one replay cannot check.
static_assert(FieldCount<Resources>() == 4, "Resources: hash the field added");
static_assert(FieldCount<Requirement>() == 4, "Requirement: hash the field added");
static_assert(FieldCount<Taint>() == 3, "Taint: hash the field added");
static_assert(FieldCount<Toleration>() == 4, "Toleration: hash the field added");
static_assert(FieldCount<Settings>() == 17, "Settings: hash the field added");
static_assert(FieldCount<LabelSelector>() == 2, "LabelSelector: hash the field added");
static_assert(FieldCount<NodeSelectorTerm>() == 2, "NodeSelectorTerm: hash the field added");
static_assert(FieldCount<PodAffinityTerm>() == 6, "PodAffinityTerm: hash the field added");
static_assert(FieldCount<TopologySpreadConstraint>() == 8,
              "TopologySpreadConstraint: hash the field added");
static_assert(FieldCount<HostPort>() == 3, "HostPort: hash the field added");
static_assert(FieldCount<Pod>() == 20, "Pod: hash the field added");
static_assert(FieldCount<PodDisruptionBudget>() == 4, "PodDisruptionBudget: hash the field added");
static_assert(FieldCount<ReplacementWait>() == 6, "ReplacementWait: hash the field added");
static_assert(FieldCount<DaemonSet>() == 3, "DaemonSet: hash the field added");
static_assert(FieldCount<PersistentVolumeClaim>() == 4,
              "PersistentVolumeClaim: hash the field added");
static_assert(FieldCount<PersistentVolume>() == 3, "PersistentVolume: hash the field added");
static_assert(FieldCount<StorageClass>() == 4, "StorageClass: hash the field added");
static_assert(FieldCount<CsiNode>() == 2, "CsiNode: hash the field added");
static_assert(FieldCount<NodeCondition>() == 3, "NodeCondition: hash the field added");
static_assert(FieldCount<Node>() == 11, "Node: hash the field added");
static_assert(FieldCount<DisruptionBudget>() == 4, "DisruptionBudget: hash the field added");
static_assert(FieldCount<NodePoolLimits>() == 4, "NodePoolLimits: hash the field added");
static_assert(FieldCount<NodePool>() == 14, "NodePool: hash the field added");
static_assert(FieldCount<ResolvedAmi>() == 4, "ResolvedAmi: hash the field added");
static_assert(FieldCount<ResolvedSubnet>() == 4, "ResolvedSubnet: hash the field added");
static_assert(FieldCount<ResolvedSecurityGroup>() == 2,
              "ResolvedSecurityGroup: hash the field added");
static_assert(FieldCount<NodeClassResolution>() == 6, "NodeClassResolution: hash the field added");
static_assert(FieldCount<NodeClass>() == 15, "NodeClass: hash the field added");
static_assert(FieldCount<Offering>() == 4, "Offering: hash the field added");
static_assert(FieldCount<InstanceType>() == 19, "InstanceType: hash the field added");
static_assert(FieldCount<CatalogEntry>() == 3, "CatalogEntry: hash the field added");
static_assert(FieldCount<NodeClaim>() == 36, "NodeClaim: hash the field added");
static_assert(FieldCount<BatchWindow>() == 3, "BatchWindow: hash the field added");
static_assert(FieldCount<CreateNodeClaim>() == 1, "CreateNodeClaim: hash the field added");
static_assert(FieldCount<DeleteNodeClaim>() == 1, "DeleteNodeClaim: hash the field added");
static_assert(FieldCount<LaunchOverride>() == 6, "LaunchOverride: hash the field added");
static_assert(FieldCount<LaunchNode>() == 11, "LaunchNode: hash the field added");
static_assert(FieldCount<LaunchInstance>() == 9, "LaunchInstance: hash the field added");
static_assert(FieldCount<PatchNode>() == 5, "PatchNode: hash the field added");
static_assert(FieldCount<EvictPod>() == 3, "EvictPod: hash the field added");
static_assert(FieldCount<DeletePod>() == 3, "DeletePod: hash the field added");
static_assert(FieldCount<TerminateInstance>() == 2, "TerminateInstance: hash the field added");
static_assert(FieldCount<RemoveFinalizer>() == 2, "RemoveFinalizer: hash the field added");
static_assert(FieldCount<NodePoolStatus>() == 5, "NodePoolStatus: hash the field added");
static_assert(FieldCount<DeleteQueueMessage>() == 1, "DeleteQueueMessage: hash the field added");
static_assert(FieldCount<TagInstance>() == 3, "TagInstance: hash the field added");
static_assert(FieldCount<PatchNodeClassStatus>() == 2,
              "PatchNodeClassStatus: hash the field added");
static_assert(FieldCount<SetNodeClassFinalizer>() == 2,
              "SetNodeClassFinalizer: hash the field added");
static_assert(FieldCount<EnsureInstanceProfile>() == 3,
              "EnsureInstanceProfile: hash the field added");
static_assert(FieldCount<DeleteNodeClassResources>() == 3,
              "DeleteNodeClassResources: hash the field added");
static_assert(FieldCount<RecordKubeEvent>() == 4, "RecordKubeEvent: hash the field added");
static_assert(FieldCount<NodeClassTermination>() == 3,
              "NodeClassTermination: hash the field added");
static_assert(FieldCount<EventLimits>() == 4, "EventLimits: hash the field added");
static_assert(FieldCount<PatchNodeClaimStatus>() == 10,
              "PatchNodeClaimStatus: hash the field added");
static_assert(FieldCount<PatchNodePoolStatus>() == 2, "PatchNodePoolStatus: hash the field added");
static_assert(FieldCount<PriceChange>() == 2, "PriceChange: hash the field added");
static_assert(FieldCount<NodeOverlay>() == 6, "NodeOverlay: hash the field added");
static_assert(FieldCount<NodeOverlayStatus>() == 3, "NodeOverlayStatus: hash the field added");
static_assert(FieldCount<PatchNodeOverlayStatus>() == 2,
              "PatchNodeOverlayStatus: hash the field added");
static_assert(FieldCount<PatchPodDeletionCost>() == 4,
              "PatchPodDeletionCost: hash the field added");
static_assert(FieldCount<Command>() == 3, "Command: hash the field added");
static_assert(FieldCount<PendingDisruption>() == 2, "PendingDisruption: hash the field added");
static_assert(FieldCount<DisruptionProposal>() == 2, "DisruptionProposal: hash the field added");
// The State, slice by slice. The shared parts and indexes (the cluster's pod_parts and
// node_parts, the lifecycle's claim_parts and claims_by_node) are made from the fields StateHash
// takes and are not hashed themselves, nor are the overlaid catalogs (made from the catalog, the
// NodePools and the NodeOverlays), the idle notes (what a walk found settled) and the self
// checks (what tests ask the core to verify).
static_assert(FieldCount<ClusterView>() == 14 + 3, "ClusterView: hash the field added");
static_assert(FieldCount<ClaimLifecycle>() == 8 + 2, "ClaimLifecycle: hash the field added");
static_assert(FieldCount<NodeClassLifecycle>() == 2, "NodeClassLifecycle: hash the field added");
static_assert(FieldCount<DisruptionState>() == 11, "DisruptionState: hash the field added");
static_assert(FieldCount<State>() == 17 + 2, "State: hash the field added (StateHash)");

}  // namespace

std::uint64_t TemplateHash(const NodePool& p) {
  Hasher h;
  All(h, p.labels, p.taints, p.startup_taints, p.nodeclass);
  return h.Digest();
}

std::uint64_t NodeClassHash(const NodeClass& c) {
  Hasher h;
  All(h, c.ami_family, c.role, c.max_pods, c.pods_per_core);
  return h.Digest();
}

std::uint64_t StateHash(const State& s) {
  Hasher h;
  All(h, s.last_seq, s.now, s.started, s.seed, s.version, s.settings);
  All(h, s.cluster.nodepools, s.cluster.nodeclasses, *s.cluster.catalog, s.cluster.pods,
      s.cluster.nodes, s.lifecycle.nodeclaims, s.lifecycle.unavailable_offerings);
  All(h, s.batch, s.inflight, s.next_command, s.next_decision, s.lifecycle.next_nodeclaim,
      s.rejected_inputs);
  if (!s.lifecycle.relaunches.empty())
    All(h, s.lifecycle.relaunches);  // As launch_failures (NodeClaim's).
  All(h, s.cluster.daemonsets, s.cluster.pvcs, s.cluster.pvs, s.cluster.storage_classes,
      s.cluster.csi_nodes);
  All(h, s.lifecycle.nodepool_status, s.lifecycle.last_instance_listing,
      s.lifecycle.registration_healthy);
  // The pending decision and the latest proposal as the loose fields they once were.
  const std::optional<PendingDisruption>& pending = s.disruption.pending;
  const std::string_view pending_method = pending ? Name(pending->method) : "";
  All(h, OrStoredNone(s.disruption.last_pass), pending_method,
      pending ? pending->nodeclaims : std::vector<std::string>{}, s.disruption.latest_proposal.at,
      s.disruption.last_digest);
  All(h, s.cluster.pdbs, s.disruption.latest_proposal.replacements, s.disruption.replacing,
      s.disruption.handled_messages);
  All(h, s.cluster.watches_synced);
  // Fields added later are hashed only when set, so snapshots written before them keep their
  // stored hash and an upgraded controller recovers from them.
  if (!s.lifecycle.finished_nodeclaims.empty()) All(h, s.lifecycle.finished_nodeclaims);
  if (s.cluster_generation != 0 || s.disruption.consolidated_generation != 0) {
    All(h, s.cluster_generation, s.disruption.consolidated_generation,
        OrStoredNone(s.disruption.consolidated_at));
  }
  if (s.disruption.recheck_at) All(h, *s.disruption.recheck_at);
  if (!s.nodeclass.resolutions.empty()) {
    All(h, std::string_view("nodeclass_resolutions"), s.nodeclass.resolutions);
  }
  if (!s.nodeclass.terminations.empty()) {
    All(h, std::string_view("nodeclass_terminations"), s.nodeclass.terminations);
  }
  if (s.event_limits != EventLimits{}) All(h, std::string_view("event_limits"), s.event_limits);
  if (!s.cluster.nodeoverlays.empty())
    All(h, std::string_view("nodeoverlays"), s.cluster.nodeoverlays);
  if (s.disruption.deletion_cost_ranked_at) {
    All(h, std::string_view("deletion_cost"), *s.disruption.deletion_cost_ranked_at,
        s.disruption.deletion_cost_generation);
  }
  if (!s.cluster.nodeoverlay_status.empty()) {
    All(h, std::string_view("nodeoverlay_status"), s.cluster.nodeoverlay_status);
  }
  return h.Digest();
}

std::uint64_t ValueHash(const Labels& labels) {
  Hasher h;
  H(h, labels);
  return h.Digest();
}

std::uint64_t ValueHash(const PodConstraints& c) {
  Hasher h;
  All(h, c.node_selector, c.tolerations, c.node_affinity_required, c.node_affinity_preferred);
  All(h, c.pod_affinity_required, c.pod_affinity_preferred, c.pod_anti_affinity_required,
      c.pod_anti_affinity_preferred, c.topology_spread, c.volume_claims, c.host_ports);
  return h.Digest();
}

std::uint64_t ValueHash(const std::string& text) {
  Hasher h;
  H(h, text);
  return h.Digest();
}

std::uint64_t ValueHash(const std::vector<Requirement>& requirements) {
  Hasher h;
  H(h, requirements);
  return h.Digest();
}

std::uint64_t ValueHash(const std::vector<std::string>& texts) {
  Hasher h;
  H(h, texts);
  return h.Digest();
}

}  // namespace tenon
