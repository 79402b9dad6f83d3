// Disruption end to end, through the simulator: emptiness with its 15 s validation (and a
// proposal invalidated by a pod arriving), budgets as counts, percents and cron windows
// (including the Karpenter documentation's example), the blockers (consolidateAfter,
// do-not-disrupt), expiration, and every interruption message kind.
#include <chrono>

#include "tests/integration/scenario_run.h"

namespace tenon::testing {
namespace {

// Nine pods on several nodes for four minutes, then none; one pod for two minutes, then none.
const std::string kScaleToZero = R"(
duration: 8m
workloads:
  - {name: web, replicas: 9, cpu: 1500m, memory: 512Mi}
  - {at: 4m, name: web, replicas: 0}
)";
// Two deployments on their own nodes; at 4 min a scales down to one pod, leaving its node
// underutilized.
const std::string kOneScaledDown = R"(
duration: 8m
workloads:
  - {name: a, replicas: 3, cpu: 1200m, memory: 512Mi}
  - {at: 2m, name: b, replicas: 3, cpu: 1200m, memory: 512Mi}
  - {at: 4m, name: a, replicas: 1}
)";
const std::string kOneEmptied = R"(
duration: 5m
workloads:
  - {name: web, replicas: 1, cpu: 500m, memory: 512Mi}
  - {at: 2m, name: web, replicas: 0}
)";

// The same scenario on Monday 2026-01-05 at 10:00 UTC, inside business hours.
std::string OnMonday(std::string yaml) {
  auto at = yaml.find("start: \"2026-01-01T00:00:00Z\"");
  return yaml.replace(at, std::string("start: \"2026-01-01T00:00:00Z\"").size(),
                      "start: \"2026-01-05T10:00:00Z\"");
}

Instant FirstAt(const Outcome& o, DisruptionMethod method, DisruptionPhase phase) {
  for (const auto& [at, d] : o.disruptions) {
    if (d.method == method && d.phase == phase) return at;
  }
  return Instant{};
}

// Three nodes' worth of pods scale to zero at 4 min: after consolidateAfter the empty nodes
// are proposed, validated 15 s later, then terminated; nothing is left running.
TEST(Disruption, EmptyNodesGoAfterValidation) {
  Outcome o = Simulate(
      Scenario(kScaleToZero, "",
               "      disruption: {consolidateAfter: 30s, budgets: [{nodes: \"100%\"}]}\n"));
  EXPECT_EQ(o.verdict, replay::Verdict::kIdentical) << o.verify_detail;
  auto proposed = Phase(o, DisruptionMethod::kEmptiness, DisruptionPhase::kProposed);
  auto executed = Phase(o, DisruptionMethod::kEmptiness, DisruptionPhase::kExecuted);
  ASSERT_FALSE(proposed.empty()) << Outcomes(o);
  ASSERT_FALSE(executed.empty()) << Outcomes(o);
  EXPECT_GE(FirstAt(o, DisruptionMethod::kEmptiness, DisruptionPhase::kProposed).value,
            Minutes(4).value + 30 * kSecond.value);
  EXPECT_GE(FirstAt(o, DisruptionMethod::kEmptiness, DisruptionPhase::kExecuted) -
                FirstAt(o, DisruptionMethod::kEmptiness, DisruptionPhase::kProposed),
            Duration{15 * kSecond.value});
  EXPECT_EQ(o.instances.size(), 0u) << Outcomes(o);
  EXPECT_EQ(o.nodeclaims.size(), 0u);
}

// A budget of one node lets the empty nodes go one pass at a time, and says so for the rest.
TEST(Disruption, CountBudgetTakesOneAtATime) {
  Outcome o = Simulate(Scenario(
      kScaleToZero, "", "      disruption: {consolidateAfter: 0s, budgets: [{nodes: \"1\"}]}\n"));
  EXPECT_EQ(o.verdict, replay::Verdict::kIdentical) << o.verify_detail;
  auto executed = Phase(o, DisruptionMethod::kEmptiness, DisruptionPhase::kExecuted);
  ASSERT_GE(executed.size(), 2u) << Outcomes(o);
  for (const auto* d : executed) EXPECT_EQ(d->nodeclaims.size(), 1u);
  bool budget_named = false;
  for (const auto& [at, d] : o.disruptions) {
    for (const auto& c : d.candidates) {
      if (c.cause != Cause::kDisruptionBudget) continue;
      EXPECT_EQ(c.subject, "default");
      budget_named |= c.outcome.find("over budget: Empty allows 1 now") != std::string::npos;
    }
  }
  EXPECT_TRUE(budget_named) << Outcomes(o);
  EXPECT_EQ(o.instances.size(), 0u);
}

