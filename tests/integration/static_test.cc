// Static NodePools (spec.replicas, feature gate StaticCapacity) end to end, through the
// simulator, as Karpenter's static provisioning, deprovisioning and static drift tests have
// them: the pool keeps its count whatever the pods, within limits.nodes; the surplus goes empty
// nodes first; consolidation and emptiness leave its nodes alone; drift replaces one for one,
// the replacement first; an interrupted node is refilled.
#include "tests/integration/scenario_run.h"

namespace tenon::testing {
namespace {

constexpr const char* kGateOn = "settings: {featureGates: StaticCapacity=true}\n";

// The default pool with `replicas` (and `limits`, a flow map such as "{nodes: 3}"), running
// `body`, with the gate on unless `gate` is false.
std::string StaticScenario(const std::string& body, int replicas, const std::string& limits = "",
                           bool gate = true) {
  std::string spec = "      replicas: " + std::to_string(replicas) + "\n";
  if (!limits.empty()) spec += "      limits: " + limits + "\n";
  return Scenario(body + (gate ? kGateOn : ""), spec,
                  "      disruption: {budgets: [{nodes: \"100%\"}]}\n");
}

// Two replicas under `limits`, whose template gets a label at 3 min: every node drifts.
std::string DriftScenario(const std::string& duration, const std::string& limits) {
  return StaticScenario("\nduration: " + duration + R"(
actions:
  - {at: 3m, do: labelNodePool, label: team=web}
)",
                        2, limits);
}

std::size_t Removed(const Outcome& o, Cause cause) {
  std::size_t n = 0;
  for (const auto& d : o.history) {
    n += d.transition == Transition::kDeleting && d.cause == cause ? 1 : 0;
  }
  return n;
}

// "should create nodeclaims when current node count is less than desired replicas", and kept:
// empty nodes of a static pool are neither emptied nor consolidated.
TEST(StaticNodePool, LaunchesItsReplicasAndKeepsThemEmpty) {
  Outcome o = Simulate(StaticScenario("duration: 10m\n", 3));
  EXPECT_EQ(o.verdict, replay::Verdict::kIdentical) << o.verify_detail;
  EXPECT_EQ(o.instances.size(), 3u) << o.Describe();
  EXPECT_EQ(o.nodes.size(), 3u);
  for (const auto& [id, instance] : o.instances) EXPECT_EQ(instance.instance_type, "m5.large");
  EXPECT_EQ(o.Count(Transition::kDeleting), 0u) << o.Describe() << Outcomes(o);
  EXPECT_EQ(o.CommandsOf<LaunchInstance>().size(), 3u);
}

// The gate is off by default, as in Karpenter: the static pool gets no nodes.
TEST(StaticNodePool, NothingWithoutTheFeatureGate) {
  Outcome o = Simulate(StaticScenario("duration: 3m\n", 3, "", false));
  EXPECT_TRUE(o.instances.empty()) << o.Describe();
}

// Pods run on the static nodes, but the provisioner never launches from a static pool: what
// does not fit stays pending.
TEST(StaticNodePool, PodsUseItsNodesButNeverGrowIt) {
  Outcome o = Simulate(StaticScenario(R"(
duration: 6m
workloads:
  - {at: 2m, name: web, replicas: 6, cpu: 500m, memory: 256Mi}
)",
                                      1));
  EXPECT_EQ(o.verdict, replay::Verdict::kIdentical) << o.verify_detail;
  EXPECT_EQ(o.instances.size(), 1u) << o.Describe();
  EXPECT_EQ(o.CommandsOf<LaunchInstance>().size(), 1u);
  EXPECT_EQ(o.Bound(), 3u);  // An m5.large holds three 500m pods.
  EXPECT_EQ(o.pods.size(), 6u);
}

// "should not create additional nodeclaims when node limits are reached".
TEST(StaticNodePool, LimitsNodesCapsTheCount) {
  Outcome o = Simulate(StaticScenario("duration: 3m\n", 5, "{nodes: 3}"));
  EXPECT_EQ(o.instances.size(), 3u) << o.Describe();
}

// "should prioritize empty nodes for termination": lowered from 3 to 1 replicas, the two empty
// nodes go and the one running a pod stays; the budget is not consulted.
TEST(StaticNodePool, ScaleDownRemovesEmptyNodesFirst) {
  Outcome o = Simulate(StaticScenario(R"(
duration: 8m
workloads:
  - {at: 2m, name: web, replicas: 1, cpu: 500m, memory: 256Mi}
timeline:
  - {at: 4m, patch: {kind: NodePool, name: default, merge: {spec: {replicas: 1}}}}
)",
                                      3));
  EXPECT_EQ(o.verdict, replay::Verdict::kIdentical) << o.verify_detail;
  EXPECT_EQ(Removed(o, Cause::kOverprovisioned), 2u) << o.Describe();
  ASSERT_EQ(o.instances.size(), 1u) << o.Describe();
  EXPECT_EQ(o.Bound(), 1u);
  EXPECT_EQ(Removed(o, Cause::kEmpty) + Removed(o, Cause::kUnderutilized), 0u);
}

// A node deleted outside disruption (an interruption) is refilled at once.
TEST(StaticNodePool, AnInterruptedNodeIsRefilled) {
  Outcome o = Simulate(StaticScenario(R"(
duration: 8m
actions:
  - {at: 3m, do: spotInterruption}
)",
                                      2));
  EXPECT_EQ(o.verdict, replay::Verdict::kIdentical) << o.verify_detail;
  EXPECT_EQ(Removed(o, Cause::kSpotInterruption), 1u) << o.Describe();
  EXPECT_EQ(o.CommandsOf<LaunchInstance>().size(), 3u);
  EXPECT_EQ(o.instances.size(), 2u) << o.Describe();
}

// Static drift: each drifted node is replaced one for one, its replacement launched first, never
// more than replicas + 1 at once with limits.nodes at replicas + 1.
TEST(StaticNodePool, DriftReplacesOneForOne) {
  Outcome o = Simulate(DriftScenario("14m", "{nodes: 3}"));
  EXPECT_EQ(o.verdict, replay::Verdict::kIdentical) << o.verify_detail;
  EXPECT_EQ(Phase(o, DisruptionMethod::kDrift, DisruptionPhase::kReplaced).size(), 2u)
      << Outcomes(o);
  EXPECT_TRUE(
      Recorded(o, DisruptionMethod::kDrift, "replace one for one (static NodePool default)"))
      << Outcomes(o);
  EXPECT_EQ(o.CommandsOf<LaunchInstance>().size(), 4u);
  EXPECT_EQ(o.instances.size(), 2u) << o.Describe();
}

// "should not drift nodes when we cannot acquire limits": limits.nodes at replicas leaves no
// room for a replacement, so drifted nodes stay.
TEST(StaticNodePool, DriftWaitsForRoomUnderLimitsNodes) {
  Outcome o = Simulate(DriftScenario("8m", "{nodes: 2}"));
  EXPECT_EQ(o.verdict, replay::Verdict::kIdentical) << o.verify_detail;
  EXPECT_TRUE(Phase(o, DisruptionMethod::kDrift, DisruptionPhase::kReplacing).empty())
      << Outcomes(o);
  EXPECT_TRUE(Recorded(o, DisruptionMethod::kDrift, "is at its node limit (limits.nodes 2)"))
      << Outcomes(o);
  EXPECT_EQ(o.CommandsOf<LaunchInstance>().size(), 2u);
}

}  // namespace
}  // namespace tenon::testing
