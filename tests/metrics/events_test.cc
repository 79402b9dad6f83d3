// Kubernetes Events: Karpenter's reasons for what the core decided, from hand-built outputs
// and from simulated scenarios with a spot interruption and a blocked disruption.
#include <gtest/gtest.h>

#include <fstream>
#include <set>

#include "adapters/kube/events.h"
#include "adapters/sim/simulator.h"
#include "tests/integration/scenario_run.h"
#include "tests/support/temp_dir.h"

namespace tenon {
namespace {

using kube::KubeEvent;

State StateWithClaim(const std::string& claim, const std::string& node) {
  State state;
  NodeClaim c;
  c.name = claim;
  c.nodepool = "default";
  c.node_name = node;
  state.nodeclaims[claim] = c;
  return state;
}

Decision Wrap(DecisionBody body) {
  return Decision{DecisionId{1}, Seq{9}, Nanos{0}, std::move(body)};
}

std::vector<const KubeEvent*> With(const std::vector<KubeEvent>& events,
                                   const std::string& reason) {
  std::vector<const KubeEvent*> out;
  for (const auto& e : events) {
    if (e.reason == reason) out.push_back(&e);
  }
  return out;
}

// Provisioning: pods placed on a NodeClaim are Nominated, pods placed nowhere FailedScheduling.
TEST(KubeEvents, ProvisioningNominates) {
  ProvisioningDecision p;
  p.new_claims.push_back({"default-1", "default", {"ns/a"}, {}, {}});
  p.pods.push_back({"ns/a", "default-1", "fits", {}});
  p.pods.push_back({"ns/b", "", "no NodePool fits: default: requires gpu", {}});
  Output out;
  out.decisions.push_back(Wrap(p));
  auto events = kube::EventsFor(out, State{});
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].reason, "Nominated");
  EXPECT_EQ(events[0].type, "Normal");
  EXPECT_EQ(events[0].object.kind, "Pod");
  EXPECT_EQ(events[0].object.ns, "ns");
  EXPECT_EQ(events[0].object.name, "a");
  EXPECT_EQ(events[0].message, "Pod should schedule on: nodeclaim/default-1");
  EXPECT_EQ(events[1].reason, "FailedScheduling");
  EXPECT_EQ(events[1].type, "Warning");
}

// Blocked candidates: do-not-disrupt and PDBs block; consolidation's own verdicts are
// Unconsolidatable; a zero budget blocks the NodePool.
TEST(KubeEvents, BlockedAndUnconsolidatable) {
  State state = StateWithClaim("c1", "n1");
  state.nodeclaims["c2"] = state.nodeclaims["c1"];
  state.nodeclaims["c2"].name = "c2";
  state.nodeclaims["c2"].node_name = "n2";
  DisruptionDecision d{"SingleNodeConsolidation",
                       "blocked",
                       {},
                       {{"c1", "default", "node n1 has karpenter.sh/do-not-disrupt"},
                        {"c2", "default", "no cheaper replacement"}},
                       {{"default", "Underutilized", 0, "budget 0"}},
                       "no candidate can go now",
                       {}};
  Output out;
  out.decisions.push_back(Wrap(d));
  auto events = kube::EventsFor(out, state);
  auto blocked = With(events, "DisruptionBlocked");
  ASSERT_EQ(blocked.size(), 3u);  // Node n1, NodeClaim c1, NodePool default.
  EXPECT_EQ(blocked[0]->object.kind, "Node");
  EXPECT_EQ(blocked[0]->object.name, "n1");
  EXPECT_EQ(blocked[1]->object.kind, "NodeClaim");
  EXPECT_EQ(blocked[2]->object.kind, "NodePool");
  EXPECT_EQ(blocked[2]->message,
            "No allowed disruptions for disruption reason Underutilized due to blocking budget");
  auto unconsolidatable = With(events, "Unconsolidatable");
  ASSERT_EQ(unconsolidatable.size(), 2u);
  EXPECT_EQ(unconsolidatable[0]->object.name, "n2");
  EXPECT_EQ(unconsolidatable[0]->message, "no cheaper replacement");
}

