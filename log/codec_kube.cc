// The codec of the Kubernetes side of the model: labels, resources, requirements, taints,
// selectors, pods and what they claim, nodes and NodePools.
#include "log/codec_parts.h"

namespace tenon::log::parts {

Labels GetLabels(capnp::List<s::KeyValue>::Reader in) {
  Labels labels;
  for (auto kv : in) labels[S(kv.getKey())] = S(kv.getValue());
  return labels;
}

void PutTexts(capnp::List<capnp::Text>::Builder out, const std::vector<std::string>& values) {
  for (unsigned i = 0; i < values.size(); ++i) out.set(i, T(values[i]));
}
std::vector<std::string> GetTexts(capnp::List<capnp::Text>::Reader in) {
  std::vector<std::string> out;
  out.reserve(in.size());
  for (auto t : in) out.push_back(S(t));
  return out;
}

void Put(capnp::List<s::KeyInt>::Builder out, const std::map<std::string, std::int64_t>& m) {
  unsigned i = 0;
  for (const auto& [k, v] : m) {
    out[i].setKey(T(k));
    out[i].setValue(v);
    ++i;
  }
}
std::map<std::string, std::int64_t> GetInts(capnp::List<s::KeyInt>::Reader in) {
  std::map<std::string, std::int64_t> out;
  for (auto kv : in) out[S(kv.getKey())] = kv.getValue();
  return out;
}

void Put(s::Resources::Builder b, const Resources& r) {
  b.setCpuMillis(r.cpu.value);
  b.setMemoryBytes(r.memory.value);
  b.setPods(r.pods);
  Put(b.initExtended(r.extended.size()), r.extended);
}
Resources Get(s::Resources::Reader r) {
  return {Millicores{r.getCpuMillis()}, Bytes{r.getMemoryBytes()}, r.getPods(),
          GetInts(r.getExtended())};
}

void Put(s::Requirement::Builder b, const Requirement& r) {
  b.setKey(T(r.key));
  b.setOp(static_cast<s::RequirementOp>(r.op));
  PutTexts(b.initValues(r.values.size()), r.values);
  b.setMinValues(r.min_values);
}
Requirement Get(s::Requirement::Reader r) {
  auto op = CheckedEnum<RequirementOp>(static_cast<std::uint16_t>(r.getOp()), 5, "requirement op");
  return {S(r.getKey()), op, GetTexts(r.getValues()), r.getMinValues()};
}

TaintEffect GetEffect(s::TaintEffect e) {
  return CheckedEnum<TaintEffect>(static_cast<std::uint16_t>(e), 2, "taint effect");
}
void Put(s::Taint::Builder b, const Taint& t) {
  b.setKey(T(t.key));
  b.setValue(T(t.value));
  b.setEffect(static_cast<s::TaintEffect>(t.effect));
}
Taint Get(s::Taint::Reader r) {
  return {S(r.getKey()), S(r.getValue()), GetEffect(r.getEffect())};
}

void Put(s::Toleration::Builder b, const Toleration& t) {
  b.setKey(T(t.key));
  b.setOpExists(t.op_exists);
  b.setValue(T(t.value));
  b.setHasEffect(t.effect.has_value());
  if (t.effect) b.setEffect(static_cast<s::TaintEffect>(*t.effect));
}
Toleration Get(s::Toleration::Reader r) {
  Toleration t{S(r.getKey()), r.getOpExists(), S(r.getValue()), std::nullopt};
  if (r.getHasEffect()) t.effect = GetEffect(r.getEffect());
  return t;
}

// ---- entities ----

void Put(s::LabelSelector::Builder b, const LabelSelector& v) {
  Put(b.initMatchLabels(v.match_labels.size()), v.match_labels);
  PutList(b.initMatchExpressions(v.match_expressions.size()), v.match_expressions);
}
LabelSelector Get(s::LabelSelector::Reader r) {
  return {GetLabels(r.getMatchLabels()), GetList<Requirement>(r.getMatchExpressions())};
}

void Put(s::NodeSelectorTerm::Builder b, const NodeSelectorTerm& v) {
  PutList(b.initRequirements(v.requirements.size()), v.requirements);
  b.setWeight(v.weight);
}
NodeSelectorTerm Get(s::NodeSelectorTerm::Reader r) {
  return {GetList<Requirement>(r.getRequirements()), r.getWeight()};
}

void Put(s::PodAffinityTerm::Builder b, const PodAffinityTerm& v) {
  Put(b.initSelector(), v.selector);
  PutTexts(b.initNamespaces(v.namespaces.size()), v.namespaces);
  b.setAllNamespaces(v.all_namespaces);
  b.setTopologyKey(T(v.topology_key));
  PutTexts(b.initMatchLabelKeys(v.match_label_keys.size()), v.match_label_keys);
  b.setWeight(v.weight);
}
PodAffinityTerm Get(s::PodAffinityTerm::Reader r) {
  return {Get(r.getSelector()),  GetTexts(r.getNamespaces()),     r.getAllNamespaces(),
          S(r.getTopologyKey()), GetTexts(r.getMatchLabelKeys()), r.getWeight()};
}

void Put(s::TopologySpreadConstraint::Builder b, const TopologySpreadConstraint& v) {
  b.setMaxSkew(v.max_skew);
  b.setTopologyKey(T(v.topology_key));
  b.setDoNotSchedule(v.do_not_schedule);
  Put(b.initSelector(), v.selector);
  b.setMinDomains(v.min_domains);
  b.setNodeAffinityHonor(v.node_affinity_honor);
  b.setNodeTaintsHonor(v.node_taints_honor);
  PutTexts(b.initMatchLabelKeys(v.match_label_keys.size()), v.match_label_keys);
}
TopologySpreadConstraint Get(s::TopologySpreadConstraint::Reader r) {
  return {r.getMaxSkew(),         S(r.getTopologyKey()),
          r.getDoNotSchedule(),   Get(r.getSelector()),
          r.getMinDomains(),      r.getNodeAffinityHonor(),
          r.getNodeTaintsHonor(), GetTexts(r.getMatchLabelKeys())};
}

void Put(s::HostPort::Builder b, const HostPort& v) {
  b.setPort(v.port);
  b.setProtocol(T(v.protocol));
  b.setHostIp(T(v.host_ip));
}
HostPort Get(s::HostPort::Reader r) {
  return {r.getPort(), S(r.getProtocol()), S(r.getHostIp())};
}

void Put(s::DaemonSet::Builder b, const DaemonSet& v) {
  b.setNamespace(T(v.ns));
  b.setName(T(v.name));
  Put(b.initPod(), v.pod);
}
DaemonSet Get(s::DaemonSet::Reader r) {
  return {S(r.getNamespace()), S(r.getName()), Get(r.getPod())};
}

void Put(s::PersistentVolumeClaim::Builder b, const PersistentVolumeClaim& v) {
  b.setNamespace(T(v.ns));
  b.setName(T(v.name));
  b.setStorageClass(T(v.storage_class));
  b.setVolumeName(T(v.volume_name));
}
PersistentVolumeClaim Get(s::PersistentVolumeClaim::Reader r) {
  return {S(r.getNamespace()), S(r.getName()), S(r.getStorageClass()), S(r.getVolumeName())};
}

void Put(s::PersistentVolume::Builder b, const PersistentVolume& v) {
  b.setName(T(v.name));
  b.setCsiDriver(T(v.csi_driver));
  PutList(b.initNodeAffinity(v.node_affinity.size()), v.node_affinity);
}
PersistentVolume Get(s::PersistentVolume::Reader r) {
  return {S(r.getName()), S(r.getCsiDriver()), GetList<NodeSelectorTerm>(r.getNodeAffinity())};
}

void Put(s::StorageClass::Builder b, const StorageClass& v) {
  b.setName(T(v.name));
  b.setProvisioner(T(v.provisioner));
  b.setWaitForFirstConsumer(v.wait_for_first_consumer);
  PutList(b.initAllowedTopologies(v.allowed_topologies.size()), v.allowed_topologies);
}
StorageClass Get(s::StorageClass::Reader r) {
  return {S(r.getName()), S(r.getProvisioner()), r.getWaitForFirstConsumer(),
          GetList<NodeSelectorTerm>(r.getAllowedTopologies())};
}

void Put(s::CsiNode::Builder b, const CsiNode& v) {
  b.setName(T(v.name));
  Put(b.initAttachLimits(v.attach_limits.size()), v.attach_limits);
}
CsiNode Get(s::CsiNode::Reader r) {
  return {S(r.getName()), GetInts(r.getAttachLimits())};
}

void Put(s::PodDisruptionBudget::Builder b, const PodDisruptionBudget& v) {
  b.setNamespace(T(v.ns));
  b.setName(T(v.name));
  Put(b.initSelector(), v.selector);
  b.setDisruptionsAllowed(v.disruptions_allowed);
}
PodDisruptionBudget Get(s::PodDisruptionBudget::Reader r) {
  return {S(r.getNamespace()), S(r.getName()), Get(r.getSelector()), r.getDisruptionsAllowed()};
}

void Put(s::ReplacementWait::Builder b, const ReplacementWait& v) {
  b.setMethod(Name(v.method));
  PutTexts(b.initCandidates(v.candidates.size()), v.candidates);
  PutTexts(b.initReplacements(v.replacements.size()), v.replacements);
  b.setStartedNs(v.started.value);
  b.setReason(T(v.reason));
  b.setDraining(v.draining);
}
ReplacementWait Get(s::ReplacementWait::Reader r) {
  return {Named(ParseDisruptionMethod, r.getMethod(), "disruption method"),
          GetTexts(r.getCandidates()),
          GetTexts(r.getReplacements()),
          Instant{r.getStartedNs()},
          S(r.getReason()),
          r.getDraining()};
}

void Put(s::Pod::Builder b, const Pod& p) {
  const PodConstraints& c = *p.constraints;
  b.setNamespace(T(p.ns));
  b.setName(T(p.name));
  b.setUid(T(p.uid));
  Put(b.initRequests(), p.requests);
  b.setNodeName(T(p.node_name));
  b.setUnschedulable(p.unschedulable);
  b.setPhase(PodPhaseText(p.phase));
  b.setOwnerKind(T(p.owner_kind));
  b.setCreatedNs(p.created.value);
  Put(b.initLabels(p.labels->size()), *p.labels);
  Put(b.initNodeSelector(c.node_selector.size()), c.node_selector);
  PutList(b.initTolerations(c.tolerations.size()), c.tolerations);
  PutList(b.initNodeAffinityRequired(c.node_affinity_required.size()), c.node_affinity_required);
  PutList(b.initNodeAffinityPreferred(c.node_affinity_preferred.size()), c.node_affinity_preferred);
  PutList(b.initPodAffinityRequired(c.pod_affinity_required.size()), c.pod_affinity_required);
  PutList(b.initPodAffinityPreferred(c.pod_affinity_preferred.size()), c.pod_affinity_preferred);
  PutList(b.initPodAntiAffinityRequired(c.pod_anti_affinity_required.size()),
          c.pod_anti_affinity_required);
  PutList(b.initPodAntiAffinityPreferred(c.pod_anti_affinity_preferred.size()),
          c.pod_anti_affinity_preferred);
  PutList(b.initTopologySpread(c.topology_spread.size()), c.topology_spread);
  PutTexts(b.initVolumeClaims(c.volume_claims.size()), c.volume_claims);
  PutList(b.initHostPorts(c.host_ports.size()), c.host_ports);
  b.setNominatedNode(T(p.nominated_node));
  b.setDoNotDisrupt(p.do_not_disrupt);
  b.setPriorityClass(T(p.priority_class));
  b.setTerminationGraceNs(p.termination_grace.value);
  b.setDoNotDisruptForNs(Ns(p.do_not_disrupt_for));
  PutOpt(b.initPriority(),
         p.priority ? std::optional<std::int64_t>(*p.priority) : std::optional<std::int64_t>());
  b.setDeletionCost(p.deletion_cost);
  if (p.disruption_cost) {  // Added later: written when set.
    PutOpt(b.initDisruptionCost(), std::optional<std::int64_t>(*p.disruption_cost));
  }
  b.setDeletionNs(Ns(p.deletion));
}
PodConstraints GetConstraints(s::Pod::Reader r) {
  PodConstraints c;
  c.node_selector = GetLabels(r.getNodeSelector());
  c.tolerations = GetList<Toleration>(r.getTolerations());
  c.node_affinity_required = GetList<NodeSelectorTerm>(r.getNodeAffinityRequired());
  c.node_affinity_preferred = GetList<NodeSelectorTerm>(r.getNodeAffinityPreferred());
  c.pod_affinity_required = GetList<PodAffinityTerm>(r.getPodAffinityRequired());
  c.pod_affinity_preferred = GetList<PodAffinityTerm>(r.getPodAffinityPreferred());
  c.pod_anti_affinity_required = GetList<PodAffinityTerm>(r.getPodAntiAffinityRequired());
  c.pod_anti_affinity_preferred = GetList<PodAffinityTerm>(r.getPodAntiAffinityPreferred());
  c.topology_spread = GetList<TopologySpreadConstraint>(r.getTopologySpread());
  c.volume_claims = GetTexts(r.getVolumeClaims());
  c.host_ports = GetList<HostPort>(r.getHostPorts());
  return c;
}
Pod Get(s::Pod::Reader r) {
  Pod p;
  p.ns = S(r.getNamespace());
  p.name = S(r.getName());
  p.uid = S(r.getUid());
  p.requests = Get(r.getRequests());
  p.node_name = S(r.getNodeName());
  p.unschedulable = r.getUnschedulable();
  p.phase = PodPhaseFrom(S(r.getPhase()));
  p.owner_kind = S(r.getOwnerKind());
  p.created = Instant{r.getCreatedNs()};
  p.labels = GetLabels(r.getLabels());
  p.constraints = GetConstraints(r);
  p.nominated_node = S(r.getNominatedNode());
  p.do_not_disrupt = r.getDoNotDisrupt();
  p.priority_class = S(r.getPriorityClass());
  p.termination_grace = Duration{r.getTerminationGraceNs()};
  p.do_not_disrupt_for = DurationOrNone(r.getDoNotDisruptForNs());
  if (auto priority = GetOpt<std::int64_t>(r.getPriority())) {
    p.priority = static_cast<std::int32_t>(*priority);
  }
  p.deletion_cost = r.getDeletionCost();
  if (auto cost = GetOpt<std::int64_t>(r.getDisruptionCost())) {
    if (*cost < INT32_MIN || *cost > INT32_MAX) throw CodecError("disruption cost out of range");
    p.disruption_cost = static_cast<std::int32_t>(*cost);
  }
  p.deletion = InstantOrNone(r.getDeletionNs());
  return p;
}

namespace {

std::vector<NodeCondition> GetUnhealthy(capnp::List<s::NodeCondition>::Reader list) {
  std::vector<NodeCondition> out;
  for (auto c : list) out.push_back({S(c.getType()), S(c.getStatus()), Instant{c.getSinceNs()}});
  return out;
}

}  // namespace

void Put(s::Node::Builder b, const Node& n) {
  b.setName(T(n.name));
  b.setProviderId(T(n.provider_id));
  Put(b.initLabels(n.labels.size()), n.labels);
  PutList(b.initTaints(n.taints.size()), n.taints);
  b.setReady(n.ready);
  Put(b.initAllocatable(), n.allocatable);
  b.setCreatedNs(n.created.value);
  PutTexts(b.initVolumesAttached(n.volumes_attached.size()), n.volumes_attached);
  b.setDoNotDisrupt(n.do_not_disrupt);
  b.setDeleting(n.deleting);
  auto unhealthy = b.initUnhealthy(n.unhealthy.size());
  for (unsigned i = 0; i < n.unhealthy.size(); ++i) {
    unhealthy[i].setType(T(n.unhealthy[i].type));
    unhealthy[i].setStatus(T(n.unhealthy[i].status));
    unhealthy[i].setSinceNs(n.unhealthy[i].since.value);
  }
}
Node Get(s::Node::Reader r) {
  return {S(r.getName()),
          S(r.getProviderId()),
          GetLabels(r.getLabels()),
          GetList<Taint>(r.getTaints()),
          r.getReady(),
          Get(r.getAllocatable()),
          Instant{r.getCreatedNs()},
          GetTexts(r.getVolumesAttached()),
          r.getDoNotDisrupt(),
          r.getDeleting(),
          GetUnhealthy(r.getUnhealthy())};
}

void Put(s::NodePool::Builder b, const NodePool& p) {
  b.setName(T(p.name));
  b.setWeight(p.weight);
  Put(b.initLabels(p.labels.size()), p.labels);
  PutList(b.initRequirements(p.requirements.size()), p.requirements);
  PutList(b.initTaints(p.taints.size()), p.taints);
  PutList(b.initStartupTaints(p.startup_taints.size()), p.startup_taints);
  b.setNodeClass(T(p.nodeclass));
  PutOpt(b.initLimitCpuMillis(), p.limits.cpu);
  PutOpt(b.initLimitMemoryBytes(), p.limits.memory);
  PutOpt(b.initLimitNodes(), p.limits.nodes);
  b.setExpireAfterNs(NsOrNever(p.expire_after));
  Put(b.initLimitsExtended(p.limits.extended.size()), p.limits.extended);
  b.setTerminationGracePeriodNs(NsOrNever(p.termination_grace_period));
  b.setConsolidationPolicy(static_cast<std::uint8_t>(p.consolidation_policy));
  b.setConsolidateAfterNs(NsOrNever(p.consolidate_after));
  auto budgets = b.initBudgets(p.budgets.size());
  for (unsigned i = 0; i < p.budgets.size(); ++i) {
    budgets[i].setNodes(T(p.budgets[i].nodes));
    budgets[i].setSchedule(T(p.budgets[i].schedule));
    budgets[i].setDurationNs(p.budgets[i].duration.value);
    PutTexts(budgets[i].initReasons(p.budgets[i].reasons.size()), p.budgets[i].reasons);
  }
  if (p.replicas) PutOpt(b.initReplicas(), p.replicas);  // Added later: written when set.
}
NodePool Get(s::NodePool::Reader r) {
  NodePool p;
  p.name = S(r.getName());
  p.weight = r.getWeight();
  p.labels = GetLabels(r.getLabels());
  p.requirements = GetList<Requirement>(r.getRequirements());
  p.taints = GetList<Taint>(r.getTaints());
  p.startup_taints = GetList<Taint>(r.getStartupTaints());
  p.nodeclass = S(r.getNodeClass());
  p.limits.cpu = GetOpt<Millicores>(r.getLimitCpuMillis());
  p.limits.memory = GetOpt<Bytes>(r.getLimitMemoryBytes());
  p.limits.nodes = GetOpt<std::int64_t>(r.getLimitNodes());
  p.expire_after = DurationOrNever(r.getExpireAfterNs());
  p.limits.extended = GetInts(r.getLimitsExtended());
  p.termination_grace_period = DurationOrNever(r.getTerminationGracePeriodNs());
  p.consolidation_policy =
      CheckedEnum<ConsolidationPolicy>(r.getConsolidationPolicy(), 2, "consolidation policy");
  p.consolidate_after = DurationOrNever(r.getConsolidateAfterNs());
  p.budgets.clear();
  for (auto budget : r.getBudgets()) {
    p.budgets.push_back({S(budget.getNodes()), S(budget.getSchedule()),
                         Duration{budget.getDurationNs()}, GetTexts(budget.getReasons())});
  }
  p.replicas = GetOpt<std::int64_t>(r.getReplicas());
  return p;
}

void Put(s::NodeOverlay::Builder b, const NodeOverlay& o) {
  b.setName(T(o.name));
  b.setWeight(o.weight);
  PutList(b.initRequirements(o.requirements.size()), o.requirements);
  b.setHasPrice(o.price.has_value());
  if (o.price) {
    b.setPriceKind(static_cast<s::PriceChangeKind>(o.price->kind));
    b.setPriceValue(o.price->value);
  }
  Put(b.initCapacity(o.capacity.size()), o.capacity);
  b.setInvalid(T(o.invalid));
}
NodeOverlay Get(s::NodeOverlay::Reader r) {
  NodeOverlay o;
  o.name = S(r.getName());
  o.weight = r.getWeight();
  o.requirements = GetList<Requirement>(r.getRequirements());
  if (r.getHasPrice()) {
    o.price = PriceChange{CheckedEnum<PriceChange::Kind>(
                              static_cast<std::uint16_t>(r.getPriceKind()), 2, "price change kind"),
                          r.getPriceValue()};
  }
  o.capacity = GetInts(r.getCapacity());
  o.invalid = S(r.getInvalid());
  return o;
}

void Put(s::NodeOverlayStatus::Builder b, const NodeOverlayStatus& v) {
  b.setValid(v.valid);
  b.setReason(T(v.reason));
  b.setMessage(T(v.message));
}
NodeOverlayStatus Get(s::NodeOverlayStatus::Reader r) {
  return {r.getValid(), S(r.getReason()), S(r.getMessage())};
}

}  // namespace tenon::log::parts
