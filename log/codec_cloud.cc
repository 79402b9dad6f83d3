// The codec of the cloud side of the model: EC2NodeClasses and their resolution, offerings,
// instance types, NodeClaims, settings, launches and the plans decisions carry.
#include "log/codec_parts.h"

namespace tenon::log::parts {

ErrorCode GetCode(s::ErrorCode code) {
  return CheckedEnum<ErrorCode>(static_cast<std::uint16_t>(code), 6, "error code");
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
  b.setRelaunchAtNs(Ns(c.relaunch_at));
  b.setTerminationDeadlineNs(Ns(c.termination_deadline));
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
  c.created = Instant{r.getCreatedNs()};
  c.launched = Instant{r.getLaunchedNs()};
  c.registered = Instant{r.getRegisteredNs()};
  c.initialized = Instant{r.getInitializedNs()};
  c.deleting = r.getDeleting();
  c.deleting_since = Instant{r.getDeletingSinceNs()};
  c.deleting_reason = S(r.getDeletingReason());
  c.instance_gone = r.getInstanceGone();
  for (const auto& [pod, n] : GetInts(r.getEvictionsRefused())) {
    c.evictions_refused[pod] = static_cast<std::int32_t>(n);
  }
  for (const auto& [pod, at] : GetInts(r.getEvictAfterNs())) c.evict_after[pod] = Instant{at};
  c.last_pod_change = Instant{r.getLastPodChangeNs()};
  c.nodepool_hash = r.getNodePoolHash();
  c.nodeclass_hash = r.getNodeClassHash();
  c.image_id = S(r.getImageId());
  c.subnet_id = S(r.getSubnetId());
  c.security_groups = GetTexts(r.getSecurityGroups());
  c.nominated_until = Instant{r.getNominatedUntilNs()};
  c.disruption_conditions = GetInts(r.getDisruptionConditions());
  c.launch_failures = r.getLaunchFailures();
  c.relaunch_at = InstantOrNone(r.getRelaunchAtNs());
  c.termination_deadline = InstantOrNone(r.getTerminationDeadlineNs());
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
  b.setStaticCapacity(v.static_capacity);
  b.setNodeOverlay(v.node_overlay);
  b.setNodeRepair(v.node_repair);
  b.setPodDeletionCost(v.pod_deletion_cost);
}
Settings Get(s::Settings::Reader r) {
  Settings v;
  v.cluster_name = S(r.getClusterName());
  v.batch_idle = Duration{r.getBatchIdleNs()};
  v.batch_max = Duration{r.getBatchMaxNs()};
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
  v.static_capacity = r.getStaticCapacity();
  v.node_overlay = r.getNodeOverlay();
  v.node_repair = r.getNodeRepair();
  v.pod_deletion_cost = r.getPodDeletionCost();
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

}  // namespace tenon::log::parts
