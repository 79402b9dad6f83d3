// Domain <-> Cap'n Proto. One Put/Get pair per type; the unions map alternative by
// alternative. Enum values read from disk are range-checked, never cast blindly.
#include "log/codec.h"

#include <capnp/message.h>
#include <capnp/serialize.h>
#include <kj/exception.h>
#include <kj/io.h>

#include <cassert>
#include <cstring>
#include <string_view>
#include <unordered_map>

#include "tenon.capnp.h"

namespace tenon::log {
namespace {

namespace s = tenon::schema;

template <class... Fs>
struct Overloaded : Fs... {
  using Fs::operator()...;
};
template <class... Fs>
Overloaded(Fs...) -> Overloaded<Fs...>;

kj::StringPtr T(const std::string& value) {
  return kj::StringPtr(value.c_str(), value.size());
}
std::string S(capnp::Text::Reader text) {
  return std::string(text.cStr(), text.size());
}
std::string_view View(capnp::Text::Reader text) {
  return std::string_view(text.cStr(), text.size());
}

template <class E>
E CheckedEnum(std::uint16_t raw, std::uint16_t max, const char* what) {
  if (raw > max) throw CodecError(std::string("unknown ") + what + " value " + std::to_string(raw));
  return static_cast<E>(raw);
}

// A name the log records for an enumerator (a disruption method, a transition), read back.
template <class E>
E Named(std::optional<E> (*parse)(std::string_view), capnp::Text::Reader text, const char* what) {
  if (auto value = parse(View(text))) return *value;
  throw CodecError(std::string("unknown ") + what + " \"" + S(text) + "\"");
}

// ---- small types ----

template <class LabelMap>  // Labels or NodeLabels: the same pairs in the same order.
void Put(capnp::List<s::KeyValue>::Builder out, const LabelMap& labels) {
  unsigned i = 0;
  for (const auto& [k, v] : labels) {
    out[i].setKey(T(k));
    out[i].setValue(T(v));
    ++i;
  }
}
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

ErrorCode GetCode(s::ErrorCode code) {
  return CheckedEnum<ErrorCode>(static_cast<std::uint16_t>(code), 6, "error code");
}

// Declared ahead so the list templates below find every overload.
void Put(s::NodeSelectorTerm::Builder b, const NodeSelectorTerm& v);
NodeSelectorTerm Get(s::NodeSelectorTerm::Reader r);
void Put(s::PodAffinityTerm::Builder b, const PodAffinityTerm& v);
PodAffinityTerm Get(s::PodAffinityTerm::Reader r);
void Put(s::TopologySpreadConstraint::Builder b, const TopologySpreadConstraint& v);
TopologySpreadConstraint Get(s::TopologySpreadConstraint::Reader r);
void Put(s::HostPort::Builder b, const HostPort& v);
HostPort Get(s::HostPort::Reader r);
void Put(s::DaemonSet::Builder b, const DaemonSet& v);
DaemonSet Get(s::DaemonSet::Reader r);
void Put(s::PersistentVolumeClaim::Builder b, const PersistentVolumeClaim& v);
PersistentVolumeClaim Get(s::PersistentVolumeClaim::Reader r);
void Put(s::PersistentVolume::Builder b, const PersistentVolume& v);
PersistentVolume Get(s::PersistentVolume::Reader r);
void Put(s::StorageClass::Builder b, const StorageClass& v);
StorageClass Get(s::StorageClass::Reader r);
void Put(s::CsiNode::Builder b, const CsiNode& v);
CsiNode Get(s::CsiNode::Reader r);
void Put(s::PodDisruptionBudget::Builder b, const PodDisruptionBudget& v);
PodDisruptionBudget Get(s::PodDisruptionBudget::Reader r);
void Put(s::ReplacementWait::Builder b, const ReplacementWait& v);
ReplacementWait Get(s::ReplacementWait::Reader r);
void Put(s::Offering::Builder b, const Offering& v);
Offering Get(s::Offering::Reader r);
void Put(s::OfferingChoice::Builder b, const OfferingChoice& v);
OfferingChoice Get(s::OfferingChoice::Reader r);
void Put(s::InstanceType::Builder b, const InstanceType& v);
InstanceType Get(s::InstanceType::Reader r);
void Put(s::FleetError::Builder b, const FleetError& v);
FleetError Get(s::FleetError::Reader r);
void Put(s::LaunchOverride::Builder b, const LaunchOverride& v);
LaunchOverride Get(s::LaunchOverride::Reader r);
void Put(s::ClaimPlan::Builder b, const ClaimPlan& v);
ClaimPlan Get(s::ClaimPlan::Reader r);
void Put(s::PodOutcome::Builder b, const PodOutcome& v);
PodOutcome Get(s::PodOutcome::Reader r);
void Put(s::Command::Builder b, const Command& v);
Command Get(s::Command::Reader r);
void Put(s::NodePool::Builder b, const NodePool& v);
NodePool Get(s::NodePool::Reader r);
void Put(s::NodeClass::Builder b, const NodeClass& v);
NodeClass Get(s::NodeClass::Reader r);
void Put(s::NodeClassResolution::Builder b, const NodeClassResolution& v);
NodeClassResolution Get(s::NodeClassResolution::Reader r);
void Put(s::NodePoolStatus::Builder b, const NodePoolStatus& v);
NodePoolStatus Get(s::NodePoolStatus::Reader r);
void Put(s::Pod::Builder b, const Pod& v);
Pod Get(s::Pod::Reader r);
void Put(s::Node::Builder b, const Node& v);
Node Get(s::Node::Reader r);
void Put(s::NodeClaim::Builder b, const NodeClaim& v);
NodeClaim Get(s::NodeClaim::Reader r);
void Put(s::CatalogEntry::Builder b, const CatalogEntry& v);
CatalogEntry Get(s::CatalogEntry::Reader r);

// Lists of structs: Put each element, Get each element.
template <class SList, class T>
void PutList(SList out, const std::vector<T>& values) {
  for (unsigned i = 0; i < values.size(); ++i) Put(out[i], values[i]);
}
// A map by name, in key order, as a list of structs with the name and the value, whose
// builder `value_of(item)` gives.
template <class SList, class V, class ValueOf>
void PutNamed(SList out, const std::map<std::string, V>& map, ValueOf value_of) {
  unsigned i = 0;
  for (const auto& [name, value] : map) {
    out[i].setName(T(name));
    Put(value_of(out[i]), value);
    ++i;
  }
}
// A map's values in key order, written in place (a snapshot's maps hold the whole cluster:
// copying them into a vector first doubled the memory a snapshot takes).
template <class K, class V, class SList>
void PutValues(SList out, const std::map<K, V>& map) {
  unsigned i = 0;
  for (const auto& [key, value] : map) Put(out[i++], value);
}
template <class T, class SList>
std::vector<T> GetList(SList in) {
  std::vector<T> out;
  out.reserve(in.size());
  for (auto item : in) out.push_back(Get(item));
  return out;
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
          Nanos{r.getStartedNs()},
          S(r.getReason()),
          r.getDraining()};
}

template <class V>
void PutOpt(s::OptionalInt64::Builder b, const std::optional<V>& v) {
  b.setSet(v.has_value());
  if constexpr (std::is_same_v<V, std::int64_t>) {
    if (v) b.setValue(*v);
  } else {
    if (v) b.setValue(v->value);
  }
}
template <class V>
std::optional<V> GetOpt(s::OptionalInt64::Reader r) {
  if (!r.getSet()) return std::nullopt;
  if constexpr (std::is_same_v<V, std::int64_t>) {
    return r.getValue();
  } else {
    return V{r.getValue()};
  }
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
  b.setDoNotDisruptForNs(p.do_not_disrupt_for.value);
  PutOpt(b.initPriority(),
         p.priority ? std::optional<std::int64_t>(*p.priority) : std::optional<std::int64_t>());
  b.setDeletionCost(p.deletion_cost);
  b.setDeletionNs(p.deletion.value);
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
  p.created = Nanos{r.getCreatedNs()};
  p.labels = GetLabels(r.getLabels());
  p.constraints = GetConstraints(r);
  p.nominated_node = S(r.getNominatedNode());
  p.do_not_disrupt = r.getDoNotDisrupt();
  p.priority_class = S(r.getPriorityClass());
  p.termination_grace = Nanos{r.getTerminationGraceNs()};
  p.do_not_disrupt_for = Nanos{r.getDoNotDisruptForNs()};
  if (auto priority = GetOpt<std::int64_t>(r.getPriority())) {
    p.priority = static_cast<std::int32_t>(*priority);
  }
  p.deletion_cost = r.getDeletionCost();
  p.deletion = Nanos{r.getDeletionNs()};
  return p;
}

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
}
Node Get(s::Node::Reader r) {
  return {S(r.getName()),
          S(r.getProviderId()),
          GetLabels(r.getLabels()),
          GetList<Taint>(r.getTaints()),
          r.getReady(),
          Get(r.getAllocatable()),
          Nanos{r.getCreatedNs()},
          GetTexts(r.getVolumesAttached()),
          r.getDoNotDisrupt(),
          r.getDeleting()};
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
  b.setExpireAfterNs(p.expire_after.value);
  Put(b.initLimitsExtended(p.limits.extended.size()), p.limits.extended);
  b.setTerminationGracePeriodNs(p.termination_grace_period.value);
  b.setConsolidationPolicy(static_cast<std::uint8_t>(p.consolidation_policy));
  b.setConsolidateAfterNs(p.consolidate_after.value);
  auto budgets = b.initBudgets(p.budgets.size());
  for (unsigned i = 0; i < p.budgets.size(); ++i) {
    budgets[i].setNodes(T(p.budgets[i].nodes));
    budgets[i].setSchedule(T(p.budgets[i].schedule));
    budgets[i].setDurationNs(p.budgets[i].duration.value);
    PutTexts(budgets[i].initReasons(p.budgets[i].reasons.size()), p.budgets[i].reasons);
  }
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
  p.expire_after = Nanos{r.getExpireAfterNs()};
  p.limits.extended = GetInts(r.getLimitsExtended());
  p.termination_grace_period = Nanos{r.getTerminationGracePeriodNs()};
  p.consolidation_policy =
      CheckedEnum<ConsolidationPolicy>(r.getConsolidationPolicy(), 1, "consolidation policy");
  p.consolidate_after = Nanos{r.getConsolidateAfterNs()};
  p.budgets.clear();
  for (auto budget : r.getBudgets()) {
    p.budgets.push_back({S(budget.getNodes()), S(budget.getSchedule()),
                         Nanos{budget.getDurationNs()}, GetTexts(budget.getReasons())});
  }
  return p;
}

