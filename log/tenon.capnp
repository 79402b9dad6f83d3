# tenon's log records: events (inputs), outputs (the commands an event produced), decisions and
# snapshots. The schema only grows: never renumber, retype or remove a field, so a log written
# by an old version replays on a new one. Units are in the field names.
@0x8872e5c918ad5bf5;

$import "/capnp/c++.capnp".namespace("tenon::schema");

struct KeyValue {
  key @0 :Text;
  value @1 :Text;
}

struct KeyInt {
  key @0 :Text;
  value @1 :Int64;
}

struct Resources {
  cpuMillis @0 :Int64;
  memoryBytes @1 :Int64;
  pods @2 :Int64;
  extended @3 :List(KeyInt);  # Other resources by Kubernetes name, in their integer unit.
}

enum RequirementOp { in @0; notIn @1; exists @2; doesNotExist @3; gt @4; lt @5; }

struct Requirement {
  key @0 :Text;
  op @1 :RequirementOp;
  values @2 :List(Text);
  minValues @3 :Int32;
}

enum TaintEffect { noSchedule @0; preferNoSchedule @1; noExecute @2; }

struct Taint {
  key @0 :Text;
  value @1 :Text;
  effect @2 :TaintEffect;
}

struct Toleration {
  key @0 :Text;
  opExists @1 :Bool;
  value @2 :Text;
  hasEffect @3 :Bool;
  effect @4 :TaintEffect;
}

enum ErrorCode {
  insufficientCapacity @0; throttled @1; notFound @2; unauthorized @3; invalid @4; transient @5;
  disruptionBudget @6;
}

struct LabelSelector {
  matchLabels @0 :List(KeyValue);
  matchExpressions @1 :List(Requirement);
}

struct NodeSelectorTerm {
  requirements @0 :List(Requirement);
  weight @1 :Int32;
}

struct PodAffinityTerm {
  selector @0 :LabelSelector;
  namespaces @1 :List(Text);
  allNamespaces @2 :Bool;
  topologyKey @3 :Text;
  matchLabelKeys @4 :List(Text);
  weight @5 :Int32;
}

struct TopologySpreadConstraint {
  maxSkew @0 :Int32;
  topologyKey @1 :Text;
  doNotSchedule @2 :Bool;
  selector @3 :LabelSelector;
  minDomains @4 :Int32;
  nodeAffinityHonor @5 :Bool;
  nodeTaintsHonor @6 :Bool;
  matchLabelKeys @7 :List(Text);
}

struct HostPort {
  port @0 :Int32;
  protocol @1 :Text;
  hostIp @2 :Text;
}

struct Pod {
  namespace @0 :Text;
  name @1 :Text;
  uid @2 :Text;
  requests @3 :Resources;
  nodeName @4 :Text;
  unschedulable @5 :Bool;
  phase @6 :Text;
  ownerKind @7 :Text;
  createdNs @8 :Int64;
  labels @9 :List(KeyValue);
  nodeSelector @10 :List(KeyValue);
  tolerations @11 :List(Toleration);
  nodeAffinityRequired @12 :List(NodeSelectorTerm);
  nodeAffinityPreferred @13 :List(NodeSelectorTerm);
  podAffinityRequired @14 :List(PodAffinityTerm);
  podAffinityPreferred @15 :List(PodAffinityTerm);
  podAntiAffinityRequired @16 :List(PodAffinityTerm);
  podAntiAffinityPreferred @17 :List(PodAffinityTerm);
  topologySpread @18 :List(TopologySpreadConstraint);
  volumeClaims @19 :List(Text);
  hostPorts @20 :List(HostPort);
  nominatedNode @21 :Text;
  doNotDisrupt @22 :Bool;
  priorityClass @23 :Text;
  terminationGraceNs @24 :Int64;
  doNotDisruptForNs @25 :Int64;
  priority @26 :OptionalInt64;
  deletionCost @27 :Int32;
  deletionNs @28 :Int64;
}

struct PodDisruptionBudget {
  namespace @0 :Text;
  name @1 :Text;
  selector @2 :LabelSelector;
  disruptionsAllowed @3 :Int32;
}

