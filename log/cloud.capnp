# The cloud side of tenon's log records: EC2NodeClasses and what they resolve to, the catalog's
# instance types and offerings, launches and their errors. The schema only grows: never
# renumber, retype or remove a field (log/tenon.capnp).
@0xf155f2bff79e982d;

$import "/capnp/c++.capnp".namespace("tenon::schema");

using KeyValue = import "kube.capnp".KeyValue;
using KeyInt = import "kube.capnp".KeyInt;
using Resources = import "kube.capnp".Resources;
using Taint = import "kube.capnp".Taint;
using OptionalInt64 = import "kube.capnp".OptionalInt64;

enum ErrorCode {
  insufficientCapacity @0; throttled @1; notFound @2; unauthorized @3; invalid @4; transient @5;
  disruptionBudget @6;
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
  staticCapacity @13 :Bool;
  nodeOverlay @14 :Bool;
  nodeRepair @15 :Bool;
  podDeletionCost @16 :Bool;
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