void Put(s::NodeClass::Builder b, const NodeClass& c) {
  b.setName(T(c.name));
  b.setAmiFamily(T(c.ami_family));
  b.setRole(T(c.role));
  b.setReady(c.ready);
  auto widen = [](std::optional<std::int32_t> v) -> std::optional<std::int64_t> {
    return v ? std::optional<std::int64_t>(*v) : std::nullopt;
  };
  PutOpt(b.initMaxPods(), widen(c.max_pods));
  PutOpt(b.initPodsPerCore(), widen(c.pods_per_core));
  PutTexts(b.initAmis(c.amis.size()), c.amis);
  PutTexts(b.initSubnets(c.subnets.size()), c.subnets);
  PutTexts(b.initSecurityGroups(c.security_groups.size()), c.security_groups);
  b.setTerminating(c.terminating);
  PutTexts(b.initZones(c.zones.size()), c.zones);
  PutTexts(b.initArchs(c.archs.size()), c.archs);
  b.setUserData(T(c.user_data));
  Put(b.initTags(c.tags.size()), c.tags);
  b.setFinalizer(c.finalizer);
}
NodeClass Get(s::NodeClass::Reader r) {
  auto narrow = [](std::optional<std::int64_t> v) -> std::optional<std::int32_t> {
    return v ? std::optional<std::int32_t>(static_cast<std::int32_t>(*v)) : std::nullopt;
  };
  return {S(r.getName()),
          S(r.getAmiFamily()),
          S(r.getRole()),
          r.getReady(),
          narrow(GetOpt<std::int64_t>(r.getMaxPods())),
          narrow(GetOpt<std::int64_t>(r.getPodsPerCore())),
          GetTexts(r.getAmis()),
          GetTexts(r.getSubnets()),
          GetTexts(r.getSecurityGroups()),
          r.getTerminating(),
          GetTexts(r.getZones()),
          GetTexts(r.getArchs()),
          S(r.getUserData()),
          GetLabels(r.getTags()),
          r.getFinalizer()};
}

void Put(s::NodeClassResolution::Builder b, const NodeClassResolution& v) {
  auto amis = b.initAmis(v.amis.size());
  for (unsigned i = 0; i < v.amis.size(); ++i) {
    amis[i].setId(T(v.amis[i].id));
    amis[i].setName(T(v.amis[i].name));
    amis[i].setArch(T(v.amis[i].arch));
    amis[i].setCreated(T(v.amis[i].created));
  }
  auto subnets = b.initSubnets(v.subnets.size());
  for (unsigned i = 0; i < v.subnets.size(); ++i) {
    subnets[i].setId(T(v.subnets[i].id));
    subnets[i].setZone(T(v.subnets[i].zone));
    subnets[i].setZoneId(T(v.subnets[i].zone_id));
    subnets[i].setFreeIps(v.subnets[i].free_ips);
  }
  auto groups = b.initSecurityGroups(v.security_groups.size());
  for (unsigned i = 0; i < v.security_groups.size(); ++i) {
    groups[i].setId(T(v.security_groups[i].id));
    groups[i].setName(T(v.security_groups[i].name));
  }
  b.setInstanceProfile(T(v.instance_profile));
  b.setReason(T(v.reason));
  b.setMessage(T(v.message));
}
NodeClassResolution Get(s::NodeClassResolution::Reader r) {
  NodeClassResolution v;
  for (auto a : r.getAmis()) {
    v.amis.push_back({S(a.getId()), S(a.getName()), S(a.getArch()), S(a.getCreated())});
  }
  for (auto n : r.getSubnets()) {
    v.subnets.push_back({S(n.getId()), S(n.getZone()), S(n.getZoneId()), n.getFreeIps()});
  }
  for (auto g : r.getSecurityGroups()) v.security_groups.push_back({S(g.getId()), S(g.getName())});
  v.instance_profile = S(r.getInstanceProfile());
  v.reason = S(r.getReason());
  v.message = S(r.getMessage());
  return v;
}

void Put(s::Offering::Builder b, const Offering& o) {
  b.setZone(T(o.zone));
  b.setCapacityType(T(o.capacity_type));
  b.setPriceMicroUsdHour(o.price.value);
  b.setAvailable(o.available);
}
Offering Get(s::Offering::Reader r) {
  return {S(r.getZone()), S(r.getCapacityType()), MicroUsdPerHour{r.getPriceMicroUsdHour()},
          r.getAvailable()};
}

void Put(s::InstanceType::Builder b, const InstanceType& t) {
  b.setName(T(t.name));
  b.setArch(T(t.arch));
  b.setCpuMillis(t.cpu.value);
  b.setMemoryBytes(t.memory.value);
  b.setMaxEnis(t.max_enis);
  b.setIpv4PerEni(t.ipv4_per_eni);
  b.setGpuCount(t.gpu_count);
  b.setBareMetal(t.bare_metal);
  PutList(b.initOfferings(t.offerings.size()), t.offerings);
  b.setGpuName(T(t.gpu_name));
  b.setGpuManufacturer(T(t.gpu_manufacturer));
  b.setGpuMemoryBytes(t.gpu_memory.value);
  b.setAcceleratorCount(t.accelerator_count);
  b.setCpuManufacturer(T(t.cpu_manufacturer));
  b.setHypervisor(T(t.hypervisor));
  b.setLocalNvmeGib(t.local_nvme_gib);
  Put(b.initLabels(t.labels.size()), t.labels);
  Put(b.initExtended(t.extended.size()), t.extended);
  if (t.allocatable) Put(b.initAllocatable(), *t.allocatable);
}
InstanceType Get(s::InstanceType::Reader r) {
  InstanceType t;
  t.name = S(r.getName());
  t.arch = S(r.getArch());
  t.cpu = Millicores{r.getCpuMillis()};
  t.memory = Bytes{r.getMemoryBytes()};
  t.max_enis = r.getMaxEnis();
  t.ipv4_per_eni = r.getIpv4PerEni();
  t.gpu_count = r.getGpuCount();
  t.bare_metal = r.getBareMetal();
  t.offerings = GetList<Offering>(r.getOfferings());
  t.gpu_name = S(r.getGpuName());
  t.gpu_manufacturer = S(r.getGpuManufacturer());
  t.gpu_memory = Bytes{r.getGpuMemoryBytes()};
  t.accelerator_count = r.getAcceleratorCount();
  t.cpu_manufacturer = S(r.getCpuManufacturer());
  t.hypervisor = S(r.getHypervisor());
  t.local_nvme_gib = r.getLocalNvmeGib();
  t.labels = GetLabels(r.getLabels());
  t.extended = GetInts(r.getExtended());
  if (r.hasAllocatable()) t.allocatable = Get(r.getAllocatable());
  return t;
}

void Put(s::NodeClaim::Builder b, const NodeClaim& c) {
  b.setName(T(c.name));
  b.setNodePool(T(c.nodepool));
  b.setNodeClass(T(c.nodeclass));
  PutList(b.initRequirements(c.requirements->size()), *c.requirements);
  Put(b.initRequests(), c.requests);
  PutTexts(b.initInstanceTypes(c.instance_types->size()), *c.instance_types);
  b.setPhase(static_cast<s::ClaimPhase>(c.phase));
  b.setProviderId(T(c.provider_id));
  b.setInstanceId(T(c.instance_id));
  b.setInstanceType(T(c.instance_type));
  b.setZone(T(c.zone));
  b.setCapacityType(T(c.capacity_type));
  b.setPriceMicroUsdHour(c.price.value);
  b.setNodeName(T(c.node_name));
  Put(b.initAllocatable(), c.allocatable);
  b.setCreatedNs(c.created.value);
  b.setLaunchedNs(c.launched.value);
  b.setRegisteredNs(c.registered.value);
  b.setInitializedNs(c.initialized.value);
  b.setDeleting(c.deleting);
  b.setDeletingSinceNs(c.deleting_since.value);
  b.setDeletingReason(T(c.deleting_reason));
  b.setInstanceGone(c.instance_gone);
  Put(b.initEvictionsRefused(c.evictions_refused.size()),
      std::map<std::string, std::int64_t>(c.evictions_refused.begin(), c.evictions_refused.end()));
  std::map<std::string, std::int64_t> after;
  for (const auto& [pod, at] : c.evict_after) after[pod] = at.value;
  Put(b.initEvictAfterNs(after.size()), after);
  b.setLastPodChangeNs(c.last_pod_change.value);
  b.setNodePoolHash(c.nodepool_hash);
  b.setNodeClassHash(c.nodeclass_hash);
  b.setImageId(T(c.image_id));
  b.setSubnetId(T(c.subnet_id));
  PutTexts(b.initSecurityGroups(c.security_groups.size()), c.security_groups);
  b.setNominatedUntilNs(c.nominated_until.value);
  Put(b.initDisruptionConditions(c.disruption_conditions.size()), c.disruption_conditions);
  b.setLaunchFailures(c.launch_failures);
  b.setRelaunchAtNs(c.relaunch_at.value);
}
NodeClaim Get(s::NodeClaim::Reader r) {
  NodeClaim c;
  c.name = S(r.getName());
  c.nodepool = S(r.getNodePool());
  c.nodeclass = S(r.getNodeClass());
  c.requirements = GetList<Requirement>(r.getRequirements());
  c.requests = Get(r.getRequests());
  c.instance_types = GetTexts(r.getInstanceTypes());
  c.phase = CheckedEnum<ClaimPhase>(static_cast<std::uint16_t>(r.getPhase()), 4, "claim phase");
  c.provider_id = S(r.getProviderId());
  c.instance_id = S(r.getInstanceId());
  c.instance_type = S(r.getInstanceType());
  c.zone = S(r.getZone());
  c.capacity_type = S(r.getCapacityType());
  c.price = MicroUsdPerHour{r.getPriceMicroUsdHour()};
  c.node_name = S(r.getNodeName());
  c.allocatable = Get(r.getAllocatable());
  c.created = Nanos{r.getCreatedNs()};
  c.launched = Nanos{r.getLaunchedNs()};
  c.registered = Nanos{r.getRegisteredNs()};
  c.initialized = Nanos{r.getInitializedNs()};
  c.deleting = r.getDeleting();
  c.deleting_since = Nanos{r.getDeletingSinceNs()};
  c.deleting_reason = S(r.getDeletingReason());
  c.instance_gone = r.getInstanceGone();
  for (const auto& [pod, n] : GetInts(r.getEvictionsRefused())) {
    c.evictions_refused[pod] = static_cast<std::int32_t>(n);
  }
  for (const auto& [pod, at] : GetInts(r.getEvictAfterNs())) c.evict_after[pod] = Nanos{at};
  c.last_pod_change = Nanos{r.getLastPodChangeNs()};
  c.nodepool_hash = r.getNodePoolHash();
  c.nodeclass_hash = r.getNodeClassHash();
  c.image_id = S(r.getImageId());
  c.subnet_id = S(r.getSubnetId());
  c.security_groups = GetTexts(r.getSecurityGroups());
  c.nominated_until = Nanos{r.getNominatedUntilNs()};
  c.disruption_conditions = GetInts(r.getDisruptionConditions());
  c.launch_failures = r.getLaunchFailures();
  c.relaunch_at = Nanos{r.getRelaunchAtNs()};
  return c;
}