struct ReplacementWait {
  method @0 :Text;
  candidates @1 :List(Text);
  replacements @2 :List(Text);
  startedNs @3 :Int64;
  reason @4 :Text;
  draining @5 :Bool;
}

struct DaemonSet {
  namespace @0 :Text;
  name @1 :Text;
  pod @2 :Pod;
}

struct PersistentVolumeClaim {
  namespace @0 :Text;
  name @1 :Text;
  storageClass @2 :Text;
  volumeName @3 :Text;
}

struct PersistentVolume {
  name @0 :Text;
  csiDriver @1 :Text;
  nodeAffinity @2 :List(NodeSelectorTerm);
}

struct StorageClass {
  name @0 :Text;
  provisioner @1 :Text;
  waitForFirstConsumer @2 :Bool;
  allowedTopologies @3 :List(NodeSelectorTerm);
}

struct CsiNode {
  name @0 :Text;
  attachLimits @1 :List(KeyInt);
}

struct Node {
  name @0 :Text;
  providerId @1 :Text;
  labels @2 :List(KeyValue);
  taints @3 :List(Taint);
  ready @4 :Bool;
  allocatable @5 :Resources;
  createdNs @6 :Int64;
  volumesAttached @7 :List(Text);
  doNotDisrupt @8 :Bool;
  deleting @9 :Bool;
}

struct OptionalInt64 {
  set @0 :Bool;
  value @1 :Int64;
}

struct NodePool {
  name @0 :Text;
  weight @1 :Int32;
  labels @2 :List(KeyValue);
  requirements @3 :List(Requirement);
  taints @4 :List(Taint);
  startupTaints @5 :List(Taint);
  nodeClass @6 :Text;
  limitCpuMillis @7 :OptionalInt64;
  limitMemoryBytes @8 :OptionalInt64;
  limitNodes @9 :OptionalInt64;
  expireAfterNs @10 :Int64;
  limitsExtended @11 :List(KeyInt);
  terminationGracePeriodNs @12 :Int64;
  consolidationPolicy @13 :UInt8;
  consolidateAfterNs @14 :Int64;
  budgets @15 :List(DisruptionBudget);
}

struct DisruptionBudget {
  nodes @0 :Text;
  schedule @1 :Text;
  durationNs @2 :Int64;
  reasons @3 :List(Text);
}

struct NodeClass {
  name @0 :Text;
  amiFamily @1 :Text;
  role @2 :Text;
  ready @3 :Bool;
  maxPods @4 :OptionalInt64;
  podsPerCore @5 :OptionalInt64;
  amis @6 :List(Text);
  subnets @7 :List(Text);
  securityGroups @8 :List(Text);
  terminating @9 :Bool;
  zones @10 :List(Text);
  archs @11 :List(Text);
  userData @12 :Text;
  tags @13 :List(KeyValue);
  finalizer @14 :Bool;
}

struct NodeClassResolution {
  amis @0 :List(ResolvedAmi);
  subnets @1 :List(ResolvedSubnet);
  securityGroups @2 :List(ResolvedSecurityGroup);
  instanceProfile @3 :Text;
  reason @4 :Text;
  message @5 :Text;
}

struct ResolvedAmi {
  id @0 :Text;
  name @1 :Text;
  arch @2 :Text;
  created @3 :Text;
}

struct ResolvedSubnet {
  id @0 :Text;
  zone @1 :Text;
  zoneId @2 :Text;
  freeIps @3 :Int64;
}

struct ResolvedSecurityGroup {
  id @0 :Text;
  name @1 :Text;
}

struct Offering {
  zone @0 :Text;
  capacityType @1 :Text;
  priceMicroUsdHour @2 :Int64;
  available @3 :Bool;
}

