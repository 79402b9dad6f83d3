// Unit tests of the core: the batch window, the provisioning pass, the NodeClaim lifecycle,
// capacity errors and the determinism of ids, names and the state hash.
#include <gtest/gtest.h>

#include <set>

#include "reducers/requirements.h"
#include "tests/reducers/fixtures.h"

namespace tenon::testing {
namespace {

// Whether the batch is still open after `out`: nothing planned, nothing launched (the NodePool
// status a first tick publishes aside).
bool NothingPlanned(const Output& out) {
  return out.decisions.empty() && CommandsOf<CreateNodeClaim>(out).empty() &&
         CommandsOf<LaunchInstance>(out).empty();
}

// The batch closes 1 s after the last pending pod, not before.
TEST(BatchWindow, ClosesAfterIdleSecond) {
  Folder f;
  f.Start({Pool("default")});
  f.Fold(PodUpserted{PendingPod("web-1", 500, 512)});
  EXPECT_TRUE(NothingPlanned(f.Fold(Tick{kT0 + Duration{kSecond.value / 2}})));
  Output out = f.Fold(Tick{kT0 + kSecond});
  EXPECT_EQ(CommandsOf<CreateNodeClaim>(out).size(), 1u);
  EXPECT_EQ(CommandsOf<LaunchInstance>(out).size(), 1u);
  ASSERT_EQ(out.decisions.size(), 1u);
  EXPECT_FALSE(f.state.batch.open);
}

// Pods arriving every half second keep the window open until its 10 s maximum.
TEST(BatchWindow, ClosesAtMaximumDuration) {
  Folder f;
  f.Start({Pool("default")});
  Duration half{kSecond.value / 2};
  for (int i = 0; i < 19; ++i) {
    Instant now = kT0 + Duration{half.value * i};
    EXPECT_TRUE(NothingPlanned(f.Fold(Tick{now}))) << "closed early at step " << i;
    f.Fold(PodUpserted{PendingPod("web-" + std::to_string(i), 100, 128, now)});
  }
  Output out = f.Fold(Tick{kT0 + Duration{10 * kSecond.value}});
  EXPECT_FALSE(CommandsOf<LaunchInstance>(out).empty());
}

// Bound, DaemonSet-owned and not-yet-unschedulable pods never open a batch.
TEST(BatchWindow, IgnoresPodsKarpenterIgnores) {
  Folder f;
  f.Start({Pool("default")});
  Pod bound = PendingPod("bound", 100, 100);
  bound.node_name = "n1";
  Pod ds = PendingPod("ds", 100, 100);
  ds.owner_kind = "DaemonSet";
  Pod fresh = PendingPod("fresh", 100, 100);
  fresh.unschedulable = false;
  f.FoldAll({PodUpserted{bound}, PodUpserted{ds}, PodUpserted{fresh}});
  EXPECT_FALSE(f.state.batch.open);
}

// The fleet request lists the cheapest offerings first, spot when the pool allows it.
TEST(Provisioning, CheapestOfferingsSpotWhenAllowed) {
  Folder f;
  f.Start(
      {Pool("default", 0,
            {{label::kCapacityType, RequirementOp::kIn, {kCapacitySpot, kCapacityOnDemand}, 0}})});
  f.Fold(PodUpserted{PendingPod("web-1", 1500, 3000)});
  Output out = f.Fold(Tick{kT0 + kSecond});
  auto launches = CommandsOf<LaunchInstance>(out);
  ASSERT_EQ(launches.size(), 1u);
  const auto& overrides = launches[0]->overrides;
  ASSERT_FALSE(overrides.empty());
  EXPECT_EQ(launches[0]->capacity_type, kCapacitySpot);
  for (std::size_t i = 1; i < overrides.size(); ++i) {
    EXPECT_LE(overrides[i - 1].price, overrides[i].price);
  }
  EXPECT_EQ(overrides.front().instance_type, "m6g.large");  // 77,000 * 0.4: the cheapest fit.
  EXPECT_LE(overrides.size(), kFleetOverridesMax);
  EXPECT_EQ(launches[0]->client_token, launches[0]->nodeclaim);
}

// A pool restricted to on-demand and amd64 never offers spot or arm64.
TEST(Provisioning, HonoursNodePoolRequirements) {
  Folder f;
  f.Start({Pool("od", 0,
                {{label::kCapacityType, RequirementOp::kIn, {kCapacityOnDemand}, 0},
                 {label::kArch, RequirementOp::kIn, {"amd64"}, 0}})});
  f.Fold(PodUpserted{PendingPod("web-1", 500, 512)});
  Output out = f.Fold(Tick{kT0 + kSecond});
  auto launches = CommandsOf<LaunchInstance>(out);
  ASSERT_EQ(launches.size(), 1u);
  for (const auto& o : launches[0]->overrides) {
    EXPECT_EQ(o.capacity_type, kCapacityOnDemand);
    EXPECT_NE(o.instance_type, "m6g.large");
  }
  EXPECT_EQ(launches[0]->overrides.front().instance_type, "c5.large");
}

// A zone nodeSelector narrows the offerings to that zone.
TEST(Provisioning, NodeSelectorNarrowsZones) {
  Folder f;
  f.Start({Pool("default")});
  Pod pod = PendingPod("web-1", 500, 512);
  pod.constraints.Mutable().node_selector[label::kZone] = "us-east-1b";
  f.Fold(PodUpserted{pod});
  Output out = f.Fold(Tick{kT0 + kSecond});
  auto launches = CommandsOf<LaunchInstance>(out);
  ASSERT_EQ(launches.size(), 1u);
  for (const auto& o : launches[0]->overrides) EXPECT_EQ(o.zone, "us-east-1b");
}

// Karpenter's "should not schedule nodes with a hostname selector" and "...with restricted
// labels/domains": a pending pod asking for kubernetes.io/hostname, or for a label in a
// restricted domain, is ignored with the reason and nothing is launched for it, not on this
// batch nor on any later one; the domains' exceptions and well-known labels are allowed.
TEST(Provisioning, PodsAskingForRestrictedLabelsAreIgnored) {
  EXPECT_NE(core::RestrictedLabel("kubernetes.io/hostname"), "");
  EXPECT_NE(core::RestrictedLabel("example.kubernetes.io/team"), "");
  EXPECT_NE(core::RestrictedLabel("karpenter.sh/custom"), "");
  EXPECT_NE(core::RestrictedLabel("x.k8s.io/a"), "");
  EXPECT_EQ(core::RestrictedLabel("node-role.kubernetes.io/worker"), "");
  EXPECT_EQ(core::RestrictedLabel("node-restriction.kubernetes.io/team"), "");
  EXPECT_EQ(core::RestrictedLabel("node.kubernetes.io/instance-type"), "");
  EXPECT_EQ(core::RestrictedLabel("topology.kubernetes.io/zone"), "");
  EXPECT_EQ(core::RestrictedLabel("karpenter.sh/capacity-type"), "");
  EXPECT_EQ(core::RestrictedLabel("karpenter.k8s.aws/instance-family"), "");
  EXPECT_EQ(core::RestrictedLabel("team"), "");
  EXPECT_EQ(core::RestrictedLabel("example.com/team"), "");

  Folder f;
  f.Start({Pool("default")});
  Pod pinned = PendingPod("pinned", 500, 512);
  pinned.constraints.Mutable().node_selector[label::kHostname] = "red-node";
  Pod affinity = PendingPod("affinity", 500, 512);
  affinity.constraints.Mutable().node_affinity_required.push_back(
      {{{"example.kubernetes.io/team", RequirementOp::kIn, {"a"}, 0}}, 0});
  f.FoldAll({PodUpserted{pinned}, PodUpserted{affinity}});
  std::size_t launched = 0;
  std::vector<PodOutcome> outcomes;
  for (int second = 1; second <= 120; ++second) {
    Output out = f.Fold(Tick{kT0 + Duration{second * kSecond.value}});
    launched += CommandsOf<CreateNodeClaim>(out).size();
    for (const auto& d : out.decisions) {
      if (const auto* p = std::get_if<ProvisioningDecision>(&d.body)) {
        outcomes.insert(outcomes.end(), p->pods.begin(), p->pods.end());
      }
    }
  }
  EXPECT_EQ(launched, 0u);
  EXPECT_TRUE(f.state.lifecycle.nodeclaims.empty());
  ASSERT_FALSE(outcomes.empty());
  for (const PodOutcome& o : outcomes) {
    EXPECT_EQ(o.target, "") << o.pod;
    EXPECT_NE(o.reason.find("is restricted"), std::string::npos) << o.reason;
  }
}

// The highest-weight pool wins; a pool whose taint the pod does not tolerate is skipped with
// its reason recorded.
TEST(Provisioning, WeightsAndTaints) {
  Folder f;
  NodePool tainted = Pool("tainted", 50);
  tainted.taints.push_back({"gpu", "true", TaintEffect::kNoSchedule});
  f.Start({Pool("low", 1), Pool("high", 20), tainted});
  f.Fold(PodUpserted{PendingPod("web-1", 500, 512)});
  Output out = f.Fold(Tick{kT0 + kSecond});
  auto creates = CommandsOf<CreateNodeClaim>(out);
  ASSERT_EQ(creates.size(), 1u);
  EXPECT_EQ(creates[0]->claim.nodepool, "high");
  EXPECT_EQ(creates[0]->claim.name.rfind("high-", 0), 0u);
}

// A pod no pool can host is reported with the reason each pool gave.
TEST(Provisioning, UnschedulablePodCarriesReasons) {
  Folder f;
  f.Start({Pool("default")});
  f.Fold(PodUpserted{PendingPod("huge", 500'000, 512)});
  Output out = f.Fold(Tick{kT0 + kSecond});
  EXPECT_TRUE(CommandsOf<CreateNodeClaim>(out).empty());
  EXPECT_TRUE(CommandsOf<LaunchInstance>(out).empty());
  ASSERT_EQ(out.decisions.size(), 1u);
  const auto& d = std::get<ProvisioningDecision>(out.decisions[0].body);
  ASSERT_EQ(d.pods.size(), 1u);
  EXPECT_TRUE(d.pods[0].target.empty());
  EXPECT_NE(d.pods[0].reason.find("NodePool default: no instance type has room"), std::string::npos)
      << d.pods[0].reason;
}

// Many small pods share NodeClaims; a later batch places pods on in-flight claims first.
TEST(Provisioning, PacksPodsAndReusesInflightClaims) {
  Folder f;
  f.Start({Pool("default")});
  for (int i = 0; i < 6; ++i) f.Fold(PodUpserted{PendingPod("web-" + std::to_string(i), 250, 256)});
  Output first = f.Fold(Tick{kT0 + kSecond});
  ASSERT_EQ(CommandsOf<CreateNodeClaim>(first).size(), 1u);
  // The same pods, still pending, seen again: the in-flight claim absorbs them.
  for (int i = 0; i < 6; ++i) f.Fold(PodUpserted{PendingPod("web-" + std::to_string(i), 250, 256)});
  Output second = f.Fold(Tick{kT0 + Duration{3 * kSecond.value}});
  EXPECT_TRUE(CommandsOf<CreateNodeClaim>(second).empty());
}

std::string LaunchFor(const Output& out) {
  auto launches = CommandsOf<LaunchInstance>(out);
  EXPECT_EQ(launches.size(), 1u);
  return launches.empty() ? "" : launches[0]->nodeclaim;
}

CommandId LaunchId(const Output& out) {
  for (const auto& c : out.commands) {
    if (std::holds_alternative<LaunchInstance>(c.body)) return c.id;
  }
  return CommandId{0};
}

// Starts a controller with one pool and folds one pending pod through a closed batch.
Output ProvisionOne(Folder& f, const Pod& pod = PendingPod("web-1", 500, 512)) {
  f.Start({Pool("default")});
  f.Fold(PodUpserted{pod});
  return f.Fold(Tick{kT0 + kSecond});
}

// The Node the instance of LaunchedFor registers as.
Node LaunchedNode(bool ready) {
  Node node;
  node.name = "node-1";
  node.provider_id = "aws:///us-east-1a/i-1";
  node.ready = ready;
  node.created = kT0;
  return node;
}

// The node as the kubelet registers it: not Ready yet, with Karpenter's unregistered taint.
Node RegisteringNode() {
  Node node = LaunchedNode(false);
  node.taints = {{label::kUnregisteredTaint, "", TaintEffect::kNoExecute}};
  return node;
}

// The answer EC2 gives to the launch in `out`: an m6g.large spot instance in us-east-1a.
FleetLaunched LaunchedFor(const Output& out) {
  return FleetLaunched{LaunchId(out),
                       LaunchFor(out),
                       "i-1",
                       "aws:///us-east-1a/i-1",
                       "m6g.large",
                       "us-east-1a",
                       kCapacitySpot,
                       MicroUsdPerHour{30'800},
                       {},
                       "ami-1",
                       "subnet-a",
                       {"sg-1"},
                       ""};
}

// ProvisionOne and EC2's answer to its launch folded: the claim, Launched.
std::string LaunchOne(Folder& f) {
  Output out = ProvisionOne(f);
  std::string claim = LaunchFor(out);
  f.Fold(LaunchedFor(out));
  return claim;
}

// Launched -> Registered (labels synced, unregistered taint removed) -> Initialized.
TEST(Lifecycle, LaunchRegisterInitialize) {
  Folder f;
  Output out = ProvisionOne(f);
  std::string claim = LaunchFor(out);
  Output launched = f.Fold(LaunchedFor(out));
  EXPECT_EQ(f.state.lifecycle.nodeclaims.at(claim).phase, ClaimPhase::kLaunched);
  EXPECT_FALSE(f.state.inflight.contains(LaunchId(out)));
  // Launched fills the NodeClaim in as Karpenter does: the instance type's labels with its zone
  // and capacity type, and the image, capacity and allocatable in the status.
  auto launch = CommandsOf<PatchNodeClaimStatus>(launched);
  ASSERT_EQ(launch.size(), 1u);
  EXPECT_EQ(launch[0]->condition, "Launched");
  EXPECT_EQ(launch[0]->labels.at(label::kInstanceType), "m6g.large");
  EXPECT_EQ(launch[0]->labels.at(label::kZone), "us-east-1a");
  EXPECT_EQ(launch[0]->labels.at(label::kCapacityType), kCapacitySpot);
  EXPECT_EQ(launch[0]->labels.at(label::kArch), "arm64");
  EXPECT_EQ(launch[0]->labels.at(label::kInstanceFamily), "m6g");
  EXPECT_EQ(launch[0]->image_id, "ami-1");
  const CatalogEntry& m6g = f.state.cluster.catalog->at("m6g.large");
  EXPECT_EQ(launch[0]->allocatable, m6g.allocatable);
  EXPECT_EQ(launch[0]->capacity.cpu, m6g.type.cpu);
  EXPECT_EQ(launch[0]->capacity.memory, m6g.type.memory);
  EXPECT_EQ(launch[0]->capacity.pods, m6g.allocatable.pods);

  Node node{"node-1", "aws:///us-east-1a/i-1",
            {},       {{label::kUnregisteredTaint, "", TaintEffect::kNoExecute}},
            false,    {},
            kT0,      {},
            false,    false,
            {}};
  Output reg = f.Fold(NodeUpserted{node});
  EXPECT_EQ(f.state.lifecycle.nodeclaims.at(claim).phase, ClaimPhase::kRegistered);
  auto patches = CommandsOf<PatchNode>(reg);
  ASSERT_EQ(patches.size(), 1u);
  EXPECT_EQ(patches[0]->remove_taints, std::vector<std::string>{label::kUnregisteredTaint});
  EXPECT_EQ(patches[0]->add_labels.at(label::kRegistered), "true");

  // The patch lands: the node now carries the labels and has lost the taint.
  f.Fold(CommandSucceeded{IdOf<PatchNode>(reg)});
  node.taints.clear();
  node.labels = patches[0]->add_labels;
  node.ready = true;
  Output init = f.Fold(NodeUpserted{node});
  EXPECT_EQ(f.state.lifecycle.nodeclaims.at(claim).phase, ClaimPhase::kInitialized);
  auto init_patches = CommandsOf<PatchNode>(init);
  ASSERT_EQ(init_patches.size(), 1u);
  EXPECT_EQ(init_patches[0]->add_labels, (Labels{{label::kInitialized, "true"}}));
  // Each step also sets its NodeClaim status condition.
  auto registered = CommandsOf<PatchNodeClaimStatus>(reg);
  ASSERT_EQ(registered.size(), 1u);
  EXPECT_EQ(registered[0]->condition, "Registered");
  EXPECT_TRUE(registered[0]->status);
  EXPECT_EQ(registered[0]->node_name, "node-1");
  auto initialized = CommandsOf<PatchNodeClaimStatus>(init);
  ASSERT_EQ(initialized.size(), 1u);
  EXPECT_EQ(initialized[0]->condition, "Initialized");
}

// Consolidation is recomputed when the cluster may have become consolidatable (Karpenter's
// MarkUnconsolidated), not when an input only echoes a change already counted: the result of a
// node patch, the node coming back with the labels the controller wrote for the claim's
// registration and initialization, the same node again, a listing in which every instance is
// alive, a change to a node whose claim is already being deleted. A label someone else adds,
// and a listing that finds an instance gone, do count.
TEST(Disruption, EchoesOfCountedChangesLeaveConsolidationAlone) {
  Folder f;
  std::string claim = LaunchOne(f);
  Node node = RegisteringNode();
  node.allocatable = f.state.lifecycle.nodeclaims.at(claim).allocatable;
  Output registered = f.Fold(NodeUpserted{node});
  ASSERT_EQ(f.state.lifecycle.nodeclaims.at(claim).phase, ClaimPhase::kRegistered);
  const auto generation = [&] { return f.state.cluster_generation; };
  // The registration patch lands: the pool's labels (pods select on them) and Ready.
  std::uint64_t before = generation();
  f.Fold(CommandSucceeded{IdOf<PatchNode>(registered)});
  EXPECT_EQ(generation(), before) << "a node patch's result";
  for (const auto& [key, value] : CommandsOf<PatchNode>(registered)[0]->add_labels) {
    node.labels.Set(key, value);
  }
  node.taints.clear();
  node.ready = true;
  Output initialized = f.Fold(NodeUpserted{node});
  ASSERT_EQ(f.state.lifecycle.nodeclaims.at(claim).phase, ClaimPhase::kInitialized);
  EXPECT_GT(generation(), before) << "a new initialized node";

  // The initialization patch lands: only the initialized label.
  before = generation();
  auto patches = CommandsOf<PatchNode>(initialized);
  ASSERT_EQ(patches.size(), 1u);
  ASSERT_EQ(patches[0]->add_labels, (Labels{{label::kInitialized, "true"}}));
  f.Fold(CommandSucceeded{IdOf<PatchNode>(initialized)});
  node.labels.Set(label::kInitialized, "true");
  Output echo = f.Fold(NodeUpserted{node});
  EXPECT_TRUE(echo.empty());
  EXPECT_EQ(generation(), before) << "the initialized label coming back";
  f.Fold(NodeUpserted{node});
  EXPECT_EQ(generation(), before) << "the same node again";

  node.labels.Set("team", "payments");
  f.Fold(NodeUpserted{node});
  EXPECT_EQ(generation(), before + 1) << "a label pods may select on";

  const std::string instance = f.state.lifecycle.nodeclaims.at(claim).instance_id;
  const Instant later = kT0 + Duration{5 * kMinute.value};
  f.Fold(InstancesListed{{{instance, claim, kT0, "running"}}});
  EXPECT_EQ(generation(), before + 1) << "a listing with nothing for garbage collection";

  f.Fold(Tick{later});
  before = generation();
  f.Fold(InstancesListed{{}});
  ASSERT_TRUE(f.state.lifecycle.nodeclaims.at(claim).deleting) << "its instance is gone";
  EXPECT_GT(generation(), before) << "garbage collection deleted a claim";

  before = generation();
  node.taints.push_back({label::kDisruptedTaint, "", TaintEffect::kNoSchedule});
  f.Fold(NodeUpserted{node});
  EXPECT_EQ(generation(), before) << "a node whose claim is being deleted";
}

// At registration the NodePool's taints are added to a node that came up without them.
TEST(Lifecycle, RegistrationAddsMissingPoolTaints) {
  Folder f;
  Output out = ProvisionOne(f);
  f.state.cluster.nodepools.at("default").taints = {{"dedicated", "web", TaintEffect::kNoSchedule}};
  f.Fold(LaunchedFor(out));
  Node node = LaunchedNode(false);
  const Output registered = f.Fold(NodeUpserted{node});
  auto patches = CommandsOf<PatchNode>(registered);
  ASSERT_EQ(patches.size(), 1u);
  EXPECT_EQ(patches[0]->add_taints,
            (std::vector<Taint>{{"dedicated", "web", TaintEffect::kNoSchedule}}));
}

// Drift: an initialized claim whose instance type leaves the catalog, or that a changed
// requirement no longer admits, is proposed for replacement with the reason.
TEST(Disruption, DriftByCatalogAndRequirements) {
  auto initialized = [](Folder& f) {
    Output out = ProvisionOne(f);
    std::string claim = LaunchFor(out);
    f.Fold(LaunchedFor(out));
    Node node = LaunchedNode(true);
    f.Fold(NodeUpserted{node});
    EXPECT_EQ(f.state.lifecycle.nodeclaims.at(claim).phase, ClaimPhase::kInitialized);
    // Its pod runs there, which keeps it busy so emptiness does not take it first.
    Pod pod = PendingPod("web-1", 500, 512);
    pod.node_name = "node-1";
    pod.phase = PodPhase::kRunning;
    pod.unschedulable = false;
    f.Fold(PodUpserted{pod});
    return claim;
  };
  auto proposals = [](Folder& f, Instant at) {
    std::vector<DisruptionDecision> out;
    for (const auto& d : f.Fold(Tick{at}).decisions) {
      const auto* x = std::get_if<DisruptionDecision>(&d.body);
      if (x != nullptr && x->method == DisruptionMethod::kDrift) out.push_back(*x);
    }
    return out;
  };
  Folder gone;
  std::string claim = initialized(gone);
  EXPECT_TRUE(proposals(gone, kT0 + Duration{20 * kSecond.value}).empty());
  auto catalog = SmallCatalog();
  std::erase_if(catalog, [](const InstanceType& t) { return t.name == "m6g.large"; });
  gone.Fold(CatalogRefreshed{catalog});
  auto d = proposals(gone, kT0 + Duration{40 * kSecond.value});
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].method, DisruptionMethod::kDrift);
  EXPECT_EQ(d[0].phase, DisruptionPhase::kProposed) << d[0].candidates[0].outcome;
  EXPECT_EQ(d[0].nodeclaims, std::vector<std::string>{claim});
  EXPECT_NE(d[0].candidates[0].outcome.find("m6g.large is no longer offered"), std::string::npos);

  Folder narrowed;
  claim = initialized(narrowed);
  narrowed.Fold(
      NodePoolUpserted{Pool("default", 0, {{label::kArch, RequirementOp::kIn, {"amd64"}, 0}})});
  d = proposals(narrowed, kT0 + Duration{40 * kSecond.value});
  ASSERT_EQ(d.size(), 1u);
  EXPECT_NE(d[0].candidates[0].outcome.find("no longer satisfied"), std::string::npos)
      << d[0].candidates[0].outcome;
}

// A claim launched, its node Ready with the claim's allocatable, and its pod gone elsewhere:
// an empty initialized node.
std::string EmptyInitializedNode(Folder& f) {
  std::string claim = LaunchOne(f);
  Node node = LaunchedNode(true);
  node.allocatable = f.state.lifecycle.nodeclaims.at(claim).allocatable;
  f.Fold(NodeUpserted{node});
  f.Fold(PodDeleted{"default", "web-1"});
  return claim;
}

// Provisioning places a pending pod on an existing empty node: the node is nominated for it
// and emptiness leaves it alone until the nomination ends. Each pass publishes the
// Consolidatable and Drifted conditions when they change.
TEST(Disruption, NominatedNodesWaitAndConditionsArePublished) {
  Folder f;
  std::string claim = EmptyInitializedNode(f);
  ASSERT_EQ(f.state.lifecycle.nodeclaims.at(claim).phase, ClaimPhase::kInitialized);
  f.Fold(PodUpserted{PendingPod("web-2", 500, 512)});
  Output placed = f.Fold(Tick{kT0 + Duration{3 * kSecond.value}});
  ASSERT_EQ(CommandsOf<LaunchInstance>(placed).size(), 0u);  // It fits on node-1.
  Instant until = f.state.lifecycle.nodeclaims.at(claim).nominated_until;
  EXPECT_EQ(until, kT0 + Duration{23 * kSecond.value});  // Twice BATCH_MAX_DURATION.

  Output pass = f.Fold(Tick{kT0 + Duration{10 * kSecond.value}});
  const DisruptionDecision* emptiness = nullptr;
  for (const auto& d : pass.decisions) {
    const auto* x = std::get_if<DisruptionDecision>(&d.body);
    if (x != nullptr && x->method == DisruptionMethod::kEmptiness) emptiness = x;
  }
  ASSERT_NE(emptiness, nullptr);
  EXPECT_EQ(emptiness->phase, DisruptionPhase::kBlocked);
  EXPECT_EQ(emptiness->candidates.at(0).cause, Cause::kNominated);
  EXPECT_EQ(emptiness->candidates.at(0).outcome, "nominated for pending pods until 00:00:23 UTC");
  auto conditions = CommandsOf<PatchNodeClaimStatus>(pass);
  ASSERT_EQ(conditions.size(), 2u);
  EXPECT_EQ(conditions[0]->condition, "Consolidatable");
  EXPECT_TRUE(conditions[0]->status);
  EXPECT_EQ(conditions[1]->condition, "Drifted");
  EXPECT_FALSE(conditions[1]->status);
  // Unchanged conditions are not published again.
  const Output again = f.Fold(Tick{kT0 + Duration{20 * kSecond.value}});
  EXPECT_TRUE(CommandsOf<PatchNodeClaimStatus>(again).empty());
}

// A pod bound to or removed from a node stamps the node's claim (consolidateAfter counts from
// it), found through State::claims_by_node, which follows the claim's node as it registers and
// as its node goes.
TEST(Disruption, PodMovesStampTheClaimOfTheirNode) {
  Folder f;
  std::string claim = LaunchOne(f);
  EXPECT_TRUE(f.state.lifecycle.claims_by_node.Matches(f.state.lifecycle.nodeclaims));
  f.Fold(NodeUpserted{LaunchedNode(true)});
  ASSERT_EQ(f.state.lifecycle.nodeclaims.at(claim).node_name, "node-1");
  EXPECT_TRUE(f.state.lifecycle.claims_by_node.Matches(f.state.lifecycle.nodeclaims));

  f.Fold(Tick{kT0 + Duration{5 * kSecond.value}});
  Pod bound = PendingPod("web-1", 500, 512);
  bound.node_name = "node-1";
  f.Fold(PodUpserted{bound});
  EXPECT_EQ(f.state.lifecycle.nodeclaims.at(claim).last_pod_change,
            kT0 + Duration{5 * kSecond.value});
  f.Fold(Tick{kT0 + Duration{7 * kSecond.value}});
  f.Fold(PodDeleted{"default", "web-1"});
  EXPECT_EQ(f.state.lifecycle.nodeclaims.at(claim).last_pod_change,
            kT0 + Duration{7 * kSecond.value});

  // Its node gone, the claim has none, and a pod naming that node stamps nothing.
  f.Fold(NodeDeleted{"node-1"});
  EXPECT_EQ(f.state.lifecycle.nodeclaims.at(claim).node_name, "");
  EXPECT_TRUE(f.state.lifecycle.claims_by_node.Matches(f.state.lifecycle.nodeclaims));
  f.Fold(Tick{kT0 + Duration{9 * kSecond.value}});
  f.Fold(PodUpserted{bound});
  EXPECT_EQ(f.state.lifecycle.nodeclaims.at(claim).last_pod_change,
            kT0 + Duration{7 * kSecond.value});
}

// SQS delivers at least once: the same message again (after a restart, say) is acknowledged
// again and otherwise ignored.
TEST(Disruption, RedeliveredInterruptionIsOnlyAcknowledged) {
  Folder f;
  f.Start({Pool("default")});
  InterruptionReceived message{"msg-1", InterruptionKind::kSpotInterruption, "i-none", ""};
  Output first = f.Fold(message);
  EXPECT_EQ(CommandsOf<DeleteQueueMessage>(first).size(), 1u);
  EXPECT_EQ(first.decisions.size(), 1u);  // "no NodeClaim has this instance"
  Output again = f.Fold(message);
  EXPECT_EQ(CommandsOf<DeleteQueueMessage>(again).size(), 1u);
  EXPECT_TRUE(again.decisions.empty());
  // Forgotten after a day: a message id that old is new again.
  f.Fold(Tick{kT0 + kHandledMessagesKept + kMinute});
  EXPECT_EQ(f.Fold(message).decisions.size(), 1u);
}

// Karpenter's interruption controller marks the interrupted type's spot offering in its zone
// unavailable: spot capacity is what ran out, whatever capacity type the NodeClaim records.
TEST(Disruption, SpotInterruptionMarksTheSpotOfferingUnavailable) {
  Folder f;
  std::string claim = LaunchOne(f);
  f.Fold(NodeUpserted{LaunchedNode(true)});
  f.state.lifecycle.nodeclaims.at(claim).capacity_type = kCapacityOnDemand;
  f.Fold(InterruptionReceived{"msg-1", InterruptionKind::kSpotInterruption, "i-1", ""});
  EXPECT_TRUE(f.state.lifecycle.unavailable_offerings.contains(
      OfferingKey("m6g.large", "us-east-1a", kCapacitySpot)));
  EXPECT_FALSE(f.state.lifecycle.unavailable_offerings.contains(
      OfferingKey("m6g.large", "us-east-1a", kCapacityOnDemand)));
}

// A message for a NodeClaim already being deleted (its Node was deleted first, as the cloud
// node-lifecycle controller does for a terminated instance) is recorded, as Karpenter still
// reports it, and changes nothing else.
TEST(Disruption, InterruptionOfADeletingClaimIsRecorded) {
  Folder f;
  std::string claim = LaunchOne(f);
  Node node = LaunchedNode(true);
  f.Fold(NodeUpserted{node});
  node.deleting = true;
  f.Fold(NodeUpserted{node});
  ASSERT_TRUE(f.state.lifecycle.nodeclaims.at(claim).deleting);
  Output out =
      f.Fold(InterruptionReceived{"msg-1", InterruptionKind::kStateChange, "i-1", "terminated"});
  EXPECT_EQ(CommandsOf<DeleteQueueMessage>(out).size(), 1u);
  ASSERT_EQ(out.decisions.size(), 1u);
  const auto* noted = std::get_if<LifecycleDecision>(&out.decisions[0].body);
  ASSERT_NE(noted, nullptr);
  EXPECT_EQ(noted->nodeclaim, claim);
  EXPECT_EQ(noted->transition, Transition::kInterrupted);
}

// A node registered without the GPUs its type brings is not Initialized until the device
// plugin advertises them.
// The EC2NodeClass status is the core's to write, from what the selector terms resolved to: the
// first resolution writes it, one that shows the same again (fewer free addresses aside) does
// not, and one with a new AMI or a failure does. The latest is kept, and goes with the class.
TEST(NodeClassStatus, WrittenFromEachResolutionThatChangesIt) {
  Folder f;
  f.Start({Pool("default")});
  NodeClassResolution resolved;
  resolved.amis = {{"ami-1", "al2023-1", "amd64", "2026-11-01T00:00:00.000Z"}};
  resolved.subnets = {{"subnet-a", "us-east-1a", "use1-az1", 4000}};
  resolved.security_groups = {{"sg-1", "nodes"}};
  resolved.instance_profile = "cluster_default";
  Output out = f.Fold(NodeClassResolved{"default", resolved});
  auto patches = CommandsOf<PatchNodeClassStatus>(out);
  ASSERT_EQ(patches.size(), 1u);
  EXPECT_EQ(*patches[0], (PatchNodeClassStatus{"default", resolved}));

  NodeClassResolution fewer = resolved;
  fewer.subnets[0].free_ips = 3990;
  out = f.Fold(NodeClassResolved{"default", fewer});
  EXPECT_TRUE(CommandsOf<PatchNodeClassStatus>(out).empty());
  EXPECT_EQ(f.state.nodeclass.resolutions.at("default"), fewer);

  NodeClassResolution newer = fewer;
  newer.amis = {{"ami-2", "al2023-2", "amd64", "2026-11-20T00:00:00.000Z"}};
  out = f.Fold(NodeClassResolved{"default", newer});
  EXPECT_EQ(CommandsOf<PatchNodeClassStatus>(out).size(), 1u);
  NodeClassResolution failed;
  failed.reason = "SubnetsNotFound";
  failed.message = "no subnet matches subnetSelectorTerms";
  out = f.Fold(NodeClassResolved{"default", failed});
  patches = CommandsOf<PatchNodeClassStatus>(out);
  ASSERT_EQ(patches.size(), 1u);
  EXPECT_EQ(patches[0]->resolution.reason, "SubnetsNotFound");

  f.Fold(NodeClassDeleted{"default"});
  EXPECT_FALSE(f.state.nodeclass.resolutions.contains("default"));
}

// Karpenter's EC2NodeClass controller adds karpenter.k8s.aws/termination to every EC2NodeClass:
// the core asks for it once, not again while the patch is in flight, and the watch bringing the
// EC2NodeClass back with it ends the matter (and changes nothing consolidation could see).
TEST(NodeClassLifecycle, FinalizerAskedForOnce) {
  Folder f;
  f.Start({Pool("default")});
  NodeClass nodeclass = f.state.cluster.nodeclasses.at("default");
  nodeclass.finalizer = false;
  nodeclass.ami_family = "Bottlerocket";
  Output out = f.Fold(NodeClassUpserted{nodeclass});
  auto added = CommandsOf<SetNodeClassFinalizer>(out);
  ASSERT_EQ(added.size(), 1u);
  EXPECT_EQ(*added[0], (SetNodeClassFinalizer{"default", true}));
  const CommandId id = IdOf<SetNodeClassFinalizer>(out);
  NodeClassResolution resolved;
  resolved.amis = {{"ami-1", "br-1", "amd64", "2026-11-01T00:00:00.000Z"}};
  out = f.Fold(NodeClassResolved{"default", resolved});
  EXPECT_TRUE(CommandsOf<SetNodeClassFinalizer>(out).empty()) << "one in flight already";
  f.Fold(CommandSucceeded{id});
  nodeclass.finalizer = true;
  const std::uint64_t generation = f.state.cluster_generation;
  out = f.Fold(NodeClassUpserted{nodeclass});
  EXPECT_TRUE(out.commands.empty());
  EXPECT_EQ(f.state.cluster_generation, generation);
  // A deleted EC2NodeClass without it (another controller's) gets none: the API server takes no
  // new finalizer on an object being deleted.
  NodeClass foreign = nodeclass;
  foreign.name = "foreign";
  foreign.finalizer = false;
  foreign.terminating = true;
  out = f.Fold(NodeClassUpserted{foreign});
  EXPECT_TRUE(out.commands.empty());
}

// The resolver only reads: an instance profile missing for spec.role (InstanceProfileNotFound)
// is made by a command, once while it is in flight, again at the next resolution after a
// failure; a profile named in spec.instanceProfile (no role) is the user's and never made.
TEST(NodeClassLifecycle, MissingInstanceProfileIsMade) {
  Folder f;
  f.Start({Pool("default")});
  NodeClassResolution missing;
  missing.amis = {{"ami-1", "al2023-1", "amd64", "2026-11-01T00:00:00.000Z"}};
  missing.reason = kInstanceProfileNotFound;
  missing.message = "instance profile tenon_default for role role does not exist yet";
  Output out = f.Fold(NodeClassResolved{"default", missing});
  auto made = CommandsOf<EnsureInstanceProfile>(out);
  ASSERT_EQ(made.size(), 1u);
  EXPECT_EQ(*made[0], (EnsureInstanceProfile{"default", "role", "tenon"}));
  const CommandId id = IdOf<EnsureInstanceProfile>(out);
  out = f.Fold(NodeClassResolved{"default", missing});
  EXPECT_TRUE(CommandsOf<EnsureInstanceProfile>(out).empty()) << "one in flight already";
  f.Fold(CommandFailed{id, ErrorCode::kThrottled, "Throttling"});
  out = f.Fold(NodeClassResolved{"default", missing});
  EXPECT_EQ(CommandsOf<EnsureInstanceProfile>(out).size(), 1u) << "tried again";
  f.Fold(CommandSucceeded{IdOf<EnsureInstanceProfile>(out)});
  NodeClassResolution ready = missing;
  ready.reason.clear();
  ready.message.clear();
  ready.instance_profile = "tenon_default";
  out = f.Fold(NodeClassResolved{"default", ready});
  EXPECT_TRUE(CommandsOf<EnsureInstanceProfile>(out).empty());

  NodeClass users = f.state.cluster.nodeclasses.at("default");
  users.role.clear();
  f.Fold(NodeClassUpserted{users});
  out = f.Fold(NodeClassResolved{"default", missing});
  EXPECT_TRUE(CommandsOf<EnsureInstanceProfile>(out).empty());
}

// Karpenter's EC2NodeClass termination: a deleted EC2NodeClass holding the finalizer waits while
// NodeClaims use it, saying so with a WaitingOnNodeClaimTermination Event (again when the
// NodeClaims it waits on change, and every 10 minutes); then what tenon made for it in AWS is
// deleted, a failure tried again a minute later, and only then is the finalizer removed.
TEST(NodeClassLifecycle, DeletedWaitsForItsNodeClaimsThenCleansUpThenLetsGo) {
  Folder f;
  f.Start({Pool("default")});
  for (const char* name : {"default-b", "default-a", "gpu-a"}) {
    NodeClaim claim;
    claim.name = name;
    claim.nodepool = "default";
    claim.nodeclass = std::string(name).starts_with("gpu") ? "gpu" : "default";
    f.state.lifecycle.nodeclaims[name] = claim;
  }
  NodeClass deleted = f.state.cluster.nodeclasses.at("default");
  deleted.terminating = true;
  Output out = f.Fold(NodeClassUpserted{deleted});
  auto events = CommandsOf<RecordKubeEvent>(out);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(*events[0],
            (RecordKubeEvent{{"karpenter.k8s.aws/v1", "EC2NodeClass", "", "default"},
                             "Normal",
                             "WaitingOnNodeClaimTermination",
                             "Waiting on NodeClaim termination for default-a, default-b"}));
  EXPECT_TRUE(f.state.inflight.empty()) << "an Event is not waited on";
  EXPECT_TRUE(CommandsOf<DeleteNodeClassResources>(out).empty());

  Instant now = kT0 + kSecond;
  auto tick = [&](Duration step) {
    now += step;
    return f.Fold(Tick{now});
  };
  out = tick(kSecond);
  EXPECT_TRUE(CommandsOf<RecordKubeEvent>(out).empty()) << "nothing changed";
  f.state.lifecycle.nodeclaims.erase("default-a");
  out = tick(kSecond);
  events = CommandsOf<RecordKubeEvent>(out);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0]->message, "Waiting on NodeClaim termination for default-b");
  out = tick(Duration{599 * kSecond.value});
  EXPECT_TRUE(CommandsOf<RecordKubeEvent>(out).empty());
  out = tick(kSecond);
  EXPECT_EQ(CommandsOf<RecordKubeEvent>(out).size(), 1u) << "every 10 minutes";

  f.state.lifecycle.nodeclaims.erase("default-b");
  out = tick(kSecond);
  auto cleanups = CommandsOf<DeleteNodeClassResources>(out);
  ASSERT_EQ(cleanups.size(), 1u);
  EXPECT_EQ(*cleanups[0], (DeleteNodeClassResources{"default", "tenon", true}));
  EXPECT_TRUE(CommandsOf<SetNodeClassFinalizer>(out).empty());
  CommandId id = IdOf<DeleteNodeClassResources>(out);
  out = tick(kSecond);
  EXPECT_TRUE(CommandsOf<DeleteNodeClassResources>(out).empty()) << "in flight";
  out = f.Fold(CommandFailed{id, ErrorCode::kThrottled, "Throttling"});
  EXPECT_TRUE(out.commands.empty());
  out = tick(Duration{30 * kSecond.value});
  EXPECT_TRUE(CommandsOf<DeleteNodeClassResources>(out).empty());
  out = tick(Duration{31 * kSecond.value});
  ASSERT_EQ(CommandsOf<DeleteNodeClassResources>(out).size(), 1u) << "a minute later";
  out = f.Fold(CommandSucceeded{IdOf<DeleteNodeClassResources>(out)});
  auto released = CommandsOf<SetNodeClassFinalizer>(out);
  ASSERT_EQ(released.size(), 1u);
  EXPECT_EQ(*released[0], (SetNodeClassFinalizer{"default", false}));
  f.Fold(CommandSucceeded{IdOf<SetNodeClassFinalizer>(out)});
  EXPECT_TRUE(tick(kSecond).commands.empty()) << "the watch's deletion is waited for";
  f.Fold(NodeClassDeleted{"default"});
  EXPECT_TRUE(f.state.nodeclass.terminations.empty());

  // A profile named in spec.instanceProfile is the user's: only the launch templates go. The
  // Event lists five names and counts the rest.
  NodeClass users = deleted;
  users.name = "users";
  users.role.clear();
  for (int i = 0; i < 7; ++i) {
    NodeClaim claim;
    claim.name = "users-" + std::to_string(i);
    claim.nodeclass = "users";
    f.state.lifecycle.nodeclaims[claim.name] = claim;
  }
  out = f.Fold(NodeClassUpserted{users});
  events = CommandsOf<RecordKubeEvent>(out);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0]->message,
            "Waiting on NodeClaim termination for users-0, users-1, users-2, users-3, users-4 "
            "and 2 other(s)");
  std::erase_if(f.state.lifecycle.nodeclaims,
                [](const auto& c) { return c.second.nodeclass == "users"; });
  out = tick(kSecond);
  cleanups = CommandsOf<DeleteNodeClassResources>(out);
  ASSERT_EQ(cleanups.size(), 1u);
  EXPECT_FALSE(cleanups[0]->instance_profile);
}