void Put(s::Settings::Builder b, const Settings& v) {
  b.setClusterName(T(v.cluster_name));
  b.setBatchIdleNs(v.batch_idle.value);
  b.setBatchMaxNs(v.batch_max.value);
  b.setVmMemoryOverheadPermille(v.vm_memory_overhead_permille);
  b.setIgnorePreferences(v.ignore_preferences);
  b.setMinValuesBestEffort(v.min_values_best_effort);
  b.setSpotToSpotConsolidation(v.spot_to_spot_consolidation);
  b.setConsolidationMinSavingsMicroUsdHour(v.consolidation_min_savings.value);
  b.setConsolidationMinSavingsPercent(v.consolidation_min_savings_percent);
  b.setSoftExpiration(v.soft_expiration);
  b.setReservedEnis(v.reserved_enis);
  b.setClusterEndpoint(T(v.cluster_endpoint));
  b.setClusterCaBundle(T(v.cluster_ca_bundle));
}
Settings Get(s::Settings::Reader r) {
  Settings v;
  v.cluster_name = S(r.getClusterName());
  v.batch_idle = Nanos{r.getBatchIdleNs()};
  v.batch_max = Nanos{r.getBatchMaxNs()};
  v.vm_memory_overhead_permille = r.getVmMemoryOverheadPermille();
  v.ignore_preferences = r.getIgnorePreferences();
  v.min_values_best_effort = r.getMinValuesBestEffort();
  v.spot_to_spot_consolidation = r.getSpotToSpotConsolidation();
  v.consolidation_min_savings = MicroUsdPerHour{r.getConsolidationMinSavingsMicroUsdHour()};
  v.consolidation_min_savings_percent = r.getConsolidationMinSavingsPercent();
  v.soft_expiration = r.getSoftExpiration();
  v.reserved_enis = r.getReservedEnis();
  v.cluster_endpoint = S(r.getClusterEndpoint());
  v.cluster_ca_bundle = S(r.getClusterCaBundle());
  return v;
}

void Put(s::FleetError::Builder b, const FleetError& e) {
  b.setInstanceType(T(e.instance_type));
  b.setZone(T(e.zone));
  b.setCapacityType(T(e.capacity_type));
  b.setCode(static_cast<s::ErrorCode>(e.code));
  b.setMessage(T(e.message));
}
FleetError Get(s::FleetError::Reader r) {
  return {S(r.getInstanceType()), S(r.getZone()), S(r.getCapacityType()), GetCode(r.getCode()),
          S(r.getMessage())};
}

void Put(s::NodePoolStatus::Builder b, const NodePoolStatus& v) {
  b.setRegistrationHealthKnown(v.registration_healthy.has_value());
  b.setRegistrationHealthy(v.registration_healthy.value_or(false));
  b.setNodes(v.nodes);
  Put(b.initResources(), v.resources);
  b.setValidated(v.validated);
  b.setNodeClassUnready(T(v.nodeclass_unready));
}
NodePoolStatus Get(s::NodePoolStatus::Reader r) {
  NodePoolStatus v;
  if (r.getRegistrationHealthKnown()) v.registration_healthy = r.getRegistrationHealthy();
  v.nodes = r.getNodes();
  v.resources = Get(r.getResources());
  v.validated = r.getValidated();
  v.nodeclass_unready = S(r.getNodeClassUnready());
  return v;
}

void Put(s::LaunchOverride::Builder b, const LaunchOverride& o) {
  b.setInstanceType(T(o.instance_type));
  b.setZone(T(o.zone));
  b.setCapacityType(T(o.capacity_type));
  b.setPriceMicroUsdHour(o.price.value);
  b.setSubnet(T(o.subnet));
  b.setImage(T(o.image));
}
LaunchOverride Get(s::LaunchOverride::Reader r) {
  return {S(r.getInstanceType()), S(r.getZone()),
          S(r.getCapacityType()), MicroUsdPerHour{r.getPriceMicroUsdHour()},
          S(r.getSubnet()),       S(r.getImage())};
}

void Put(s::LaunchNode::Builder b, const LaunchNode& n) {
  b.setAmiFamily(T(n.ami_family));
  b.setInstanceProfile(T(n.instance_profile));
  PutTexts(b.initSecurityGroups(n.security_groups.size()), n.security_groups);
  b.setUserData(T(n.user_data));
  PutOpt(b.initMaxPods(), n.max_pods ? std::optional<std::int64_t>(*n.max_pods) : std::nullopt);
  Put(b.initLabels(n.labels.size()), n.labels);
  PutList(b.initTaints(n.taints.size()), n.taints);
  Put(b.initTags(n.tags.size()), n.tags);
  b.setClusterName(T(n.cluster_name));
  b.setClusterEndpoint(T(n.cluster_endpoint));
  b.setClusterCaBundle(T(n.cluster_ca_bundle));
}
LaunchNode Get(s::LaunchNode::Reader r) {
  LaunchNode n;
  n.ami_family = S(r.getAmiFamily());
  n.instance_profile = S(r.getInstanceProfile());
  n.security_groups = GetTexts(r.getSecurityGroups());
  n.user_data = S(r.getUserData());
  if (const auto pods = GetOpt<std::int64_t>(r.getMaxPods())) {
    n.max_pods = static_cast<std::int32_t>(*pods);
  }
  n.labels = GetLabels(r.getLabels());
  n.taints = GetList<Taint>(r.getTaints());
  n.tags = GetLabels(r.getTags());
  n.cluster_name = S(r.getClusterName());
  n.cluster_endpoint = S(r.getClusterEndpoint());
  n.cluster_ca_bundle = S(r.getClusterCaBundle());
  return n;
}

void Put(s::OfferingChoice::Builder b, const OfferingChoice& o) {
  b.setInstanceType(T(o.instance_type));
  b.setZone(T(o.zone));
  b.setCapacityType(T(o.capacity_type));
  b.setPriceMicroUsdHour(o.price.value);
}
OfferingChoice Get(s::OfferingChoice::Reader r) {
  return {S(r.getInstanceType()), S(r.getZone()), S(r.getCapacityType()),
          MicroUsdPerHour{r.getPriceMicroUsdHour()}};
}

void Put(s::ClaimPlan::Builder b, const ClaimPlan& p) {
  b.setNodeClaim(T(p.nodeclaim));
  b.setNodePool(T(p.nodepool));
  PutTexts(b.initPods(p.pods.size()), p.pods);
  Put(b.initRequests(), p.requests);
  PutList(b.initOfferings(p.offerings.size()), p.offerings);
}
ClaimPlan Get(s::ClaimPlan::Reader r) {
  return {S(r.getNodeClaim()), S(r.getNodePool()), GetTexts(r.getPods()), Get(r.getRequests()),
          GetList<OfferingChoice>(r.getOfferings())};
}

void Put(s::PodOutcome::Builder b, const PodOutcome& o) {
  b.setPod(T(o.pod));
  b.setTarget(T(o.target));
  b.setReason(T(o.reason));
  PutTexts(b.initRelaxed(o.relaxed.size()), o.relaxed);
}
PodOutcome Get(s::PodOutcome::Reader r) {
  return {S(r.getPod()), S(r.getTarget()), S(r.getReason()), GetTexts(r.getRelaxed())};
}

void Put(s::CatalogEntry::Builder b, const CatalogEntry& e) {
  Put(b.initType(), e.type);
  Put(b.initAllocatable(), e.allocatable);
  Put(b.initLabels(e.labels.size()), e.labels);
}
CatalogEntry Get(s::CatalogEntry::Reader r) {
  return {Get(r.getType()), Get(r.getAllocatable()), GetLabels(r.getLabels())};
}

// ---- unions ----

