// The simulated world's own bookkeeping, checked against a recount of what it holds.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "adapters/runtime/runtime.h"
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
  sim::World world(scenario, dir.path() / "world.json");
  runtime::Runtime runtime(*log, world, runtime::Options{});
  runtime.Recover();
  runtime.Ingest(world.StartupEvents(runtime.state()));
  std::size_t ticks_with_bound_pods = 0;
  for (Nanos t = scenario.start + scenario.tick; t <= scenario.start + scenario.duration;
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
  sim::World reloaded(scenario, dir.path() / "world.json");
  ASSERT_TRUE(reloaded.Load());
  EXPECT_EQ(reloaded.pods_on_nodes_for_test(), Recount(world));
  EXPECT_EQ(reloaded.pods_by_owner_for_test(), RecountOwners(world));
}

// The world file is read as outside input: a number that is no value of its enum, a phase no
// pod has, or a registration health other than -1, 0 and 1 is an error naming the file and the
// field, never a value made up.
TEST(World, AWorldFileValueOutOfRangeIsAnErrorNamingTheField) {
  TempDir dir;
  const sim::Scenario scenario = ChurningScenario();
  const auto file = dir.path() / "world.json";
  {
    sim::World world(scenario, file);
    world.Advance(scenario.start + scenario.tick);
    world.Save();
  }
  std::ifstream in(file);
  const nlohmann::json saved = nlohmann::json::parse(in);
  ASSERT_FALSE(saved.at("pods").empty());
  {
    sim::World reloaded(scenario, file);
    ASSERT_TRUE(reloaded.Load());  // As saved, it loads.
  }
  const nlohmann::json node = {{"name", "node-1"},
                               {"provider", ""},
                               {"labels", nlohmann::json::object()},
                               {"taints", {{"dedicated", "gpu", 3}}},
                               {"ready", true},
                               {"allocatable", {0, 0, 0}},
                               {"created", 0},
                               {"doNotDisrupt", false}};
  const std::vector<std::pair<std::function<void(nlohmann::json&)>, std::string>> damages = {
      {[](nlohmann::json& j) {
         j["timers"] = {{0, 1, 9, "i-1", 0}};
       },
       "timers[0][2]: 9 is not a timer kind (0 to 4)"},
      {[](nlohmann::json& j) {
         j["timers"] = {{0, 1, -1, "i-1", 0}};
       },
       "timers[0][2]: -1 is not a timer kind (0 to 4)"},
      {[&](nlohmann::json& j) { j["nodes"] = nlohmann::json::array({node}); },
       "nodes[0].taints[0][2]: 3 is not a taint effect (0 to 2)"},
      {[](nlohmann::json& j) {
         j["pods"][0]["tolerations"] = {{"k", true, "", 7}};
       },
       "pods[0].tolerations[0][3]: 7 is not a taint effect (0 to 2)"},
      {[](nlohmann::json& j) { j["pods"][0]["phase"] = "Sleeping"; },
       "pods[0].phase: \"Sleeping\" is not a pod phase"},
      {[](nlohmann::json& j) {
         j["volumes"] = {{"pv-1", "ebs.csi.aws.com", {{{"zone", 6, {"a"}}}}}};
       },
       "volumes[0][2][0][0][1]: 6 is not an operator (0 to 5)"},
      {[](nlohmann::json& j) {
         j["pool_status"]["default"] = {2, 0};
       },
       "pool_status.default[0]: 2 is not -1, 0 or 1"},
  };
  for (const auto& [damage, field] : damages) {
    nlohmann::json damaged = saved;
    damage(damaged);
    std::ofstream(file, std::ios::trunc) << damaged.dump();
    sim::World world(scenario, file);
    try {
      world.Load();
      ADD_FAILURE() << "loaded a world file with " << field;
    } catch (const sim::ScenarioError& e) {
      EXPECT_EQ(std::string(e.what()), file.string() + ": damaged world file: " + field);
    }
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
  known.pods.Upsert(PodKey(phantom.ns, phantom.name), phantom);
  Node node;
  node.name = "gone-node";
  known.nodes[node.name] = node;
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
