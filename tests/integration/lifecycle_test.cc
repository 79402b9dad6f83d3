// NodeClaim lifecycle end to end, through the simulator: launch to Initialized, a node that
// never registers, an ICE on the cheapest offering, drains blocked by a PDB and cut by the
// terminationGracePeriod, a do-not-disrupt pod, a leaked instance and an instance that vanishes
// under its claim. Each scenario is checked in the simulated world and in the log's decisions,
// and each log must replay identically.
#include <set>

#include "tests/integration/scenario_run.h"

namespace tenon::testing {
namespace {

// Karpenter's "should schedule incompatible pods to the different node": a NodePool requirement
// `team In [red, blue]` with one pod selecting team=red and one team=blue gives two nodes,
// labelled red and blue, and both pods run. Karpenter's "should schedule unconstrained pods that
// don't have matching node selectors": a single-valued requirement becomes a label of every node.
TEST(Lifecycle, RequirementValuesBecomeNodeLabels) {
  Outcome o = Simulate(Scenario(R"(
duration: 4m
workloads:
  - {name: red, replicas: 1, cpu: 500m, memory: 256Mi, nodeSelector: {team: red}}
  - {name: blue, replicas: 1, cpu: 500m, memory: 256Mi, nodeSelector: {team: blue}}
)",
                                "            - {key: team, operator: In, values: [red, blue]}\n"
                                "            - {key: tier, operator: In, values: [web]}\n"));
  EXPECT_EQ(o.verdict, replay::Verdict::kIdentical) << o.verify_detail;
  EXPECT_EQ(o.Bound(), 2u) << o.Describe();
  EXPECT_EQ(o.Count(Transition::kLaunched), 2u) << o.Describe();
  std::set<std::string> teams;
  for (const auto& [name, node] : o.nodes) {
    ASSERT_TRUE(node.labels.contains("team")) << name;
    teams.insert(node.labels.at("team"));
    EXPECT_EQ(node.labels.at("tier"), "web") << name;
  }
  EXPECT_EQ(teams, (std::set<std::string>{"blue", "red"}));
  for (const auto& [key, pod] : o.pods) {
    ASSERT_FALSE(pod.node_name.empty()) << key;
    EXPECT_EQ(o.nodes.at(pod.node_name).labels.at("team"),
              key.find("red") != std::string::npos ? "red" : "blue")
        << key;
  }
}

// Two pods: one claim goes Launched -> Registered -> Initialized, its Node gets Karpenter's
// labels, loses the unregistered taint, and both pods run on it.
TEST(Lifecycle, LaunchToInitialized) {
  Outcome o = Simulate(Scenario(R"(
workloads:
  - {name: web, replicas: 2, cpu: 500m, memory: 512Mi}
)"));
  EXPECT_EQ(o.verdict, replay::Verdict::kIdentical) << o.verify_detail;
  ASSERT_EQ(o.instances.size(), 1u);
  EXPECT_EQ(o.Transitions(),
            (std::vector<Transition>{Transition::kLaunched, Transition::kRegistered,
                                     Transition::kInitialized}));
  ASSERT_EQ(o.nodes.size(), 1u);
  const Node& node = o.nodes.begin()->second;
  EXPECT_EQ(node.labels.at(label::kRegistered), "true");
  EXPECT_EQ(node.labels.at(label::kInitialized), "true");
  EXPECT_EQ(node.labels.at(label::kNodePool), "default");
  for (const auto& t : node.taints) EXPECT_NE(t.key, label::kUnregisteredTaint);
  EXPECT_EQ(o.Bound(), 2u);
  ASSERT_TRUE(o.pool_status.contains("default"));
  EXPECT_EQ(o.pool_status.at("default").registration_healthy, true);
  EXPECT_EQ(o.pool_status.at("default").nodes, 1);
}

// m5.large never registers: its claim is deleted 15 min after launch (instance terminated,
// finalizer removed), the pool is marked NodeRegistrationHealthy=False, and the pods get a new
// claim in the next batch.
TEST(Lifecycle, NodeThatNeverRegistersIsReplacedAt15Minutes) {
  Outcome o = Simulate(Scenario(R"(
duration: 17m
workloads:
  - {name: web, replicas: 2, cpu: 500m, memory: 512Mi}
cloud:
  neverRegister: [m5.large]
)"));
  EXPECT_EQ(o.verdict, replay::Verdict::kIdentical) << o.verify_detail;
  const LifecycleDecision* deleting = o.First(Transition::kDeleting);
  ASSERT_NE(deleting, nullptr);
  EXPECT_EQ(deleting->reason, "no node registered within 15m");
  std::string first = deleting->nodeclaim;
  EXPECT_EQ(
      o.Transitions(first),
      (std::vector<Transition>{Transition::kLaunched, Transition::kDeleting, Transition::kDrained,
                               Transition::kInstanceTerminated, Transition::kFinalized}));
  EXPECT_FALSE(o.nodeclaims.contains(first));
  EXPECT_EQ(o.pool_status.at("default").registration_healthy, false);
  // The pods were planned again: a second claim was created and launched after the first.
  auto creates = o.CommandsOf<CreateNodeClaim>();
  ASSERT_EQ(creates.size(), 2u);
  EXPECT_NE(creates[1]->claim.name, first);
  EXPECT_EQ(o.instances.size(), 1u);  // Only the replacement's instance is left.
  // Most of the 15 minutes the claim walk was skipped on an idle note (State::idle), and the
  // timeout still came on time: the note ran out with the claim's registration deadline.
  EXPECT_GT(o.idle_skips, 600u);
}

// The cheapest offering answers InsufficientInstanceCapacity: the same CreateFleet falls over
// to the next override, the offering is kept out of launches for 3 minutes, then offered again.
TEST(Lifecycle, InsufficientCapacityFallsOverAndExpires) {
  Outcome o = Simulate(Scenario(R"(
duration: 9m
workloads:
  - {name: a, replicas: 3, cpu: 500m, memory: 512Mi}
  - {at: 1m, name: b, replicas: 3, cpu: 500m, memory: 512Mi}
  - {at: 5m, name: c, replicas: 3, cpu: 500m, memory: 512Mi}
cloud:
  insufficientCapacity: [m5.large/us-east-1a/on-demand]
)"));
  EXPECT_EQ(o.verdict, replay::Verdict::kIdentical) << o.verify_detail;
  auto launches = o.CommandsOf<LaunchInstance>();
  ASSERT_EQ(launches.size(), 3u);
  auto first_override = [](const LaunchInstance* l) {
    return l->overrides.front().instance_type + "/" + l->overrides.front().zone;
  };
  EXPECT_EQ(first_override(launches[0]), "m5.large/us-east-1a");
  // Within 3 minutes the dry pool is not asked again...
  for (const auto& ov : launches[1]->overrides) {
    EXPECT_FALSE(ov.instance_type == "m5.large" && ov.zone == "us-east-1a");
  }
  // ...after them it is, first again as the cheapest.
  EXPECT_EQ(first_override(launches[2]), "m5.large/us-east-1a");
  // Every launch succeeded, on the next offering, within its own batch.
  EXPECT_EQ(o.Count(Transition::kLaunched), 3u);
  EXPECT_EQ(o.Count(Transition::kLaunchFailed), 0u);
  for (const auto& [id, i] : o.instances) EXPECT_NE(i.zone, "us-east-1a");
  const LifecycleDecision* launched = o.First(Transition::kLaunched);
  ASSERT_NE(launched, nullptr);
  EXPECT_NE(launched->reason.find("InsufficientInstanceCapacity"), std::string::npos)
      << launched->reason;
  EXPECT_EQ(o.Bound(), 9u);
}

// A zone spread whose one zone has no spot capacity, spot and on-demand both allowed: as in
// Karpenter's "should launch on-demand capacity if flexible to both spot and on-demand, but spot
// is unavailable", the first launch there fails, the dry offerings then count as absent, and
// the next claim for that zone is on-demand. No NodeClaim is ever sent to launch without an
// offering, and none is made in a loop. (kube-scheduler, counting only the zones that have
// nodes, may bind the pod elsewhere meanwhile; the node left empty then goes.)
TEST(Lifecycle, SpreadOverAZoneWithoutSpotTakesOnDemandThere) {
  std::string yaml = Scenario(R"(
duration: 6m
workloads:
  - {name: web, replicas: 3, cpu: 500m, memory: 512Mi, zoneSpread: 1}
cloud:
  insufficientCapacity: [m5.large/us-east-1c/spot, m5.xlarge/us-east-1c/spot]
)");
  const std::string on_demand = "values: [on-demand]";
  yaml.replace(yaml.find(on_demand), on_demand.size(), "values: [spot, on-demand]");
  Outcome o = Simulate(yaml);
  EXPECT_EQ(o.verdict, replay::Verdict::kIdentical) << o.verify_detail;
  EXPECT_EQ(o.Bound(), 3u) << o.Describe();
  for (const LaunchInstance* launch : o.CommandsOf<LaunchInstance>()) {
    EXPECT_FALSE(launch->overrides.empty()) << launch->nodeclaim;
  }
  EXPECT_LE(o.CommandsOf<CreateNodeClaim>().size(), 5u) << o.Describe();
  std::set<std::string> launched;
  for (const auto& d : o.history) {
    if (d.transition != Transition::kLaunched) continue;
    for (const char* zone : {"us-east-1a", "us-east-1b", "us-east-1c"}) {
      for (const char* capacity : {"spot", "on-demand"}) {
        if (d.reason.find(std::string("in ") + zone + " (" + capacity + ",") != std::string::npos) {
          launched.insert(std::string(zone) + " " + capacity);
        }
      }
    }
  }
  EXPECT_EQ(launched,
            (std::set<std::string>{"us-east-1a spot", "us-east-1b spot", "us-east-1c on-demand"}))
      << o.Describe();
}

// Two web replicas on one node, a PDB over them, and the node's claim deleted at 3 min.
std::string DeletedUnder(const std::string& pdb) {
  return R"(
duration: 8m
workloads:
  - {name: web, replicas: 2, cpu: 500m, memory: 512Mi}
budgets:
  - {name: web-pdb, app: web, )" +
         pdb + R"(}
actions:
  - {at: 3m, do: deleteNodeClaim}
)";
}

// maxUnavailable 1 over two replicas on the deleted node: the first eviction goes through, the
// second is refused (429) until the first one's replacement runs elsewhere, then it goes.
TEST(Lifecycle, DrainWaitsForThePdbUntilAReplicaIsReady) {
  Outcome o = Simulate(Scenario(DeletedUnder("maxUnavailable: 1")));
  EXPECT_EQ(o.verdict, replay::Verdict::kIdentical) << o.verify_detail;
  const LifecycleDecision* deleting = o.First(Transition::kDeleting);
  ASSERT_NE(deleting, nullptr);
  EXPECT_EQ(deleting->reason, "deleted through the API");
  std::string claim = deleting->nodeclaim;
  EXPECT_GE(o.Count(Transition::kEvictionRefused), 1u);
  EXPECT_EQ(o.Count(Transition::kEvicted), 2u);
  EXPECT_EQ(o.Count(Transition::kPodForceDeleted), 0u);
  // The refusals come before the replacement node is up, the last eviction after it.
  auto t = o.Transitions();
  auto refused = std::find(t.begin(), t.end(), Transition::kEvictionRefused);
  auto replacement_up = std::find(refused, t.end(), Transition::kInitialized);
  ASSERT_NE(replacement_up, t.end());
  EXPECT_NE(std::find(replacement_up, t.end(), Transition::kEvicted), t.end());
  ExpectReplaced(o, claim, 2);
}

// A PDB that never allows an eviction cannot hold a node past its terminationGracePeriod: the
// pods are force-deleted when their own 30 s grace no longer fits, the instance terminated.
TEST(Lifecycle, TerminationGracePeriodCutsTheDrain) {
  Outcome o =
      Simulate(Scenario(DeletedUnder("minAvailable: 2"), "          terminationGracePeriod: 2m\n"));
  EXPECT_EQ(o.verdict, replay::Verdict::kIdentical) << o.verify_detail;
  EXPECT_GE(o.Count(Transition::kEvictionRefused), 2u);
  EXPECT_EQ(o.Count(Transition::kEvicted), 0u);
  EXPECT_EQ(o.Count(Transition::kPodForceDeleted), 2u);
  ExpectReplaced(o, o.First(Transition::kDeleting)->nodeclaim, 2);
}

// A do-not-disrupt pod is never evicted (no terminationGracePeriod to override it), so the
// claim stays in its drain; its neighbour without the annotation is evicted.
TEST(Lifecycle, DoNotDisruptPodHoldsTheDrain) {
  Outcome o = Simulate(Scenario(R"(
duration: 6m
workloads:
  - {name: keep, replicas: 1, cpu: 500m, memory: 512Mi, doNotDisrupt: true}
  - {name: web, replicas: 1, cpu: 500m, memory: 512Mi}
actions:
  - {at: 3m, do: deleteNodeClaim}
)"));
  EXPECT_EQ(o.verdict, replay::Verdict::kIdentical) << o.verify_detail;
  std::string claim = o.First(Transition::kDeleting)->nodeclaim;
  EXPECT_EQ(o.Count(Transition::kEvicted), 1u);
  for (const auto* e : o.CommandsOf<EvictPod>()) EXPECT_EQ(e->name.rfind("web-", 0), 0u);
  EXPECT_TRUE(o.nodeclaims.contains(claim));
  EXPECT_EQ(o.Count(Transition::kInstanceTerminated), 0u);
  bool keep_still_there = false;
  for (const auto& [key, pod] : o.pods) keep_still_there |= pod.name.rfind("keep-", 0) == 0;
  EXPECT_TRUE(keep_still_there);
  // The node is tainted so nothing new lands on it.
  bool tainted = false;
  for (const auto& [name, node] : o.nodes) {
    for (const auto& t : node.taints) tainted |= t.key == label::kDisruptedTaint;
  }
  EXPECT_TRUE(tainted);
}

// An instance tagged for the cluster that no NodeClaim owns is terminated once older than 30 s.
TEST(Lifecycle, LeakedInstanceIsCollected) {
  Outcome o = Simulate(Scenario(R"(
duration: 4m
workloads:
  - {name: web, replicas: 1, cpu: 500m, memory: 512Mi}
actions:
  - {at: 1m, do: strayInstance, instanceType: m5.large, zone: us-east-1b}
cloud:
  listInterval: 1m
)"));
  EXPECT_EQ(o.verdict, replay::Verdict::kIdentical) << o.verify_detail;
  EXPECT_EQ(o.Count(Transition::kLeakedInstance), 1u);
  EXPECT_EQ(o.Count(Transition::kLeakedInstanceTerminated), 1u);
  ASSERT_EQ(o.instances.size(), 1u);
  EXPECT_EQ(o.nodeclaims.count(o.instances.begin()->second.nodeclaim), 1u);
}

// The instance under a registered claim disappears: garbage collection deletes the claim, the
// finalizer goes without a drain or a second termination, and the pods move to a new claim.
TEST(Lifecycle, VanishedInstanceDeletesItsClaim) {
  Outcome o = Simulate(Scenario(R"(
duration: 10m
workloads:
  - {name: web, replicas: 2, cpu: 500m, memory: 512Mi}
actions:
  - {at: 3m, do: terminateInstance}
cloud:
  listInterval: 1m
)"));
  EXPECT_EQ(o.verdict, replay::Verdict::kIdentical) << o.verify_detail;
  const LifecycleDecision* gone = o.First(Transition::kInstanceGone);
  ASSERT_NE(gone, nullptr);
  std::string claim = gone->nodeclaim;
  EXPECT_EQ(o.Transitions(claim),
            (std::vector<Transition>{Transition::kLaunched, Transition::kRegistered,
                                     Transition::kInitialized, Transition::kInstanceGone,
                                     Transition::kDeleting, Transition::kFinalized}));
  EXPECT_EQ(o.CommandsOf<TerminateInstance>().size(), 0u);
  ExpectReplaced(o, claim, 2);
}

}  // namespace
}  // namespace tenon::testing

namespace tenon::testing {
namespace {

// `tenon replay` prints each claim's transitions with their causes, and --nodeclaim keeps one.
TEST(Lifecycle, ReplayPrintsEveryTransitionWithItsCause) {
  TempDir dir;
  Outcome o = Simulate(Scenario(R"(
duration: 10m
workloads:
  - {name: web, replicas: 2, cpu: 500m, memory: 512Mi}
actions:
  - {at: 3m, do: terminateInstance}
cloud:
  listInterval: 1m
)"),
                       &dir);
  std::string claim = o.First(Transition::kInstanceGone)->nodeclaim;
  auto run = [&](std::vector<std::string> extra) {
    std::vector<std::string> argv{TENON_BINARY, "replay", (dir.path() / "log").string()};
    argv.insert(argv.end(), extra.begin(), extra.end());
    Child child(argv);
    std::vector<std::string> lines;
    for (std::string line; child.ReadLine(line);) lines.push_back(line);
    EXPECT_EQ(child.Wait(), 0);
    return lines;
  };
  auto contains = [](const std::vector<std::string>& lines, const std::string& a,
                     const std::string& b) {
    return std::any_of(lines.begin(), lines.end(), [&](const std::string& l) {
      return l.find(a) != std::string::npos && l.find(b) != std::string::npos;
    });
  };
  auto all = run({});
  for (const auto& d : o.history) {
    EXPECT_TRUE(contains(all, Name(d.transition), d.reason))
        << Name(d.transition) << ": " << d.reason;
  }
  auto one = run({"--nodeclaim", claim});
  EXPECT_TRUE(contains(one, claim, "InstanceGone"));
  EXPECT_TRUE(contains(one, claim, "Finalized"));
  for (const auto& line : one) {
    bool other =
        line.find("Launched") != std::string::npos && line.find(claim) == std::string::npos;
    EXPECT_FALSE(other) << line;
  }
}

}  // namespace
}  // namespace tenon::testing