void Put(s::Event::Builder b, const Event& event) {
  std::visit(Overloaded{
                 [&](const Tick& e) { b.initTick().setNowNs(e.now.value); },
                 [&](const ControllerStarted& e) {
                   auto g = b.initControllerStarted();
                   g.setVersion(T(e.version));
                   g.setSeed(e.seed);
                   Put(g.initSettings(), e.settings);
                 },
                 [&](const CatalogRefreshed& e) {
                   PutList(b.initCatalogRefreshed(e.instance_types.size()), e.instance_types);
                 },
                 [&](const NodePoolUpserted& e) { Put(b.initNodePoolUpserted(), e.nodepool); },
                 [&](const NodePoolDeleted& e) { b.setNodePoolDeleted(T(e.name)); },
                 [&](const NodeClassUpserted& e) { Put(b.initNodeClassUpserted(), e.nodeclass); },
                 [&](const NodeClassDeleted& e) { b.setNodeClassDeleted(T(e.name)); },
                 [&](const PodUpserted& e) { Put(b.initPodUpserted(), e.pod); },
                 [&](const PodDeleted& e) {
                   auto g = b.initPodDeleted();
                   g.setNamespace(T(e.ns));
                   g.setName(T(e.name));
                 },
                 [&](const NodeUpserted& e) { Put(b.initNodeUpserted(), e.node); },
                 [&](const NodeDeleted& e) { b.setNodeDeleted(T(e.name)); },
                 [&](const FleetLaunched& e) {
                   auto g = b.initFleetLaunched();
                   g.setCommand(e.command.value);
                   g.setNodeClaim(T(e.nodeclaim));
                   g.setInstanceId(T(e.instance_id));
                   g.setProviderId(T(e.provider_id));
                   g.setInstanceType(T(e.instance_type));
                   g.setZone(T(e.zone));
                   g.setCapacityType(T(e.capacity_type));
                   g.setPriceMicroUsdHour(e.price.value);
                   PutList(g.initErrors(e.errors.size()), e.errors);
                   g.setImageId(T(e.image_id));
                   g.setSubnetId(T(e.subnet_id));
                   PutTexts(g.initSecurityGroups(e.security_groups.size()), e.security_groups);
                   g.setRequest(T(e.request));
                 },
                 [&](const FleetFailed& e) {
                   auto g = b.initFleetFailed();
                   g.setCommand(e.command.value);
                   g.setNodeClaim(T(e.nodeclaim));
                   PutList(g.initErrors(e.errors.size()), e.errors);
                   g.setRequest(T(e.request));
                 },
                 [&](const CommandSucceeded& e) { b.setCommandSucceeded(e.command.value); },
                 [&](const CommandFailed& e) {
                   auto g = b.initCommandFailed();
                   g.setCommand(e.command.value);
                   g.setCode(static_cast<s::ErrorCode>(e.code));
                   g.setMessage(T(e.message));
                 },
                 [&](const InputRejected& e) {
                   auto g = b.initInputRejected();
                   g.setSource(T(e.source));
                   g.setReason(T(e.reason));
                   g.setPayload(kj::arrayPtr(reinterpret_cast<const kj::byte*>(e.payload.data()),
                                             e.payload.size()));
                   g.setMessageId(T(e.message_id));
                 },
                 [&](const DaemonSetUpserted& e) { Put(b.initDaemonSetUpserted(), e.daemonset); },
                 [&](const DaemonSetDeleted& e) {
                   auto g = b.initDaemonSetDeleted();
                   g.setNamespace(T(e.ns));
                   g.setName(T(e.name));
                 },
                 [&](const PersistentVolumeClaimUpserted& e) {
                   Put(b.initPersistentVolumeClaimUpserted(), e.claim);
                 },
                 [&](const PersistentVolumeClaimDeleted& e) {
                   auto g = b.initPersistentVolumeClaimDeleted();
                   g.setNamespace(T(e.ns));
                   g.setName(T(e.name));
                 },
                 [&](const PersistentVolumeUpserted& e) {
                   Put(b.initPersistentVolumeUpserted(), e.volume);
                 },
                 [&](const PersistentVolumeDeleted& e) { b.setPersistentVolumeDeleted(T(e.name)); },
                 [&](const StorageClassUpserted& e) {
                   Put(b.initStorageClassUpserted(), e.storage_class);
                 },
                 [&](const StorageClassDeleted& e) { b.setStorageClassDeleted(T(e.name)); },
                 [&](const CsiNodeUpserted& e) { Put(b.initCsiNodeUpserted(), e.csi_node); },
                 [&](const CsiNodeDeleted& e) { b.setCsiNodeDeleted(T(e.name)); },
                 [&](const NodeClaimDeleting& e) { b.setNodeClaimDeleting(T(e.name)); },
                 [&](const PodDisruptionBudgetUpserted& e) {
                   Put(b.initPodDisruptionBudgetUpserted(), e.pdb);
                 },
                 [&](const PodDisruptionBudgetDeleted& e) {
                   auto g = b.initPodDisruptionBudgetDeleted();
                   g.setNamespace(T(e.ns));
                   g.setName(T(e.name));
                 },
                 [&](const WatchesSynced& e) { b.setWatchesSynced(e.synced); },
                 [&](const NodeClaimObserved& e) { Put(b.initNodeClaimObserved(), e.claim); },
                 [&](const NodeClassResolved& e) {
                   auto g = b.initNodeClassResolved();
                   g.setNodeClass(T(e.nodeclass));
                   Put(g.initResolution(), e.resolution);
                 },
                 [&](const InterruptionReceived& e) {
                   auto g = b.initInterruptionReceived();
                   g.setMessageId(T(e.message_id));
                   g.setKind(static_cast<std::uint8_t>(e.kind));
                   g.setInstanceId(T(e.instance_id));
                   g.setDetail(T(e.detail));
                 },
                 [&](const InstancesListed& e) {
                   auto list = b.initInstancesListed(e.instances.size());
                   for (unsigned k = 0; k < e.instances.size(); ++k) {
                     list[k].setId(T(e.instances[k].id));
                     list[k].setNodeClaim(T(e.instances[k].nodeclaim));
                     list[k].setLaunchedNs(e.instances[k].launched.value);
                     list[k].setState(T(e.instances[k].state));
                   }
                 },
             },
             event);
}

Event Get(s::Event::Reader r) {
  switch (r.which()) {
    case s::Event::TICK:
      return Tick{Nanos{r.getTick().getNowNs()}};
    case s::Event::CONTROLLER_STARTED: {
      auto g = r.getControllerStarted();
      return ControllerStarted{S(g.getVersion()), g.getSeed(), Get(g.getSettings())};
    }
    case s::Event::CATALOG_REFRESHED:
      return CatalogRefreshed{GetList<InstanceType>(r.getCatalogRefreshed())};
    case s::Event::NODE_POOL_UPSERTED:
      return NodePoolUpserted{Get(r.getNodePoolUpserted())};
    case s::Event::NODE_POOL_DELETED:
      return NodePoolDeleted{S(r.getNodePoolDeleted())};
    case s::Event::NODE_CLASS_UPSERTED:
      return NodeClassUpserted{Get(r.getNodeClassUpserted())};
    case s::Event::NODE_CLASS_DELETED:
      return NodeClassDeleted{S(r.getNodeClassDeleted())};
    case s::Event::POD_UPSERTED:
      return PodUpserted{Get(r.getPodUpserted())};
    case s::Event::POD_DELETED:
      return PodDeleted{S(r.getPodDeleted().getNamespace()), S(r.getPodDeleted().getName())};
    case s::Event::NODE_UPSERTED:
      return NodeUpserted{Get(r.getNodeUpserted())};
    case s::Event::NODE_DELETED:
      return NodeDeleted{S(r.getNodeDeleted())};
    case s::Event::FLEET_LAUNCHED: {
      auto g = r.getFleetLaunched();
      return FleetLaunched{CommandId{g.getCommand()},
                           S(g.getNodeClaim()),
                           S(g.getInstanceId()),
                           S(g.getProviderId()),
                           S(g.getInstanceType()),
                           S(g.getZone()),
                           S(g.getCapacityType()),
                           MicroUsdPerHour{g.getPriceMicroUsdHour()},
                           GetList<FleetError>(g.getErrors()),
                           S(g.getImageId()),
                           S(g.getSubnetId()),
                           GetTexts(g.getSecurityGroups()),
                           S(g.getRequest())};
    }
    case s::Event::FLEET_FAILED: {
      auto g = r.getFleetFailed();
      return FleetFailed{CommandId{g.getCommand()}, S(g.getNodeClaim()),
                         GetList<FleetError>(g.getErrors()), S(g.getRequest())};
    }
    case s::Event::COMMAND_SUCCEEDED:
      return CommandSucceeded{CommandId{r.getCommandSucceeded()}};
    case s::Event::COMMAND_FAILED: {
      auto g = r.getCommandFailed();
      return CommandFailed{CommandId{g.getCommand()}, GetCode(g.getCode()), S(g.getMessage())};
    }
    case s::Event::INPUT_REJECTED: {
      auto g = r.getInputRejected();
      auto payload = g.getPayload();
      return InputRejected{
          S(g.getSource()), S(g.getReason()),
          std::string(reinterpret_cast<const char*>(payload.begin()), payload.size()),
          S(g.getMessageId())};
    }
    case s::Event::DAEMON_SET_UPSERTED:
      return DaemonSetUpserted{Get(r.getDaemonSetUpserted())};
    case s::Event::DAEMON_SET_DELETED:
      return DaemonSetDeleted{S(r.getDaemonSetDeleted().getNamespace()),
                              S(r.getDaemonSetDeleted().getName())};
    case s::Event::PERSISTENT_VOLUME_CLAIM_UPSERTED:
      return PersistentVolumeClaimUpserted{Get(r.getPersistentVolumeClaimUpserted())};
    case s::Event::PERSISTENT_VOLUME_CLAIM_DELETED:
      return PersistentVolumeClaimDeleted{S(r.getPersistentVolumeClaimDeleted().getNamespace()),
                                          S(r.getPersistentVolumeClaimDeleted().getName())};
    case s::Event::PERSISTENT_VOLUME_UPSERTED:
      return PersistentVolumeUpserted{Get(r.getPersistentVolumeUpserted())};
    case s::Event::PERSISTENT_VOLUME_DELETED:
      return PersistentVolumeDeleted{S(r.getPersistentVolumeDeleted())};
    case s::Event::STORAGE_CLASS_UPSERTED:
      return StorageClassUpserted{Get(r.getStorageClassUpserted())};
    case s::Event::STORAGE_CLASS_DELETED:
      return StorageClassDeleted{S(r.getStorageClassDeleted())};
    case s::Event::CSI_NODE_UPSERTED:
      return CsiNodeUpserted{Get(r.getCsiNodeUpserted())};
    case s::Event::CSI_NODE_DELETED:
      return CsiNodeDeleted{S(r.getCsiNodeDeleted())};
    case s::Event::NODE_CLAIM_DELETING:
      return NodeClaimDeleting{S(r.getNodeClaimDeleting())};
    case s::Event::POD_DISRUPTION_BUDGET_UPSERTED:
      return PodDisruptionBudgetUpserted{Get(r.getPodDisruptionBudgetUpserted())};
    case s::Event::POD_DISRUPTION_BUDGET_DELETED: {
      auto g = r.getPodDisruptionBudgetDeleted();
      return PodDisruptionBudgetDeleted{S(g.getNamespace()), S(g.getName())};
    }
    case s::Event::WATCHES_SYNCED:
      return WatchesSynced{r.getWatchesSynced()};
    case s::Event::NODE_CLAIM_OBSERVED:
      return NodeClaimObserved{Get(r.getNodeClaimObserved())};
    case s::Event::NODE_CLASS_RESOLVED: {
      auto g = r.getNodeClassResolved();
      return NodeClassResolved{S(g.getNodeClass()), Get(g.getResolution())};
    }
    case s::Event::INTERRUPTION_RECEIVED: {
      auto g = r.getInterruptionReceived();
      return InterruptionReceived{
          S(g.getMessageId()), CheckedEnum<InterruptionKind>(g.getKind(), 3, "interruption kind"),
          S(g.getInstanceId()), S(g.getDetail())};
    }
    case s::Event::INSTANCES_LISTED: {
      InstancesListed listed;
      for (auto i : r.getInstancesListed()) {
        listed.instances.push_back(
            {S(i.getId()), S(i.getNodeClaim()), Nanos{i.getLaunchedNs()}, S(i.getState())});
      }
      return listed;
    }
  }
  throw CodecError("unknown event kind " + std::to_string(static_cast<unsigned>(r.which())));
}

