# The Kubernetes side of tenon's log records: the objects tenon watches and the NodeClaims it
# makes, as events and snapshots carry them. The schema only grows: never renumber, retype or
# remove a field, so a log written by an old version replays on a new one (log/tenon.capnp).
@0x900550217417f1f1;

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
  disruptionCost @29 :OptionalInt64;
}

struct PodDisruptionBudget {
  namespace @0 :Text;
  name @1 :Text;
  selector @2 :LabelSelector;
  disruptionsAllowed @3 :Int32;
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
  unhealthy @10 :List(NodeCondition);
}

struct NodeCondition {
  type @0 :Text;
  status @1 :Text;
  sinceNs @2 :Int64;
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
  replicas @16 :OptionalInt64;
}

struct DisruptionBudget {
  nodes @0 :Text;
  schedule @1 :Text;
  durationNs @2 :Int64;
  reasons @3 :List(Text);
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
  terminationDeadlineNs @35 :Int64;
}

struct NodePoolStatus {
  registrationHealthKnown @0 :Bool;
  registrationHealthy @1 :Bool;
  nodes @2 :Int64;
  resources @3 :Resources;
  validated @4 :Bool;
  nodeClassUnready @5 :Text;
}

enum PriceChangeKind { set @0; add @1; percent @2; }

struct NodeOverlay {
  name @0 :Text;
  weight @1 :Int32;
  requirements @2 :List(Requirement);
  hasPrice @3 :Bool;
  priceKind @4 :PriceChangeKind;
  priceValue @5 :Int64;  # Micro-USD an hour (set, add) or billionths of the price (percent).
  capacity @6 :List(KeyInt);
  invalid @7 :Text;
}

struct NodeOverlayStatus {
  valid @0 :Bool;
  reason @1 :Text;
  message @2 :Text;
}
