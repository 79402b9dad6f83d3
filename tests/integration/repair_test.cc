// Node repair (feature gate NodeRepair) end to end, through the simulator, with the semantics of
// Karpenter's node health suite (pkg/controllers/node/health/suite_test.go): a node whose watched
// condition holds past its toleration has its NodeClaim deleted at once, whatever the disruption
// budgets and do-not-disrupt say; not before the toleration, not for a condition no policy
// watches, not with the gate off, and not while more than 20% of its NodePool's nodes
// (rounded up) are unhealthy. Each run replays identical.
#include "tests/integration/scenario_run.h"

namespace tenon::testing {
namespace {

constexpr const char* kGateOn = "settings: {featureGates: NodeRepair=true}\n";

// `nodes` m5.xlarge nodes, one 2500m pod each (two do not fit one), the oldest `unhealthy` of them
// reporting `condition` from 3 minutes on; the pool's budget allows no disruption at all.
std::string RepairScenario(int nodes, int unhealthy, const std::string& condition,
                           const std::string& duration, bool gate = true,
                           const std::string& more = "") {
  return Scenario(
      "duration: " + duration + "\nworkloads:\n  - {name: web, replicas: " + std::to_string(nodes) +
          ", cpu: 2500m, memory: 256Mi}\nactions:\n" +
          "  - {at: 3m, do: nodeCondition, condition: " + condition +
          ", count: " + std::to_string(unhealthy) + "}\n" + more + (gate ? kGateOn : ""),
      "", "      disruption: {budgets: [{nodes: \"0\"}]}\n");
}

std::vector<const LifecycleDecision*> Repairs(const Outcome& o) {
  std::vector<const LifecycleDecision*> out;
  for (const auto& d : o.history) {
    if (d.transition == Transition::kDeleting && d.cause == Cause::kUnhealthy) out.push_back(&d);
  }
  return out;
}

std::size_t BlockedEvents(const Outcome& o) {
  std::size_t n = 0;
  for (const auto* e : o.CommandsOf<RecordKubeEvent>()) n += e->reason == "NodeRepairBlocked";
  return n;
}

// "should delete nodes that are unhealthy by the cloud provider", with the AWS policy
// AcceleratedHardwareReady=False (10 minutes), and "should ignore node disruption budgets" (the
// pool's budget is "0" nodes); its pod runs again on a node launched for it.
TEST(NodeRepair, RepairsANodeUnhealthyPastItsToleration) {
  Outcome o = Simulate(RepairScenario(2, 1, "AcceleratedHardwareReady=False", "20m"));
  EXPECT_EQ(o.verdict, replay::Verdict::kIdentical) << o.verify_detail;
  const auto repairs = Repairs(o);
  ASSERT_EQ(repairs.size(), 1u) << o.Describe();
  EXPECT_NE(repairs[0]->reason.find("AcceleratedHardwareReady=False"), std::string::npos)
      << repairs[0]->reason;
  EXPECT_NE(repairs[0]->reason.find("past its 10m toleration"), std::string::npos);
  EXPECT_EQ(o.Count(Transition::kFinalized), 1u) << o.Describe();
  EXPECT_EQ(o.instances.size(), 2u);  // The repaired one gone, a new one for its pod.
  EXPECT_EQ(o.Bound(), 2u);
  EXPECT_EQ(BlockedEvents(o), 0u);
}

// "should not delete node when health duration is not reached": Ready=False tolerates 30 minutes.
TEST(NodeRepair, NotBeforeTheToleration) {
  Outcome o = Simulate(RepairScenario(2, 1, "Ready=False", "20m"));
  EXPECT_TRUE(Repairs(o).empty()) << o.Describe();
  EXPECT_EQ(o.Count(Transition::kDeleting), 0u);
}

// "should not delete node when unhealthy type does not match cloud provider passed in value"
// (MemoryPressure is not a repair policy on AWS), and nothing with the gate off, as in Karpenter
// (alpha, off by default).
TEST(NodeRepair, NotForUnwatchedConditionsNorWithoutTheGate) {
  EXPECT_TRUE(Repairs(Simulate(RepairScenario(2, 1, "MemoryPressure=True", "20m"))).empty());
  EXPECT_TRUE(
      Repairs(Simulate(RepairScenario(2, 1, "AcceleratedHardwareReady=False", "20m", false)))
          .empty());
}

// "should ignore do-not-disrupt on a node": the unhealthy node is protected and still repaired.
TEST(NodeRepair, IgnoresDoNotDisrupt) {
  Outcome o = Simulate(RepairScenario(2, 1, "AcceleratedHardwareReady=False", "20m", true,
                                      "  - {at: 2m, do: protectNode}\n"));
  EXPECT_EQ(Repairs(o).size(), 1u) << o.Describe();
}

// "should ignore unhealthy nodes if more then 20% of the nodes are unhealthy in a nodepool": 3 of 3
// is over ceil(0.6) = 1; Karpenter's NodeRepairBlocked Warning is recorded instead, at most every
// 15 minutes per object.
TEST(NodeRepair, BlockedAboveTwentyPercentUnhealthy) {
  Outcome o = Simulate(RepairScenario(3, 3, "AcceleratedHardwareReady=False", "20m"));
  EXPECT_EQ(o.verdict, replay::Verdict::kIdentical) << o.verify_detail;
  EXPECT_TRUE(Repairs(o).empty()) << o.Describe();
  // Node, NodeClaim and NodePool for each of the three, once in the 7 minutes since they came
  // due (the NodePool's Event is one: same object, same reason).
  EXPECT_EQ(BlockedEvents(o), 3u + 3u + 1u);
}

// Rounded up, one unhealthy node of three is within the limit ("should consider round up when
// there is a low number of nodes for a nodepool").
TEST(NodeRepair, OneOfThreeIsWithinTheLimit) {
  Outcome o = Simulate(RepairScenario(3, 1, "Ready=Unknown", "40m"));
  EXPECT_EQ(Repairs(o).size(), 1u) << o.Describe();
}

}  // namespace
}  // namespace tenon::testing
