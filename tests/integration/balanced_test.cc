// consolidationPolicy: Balanced end to end, through the simulator, with the numbers of
// Karpenter's Balanced suites: the score (savings as a share of the NodePool's cost over
// disruption as a share of its disruption cost) must reach 1/2 for a move of underutilized
// nodes to go; empty nodes are not scored. The same layouts under WhenEmptyOrUnderutilized
// show what the score holds back.
#include "reducers/disruption/decider.h"
#include "tests/integration/scenario_run.h"

namespace tenon::testing {
namespace {

using core::disruption::BalancedTotals;
using core::disruption::Candidate;
using core::disruption::DeleteWouldFail;
using core::disruption::ScoreMove;

std::string WithPolicy(const std::string& body, const std::string& policy) {
  return Scenario(
      body, "",
      "      disruption: {consolidationPolicy: " + policy + ", budgets: [{nodes: \"100%\"}]}\n");
}

// One m5.xlarge left with one 1200m pod, the pool's only node: replacing it with an m5.large
// saves half the pool's cost for all of its disruption, a score of exactly 0.5, which passes
// (Karpenter: "should approve replacing an oversized node"; ScoreMove's boundary case).
const std::string kOversized = R"(
duration: 9m
workloads:
  - {name: a, replicas: 3, cpu: 1200m, memory: 512Mi}
  - {at: 4m, name: a, replicas: 1}
)";

TEST(Balanced, ApprovesReplacingAnOversizedNode) {
  Outcome o = Simulate(WithPolicy(kOversized, "Balanced"));
  EXPECT_EQ(o.verdict, replay::Verdict::kIdentical) << o.verify_detail;
  ASSERT_EQ(Phase(o, DisruptionMethod::kSingleNodeConsolidation, DisruptionPhase::kReplaced).size(),
            1u)
      << Outcomes(o);
  EXPECT_TRUE(Recorded(o, DisruptionMethod::kSingleNodeConsolidation,
                       "NodePool default (Balanced): score 0.50 >= threshold 0.50 (k: 2, savings "
                       "50.0% of the NodePool's cost, disruption 100.0% of its disruption cost)"))
      << Outcomes(o);
  ASSERT_EQ(o.instances.size(), 1u) << Outcomes(o);
  EXPECT_EQ(o.instances.begin()->second.instance_type, "m5.large");
  // Karpenter's ConsolidationApproved Event, on the node and on its NodeClaim, with the score.
  std::set<std::string> kinds;
  for (const auto* e : o.CommandsOf<RecordKubeEvent>()) {
    if (e->reason != "ConsolidationApproved") continue;
    kinds.insert(e->object.kind);
    EXPECT_NE(e->message.find(">= threshold 0.50 (k: 2"), std::string::npos) << e->message;
  }
  EXPECT_EQ(kinds, (std::set<std::string>{"Node", "NodeClaim"}));
}

// MarginalReplaceScenario (scenario_run.h): Balanced keeps the node WhenEmptyOrUnderutilized
// replaces.
TEST(Balanced, RefusesAMarginalReplaceThatWhenUnderutilizedMakes) {
  Outcome balanced = Simulate(MarginalReplaceScenario("Balanced"));
  EXPECT_EQ(balanced.verdict, replay::Verdict::kIdentical) << balanced.verify_detail;
  EXPECT_TRUE(
      Phase(balanced, DisruptionMethod::kSingleNodeConsolidation, DisruptionPhase::kReplacing)
          .empty())
      << Outcomes(balanced);
  EXPECT_TRUE(Recorded(balanced, DisruptionMethod::kSingleNodeConsolidation,
                       "NodePool default (Balanced): score 0.33 < threshold 0.50 (k: 2, savings "
                       "25.0% of the NodePool's cost, disruption 75.0% of its disruption cost)"))
      << Outcomes(balanced);
  bool coded = false;
  for (const auto& [at, d] : balanced.disruptions) {
    for (const auto& c : d.candidates) coded = coded || c.cause == Cause::kBalancedScore;
  }
  EXPECT_TRUE(coded) << Outcomes(balanced);
  // As in Karpenter, a score that does not pass records no Event.
  for (const auto* e : balanced.CommandsOf<RecordKubeEvent>()) {
    EXPECT_EQ(e->message.find("Balanced"), std::string::npos) << e->reason << ": " << e->message;
  }
  EXPECT_EQ(balanced.instances.size(), 2u);
  for (const auto& [id, instance] : balanced.instances) {
    EXPECT_EQ(instance.instance_type, "m5.xlarge");
  }

  Outcome eager = Simulate(MarginalReplaceScenario("WhenEmptyOrUnderutilized"));
  EXPECT_EQ(eager.verdict, replay::Verdict::kIdentical) << eager.verify_detail;
  EXPECT_EQ(
      Phase(eager, DisruptionMethod::kSingleNodeConsolidation, DisruptionPhase::kReplaced).size(),
      1u)
      << Outcomes(eager);
  EXPECT_FALSE(Recorded(eager, DisruptionMethod::kSingleNodeConsolidation, "Balanced"));
}

// Emptiness is never scored: an empty node of a Balanced pool goes as it would under any policy.
TEST(Balanced, EmptyNodesAreNotScored) {
  Outcome o = Simulate(WithPolicy(R"(
duration: 8m
workloads:
  - {name: a, replicas: 3, cpu: 1200m, memory: 512Mi}
  - {at: 4m, name: a, replicas: 0}
)",
                                  "Balanced"));
  EXPECT_EQ(o.verdict, replay::Verdict::kIdentical) << o.verify_detail;
  EXPECT_FALSE(Phase(o, DisruptionMethod::kEmptiness, DisruptionPhase::kExecuted).empty())
      << Outcomes(o);
  EXPECT_TRUE(o.instances.empty()) << Outcomes(o);
  EXPECT_FALSE(Recorded(o, DisruptionMethod::kEmptiness, "score"));
}