struct InstanceType {
  name @0 :Text;
  arch @1 :Text;
  cpuMillis @2 :Int64;
  memoryBytes @3 :Int64;
  maxEnis @4 :Int32;
  ipv4PerEni @5 :Int32;
  gpuCount @6 :Int32;
  bareMetal @7 :Bool;
  offerings @8 :List(Offering);
  gpuName @9 :Text;
  gpuManufacturer @10 :Text;
  gpuMemoryBytes @11 :Int64;
  acceleratorCount @12 :Int32;
  cpuManufacturer @13 :Text;
  hypervisor @14 :Text;
  localNvmeGib @15 :Int64;
  labels @16 :List(KeyValue);
  extended @17 :List(KeyInt);
  allocatable @18 :Resources;  # Set only when the catalog writes it by hand.
}

enum ClaimPhase { pending @0; launched @1; registered @2; initialized @3; failed @4; }

struct NodeClaim {
  name @0 :Text;
  nodePool @1 :Text;
  nodeClass @2 :Text;
  requirements @3 :List(Requirement);
  requests @4 :Resources;
  instanceTypes @5 :List(Text);
  phase @6 :ClaimPhase;
  providerId @7 :Text;
  instanceId @8 :Text;
  instanceType @9 :Text;
  zone @10 :Text;
  capacityType @11 :Text;
  priceMicroUsdHour @12 :Int64;
  nodeName @13 :Text;
  allocatable @14 :Resources;
  createdNs @15 :Int64;
  launchedNs @16 :Int64;
  registeredNs @17 :Int64;
  initializedNs @18 :Int64;
  deleting @19 :Bool;
  deletingSinceNs @20 :Int64;
  deletingReason @21 :Text;
  instanceGone @22 :Bool;
  evictionsRefused @23 :List(KeyInt);
  evictAfterNs @24 :List(KeyInt);
  lastPodChangeNs @25 :Int64;
  nodePoolHash @26 :UInt64;
  nodeClassHash @27 :UInt64;
  imageId @28 :Text;
  subnetId @29 :Text;
  securityGroups @30 :List(Text);
  nominatedUntilNs @31 :Int64;
  disruptionConditions @32 :List(KeyInt);
  launchFailures @33 :Int32;
  relaunchAtNs @34 :Int64;
}

struct Settings {
  clusterName @0 :Text;
  batchIdleNs @1 :Int64;
  batchMaxNs @2 :Int64;
  vmMemoryOverheadPermille @3 :Int32;
  ignorePreferences @4 :Bool;
  minValuesBestEffort @5 :Bool;
  spotToSpotConsolidation @6 :Bool;
  consolidationMinSavingsMicroUsdHour @7 :Int64;
  consolidationMinSavingsPercent @8 :Int32;
  softExpiration @9 :Bool;
  reservedEnis @10 :Int32;
  clusterEndpoint @11 :Text;
  clusterCaBundle @12 :Text;
}

struct FleetError {
  instanceType @0 :Text;
  zone @1 :Text;
  capacityType @2 :Text;
  code @3 :ErrorCode;
  message @4 :Text;
}

struct CloudInstance {
  id @0 :Text;
  nodeClaim @1 :Text;
  launchedNs @2 :Int64;
  state @3 :Text;
}