void Put(s::Command::Builder b, const Command& c) {
  b.setId(c.id.value);
  b.setCauseSeq(c.cause.value);
  std::visit(Overloaded{
                 [&](const CreateNodeClaim& x) { Put(b.initCreateNodeClaim(), x.claim); },
                 [&](const DeleteNodeClaim& x) { b.setDeleteNodeClaim(T(x.name)); },
                 [&](const LaunchInstances& x) {
                   auto g = b.initLaunchInstances();
                   g.setNodeClaim(T(x.nodeclaim));
                   g.setNodePool(T(x.nodepool));
                   g.setNodeClass(T(x.nodeclass));
                   g.setClientToken(T(x.client_token));
                   g.setCapacityType(T(x.capacity_type));
                   PutList(g.initOverrides(x.overrides.size()), x.overrides);
                   Put(g.initTags(x.tags.size()), x.tags);
                   g.setAllocationStrategy(T(x.allocation_strategy));
                   Put(g.initNode(), x.node);
                 },
                 [&](const PatchNode& x) {
                   auto g = b.initPatchNode();
                   g.setNodeName(T(x.node_name));
                   Put(g.initAddLabels(x.add_labels.size()), x.add_labels);
                   PutTexts(g.initRemoveTaints(x.remove_taints.size()), x.remove_taints);
                   PutList(g.initAddTaints(x.add_taints.size()), x.add_taints);
                   g.setOwnerNodeClaim(T(x.owner_nodeclaim));
                 },
                 [&](const EvictPod& x) {
                   auto g = b.initEvictPod();
                   g.setNamespace(T(x.ns));
                   g.setName(T(x.name));
                   g.setNodeClaim(T(x.nodeclaim));
                 },
                 [&](const DeletePod& x) {
                   auto g = b.initDeletePod();
                   g.setNamespace(T(x.ns));
                   g.setName(T(x.name));
                   g.setNodeClaim(T(x.nodeclaim));
                 },
                 [&](const TerminateInstance& x) {
                   auto g = b.initTerminateInstance();
                   g.setInstanceId(T(x.instance_id));
                   g.setNodeClaim(T(x.nodeclaim));
                 },
                 [&](const RemoveFinalizer& x) {
                   auto g = b.initRemoveFinalizer();
                   g.setNodeClaim(T(x.nodeclaim));
                   g.setNodeName(T(x.node_name));
                 },
                 [&](const PatchNodePoolStatus& x) {
                   auto g = b.initPatchNodePoolStatus();
                   g.setNodePool(T(x.nodepool));
                   Put(g.initStatus(), x.status);
                 },
                 [&](const DeleteQueueMessage& x) { b.setDeleteQueueMessage(T(x.message_id)); },
                 [&](const TagInstance& x) {
                   auto g = b.initTagInstance();
                   g.setInstanceId(T(x.instance_id));
                   g.setNodeClaim(T(x.nodeclaim));
                   Put(g.initTags(x.tags.size()), x.tags);
                 },
                 [&](const PatchNodeClassStatus& x) {
                   auto g = b.initPatchNodeClassStatus();
                   g.setNodeClass(T(x.nodeclass));
                   Put(g.initResolution(), x.resolution);
                 },
                 [&](const SetNodeClassFinalizer& x) {
                   auto g = b.initSetNodeClassFinalizer();
                   g.setNodeClass(T(x.nodeclass));
                   g.setPresent(x.present);
                 },
                 [&](const EnsureInstanceProfile& x) {
                   auto g = b.initEnsureInstanceProfile();
                   g.setNodeClass(T(x.nodeclass));
                   g.setRole(T(x.role));
                   g.setClusterName(T(x.cluster_name));
                 },
                 [&](const DeleteNodeClassResources& x) {
                   auto g = b.initDeleteNodeClassResources();
                   g.setNodeClass(T(x.nodeclass));
                   g.setClusterName(T(x.cluster_name));
                   g.setInstanceProfile(x.instance_profile);
                 },
                 [&](const RecordKubeEvent& x) {
                   auto g = b.initRecordKubeEvent();
                   g.setApiVersion(T(x.object.api_version));
                   g.setKind(T(x.object.kind));
                   g.setNamespace(T(x.object.ns));
                   g.setName(T(x.object.name));
                   g.setType(T(x.type));
                   g.setReason(T(x.reason));
                   g.setMessage(T(x.message));
                 },
                 [&](const PatchNodeClaimStatus& x) {
                   auto g = b.initPatchNodeClaimStatus();
                   g.setNodeClaim(T(x.nodeclaim));
                   g.setCondition(T(x.condition));
                   g.setStatus(x.status);
                   g.setReason(T(x.reason));
                   g.setProviderId(T(x.provider_id));
                   g.setNodeName(T(x.node_name));
                   Put(g.initLabels(x.labels.size()), x.labels);
                   g.setImageId(T(x.image_id));
                   Put(g.initCapacity(), x.capacity);
                   Put(g.initAllocatable(), x.allocatable);
                 },
             },
             c.body);
}

Command Get(s::Command::Reader r) {
  Command c{CommandId{r.getId()}, tenon::Seq{r.getCauseSeq()}, {}};
  switch (r.which()) {
    case s::Command::CREATE_NODE_CLAIM:
      c.body = CreateNodeClaim{Get(r.getCreateNodeClaim())};
      return c;
    case s::Command::DELETE_NODE_CLAIM:
      c.body = DeleteNodeClaim{S(r.getDeleteNodeClaim())};
      return c;
    case s::Command::LAUNCH_INSTANCES: {
      auto g = r.getLaunchInstances();
      c.body = LaunchInstances{S(g.getNodeClaim()),    S(g.getNodePool()),
                               S(g.getNodeClass()),    S(g.getClientToken()),
                               S(g.getCapacityType()), GetList<LaunchOverride>(g.getOverrides()),
                               GetLabels(g.getTags()), S(g.getAllocationStrategy()),
                               Get(g.getNode())};
      return c;
    }
    case s::Command::PATCH_NODE: {
      auto g = r.getPatchNode();
      c.body =
          PatchNode{S(g.getNodeName()), GetLabels(g.getAddLabels()), GetTexts(g.getRemoveTaints()),
                    GetList<Taint>(g.getAddTaints()), S(g.getOwnerNodeClaim())};
      return c;
    }
    case s::Command::EVICT_POD: {
      auto g = r.getEvictPod();
      c.body = EvictPod{S(g.getNamespace()), S(g.getName()), S(g.getNodeClaim())};
      return c;
    }
    case s::Command::DELETE_POD: {
      auto g = r.getDeletePod();
      c.body = DeletePod{S(g.getNamespace()), S(g.getName()), S(g.getNodeClaim())};
      return c;
    }
    case s::Command::TERMINATE_INSTANCE: {
      auto g = r.getTerminateInstance();
      c.body = TerminateInstance{S(g.getInstanceId()), S(g.getNodeClaim())};
      return c;
    }
    case s::Command::REMOVE_FINALIZER: {
      auto g = r.getRemoveFinalizer();
      c.body = RemoveFinalizer{S(g.getNodeClaim()), S(g.getNodeName())};
      return c;
    }
    case s::Command::PATCH_NODE_POOL_STATUS: {
      auto g = r.getPatchNodePoolStatus();
      c.body = PatchNodePoolStatus{S(g.getNodePool()), Get(g.getStatus())};
      return c;
    }
    case s::Command::DELETE_QUEUE_MESSAGE:
      c.body = DeleteQueueMessage{S(r.getDeleteQueueMessage())};
      return c;
    case s::Command::TAG_INSTANCE: {
      auto g = r.getTagInstance();
      c.body = TagInstance{S(g.getInstanceId()), S(g.getNodeClaim()), GetLabels(g.getTags())};
      return c;
    }
    case s::Command::PATCH_NODE_CLASS_STATUS: {
      auto g = r.getPatchNodeClassStatus();
      c.body = PatchNodeClassStatus{S(g.getNodeClass()), Get(g.getResolution())};
      return c;
    }
    case s::Command::SET_NODE_CLASS_FINALIZER: {
      auto g = r.getSetNodeClassFinalizer();
      c.body = SetNodeClassFinalizer{S(g.getNodeClass()), g.getPresent()};
      return c;
    }
    case s::Command::ENSURE_INSTANCE_PROFILE: {
      auto g = r.getEnsureInstanceProfile();
      c.body = EnsureInstanceProfile{S(g.getNodeClass()), S(g.getRole()), S(g.getClusterName())};
      return c;
    }
    case s::Command::DELETE_NODE_CLASS_RESOURCES: {
      auto g = r.getDeleteNodeClassResources();
      c.body = DeleteNodeClassResources{S(g.getNodeClass()), S(g.getClusterName()),
                                        g.getInstanceProfile()};
      return c;
    }
    case s::Command::RECORD_KUBE_EVENT: {
      auto g = r.getRecordKubeEvent();
      c.body = RecordKubeEvent{
          {S(g.getApiVersion()), S(g.getKind()), S(g.getNamespace()), S(g.getName())},
          S(g.getType()),
          S(g.getReason()),
          S(g.getMessage())};
      return c;
    }
    case s::Command::PATCH_NODE_CLAIM_STATUS: {
      auto g = r.getPatchNodeClaimStatus();
      PatchNodeClaimStatus patch =
          ClaimCondition(S(g.getNodeClaim()), S(g.getCondition()), g.getStatus(), S(g.getReason()),
                         S(g.getProviderId()), S(g.getNodeName()));
      patch.labels = GetLabels(g.getLabels());
      patch.image_id = S(g.getImageId());
      patch.capacity = Get(g.getCapacity());
      patch.allocatable = Get(g.getAllocatable());
      c.body = std::move(patch);
      return c;
    }
  }
  throw CodecError("unknown command kind " + std::to_string(static_cast<unsigned>(r.which())));
}