// Karpenter's ScoreMove table ("RFC example pool": ten nodes costing $58.08/h in all, 80 pods,
// a disruption total of 90), in this core's units: micro-dollars an hour and 2^-27 of a pod.
TEST(Balanced, ScoresAsKarpentersTable) {
  auto usd = [](double d) { return static_cast<std::int64_t>(d * 1e6 + 0.5); };
  auto pods = [](std::int64_t n) { return n * kCostUnit; };
  const BalancedTotals rfc{usd(58.08), pods(90)};
  struct Case {
    const char* name;
    BalancedTotals totals;
    double savings;
    std::int64_t disruption;
    bool approved;
    const char* score;
  };
  const Case cases[] = {
      {"oversized replace", rfc, 7.26, 4, true, "score 2.81 >="},
      {"spare-capacity delete", rfc, 4.84, 5, true, "score 1.50 >="},
      {"marginal replace", rfc, 2.42, 9, false, "score 0.41 <"},
      {"well packed, nothing saved", rfc, 0, 11, false, "score 0.00 <"},
      {"uniform pool, exactly 0.5", {usd(48.40), pods(90)}, 2.42, 9, true, "score 0.50 >="},
      {"heterogeneous, light node", {usd(58.08), pods(117)}, 4.84, 5, true, "score 1.95 >="},
      {"heterogeneous, heavy node", {usd(58.08), pods(117)}, 4.84, 32, false, "score 0.30 <"},
      {"ten times the pool", {usd(580.80), pods(900)}, 7.26, 4, true, "score 2.81 >="},
      {"no disruption", rfc, 4.84, 0, true, "score unbounded >="},
      {"nothing at all", rfc, 0, 0, false, "score 0.00 <"},
      {"a pool that costs nothing", {0, pods(90)}, 4.84, 5, false, "score 0.00 <"},
      {"totals 100/100: 20 for 5", {usd(100), pods(100)}, 20, 5, true, "score 4.00 >="},
      {"totals 100/100: 10 for 10", {usd(100), pods(100)}, 10, 10, true, "score 1.00 >="},
      {"totals 100/100: 5 for 50", {usd(100), pods(100)}, 5, 50, false, "score 0.10 <"},
      {"totals 100/100: a loss", {usd(100), pods(100)}, -5, 10, false, "score 0.00 <"},
      {"single-node pool delete", {usd(4.84), pods(2)}, 4.84, 2, true, "score 1.00 >="},
  };
  for (const Case& c : cases) {
    auto score = ScoreMove(usd(c.savings), pods(c.disruption), c.totals);
    EXPECT_EQ(score.approved, c.approved) << c.name << ": " << score.Text();
    EXPECT_TRUE(score.Text().starts_with(c.score)) << c.name << ": " << score.Text();
  }
  EXPECT_EQ(ScoreMove(usd(7.26), pods(4), rfc).Text(),
            "score 2.81 >= threshold 0.50 (k: 2, savings 12.5% of the NodePool's cost, "
            "disruption 4.4% of its disruption cost)");
}

// Karpenter's CanPassThreshold: a node whose deletion outright (all its price saved) would not
// pass is not simulated; one that could is, and so is any node of a pool not Balanced.
TEST(Balanced, ANodeThatCouldNotPassEvenDeletedIsNotSimulated) {
  NodeClaim claim;
  claim.price = MicroUsdPerHour{1'000'000};  // $1/h.
  PodTable::Bound bound;
  bound.positive_eviction_cost = 8 * kCostUnit;  // Eight pods: a disruption of 9.
  Candidate c;
  c.claim = &claim;
  c.bound = &bound;
  EXPECT_FALSE(DeleteWouldFail(c).has_value());                  // Not Balanced.
  const BalancedTotals cheap_share{10'000'000, 11 * kCostUnit};  // 10% of the cost, 82% of 11.
  c.balanced = &cheap_share;
  const auto bound_score = DeleteWouldFail(c);
  ASSERT_TRUE(bound_score.has_value());
  EXPECT_TRUE(bound_score->Text().starts_with("score 0.12 < threshold 0.50"))
      << bound_score->Text();
  const BalancedTotals half_share{2'000'000, 11 * kCostUnit};  // 50% of the cost: 0.61.
  c.balanced = &half_share;
  EXPECT_FALSE(DeleteWouldFail(c).has_value());
}

}  // namespace
}  // namespace tenon::testing
