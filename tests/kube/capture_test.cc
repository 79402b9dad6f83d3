// `tenon capture` against the test API server: a cluster with Karpenter-managed and unmanaged
// nodes, a Deployment (through its ReplicaSet), a DaemonSet, a bare pod and a finished Job pod
// is captured, and the scenario it writes simulates to the live cluster's pod placement.
#include "adapters/kube/capture.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <string>

#include "adapters/kube/objects.h"
#include "adapters/sim/scenario.h"
#include "adapters/sim/simulator.h"
#include "tests/kube/apiserver.h"
#include "tests/support/temp_dir.h"

namespace tenon::kube {
namespace {

using nlohmann::json;
using tenon::testing::TempDir;
using testing::ApiServer;

constexpr char kCatalog[] = TENON_SOURCE_DIR "/examples/catalogs/small.json";

class Cluster {
 public:
  explicit Cluster(int port) : api_(port) {}

  void Create(const std::string& path, const json& object, const json& status = nullptr) {
    const auto created = api_.Post(path, object);
    ASSERT_EQ(created.status, 201) << created.body;
    if (status.is_null()) return;
    const std::string name = object["metadata"]["name"];
    const auto patched = api_.MergePatch(path + "/" + name + "/status", {{"status", status}});
    ASSERT_EQ(patched.status, 200) << patched.body;
  }

  // A pod of `owner` (kind, name, uid) bound to `node`, Running.
  void RunPod(const std::string& name, const json& owner, const std::string& node,
              const std::string& phase = "Running") {
    json pod = {{"metadata",
                 {{"name", name},
                  {"namespace", "default"},
                  {"labels", {{"app", owner.is_null() ? json(name) : owner["app"]}}}}},
                {"spec",
                 {{"containers",
                   {{{"name", "main"},
                     {"image", "nginx"},
                     {"resources", {{"requests", {{"cpu", "250m"}, {"memory", "256Mi"}}}}}}}}}}};
    if (!owner.is_null()) {
      pod["metadata"]["ownerReferences"] = {{{"apiVersion", "apps/v1"},
                                             {"kind", owner["kind"]},
                                             {"name", owner["name"]},
                                             {"uid", owner["uid"]},
                                             {"controller", true}}};
    }
    const std::string path = "/api/v1/namespaces/default/pods";
    ASSERT_EQ(api_.Post(path, pod).status, 201);
    if (node.empty()) return;
    const json binding = {{"kind", "Binding"}, {"target", {{"kind", "Node"}, {"name", node}}}};
    ASSERT_EQ(api_.Post(path + "/" + name + "/binding", binding).status, 201);
    const auto running =
        api_.MergePatch(path + "/" + name + "/status", {{"status", {{"phase", phase}}}});
    ASSERT_EQ(running.status, 200) << running.body;
  }

  std::string Uid(const std::string& path) {
    return api_.Send("GET", path).Json()["metadata"]["uid"];
  }

