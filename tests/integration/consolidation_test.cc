// Consolidation end to end, through the simulator: a replacement strictly cheaper than the
// node it replaces (tainted, launched, initialised, then the old node deleted), the rollback
// when the replacement never comes up, multi-node consolidation, the spot-to-spot gate, the
// minimum-savings setting, PodDisruptionBudgets and the do-not-disrupt duration form as
// blockers. Every run also passes the invariant checks in scenario_run.h.
#include "tests/integration/scenario_run.h"

namespace tenon::testing {
namespace {

// One m5.xlarge left with a single 1200m pod: an m5.large at half the price holds it.
const std::string kOneSmallPod = R"(
duration: 9m
workloads:
  - {name: a, replicas: 3, cpu: 1200m, memory: 512Mi}
  - {at: 4m, name: a, replicas: 1}
)";

// A scenario whose NodePool takes m5.large and m5.xlarge of `capacity`, with `settings` and
// `disruption` (the NodePool's spec.disruption) as given.
std::string PoolScenario(const std::string& body, const std::string& capacity = "on-demand",
                         const std::string& disruption = "", const std::string& settings = "") {
  std::string yaml = Scenario(body, "", disruption);
  if (capacity != "on-demand") {
    std::string from = "values: [on-demand]";
    yaml.replace(yaml.find(from), from.size(), "values: [" + capacity + "]");
  }
  return yaml + settings;
}

// An on-demand pool whose budget lets every node go at once, running `body`.
std::string AllAtOnce(const std::string& body) {
  return PoolScenario(body, "on-demand", "      disruption: {budgets: [{nodes: \"100%\"}]}\n");
}

TEST(Consolidation, ReplacesANodeWithACheaperOne) {
  Outcome o = Simulate(PoolScenario(kOneSmallPod));
  EXPECT_EQ(o.verdict, replay::Verdict::kIdentical) << o.verify_detail;
  auto replacing =
      Phase(o, DisruptionMethod::kSingleNodeConsolidation, DisruptionPhase::kReplacing);
  ASSERT_EQ(replacing.size(), 1u) << Outcomes(o);
  ASSERT_EQ(Phase(o, DisruptionMethod::kSingleNodeConsolidation, DisruptionPhase::kReplaced).size(),
            1u)
      << Outcomes(o);
  EXPECT_TRUE(Recorded(o, DisruptionMethod::kSingleNodeConsolidation,
                       "replace with one on-demand node (m5.large from $0.0960/h, 1 types), "
                       "saving at least $0.0960/h"))
      << Outcomes(o);
  // The old node was tainted before its replacement launched and deleted after it was up.
  std::string old = replacing[0]->nodeclaims.at(0);
  auto mine = o.Transitions(old);
  auto tainted = std::find(mine.begin(), mine.end(), Transition::kTainted);
  auto deleting = std::find(mine.begin(), mine.end(), Transition::kDeleting);
  ASSERT_NE(tainted, mine.end()) << o.Describe();
  ASSERT_NE(deleting, mine.end()) << o.Describe();
  EXPECT_LT(tainted, deleting);
  // One m5.large runs the one pod; nothing is pending.
  ASSERT_EQ(o.instances.size(), 1u) << Outcomes(o);
  EXPECT_EQ(o.instances.begin()->second.instance_type, "m5.large");
  EXPECT_EQ(o.Bound(), 1u);
  EXPECT_EQ(o.pods.size(), 1u);
}

// Karpenter's "can delete nodes with a permanently pending pod": a pod no NodePool can serve
// (it selects a label no node will have) stays pending, and consolidation goes on without it.
TEST(Consolidation, APodThatCanNeverScheduleDoesNotStopIt) {
  Outcome o = Simulate(PoolScenario(R"(
duration: 9m
workloads:
  - {name: a, replicas: 3, cpu: 1200m, memory: 512Mi}
  - {at: 1m, name: stuck, replicas: 1, cpu: 100m, memory: 64Mi, nodeSelector: {non-existent: node-label}}
  - {at: 4m, name: a, replicas: 1}
)"));
  EXPECT_EQ(o.verdict, replay::Verdict::kIdentical) << o.verify_detail;
  ASSERT_EQ(Phase(o, DisruptionMethod::kSingleNodeConsolidation, DisruptionPhase::kReplaced).size(),
            1u)
      << Outcomes(o);
  ASSERT_EQ(o.instances.size(), 1u) << Outcomes(o);
  EXPECT_EQ(o.instances.begin()->second.instance_type, "m5.large");
  EXPECT_EQ(o.Bound(), 1u);
  EXPECT_EQ(o.pods.size(), 2u);
}

// The replacement never registers: after the registration TTL it is deleted, the disrupted
// taint comes off the old node, and the old node keeps running its pod.
TEST(Consolidation, FailedReplacementRollsTheTaintBack) {
  Outcome o = Simulate(PoolScenario(R"(
duration: 22m
cloud: {neverRegister: [m5.large]}
workloads:
  - {name: a, replicas: 3, cpu: 1200m, memory: 512Mi}
  - {at: 4m, name: a, replicas: 1}
)"));
  EXPECT_EQ(o.verdict, replay::Verdict::kIdentical) << o.verify_detail;
  auto rolled = Phase(o, DisruptionMethod::kSingleNodeConsolidation, DisruptionPhase::kRolledBack);
  ASSERT_EQ(rolled.size(), 1u) << Outcomes(o);
  EXPECT_NE(rolled[0]->reason.find("the disrupted taint is removed"), std::string::npos);
  std::string old = rolled[0]->nodeclaims.at(0);
  EXPECT_EQ(o.Count(Transition::kUntainted), 1u) << o.Describe();
  EXPECT_TRUE(
      Phase(o, DisruptionMethod::kSingleNodeConsolidation, DisruptionPhase::kReplaced).empty());
  // The old node is still there, the taint was taken off it, and its pod kept running. (The
  // next pass tries again, so the scenario may end with it tainted anew.)
  ASSERT_TRUE(o.nodeclaims.contains(old));
  std::size_t untaint = 0;
  for (const auto* patch : o.CommandsOf<PatchNode>()) {
    if (std::find(patch->remove_taints.begin(), patch->remove_taints.end(),
                  label::kDisruptedTaint) != patch->remove_taints.end()) {
      ++untaint;
    }
  }
  EXPECT_EQ(untaint, 1u);
  EXPECT_EQ(
      Phase(o, DisruptionMethod::kSingleNodeConsolidation, DisruptionPhase::kReplacing).size(), 2u)
      << Outcomes(o);
  EXPECT_EQ(o.Bound(), 1u);
}

// Three m5.xlarge nodes with one 800m pod each: all three would fit one m5.xlarge, but as
// Karpenter's filterOutSameInstanceType has it, replacing them with one of their own type saves
// no more than deleting two and keeping the third, which moves fewer pods. So multi-node
// consolidation deletes the longest group that can go without a replacement (two), and every
// pod keeps running on the one node left.
TEST(Consolidation, MultiNodeTakesTheLongestGroup) {
  Outcome o = Simulate(AllAtOnce(R"(
duration: 10m
workloads:
  - {name: a, replicas: 3, cpu: 3000m, memory: 512Mi}
  - {at: 2m, name: b, replicas: 3, cpu: 800m, memory: 256Mi}
  - {at: 4m, name: a, replicas: 0}
)"));
  EXPECT_EQ(o.verdict, replay::Verdict::kIdentical) << o.verify_detail;
  auto multi = Phase(o, DisruptionMethod::kMultiNodeConsolidation, DisruptionPhase::kReplacing);
  auto deleted = Phase(o, DisruptionMethod::kMultiNodeConsolidation, DisruptionPhase::kExecuted);
  ASSERT_EQ(multi.size() + deleted.size(), 1u) << Outcomes(o);
  EXPECT_TRUE(multi.empty()) << Outcomes(o);
  ASSERT_EQ(deleted.size(), 1u) << Outcomes(o);
  EXPECT_EQ(deleted[0]->nodeclaims.size(), 2u) << Outcomes(o);
  EXPECT_TRUE(
      Recorded(o, DisruptionMethod::kMultiNodeConsolidation, "selected: 2 nodes together: delete"))
      << Outcomes(o);
  EXPECT_EQ(o.instances.size(), 1u) << Outcomes(o);
  EXPECT_EQ(o.Bound(), 3u);
  EXPECT_EQ(o.pods.size(), 3u);
}

// Karpenter's "won't merge 2 nodes into 1 of the same type": two m5.large nodes, one pod each,
// could be replaced by one m5.large, but deleting one of them and moving its pod saves as
// much with less disruption (filterOutSameInstanceType). One node is deleted; nothing is
// launched for it.
TEST(Consolidation, TwoNodesAreNotMergedIntoOneOfTheSameType) {
  std::string yaml = AllAtOnce(R"(
duration: 9m
workloads:
  - {name: a, replicas: 2, cpu: 900m, memory: 256Mi}
  - {at: 1m, name: b, replicas: 1, cpu: 900m, memory: 256Mi}
  - {at: 3m, name: a, replicas: 1}
)");
  const std::string both = "values: [m5.large, m5.xlarge]";
  yaml.replace(yaml.find(both), both.size(), "values: [m5.large]");
  Outcome o = Simulate(yaml);
  EXPECT_EQ(o.verdict, replay::Verdict::kIdentical) << o.verify_detail;
  for (const auto& [at, d] : o.disruptions)
    EXPECT_NE(d.phase, DisruptionPhase::kReplacing) << Outcomes(o);
  EXPECT_EQ(Phase(o, DisruptionMethod::kSingleNodeConsolidation, DisruptionPhase::kExecuted).size(),
            1u)
      << Outcomes(o);
  EXPECT_EQ(o.Count(Transition::kLaunched), 2u) << Outcomes(o);
  EXPECT_EQ(o.instances.size(), 1u) << Outcomes(o);
  EXPECT_EQ(o.Bound(), 2u);
}

// A spot node is not replaced by another spot node unless the feature gate is on, and then
// only with 15 cheaper types to choose from.
TEST(Consolidation, SpotToSpotNeedsTheGateAndFifteenTypes) {
  Outcome off = Simulate(PoolScenario(kOneSmallPod, "spot"));
  EXPECT_TRUE(Recorded(off, DisruptionMethod::kSingleNodeConsolidation,
                       "spot-to-spot consolidation is off"))
      << Outcomes(off);
  EXPECT_TRUE(
      Phase(off, DisruptionMethod::kSingleNodeConsolidation, DisruptionPhase::kReplacing).empty());

  Outcome on = Simulate(PoolScenario(kOneSmallPod, "spot", "",
                                     "settings: {featureGates: SpotToSpotConsolidation=true}\n"));
  EXPECT_TRUE(Recorded(on, DisruptionMethod::kSingleNodeConsolidation,
                       "spot-to-spot replacement needs 15 cheaper instance types, 1 found"))
      << Outcomes(on);
  EXPECT_TRUE(
      Phase(on, DisruptionMethod::kSingleNodeConsolidation, DisruptionPhase::kReplacing).empty());
}

// A spot pool on the full us-east-1 catalog with the gate on, running `body`, of the instance
// types `types` (with `more` after the requirement's values).
std::string SpotToSpotScenario(const std::string& body, const std::string& types,
                               const std::string& more = "") {
  std::string yaml =
      PoolScenario(body, "spot", "", "settings: {featureGates: SpotToSpotConsolidation=true}\n");
  const std::string catalog = TENON_CATALOG;
  yaml.replace(yaml.find(kCatalog), kCatalog.size(), catalog);
  const std::string two = "values: [m5.large, m5.xlarge]";
  yaml.replace(yaml.find(two), two.size(), "values: [" + types + "]" + more);
  return yaml;
}

// Families offered in every size from large to 4xlarge.
const std::vector<std::string> kFamilies = {
    "m5",  "c5",  "m6i", "c6i", "r5",  "m5a",  "c5a",  "m6a", "c6a", "r6i", "m7i", "c7i",
    "m5d", "c5d", "r5a", "m6g", "c6g", "m6id", "c6id", "m7a", "c7a", "m7g", "c7g", "r6g"};

std::string Sized(const std::vector<std::string>& sizes) {
  std::string out;
  for (const auto& size : sizes) {
    for (const auto& family : kFamilies) out += (out.empty() ? "" : ", ") + family + "." + size;
  }
  return out;
}

// With the gate on and the full us-east-1 catalog, a spot node is replaced by a cheaper spot
// node chosen from the 15 cheapest types that fit (of those whose every offering is cheaper).
TEST(Consolidation, SpotToSpotReplacesFromTheFifteenCheapest) {
  Outcome o = Simulate(SpotToSpotScenario(kOneSmallPod, Sized({"large"}) + ", m5.xlarge"));
  EXPECT_EQ(o.verdict, replay::Verdict::kIdentical) << o.verify_detail;
  ASSERT_EQ(Phase(o, DisruptionMethod::kSingleNodeConsolidation, DisruptionPhase::kReplaced).size(),
            1u)
      << Outcomes(o);
  EXPECT_TRUE(Recorded(o, DisruptionMethod::kSingleNodeConsolidation, "replace with one spot node"))
      << Outcomes(o);
  EXPECT_TRUE(Recorded(o, DisruptionMethod::kSingleNodeConsolidation, ", 15 types)"))
      << Outcomes(o);
  EXPECT_EQ(o.Bound(), 1u);
}

// Karpenter keeps as many types as the pool's minValues needs when that is more than 15: the
// replacement is launched with the 20 cheapest types, not 15. Two big pods need a 4xlarge (of
// 24 types, enough for minValues); once they go, the small pod left moves to a large.
TEST(Consolidation, SpotToSpotKeepsWhatMinValuesNeeds) {
  Outcome o = Simulate(SpotToSpotScenario(R"(
duration: 9m
workloads:
  - {name: a, replicas: 2, cpu: 6000m, memory: 512Mi}
  - {at: 2m, name: b, replicas: 1, cpu: 1200m, memory: 512Mi}
  - {at: 4m, name: a, replicas: 0}
)",
                                          Sized({"large", "4xlarge"}), ", minValues: 20"));
  EXPECT_EQ(o.verdict, replay::Verdict::kIdentical) << o.verify_detail;
  ASSERT_EQ(Phase(o, DisruptionMethod::kSingleNodeConsolidation, DisruptionPhase::kReplaced).size(),
            1u)
      << Outcomes(o);
  EXPECT_TRUE(Recorded(o, DisruptionMethod::kSingleNodeConsolidation, ", 20 types)"))
      << Outcomes(o);
  EXPECT_EQ(o.Count(Transition::kLaunched), 2u) << Outcomes(o);
  EXPECT_EQ(o.Bound(), 1u);
}

// tenon's minimum-savings setting: halving the price is not enough when 60% is asked for.
TEST(Consolidation, MinimumSavingsStopsSmallReplacements) {
  Outcome strict = Simulate(PoolScenario(kOneSmallPod, "on-demand", "",
                                         "settings: {consolidationMinSavingsPercent: 60}\n"));
  EXPECT_TRUE(
      Recorded(strict, DisruptionMethod::kSingleNodeConsolidation, "savings under the minimum"))
      << Outcomes(strict);
  EXPECT_TRUE(Phase(strict, DisruptionMethod::kSingleNodeConsolidation, DisruptionPhase::kReplacing)
                  .empty());

  Outcome loose = Simulate(PoolScenario(kOneSmallPod, "on-demand", "",
                                        "settings: {consolidationMinSavingsPercent: 40}\n"));
  EXPECT_EQ(
      Phase(loose, DisruptionMethod::kSingleNodeConsolidation, DisruptionPhase::kReplaced).size(),
      1u)
      << Outcomes(loose);
}

// A PodDisruptionBudget that allows no disruption blocks its pod's node (named in the
// record); the other underutilized node is consolidated onto it.
TEST(Consolidation, PodDisruptionBudgetBlocks) {
  const std::string two_nodes = R"(
duration: 9m
workloads:
  - {name: a, replicas: 3, cpu: 1200m, memory: 512Mi}
  - {at: 2m, name: b, replicas: 3, cpu: 1200m, memory: 512Mi}
  - {at: 4m, name: a, replicas: 1}
  - {at: 4m, name: b, replicas: 1}
)";
  Outcome o = Simulate(PoolScenario(two_nodes + R"(budgets:
  - {name: a-pdb, app: a, minAvailable: 1}
)"));
  EXPECT_EQ(o.verdict, replay::Verdict::kIdentical) << o.verify_detail;
  EXPECT_TRUE(
      Recorded(o, DisruptionMethod::kSingleNodeConsolidation, ": PDB a-pdb allows 0 disruptions"))
      << Outcomes(o);
  auto executed = Phase(o, DisruptionMethod::kSingleNodeConsolidation, DisruptionPhase::kExecuted);
  ASSERT_EQ(executed.size(), 1u) << Outcomes(o);
  EXPECT_EQ(o.instances.size(), 1u);
  EXPECT_EQ(o.Bound(), 2u);

  Outcome twice = Simulate(PoolScenario(two_nodes + R"(budgets:
  - {name: a-pdb, app: a, maxUnavailable: 1}
  - {name: a-pdb-2, app: a, maxUnavailable: 1}
  - {name: b-pdb, app: b, minAvailable: 1}
)"));
  EXPECT_TRUE(Recorded(twice, DisruptionMethod::kSingleNodeConsolidation,
                       "is matched by several PodDisruptionBudgets (a-pdb, a-pdb-2)"))
      << Outcomes(twice);
  EXPECT_TRUE(
      Phase(twice, DisruptionMethod::kSingleNodeConsolidation, DisruptionPhase::kExecuted).empty())
      << Outcomes(twice);
  EXPECT_EQ(twice.instances.size(), 2u);
}

// Candidates go cheapest to disrupt first (Karpenter's disruption cost): of two nodes that
// could each go, the one whose pod has the higher priority stays.
TEST(Consolidation, HigherPriorityPodsAreDisruptedLast) {
  auto gone_when_high = [](const std::string& high) {
    std::string yaml = R"(
duration: 9m
workloads:
  - {name: a, replicas: 3, cpu: 1200m, memory: 512Mi, PRIORITY_A}
  - {at: 2m, name: b, replicas: 3, cpu: 1200m, memory: 512Mi, PRIORITY_B}
  - {at: 4m, name: a, replicas: 1}
  - {at: 4m, name: b, replicas: 1}
)";
    auto put = [&](const std::string& mark, bool on) {
      yaml.replace(yaml.find(mark), mark.size(), on ? "priority: 1000000" : "priority: 0");
    };
    put("PRIORITY_A", high == "a");
    put("PRIORITY_B", high == "b");
    Outcome o = Simulate(PoolScenario(yaml));
    auto executed =
        Phase(o, DisruptionMethod::kSingleNodeConsolidation, DisruptionPhase::kExecuted);
    EXPECT_EQ(executed.size(), 1u) << Outcomes(o);
    // The pods left: the kept node's own, and the one that moved onto it.
    std::set<std::string> apps;
    for (const auto& [key, pod] : o.pods) apps.insert(pod.labels->at("app"));
    EXPECT_EQ(apps.size(), 2u);
    std::string moved;
    for (const auto& c :
         executed.empty() ? std::vector<DisruptionCandidate>{} : executed[0]->candidates) {
      if (c.outcome.find("default/a-") != std::string::npos) moved = "a";
      if (c.outcome.find("default/b-") != std::string::npos) moved = "b";
    }
    return moved;
  };
  EXPECT_EQ(gone_when_high("a"), "b");  // a's pod has the high priority: b's node goes.
  EXPECT_EQ(gone_when_high("b"), "a");
}

// karpenter.sh/do-not-disrupt: "6m" protects the pod for six minutes from its creation; the
// node is consolidated, and drained, once that has passed.
TEST(Consolidation, DoNotDisruptDurationExpires) {
  Outcome o = Simulate(PoolScenario(R"(
duration: 10m
workloads:
  - {name: a, replicas: 3, cpu: 1200m, memory: 512Mi, doNotDisrupt: 6m}
  - {at: 4m, name: a, replicas: 1}
)"));
  EXPECT_EQ(o.verdict, replay::Verdict::kIdentical) << o.verify_detail;
  EXPECT_TRUE(Recorded(o, DisruptionMethod::kSingleNodeConsolidation,
                       "has karpenter.sh/do-not-disrupt until 00:06:00 UTC"))
      << Outcomes(o);
  auto replacing =
      Phase(o, DisruptionMethod::kSingleNodeConsolidation, DisruptionPhase::kReplacing);
  ASSERT_EQ(replacing.size(), 1u) << Outcomes(o);
  // Past its six minutes the pod no longer holds the drain either: the old node is evicted,
  // terminated and finalized, and the pod runs on the replacement.
  EXPECT_EQ(o.Count(Transition::kFinalized), 1u) << o.Describe();
  EXPECT_EQ(o.instances.size(), 1u);
  EXPECT_EQ(o.Bound(), 1u);
}

}  // namespace
}  // namespace tenon::testing

namespace tenon::testing {
namespace {

// Soft expiration (beyond Karpenter, off by default): an expired node waits for its budget,
// gets its replacement first, and only then is drained; with the budget at 0 it stays.
TEST(Consolidation, SoftExpirationIsBudgetedAndReplacesFirst) {
  const std::string workload = R"(
duration: 9m
workloads:
  - {name: web, replicas: 2, cpu: 500m, memory: 512Mi}
)";
  const std::string expire = "          expireAfter: 5m\n";
  Outcome o = Simulate(Scenario(workload, expire) + "settings: {softExpiration: true}\n");
  EXPECT_EQ(o.verdict, replay::Verdict::kIdentical) << o.verify_detail;
  EXPECT_TRUE(Phase(o, DisruptionMethod::kExpiration, DisruptionPhase::kExecuted).empty())
      << Outcomes(o);
  ASSERT_EQ(Phase(o, DisruptionMethod::kSoftExpiration, DisruptionPhase::kReplacing).size(), 1u)
      << Outcomes(o);
  ASSERT_EQ(Phase(o, DisruptionMethod::kSoftExpiration, DisruptionPhase::kReplaced).size(), 1u)
      << Outcomes(o);
  EXPECT_TRUE(Recorded(o, DisruptionMethod::kSoftExpiration,
                       "selected: expired (created 309s ago, expireAfter 5m)"))
      << Outcomes(o);
  EXPECT_EQ(o.instances.size(), 1u);
  EXPECT_EQ(o.Bound(), 2u);

  Outcome held =
      Simulate(Scenario(workload, expire, "      disruption: {budgets: [{nodes: \"0\"}]}\n") +
               "settings: {softExpiration: true}\n");
  EXPECT_TRUE(Phase(held, DisruptionMethod::kSoftExpiration, DisruptionPhase::kReplacing).empty())
      << Outcomes(held);
  EXPECT_TRUE(
      Recorded(held, DisruptionMethod::kSoftExpiration, "over budget: Expired allows 0 now"))
      << Outcomes(held);
}

// The independent check behind the consolidation invariant says no when the pods of the
// deleted node have nowhere to go, and yes when they do.
TEST(Consolidation, InvariantCheckerCatchesAPodWithNowhereToGo) {
  State state;
  for (const char* name : {"a", "b"}) {
    NodeClaim claim;
    claim.name = std::string("claim-") + name;
    claim.node_name = std::string("node-") + name;
    state.lifecycle.nodeclaims[claim.name] = claim;
    Node node;
    node.name = claim.node_name;
    node.ready = true;
    node.allocatable = {Millicores{2000}, Bytes{4 * 1024 * kMebibyte.value}, 10, {}};
    state.cluster.nodes[node.name] = node;
    Pod pod;
    pod.ns = "default";
    pod.name = std::string("pod-") + name;
    pod.node_name = node.name;
    pod.phase = PodPhase::kRunning;
    pod.owner_kind = "ReplicaSet";
    pod.requests.cpu = Millicores{1500};
    state.cluster.pods.Upsert(PodKey(pod.ns, pod.name), pod);
  }
  EXPECT_EQ(Unplaceable(state, {"claim-a"}), "default/pod-a");
  Pod smaller = state.cluster.pods.at("default/pod-b");
  smaller.requests.cpu = Millicores{400};
  state.cluster.pods.Upsert("default/pod-b", smaller);
  EXPECT_EQ(Unplaceable(state, {"claim-a"}), "");
}

}  // namespace
}  // namespace tenon::testing
