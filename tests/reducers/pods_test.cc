// PodTable: its views follow every change to a pod, survive copies, and never enter equality.
#include <gtest/gtest.h>

#include "reducers/core.h"

namespace tenon {
namespace {

Pod MakePod(const std::string& name, const std::string& node) {
  Pod pod;
  pod.ns = "default";
  pod.name = name;
  pod.node_name = node;
  pod.phase = node.empty() ? PodPhase::kPending : PodPhase::kRunning;
  pod.unschedulable = node.empty();
  pod.owner_kind = "ReplicaSet";
  return pod;
}

template <class View>
std::vector<std::string> Keys(const View& view) {
  std::vector<std::string> keys;
  for (const auto& [key, pod] : view) keys.emplace_back(key);
  return keys;
}

using Names = std::vector<std::string>;

TEST(PodTable, ViewsFollowBindingsMovesAndDeletions) {
  PodTable pods;
  pods.Upsert("default/b", MakePod("b", ""));
  pods.Upsert("default/a", MakePod("a", ""));
  EXPECT_EQ(Keys(pods.Provisionable()), (Names{"default/a", "default/b"}));
  EXPECT_TRUE(pods.OnNode("n1").pods.empty());

  pods.Upsert("default/b", MakePod("b", "n1"));  // Bound.
  EXPECT_EQ(Keys(pods.Provisionable()), (Names{"default/a"}));
  EXPECT_EQ(Keys(pods.OnNode("n1").pods), (Names{"default/b"}));

  Pod anti = MakePod("c", "n1");
  PodConstraints constraints;
  constraints.pod_anti_affinity_required.push_back({});
  anti.constraints = Shared<PodConstraints>(constraints);
  pods.Upsert("default/c", anti);
  EXPECT_EQ(Keys(pods.OnNode("n1").pods), (Names{"default/b", "default/c"}));
  EXPECT_EQ(Keys(pods.BoundWithAntiAffinity()), (Names{"default/c"}));

  anti.node_name = "n2";  // Moved: off n1, onto n2.
  pods.Upsert("default/c", anti);
  EXPECT_EQ(Keys(pods.OnNode("n1").pods), (Names{"default/b"}));
  EXPECT_EQ(Keys(pods.OnNode("n2").pods), (Names{"default/c"}));
  EXPECT_EQ(pods.OnNode("n2").pods.begin()->second, &pods.at("default/c"));

  pods.Erase(pods.find("default/c"));
  EXPECT_TRUE(pods.OnNode("n2").pods.empty());
  EXPECT_TRUE(pods.BoundWithAntiAffinity().empty());
  EXPECT_EQ(pods.size(), 2u);
}

// Each node's sum of active requests follows binds, moves, completion and deletion.
TEST(PodTable, NodeSumsTheActivePodsRequests) {
  PodTable pods;
  Pod a = MakePod("a", "n1");
  a.requests.cpu = Millicores{500};
  a.requests.extended["nvidia.com/gpu"] = 1;
  Pod b = MakePod("b", "n1");
  b.requests.cpu = Millicores{250};
  PodConstraints with_port;
  with_port.host_ports.push_back({80, "TCP", ""});
  b.constraints = Shared<PodConstraints>(with_port);
  pods.Upsert("default/a", a);
  pods.Upsert("default/b", b);
  EXPECT_EQ(pods.OnNode("n1").active.cpu, Millicores{750});
  EXPECT_EQ(pods.OnNode("n1").active.pods, 2);
  EXPECT_EQ(pods.OnNode("n1").active.extended.at("nvidia.com/gpu"), 1);
  EXPECT_EQ(pods.OnNode("n1").ports_or_volumes, 1u);

  a.phase = PodPhase::kSucceeded;  // Done: holds nothing, still bound.
  pods.Upsert("default/a", a);
  EXPECT_EQ(pods.OnNode("n1").active.cpu, Millicores{250});
  EXPECT_TRUE(pods.OnNode("n1").active.extended.empty());
  EXPECT_EQ(pods.OnNode("n1").pods.size(), 2u);

  b.node_name = "n2";
  pods.Upsert("default/b", b);
  EXPECT_EQ(pods.OnNode("n1").active.pods, 0);
  EXPECT_EQ(pods.OnNode("n2").active.cpu, Millicores{250});
  EXPECT_EQ(pods.OnNode("n2").ports_or_volumes, 1u);
  pods.Erase(pods.find("default/b"));
  EXPECT_EQ(pods.OnNode("n2").active.pods, 0);
  EXPECT_EQ(pods.OnNode("n2").ports_or_volumes, 0u);
}

// A copied State's views point into the copy: the original can go away.
TEST(PodTable, CopyIndexesItsOwnPods) {
  auto original = std::make_unique<PodTable>();
  original->Upsert("default/a", MakePod("a", "n1"));
  original->Upsert("default/p", MakePod("p", ""));
  PodTable copy = *original;
  PodTable assigned;
  assigned.Upsert("default/z", MakePod("z", "n9"));
  assigned = *original;
  original.reset();
  for (const PodTable* table : {&copy, &assigned}) {
    ASSERT_EQ(Keys(table->OnNode("n1").pods), (Names{"default/a"}));
    EXPECT_EQ(table->OnNode("n1").pods.begin()->second, &table->at("default/a"));
    EXPECT_EQ(Keys(table->Provisionable()), (Names{"default/p"}));
    EXPECT_TRUE(table->OnNode("n9").pods.empty());
  }
  EXPECT_EQ(copy, assigned);
}

// Disruption's view of a node: the pods that would move (not DaemonSet pods, not finished
// ones) in key order, how many carry do-not-disrupt, the sum of their eviction costs.
TEST(PodTable, NodeKeepsWhatDisruptionReads) {
  PodTable pods;
  Pod daemon = MakePod("d", "n1");
  daemon.owner_kind = "DaemonSet";
  Pod b = MakePod("b", "n1");
  b.deletion_cost = 1000;
  Pod a = MakePod("a", "n1");
  a.do_not_disrupt = true;
  a.priority = 10;
  pods.Upsert("default/d", daemon);
  pods.Upsert("default/b", b);
  pods.Upsert("default/a", a);
  const PodTable::Bound& n1 = pods.OnNode("n1");
  ASSERT_EQ(n1.reschedulable.size(), 2u);
  EXPECT_EQ(n1.reschedulable[0], &pods.at("default/a"));
  EXPECT_EQ(n1.reschedulable[1], &pods.at("default/b"));
  EXPECT_EQ(n1.do_not_disrupt, 1u);
  constexpr std::int64_t kUnit = std::int64_t{1} << 27;
  EXPECT_EQ(n1.eviction_cost, (kUnit + 40) + (kUnit + 1000));

  a.phase = PodPhase::kSucceeded;  // Finished: nothing to move, nothing protected.
  pods.Upsert("default/a", a);
  ASSERT_EQ(pods.OnNode("n1").reschedulable.size(), 1u);
  EXPECT_EQ(pods.OnNode("n1").reschedulable[0], &pods.at("default/b"));
  EXPECT_EQ(pods.OnNode("n1").do_not_disrupt, 0u);
  EXPECT_EQ(pods.OnNode("n1").eviction_cost, kUnit + 1000);

  pods.Erase(pods.find("default/b"));
  EXPECT_TRUE(pods.OnNode("n1").reschedulable.empty());
  EXPECT_EQ(pods.OnNode("n1").eviction_cost, 0);
}

}  // namespace
}  // namespace tenon