struct Event {
  union {
    tick :group { nowNs @0 :Int64; }
    controllerStarted :group {
      version @1 :Text;
      seed @2 :UInt64;
      settings @3 :Settings;
    }
    catalogRefreshed @4 :List(InstanceType);
    nodePoolUpserted @5 :NodePool;
    nodePoolDeleted @6 :Text;
    nodeClassUpserted @7 :NodeClass;
    nodeClassDeleted @8 :Text;
    podUpserted @9 :Pod;
    podDeleted :group {
      namespace @10 :Text;
      name @11 :Text;
    }
    nodeUpserted @12 :Node;
    nodeDeleted @13 :Text;
    fleetLaunched :group {
      command @14 :UInt64;
      nodeClaim @15 :Text;
      instanceId @16 :Text;
      providerId @17 :Text;
      instanceType @18 :Text;
      zone @19 :Text;
      capacityType @20 :Text;
      priceMicroUsdHour @21 :Int64;
      errors @44 :List(FleetError);
      imageId @54 :Text;
      subnetId @55 :Text;
      securityGroups @56 :List(Text);
      request @62 :Text;
    }
    fleetFailed :group {
      command @22 :UInt64;
      nodeClaim @23 :Text;
      errors @24 :List(FleetError);
      request @63 :Text;
    }
    commandSucceeded @25 :UInt64;
    commandFailed :group {
      command @26 :UInt64;
      code @27 :ErrorCode;
      message @28 :Text;
    }
    inputRejected :group {
      source @29 :Text;
      reason @30 :Text;
      payload @31 :Data;
      messageId @59 :Text;
      # Added later: the queue message the rejected input came in, deleted once this is in
      # the log; empty for input from elsewhere (and in events recorded before).
    }
    daemonSetUpserted @32 :DaemonSet;
    daemonSetDeleted :group {
      namespace @33 :Text;
      name @34 :Text;
    }
    persistentVolumeClaimUpserted @35 :PersistentVolumeClaim;
    persistentVolumeClaimDeleted :group {
      namespace @36 :Text;
      name @37 :Text;
    }
    persistentVolumeUpserted @38 :PersistentVolume;
    persistentVolumeDeleted @39 :Text;
    storageClassUpserted @40 :StorageClass;
    storageClassDeleted @41 :Text;
    csiNodeUpserted @42 :CsiNode;
    csiNodeDeleted @43 :Text;
    nodeClaimDeleting @45 :Text;
    instancesListed @46 :List(CloudInstance);
    interruptionReceived :group {
      messageId @47 :Text;
      kind @48 :UInt8;
      instanceId @49 :Text;
      detail @50 :Text;
    }
    podDisruptionBudgetUpserted @51 :PodDisruptionBudget;
    podDisruptionBudgetDeleted :group {
      namespace @52 :Text;
      name @53 :Text;
    }
    watchesSynced @57 :Bool;
    nodeClaimObserved @58 :NodeClaim;
    nodeClassResolved :group {
      nodeClass @60 :Text;
      resolution @61 :NodeClassResolution;
    }
  }
}

struct LaunchOverride {
  instanceType @0 :Text;
  zone @1 :Text;
  capacityType @2 :Text;
  priceMicroUsdHour @3 :Int64;
  subnet @4 :Text;
  image @5 :Text;
}

struct LaunchNode {
  amiFamily @0 :Text;
  instanceProfile @1 :Text;
  securityGroups @2 :List(Text);
  userData @3 :Text;
  maxPods @4 :OptionalInt64;
  labels @5 :List(KeyValue);
  taints @6 :List(Taint);
  tags @7 :List(KeyValue);
  clusterName @8 :Text;
  clusterEndpoint @9 :Text;
  clusterCaBundle @10 :Text;
}

