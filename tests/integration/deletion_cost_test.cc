// Pod deletion cost management (feature gate PodDeletionCostManagement) end to end, through the
// simulator, with the semantics of Karpenter's pod.deletioncost controller tests
// (pkg/controllers/pod/deletioncost): the ReplicaSet pods of the nodes consolidation would take
// first get the lower controller.kubernetes.io/pod-deletion-cost, -n .. -1 over n ranked nodes;
// a node that cannot be disrupted gets none; nothing is written without the gate. The simulated
// ReplicaSet scales down the pods of the lowest cost first, so a scale-down empties a node.
#include "tests/integration/scenario_run.h"

namespace tenon::testing {
namespace {

constexpr const char* kGateOn = "settings: {featureGates: PodDeletionCostManagement=true}\n";

// Four 2500m pods of one Deployment, one on each of four m5.xlarge (two do not fit one), scaled
// to two at 5 minutes unless `scale_down` is false; every node may be disrupted at once.
std::string CostScenario(bool gate, const std::string& more = "", bool scale_down = true) {
  return Scenario(
      "\nduration: 10m\nworkloads:\n"
      "  - {name: web, replicas: 4, cpu: 2500m, memory: 256Mi}\n" +
          std::string(scale_down ? "  - {at: 5m, name: web, replicas: 2}\n" : "") + more +
          (gate ? kGateOn : ""),
      "", "      disruption: {budgets: [{nodes: \"100%\"}]}\n");
}

// Each pod's first value written, in the order written.
std::map<std::string, std::int32_t> FirstWritten(const Outcome& o) {
  std::map<std::string, std::int32_t> out;
  for (const auto* p : o.CommandsOf<PatchPodDeletionCost>()) {
    out.try_emplace(p->ns + "/" + p->name, p->cost.value_or(0));
  }
  return out;
}

// "should annotate pods on nodes": four nodes of equal price and pods get -4 .. -1 (consolidation's
// order, ties by node name); the scale-down then removes the pods of the -4 and -3 nodes, whose
// empty nodes emptiness deletes.
TEST(PodDeletionCost, RanksNodesAndTheScaleDownTakesTheLowest) {
  Outcome o = Simulate(CostScenario(true));
  EXPECT_EQ(o.verdict, replay::Verdict::kIdentical) << o.verify_detail;
  const auto first = FirstWritten(o);
  ASSERT_EQ(first.size(), 4u) << o.Describe();
  std::set<std::int32_t> values;
  for (const auto& [pod, cost] : first) values.insert(cost);
  EXPECT_EQ(values, (std::set<std::int32_t>{-4, -3, -2, -1}));
  ASSERT_EQ(o.pods.size(), 2u);
  std::set<std::string> nodes;
  for (const auto& [key, pod] : o.pods) {
    nodes.insert(pod.node_name.str());
    EXPECT_GE(first.at(key), -2) << key << " survived with a lower cost than a deleted pod";
  }
  EXPECT_EQ(nodes.size(), 2u);
  std::size_t emptied = 0;
  for (const auto& d : o.history) {
    emptied += d.transition == Transition::kDeleting && d.cause == Cause::kEmpty;
  }
  EXPECT_EQ(emptied, 2u) << o.Describe();
}

// The gate is off by default, as in Karpenter (alpha): nothing is written.
TEST(PodDeletionCost, NothingWithoutTheFeatureGate) {
  Outcome o = Simulate(CostScenario(false));
  EXPECT_TRUE(o.CommandsOf<PatchPodDeletionCost>().empty());
}

// "should not annotate pods on nodes that cannot be disrupted": the pod on the node with
// karpenter.sh/do-not-disrupt ends with no value (cleared if it was ranked before), the three
// other nodes are ranked -3 .. -1.
TEST(PodDeletionCost, AnUndisruptableNodeGetsNone) {
  Outcome o = Simulate(CostScenario(true, "actions:\n  - {at: 2m, do: protectNode}\n", false));
  EXPECT_EQ(o.verdict, replay::Verdict::kIdentical) << o.verify_detail;
  ASSERT_EQ(o.pods.size(), 4u);
  std::set<std::int32_t> ranked;
  std::size_t protected_pods = 0;
  for (const auto& [key, pod] : o.pods) {
    if (o.nodes.at(pod.node_name.str()).do_not_disrupt) {
      ++protected_pods;
      EXPECT_EQ(pod.deletion_cost, 0) << key;
    } else {
      ranked.insert(pod.deletion_cost);
    }
  }
  EXPECT_EQ(protected_pods, 1u) << o.Describe();
  EXPECT_EQ(ranked, (std::set<std::int32_t>{-3, -2, -1}));
}

}  // namespace
}  // namespace tenon::testing
