# tenon's log records: events (inputs), outputs (the commands an event produced), decisions and
# snapshots. The schema only grows: never renumber, retype or remove a field, so a log written
# by an old version replays on a new one. Units are in the field names. The objects the records
# carry are in kube.capnp (Kubernetes) and cloud.capnp (EC2 and the catalog); a field's wire
# form depends on its type's layout, not on the file the type is declared in.
@0x8872e5c918ad5bf5;

$import "/capnp/c++.capnp".namespace("tenon::schema");

using KeyValue = import "kube.capnp".KeyValue;
using KeyInt = import "kube.capnp".KeyInt;
using Resources = import "kube.capnp".Resources;
using Taint = import "kube.capnp".Taint;
using Pod = import "kube.capnp".Pod;
using PodDisruptionBudget = import "kube.capnp".PodDisruptionBudget;
using DaemonSet = import "kube.capnp".DaemonSet;
using PersistentVolumeClaim = import "kube.capnp".PersistentVolumeClaim;
using PersistentVolume = import "kube.capnp".PersistentVolume;
using StorageClass = import "kube.capnp".StorageClass;
using CsiNode = import "kube.capnp".CsiNode;
using Node = import "kube.capnp".Node;
using NodePool = import "kube.capnp".NodePool;
using NodeClaim = import "kube.capnp".NodeClaim;
using NodePoolStatus = import "kube.capnp".NodePoolStatus;
using NodeOverlay = import "kube.capnp".NodeOverlay;
using NodeOverlayStatus = import "kube.capnp".NodeOverlayStatus;
using OptionalInt64 = import "kube.capnp".OptionalInt64;
using ErrorCode = import "cloud.capnp".ErrorCode;
using NodeClass = import "cloud.capnp".NodeClass;
using NodeClassResolution = import "cloud.capnp".NodeClassResolution;
using InstanceType = import "cloud.capnp".InstanceType;
using Settings = import "cloud.capnp".Settings;
using FleetError = import "cloud.capnp".FleetError;
using CloudInstance = import "cloud.capnp".CloudInstance;
using LaunchOverride = import "cloud.capnp".LaunchOverride;
using LaunchNode = import "cloud.capnp".LaunchNode;

struct ReplacementWait {
  method @0 :Text;
  candidates @1 :List(Text);
  replacements @2 :List(Text);
  startedNs @3 :Int64;
  reason @4 :Text;
  draining @5 :Bool;
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
    nodeClaimDeletionRequested @45 :Text;
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
    nodeOverlayUpserted @64 :NodeOverlay;
    nodeOverlayDeleted @65 :Text;
  }
}

struct Command {
  id @0 :UInt64;
  causeSeq @1 :UInt64;
  union {
    createNodeClaim @2 :NodeClaim;
    deleteNodeClaim @3 :Text;
    launchInstance :group {
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
    patchNodeOverlayStatus :group {
      nodeOverlay @61 :Text;
      status @62 :NodeOverlayStatus;
    }
    patchPodDeletionCost :group {
      namespace @63 :Text;
      name @64 :Text;
      uid @65 :Text;
      cost @66 :OptionalInt64;
    }
  }
}

struct NamedNodePoolStatus {
  name @0 :Text;
  status @1 :NodePoolStatus;
}

struct NamedNodeOverlayStatus {
  name @0 :Text;
  status @1 :NodeOverlayStatus;
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
  nodeOverlays @52 :List(NodeOverlay);
  nodeOverlayStatus @53 :List(NamedNodeOverlayStatus);
  deletionCostRankedAtNs @54 :Int64;
  deletionCostGeneration @55 :UInt64;
}