// A disruption pass's candidates, their pools and outcomes written once each in the decision's
// `texts` and named by position: a pass over a thousand spot nodes repeats one pool and one
// blocker a thousand times, and a multi-node group's plan (every pod's move) once per member.
// A cause as recorded; a number past the last code is a damaged record.
Cause CauseFrom(std::uint8_t code) {
  if (code > static_cast<std::uint8_t>(kCauseLast)) {
    throw CodecError("decision names cause " + std::to_string(code) + ", past the last known");
  }
  return static_cast<Cause>(code);
}

void PutCandidates(s::Decision::Disruption::Builder g,
                   const std::vector<DisruptionCandidate>& from) {
  // A handful (an index entry's one candidate) is smaller with its texts in place; subjects
  // are always in the table.
  constexpr std::size_t kSharedTextsFrom = 4;
  const bool shared = from.size() >= kSharedTextsFrom;
  auto candidates = g.initCandidates(from.size());
  std::unordered_map<std::string_view, std::uint32_t> refs;  // text -> position + 1
  std::vector<std::string_view> texts;
  auto ref = [&](const std::string& text) {
    auto [it, fresh] = refs.try_emplace(text, static_cast<std::uint32_t>(texts.size() + 1));
    if (fresh) texts.push_back(text);
    return it->second;
  };
  for (unsigned i = 0; i < from.size(); ++i) {
    candidates[i].setNodeClaim(T(from[i].nodeclaim));
    if (shared) {
      candidates[i].setNodePoolText(ref(from[i].nodepool));
      candidates[i].setOutcomeText(ref(from[i].outcome));
    } else {
      candidates[i].setNodePool(T(from[i].nodepool));
      candidates[i].setOutcome(T(from[i].outcome));
    }
    candidates[i].setCause(static_cast<std::uint8_t>(from[i].cause));
    if (!from[i].subject.empty()) candidates[i].setSubjectText(ref(from[i].subject));
  }
  if (texts.empty()) return;
  auto table = g.initTexts(texts.size());
  for (unsigned i = 0; i < texts.size(); ++i) {
    table.set(i, capnp::Text::Reader(texts[i].data(), texts[i].size()));
  }
}

void Put(s::Decision::Builder b, const Decision& d) {
  b.setId(d.id.value);
  b.setCauseSeq(d.cause.value);
  b.setAtNs(d.at.value);
  std::visit(Overloaded{
                 [&](const ProvisioningDecision& p) {
                   auto g = b.initProvisioning();
                   g.setBatchOpenedNs(p.batch_opened.value);
                   PutList(g.initNewClaims(p.new_claims.size()), p.new_claims);
                   PutList(g.initPods(p.pods.size()), p.pods);
                 },
                 [&](const DisruptionDecision& x) {
                   auto g = b.initDisruption();
                   g.setMethod(Name(x.method));
                   g.setPhase(Name(x.phase));
                   PutTexts(g.initNodeClaims(x.nodeclaims.size()), x.nodeclaims);
                   PutCandidates(g, x.candidates);
                   auto budgets = g.initBudgets(x.budgets.size());
                   for (unsigned i = 0; i < x.budgets.size(); ++i) {
                     budgets[i].setNodePool(T(x.budgets[i].nodepool));
                     budgets[i].setReason(T(x.budgets[i].reason));
                     budgets[i].setAllowed(x.budgets[i].allowed);
                     budgets[i].setDetail(T(x.budgets[i].detail));
                   }
                   g.setReason(T(x.reason));
                   g.setRemovedPriceMicroUsdHour(x.prices.removed.value);
                   if (!x.prices.replacements.empty()) {
                     PutList(g.initReplacements(x.prices.replacements.size()),
                             x.prices.replacements);
                   }
                   g.setSavingMicroUsdHour(x.prices.saving.value);
                 },
                 [&](const LifecycleDecision& l) {
                   auto g = b.initLifecycle();
                   g.setNodeClaim(T(l.nodeclaim));
                   g.setTransition(Name(l.transition));
                   g.setReason(T(l.reason));
                   g.setNodeName(T(l.node_name));
                   g.setInstanceId(T(l.instance_id));
                   g.setCause(static_cast<std::uint8_t>(l.cause));
                   g.setSubject(T(l.subject));
                 },
             },
             d.body);
}

// `keep` (may be empty: keep all) picks which of a disruption decision's candidates are decoded;
// the others are never turned into strings, which is most of the work on a pass of many.
// A disruption pass's candidates, those `keep` keeps (all without it).
std::vector<DisruptionCandidate> GetCandidates(s::Decision::Disruption::Reader g,
                                               const CandidateFilter& keep) {
  std::vector<DisruptionCandidate> out;
  // The shared texts, each read once: the reader counts every visit against the record's
  // traversal limit, and a long outcome shared by many candidates would exceed it if each
  // candidate visited it again.
  std::vector<std::string_view> texts;
  texts.reserve(g.getTexts().size());
  for (auto t : g.getTexts()) texts.push_back(View(t));
  // A candidate's pool or outcome: its own field, or the shared text it names.
  auto text = [&](std::uint32_t ref, capnp::Text::Reader own) {
    if (ref == 0) return View(own);
    if (ref > texts.size()) {
      throw CodecError("disruption candidate names text " + std::to_string(ref) + " of " +
                       std::to_string(texts.size()));
    }
    return texts[ref - 1];
  };
  for (auto c : g.getCandidates()) {
    const std::string_view pool = text(c.getNodePoolText(), c.getNodePool());
    if (keep && !keep(View(c.getNodeClaim()), pool)) continue;
    out.push_back({S(c.getNodeClaim()), std::string(pool),
                   std::string(text(c.getOutcomeText(), c.getOutcome())), CauseFrom(c.getCause()),
                   std::string(text(c.getSubjectText(), capnp::Text::Reader()))});
  }
  return out;
}

Decision Get(s::Decision::Reader r, const CandidateFilter& keep = {}) {
  // Ids are handed out from 1; a record with none is damaged or forged and keys nothing.
  if (r.getId() == 0) throw CodecError("a decision without an id (0)");
  Decision d{DecisionId{r.getId()}, tenon::Seq{r.getCauseSeq()}, Nanos{r.getAtNs()}, {}};
  switch (r.which()) {
    case s::Decision::PROVISIONING: {
      auto g = r.getProvisioning();
      d.body =
          ProvisioningDecision{Nanos{g.getBatchOpenedNs()}, GetList<ClaimPlan>(g.getNewClaims()),
                               GetList<PodOutcome>(g.getPods())};
      return d;
    }
    case s::Decision::DISRUPTION: {
      auto g = r.getDisruption();
      DisruptionDecision x{Named(ParseDisruptionMethod, g.getMethod(), "disruption method"),
                           Named(ParseDisruptionPhase, g.getPhase(), "disruption phase"),
                           GetTexts(g.getNodeClaims()),
                           {},
                           {},
                           S(g.getReason()),
                           {MicroUsdPerHour{g.getRemovedPriceMicroUsdHour()},
                            GetList<OfferingChoice>(g.getReplacements()),
                            MicroUsdPerHour{g.getSavingMicroUsdHour()}}};
      x.candidates = GetCandidates(g, keep);
      for (auto b : g.getBudgets()) {
        x.budgets.push_back(
            {S(b.getNodePool()), S(b.getReason()), b.getAllowed(), S(b.getDetail())});
      }
      d.body = std::move(x);
      return d;
    }
    case s::Decision::LIFECYCLE: {
      auto g = r.getLifecycle();
      d.body = LifecycleDecision{
          S(g.getNodeClaim()),  Named(ParseTransition, g.getTransition(), "lifecycle transition"),
          S(g.getReason()),     S(g.getNodeName()),
          S(g.getInstanceId()), CauseFrom(g.getCause()),
          S(g.getSubject())};
      return d;
    }
    case s::Decision::NONE:
      break;
  }
  throw CodecError("decision record without a body");
}