 private:
  testing::Client api_;
};

json NodeObject(const std::string& name, const std::string& zone, const std::string& type,
                const std::string& pool, const std::string& instance) {
  json labels = {{"kubernetes.io/hostname", name},
                 {"kubernetes.io/os", "linux"},
                 {"kubernetes.io/arch", "amd64"},
                 {"node.kubernetes.io/instance-type", type},
                 {"topology.kubernetes.io/zone", zone}};
  if (!pool.empty()) {
    labels["karpenter.sh/nodepool"] = pool;
    labels["karpenter.sh/capacity-type"] = "on-demand";
    labels["karpenter.sh/registered"] = "true";
    labels["karpenter.sh/initialized"] = "true";
  }
  return {{"metadata", {{"name", name}, {"labels", labels}}},
          {"spec", {{"providerID", "aws:///" + zone + "/" + instance}}}};
}

json NodeStatus() {
  return {{"allocatable", {{"cpu", "1930m"}, {"memory", "7Gi"}, {"pods", "29"}}},
          {"capacity", {{"cpu", "2"}, {"memory", "8Gi"}, {"pods", "29"}}},
          {"conditions", {{{"type", "Ready"}, {"status", "True"}}}}};
}

json ClaimObject(const std::string& name, const std::string& zone, const std::string& type) {
  return {{"metadata",
           {{"name", name},
            {"labels",
             {{"karpenter.sh/nodepool", "general"},
              {"node.kubernetes.io/instance-type", type},
              {"topology.kubernetes.io/zone", zone},
              {"karpenter.sh/capacity-type", "on-demand"}}}}},
          {"spec",
           {{"nodeClassRef",
             {{"group", "karpenter.k8s.aws"}, {"kind", "EC2NodeClass"}, {"name", "default"}}},
            {"requirements",
             {{{"key", "node.kubernetes.io/instance-type"},
               {"operator", "In"},
               {"values", {type}}}}}}}};
}

json ClaimStatus(const std::string& node, const std::string& zone, const std::string& instance) {
  return {{"providerID", "aws:///" + zone + "/" + instance},
          {"nodeName", node},
          {"imageID", "ami-0123456789abcdef0"},
          {"allocatable", {{"cpu", "1930m"}, {"memory", "7Gi"}, {"pods", "29"}}},
          {"conditions",
           {{{"type", "Launched"}, {"status", "True"}},
            {{"type", "Registered"}, {"status", "True"}},
            {{"type", "Initialized"}, {"status", "True"}}}}};
}

// The cluster every test captures: where each running pod is.
std::map<std::string, std::string> BuildCluster(Cluster& c) {
  c.Create(
      "/apis/karpenter.k8s.aws/v1/ec2nodeclasses",
      {{"metadata", {{"name", "default"}}},
       {"spec",
        {{"role", "KarpenterNodeRole-test"},
         {"amiSelectorTerms", {{{"alias", "al2023@latest"}}}},
         {"subnetSelectorTerms", {{{"tags", {{"karpenter.sh/discovery", "test"}}}}}},
         {"securityGroupSelectorTerms", {{{"tags", {{"karpenter.sh/discovery", "test"}}}}}}}}});
  // No disruption: what is compared is where pods are, not what consolidation would make of it.
  c.Create("/apis/karpenter.sh/v1/nodepools",
           {{"metadata", {{"name", "general"}}},
            {"spec",
             {{"template",
               {{"spec",
                 {{"nodeClassRef",
                   {{"group", "karpenter.k8s.aws"}, {"kind", "EC2NodeClass"}, {"name", "default"}}},
                  {"requirements",
                   {{{"key", "karpenter.k8s.aws/instance-category"},
                     {"operator", "In"},
                     {"values", {"c", "m"}}}}}}}}},
              {"disruption", {{"budgets", {{{"nodes", "0"}}}}}}}}});
  const std::map<std::string, std::pair<std::string, std::string>> managed{
      {"ip-10-0-1-10.ec2.internal", {"us-east-1a", "i-0aaaaaaaaaaaaaaa1"}},
      {"ip-10-0-2-20.ec2.internal", {"us-east-1b", "i-0bbbbbbbbbbbbbbb2"}}};
  int n = 0;
  for (const auto& [node, where] : managed) {
    const auto& [zone, instance] = where;
    c.Create("/api/v1/nodes", NodeObject(node, zone, "m5.large", "general", instance),
             NodeStatus());
    c.Create("/apis/karpenter.sh/v1/nodeclaims",
             ClaimObject("general-" + std::to_string(++n), zone, "m5.large"),
             ClaimStatus(node, zone, instance));
  }
  const std::string unmanaged = "static-1";
  c.Create("/api/v1/nodes",
           NodeObject(unmanaged, "us-east-1c", "m5.large", "", "i-0ccccccccccccccc3"),
           NodeStatus());

  const json template_spec = {
      {"metadata", {{"labels", {{"app", "web"}}}}},
      {"spec",
       {{"containers",
         {{{"name", "main"},
           {"image", "nginx"},
           {"resources", {{"requests", {{"cpu", "250m"}, {"memory", "256Mi"}}}}}}}}}}};
  c.Create("/apis/apps/v1/namespaces/default/deployments",
           {{"metadata", {{"name", "web"}, {"namespace", "default"}}},
            {"spec",
             {{"replicas", 5},
              {"selector", {{"matchLabels", {{"app", "web"}}}}},
              {"template", template_spec}}}});
  const std::string deployment_uid = c.Uid("/apis/apps/v1/namespaces/default/deployments/web");
  c.Create("/apis/apps/v1/namespaces/default/replicasets",
           {{"metadata",
             {{"name", "web-6d4f9"},
              {"namespace", "default"},
              {"ownerReferences",
               {{{"apiVersion", "apps/v1"},
                 {"kind", "Deployment"},
                 {"name", "web"},
                 {"uid", deployment_uid},
                 {"controller", true}}}}}},
            {"spec",
             {{"replicas", 5},
              {"selector", {{"matchLabels", {{"app", "web"}}}}},
              {"template", template_spec}}}});
  const json rs = {{"kind", "ReplicaSet"},
                   {"name", "web-6d4f9"},
                   {"app", "web"},
                   {"uid", c.Uid("/apis/apps/v1/namespaces/default/replicasets/web-6d4f9")}};
  std::map<std::string, std::string> placed{{"web-6d4f9-aaaaa", "ip-10-0-1-10.ec2.internal"},
                                            {"web-6d4f9-bbbbb", "ip-10-0-1-10.ec2.internal"},
                                            {"web-6d4f9-ccccc", "ip-10-0-2-20.ec2.internal"},
                                            {"web-6d4f9-ddddd", unmanaged}};
  for (const auto& [pod, node] : placed) c.RunPod(pod, rs, node);
  c.RunPod("web-6d4f9-eeeee", rs, "");  // Pending: the simulated ReplicaSet makes it anew.

  c.Create(
      "/apis/apps/v1/namespaces/default/daemonsets",
      {{"metadata", {{"name", "agent"}, {"namespace", "default"}}},
       {"spec",
        {{"selector", {{"matchLabels", {{"app", "agent"}}}}},
         {"template",
          {{"metadata", {{"labels", {{"app", "agent"}}}}},
           {"spec",
            {{"containers",
              {{{"name", "agent"},
                {"image", "agent"},
                {"resources", {{"requests", {{"cpu", "100m"}, {"memory", "128Mi"}}}}}}}}}}}}}}});
  const json ds = {{"kind", "DaemonSet"},
                   {"name", "agent"},
                   {"app", "agent"},
                   {"uid", c.Uid("/apis/apps/v1/namespaces/default/daemonsets/agent")}};
  int d = 0;
  for (const std::string& node : {std::string("ip-10-0-1-10.ec2.internal"),
                                  std::string("ip-10-0-2-20.ec2.internal"), unmanaged}) {
    const std::string pod = "agent-" + std::to_string(++d);
    c.RunPod(pod, ds, node);
    placed[pod] = node;
  }
  c.RunPod("debug", nullptr, unmanaged);
  placed["debug"] = unmanaged;
  c.RunPod("report-x1", nullptr, unmanaged, "Succeeded");  // Finished: not captured.
  c.RunPod("late", nullptr, "joined-after-the-listing");   // Its node was not listed.
  return placed;
}

CaptureOptions Options(const std::filesystem::path& folder) {
  CaptureOptions options;
  options.folder = folder;
  options.catalog = kCatalog;
  options.start = "2026-11-28T12:00:00Z";
  options.duration = "2m";
  options.page_size = 2;  // Every list takes several pages.
  return options;
}

ClusterConfig Loopback(int port) {
  ClusterConfig config;
  config.server = "http://127.0.0.1:" + std::to_string(port);
  config.token = testing::kToken;
  return config;
}

TEST(Capture, SimulatesToTheLiveClustersPlacement) {
  ApiServer server;
  Cluster cluster(server.port());
  const std::map<std::string, std::string> placed = BuildCluster(cluster);
  ASSERT_FALSE(::testing::Test::HasFailure());
  TempDir dir;
  Client client(Loopback(server.port()));
  const CaptureReport report = Capture(client, Options(dir.path() / "cluster"));
  EXPECT_EQ(report.objects.at("Node"), 3u);
  EXPECT_EQ(report.objects.at("NodeClaim"), 2u);
  EXPECT_EQ(report.objects.at("Pod"), 9u);  // Not the finished one, nor the late one.
  ASSERT_EQ(report.skipped.size(), 1u);
  EXPECT_EQ(report.skipped[0], "1 pods on nodes that joined while the cluster was listed");
  EXPECT_EQ(report.objects.at("ReplicaSet"), 1u);

  const sim::Scenario scenario = sim::LoadScenario(dir.path() / "cluster");
  EXPECT_EQ(scenario.nodeclaims.size(), 2u);
  EXPECT_EQ(scenario.adopted.size(), 4u);  // The running web pods, not the pending one.
  std::map<std::string, std::string> simulated;
  std::size_t web_pods = 0;
  std::size_t nodeclaims = 0;
  sim::SimulateOptions options;
  options.log_dir = dir.path() / "log";
  options.on_end = [&](const sim::World& world) {
    for (const auto& [key, pod] : world.pods()) {
      if (!pod.node_name.empty()) simulated[pod.name] = pod.node_name.str();
    }
    web_pods = static_cast<std::size_t>(world.pods_by_owner_for_test().at("default/web"));
    nodeclaims = world.nodeclaims().size();
  };
  const sim::SimulateReport run = sim::Simulate(scenario, options);
  for (const auto& [pod, node] : placed) {
    EXPECT_EQ(simulated[pod], node) << pod << " ran on " << node;
  }
  EXPECT_EQ(web_pods, 5u);  // Four adopted, one made anew for the pending one.
  // The controller adopted the two NodeClaims; whatever it launched for the pending pod comes on
  // top of them.
  EXPECT_GE(nodeclaims, 2u);
  EXPECT_GE(run.nodeclaims, 2u);
}

TEST(Capture, RefusesAFolderInUseAndLeavesNothingWhenAListFails) {
  ApiServer server;
  TempDir dir;
  Client client(Loopback(server.port()));
  std::filesystem::create_directories(dir.path() / "used");
  std::ofstream(dir.path() / "used" / "keep.txt") << "mine";
  EXPECT_THROW(Capture(client, Options(dir.path() / "used")), CaptureError);
  EXPECT_TRUE(std::filesystem::exists(dir.path() / "used" / "keep.txt"));

  // A token the server refuses: the first list fails and no folder is left behind.
  ClusterConfig wrong = Loopback(server.port());
  wrong.token = "not-the-token";
  Client refused(wrong);
  EXPECT_THROW(Capture(refused, Options(dir.path() / "new")), CaptureError);
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "new"));
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    EXPECT_EQ(entry.path().filename(), "used") << "left behind: " << entry.path();
  }
}