TEST(Lifecycle, InitializedWaitsForExtendedResources) {
  Folder f;
  std::string claim = LaunchOne(f);
  f.state.lifecycle.nodeclaims.at(claim).allocatable.extended["nvidia.com/gpu"] = 1;
  Node node = LaunchedNode(true);
  f.Fold(NodeUpserted{node});
  EXPECT_EQ(f.state.lifecycle.nodeclaims.at(claim).phase, ClaimPhase::kRegistered);
  node.allocatable.extended["nvidia.com/gpu"] = 1;
  f.Fold(NodeUpserted{node});
  EXPECT_EQ(f.state.lifecycle.nodeclaims.at(claim).phase, ClaimPhase::kInitialized);
}

// After the drain, the instance is only terminated once the node's volumes have detached.
TEST(Termination, WaitsForVolumesToDetach) {
  Folder f;
  std::string claim = LaunchOne(f);
  Node node = LaunchedNode(true);
  node.taints = {{label::kDisruptedTaint, "", TaintEffect::kNoSchedule}};
  node.volumes_attached = {"vol-1"};
  f.Fold(NodeUpserted{node});
  f.Fold(NodeClaimDeletionRequested{claim});
  Instant now = kT0 + Duration{5 * kSecond.value};
  Output waiting = f.Fold(Tick{now});
  EXPECT_TRUE(CommandsOf<TerminateInstance>(waiting).empty());
  node.volumes_attached.clear();
  f.Fold(NodeUpserted{node});
  Output go = f.Fold(Tick{now + kSecond});
  EXPECT_EQ(CommandsOf<TerminateInstance>(go).size(), 1u);
}