// A pod lands on the proposed node within the 15 s: the proposal is invalidated, not executed.
TEST(Disruption, ValidationInvalidatesWhenAPodArrives) {
  Outcome o = Simulate(Scenario(R"(
duration: 6m
workloads:
  - {name: web, replicas: 1, cpu: 500m, memory: 512Mi}
  - {at: 3m, name: web, replicas: 0}
  - {at: 3m15s, name: web, replicas: 1}
)",
                                "", "      disruption: {consolidateAfter: 0s}\n"));
  EXPECT_EQ(o.verdict, replay::Verdict::kIdentical) << o.verify_detail;
  auto invalidated = Phase(o, DisruptionMethod::kEmptiness, DisruptionPhase::kInvalidated);
  ASSERT_EQ(invalidated.size(), 1u) << Outcomes(o);
  EXPECT_NE(invalidated[0]->reason.find("no longer empty"), std::string::npos)
      << invalidated[0]->reason;
  EXPECT_TRUE(Phase(o, DisruptionMethod::kEmptiness, DisruptionPhase::kExecuted).empty())
      << Outcomes(o);
  EXPECT_EQ(o.instances.size(), 1u);
  EXPECT_EQ(o.Bound(), 1u);
}

// consolidateAfter: Never turns emptiness and consolidation off: the empty node and the
// underutilized one both stay, and those methods record no pass at all, not even a blocked one.
// With consolidateAfter 0s the same cluster is consolidated.
TEST(Disruption, ConsolidateAfterNeverRecordsNoPasses) {
  const std::string scaled = kOneScaledDown + "  - {at: 4m, name: b, replicas: 0}\n";
  Outcome never = Simulate(Scenario(scaled, "", "      disruption: {consolidateAfter: Never}\n"));
  EXPECT_EQ(never.Count(Transition::kDeleting), 0u) << Outcomes(never);
  for (const auto& [at, d] : never.disruptions) {
    EXPECT_TRUE(d.method != DisruptionMethod::kEmptiness &&
                d.method != DisruptionMethod::kSingleNodeConsolidation &&
                d.method != DisruptionMethod::kMultiNodeConsolidation)
        << Outcomes(never);
  }
  Outcome on = Simulate(Scenario(scaled, "", "      disruption: {consolidateAfter: 0s}\n"));
  EXPECT_GT(on.Count(Transition::kDeleting), 0u) << Outcomes(on);
  EXPECT_FALSE(Phase(on, DisruptionMethod::kEmptiness, DisruptionPhase::kExecuted).empty())
      << Outcomes(on);
}

// A do-not-disrupt node keeps an empty node, recorded with its blocker.
TEST(Disruption, BlockersAreRecorded) {
  Outcome protect = Simulate(Scenario(R"(
duration: 5m
workloads:
  - {name: web, replicas: 1, cpu: 500m, memory: 512Mi}
  - {at: 2m, name: web, replicas: 0}
actions:
  - {at: 1m30s, do: protectNode}
)",
                                      "", "      disruption: {consolidateAfter: 0s}\n"));
  EXPECT_EQ(protect.instances.size(), 1u);
  auto blocked = Phase(protect, DisruptionMethod::kEmptiness, DisruptionPhase::kBlocked);
  ASSERT_FALSE(blocked.empty()) << Outcomes(protect);
  EXPECT_EQ(blocked[0]->candidates.at(0).cause, Cause::kDoNotDisrupt);
  EXPECT_FALSE(blocked[0]->candidates.at(0).subject.empty());
  EXPECT_NE(blocked[0]->candidates.at(0).outcome.find("has karpenter.sh/do-not-disrupt"),
            std::string::npos);
  // consolidateAfter counts from the last pod change (the scale-down folded at 00:01:59).
  Outcome fresh = Simulate(Scenario(R"(
duration: 3m
workloads:
  - {name: web, replicas: 1, cpu: 500m, memory: 512Mi}
  - {at: 2m, name: web, replicas: 0}
)",
                                    "", "      disruption: {consolidateAfter: 10m}\n"));
  blocked = Phase(fresh, DisruptionMethod::kEmptiness, DisruptionPhase::kBlocked);
  ASSERT_FALSE(blocked.empty()) << Outcomes(fresh);
  EXPECT_EQ(blocked[0]->candidates.at(0).cause, Cause::kPolicy);
  EXPECT_NE(blocked[0]->candidates.at(0).outcome.find("not consolidatable until 00:11:59 UTC"),
            std::string::npos)
      << Outcomes(fresh);
}

