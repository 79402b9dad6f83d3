// The simulated world's own bookkeeping, checked against a recount of what it holds.
#include <capnp/message.h>
#include <capnp/serialize.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <string>

#include "adapters/runtime/runtime.h"
#include "adapters/sim/world.capnp.h"
#include "adapters/sim/world.h"
#include "log/event_log.h"
#include "tests/integration/fixtures.h"
#include "tests/integration/helpers.h"

namespace tenon::testing {
namespace {

// Every node's bound pods and what they request, counted from the pods themselves.
std::map<std::string, sim::PodsOnNode> Recount(const sim::World& world) {
  std::map<std::string, sim::PodsOnNode> on;
  for (const auto& [key, pod] : world.pods()) {
    if (pod.node_name.empty()) continue;
    Resources need = pod.requests;
    need.pods = 1;
    on[pod.node_name].pods.insert(key);
    on[pod.node_name].requested = on[pod.node_name].requested + need;
  }
  return on;
}

// How many pods each Deployment and Job has, counted from the pods' names ("name-<digits>").
std::map<std::string, std::int64_t> RecountOwners(const sim::World& world) {
  std::map<std::string, std::int64_t> owners;
  for (const auto& [key, pod] : world.pods()) {
    const std::size_t dash = key.rfind('-');
    const bool numbered = key.find_first_not_of("0123456789", dash + 1) == std::string::npos;
    if (numbered) ++owners[key.substr(0, dash)];
  }
  return owners;
}

// A small churning cluster (bench/churn.h) with a DaemonSet on every node and a Job whose pods
// finish: pods bind, finish, are scaled away, evicted by consolidation and deleted with their
// nodes (interruptions, instances terminated and NodeClaims deleted by hand).
sim::Scenario ChurningScenario() {
  sim::Scenario scenario = bench::MakeScenario(SmallChurnArgs());
  sim::DaemonSetSpec daemon;
  daemon.name = "agent";
  daemon.requests = {Millicores{100}, Bytes{64 * kMebibyte.value}, 0, {}};
  scenario.daemonsets.push_back(daemon);
  sim::Job job;
  job.at = bench::Seconds(900);
  job.name = "batch";
  job.pods = 10;
  job.run_for = bench::Seconds(300);
  job.requests = {Millicores{500}, Bytes{256 * kMebibyte.value}, 0, {}};
  scenario.jobs.push_back(job);
  return scenario;
}

// Schedule takes each node's free room, and a node's deletion its pods, from what the world
// keeps per node as pods bind and go, and the ReplicaSet and Job controllers their pod counts
// from what it keeps per owner. After every tick of a churning run, and after a reload from the
// world's file, both equal a recount of the pods; a node deleted with its pods deletes exactly
// those.
TEST(World, PodsKeptPerNodeAndOwnerMatchARecount) {
  TempDir dir;
  const sim::Scenario scenario = ChurningScenario();
  auto log = log::EventLog::Open(dir.path() / "log", {});
  sim::World world(scenario, dir.path() / "world.bin");
  runtime::Runtime runtime(*log, world, runtime::Options{});
  runtime.Recover();
  runtime.Ingest(world.StartupEvents(runtime.state()));
  std::size_t ticks_with_bound_pods = 0;
  for (Instant t = scenario.start + scenario.tick; t <= scenario.start + scenario.duration;
       t += scenario.tick) {
    runtime.Ingest(world.Advance(t));
    ASSERT_EQ(world.pods_on_nodes_for_test(), Recount(world)) << "at " << t.value;
    ASSERT_EQ(world.pods_by_owner_for_test(), RecountOwners(world)) << "at " << t.value;
    ticks_with_bound_pods += world.pods_on_nodes_for_test().empty() ? 0 : 1;
  }
  EXPECT_GT(ticks_with_bound_pods, 0u);

  // The node with the most pods loses its finalizer: it goes, and its pods with it, in the
  // order the API server lists them.
  const auto on = Recount(world);
  auto fullest = std::max_element(on.begin(), on.end(), [](const auto& a, const auto& b) {
    return a.second.pods.size() < b.second.pods.size();
  });
  ASSERT_NE(fullest, on.end());
  std::string claim;
  for (const auto& [id, instance] : world.instances()) {
    if (instance.node_name == fullest->first) claim = instance.nodeclaim;
  }
  std::vector<Event> expected{CommandSucceeded{CommandId{999'999}}, NodeDeleted{fullest->first}};
  for (const auto& key : fullest->second.pods) {
    const Pod& pod = world.pods().at(key);
    expected.push_back(PodDeleted{pod.ns, pod.name});
  }
  EXPECT_EQ(
      world.Execute(Command{CommandId{999'999}, Seq{0}, RemoveFinalizer{claim, fullest->first}}),
      expected);
  EXPECT_FALSE(world.pods_on_nodes_for_test().contains(fullest->first));
  EXPECT_EQ(world.pods_on_nodes_for_test(), Recount(world));
  world.Save();
  sim::World reloaded(scenario, dir.path() / "world.bin");
  ASSERT_TRUE(reloaded.Load());
  EXPECT_EQ(reloaded.pods_on_nodes_for_test(), Recount(world));
  EXPECT_EQ(reloaded.pods_by_owner_for_test(), RecountOwners(world));
}

std::string FileBytes(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// `bytes` (a world file) with `damage` done to its message, as a file's bytes.
std::string Damaged(const std::string& bytes,
                    const std::function<void(sim::schema::World::Builder)>& damage) {
  auto words = kj::heapArray<capnp::word>(bytes.size() / sizeof(capnp::word));
  std::memcpy(words.begin(), bytes.data(), words.size() * sizeof(capnp::word));
  capnp::FlatArrayMessageReader reader(words.asPtr());
  capnp::MallocMessageBuilder message;
  message.setRoot(reader.getRoot<sim::schema::World>());
  damage(message.getRoot<sim::schema::World>());
  auto flat = capnp::messageToFlatArray(message);
  return std::string(reinterpret_cast<const char*>(flat.begin()),
                     flat.size() * sizeof(capnp::word));
}

// The error loading `bytes` as the world file `file` raises; a world that fails to load is left
// as it was (no pod, the scenario's start).
std::string LoadError(const sim::Scenario& scenario, const std::filesystem::path& file,
                      const std::string& bytes) {
  std::ofstream(file, std::ios::binary | std::ios::trunc) << bytes;
  sim::World world(scenario, file);
  try {
    world.Load();
  } catch (const sim::ScenarioError& e) {
    EXPECT_TRUE(world.pods().empty());
    EXPECT_EQ(world.now(), scenario.start);
    return e.what();
  }
  return "loaded";
}

// The world file is read as outside input: a number that is no value of its enum or a phase no
// pod has is an error naming the file and the field, never a value made up.
TEST(World, AWorldFileValueOutOfRangeIsAnErrorNamingTheField) {
  TempDir dir;
  const sim::Scenario scenario = ChurningScenario();
  const auto file = dir.path() / "world.bin";
  {
    sim::World world(scenario, file);
    world.Advance(scenario.start + scenario.tick);
    world.Save();
  }
  const std::string saved = FileBytes(file);
  {
    sim::World reloaded(scenario, file);
    ASSERT_TRUE(reloaded.Load());  // As saved, it loads.
    ASSERT_FALSE(reloaded.pods().empty());
    EXPECT_EQ(reloaded.now(), scenario.start + scenario.tick);
  }
  using Builder = sim::schema::World::Builder;
  const std::vector<std::pair<std::function<void(Builder)>, std::string>> damages = {
      {[](Builder w) {
         auto timers = w.initTimers(1);
         timers[0].setKind(static_cast<sim::schema::TimerKind>(9));
         timers[0].setInstanceId("i-1");
       },
       "timers[0].kind: 9 is not a timer kind (0 to 4)"},
      {[](Builder w) {
         auto nodes = w.initNodes(1);
         nodes[0].setName("node-1");
         auto taints = nodes[0].initTaints(1);
         taints[0].setKey("dedicated");
         taints[0].setEffect(static_cast<schema::TaintEffect>(3));
       },
       "nodes[0]: unknown taint effect value 3"},
      {[](Builder w) {
         auto tolerations = w.getPods()[0].initTolerations(1);
         tolerations[0].setKey("k");
         tolerations[0].setHasEffect(true);
         tolerations[0].setEffect(static_cast<schema::TaintEffect>(7));
       },
       "pods[0]: unknown taint effect value 7"},
      {[](Builder w) { w.getPods()[0].setPhase("Sleeping"); },
       "pods[0].phase: \"Sleeping\" is not a pod phase"},
      {[](Builder w) {
         auto volumes = w.initVolumes(1);
         volumes[0].setName("pv-1");
         auto requirements = volumes[0].initNodeAffinity(1)[0].initRequirements(1);
         requirements[0].setKey("topology.kubernetes.io/zone");
         requirements[0].setOp(static_cast<schema::RequirementOp>(6));
       },
       "volumes[0]: unknown requirement op value 6"},
      {[](Builder w) { w.setFormat("tenon-sim/1"); },
       "format: \"tenon-sim/1\", not \"tenon-sim-world/1\" (not a world file, or one of another "
       "version)"},
  };
  for (const auto& [damage, field] : damages) {
    EXPECT_EQ(LoadError(scenario, file, Damaged(saved, damage)),
              file.string() + ": damaged world file: " + field);
  }
  // A world whose workload step or pod template the scenario does not have is of another one.
  EXPECT_EQ(LoadError(scenario, file,
                      Damaged(saved,
                              [](Builder w) {
                                auto deployments = w.initDeployments(1);
                                deployments[0].setKey("default/web");
                                deployments[0].setValue(999);
                              })),
            file.string() +
                ": the world file is of another scenario (default/web at workload "
                "step 999, the scenario has " +
                std::to_string(scenario.workloads.size()) + ")");
  EXPECT_EQ(
      LoadError(scenario, file,
                Damaged(saved,
                        [](Builder w) {
                          auto templates = w.initPodTemplates(1);
                          templates[0].setKey("default/web-1");
                          templates[0].setValue("Deployment/default/gone");
                        })),
      file.string() +
          ": the world file is of another scenario (no pod template Deployment/default/gone)");
}

// A world file cut short, empty, in the JSON form older versions wrote or of another kind
// altogether is refused with the reason, naming the file.
TEST(World, ATruncatedOrForeignWorldFileIsRefused) {
  TempDir dir;
  const sim::Scenario scenario = ChurningScenario();
  const auto file = dir.path() / "world.bin";
  {
    sim::World world(scenario, file);
    world.Advance(scenario.start + scenario.tick);
    world.Save();
  }
  const std::string saved = FileBytes(file);
  const std::string damaged = file.string() + ": damaged world file: ";
  const std::size_t half = saved.size() / 2 / sizeof(capnp::word) * sizeof(capnp::word);
  const std::vector<std::pair<std::string, std::string>> files = {
      {saved.substr(0, half), "malformed world message: "},
      {saved.substr(0, half + 3), "world message of " + std::to_string(half + 3) +
                                      " bytes is not a whole number of Cap'n Proto words (a "
                                      "truncated or foreign file)"},
      {"", "the file is empty"},
      {R"({"version": "tenon-sim/1", "now": 0})", "it is in the JSON form older versions"},
      {std::string("tenon-sim-world/1 is not here\n").substr(0, 24), "malformed world message: "},
  };
  for (const auto& [bytes, why] : files) {
    const std::string error = LoadError(scenario, file, bytes);
    EXPECT_EQ(error.rfind(damaged + why, 0), 0u) << error;
  }
}
}  // namespace
// A controller that restarts learns what went while it was down: the world's startup list
// ends with a deletion for every pod and node its recovered state still holds that the world
// no longer has (an informer's relist), so no pod it saw once lingers as a phantom.
TEST(World, StartupRelistsWhatWentWhileTheControllerWasDown) {
  const sim::Scenario scenario = ChurningScenario();
  sim::World world(scenario, std::filesystem::path());
  State known;
  Pod phantom;
  phantom.ns = "default";
  phantom.name = "gone-1";
  known.cluster.pods.Upsert(PodKey(phantom.ns, phantom.name), phantom);
  Node node;
  node.name = "gone-node";
  known.cluster.nodes[node.name] = node;
  const std::vector<Event> events = world.StartupEvents(known);
  EXPECT_NE(std::find(events.begin(), events.end(), Event{PodDeleted{"default", "gone-1"}}),
            events.end());
  EXPECT_NE(std::find(events.begin(), events.end(), Event{NodeDeleted{"gone-node"}}), events.end());
  const std::vector<Event> fresh = world.StartupEvents(State{});
  EXPECT_TRUE(std::none_of(fresh.begin(), fresh.end(), [](const Event& e) {
    return std::holds_alternative<PodDeleted>(e) || std::holds_alternative<NodeDeleted>(e);
  }));
}

}  // namespace tenon::testing