// Registration sync is level-triggered: a node that shows up with the unregistered taint
// again (a kubelet re-registering, a lost patch) is patched again, once per in-flight patch.
TEST(Lifecycle, NodeOutOfSyncIsPatchedAgain) {
  Folder f;
  Output out = ProvisionOne(f);
  f.Fold(LaunchedFor(out));
  Node node{"node-1", "aws:///us-east-1a/i-1",
            {},       {{label::kUnregisteredTaint, "", TaintEffect::kNoExecute}},
            false,    {},
            kT0,      {},
            false,    false,
            {}};
  Output first = f.Fold(NodeUpserted{node});
  ASSERT_EQ(CommandsOf<PatchNode>(first).size(), 1u);
  EXPECT_TRUE(f.Fold(NodeUpserted{node}).commands.empty()) << "a patch is already in flight";
  f.Fold(CommandFailed{IdOf<PatchNode>(first), ErrorCode::kNotFound, "node not found"});
  Output again = f.Fold(NodeUpserted{node});
  auto patches = CommandsOf<PatchNode>(again);
  ASSERT_EQ(patches.size(), 1u);
  EXPECT_EQ(patches[0]->remove_taints, std::vector<std::string>{label::kUnregisteredTaint});
}

// A duplicated FleetLaunched (a re-driven command's answer) changes nothing.
TEST(Lifecycle, DuplicateLaunchResultIsIgnored) {
  Folder f;
  FleetLaunched launched = LaunchedFor(ProvisionOne(f));
  f.Fold(launched);
  State before = f.state;
  f.Fold(launched);
  before.last_seq = f.state.last_seq;
  before.cluster_generation = f.state.cluster_generation;  // Every input counts as a change.
  EXPECT_EQ(before, f.state);
}