// A zero budget inside a cron window holds the empty node until the window closes.
TEST(Disruption, ScheduledBudgetOpensAndCloses) {
  Outcome o = Simulate(Scenario(R"(
duration: 12m
workloads:
  - {name: web, replicas: 1, cpu: 500m, memory: 512Mi}
  - {at: 1m, name: web, replicas: 0}
)",
                                "", R"(      disruption:
        consolidateAfter: 0s
        budgets:
          - {nodes: "0", schedule: "0 0 * * *", duration: 6m}
)"));
  EXPECT_EQ(o.verdict, replay::Verdict::kIdentical) << o.verify_detail;
  auto blocked = Phase(o, DisruptionMethod::kEmptiness, DisruptionPhase::kBlocked);
  ASSERT_FALSE(blocked.empty()) << Outcomes(o);
  EXPECT_EQ(blocked[0]->candidates.at(0).cause, Cause::kDisruptionBudget);
  EXPECT_NE(blocked[0]->candidates.at(0).outcome.find("until 00:06:00 UTC"), std::string::npos)
      << blocked[0]->candidates.at(0).outcome;
  Instant proposed = FirstAt(o, DisruptionMethod::kEmptiness, DisruptionPhase::kProposed);
  EXPECT_GE(proposed.value, Minutes(6).value) << Outcomes(o);
  EXPECT_LT(proposed.value, Minutes(7).value) << Outcomes(o);
  EXPECT_EQ(o.instances.size(), 0u);
}