struct Command {
  id @0 :UInt64;
  causeSeq @1 :UInt64;
  union {
    createNodeClaim @2 :NodeClaim;
    deleteNodeClaim @3 :Text;
    launchInstances :group {
      nodeClaim @4 :Text;
      nodePool @5 :Text;
      nodeClass @6 :Text;
      clientToken @7 :Text;
      capacityType @8 :Text;
      overrides @9 :List(LaunchOverride);
      tags @10 :List(KeyValue);
      allocationStrategy @14 :Text;
      node @45 :LaunchNode;
    }
    patchNode :group {
      nodeName @11 :Text;
      addLabels @12 :List(KeyValue);
      removeTaints @13 :List(Text);
      addTaints @15 :List(Taint);
      ownerNodeClaim @39 :Text;
    }
    evictPod :group {
      namespace @16 :Text;
      name @17 :Text;
      nodeClaim @18 :Text;
    }
    deletePod :group {
      namespace @19 :Text;
      name @20 :Text;
      nodeClaim @21 :Text;
    }
    terminateInstance :group {
      instanceId @22 :Text;
      nodeClaim @23 :Text;
    }
    removeFinalizer :group {
      nodeClaim @24 :Text;
      nodeName @25 :Text;
    }
    patchNodePoolStatus :group {
      nodePool @26 :Text;
      status @27 :NodePoolStatus;
    }
    patchNodeClaimStatus :group {
      nodeClaim @28 :Text;
      condition @29 :Text;
      status @30 :Bool;
      reason @31 :Text;
      providerId @32 :Text;
      nodeName @33 :Text;
      labels @35 :List(KeyValue);  # Set on Launched, with the three fields below.
      imageId @36 :Text;
      capacity @37 :Resources;
      allocatable @38 :Resources;
    }
    deleteQueueMessage @34 :Text;
    tagInstance :group {
      instanceId @40 :Text;
      nodeClaim @41 :Text;
      tags @42 :List(KeyValue);
    }
    patchNodeClassStatus :group {
      nodeClass @43 :Text;
      resolution @44 :NodeClassResolution;
    }
    setNodeClassFinalizer :group {
      nodeClass @46 :Text;
      present @47 :Bool;
    }
    ensureInstanceProfile :group {
      nodeClass @48 :Text;
      role @49 :Text;
      clusterName @50 :Text;
    }
    deleteNodeClassResources :group {
      nodeClass @51 :Text;
      clusterName @52 :Text;
      instanceProfile @53 :Bool;
    }
    recordKubeEvent :group {
      apiVersion @54 :Text;
      kind @55 :Text;
      namespace @56 :Text;
      name @57 :Text;
      type @58 :Text;
      reason @59 :Text;
      message @60 :Text;
    }
  }
}

struct NodePoolStatus {
  registrationHealthKnown @0 :Bool;
  registrationHealthy @1 :Bool;
  nodes @2 :Int64;
  resources @3 :Resources;
  validated @4 :Bool;
  nodeClassUnready @5 :Text;
}

struct NamedNodePoolStatus {
  name @0 :Text;
  status @1 :NodePoolStatus;
}

struct NamedNodeClassResolution {
  name @0 :Text;
  resolution @1 :NodeClassResolution;
}

struct NamedNodeClassTermination {
  name @0 :Text;
  waitingMessage @1 :Text;
  waitingAtNs @2 :Int64;
  retryAtNs @3 :Int64;
}

struct OfferingChoice {
  instanceType @0 :Text;
  zone @1 :Text;
  capacityType @2 :Text;
  priceMicroUsdHour @3 :Int64;
}

struct ClaimPlan {
  nodeClaim @0 :Text;
  nodePool @1 :Text;
  pods @2 :List(Text);
  requests @3 :Resources;
  offerings @4 :List(OfferingChoice);
}

struct PodOutcome {
  pod @0 :Text;
  target @1 :Text;
  reason @2 :Text;
  relaxed @3 :List(Text);
}

struct Decision {
  id @0 :UInt64;
  causeSeq @1 :UInt64;
  atNs @2 :Int64;
  union {
    # The zero value: a decision record always sets a body, so reading `none` means corruption.
    none @3 :Void;
    provisioning :group {
      batchOpenedNs @4 :Int64;
      newClaims @5 :List(ClaimPlan);
      pods @6 :List(PodOutcome);
    }
    lifecycle :group {
      nodeClaim @7 :Text;
      transition @8 :Text;
      reason @9 :Text;
      nodeName @10 :Text;
      instanceId @11 :Text;
      # Added later: zero and empty in decisions recorded before (LifecycleDecision).
      cause @22 :UInt8;
      subject @23 :Text;
    }
    disruption :group {
      method @12 :Text;
      phase @13 :Text;
      nodeClaims @14 :List(Text);
      candidates @15 :List(DisruptionCandidate);
      budgets @16 :List(BudgetState);
      reason @17 :Text;
      # Added later: zero and empty in decisions recorded before (DisruptionDecision).
      removedPriceMicroUsdHour @18 :Int64;
      replacements @19 :List(OfferingChoice);
      savingMicroUsdHour @20 :Int64;
      # Added later: the candidates' pools and outcomes, each distinct text once (a pass over a
      # thousand candidates names one pool and a few dozen blockers). Empty in decisions
      # recorded before, whose candidates carry their own texts.
      texts @21 :List(Text);
    }
  }
}

