// The simulated cluster's kube-scheduler filters, against Kubernetes' documented semantics
// (kube-scheduler's NodeAffinity, InterPodAffinity, PodTopologySpread, NodePorts and
// VolumeBinding plugins). Written without the controller's code: these are the rules the world
// holds the controller to.
#include <gtest/gtest.h>

#include "adapters/sim/kube_scheduler.h"

namespace tenon::testing {
namespace {

struct Cluster {
  std::map<std::string, Node> nodes;
  std::map<std::string, Pod> pods;
  std::map<std::string, sim::PodsOnNode> on_node;
  std::map<std::string, PersistentVolumeClaim> claims;
  std::map<std::string, PersistentVolume> volumes;
  std::map<std::string, StorageClass> storage_classes;

  Node& AddNode(const std::string& name, const std::string& zone, Labels more = {}) {
    Node node;
    node.name = name;
    node.ready = true;
    node.allocatable = {Millicores{4000}, Bytes{8192 * kMebibyte.value}, 110, {}};
    more["kubernetes.io/hostname"] = name;
    more["topology.kubernetes.io/zone"] = zone;
    node.labels = more;
    return nodes[name] = node;
  }
  void Bind(Pod pod, const std::string& node) {
    pod.node_name = node;
    const std::string key = pod.ns.str() + "/" + pod.name;
    on_node[node].pods.insert(key);
    pods[key] = std::move(pod);
  }
  sim::ClusterView View() const {
    bool refuses = false;
    for (const auto& [key, pod] : pods) refuses = refuses || sim::RefusesNeighbours(pod);
    return {nodes, pods, on_node, claims, volumes, storage_classes, refuses};
  }
  bool Accepts(const Pod& pod, const std::string& node) const {
    return sim::Accepts(View(), pod, nodes.at(node), nodes.at(node).allocatable);
  }
};

Pod MakePod(const std::string& name, Labels labels, PodConstraints c = {}) {
  Pod pod;
  pod.ns = "default";
  pod.name = name;
  pod.labels = std::move(labels);
  pod.constraints = std::move(c);
  pod.requests.cpu = Millicores{100};
  return pod;
}

PodAffinityTerm Term(const std::string& app, const std::string& key) {
  PodAffinityTerm t;
  t.selector.match_labels["app"] = app;
  t.topology_key = key;
  return t;
}

TEST(SimScheduler, NodeAffinityOperators) {
  Cluster c;
  c.AddNode("a", "z1", {{"size", "8"}, {"team", "web"}});
  auto with = [](Requirement r) {
    PodConstraints pc;
    pc.node_affinity_required.push_back({{std::move(r)}});
    return MakePod("p", {}, pc);
  };
  EXPECT_TRUE(c.Accepts(with({"team", RequirementOp::kIn, {"web", "api"}}), "a"));
  EXPECT_FALSE(c.Accepts(with({"team", RequirementOp::kNotIn, {"web"}}), "a"));
  EXPECT_TRUE(c.Accepts(with({"other", RequirementOp::kNotIn, {"web"}}), "a"));
  EXPECT_TRUE(c.Accepts(with({"team", RequirementOp::kExists, {}}), "a"));
  EXPECT_FALSE(c.Accepts(with({"team", RequirementOp::kDoesNotExist, {}}), "a"));
  EXPECT_TRUE(c.Accepts(with({"size", RequirementOp::kGt, {"4"}}), "a"));
  EXPECT_FALSE(c.Accepts(with({"size", RequirementOp::kLt, {"8"}}), "a"));
  EXPECT_FALSE(c.Accepts(with({"team", RequirementOp::kGt, {"1"}}), "a"));  // Not an integer.
  // Terms are ORed.
  PodConstraints ored;
  ored.node_affinity_required.push_back({{{"team", RequirementOp::kIn, {"db"}}}});
  ored.node_affinity_required.push_back({{{"size", RequirementOp::kIn, {"8"}}}});
  EXPECT_TRUE(c.Accepts(MakePod("p", {}, ored), "a"));
}

TEST(SimScheduler, TaintsAndRoom) {
  Cluster c;
  Node& node = c.AddNode("a", "z1");
  node.taints.push_back({"gpu", "true", TaintEffect::kNoSchedule});
  node.taints.push_back({"soft", "", TaintEffect::kPreferNoSchedule});
  Pod plain = MakePod("p", {});
  EXPECT_FALSE(c.Accepts(plain, "a"));
  PodConstraints tolerant;
  tolerant.tolerations.push_back({"gpu", true, "", std::nullopt});
  EXPECT_TRUE(c.Accepts(MakePod("p", {}, tolerant), "a"));
  Pod big = MakePod("big", {}, tolerant);
  big.requests.cpu = Millicores{4001};
  EXPECT_FALSE(c.Accepts(big, "a"));
}

TEST(SimScheduler, RequiredAntiAffinityBothWays) {
  Cluster c;
  c.AddNode("a", "z1");
  c.AddNode("b", "z1");
  c.AddNode("c", "z2");
  PodConstraints apart;
  apart.pod_anti_affinity_required.push_back(Term("web", "kubernetes.io/hostname"));
  c.Bind(MakePod("web-1", {{"app", "web"}}, apart), "a");
  EXPECT_FALSE(c.Accepts(MakePod("web-2", {{"app", "web"}}, apart), "a"));
  EXPECT_TRUE(c.Accepts(MakePod("web-2", {{"app", "web"}}, apart), "b"));
  // The running pod's anti-affinity refuses a plain pod it selects, by zone here.
  PodConstraints by_zone;
  by_zone.pod_anti_affinity_required.push_back(Term("batch", "topology.kubernetes.io/zone"));
  c.Bind(MakePod("guard", {{"app", "guard"}}, by_zone), "c");
  EXPECT_FALSE(c.Accepts(MakePod("batch-1", {{"app", "batch"}}), "c"));
  EXPECT_TRUE(c.Accepts(MakePod("batch-1", {{"app", "batch"}}), "a"));
  // Another namespace is not selected unless the term names it.
  Pod other = MakePod("web-3", {{"app", "web"}}, apart);
  other.ns = "elsewhere";
  EXPECT_TRUE(c.Accepts(other, "a"));
}

TEST(SimScheduler, RequiredAffinityAndTheFirstPodOfAGroup) {
  Cluster c;
  c.AddNode("a", "z1");
  c.AddNode("b", "z2");
  PodConstraints near_cache;
  near_cache.pod_affinity_required.push_back(Term("cache", "topology.kubernetes.io/zone"));
  // No cache pod anywhere, and the pod is not one: it waits.
  EXPECT_FALSE(c.Accepts(MakePod("web-1", {{"app", "web"}}, near_cache), "a"));
  c.Bind(MakePod("cache-1", {{"app", "cache"}}), "b");
  EXPECT_FALSE(c.Accepts(MakePod("web-1", {{"app", "web"}}, near_cache), "a"));
  EXPECT_TRUE(c.Accepts(MakePod("web-1", {{"app", "web"}}, near_cache), "b"));
  // A pod that selects itself may start the group anywhere.
  PodConstraints together;
  together.pod_affinity_required.push_back(Term("db", "topology.kubernetes.io/zone"));
  EXPECT_TRUE(c.Accepts(MakePod("db-1", {{"app", "db"}}, together), "a"));
  // All namespaces: {} namespaceSelector.
  PodAffinityTerm anywhere = Term("cache", "topology.kubernetes.io/zone");
  anywhere.all_namespaces = true;
  PodConstraints far;
  far.pod_affinity_required.push_back(anywhere);
  Pod outsider = MakePod("x", {}, far);
  outsider.ns = "other";
  EXPECT_TRUE(c.Accepts(outsider, "b"));
}

TEST(SimScheduler, TopologySpreadSkewAndMinDomains) {
  Cluster c;
  c.AddNode("a", "z1");
  c.AddNode("b", "z2");
  c.AddNode("c", "z3");
  TopologySpreadConstraint spread;
  spread.max_skew = 1;
  spread.topology_key = "topology.kubernetes.io/zone";
  spread.selector.match_labels["app"] = "web";
  PodConstraints spreading;
  spreading.topology_spread.push_back(spread);
  c.Bind(MakePod("web-1", {{"app", "web"}}, spreading), "a");
  // z1 has one, z2 and z3 none: another in z1 would make the skew 2.
  EXPECT_FALSE(c.Accepts(MakePod("web-2", {{"app", "web"}}, spreading), "a"));
  EXPECT_TRUE(c.Accepts(MakePod("web-2", {{"app", "web"}}, spreading), "b"));
  // A node without the key is no place for the pod.
  Node& bare = c.nodes["d"] = c.nodes.at("b");
  bare.name = "d";
  bare.labels = Labels{{"kubernetes.io/hostname", "d"}};
  EXPECT_FALSE(c.Accepts(MakePod("web-2", {{"app", "web"}}, spreading), "d"));
  // minDomains above the domains there are: the global minimum counts as 0.
  Cluster one;
  one.AddNode("a", "z1");
  one.AddNode("b", "z2");
  PodConstraints five = spreading;
  five.topology_spread[0].min_domains = 5;
  one.Bind(MakePod("web-1", {{"app", "web"}}, five), "a");
  one.Bind(MakePod("web-2", {{"app", "web"}}, five), "b");
  EXPECT_FALSE(one.Accepts(MakePod("web-3", {{"app", "web"}}, five), "a"));
  EXPECT_TRUE(one.Accepts(MakePod("web-3", {{"app", "web"}}, spreading), "a"));
  // ScheduleAnyway does not filter.
  PodConstraints soft = spreading;
  soft.topology_spread[0].do_not_schedule = false;
  EXPECT_TRUE(c.Accepts(MakePod("web-9", {{"app", "web"}}, soft), "a"));
}

TEST(SimScheduler, HostPortsAndVolumes) {
  Cluster c;
  c.AddNode("a", "z1");
  c.AddNode("b", "z2");
  PodConstraints port;
  port.host_ports.push_back({8080, "TCP", ""});
  c.Bind(MakePod("first", {}, port), "a");
  EXPECT_FALSE(c.Accepts(MakePod("second", {}, port), "a"));
  PodConstraints udp;
  udp.host_ports.push_back({8080, "UDP", ""});
  EXPECT_TRUE(c.Accepts(MakePod("third", {}, udp), "a"));
  // A bound volume in z2, and a claim that does not exist.
  c.volumes["pv-1"] = {
      "pv-1", "ebs.csi.aws.com", {{{{"topology.kubernetes.io/zone", RequirementOp::kIn, {"z2"}}}}}};
  c.claims["default/data"] = {"default", "data", "gp3", "pv-1"};
  PodConstraints with_volume;
  with_volume.volume_claims = {"data"};
  EXPECT_FALSE(c.Accepts(MakePod("db", {}, with_volume), "a"));
  EXPECT_TRUE(c.Accepts(MakePod("db", {}, with_volume), "b"));
  PodConstraints missing;
  missing.volume_claims = {"nope"};
  EXPECT_FALSE(c.Accepts(MakePod("db", {}, missing), "b"));
}

}  // namespace
}  // namespace tenon::testing