// Karpenter's documented budgets: 20% at all times, and 0 for Drifted and Underutilized during
// business hours on weekdays. Empty nodes are not held by the business-hours budget (it names
// other reasons) but by the 20%: of five nodes, one per pass.
TEST(Disruption, DocumentedBudgetExample) {
  Outcome o = Simulate(OnMonday(Scenario(R"(
duration: 8m
workloads:
  - {name: web, replicas: 15, cpu: 1500m, memory: 512Mi}
  - {at: 4m, name: web, replicas: 0}
)",
                                         "", R"(      disruption:
        consolidationPolicy: WhenEmptyOrUnderutilized
        consolidateAfter: 0s
        budgets:
          - {nodes: "20%"}
          - {nodes: "0", schedule: "0 9 * * mon-fri", duration: 8h, reasons: [Drifted, Underutilized]}
)")));
  EXPECT_EQ(o.verdict, replay::Verdict::kIdentical) << o.verify_detail;
  auto executed = Phase(o, DisruptionMethod::kEmptiness, DisruptionPhase::kExecuted);
  ASSERT_GE(executed.size(), 2u) << Outcomes(o);
  for (const auto* d : executed) {
    EXPECT_LE(d->nodeclaims.size(), 2u);  // 20% of the pool's 8 nodes, rounded up.
    ASSERT_FALSE(d->budgets.empty());
    EXPECT_NE(d->budgets[0].detail.find("nodes 20%"), std::string::npos) << d->budgets[0].detail;
  }
}

// A label added to the NodePool's template drifts every node launched before it; drift is
// budgeted (one node at a time here) and each replacement matches the new template.
TEST(Disruption, TemplateChangeDriftsNodes) {
  Outcome o = Simulate(TemplateDriftScenario());
  EXPECT_EQ(o.verdict, replay::Verdict::kIdentical) << o.verify_detail;
  // Each drifted node is tainted while its replacement launches, and deleted once the
  // replacement is initialized.
  auto executed = Phase(o, DisruptionMethod::kDrift, DisruptionPhase::kReplacing);
  ASSERT_GE(executed.size(), 2u) << Outcomes(o);
  EXPECT_EQ(Phase(o, DisruptionMethod::kDrift, DisruptionPhase::kReplaced).size(), executed.size())
      << Outcomes(o);
  for (const auto* d : executed) {
    ASSERT_EQ(d->nodeclaims.size(), 1u);
    bool named = false;
    for (const auto& c : d->candidates) {
      named |= c.outcome.find("template changed") != std::string::npos;
    }
    EXPECT_TRUE(named) << Outcomes(o);
  }
  EXPECT_GE(FirstAt(o, DisruptionMethod::kDrift, DisruptionPhase::kProposed).value,
            Minutes(3).value);
  // Every node now running carries the new label, and every pod runs.
  ASSERT_FALSE(o.nodes.empty());
  for (const auto& [name, node] : o.nodes) EXPECT_EQ(node.labels.at("team"), "web") << name;
  EXPECT_EQ(o.Bound(), 4u);
}

// Karpenter's drift takes one node per command, the empty ones first, so no command moves
// pods onto a node that another command (or the same one) removes: here three nodes drift
// together under a budget that would let all of them go, one of them empty (consolidateAfter
// Never keeps it), and each command names one node, the empty one first.
TEST(Disruption, DriftTakesOneNodePerCommandEmptyFirst) {
  Outcome o = Simulate(Scenario(R"(
duration: 14m
workloads:
  - {name: a, replicas: 1, cpu: 1500m, memory: 512Mi}
  - {at: 1m, name: b, replicas: 1, cpu: 1500m, memory: 512Mi}
  - {at: 2m, name: c, replicas: 1, cpu: 1500m, memory: 512Mi}
  - {at: 3m, name: a, replicas: 0}
actions:
  - {at: 4m, do: labelNodePool, label: team=web}
)",
                                "",
                                "      disruption: {consolidateAfter: Never, budgets: "
                                "[{nodes: \"100%\"}]}\n"));
  EXPECT_EQ(o.verdict, replay::Verdict::kIdentical) << o.verify_detail;
  std::vector<const DisruptionDecision*> acted;
  for (const auto& [at, d] : o.disruptions) {
    if (d.method != DisruptionMethod::kDrift) continue;
    EXPECT_LE(d.nodeclaims.size(), 1u) << Outcomes(o);  // None when blocked.
    if (d.phase == DisruptionPhase::kExecuted || d.phase == DisruptionPhase::kReplacing)
      acted.push_back(&d);
  }
  ASSERT_EQ(acted.size(), 3u) << Outcomes(o);
  EXPECT_EQ(acted[0]->phase, DisruptionPhase::kExecuted)
      << "the empty node goes first, with no replacement\n"
      << Outcomes(o);
  EXPECT_EQ(acted[1]->phase, DisruptionPhase::kReplacing) << Outcomes(o);
  ASSERT_FALSE(o.nodes.empty());
  for (const auto& [name, node] : o.nodes) EXPECT_EQ(node.labels.at("team"), "web") << name;
  EXPECT_EQ(o.Bound(), 2u);
}

// A NodePool terminationGracePeriod makes drift eventual, as in Karpenter v1: a pod with
// karpenter.sh/do-not-disrupt no longer holds its drifted node. As Karpenter's simulation
// moves only the pods that can be evicted now, nothing is launched ahead: the node is deleted,
// the pod deleted by the deadline, and it comes back on a new node. Without one, drift waits.
TEST(Disruption, TerminationGracePeriodLetsDriftPastBlockedPods) {
  const std::string workload = R"(
duration: 14m
workloads:
  - {name: keep, replicas: 1, cpu: 500m, memory: 512Mi, doNotDisrupt: true}
actions:
  - {at: 3m, do: labelNodePool, label: team=web}
)";
  Outcome held = Simulate(Scenario(workload));
  EXPECT_TRUE(Phase(held, DisruptionMethod::kDrift, DisruptionPhase::kReplacing).empty())
      << Outcomes(held);
  EXPECT_TRUE(Recorded(held, DisruptionMethod::kDrift, "has karpenter.sh/do-not-disrupt"))
      << Outcomes(held);
  Outcome o = Simulate(Scenario(workload, "          terminationGracePeriod: 2m\n"));
  EXPECT_EQ(o.verdict, replay::Verdict::kIdentical) << o.verify_detail;
  EXPECT_TRUE(Phase(o, DisruptionMethod::kDrift, DisruptionPhase::kReplacing).empty())
      << Outcomes(o);
  ASSERT_EQ(Phase(o, DisruptionMethod::kDrift, DisruptionPhase::kExecuted).size(), 1u)
      << Outcomes(o);
  ASSERT_EQ(o.nodes.size(), 1u) << Outcomes(o);
  EXPECT_EQ(o.nodes.begin()->second.labels.at("team"), "web");
  EXPECT_EQ(o.Bound(), 1u);
}