// An ICE marks the offering unavailable for 3 minutes; the pods get a new claim elsewhere.
TEST(Lifecycle, InsufficientCapacityMarksOfferingAndReplans) {
  Folder f;
  Output out = ProvisionOne(f, PendingPod("web-1", 1500, 3000));
  std::string claim = LaunchFor(out);
  const auto& first = CommandsOf<LaunchInstance>(out)[0]->overrides.front();
  Output failed = f.Fold(FleetFailed{LaunchId(out),
                                     claim,
                                     {{first.instance_type, first.zone, first.capacity_type,
                                       ErrorCode::kInsufficientCapacity, "ICE"}},
                                     ""});
  EXPECT_EQ(CommandsOf<DeleteNodeClaim>(failed).size(), 1u);
  ASSERT_TRUE(f.state.lifecycle.nodeclaims.contains(claim));
  EXPECT_TRUE(
      f.state.lifecycle.nodeclaims.at(claim).deleting);  // No instance: the finalizer goes next.
  std::string key = OfferingKey(first.instance_type, first.zone, first.capacity_type);
  ASSERT_TRUE(f.state.lifecycle.unavailable_offerings.contains(key));

  Output retry = f.Fold(Tick{kT0 + Duration{3 * kSecond.value}});
  auto launches = CommandsOf<LaunchInstance>(retry);
  ASSERT_EQ(launches.size(), 1u);
  for (const auto& o : launches[0]->overrides) {
    EXPECT_NE(OfferingKey(o.instance_type, o.zone, o.capacity_type), key);
  }
  f.Fold(Tick{kT0 + kSecond + kUnavailableOfferingTtl});
  EXPECT_FALSE(f.state.lifecycle.unavailable_offerings.contains(key));
}

