# The simulated world's file (`sim-world.bin` in a `tenon simulate --log` folder): the cloud and
# the cluster a simulation runs against, saved after every tick and read back when a run is
# resumed (adapters/sim/world_persistence.cc). The Kubernetes objects it holds are the log's own
# (log/kube.capnp), encoded by the log's codec as events and snapshots carry them. The schema
# only grows, as the log's does: never renumber, retype or remove a field, so a world saved by
# an older tenon resumes on a newer one.
@0x8040b176dc91fba2;

$import "/capnp/c++.capnp".namespace("tenon::sim::schema");

using Kube = import "/kube.capnp";

struct World {
  # Always kWorldFormat (world_persistence.cc): a Cap'n Proto message of another kind is refused.
  format @0 :Text;
  nowNs @1 :Int64;
  started @2 :Bool;
  nextWorkload @3 :UInt64;
  nextInstance @4 :UInt64;
  nextTimer @5 :UInt64;
  nextPod @6 :UInt64;
  amiRelease @7 :Int64;
  launchCalls @8 :UInt64;
  nextListingNs @9 :Int64;
  nextMessage @10 :UInt64;
  nextBarePod @11 :UInt64;
  nextJob @12 :UInt64;
  nextAction @13 :UInt64;  # How many of the scenario's actions ran.

  # The cloud: its instances, CreateFleet's client tokens (token -> instance id), the
  # NodeClaim objects (name -> NodePool), those with a deletion timestamp, and the
  # EC2NodeClasses holding their termination finalizer.
  instances @14 :List(Instance);
  clientTokens @15 :List(Kube.KeyValue);
  nodeClaims @16 :List(Kube.KeyValue);
  deleting @17 :List(Text);
  nodeClassFinalizers @18 :List(Text);
  # What the controller planned on for each NodeClaim, and the claims whose node's kubelet
  # reported less (NodeClaim -> what fell short).
  planned @19 :List(Planned);
  overestimated @20 :List(Kube.KeyValue);

  # The API server's objects. A pod made from one of the scenario's templates is listed in
  # podTemplates (namespace/name -> template key), which the world counts its owner by.
  nodes @21 :List(Kube.Node);
  pods @22 :List(Kube.Pod);
  podTemplates @23 :List(Kube.KeyValue);
  claims @24 :List(Kube.PersistentVolumeClaim);
  volumes @25 :List(Kube.PersistentVolume);

  # The workload controllers: each Deployment's desired replicas, its latest workload step,
  # and each Job's pods not yet finished (all by namespace/name).
  replicas @26 :List(Kube.KeyInt);
  deployments @27 :List(Kube.KeyInt);
  jobPodsLeft @28 :List(Kube.KeyInt);

  # The NodePools: template labels users added, and the status the controller last patched.
  addedPoolLabels @29 :List(PoolLabels);
  poolStatus @30 :List(PoolStatus);

  timers @31 :List(Timer);

  # The NodeOverlays' status as the controller last patched it.
  overlayStatus @32 :List(OverlayStatus);
}

struct Instance {
  id @0 :Text;
  nodeClaim @1 :Text;  # The client token.
  nodePool @2 :Text;
  instanceType @3 :Text;
  zone @4 :Text;
  capacityType @5 :Text;
  priceMicroUsdHour @6 :Int64;
  launchedNs @7 :Int64;
  nodeName @8 :Text;  # Set once the kubelet registers.
  imageId @9 :Text;
}

struct Planned {
  nodeClaim @0 :Text;
  allocatable @1 :Kube.Resources;
}

struct PoolLabels {
  nodePool @0 :Text;
  labels @1 :List(Kube.KeyValue);
}

struct PoolStatus {
  nodePool @0 :Text;
  status @1 :Kube.NodePoolStatus;
}

struct OverlayStatus {
  nodeOverlay @0 :Text;
  status @1 :Kube.NodeOverlayStatus;
}

# Timer::Kind (adapters/sim/world.h), in its order.
enum TimerKind { register @0; ready @1; reclaim @2; jobDone @3; launchAnswer @4; }

struct Timer {
  atNs @0 :Int64;
  sequence @1 :UInt64;  # Orders the timers due at the same time.
  kind @2 :TimerKind;
  instanceId @3 :Text;
  command @4 :UInt64;
}