// A new AMI is released: every node launched from the old one drifts (its AMI is no longer
// what the EC2NodeClass resolves to) and is replaced by one launched from the new AMI.
TEST(Disruption, NewAmiDriftsNodes) {
  Outcome o = Simulate(Scenario(R"(
duration: 8m
workloads:
  - {name: web, replicas: 2, cpu: 500m, memory: 512Mi}
actions:
  - {at: 3m, do: releaseAmi}
)"));
  EXPECT_EQ(o.verdict, replay::Verdict::kIdentical) << o.verify_detail;
  EXPECT_TRUE(Recorded(
      o, DisruptionMethod::kDrift,
      "drifted (AMIDrift: AMI ami-al2023-r1 is no longer selected by EC2NodeClass default)"))
      << Outcomes(o);
  ASSERT_EQ(Phase(o, DisruptionMethod::kDrift, DisruptionPhase::kReplaced).size(), 1u)
      << Outcomes(o);
  ASSERT_EQ(o.instances.size(), 1u);
  EXPECT_EQ(o.instances.begin()->second.image_id, "ami-al2023-r2");
  EXPECT_EQ(o.Bound(), 2u);
}

// Two m5.xlarge nodes scale down to one pod each: one node is removed and its pod moves to
// the other (single-node consolidation, budget reason Underutilized); no pod is left pending.
TEST(Disruption, UnderutilizedNodeIsRemoved) {
  Outcome o = Simulate(Scenario(R"(
duration: 9m
workloads:
  - {name: a, replicas: 3, cpu: 1200m, memory: 512Mi}
  - {at: 2m, name: b, replicas: 3, cpu: 1200m, memory: 512Mi}
  - {at: 4m, name: a, replicas: 1}
  - {at: 4m, name: b, replicas: 1}
)"));
  EXPECT_EQ(o.verdict, replay::Verdict::kIdentical) << o.verify_detail;
  auto executed = Phase(o, DisruptionMethod::kSingleNodeConsolidation, DisruptionPhase::kExecuted);
  ASSERT_EQ(executed.size(), 1u) << Outcomes(o);
  EXPECT_EQ(executed[0]->budgets.at(0).reason, "Underutilized");
  bool moves = false;
  for (const auto& c : executed[0]->candidates) {
    moves |= c.outcome.find("its pods move:") != std::string::npos;
  }
  EXPECT_TRUE(moves) << Outcomes(o);
  EXPECT_EQ(o.instances.size(), 1u) << Outcomes(o);
  EXPECT_EQ(o.Bound(), 2u);
  EXPECT_EQ(o.CommandsOf<LaunchInstance>().size(), 2u)
      << Outcomes(o);  // No new node for the moved pod.
}

// consolidationPolicy WhenEmpty keeps an underutilized node, and a node whose pods would need
// a new node that is not cheaper is kept with that reason.
TEST(Disruption, ConsolidationBlockers) {
  const std::string& scaled = kOneScaledDown;
  Outcome when_empty =
      Simulate(Scenario(scaled, "", "      disruption: {consolidationPolicy: WhenEmpty}\n"));
  EXPECT_TRUE(
      Phase(when_empty, DisruptionMethod::kSingleNodeConsolidation, DisruptionPhase::kExecuted)
          .empty());
  bool named = false;
  for (const auto* d :
       Phase(when_empty, DisruptionMethod::kSingleNodeConsolidation, DisruptionPhase::kBlocked)) {
    for (const auto& c : d->candidates) named |= c.outcome == "consolidationPolicy is WhenEmpty";
  }
  EXPECT_TRUE(named) << Outcomes(when_empty);

  Outcome full = Simulate(Scenario(scaled));
  EXPECT_TRUE(
      Phase(full, DisruptionMethod::kSingleNodeConsolidation, DisruptionPhase::kExecuted).empty())
      << Outcomes(full);
  named = false;
  for (const auto* d :
       Phase(full, DisruptionMethod::kSingleNodeConsolidation, DisruptionPhase::kBlocked)) {
    for (const auto& c : d->candidates) {
      named |= c.outcome.find(
                   "no cheaper replacement: cheapest fit m5.xlarge costs $0.1920/h, "
                   "the node costs $0.1920/h") != std::string::npos;
    }
  }
  EXPECT_TRUE(named) << Outcomes(full);
  EXPECT_EQ(full.instances.size(), 2u) << Outcomes(full);
}

// expireAfter: the node is replaced when it expires, whatever the budgets say.
TEST(Disruption, ExpirationIsForceful) {
  Outcome o = Simulate(Scenario(R"(
duration: 9m
workloads:
  - {name: web, replicas: 2, cpu: 500m, memory: 512Mi}
)",
                                R"(          expireAfter: 5m
)",
                                "      disruption: {budgets: [{nodes: \"0\"}]}\n"));
  EXPECT_EQ(o.verdict, replay::Verdict::kIdentical) << o.verify_detail;
  auto expired = Phase(o, DisruptionMethod::kExpiration, DisruptionPhase::kExecuted);
  ASSERT_GE(expired.size(), 1u) << Outcomes(o);
  EXPECT_NE(expired[0]->candidates[0].outcome.find("expireAfter 5m"), std::string::npos);
  EXPECT_EQ(FirstAt(o, DisruptionMethod::kExpiration, DisruptionPhase::kExecuted).value,
            Minutes(5).value + kSecond.value);
  ExpectReplaced(o, expired[0]->nodeclaims[0], 2);
}

