// NodeClaim lifecycle end to end, through the simulator: launch to Initialized, a node that
// never registers, an ICE on the cheapest offering, drains blocked by a PDB and cut by the
// terminationGracePeriod, a do-not-disrupt pod, a leaked instance and an instance that vanishes
// under its claim. Each scenario is checked in the simulated world and in the log's decisions,
// and each log must replay identically.
#include <gtest/gtest.h>

#include <fstream>

#include "adapters/sim/simulator.h"
#include "log/codec.h"
#include "replay/replay.h"
#include "tests/integration/helpers.h"

namespace tenon::testing {
namespace {

const std::string kCatalog =
    (std::filesystem::path(TENON_SOURCE_DIR) / "examples/catalogs/small.json").string();

// A scenario with one on-demand NodePool of m5.large and m5.xlarge; `extra` adds top-level
// keys (workloads, cloud, budgets, actions) and `pool_spec` lines to the pool's template spec.
std::string Scenario(const std::string& extra, const std::string& pool_spec = "") {
  return R"(name: lifecycle
seed: 7
start: "2026-01-01T00:00:00Z"
duration: 20m
tick: 1s
catalog: )" +
         kCatalog +
         R"(
objects:
  - kind: EC2NodeClass
    metadata: {name: default}
    spec: {role: r}
  - kind: NodePool
    metadata: {name: default}
    spec:
      template:
        spec:
          nodeClassRef: {name: default}
          requirements:
            - {key: node.kubernetes.io/instance-type, operator: In, values: [m5.large, m5.xlarge]}
            - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
)" + pool_spec +
         extra;
}

struct Outcome {
  sim::SimulateReport report;
  std::vector<LifecycleDecision> history;
  std::vector<Command> commands;
  std::map<std::string, sim::SimInstance> instances;
  std::map<std::string, std::string> nodeclaims;
  std::map<std::string, Node> nodes;
  std::map<std::string, Pod> pods;
  std::map<std::string, NodePoolStatus> pool_status;
  replay::Verdict verdict = replay::Verdict::kIdentical;
  std::string verify_detail;

  // The transitions recorded, e.g. "Launched", in order, for one claim ("" = every claim).
  std::vector<std::string> Transitions(const std::string& claim = "") const {
    std::vector<std::string> out;
    for (const auto& d : history) {
      if (claim.empty() || d.nodeclaim == claim) out.push_back(d.transition);
    }
    return out;
  }
  std::size_t Count(const std::string& transition) const {
    std::size_t n = 0;
    for (const auto& d : history) n += d.transition == transition ? 1 : 0;
    return n;
  }
  const LifecycleDecision* First(const std::string& transition) const {
    for (const auto& d : history) {
      if (d.transition == transition) return &d;
    }
    return nullptr;
  }
  // The history as text, for failure messages.
  std::string Describe() const {
    std::string text;
    for (const auto& d : history) {
      text += d.nodeclaim + " " + d.transition + ": " + d.reason + "\n";
    }
    return text;
  }
  std::size_t Bound() const {
    std::size_t n = 0;
    for (const auto& [key, pod] : pods) n += pod.node_name.empty() ? 0 : 1;
    return n;
  }
  template <class T>
  std::vector<const T*> CommandsOf() const {
    std::vector<const T*> out;
    for (const auto& c : commands) {
      if (const T* body = std::get_if<T>(&c.body)) out.push_back(body);
    }
    return out;
  }
};

// Runs the scenario with its log in `dir` (a fresh temporary folder when null).
Outcome Simulate(const std::string& yaml, const TempDir* keep = nullptr) {
  TempDir temporary;
  const TempDir& dir = keep != nullptr ? *keep : temporary;
  auto file = dir.path() / "scenario.yaml";
  std::ofstream(file) << yaml;
  auto scenario = sim::LoadScenario(file);
  sim::SimulateOptions options;
  options.log_dir = dir.path() / "log";
  Outcome out;
  out.report = sim::Simulate(scenario, options);

  log::OpenOptions open;
  open.read_only = true;
  open.create_if_missing = false;
  auto log = log::EventLog::Open(options.log_dir, open);
  log->ScanDecisions(1, [&](const log::DecisionRecord& r) {
    Decision d = log::DecodeDecision(r.payload);
    if (const auto* l = std::get_if<LifecycleDecision>(&d.body)) out.history.push_back(*l);
    return true;
  });
  log->Scan(1, 0, [&](const log::Record& r) {
    auto entry = log::DecodeEntry(r.payload);
    if (const auto* o = std::get_if<log::OutputRecord>(&entry)) {
      out.commands.insert(out.commands.end(), o->commands.begin(), o->commands.end());
    }
    return true;
  });
  auto verify = replay::Verify(*log);
  out.verdict = verify.verdict;
  out.verify_detail = verify.detail;

  sim::World world(scenario, options.log_dir / "sim-world.json");
  EXPECT_TRUE(world.Load());
  out.instances = world.instances();
  out.nodeclaims = world.nodeclaims();
  out.nodes = world.nodes();
  out.pods = world.pods();
  out.pool_status = world.pool_status();
  if (std::getenv("TENON_HISTORY") != nullptr) std::printf("%s", out.Describe().c_str());
  return out;
}

