// Kubernetes Events: Karpenter's reasons for what the core decided, from hand-built outputs
// and from simulated scenarios with a spot interruption and a blocked disruption.
#include <gtest/gtest.h>

#include <fstream>
#include <set>

#include "adapters/kube/events.h"
#include "adapters/sim/simulator.h"
#include "reducers/internal.h"
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
  state.lifecycle.nodeclaims[claim] = c;
  return state;
}

Decision Wrap(DecisionBody body) {
  return Decision{DecisionId{1}, Seq{9}, Instant{}, std::move(body)};
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
  auto events = KubeEventsFor(out, State{});
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

// Blocked candidates: PDBs block; consolidation's own verdicts are Unconsolidatable; a zero
// budget blocks the NodePool; a do-not-disrupt annotation, which the user asked for, gets no
// Event (as in Karpenter). The Event's reason follows the candidate's code, whatever its text
// says; the text is the message.
TEST(KubeEvents, BlockedAndUnconsolidatable) {
  State state = StateWithClaim("c1", "n1");
  state.lifecycle.nodeclaims["c2"] = state.lifecycle.nodeclaims["c1"];
  state.lifecycle.nodeclaims["c2"].name = "c2";
  state.lifecycle.nodeclaims["c2"].node_name = "n2";
  DisruptionDecision d{
      DisruptionMethod::kSingleNodeConsolidation,
      DisruptionPhase::kBlocked,
      {},
      {{"c1", "default", "held", Cause::kPodDisruptionBudget, "n1"},
       {"c2", "default", "over budget, says the text", Cause::kNoBetterPlacement, ""},
       {"c3", "default", "selected", Cause::kNone, ""},
       {"c4", "default", "protected", Cause::kDoNotDisrupt, ""}},
      {{"default", "Underutilized", 0, "budget 0"}},
      "no candidate can go now",
      {}};
  Output out;
  out.decisions.push_back(Wrap(d));
  auto events = KubeEventsFor(out, state);
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
  EXPECT_EQ(unconsolidatable[0]->message, "over budget, says the text");
  EXPECT_EQ(blocked[0]->message, "held");
  for (const KubeEvent& e : events) EXPECT_NE(e.object.name, "c4") << e.reason;
}

// A failed launch is InsufficientCapacityError when the core coded it so, FailedLaunch
// otherwise; an eviction's Event names the pod the decision names.
TEST(KubeEvents, LaunchFailuresAndEvictionsByTheirCodes) {
  const State state = StateWithClaim("c1", "n1");
  Output out;
  out.decisions.push_back(
      Wrap(LifecycleDecision{"c1", Transition::kLaunchFailed, "every offering taken", "", "",
                             Cause::kInsufficientCapacity, ""}));
  out.decisions.push_back(Wrap(LifecycleDecision{"c1", Transition::kLaunchFailed,
                                                 "InsufficientInstanceCapacity in the text only",
                                                 "", "", Cause::kLaunchError, ""}));
  out.decisions.push_back(Wrap(LifecycleDecision{"c1", Transition::kEvicted, "drained", "n1", "",
                                                 Cause::kNone, "shop/cart-1"}));
  auto events = KubeEventsFor(out, state);
  ASSERT_EQ(With(events, "InsufficientCapacityError").size(), 1u);
  EXPECT_EQ(With(events, "InsufficientCapacityError")[0]->message,
            "NodeClaim c1 event: every offering taken");
  ASSERT_EQ(With(events, "FailedLaunch").size(), 1u);
  auto evicted = With(events, "Evicted");
  ASSERT_EQ(evicted.size(), 1u);
  EXPECT_EQ(evicted[0]->object.ns, "shop");
  EXPECT_EQ(evicted[0]->object.name, "cart-1");
}

// A replacement: the candidates are Terminating, the new claims Launching and
// WaitingReadiness; a claim provisioning makes in the same output is not a replacement.
TEST(KubeEvents, ReplacingDisruption) {
  State state = StateWithClaim("old", "n-old");
  Output out;
  out.decisions.push_back(Wrap(DisruptionDecision{DisruptionMethod::kDrift,
                                                  DisruptionPhase::kReplacing,
                                                  {"old"},
                                                  {},
                                                  {},
                                                  "tainting and launching",
                                                  {}}));
  ProvisioningDecision p;
  p.new_claims.push_back({"pending-1", "default", {}, {}, {}});
  out.decisions.push_back(Wrap(p));
  NodeClaim replacement;
  replacement.name = "new";
  NodeClaim provisioned;
  provisioned.name = "pending-1";
  out.commands.push_back(Command{CommandId{1}, Seq{9}, CreateNodeClaim{replacement}});
  out.commands.push_back(Command{CommandId{2}, Seq{9}, CreateNodeClaim{provisioned}});
  auto events = KubeEventsFor(out, state);
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

// The Events a whole scenario records: the RecordKubeEvent commands the core issued.
std::vector<KubeEvent> ScenarioEvents(const std::string& body) {
  testing::TempDir dir;
  std::ofstream(dir.path() / "s.yaml")
      << testing::Scenario(body, "", "      disruption: {consolidateAfter: 0s}\n");
  struct Collector : runtime::Observer {
    std::vector<KubeEvent> events;
    void OnOutput(Seq, const Output& output) override {
      for (const Command& c : output.commands) {
        if (const auto* e = std::get_if<RecordKubeEvent>(&c.body)) events.push_back(*e);
      }
    }
  } collector;
  sim::SimulateOptions options;
  options.log_dir = dir.path() / "log";
  options.observer = &collector;
  sim::Simulate(sim::LoadScenario(dir.path() / "s.yaml"), options);
  return collector.events;
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

// An interruption message for a NodeClaim already being deleted (its Node went first, say):
// Karpenter reports it on the Node and the NodeClaim all the same.
TEST(KubeEvents, InterruptionOfAClaimAlreadyDeleting) {
  Output out;
  out.decisions.push_back(Wrap(
      LifecycleDecision{"default-1", Transition::kInterrupted,
                        "instance state change (terminated), message m-1; already being deleted",
                        "node-1", "i-1", Cause::kInstanceTerminating, ""}));
  auto events = KubeEventsFor(out, StateWithClaim("default-1", "node-1"));
  auto terminating = With(events, "InstanceTerminating");
  ASSERT_EQ(terminating.size(), 2u);
  std::set<std::string> kinds = {terminating[0]->object.kind, terminating[1]->object.kind};
  EXPECT_EQ(kinds, (std::set<std::string>{"Node", "NodeClaim"}));
  EXPECT_EQ(terminating[0]->type, "Warning");
}

// An empty node protected by karpenter.sh/do-not-disrupt is not disrupted, and, as in
// Karpenter, no Event says so: the user asked for it.
TEST(KubeEvents, ScenarioWithProtectedNode) {
  auto events = ScenarioEvents(R"(duration: 5m
workloads:
  - {name: web, replicas: 1, cpu: 500m, memory: 512Mi}
  - {at: 2m, name: web, replicas: 0}
actions:
  - {at: 1m30s, do: protectNode}
)");
  ASSERT_FALSE(With(events, "Nominated").empty());
  for (const KubeEvent& e : events) {
    EXPECT_EQ(e.message.find("do-not-disrupt"), std::string::npos) << e.reason << ": " << e.message;
  }
  EXPECT_TRUE(With(events, "DisruptionBlocked").empty());
  EXPECT_TRUE(With(events, "DisruptionTerminating").empty());
}

// Karpenter's recorder limits, applied by the core (core::AnnounceDecisionEvents) from the
// state's time: what passes becomes a RecordKubeEvent command, not waited on.
struct Announcer {
  State state = StateWithClaim("c1", "n1");
  Instant now{1'767'225'600'000'000'000};
  std::vector<KubeEvent> At(std::int64_t seconds, DecisionBody body) {
    state.now = now + seconds * kSecond;
    Output out;
    out.decisions.push_back(Wrap(std::move(body)));
    core::AnnounceDecisionEvents(state, Seq{9}, out);
    std::vector<KubeEvent> events;
    for (const Command& c : out.commands) events.push_back(std::get<RecordKubeEvent>(c.body));
    EXPECT_TRUE(state.inflight.empty()) << "an Event is not waited on";
    return events;
  }
};

ProvisioningDecision Nominating(const std::string& prefix, int pods) {
  ProvisioningDecision p;
  p.new_claims.push_back({"default-1", "default", {}, {}, {}});
  for (int i = 0; i < pods; ++i) {
    p.pods.push_back({"ns/" + prefix + std::to_string(i), "default-1", "fits", {}});
  }
  return p;
}

// Nominated: deduped per pod for 2 minutes (a pod the bucket dropped included), and a token
// bucket of 5 a second with a burst of 10 shared by all pods.
TEST(KubeEventLimits, NominatedIsDedupedAndRateLimited) {
  Announcer a;
  EXPECT_EQ(a.At(0, Nominating("a", 30)).size(), 10u) << "the burst";
  EXPECT_TRUE(a.At(1, Nominating("a", 30)).empty()) << "every pod's key holds 2 minutes";
  EXPECT_EQ(a.At(1, Nominating("b", 30)).size(), 5u) << "5 tokens a second";
  EXPECT_EQ(a.At(3, Nominating("c", 30)).size(), 10u) << "at most 10";
  EXPECT_TRUE(a.At(119, Nominating("a", 1)).empty());
  auto again = a.At(120, Nominating("a", 30));
  ASSERT_EQ(again.size(), 10u) << "the keys lapsed after 2 minutes";
  EXPECT_EQ(again[0].object.name, "a0");
}

DisruptionDecision BlockedBy(Cause cause,
                             DisruptionMethod method = DisruptionMethod::kSingleNodeConsolidation,
                             std::vector<BudgetState> budgets = {}) {
  return {
      method, DisruptionPhase::kBlocked, {}, {{"c1", "default", "why", cause, "n1"}}, budgets, "",
      {}};
}

// Each Event's dedupe timeout: 2 minutes by default, 15 for Unconsolidatable, 5 for
// FailedScheduling, 1 for a NodePool's blocking budget (per disruption reason); the message is
// not part of the key, the object and the reason are.
TEST(KubeEventLimits, EachEventHoldsItsKeyForKarpentersTimeout) {
  Announcer a;
  EXPECT_EQ(a.At(0, BlockedBy(Cause::kPodDisruptionBudget)).size(), 2u) << "node and claim";
  EXPECT_TRUE(a.At(119, BlockedBy(Cause::kPodDisruptionBudget)).empty());
  EXPECT_EQ(a.At(120, BlockedBy(Cause::kPodDisruptionBudget)).size(), 2u);

  EXPECT_EQ(a.At(0, BlockedBy(Cause::kNoBetterPlacement)).size(), 2u) << "another reason";
  EXPECT_TRUE(a.At(899, BlockedBy(Cause::kNoBetterPlacement)).empty());
  EXPECT_EQ(a.At(900, BlockedBy(Cause::kNoBetterPlacement)).size(), 2u);

  ProvisioningDecision failed;
  failed.pods.push_back({"ns/big", "", "no instance type fits", {}});
  EXPECT_EQ(a.At(1000, failed).size(), 1u);
  EXPECT_TRUE(a.At(1299, failed).empty());
  EXPECT_EQ(a.At(1300, failed).size(), 1u);

  auto budget = [](const std::string& reason) {
    return BlockedBy(Cause::kNone, DisruptionMethod::kDrift, {{"default", reason, 0, "budget 0"}});
  };
  EXPECT_EQ(a.At(2000, budget("Drifted")).size(), 1u);
  EXPECT_EQ(a.At(2000, budget("Empty")).size(), 1u) << "per disruption reason";
  EXPECT_TRUE(a.At(2059, budget("Drifted")).empty());
  EXPECT_EQ(a.At(2060, budget("Drifted")).size(), 1u);
}

// Disrupting a node for one reason does not hold back the Event for another.
TEST(KubeEventLimits, TerminatingIsDedupedPerReason) {
  Announcer a;
  auto disrupting = [](DisruptionMethod method) {
    return DisruptionDecision{method, DisruptionPhase::kExecuted, {"c1"}, {}, {}, "", {}};
  };
  EXPECT_EQ(a.At(0, disrupting(DisruptionMethod::kDrift)).size(), 2u);
  EXPECT_TRUE(a.At(10, disrupting(DisruptionMethod::kDrift)).empty());
  auto expired = a.At(10, disrupting(DisruptionMethod::kExpiration));
  ASSERT_EQ(expired.size(), 2u);
  EXPECT_EQ(expired[1].message, "Disrupting NodeClaim: Expired");
}

// Lapsed keys are dropped from the state once a minute, so it holds only the live ones.
TEST(KubeEventLimits, LapsedKeysLeaveTheState) {
  Announcer a;
  a.At(0, Nominating("a", 3));
  EXPECT_EQ(a.state.event_limits.recorded.size(), 3u);
  a.At(200, Nominating("b", 1));
  EXPECT_EQ(a.state.event_limits.recorded.size(), 1u);
}

// client-go's EventCorrelator, step by step on a clock of our own.
KubeEvent OnNode(const std::string& node, const std::string& reason, const std::string& message) {
  return {{"v1", "Node", "", node}, "Normal", reason, message};
}

// The same Event again is the same object with the next count; its first time stays.
TEST(KubeEventCorrelator, IdenticalEventsCountOnOneObject) {
  kube::EventCorrelator correlator;
  const Instant t0{1'700'000'000 * kSecond.value};
  const auto first = correlator.Correlate("karpenter", OnNode("n1", "R", "m"), t0);
  EXPECT_FALSE(first.skip);
  EXPECT_EQ(first.count, 1);
  EXPECT_EQ(first.first, t0);
  EXPECT_EQ(first.name.rfind("n1.", 0), 0u);
  for (int i = 2; i <= 5; ++i) {
    const auto again = correlator.Correlate("karpenter", OnNode("n1", "R", "m"), t0 + kMinute);
    EXPECT_EQ(again.count, i);
    EXPECT_EQ(again.name, first.name);
    EXPECT_EQ(again.first, t0);
    EXPECT_EQ(again.event.message, "m");
  }
  // Any other field of the key starts another Event.
  for (const auto& other : {OnNode("n2", "R", "m"), OnNode("n1", "S", "m"), OnNode("n1", "R", "x"),
                            KubeEvent{{"v1", "Node", "", "n1"}, "Warning", "R", "m"}}) {
    const auto write = correlator.Correlate("karpenter", other, t0 + kMinute);
    EXPECT_EQ(write.count, 1);
    EXPECT_NE(write.name, first.name);
  }
  EXPECT_EQ(correlator.Correlate("other-source", OnNode("n1", "R", "m"), t0).count, 1);
}

// Ten distinct messages of one reason on one object within 10 minutes: from the tenth on they
// go to one combined Event, counted; once the object has been quiet for longer than the
// window, messages are Events of their own again.
TEST(KubeEventCorrelator, SimilarEventsAreCombined) {
  kube::EventCorrelator correlator;
  const Instant t0{1'700'000'000 * kSecond.value};
  std::set<std::string> names;
  for (int i = 1; i <= 9; ++i) {
    const auto write = correlator.Correlate("karpenter", OnNode("n1", "R", "m" + std::to_string(i)),
                                            t0 + Duration{i * kSecond.value});
    EXPECT_EQ(write.count, 1);
    EXPECT_EQ(write.event.message, "m" + std::to_string(i));
    names.insert(write.name);
  }
  std::string combined;
  for (int i = 10; i <= 12; ++i) {
    const auto write = correlator.Correlate("karpenter", OnNode("n1", "R", "m" + std::to_string(i)),
                                            t0 + Duration{i * kSecond.value});
    EXPECT_EQ(write.event.message, "(combined from similar events): m" + std::to_string(i));
    EXPECT_EQ(write.count, i - 9);
    if (combined.empty()) combined = write.name;
    EXPECT_EQ(write.name, combined);
  }
  EXPECT_EQ(names.size(), 9u);
  EXPECT_FALSE(names.contains(combined));
  // Another reason on the same object is not similar.
  EXPECT_EQ(correlator.Correlate("karpenter", OnNode("n1", "S", "m13"), t0).event.message, "m13");
  // Quiet for longer than the window: a new message is its own Event.
  const Instant later = t0 + Duration{12 * kSecond.value} + Duration{11 * kMinute.value};
  const auto fresh = correlator.Correlate("karpenter", OnNode("n1", "R", "m14"), later);
  EXPECT_EQ(fresh.event.message, "m14");
  EXPECT_EQ(fresh.count, 1);
}

// 25 Events about one object at once, then one per 5 minutes; the dropped ones still count.
TEST(KubeEventCorrelator, SpamFilterLetsABurstThenOnePerFiveMinutes) {
  kube::EventCorrelator correlator;
  const Instant t0{1'700'000'000 * kSecond.value};
  for (int i = 1; i <= 25; ++i) {
    EXPECT_FALSE(correlator.Correlate("karpenter", OnNode("n1", "R", "m"), t0).skip) << i;
  }
  EXPECT_TRUE(correlator.Correlate("karpenter", OnNode("n1", "R", "m"), t0).skip);
  EXPECT_TRUE(correlator.Correlate("karpenter", OnNode("n1", "R", "other"), t0).skip);
  EXPECT_FALSE(correlator.Correlate("karpenter", OnNode("n2", "R", "m"), t0).skip)
      << "another object has its own budget";
  const Instant refilled = t0 + Duration{5 * kMinute.value};
  const auto next = correlator.Correlate("karpenter", OnNode("n1", "R", "m"), refilled);
  EXPECT_FALSE(next.skip);
  EXPECT_EQ(next.count, 27) << "the dropped occurrence is in the count";
  EXPECT_TRUE(correlator.Correlate("karpenter", OnNode("n1", "R", "m"), refilled).skip);
}

// Every cache is bounded: the least recently used key is forgotten first.
TEST(KubeEventCorrelator, CachesAreBounded) {
  kube::EventCorrelator::Options options;
  options.cache_max = 3;
  kube::EventCorrelator correlator(options);
  const Instant t0{1'700'000'000 * kSecond.value};
  for (int node = 0; node < 4; ++node) {
    correlator.Correlate("karpenter", OnNode("n" + std::to_string(node), "R", "m"), t0);
  }
  // n0 was pushed out, so its repeat is a new Event; n3 is remembered.
  EXPECT_EQ(correlator.Correlate("karpenter", OnNode("n0", "R", "m"), t0).count, 1);
  EXPECT_EQ(correlator.Correlate("karpenter", OnNode("n3", "R", "m"), t0).count, 2);
}

}  // namespace
}  // namespace tenon