// Each interruption message: spot warning and stopping drain and delete (the warning also keeps
// the type's spot offering out of launches for a while), a rebalance recommendation is only
// recorded, an unreadable message is counted and kept; every message is deleted from the queue, the
// unreadable one once its rejection is in the log.
TEST(Disruption, InterruptionMessages) {
  Outcome spot = Simulate(Scenario(R"(
duration: 6m
workloads:
  - {name: web, replicas: 2, cpu: 500m, memory: 512Mi}
actions:
  - {at: 2m, do: spotInterruption}
  - {at: 2m, do: malformedMessage}
)"));
  EXPECT_EQ(spot.verdict, replay::Verdict::kIdentical) << spot.verify_detail;
  auto interrupted = Phase(spot, DisruptionMethod::kInterruption, DisruptionPhase::kExecuted);
  ASSERT_EQ(interrupted.size(), 1u) << Outcomes(spot);
  ExpectReplaced(spot, interrupted[0]->nodeclaims[0], 2);
  // The warning keeps the type's spot offering in its zone out for three minutes, as
  // Karpenter's interruption controller marks it; the interrupted node here ran on demand (the
  // pool takes nothing else), so its replacement may take the very same on-demand offering.
  auto launches = spot.CommandsOf<LaunchInstance>();
  ASSERT_EQ(launches.size(), 2u);
  const auto& first = launches[0]->overrides.front();
  ASSERT_EQ(first.capacity_type, kCapacityOnDemand);
  EXPECT_TRUE(std::any_of(launches[1]->overrides.begin(), launches[1]->overrides.end(),
                          [&](const LaunchOverride& ov) {
                            return ov.instance_type == first.instance_type && ov.zone == first.zone;
                          }));
  const auto deleted = spot.CommandsOf<DeleteQueueMessage>();
  ASSERT_EQ(deleted.size(), 2u);
  EXPECT_NE(deleted[0]->message_id, deleted[1]->message_id);
  EXPECT_EQ(spot.rejected_inputs, 1u);

  Outcome stopping = Simulate(Scenario(R"(
duration: 6m
workloads:
  - {name: web, replicas: 2, cpu: 500m, memory: 512Mi}
actions:
  - {at: 2m, do: instanceStopping}
  - {at: 3m, do: rebalanceRecommendation}
)"));
  ASSERT_EQ(Phase(stopping, DisruptionMethod::kInterruption, DisruptionPhase::kExecuted).size(), 1u)
      << Outcomes(stopping);
  EXPECT_EQ(stopping.Count(Transition::kRebalanceRecommendation), 1u);
  EXPECT_EQ(stopping.CommandsOf<DeleteQueueMessage>().size(), 2u);
  EXPECT_EQ(stopping.Bound(), 2u);
}

}  // namespace
}  // namespace tenon::testing