// ---- framing ----

// The same bytes as messageToFlatArray, written straight into the string: one copy of a
// record rather than two (a disruption pass's decision is megabytes at 5,000 nodes).
std::string ToBytes(capnp::MallocMessageBuilder& message) {
  const std::size_t size = capnp::computeSerializedSizeInWords(message) * sizeof(capnp::word);
  std::string bytes(size, '\0');
  kj::ArrayOutputStream out(kj::arrayPtr(reinterpret_cast<kj::byte*>(bytes.data()), size));
  capnp::writeMessage(out, message);
  assert(out.getArray().size() == size);
  return bytes;
}

// Decodes `bytes` as a message with root T and hands the reader to `fn`; every Cap'n Proto
// error (truncation, bad pointers, limits) becomes a CodecError.
template <class Root, class Fn>
auto WithReader(std::string_view bytes, Fn&& fn) {
  if (bytes.empty() || bytes.size() % sizeof(capnp::word) != 0) {
    throw CodecError("record of " + std::to_string(bytes.size()) +
                     " bytes is not a whole number of Cap'n Proto words");
  }
  // Copy into word-aligned memory: the caller's buffer carries no alignment promise.
  auto words = kj::heapArray<capnp::word>(bytes.size() / sizeof(capnp::word));
  std::memcpy(words.begin(), bytes.data(), bytes.size());
  // Reading a record never visits much more than its own words; a list of empty structs could
  // otherwise claim millions of elements from a few bytes (a forged or damaged record) and hold
  // the decoder for seconds building them.
  capnp::ReaderOptions options;
  options.traversalLimitInWords = words.size() * 8 + 1024;
  try {
    capnp::FlatArrayMessageReader reader(words.asPtr(), options);
    return fn(reader.getRoot<Root>());
  } catch (const kj::Exception& e) {
    throw CodecError(std::string("malformed record: ") + e.getDescription().cStr());
  }
}

}  // namespace

std::string EncodeEvent(const Event& event) {
  capnp::MallocMessageBuilder message;
  Put(message.initRoot<s::Record>().initEvent(), event);
  return ToBytes(message);
}

std::string EncodeOutput(tenon::Seq cause, const Output& output) {
  capnp::MallocMessageBuilder message;
  auto o = message.initRoot<s::Record>().initOutput();
  o.setCauseSeq(cause.value);
  PutList(o.initCommands(output.commands.size()), output.commands);
  auto ids = o.initDecisionIds(output.decisions.size());
  for (unsigned i = 0; i < output.decisions.size(); ++i) ids.set(i, output.decisions[i].id.value);
  return ToBytes(message);
}

Entry DecodeEntry(std::string_view bytes) {
  return WithReader<s::Record>(bytes, [](s::Record::Reader r) -> Entry {
    switch (r.which()) {
      case s::Record::EVENT:
        return Get(r.getEvent());
      case s::Record::OUTPUT: {
        auto o = r.getOutput();
        OutputRecord out{tenon::Seq{o.getCauseSeq()}, GetList<Command>(o.getCommands()), {}};
        for (auto id : o.getDecisionIds()) out.decision_ids.push_back(DecisionId{id});
        return out;
      }
    }
    throw CodecError("unknown record kind");
  });
}

std::string EncodeDecision(const Decision& decision) {
  capnp::MallocMessageBuilder message;
  Put(message.initRoot<s::Decision>(), decision);
  return ToBytes(message);
}

Decision DecodeDecision(std::string_view bytes) {
  return WithReader<s::Decision>(bytes, [](s::Decision::Reader r) { return Get(r); });
}

std::string EncodeCandidatesOnly(const Decision& decision,
                                 const std::vector<DisruptionCandidate>& candidates) {
  capnp::MallocMessageBuilder message;
  auto b = message.initRoot<s::Decision>();
  b.setId(decision.id.value);
  b.setCauseSeq(decision.cause.value);
  b.setAtNs(decision.at.value);
  PutCandidates(b.initDisruption(), candidates);
  return ToBytes(message);
}

std::optional<std::vector<DisruptionCandidate>> DecodeCandidatesOnly(std::string_view bytes) {
  using Candidates = std::optional<std::vector<DisruptionCandidate>>;
  return WithReader<s::Decision>(bytes, [](s::Decision::Reader r) -> Candidates {
    if (r.which() != s::Decision::DISRUPTION || r.getDisruption().getMethod().size() != 0) {
      return std::nullopt;
    }
    return GetCandidates(r.getDisruption(), {});
  });
}

Decision DecodeDecisionKeeping(std::string_view bytes, const CandidateFilter& keep) {
  return WithReader<s::Decision>(bytes, [&](s::Decision::Reader r) { return Get(r, keep); });
}

namespace {

// The large collections of a snapshot follow its head in parts of at most this many items, so
// that no buffer ever holds the whole state (tens of MB at 5,000 nodes).
constexpr std::size_t kSnapshotPartItems = 1024;

// Writes `map` as snapshot parts, each a Snapshot message with only the list `init` makes.
template <class Map, class Init>
void PutSlices(const Map& map, Init init, const std::function<void(std::string_view)>& sink) {
  auto it = map.begin();
  for (std::size_t left = map.size(); left > 0;) {
    const std::size_t n = std::min(left, kSnapshotPartItems);
    capnp::MallocMessageBuilder message;
    auto list = init(message.initRoot<s::Snapshot>(), static_cast<unsigned>(n));
    for (unsigned i = 0; i < n; ++i, ++it) Put(list[i], it->second);
    sink(ToBytes(message));
    left -= n;
  }
}

}  // namespace

void EncodeSnapshot(const State& state, const std::function<void(std::string_view)>& sink) {
  capnp::MallocMessageBuilder message;
  auto b = message.initRoot<s::Snapshot>();
  b.setStateHash(StateHash(state));
  b.setLastSeq(state.last_seq.value);
  b.setNowNs(state.now.value);
  b.setStarted(state.started);
  b.setSeed(state.seed);
  b.setVersion(T(state.version));
  Put(b.initSettings(), state.settings);
  PutValues(b.initNodePools(state.nodepools.size()), state.nodepools);
  PutValues(b.initNodeClasses(state.nodeclasses.size()), state.nodeclasses);
  auto unavailable = b.initUnavailableOfferings(state.unavailable_offerings.size());
  unsigned i = 0;
  for (const auto& [key, until] : state.unavailable_offerings) {
    unavailable[i].setKey(T(key));
    unavailable[i].setUntilNs(until.value);
    ++i;
  }
  b.setBatchOpen(state.batch.open);
  b.setBatchOpenedNs(state.batch.opened.value);
  b.setBatchLastPodNs(state.batch.last_pod.value);
  PutValues(b.initInflight(state.inflight.size()), state.inflight);
  PutValues(b.initRelaunches(state.relaunches.size()), state.relaunches);
  b.setNextCommand(state.next_command.value);
  b.setNextDecision(state.next_decision.value);
  b.setNextNodeClaim(state.next_nodeclaim);
  b.setRejectedInputs(state.rejected_inputs);
  b.setWatchesUnsynced(!state.watches_synced);
  PutValues(b.initDaemonSets(state.daemonsets.size()), state.daemonsets);
  PutValues(b.initPersistentVolumeClaims(state.pvcs.size()), state.pvcs);
  PutValues(b.initPersistentVolumes(state.pvs.size()), state.pvs);
  PutValues(b.initStorageClasses(state.storage_classes.size()), state.storage_classes);
  PutValues(b.initCsiNodes(state.csi_nodes.size()), state.csi_nodes);
  PutNamed(b.initNodePoolStatus(state.nodepool_status.size()), state.nodepool_status,
           [](auto item) { return item.initStatus(); });
  PutNamed(b.initNodeClassResolutions(state.nodeclass_resolutions.size()),
           state.nodeclass_resolutions, [](auto item) { return item.initResolution(); });
  {
    auto terminations = b.initNodeClassTerminations(state.nodeclass_terminations.size());
    unsigned i = 0;
    for (const auto& [name, t] : state.nodeclass_terminations) {
      terminations[i].setName(T(name));
      terminations[i].setWaitingMessage(T(t.waiting_message));
      terminations[i].setWaitingAtNs(t.waiting_at.value);
      terminations[i++].setRetryAtNs(t.retry_at.value);
    }
  }
  b.setLastInstanceListingNs(state.last_instance_listing.value);
  std::map<std::string, std::int64_t> healthy(state.registration_healthy.begin(),
                                              state.registration_healthy.end());
  Put(b.initRegistrationHealthy(healthy.size()), healthy);
  b.setLastDisruptionPassNs(state.last_disruption_pass.value);
  b.setPendingMethod(state.pending_method ? Name(*state.pending_method) : "");
  PutTexts(b.initPendingNodeClaims(state.pending_nodeclaims.size()), state.pending_nodeclaims);
  b.setPendingSinceNs(state.pending_since.value);
  b.setLastDisruptionDigest(state.last_disruption_digest);
  b.setClusterGeneration(state.cluster_generation);
  b.setConsolidatedGeneration(state.consolidated_generation);
  b.setConsolidatedAtNs(state.consolidated_at.value);
  b.setConsolidationRecheckAtNs(state.consolidation_recheck_at.value);
  PutValues(b.initPodDisruptionBudgets(state.pdbs.size()), state.pdbs);
  b.setPendingReplacements(state.pending_replacements);
  PutList(b.initReplacing(state.replacing.size()), state.replacing);
  std::map<std::string, std::int64_t> handled;
  for (const auto& [id, at] : state.handled_messages) handled[id] = at.value;
  Put(b.initHandledMessages(handled.size()), handled);
  std::map<std::string, std::int64_t> finished;
  for (const auto& [name, at] : state.finished_nodeclaims) finished[name] = at.value;
  Put(b.initFinishedNodeClaims(finished.size()), finished);
  std::map<std::string, std::int64_t> recorded;
  for (const auto& [key, until] : state.event_limits.recorded) recorded[key] = until.value;
  Put(b.initEventsRecorded(recorded.size()), recorded);
  b.setNominatedMilliTokens(state.event_limits.nominated_milli_tokens);
  b.setNominatedAtNs(state.event_limits.nominated_at.value);
  b.setEventsPrunedAtNs(state.event_limits.pruned_at.value);
  sink(ToBytes(message));
  PutSlices(
      *state.catalog, [](s::Snapshot::Builder p, unsigned n) { return p.initCatalog(n); }, sink);
  PutSlices(
      state.pods, [](s::Snapshot::Builder p, unsigned n) { return p.initPods(n); }, sink);
  PutSlices(
      state.nodes, [](s::Snapshot::Builder p, unsigned n) { return p.initNodes(n); }, sink);
  PutSlices(
      state.nodeclaims, [](s::Snapshot::Builder p, unsigned n) { return p.initNodeClaims(n); },
      sink);
}