// Karpenter's launch: a failure that is not out of capacity (its EC2NodeClass not resolved
// yet, a throttled or failed call) keeps the NodeClaim, sets Launched=False and launches it
// again after 1 s, doubling (launch_test.go "should requeue with no error if NodeClassNotReady
// is returned"); nothing is deleted and no second claim is made for its pods.
TEST(Lifecycle, LaunchFailureOtherThanCapacityIsRetried) {
  Folder f;
  Output out = ProvisionOne(f);
  const std::string claim = LaunchFor(out);
  const LaunchInstance sent = *CommandsOf<LaunchInstance>(out)[0];
  Output failed = f.Fold(FleetFailed{
      LaunchId(out), claim, {{"", "", "spot", ErrorCode::kThrottled, "RequestLimitExceeded"}}, ""});
  EXPECT_TRUE(CommandsOf<DeleteNodeClaim>(failed).empty());
  ASSERT_TRUE(f.state.lifecycle.nodeclaims.contains(claim));
  EXPECT_FALSE(f.state.lifecycle.nodeclaims.at(claim).deleting);
  bool noted = false;
  for (const auto& d : failed.decisions) {
    const auto* l = std::get_if<LifecycleDecision>(&d.body);
    noted |= l != nullptr && l->transition == Transition::kLaunchFailed &&
             l->reason.find("launching again in 1s") != std::string::npos;
  }
  EXPECT_TRUE(noted);
  auto statuses = CommandsOf<PatchNodeClaimStatus>(failed);
  ASSERT_EQ(statuses.size(), 1u);
  EXPECT_EQ(statuses[0]->condition, "Launched");
  EXPECT_FALSE(statuses[0]->status);

  // Its pods wait for it: the next batch makes no other claim, and the retry is not due yet.
  Output early = f.Fold(Tick{kT0 + kSecond + Duration{kSecond.value / 2}});
  EXPECT_TRUE(CommandsOf<CreateNodeClaim>(early).empty());
  EXPECT_TRUE(CommandsOf<LaunchInstance>(early).empty());
  Output due = f.Fold(Tick{kT0 + kSecond + kSecond});
  auto again = CommandsOf<LaunchInstance>(due);
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(*again[0], sent);  // The same request, client token included.

  // A failed call the second time: 2 s before the next.
  f.Fold(CommandFailed{LaunchId(due), ErrorCode::kTransient, "connection reset"});
  EXPECT_EQ(f.state.lifecycle.nodeclaims.at(claim).relaunch_at,
            kT0 + kSecond + kSecond + kSecond + kSecond);
  EXPECT_TRUE(f.state.lifecycle.relaunches.contains(claim));
}

// As Karpenter's AWS provider: CreateFleet answering every error with unfulfillable capacity,
// or with nothing at all, is out of capacity: the claim is deleted, its pods planned anew.
TEST(Lifecycle, LaunchWithNothingLaunchedAndNoErrorIsOutOfCapacity) {
  Folder f;
  Output out = ProvisionOne(f);
  const std::string claim = LaunchFor(out);
  Output failed = f.Fold(FleetFailed{LaunchId(out), claim, {}, ""});
  EXPECT_EQ(CommandsOf<DeleteNodeClaim>(failed).size(), 1u);
  EXPECT_TRUE(f.state.lifecycle.nodeclaims.at(claim).deleting);
  EXPECT_FALSE(f.state.lifecycle.relaunches.contains(claim));
}

// Same events, same outputs and hash; another seed gives other NodeClaim names.
TEST(Determinism, SameEventsSameOutputs) {
  auto run = [](std::uint64_t seed) {
    Folder f;
    f.Start({Pool("default")}, seed);
    for (int i = 0; i < 20; ++i) f.Fold(PodUpserted{PendingPod("p" + std::to_string(i), 700, 900)});
    Output out = f.Fold(Tick{kT0 + kSecond});
    return std::pair{out, StateHash(f.state)};
  };
  auto a = run(7), b = run(7), c = run(8);
  EXPECT_EQ(a.first, b.first);
  EXPECT_EQ(a.second, b.second);
  EXPECT_NE(CommandsOf<CreateNodeClaim>(a.first)[0]->claim.name,
            CommandsOf<CreateNodeClaim>(c.first)[0]->claim.name);
}

// The state hash is pinned: a change to it is a change to every recorded snapshot. (Re-pinned
// when the consolidation state was added, and when every NodePool's status came to be published
// with its readiness; older snapshots, without them, hash as before. Re-pinned again when a pool
// without a capacity-type requirement stopped defaulting to on-demand: this fold's claim is
// another one, the hash of a given state is unchanged. Re-pinned when a launch came to carry its
// launch template's inputs: this fold's launch in flight holds more; a launch without them, as
// recorded before, hashes as it did. Re-pinned when EC2NodeClasses came to record their
// finalizer: this fold's EC2NodeClass holds it; one without it hashes as it did. Re-pinned when
// the core came to keep Karpenter's limits on the Events it records: this fold nominated its
// pod; a state that recorded no Event hashes as it did.)
TEST(Determinism, StateHashIsPinned) {
  Folder f;
  f.Start({Pool("default")});
  f.Fold(PodUpserted{PendingPod("web-1", 500, 512)});
  f.Fold(Tick{kT0 + kSecond});
  EXPECT_EQ(StateHash(f.state), 16208164662988445101ull) << std::hex << StateHash(f.state);
}

// Nodes whose labels the State shares (SharedNodeParts) hash as they did when each node held
// its own Labels map: the value below was computed by the code before NodeLabels, so recorded
// snapshots still verify. Folding the nodes in (interned) or assigning them (separate copies)
// gives the same hash, and the interned ones share one copy of each repeated text.
TEST(Determinism, NodeLabelsHashAsALabelsMap) {
  auto nodes = [] {
    std::vector<Node> out;
    for (const char* name : {"ip-10-0-0-1.ec2.internal", "ip-10-0-0-2.ec2.internal"}) {
      Node n;
      n.name = name;
      n.provider_id = std::string("aws:///us-east-1a/") + name;
      n.labels = {{label::kHostname, name},           {label::kZone, "us-east-1a"},
                  {label::kInstanceType, "m5.large"}, {label::kCapacityType, "spot"},
                  {label::kNodePool, "default"},      {"team", ""}};
      n.ready = true;
      out.push_back(n);
    }
    return out;
  };
  State separate;
  for (const Node& n : nodes()) separate.cluster.nodes[n.name] = n;
  EXPECT_EQ(StateHash(separate), 10478780098292822363ull) << StateHash(separate);

  State shared;
  for (const Node& n : nodes()) {
    Output out = Step(shared, Seq{shared.last_seq.value + 1}, NodeUpserted{n});
    EXPECT_TRUE(out.empty());
  }
  EXPECT_EQ(shared.cluster.nodes, separate.cluster.nodes);
  State copies = shared;  // The same State, but with nodes that hold their own texts.
  copies.cluster.nodes = separate.cluster.nodes;
  EXPECT_EQ(StateHash(shared), StateHash(copies));
  const Node& a = shared.cluster.nodes.at("ip-10-0-0-1.ec2.internal");
  const Node& b = shared.cluster.nodes.at("ip-10-0-0-2.ec2.internal");
  EXPECT_EQ(&a.labels.at(label::kZone), &b.labels.at(label::kZone)) << "one copy of the value";
  EXPECT_EQ(&a.labels.find(label::kZone)->first.str(), &b.labels.find(label::kZone)->first.str());
  EXPECT_NE(&a.labels.at(label::kHostname), &b.labels.at(label::kHostname));
  EXPECT_EQ(a.labels.ToLabels(), nodes()[0].labels.ToLabels());
}