// A replacement: the candidates are Terminating, the new claims Launching and
// WaitingReadiness; a claim provisioning makes in the same output is not a replacement.
TEST(KubeEvents, ReplacingDisruption) {
  State state = StateWithClaim("old", "n-old");
  Output out;
  out.decisions.push_back(Wrap(
      DisruptionDecision{"Drift", "replacing", {"old"}, {}, {}, "tainting and launching", {}}));
  ProvisioningDecision p;
  p.new_claims.push_back({"pending-1", "default", {}, {}, {}});
  out.decisions.push_back(Wrap(p));
  NodeClaim replacement;
  replacement.name = "new";
  NodeClaim provisioned;
  provisioned.name = "pending-1";
  out.commands.push_back(Command{CommandId{1}, Seq{9}, CreateNodeClaim{replacement}});
  out.commands.push_back(Command{CommandId{2}, Seq{9}, CreateNodeClaim{provisioned}});
  auto events = kube::EventsFor(out, state);
  auto terminating = With(events, "DisruptionTerminating");
  ASSERT_EQ(terminating.size(), 2u);
  EXPECT_EQ(terminating[0]->message, "Disrupting Node: Drifted");
  EXPECT_EQ(terminating[1]->message, "Disrupting NodeClaim: Drifted");
  auto launching = With(events, "DisruptionLaunching");
  ASSERT_EQ(launching.size(), 1u);
  EXPECT_EQ(launching[0]->object.name, "new");
  EXPECT_EQ(launching[0]->message, "Launching NodeClaim: Drifted");
  EXPECT_EQ(With(events, "DisruptionWaitingReadiness").size(), 1u);
}

// The events of a whole scenario: every output mapped with the state after its ingest round,
// as the controller does.
std::vector<KubeEvent> ScenarioEvents(const std::string& body) {
  testing::TempDir dir;
  std::ofstream(dir.path() / "s.yaml")
      << testing::Scenario(body, "", "      disruption: {consolidateAfter: 0s}\n");
  struct Collector : runtime::Observer {
    std::vector<Output> round;
    void OnOutput(Seq, const Output& output) override { round.push_back(output); }
  } collector;
  std::vector<KubeEvent> events;
  sim::SimulateOptions options;
  options.log_dir = dir.path() / "log";
  options.observer = &collector;
  options.on_state = [&](const State& state) {
    for (const Output& output : collector.round) {
      for (auto& e : kube::EventsFor(output, state)) events.push_back(std::move(e));
    }
    collector.round.clear();
  };
  sim::Simulate(sim::LoadScenario(dir.path() / "s.yaml"), options);
  return events;
}

// A spot interruption: SpotInterrupted (Warning) on the Node and the NodeClaim; the pods of
// the replacement are Nominated first.
TEST(KubeEvents, ScenarioWithSpotInterruption) {
  auto events = ScenarioEvents(R"(duration: 6m
workloads:
  - {name: web, replicas: 2, cpu: 500m, memory: 512Mi}
actions:
  - {at: 2m, do: spotInterruption}
)");
  auto spot = With(events, "SpotInterrupted");
  ASSERT_EQ(spot.size(), 2u);
  std::set<std::string> kinds = {spot[0]->object.kind, spot[1]->object.kind};
  EXPECT_EQ(kinds, (std::set<std::string>{"Node", "NodeClaim"}));
  EXPECT_EQ(spot[0]->type, "Warning");
  EXPECT_EQ(spot[0]->message, "Spot interruption warning was triggered");
  EXPECT_GE(With(events, "Nominated").size(), 4u);  // Both pods, before and after.
  EXPECT_GE(With(events, "Evicted").size(), 1u);
}

// An empty node protected by karpenter.sh/do-not-disrupt: DisruptionBlocked naming it.
TEST(KubeEvents, ScenarioWithBlockedDisruption) {
  auto events = ScenarioEvents(R"(duration: 5m
workloads:
  - {name: web, replicas: 1, cpu: 500m, memory: 512Mi}
  - {at: 2m, name: web, replicas: 0}
actions:
  - {at: 1m30s, do: protectNode}
)");
  auto blocked = With(events, "DisruptionBlocked");
  ASSERT_FALSE(blocked.empty());
  EXPECT_NE(blocked[0]->message.find("has karpenter.sh/do-not-disrupt"), std::string::npos)
      << blocked[0]->message;
  EXPECT_TRUE(With(events, "DisruptionTerminating").empty());
}

}  // namespace
}  // namespace tenon