// The claim's termination ran to the end and its pods run on the one replacement.
void ExpectReplaced(const Outcome& o, const std::string& claim, std::size_t pods) {
  auto mine = o.Transitions(claim);
  ASSERT_FALSE(mine.empty());
  EXPECT_EQ(mine.back(), "Finalized") << o.Describe();
  EXPECT_FALSE(o.nodeclaims.contains(claim));
  EXPECT_EQ(o.instances.size(), 1u);
  EXPECT_EQ(o.Bound(), pods);
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
  EXPECT_EQ(o.Transitions(), (std::vector<std::string>{"Launched", "Registered", "Initialized"}));
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
  const LifecycleDecision* deleting = o.First("Deleting");
  ASSERT_NE(deleting, nullptr);
  EXPECT_EQ(deleting->reason, "no node registered within 15m");
  std::string first = deleting->nodeclaim;
  EXPECT_EQ(o.Transitions(first), (std::vector<std::string>{"Launched", "Deleting", "Drained",
                                                            "InstanceTerminated", "Finalized"}));
  EXPECT_FALSE(o.nodeclaims.contains(first));
  EXPECT_EQ(o.pool_status.at("default").registration_healthy, false);
  // The pods were planned again: a second claim was created and launched after the first.
  auto creates = o.CommandsOf<CreateNodeClaim>();
  ASSERT_EQ(creates.size(), 2u);
  EXPECT_NE(creates[1]->claim.name, first);
  EXPECT_EQ(o.instances.size(), 1u);  // Only the replacement's instance is left.
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
  auto launches = o.CommandsOf<LaunchInstances>();
  ASSERT_EQ(launches.size(), 3u);
  auto first_override = [](const LaunchInstances* l) {
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
  EXPECT_EQ(o.Count("Launched"), 3u);
  EXPECT_EQ(o.Count("LaunchFailed"), 0u);
  for (const auto& [id, i] : o.instances) EXPECT_NE(i.zone, "us-east-1a");
  const LifecycleDecision* launched = o.First("Launched");
  ASSERT_NE(launched, nullptr);
  EXPECT_NE(launched->reason.find("InsufficientInstanceCapacity"), std::string::npos)
      << launched->reason;
  EXPECT_EQ(o.Bound(), 9u);
}

// maxUnavailable 1 over two replicas on the deleted node: the first eviction goes through, the
// second is refused (429) until the first one's replacement runs elsewhere, then it goes.
TEST(Lifecycle, DrainWaitsForThePdbUntilAReplicaIsReady) {
  Outcome o = Simulate(Scenario(R"(
duration: 8m
workloads:
  - {name: web, replicas: 2, cpu: 500m, memory: 512Mi}
budgets:
  - {name: web-pdb, app: web, maxUnavailable: 1}
actions:
  - {at: 3m, do: deleteNodeClaim}
)"));
  EXPECT_EQ(o.verdict, replay::Verdict::kIdentical) << o.verify_detail;
  const LifecycleDecision* deleting = o.First("Deleting");
  ASSERT_NE(deleting, nullptr);
  EXPECT_EQ(deleting->reason, "deleted through the API");
  std::string claim = deleting->nodeclaim;
  EXPECT_GE(o.Count("EvictionRefused"), 1u);
  EXPECT_EQ(o.Count("Evicted"), 2u);
  EXPECT_EQ(o.Count("PodForceDeleted"), 0u);
  // The refusals come before the replacement node is up, the last eviction after it.
  auto t = o.Transitions();
  auto refused = std::find(t.begin(), t.end(), "EvictionRefused");
  auto replacement_up = std::find(refused, t.end(), "Initialized");
  ASSERT_NE(replacement_up, t.end());
  EXPECT_NE(std::find(replacement_up, t.end(), "Evicted"), t.end());
  ExpectReplaced(o, claim, 2);
}

// A PDB that never allows an eviction cannot hold a node past its terminationGracePeriod: the
// pods are force-deleted when their own 30 s grace no longer fits, the instance terminated.
TEST(Lifecycle, TerminationGracePeriodCutsTheDrain) {
  Outcome o = Simulate(Scenario(R"(
duration: 8m
workloads:
  - {name: web, replicas: 2, cpu: 500m, memory: 512Mi}
budgets:
  - {name: web-pdb, app: web, minAvailable: 2}
actions:
  - {at: 3m, do: deleteNodeClaim}
)",
                                "          terminationGracePeriod: 2m\n"));
  EXPECT_EQ(o.verdict, replay::Verdict::kIdentical) << o.verify_detail;
  EXPECT_GE(o.Count("EvictionRefused"), 2u);
  EXPECT_EQ(o.Count("Evicted"), 0u);
  EXPECT_EQ(o.Count("PodForceDeleted"), 2u);
  ExpectReplaced(o, o.First("Deleting")->nodeclaim, 2);
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
  std::string claim = o.First("Deleting")->nodeclaim;
  EXPECT_EQ(o.Count("Evicted"), 1u);
  for (const auto* e : o.CommandsOf<EvictPod>()) EXPECT_EQ(e->name.rfind("web-", 0), 0u);
  EXPECT_TRUE(o.nodeclaims.contains(claim));
  EXPECT_EQ(o.Count("InstanceTerminated"), 0u);
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
  EXPECT_EQ(o.Count("LeakedInstance"), 1u);
  EXPECT_EQ(o.Count("LeakedInstanceTerminated"), 1u);
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
  const LifecycleDecision* gone = o.First("InstanceGone");
  ASSERT_NE(gone, nullptr);
  std::string claim = gone->nodeclaim;
  EXPECT_EQ(o.Transitions(claim),
            (std::vector<std::string>{"Launched", "Registered", "Initialized", "InstanceGone",
                                      "Deleting", "Finalized"}));
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
  std::string claim = o.First("InstanceGone")->nodeclaim;
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
    EXPECT_TRUE(contains(all, d.transition, d.reason)) << d.transition << ": " << d.reason;
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