namespace {

// Reads one snapshot part into `state`: the head's scalars only from the first part, the
// collections from every part (a snapshot of one part, as older logs have, holds them all).
void GetSnapshotPart(s::Snapshot::Reader r, bool head, State& state, std::uint64_t* stored_hash) {
  if (head) {
    if (stored_hash != nullptr) *stored_hash = r.getStateHash();
    state.last_seq = tenon::Seq{r.getLastSeq()};
    state.now = Nanos{r.getNowNs()};
    state.started = r.getStarted();
    state.seed = r.getSeed();
    state.version = S(r.getVersion());
    state.settings = Get(r.getSettings());
    state.next_command = CommandId{r.getNextCommand()};
    state.next_decision = DecisionId{r.getNextDecision()};
    state.next_nodeclaim = r.getNextNodeClaim();
    state.rejected_inputs = r.getRejectedInputs();
    state.watches_synced = !r.getWatchesUnsynced();
    state.batch = {r.getBatchOpen(), Nanos{r.getBatchOpenedNs()}, Nanos{r.getBatchLastPodNs()}};
    state.last_instance_listing = Nanos{r.getLastInstanceListingNs()};
    state.last_disruption_pass = Nanos{r.getLastDisruptionPassNs()};
    if (r.getPendingMethod().size() > 0) {
      state.pending_method =
          Named(ParseDisruptionMethod, r.getPendingMethod(), "disruption method");
    }
    state.pending_nodeclaims = GetTexts(r.getPendingNodeClaims());
    state.pending_since = Nanos{r.getPendingSinceNs()};
    state.last_disruption_digest = r.getLastDisruptionDigest();
    state.cluster_generation = r.getClusterGeneration();
    state.consolidated_generation = r.getConsolidatedGeneration();
    state.consolidated_at = Nanos{r.getConsolidatedAtNs()};
    state.consolidation_recheck_at = Nanos{r.getConsolidationRecheckAtNs()};
    state.pending_replacements = r.getPendingReplacements();
    state.replacing = GetList<ReplacementWait>(r.getReplacing());
    state.event_limits.nominated_milli_tokens = r.getNominatedMilliTokens();
    state.event_limits.nominated_at = Nanos{r.getNominatedAtNs()};
    state.event_limits.pruned_at = Nanos{r.getEventsPrunedAtNs()};
  }
  for (auto p : r.getNodePools()) state.nodepools[S(p.getName())] = Get(p);
  for (auto c : r.getNodeClasses()) state.nodeclasses[S(c.getName())] = Get(c);
  if (r.getCatalog().size() > 0) {
    Catalog& catalog = state.catalog.Mutable();
    for (auto e : r.getCatalog()) catalog[S(e.getType().getName())] = Get(e);
  }
  for (auto p : r.getPods()) {
    Pod pod = Get(p);
    state.pod_parts.Share(pod);
    const std::string key = PodKey(pod.ns, pod.name);
    state.pods.Upsert(key, std::move(pod));
  }
  for (auto n : r.getNodes()) {
    Node& node = state.nodes[S(n.getName())] = Get(n);
    state.node_parts.Share(node, state.pod_parts.node_names);
  }
  for (auto c : r.getNodeClaims()) {
    NodeClaim& claim = state.nodeclaims[S(c.getName())] = Get(c);
    state.claim_parts.Share(claim);
    state.claims_by_node.Add(claim.node_name, claim.name);
  }
  for (auto u : r.getUnavailableOfferings()) {
    state.unavailable_offerings[S(u.getKey())] = Nanos{u.getUntilNs()};
  }
  for (auto c : r.getInflight()) state.inflight[CommandId{c.getId()}] = Get(c);
  for (auto c : r.getRelaunches()) {
    Command command = Get(c);
    const auto* launch = std::get_if<LaunchInstances>(&command.body);
    if (launch == nullptr) throw CodecError("snapshot: a relaunch that is not a launch");
    state.relaunches[launch->nodeclaim] = std::move(command);
  }
  for (auto d : r.getDaemonSets()) {
    state.daemonsets[PodKey(S(d.getNamespace()), S(d.getName()))] = Get(d);
  }
  for (auto c : r.getPersistentVolumeClaims()) {
    state.pvcs[PodKey(S(c.getNamespace()), S(c.getName()))] = Get(c);
  }
  for (auto v : r.getPersistentVolumes()) state.pvs[S(v.getName())] = Get(v);
  for (auto c : r.getStorageClasses()) state.storage_classes[S(c.getName())] = Get(c);
  for (auto c : r.getCsiNodes()) state.csi_nodes[S(c.getName())] = Get(c);
  for (auto p : r.getNodePoolStatus()) state.nodepool_status[S(p.getName())] = Get(p.getStatus());
  for (auto p : r.getNodeClassResolutions()) {
    state.nodeclass_resolutions[S(p.getName())] = Get(p.getResolution());
  }
  for (auto t : r.getNodeClassTerminations()) {
    state.nodeclass_terminations[S(t.getName())] = {
        S(t.getWaitingMessage()), Nanos{t.getWaitingAtNs()}, Nanos{t.getRetryAtNs()}};
  }
  for (const auto& [pool, healthy] : GetInts(r.getRegistrationHealthy())) {
    state.registration_healthy[pool] = healthy != 0;
  }
  for (auto p : r.getPodDisruptionBudgets()) {
    state.pdbs[PodKey(S(p.getNamespace()), S(p.getName()))] = Get(p);
  }
  for (const auto& [id, at] : GetInts(r.getHandledMessages())) {
    state.handled_messages[id] = Nanos{at};
  }
  for (const auto& [name, at] : GetInts(r.getFinishedNodeClaims())) {
    state.finished_nodeclaims[name] = Nanos{at};
  }
  for (const auto& [key, until] : GetInts(r.getEventsRecorded())) {
    state.event_limits.recorded[key] = Nanos{until};
  }
}

}  // namespace

State DecodeSnapshot(const std::vector<std::string>& parts, std::uint64_t* stored_hash) {
  if (parts.empty()) throw CodecError("a snapshot without parts");
  State state;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    WithReader<s::Snapshot>(parts[i], [&](s::Snapshot::Reader r) {
      GetSnapshotPart(r, i == 0, state, stored_hash);
      return 0;
    });
  }
  return state;
}

std::uint64_t SnapshotStoredHash(std::string_view head) {
  return WithReader<s::Snapshot>(head, [](s::Snapshot::Reader r) { return r.getStateHash(); });
}

std::string EventKind(const Event& event) {
  constexpr const char* kNames[] = {"Tick",
                                    "ControllerStarted",
                                    "CatalogRefreshed",
                                    "NodePoolUpserted",
                                    "NodePoolDeleted",
                                    "NodeClassUpserted",
                                    "NodeClassDeleted",
                                    "PodUpserted",
                                    "PodDeleted",
                                    "NodeUpserted",
                                    "NodeDeleted",
                                    "FleetLaunched",
                                    "FleetFailed",
                                    "CommandSucceeded",
                                    "CommandFailed",
                                    "InputRejected",
                                    "DaemonSetUpserted",
                                    "DaemonSetDeleted",
                                    "PersistentVolumeClaimUpserted",
                                    "PersistentVolumeClaimDeleted",
                                    "PersistentVolumeUpserted",
                                    "PersistentVolumeDeleted",
                                    "StorageClassUpserted",
                                    "StorageClassDeleted",
                                    "CsiNodeUpserted",
                                    "CsiNodeDeleted",
                                    "NodeClaimDeleting",
                                    "InstancesListed",
                                    "InterruptionReceived",
                                    "PodDisruptionBudgetUpserted",
                                    "PodDisruptionBudgetDeleted",
                                    "WatchesSynced",
                                    "NodeClaimObserved",
                                    "NodeClassResolved"};
  static_assert(std::size(kNames) == std::variant_size_v<Event>);
  return kNames[event.index()];
}

std::string CommandKind(const Command& command) {
  constexpr const char* kNames[] = {"CreateNodeClaim",
                                    "DeleteNodeClaim",
                                    "LaunchInstances",
                                    "PatchNode",
                                    "EvictPod",
                                    "DeletePod",
                                    "TerminateInstance",
                                    "RemoveFinalizer",
                                    "PatchNodePoolStatus",
                                    "PatchNodeClaimStatus",
                                    "DeleteQueueMessage",
                                    "TagInstance",
                                    "PatchNodeClassStatus",
                                    "SetNodeClassFinalizer",
                                    "EnsureInstanceProfile",
                                    "DeleteNodeClassResources",
                                    "RecordKubeEvent"};
  static_assert(std::size(kNames) == std::variant_size_v<CommandBody>);
  return kNames[command.body.index()];
}

}  // namespace tenon::log
