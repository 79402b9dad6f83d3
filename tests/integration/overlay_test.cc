// NodeOverlays (karpenter.sh/v1alpha1, feature gate NodeOverlay) end to end, through the
// simulator, with the semantics of Karpenter's node overlay suite: a price overlay changes which
// instance type is launched and what its claim costs; a capacity overlay lets a pod asking for an
// extended resource launch on the types it names; the heavier overlay wins, equal weights on the
// same offering are a conflict and the loser is applied nowhere; capacity Karpenter restricts is
// refused at run time. Each run replays identical.
#include "tests/integration/scenario_run.h"

namespace tenon::testing {
namespace {

constexpr const char* kGateOn = "settings: {featureGates: NodeOverlay=true}\n";

// The default pool (m5.large $0.096/h, m5.xlarge $0.192/h, on-demand) with `overlays` (object
// list items) and one 500m pod; the gate on unless `gate` is false.
std::string OverlayScenario(const std::string& overlays, bool gate = true,
                            const std::string& workloads =
                                "workloads:\n  - {name: web, replicas: 1, cpu: 500m, "
                                "memory: 256Mi}\n") {
  return Scenario(overlays + "duration: 3m\n" + workloads + (gate ? kGateOn : ""));
}

std::string PriceOverlay(const std::string& name, const std::string& type, const std::string& price,
                         int weight = 0) {
  return "  - kind: NodeOverlay\n    apiVersion: karpenter.sh/v1alpha1\n    metadata: {name: " +
         name + "}\n    spec:\n" +
         (weight > 0 ? "      weight: " + std::to_string(weight) + "\n" : "") +
         "      requirements: [{key: node.kubernetes.io/instance-type, operator: In, values: [" +
         type + "]}]\n      " + price + "\n";
}

std::string LaunchedType(const Outcome& o) {
  return o.instances.size() == 1 ? o.instances.begin()->second.instance_type : "";
}

// Without overlays the cheaper m5.large is launched; an overlay pricing m5.xlarge below it
// turns the choice (Karpenter's "should apply pricing updates for instances types", seen at the
// launch decision).
TEST(NodeOverlay, APriceOverlayChangesTheLaunchChoice) {
  Outcome plain = Simulate(OverlayScenario(""));
  EXPECT_EQ(LaunchedType(plain), "m5.large") << plain.Describe();
  Outcome o =
      Simulate(OverlayScenario(PriceOverlay("cheap-xlarge", "m5.xlarge", "price: \"0.05\"")));
  EXPECT_EQ(o.verdict, replay::Verdict::kIdentical) << o.verify_detail;
  EXPECT_EQ(LaunchedType(o), "m5.xlarge") << o.Describe();
  const LifecycleDecision* launched = o.First(Transition::kLaunched);
  ASSERT_NE(launched, nullptr);
  EXPECT_NE(launched->reason.find("50000 micro-USD/h), priced by NodeOverlay cheap-xlarge"),
            std::string::npos)
      << launched->reason;
  ASSERT_EQ(o.CommandsOf<LaunchInstance>().size(), 1u);
  for (const LaunchOverride& override : o.CommandsOf<LaunchInstance>()[0]->overrides) {
    if (override.instance_type == "m5.xlarge") {
      EXPECT_EQ(override.price, MicroUsdPerHour{50'000});
    }
  }
  ASSERT_TRUE(o.overlay_status.contains("cheap-xlarge"));
  EXPECT_TRUE(o.overlay_status.at("cheap-xlarge").valid);
}

// The gate is off by default, as in Karpenter: the overlay changes nothing and gets no status.
TEST(NodeOverlay, NothingWithoutTheFeatureGate) {
  Outcome o = Simulate(
      OverlayScenario(PriceOverlay("cheap-xlarge", "m5.xlarge", "price: \"0.05\""), false));
  EXPECT_EQ(LaunchedType(o), "m5.large") << o.Describe();
  EXPECT_TRUE(o.overlay_status.empty());
  EXPECT_TRUE(o.CommandsOf<PatchNodeOverlayStatus>().empty());
}

// A percent adjustment from the cloud's price: +150% makes m5.large $0.24/h, dearer than
// m5.xlarge.
TEST(NodeOverlay, APercentAdjustmentOfTheCloudsPrice) {
  Outcome o = Simulate(
      OverlayScenario(PriceOverlay("dear-large", "m5.large", "priceAdjustment: \"+150%\"")));
  EXPECT_EQ(LaunchedType(o), "m5.xlarge") << o.Describe();
  ASSERT_EQ(o.CommandsOf<LaunchInstance>().size(), 1u);
  for (const LaunchOverride& override : o.CommandsOf<LaunchInstance>()[0]->overrides) {
    if (override.instance_type == "m5.large") {
      EXPECT_EQ(override.price, MicroUsdPerHour{240'000});
    }
  }
}

// Equal weights changing the same offerings conflict: the later name is taken first and wins,
// the other is marked Conflict and applied nowhere ("should fail with conflicting pricing updates
// overlays with overlapping requirements").
TEST(NodeOverlay, EqualWeightsConflictAndTheLaterNameWins) {
  Outcome o =
      Simulate(OverlayScenario(PriceOverlay("overlay-a", "m5.xlarge", "price: \"0.01\"", 10) +
                               PriceOverlay("overlay-b", "m5.xlarge", "price: \"0.02\"", 10)));
  EXPECT_EQ(o.verdict, replay::Verdict::kIdentical) << o.verify_detail;
  ASSERT_EQ(o.overlay_status.size(), 2u);
  EXPECT_FALSE(o.overlay_status.at("overlay-a").valid);
  EXPECT_EQ(o.overlay_status.at("overlay-a").reason, "Conflict");
  EXPECT_EQ(o.overlay_status.at("overlay-a").message, "conflict with another overlay");
  EXPECT_TRUE(o.overlay_status.at("overlay-b").valid);
  ASSERT_EQ(o.instances.size(), 1u);
  EXPECT_EQ(o.instances.begin()->second.price, MicroUsdPerHour{20'000}) << o.Describe();
}

// A heavier overlay wins the offerings it matches and a lighter one keeps the rest: there is no
// stacking ("should update price updates offerings instance types from multiple overlays with
// different weights").
TEST(NodeOverlay, TheHeavierWeightWinsWithoutStacking) {
  Outcome o =
      Simulate(OverlayScenario(PriceOverlay("light", "m5.large, m5.xlarge", "price: \"0.03\"", 5) +
                               PriceOverlay("heavy", "m5.xlarge", "price: \"0.04\"", 20)));
  EXPECT_TRUE(o.overlay_status.at("light").valid);
  EXPECT_TRUE(o.overlay_status.at("heavy").valid);
  EXPECT_EQ(LaunchedType(o), "m5.large") << o.Describe();  // $0.03 under the heavy $0.04.
  ASSERT_EQ(o.CommandsOf<LaunchInstance>().size(), 1u);
  for (const LaunchOverride& override : o.CommandsOf<LaunchInstance>()[0]->overrides) {
    EXPECT_EQ(override.price,
              MicroUsdPerHour{override.instance_type == "m5.large" ? 30'000 : 40'000});
  }
}

constexpr const char* kFuseOverlay = R"(  - kind: NodeOverlay
    apiVersion: karpenter.sh/v1alpha1
    metadata: {name: fuse}
    spec:
      requirements: [{key: node.kubernetes.io/instance-type, operator: In, values: [m5.xlarge]}]
      capacity: {smarter-devices/fuse: 1}
)";

constexpr const char* kFusePod = R"(  - kind: Deployment
    apiVersion: apps/v1
    metadata: {name: fuse-user}
    spec:
      replicas: 1
      selector: {matchLabels: {app: fuse-user}}
      template:
        metadata: {labels: {app: fuse-user}}
        spec:
          containers:
            - name: main
              image: busybox
              resources: {requests: {cpu: 500m, memory: 256Mi, smarter-devices/fuse: "1"}}
)";

// A pod asking for an extended resource only an overlay gives: the overlay's type is launched
// and the pod runs there (the simulated node's device plugin advertises it); without the gate
// nothing offers it, and the pod stays pending (Karpenter's insufficient capacity).
TEST(NodeOverlay, CapacityLetsAPodOfAnExtendedResourceLaunch) {
  Outcome o = Simulate(OverlayScenario(std::string(kFuseOverlay) + kFusePod, true, ""));
  EXPECT_EQ(o.verdict, replay::Verdict::kIdentical) << o.verify_detail;
  EXPECT_EQ(LaunchedType(o), "m5.xlarge") << o.Describe();
  EXPECT_EQ(o.Bound(), 1u);
  ASSERT_EQ(o.nodes.size(), 1u);
  EXPECT_EQ(o.nodes.begin()->second.allocatable.extended.at("smarter-devices/fuse"), 1);
  const auto patches = o.CommandsOf<PatchNodeClaimStatus>();
  const bool advertised = std::any_of(patches.begin(), patches.end(), [](const auto* p) {
    return p->capacity.extended.contains("smarter-devices/fuse");
  });
  EXPECT_TRUE(advertised) << "the NodeClaim's status.capacity lacks the overlay's resource";

  Outcome off = Simulate(OverlayScenario(std::string(kFuseOverlay) + kFusePod, false, ""));
  EXPECT_TRUE(off.instances.empty()) << off.Describe();
  EXPECT_EQ(off.Bound(), 0u);
}

// Capacity of cpu, memory, ephemeral-storage or pods is refused at run time: ValidationSucceeded
// False with reason RuntimeValidation, and the overlay's price is not applied either.
TEST(NodeOverlay, RestrictedCapacityFailsRuntimeValidation) {
  Outcome o = Simulate(OverlayScenario(R"(  - kind: NodeOverlay
    apiVersion: karpenter.sh/v1alpha1
    metadata: {name: more-cpu}
    spec:
      requirements: [{key: node.kubernetes.io/instance-type, operator: In, values: [m5.xlarge]}]
      price: "0.01"
      capacity: {cpu: "8"}
)"));
  ASSERT_TRUE(o.overlay_status.contains("more-cpu"));
  EXPECT_FALSE(o.overlay_status.at("more-cpu").valid);
  EXPECT_EQ(o.overlay_status.at("more-cpu").reason, "RuntimeValidation");
  EXPECT_NE(o.overlay_status.at("more-cpu").message.find("invalid capacity: cpu"),
            std::string::npos);
  EXPECT_EQ(LaunchedType(o), "m5.large") << o.Describe();
}

// Requirements on the capacity type and the NodePool: an overlay for another pool, or for spot
// only, leaves this on-demand pool's prices alone.
TEST(NodeOverlay, RequirementsOnThePoolAndTheCapacityType) {
  const std::string other_pool = R"(  - kind: NodeOverlay
    apiVersion: karpenter.sh/v1alpha1
    metadata: {name: other-pool}
    spec:
      requirements: [{key: karpenter.sh/nodepool, operator: In, values: [batch]}]
      price: "0.01"
  - kind: NodeOverlay
    apiVersion: karpenter.sh/v1alpha1
    metadata: {name: spot-only}
    spec:
      requirements: [{key: karpenter.sh/capacity-type, operator: In, values: [spot]}]
      price: "0.001"
)";
  Outcome o = Simulate(OverlayScenario(other_pool));
  EXPECT_EQ(LaunchedType(o), "m5.large") << o.Describe();
  ASSERT_EQ(o.instances.size(), 1u);
  EXPECT_EQ(o.instances.begin()->second.price, MicroUsdPerHour{96'000});
  Outcome mine = Simulate(OverlayScenario(R"(  - kind: NodeOverlay
    apiVersion: karpenter.sh/v1alpha1
    metadata: {name: this-pool}
    spec:
      requirements:
        - {key: karpenter.sh/nodepool, operator: In, values: [default]}
        - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
        - {key: node.kubernetes.io/instance-type, operator: In, values: [m5.xlarge]}
      priceAdjustment: "-0.15"
)"));
  EXPECT_EQ(LaunchedType(mine), "m5.xlarge") << mine.Describe();  // $0.042/h.
}

}  // namespace
}  // namespace tenon::testing