TEST(Capture, YamlKeepsStringsThatLookLikeOtherScalars) {
  const json object = {
      {"metadata",
       {{"name", "n"}, {"labels", {{"a", "true"}, {"b", "1"}, {"c", ""}, {"d", "plain"}}}}},
      {"spec", {{"replicas", 3}, {"paused", false}}}};
  const YAML::Node back = YAML::Load(ToYaml(object));
  for (const char* key : {"a", "b", "c", "d"}) {
    EXPECT_EQ(back["metadata"]["labels"][key].Tag(), std::string(key) == "d" ? "?" : "!") << key;
    EXPECT_EQ(back["metadata"]["labels"][key].as<std::string>(),
              object["metadata"]["labels"][key].get<std::string>());
  }
  EXPECT_EQ(back["spec"]["replicas"].as<int>(), 3);
  EXPECT_EQ(back["spec"]["paused"].as<bool>(), false);
  const json cleaned =
      Cleaned({{"metadata",
                {{"name", "x"},
                 {"managedFields", json::array()},
                 {"resourceVersion", "9"},
                 {"annotations", {{"kubectl.kubernetes.io/last-applied-configuration", "{}"}}}}}},
              "Pod", "v1");
  EXPECT_EQ(cleaned, json({{"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", {{"name", "x"}}}}));
}

}  // namespace
}  // namespace tenon::kube