// NodeLabels reads as the Labels map it was made from: key order, lookups, replacement.
TEST(NodeLabels, ReadsAsALabelsMap) {
  Labels map = {{"b", "2"}, {"a", "1"}, {"c", ""}};
  NodeLabels labels = map;
  EXPECT_EQ(labels.size(), 3u);
  EXPECT_EQ(labels.begin()->first, "a");
  EXPECT_EQ(labels.at("b"), "2");
  EXPECT_EQ(labels.Lookup("c"), std::optional<std::string_view>(""));
  EXPECT_EQ(labels.Lookup("d"), std::nullopt);
  EXPECT_FALSE(labels.contains("d"));
  EXPECT_THROW(labels.at("d"), std::out_of_range);
  labels.Set("d", "4");
  labels.Set("a", "one");
  map["d"] = "4";
  map["a"] = "one";
  EXPECT_EQ(labels.ToLabels(), map);
  EXPECT_EQ(labels, NodeLabels(map));
  EXPECT_FALSE(labels == NodeLabels(Labels{{"a", "one"}}));
}

// AWS allocatable for m5.large: 29 pods (3 ENIs x 9 + 2), 1930m CPU, memory after the
// VM memory overhead (7.5%), kube-reserved (255 Mi + 11 Mi x 29) and the 100 Mi eviction
// threshold.
TEST(Catalog, AllocatableFollowsAwsFormulas) {
  InstanceType t = Type("m5.large", 2, 8, 96'000);
  t.max_enis = 3;
  t.ipv4_per_eni = 10;
  CatalogEntry e = MakeCatalogEntry(t, Settings{});
  EXPECT_EQ(e.allocatable.pods, 29);
  EXPECT_EQ(e.allocatable.cpu, Millicores{1930});
  EXPECT_EQ(e.allocatable.memory, Bytes{(8192 - 615 - 574 - 100) * kMebibyte.value});
  EXPECT_EQ(e.labels.at(label::kInstanceFamily), "m5");
  EXPECT_EQ(e.labels.at(label::kInstanceCategory), "m");
  EXPECT_EQ(e.labels.at(label::kInstanceGeneration), "5");
  EXPECT_EQ(e.labels.at(label::kInstanceSize), "large");
  // RESERVED_ENIS=1 keeps one interface from pods: 2 x 9 + 2.
  Settings reserved;
  reserved.reserved_enis = 1;
  EXPECT_EQ(MakeCatalogEntry(t, reserved).allocatable.pods, 20);
}

// A claim launched and its node registering: the fold's output for the registration.
Output LaunchAndRegister(Folder& f, std::string& claim, Node& node) {
  claim = LaunchOne(f);
  node = RegisteringNode();
  return f.Fold(NodeUpserted{node});
}

// Deleting a Node deletes its NodeClaim, as in Karpenter; its termination drains the node.
TEST(Lifecycle, DeletingANodeDeletesItsClaim) {
  Folder f;
  std::string claim = LaunchOne(f);
  Node node = LaunchedNode(true);
  f.Fold(NodeUpserted{node});
  ASSERT_FALSE(f.state.lifecycle.nodeclaims.at(claim).deleting);
  node.deleting = true;
  Output out = f.Fold(NodeUpserted{node});
  EXPECT_TRUE(f.state.lifecycle.nodeclaims.at(claim).deleting);
  auto deletes = CommandsOf<DeleteNodeClaim>(out);
  ASSERT_EQ(deletes.size(), 1u);
  EXPECT_EQ(deletes[0]->name, claim);
  const Output again = f.Fold(NodeUpserted{node});
  EXPECT_TRUE(CommandsOf<DeleteNodeClaim>(again).empty()) << "once";
}

// A Node that goes and comes back (a relist that missed it, a kubelet registering again) is
// its claim's node again: Karpenter finds a claim's Node by providerID every time, so the
// claim is not left without a node, which nothing would ever consolidate or expire.
TEST(Lifecycle, ANodeThatComesBackIsItsClaimsNodeAgain) {
  Folder f;
  std::string claim = LaunchOne(f);
  const Node node = LaunchedNode(true);
  f.Fold(NodeUpserted{node});
  ASSERT_EQ(f.state.lifecycle.nodeclaims.at(claim).node_name, node.name);
  ASSERT_EQ(f.state.lifecycle.nodeclaims.at(claim).phase, ClaimPhase::kInitialized);
  f.Fold(NodeDeleted{node.name});
  EXPECT_EQ(f.state.lifecycle.nodeclaims.at(claim).node_name, "");
  f.Fold(NodeUpserted{node});
  EXPECT_EQ(f.state.lifecycle.nodeclaims.at(claim).node_name, node.name);
  EXPECT_EQ(f.state.lifecycle.nodeclaims.at(claim).phase, ClaimPhase::kInitialized);
  EXPECT_FALSE(f.state.lifecycle.nodeclaims.at(claim).deleting);
}

// A launched claim whose Ready node runs pod web-1, deleted: `first` is the drain's first
// pass, at `now`, which evicts the pod.
struct DrainingOnePod {
  Folder f;
  Pod bound = PendingPod("web-1", 500, 512);
  Instant now = kT0 + Duration{5 * kSecond.value};
  Output first;
  DrainingOnePod() {
    std::string claim = LaunchOne(f);
    f.Fold(NodeUpserted{LaunchedNode(true)});
    bound.node_name = "node-1";
    bound.unschedulable = false;
    bound.phase = PodPhase::kRunning;
    f.Fold(PodUpserted{bound});
    f.Fold(NodeClaimDeletionRequested{claim});
    first = f.Fold(Tick{now});
  }
};

// Karpenter's eviction queue: an eviction answered NotFound means the pod is gone (its deletion
// may have happened while the controller was down and never been seen): it is forgotten, and
// the drain goes on instead of evicting it again on every pass.
TEST(Termination, EvictionOfAGonePodForgetsIt) {
  DrainingOnePod d;
  Folder& f = d.f;
  const Instant now = d.now;
  const Output& first = d.first;
  ASSERT_EQ(CommandsOf<EvictPod>(first).size(), 1u);
  f.Fold(CommandFailed{IdOf<EvictPod>(first), ErrorCode::kNotFound, "pods \"web-1\" not found"});
  EXPECT_FALSE(f.state.cluster.pods.contains("default/web-1"));
  Output next = f.Fold(Tick{now + kSecond});
  EXPECT_TRUE(CommandsOf<EvictPod>(next).empty());
  EXPECT_EQ(CommandsOf<TerminateInstance>(next).size(), 1u);
}

// An accepted eviction's result can come back before the watch shows the pod deleting (the two
// travel apart): the drain waits for the watch instead of evicting the pod again, for at most
// 10 s, after which a pod still not deleting is evicted again.
TEST(Termination, AcceptedEvictionWaitsForTheWatch) {
  DrainingOnePod d;
  Folder& f = d.f;
  const Instant now = d.now;
  ASSERT_EQ(CommandsOf<EvictPod>(d.first).size(), 1u);
  f.Fold(CommandSucceeded{IdOf<EvictPod>(d.first)});
  for (int i = 1; i < 10; ++i) {
    const Output later = f.Fold(Tick{now + Duration{i * kSecond.value}});
    EXPECT_TRUE(CommandsOf<EvictPod>(later).empty()) << "second " << i;
  }
  const Output again = f.Fold(Tick{now + Duration{10 * kSecond.value}});
  EXPECT_EQ(CommandsOf<EvictPod>(again).size(), 1u);
}

// Karpenter's drain evicts a pod once: one already terminating is waited for, not evicted
// again on every pass.
TEST(Termination, TerminatingPodIsNotEvictedAgain) {
  DrainingOnePod d;
  Folder& f = d.f;
  Pod& bound = d.bound;
  const Instant now = d.now;
  const Output& first = d.first;
  ASSERT_EQ(CommandsOf<EvictPod>(first).size(), 1u);
  f.Fold(CommandSucceeded{IdOf<EvictPod>(first)});
  bound.deletion = now + Duration{30 * kSecond.value};
  f.Fold(PodUpserted{bound});
  for (int i = 1; i <= 5; ++i) {
    Output later = f.Fold(Tick{now + Duration{i * kSecond.value}});
    EXPECT_TRUE(CommandsOf<EvictPod>(later).empty()) << "pass " << i;
    EXPECT_TRUE(CommandsOf<TerminateInstance>(later).empty()) << "the drain waits for it";
  }
  // A pod stuck terminating (a minute past its deletion time: its kubelet is not removing it)
  // is no longer waited for.
  Folder stuck = f;
  const Output still = stuck.Fold(Tick{*bound.deletion + kMinute});
  EXPECT_TRUE(CommandsOf<TerminateInstance>(still).empty());
  const Output given_up = stuck.Fold(Tick{*bound.deletion + kMinute + kSecond});
  EXPECT_EQ(CommandsOf<TerminateInstance>(given_up).size(), 1u);
  f.Fold(PodDeleted{"default", "web-1"});
  Output gone = f.Fold(Tick{now + Duration{7 * kSecond.value}});
  EXPECT_EQ(CommandsOf<TerminateInstance>(gone).size(), 1u);
}

// A Node made for a NodePool (its label, the unregistered taint) that no NodeClaim owns, or a
// Node being deleted, is not capacity: the pending pod gets a new NodeClaim. A Node nobody
// made for a pool (a static node group's) is capacity.
TEST(Provisioning, OrphanedAndDeletingNodesAreNotCapacity) {
  auto launches_for_pod = [](Node node) {
    Folder f;
    f.Start({Pool("default")});
    node.allocatable = {Millicores{8000}, Bytes{32 * 1024 * kMebibyte.value}, 110, {}};
    f.Fold(NodeUpserted{node});
    f.Fold(PodUpserted{PendingPod("web-1", 500, 512)});
    const Output out = f.Fold(Tick{kT0 + kSecond});
    return CommandsOf<LaunchInstance>(out).size();
  };
  Node orphan = LaunchedNode(true);
  orphan.labels.Set(label::kNodePool, "default");
  EXPECT_EQ(launches_for_pod(orphan), 1u) << "a pool's node with no NodeClaim";
  Node unregistered = LaunchedNode(true);
  unregistered.taints = {{label::kUnregisteredTaint, "", TaintEffect::kNoExecute}};
  EXPECT_EQ(launches_for_pod(unregistered), 1u) << "an unregistered node with no NodeClaim";
  Node deleting = LaunchedNode(true);
  deleting.deleting = true;
  EXPECT_EQ(launches_for_pod(deleting), 1u) << "a node being deleted";
  EXPECT_EQ(launches_for_pod(LaunchedNode(true)), 0u) << "a static node";
}

// A pod planned onto an existing node whose Node then goes is planned for again at once.
TEST(Provisioning, PodsPlannedOntoAVanishedNodeArePlannedAgain) {
  Folder f;
  f.Start({Pool("default")});
  Node node = LaunchedNode(true);
  node.allocatable = {Millicores{8000}, Bytes{32 * 1024 * kMebibyte.value}, 110, {}};
  f.Fold(NodeUpserted{node});
  f.Fold(PodUpserted{PendingPod("web-1", 500, 512)});
  const Output placed = f.Fold(Tick{kT0 + kSecond});
  ASSERT_TRUE(CommandsOf<LaunchInstance>(placed).empty());
  f.Fold(Tick{kT0 + Duration{30 * kSecond.value}});
  f.Fold(NodeDeleted{node.name});
  Output replanned = f.Fold(Tick{kT0 + Duration{32 * kSecond.value}});
  EXPECT_EQ(CommandsOf<LaunchInstance>(replanned).size(), 1u);
}

// Karpenter's NodePool readiness: NodeClassReady names why the pool's EC2NodeClass keeps it
// from being Ready; a valid pool is ValidationSucceeded. Published with nothing launched.
TEST(Lifecycle, NodePoolStatusSaysWhetherItsNodeClassIsReady) {
  Folder f;
  NodePool orphan = Pool("orphan");
  orphan.nodeclass = "missing";
  f.Start({Pool("default"), orphan});
  Output out = f.Fold(Tick{kT0 + kSecond});
  std::map<std::string, NodePoolStatus> published;
  for (const auto* p : CommandsOf<PatchNodePoolStatus>(out)) published[p->nodepool] = p->status;
  ASSERT_EQ(published.size(), 2u);
  EXPECT_TRUE(published["default"].validated);
  EXPECT_EQ(published["default"].nodeclass_unready, "");
  EXPECT_TRUE(published["orphan"].validated);
  EXPECT_EQ(published["orphan"].nodeclass_unready, "NodeClassNotFound");
  NodeClass deleting{"default", "AL2023", "role", true, {}, {}, {}, {}, {}, true, {}, {}, "", {}};
  f.Fold(NodeClassUpserted{deleting});
  const Output later = f.Fold(Tick{kT0 + Duration{2 * kSecond.value}});
  auto changed = CommandsOf<PatchNodePoolStatus>(later);
  ASSERT_EQ(changed.size(), 1u);
  EXPECT_EQ(changed[0]->status.nodeclass_unready, "NodeClassTerminating");
}

// Karpenter's NodePool counter: status.nodes and status.resources count each launched claim
// not being deleted, by its capacity (the instance type's CPU and memory, not allocatable).
TEST(Lifecycle, NodePoolStatusCountsLaunchedClaimsByCapacity) {
  Folder f;
  std::string claim = LaunchOne(f);
  Node node = LaunchedNode(true);
  f.Fold(NodeUpserted{node});
  NodePoolStatus status;
  auto latest = [&](const Output& out) {
    for (const auto* p : CommandsOf<PatchNodePoolStatus>(out)) status = p->status;
  };
  latest(f.Fold(Tick{kT0 + kSecond}));
  const InstanceType& type =
      f.state.cluster.catalog->at(f.state.lifecycle.nodeclaims.at(claim).instance_type).type;
  EXPECT_EQ(status.nodes, 1);
  EXPECT_EQ(status.resources.cpu, type.cpu);
  EXPECT_EQ(status.resources.memory, type.memory);
  node.deleting = true;
  f.Fold(NodeUpserted{node});
  ASSERT_TRUE(f.state.lifecycle.nodeclaims.at(claim).deleting);
  latest(f.Fold(Tick{kT0 + Duration{2 * kSecond.value}}));
  EXPECT_EQ(status.nodes, 0);
  EXPECT_EQ(status.resources, Resources{});
}

// Karpenter's "should not launch a second node if there is an in-flight node that can support
// the pod": until its Node is registered, a node's labels are its NodeClaim's, so a pod
// selecting the NodePool goes to the node that is registering, even before the registration
// patch has put the pool's label on the Node.
TEST(Provisioning, ARegisteringNodeCarriesItsClaimsLabels) {
  Folder f;
  std::string claim = LaunchOne(f);
  Node node = RegisteringNode();
  node.allocatable = f.state.lifecycle.nodeclaims.at(claim).allocatable;
  f.Fold(NodeUpserted{node});
  ASSERT_FALSE(node.labels.contains(label::kNodePool));
  Pod pod = PendingPod("web-2", 100, 128, kT0 + Duration{2 * kSecond.value});
  pod.constraints.Mutable().node_selector[label::kNodePool] = "default";
  f.Fold(PodUpserted{pod});
  std::size_t created = 0;
  for (int second = 3; second <= 40; ++second) {
    const Output out = f.Fold(Tick{kT0 + Duration{second * kSecond.value}});
    created += CommandsOf<CreateNodeClaim>(out).size();
  }
  EXPECT_EQ(created, 0u);
  EXPECT_EQ(f.state.lifecycle.nodeclaims.size(), 1u);
}

// Karpenter's nomination window is twice BATCH_MAX_DURATION but never under 10 seconds:
// kube-scheduler may take that long to retry the pod, and the node must not go meanwhile.
TEST(Provisioning, NominationLastsAtLeastTenSeconds) {
  Folder f;
  std::string claim = EmptyInitializedNode(f);
  Settings quick = f.state.settings;
  quick.batch_max = Duration{2 * kSecond.value};
  f.Fold(ControllerStarted{"test", 7, quick});
  f.Fold(PodUpserted{PendingPod("web-2", 500, 512)});
  const Output placed = f.Fold(Tick{kT0 + Duration{3 * kSecond.value}});
  ASSERT_EQ(CommandsOf<LaunchInstance>(placed).size(), 0u);  // It fits on node-1.
  EXPECT_EQ(f.state.lifecycle.nodeclaims.at(claim).nominated_until,
            kT0 + Duration{13 * kSecond.value});
}

// A node initialized while its registration patch is in flight gets its initialized label
// when that patch lands, not only on the node's next change (which may never come); what the
// landed patch asked for is not asked again.
TEST(Lifecycle, InitializationDuringRegistrationPatchIsSyncedWhenItLands) {
  Folder f;
  std::string claim = LaunchOne(f);
  Node node = RegisteringNode();
  Output reg = f.Fold(NodeUpserted{node});
  ASSERT_EQ(CommandsOf<PatchNode>(reg).size(), 1u);
  // The kubelet reports Ready and the registration patch has landed, but its echo is still on
  // its way: the node seen has neither its labels nor lost its taint.
  node.ready = true;
  node.taints.clear();
  Output init = f.Fold(NodeUpserted{node});
  ASSERT_EQ(f.state.lifecycle.nodeclaims.at(claim).phase, ClaimPhase::kInitialized);
  EXPECT_TRUE(CommandsOf<PatchNode>(init).empty()) << "the registration patch is in flight";
  Output landed = f.Fold(CommandSucceeded{IdOf<PatchNode>(reg)});
  auto patches = CommandsOf<PatchNode>(landed);
  ASSERT_EQ(patches.size(), 1u);
  EXPECT_EQ(patches[0]->add_labels, (Labels{{label::kInitialized, "true"}}));
  // That one landing with everything in place asks for nothing more.
  Output done = f.Fold(CommandSucceeded{IdOf<PatchNode>(landed)});
  EXPECT_TRUE(CommandsOf<PatchNode>(done).empty());
}

// Karpenter's launch tags: the NodePool, the NodeClaim, the EC2NodeClass, and the cluster by
// kubernetes.io/cluster/NAME and eks:eks-cluster-name.
TEST(Provisioning, LaunchTagsNameTheClusterAsKarpenterDoes) {
  Folder f;
  Output out = ProvisionOne(f);
  auto launches = CommandsOf<LaunchInstance>(out);
  ASSERT_EQ(launches.size(), 1u);
  EXPECT_EQ(launches[0]->tags, (Labels{{"karpenter.sh/nodepool", "default"},
                                       {"karpenter.sh/nodeclaim", launches[0]->nodeclaim},
                                       {"karpenter.k8s.aws/ec2nodeclass", "default"},
                                       {"kubernetes.io/cluster/tenon", "owned"},
                                       {"eks:eks-cluster-name", "tenon"}}));
}

// Karpenter's registration makes the NodeClaim the Node's owner (and puts the termination
// finalizer on it): the registration patch names the claim. Its tagging controller tags a
// registered NodeClaim's instance once: Name is the Node's name, with the claim and the
// cluster's name.
TEST(Lifecycle, RegistrationOwnsTheNodeAndTagsTheInstanceOnce) {
  Folder f;
  std::string claim;
  Node node;
  const Output reg = LaunchAndRegister(f, claim, node);
  auto patches = CommandsOf<PatchNode>(reg);
  ASSERT_EQ(patches.size(), 1u);
  EXPECT_EQ(patches[0]->owner_nodeclaim, claim);
  auto tags = CommandsOf<TagInstance>(reg);
  ASSERT_EQ(tags.size(), 1u);
  EXPECT_EQ(tags[0]->instance_id, "i-1");
  EXPECT_EQ(tags[0]->nodeclaim, claim);
  EXPECT_EQ(tags[0]->tags, (Labels{{"Name", "node-1"},
                                   {"karpenter.sh/nodeclaim", claim},
                                   {"eks:eks-cluster-name", "tenon"}}));
  // Not again: not for its result, nor when the Node is seen again, initialized, or later.
  node.taints.clear();
  node.ready = true;
  const Output after = f.FoldAll({CommandSucceeded{IdOf<TagInstance>(reg)}, NodeUpserted{node},
                                  NodeUpserted{node}, Tick{kT0 + Duration{60 * kSecond.value}}});
  EXPECT_EQ(f.state.lifecycle.nodeclaims.at(claim).phase, ClaimPhase::kInitialized);
  EXPECT_TRUE(CommandsOf<TagInstance>(after).empty());
}

// The Node can be folded before its launch's answer: the answer comes back from the AWS
// adapter's worker, the Node from the informer, and after a restart the re-driven launch's
// answer comes late. The claim registers, and initializes, when the answer lands, as Karpenter
// finds a NodeClaim's Node by providerID whenever it reconciles the claim.
TEST(Lifecycle, NodeSeenBeforeTheLaunchAnswerRegistersWhenItLands) {
  Folder f;
  Output out = ProvisionOne(f);
  const std::string claim = LaunchFor(out);
  Node node = LaunchedNode(true);
  EXPECT_TRUE(f.Fold(NodeUpserted{node}).commands.empty());
  EXPECT_EQ(f.state.lifecycle.nodeclaims.at(claim).phase, ClaimPhase::kPending);
  const Output launched = f.Fold(LaunchedFor(out));
  EXPECT_EQ(f.state.lifecycle.nodeclaims.at(claim).phase, ClaimPhase::kInitialized);
  EXPECT_EQ(f.state.lifecycle.nodeclaims.at(claim).node_name, "node-1");
  EXPECT_EQ(CommandsOf<TagInstance>(launched).size(), 1u);
  EXPECT_EQ(CommandsOf<PatchNode>(launched).size(), 1u);
}

// Three pods spread over zones, and one that needs us-east-1b (returned), all pending.
Pod FoldSpreadAndOneForZoneB(Folder& f) {
  for (int i = 0; i < 3; ++i) {
    Pod pod = PendingPod("spread-" + std::to_string(i), 1500, 1024);
    pod.labels.Mutable()["app"] = "spread";
    TopologySpreadConstraint spread;
    spread.topology_key = label::kZone;
    spread.selector.match_labels["app"] = "spread";
    pod.constraints.Mutable().topology_spread.push_back(spread);
    f.Fold(PodUpserted{pod});
  }
  Pod elsewhere = PendingPod("needs-1b", 500, 512);
  elsewhere.constraints.Mutable().node_selector[label::kZone] = "us-east-1b";
  f.Fold(PodUpserted{elsewhere});
  return elsewhere;
}

// Karpenter builds a NodeClass's offerings from the zones its subnets are in, and only types
// an AMI of it serves can launch: a NodeClass whose status lists subnets in us-east-1a only and
// amd64 AMIs only never has a claim planned in us-east-1b or on arm64, even for a zone spread;
// a pod that needs us-east-1b stays pending and nothing launches for it.
TEST(Provisioning, OnlyZonesAndArchitecturesTheNodeClassCanLaunchInto) {
  Folder f;
  f.Start({Pool("default")});
  const NodeClass nodeclass{
      "default",    "AL2023", "role", true,           {},        {}, {"ami-1"},
      {"subnet-a"}, {},       false,  {"us-east-1a"}, {"amd64"}, "", {}};
  f.Fold(NodeClassUpserted{nodeclass});
  const Pod elsewhere = FoldSpreadAndOneForZoneB(f);
  const Output out = f.Fold(Tick{kT0 + kSecond});
  auto launches = CommandsOf<LaunchInstance>(out);
  ASSERT_FALSE(launches.empty());
  for (const auto* launch : launches) {
    for (const auto& o : launch->overrides) {
      EXPECT_EQ(o.zone, "us-east-1a") << launch->nodeclaim << " " << o.instance_type;
      EXPECT_NE(o.instance_type, "m6g.large");
    }
  }
  bool reported = false;
  for (const Decision& decision : out.decisions) {
    const auto* d = std::get_if<ProvisioningDecision>(&decision.body);
    if (d == nullptr) continue;
    for (const PodOutcome& pod : d->pods) {
      if (pod.pod != "default/needs-1b") continue;
      EXPECT_TRUE(pod.target.empty()) << pod.target;
      reported = true;
    }
  }
  EXPECT_TRUE(reported);
  // With the NodeClass's status unknown (no zones, no architectures), every zone is offered.
  Folder open;
  open.Start({Pool("default")});
  open.Fold(PodUpserted{elsewhere});
  const Output first = open.Fold(Tick{kT0 + kSecond});
  auto later = CommandsOf<LaunchInstance>(first);
  ASSERT_EQ(later.size(), 1u);
  EXPECT_EQ(later[0]->overrides.front().zone, "us-east-1b");
}

// Karpenter's launch, from what the EC2NodeClass resolves to: per zone the subnet with the
// most free addresses (ZonalSubnetsForLaunch), per architecture the newest AMI (AMIs.Sort:
// creation date, then id), the security groups and the instance profile; the NodeClass's
// userData and tags, the NodePool's labels and taints, and where the API server is, so that the
// command alone renders the launch template. A NodeClass whose subnets cover one zone has no
// claim planned in another, whatever its status says.
NodeClassResolution TwoZoneResolution() {
  NodeClassResolution r;
  r.amis = {{"ami-new-amd", "al2023 new", "amd64", "2026-11-01T00:00:00.000Z"},
            {"ami-old-amd", "al2023 old", "amd64", "2026-10-01T00:00:00.000Z"},
            {"ami-tie-a", "al2023 arm a", "arm64", "2026-11-01T00:00:00.000Z"},
            {"ami-tie-b", "al2023 arm b", "arm64", "2026-11-01T00:00:00.000Z"}};
  r.subnets = {{"subnet-a-small", "us-east-1a", "use1-az1", 10},
               {"subnet-a-large", "us-east-1a", "use1-az1", 4000},
               {"subnet-b", "us-east-1b", "use1-az2", 200}};
  r.security_groups = {{"sg-nodes", "nodes"}};
  r.instance_profile = "tenon_default";
  return r;
}

TEST(Provisioning, LaunchCarriesItsSubnetsAmisAndTemplateInputs) {
  Folder f;
  Settings settings;
  settings.cluster_endpoint = "https://api.example";
  settings.cluster_ca_bundle = "Y2E=";
  NodePool pool = Pool("default");
  pool.labels = {{"team", "web"}};
  pool.taints = {{"dedicated", "web", TaintEffect::kNoSchedule}};
  pool.startup_taints = {{"startup", "", TaintEffect::kNoSchedule}};
  f.Start({});
  f.Fold(ControllerStarted{"test", 7, settings});
  NodeClass nodeclass{
      "default", "al2023@latest", "role",           true, {}, {}, {}, {}, {}, false, {},
      {},        "echo hello",    {{"team", "web"}}};
  nodeclass.max_pods = 58;
  f.Fold(NodeClassUpserted{nodeclass});
  f.Fold(NodeClassResolved{"default", TwoZoneResolution()});
  f.Fold(NodePoolUpserted{pool});
  Pod pod = PendingPod("web-1", 500, 512);
  pod.constraints.Mutable().tolerations.push_back(
      {"dedicated", false, "web", TaintEffect::kNoSchedule});
  f.Fold(PodUpserted{pod});
  const Output out = f.Fold(Tick{kT0 + kSecond});
  const auto launches = CommandsOf<LaunchInstance>(out);
  ASSERT_EQ(launches.size(), 1u);
  const LaunchInstance& launch = *launches[0];
  std::set<std::string> zones;
  for (const LaunchOverride& o : launch.overrides) {
    zones.insert(o.zone);
    EXPECT_EQ(o.subnet, o.zone == "us-east-1a" ? "subnet-a-large" : "subnet-b") << o.zone;
    EXPECT_EQ(o.image, o.instance_type == "m6g.large" ? "ami-tie-a" : "ami-new-amd")
        << o.instance_type;
  }
  EXPECT_EQ(zones, (std::set<std::string>{"us-east-1a", "us-east-1b"}));
  const LaunchNode& node = launch.node;
  EXPECT_EQ(node.ami_family, "al2023@latest");
  EXPECT_EQ(node.instance_profile, "tenon_default");
  EXPECT_EQ(node.security_groups, std::vector<std::string>{"sg-nodes"});
  EXPECT_EQ(node.user_data, "echo hello");
  EXPECT_EQ(node.max_pods, 58);
  EXPECT_EQ(node.labels, (Labels{{"team", "web"}, {label::kNodePool, "default"}}));
  ASSERT_EQ(node.taints.size(), 2u);
  EXPECT_EQ(node.taints[0].key, "dedicated");
  EXPECT_EQ(node.taints[1].key, "startup");
  EXPECT_EQ(node.tags, (Labels{{"team", "web"},
                               {"karpenter.k8s.aws/ec2nodeclass", "default"},
                               {"kubernetes.io/cluster/tenon", "owned"}}));
  EXPECT_EQ(node.cluster_name, "tenon");
  EXPECT_EQ(node.cluster_endpoint, "https://api.example");
  EXPECT_EQ(node.cluster_ca_bundle, "Y2E=");
}

TEST(Provisioning, OnlyZonesAndArchitecturesTheResolutionServes) {
  Folder f;
  f.Start({Pool("default")});
  NodeClassResolution r = TwoZoneResolution();
  r.subnets = {{"subnet-a-large", "us-east-1a", "use1-az1", 4000}};
  r.amis = {{"ami-new-amd", "al2023 new", "amd64", "2026-11-01T00:00:00.000Z"}};
  // The status (from an older resolution) still lists both zones; the resolution decides.
  NodeClass nodeclass{"default",
                      "AL2023",
                      "role",
                      true,
                      {},
                      {},
                      {},
                      {},
                      {},
                      false,
                      {"us-east-1a", "us-east-1b"},
                      {"amd64", "arm64"},
                      "",
                      {}};
  f.Fold(NodeClassUpserted{nodeclass});
  f.Fold(NodeClassResolved{"default", r});
  FoldSpreadAndOneForZoneB(f);
  const Output out = f.Fold(Tick{kT0 + kSecond});
  const auto launches = CommandsOf<LaunchInstance>(out);
  ASSERT_FALSE(launches.empty());
  for (const auto* launch : launches) {
    for (const auto& o : launch->overrides) {
      EXPECT_EQ(o.zone, "us-east-1a") << launch->nodeclaim << " " << o.instance_type;
      EXPECT_EQ(o.subnet, "subnet-a-large");
      EXPECT_NE(o.instance_type, "m6g.large");
    }
  }
  for (const auto& [name, claim] : f.state.lifecycle.nodeclaims) {
    for (const Requirement& req : *claim.requirements) {
      if (req.key == label::kZone) {
        EXPECT_EQ(req.values, std::vector<std::string>{"us-east-1a"});
      }
    }
  }
  // A resolution that fails makes the NodePool unusable: nothing more launches.
  NodeClassResolution failed;
  failed.reason = "SubnetsNotFound";
  failed.message = "no subnets matched";
  f.Fold(NodeClassResolved{"default", failed});
  f.Fold(PodUpserted{PendingPod("later", 500, 512, kT0 + kSecond)});
  const Output none = f.Fold(Tick{kT0 + Duration{5 * kSecond.value}});
  EXPECT_TRUE(CommandsOf<LaunchInstance>(none).empty());
}

// A launch retried after a failure that is not out of capacity goes out with the subnets and
// AMIs as they resolve then (Karpenter resolves them on every launch attempt).
TEST(Lifecycle, RetriedLaunchTakesTheResolutionOfTheRetry) {
  Folder f;
  f.Start({Pool("default")});
  f.Fold(NodeClassResolved{"default", TwoZoneResolution()});
  f.Fold(PodUpserted{PendingPod("web-1", 500, 512)});
  Output out = f.Fold(Tick{kT0 + kSecond});
  const std::string claim = LaunchFor(out);
  ASSERT_FALSE(claim.empty());
  f.Fold(FleetFailed{
      LaunchId(out), claim, {{"", "", "spot", ErrorCode::kThrottled, "RequestLimitExceeded"}}, ""});
  NodeClassResolution newer = TwoZoneResolution();
  newer.amis.push_back({"ami-newest-amd", "al2023 newest", "amd64", "2026-11-20T00:00:00.000Z"});
  newer.subnets.push_back({"subnet-b-large", "us-east-1b", "use1-az2", 9000});
  f.Fold(NodeClassResolved{"default", newer});
  const Output due = f.Fold(Tick{kT0 + kSecond + kSecond});
  const auto again = CommandsOf<LaunchInstance>(due);
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0]->client_token, claim);
  for (const LaunchOverride& o : again[0]->overrides) {
    if (o.instance_type != "m6g.large") {
      EXPECT_EQ(o.image, "ami-newest-amd");
    }
    if (o.zone == "us-east-1b") {
      EXPECT_EQ(o.subnet, "subnet-b-large");
    }
  }
}

}  // namespace
}  // namespace tenon::testing