struct DisruptionCandidate {
  nodeClaim @0 :Text;
  nodePool @1 :Text;
  outcome @2 :Text;
  # Added later: a position in the decision's `texts`, plus one; zero reads the field above
  # (what decisions recorded before the table hold).
  nodePoolText @3 :UInt32;
  outcomeText @4 :UInt32;
  # Added later: zero in decisions recorded before (DisruptionCandidate). The subject is a
  # position in `texts` plus one, as above; zero: none.
  cause @5 :UInt8;
  subjectText @6 :UInt32;
}

struct BudgetState {
  nodePool @0 :Text;
  reason @1 :Text;
  allowed @2 :Int64;
  detail @3 :Text;
}

# What folding one event produced: its commands, and the ids of its decisions (which live in
# the decisions column family). Written after the event, before any command runs.
struct Output {
  causeSeq @0 :UInt64;
  commands @1 :List(Command);
  decisionIds @2 :List(UInt64);
}

# One record of the events column family.
struct Record {
  union {
    event @0 :Event;
    output @1 :Output;
  }
}

struct CatalogEntry {
  type @0 :InstanceType;
  allocatable @1 :Resources;
  labels @2 :List(KeyValue);
}

struct UnavailableOffering {
  key @0 :Text;
  untilNs @1 :Int64;
}

# The whole core state after folding `lastSeq`, and its hash for verification.
struct Snapshot {
  stateHash @0 :UInt64;
  lastSeq @1 :UInt64;
  nowNs @2 :Int64;
  started @3 :Bool;
  seed @4 :UInt64;
  version @5 :Text;
  settings @6 :Settings;
  nodePools @7 :List(NodePool);
  nodeClasses @8 :List(NodeClass);
  catalog @9 :List(CatalogEntry);
  pods @10 :List(Pod);
  nodes @11 :List(Node);
  nodeClaims @12 :List(NodeClaim);
  unavailableOfferings @13 :List(UnavailableOffering);
  batchOpen @14 :Bool;
  batchOpenedNs @15 :Int64;
  batchLastPodNs @16 :Int64;
  inflight @17 :List(Command);
  nextCommand @18 :UInt64;
  nextDecision @19 :UInt64;
  nextNodeClaim @20 :UInt64;
  rejectedInputs @21 :UInt64;
  daemonSets @22 :List(DaemonSet);
  persistentVolumeClaims @23 :List(PersistentVolumeClaim);
  persistentVolumes @24 :List(PersistentVolume);
  storageClasses @25 :List(StorageClass);
  csiNodes @26 :List(CsiNode);
  nodePoolStatus @27 :List(NamedNodePoolStatus);
  lastInstanceListingNs @28 :Int64;
  registrationHealthy @29 :List(KeyInt);
  lastDisruptionPassNs @30 :Int64;
  pendingMethod @31 :Text;
  pendingNodeClaims @32 :List(Text);
  pendingSinceNs @33 :Int64;
  lastDisruptionDigest @34 :UInt64;
  podDisruptionBudgets @35 :List(PodDisruptionBudget);
  pendingReplacements @36 :UInt64;
  replacing @37 :List(ReplacementWait);
  handledMessages @38 :List(KeyInt);
  watchesUnsynced @39 :Bool;  # Inverted so that older snapshots read as in sync.
  finishedNodeClaims @40 :List(KeyInt);
  clusterGeneration @41 :UInt64;
  consolidatedGeneration @42 :UInt64;
  consolidatedAtNs @43 :Int64;
  consolidationRecheckAtNs @44 :Int64;
  relaunches @45 :List(Command);
  nodeClassResolutions @46 :List(NamedNodeClassResolution);
  nodeClassTerminations @47 :List(NamedNodeClassTermination);
  # The core's limits on the Kubernetes Events it records (EventLimits).
  eventsRecorded @48 :List(KeyInt);  # Dedupe key, until (ns).
  nominatedMilliTokens @49 :Int64 = 10000;
  nominatedAtNs @50 :Int64;
  eventsPrunedAtNs @51 :Int64;
}
