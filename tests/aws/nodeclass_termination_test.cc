// The EC2NodeClass termination of `tenon run` (controller::CloudSource, as `tenon run` builds it)
// against moto and the test API server, with the expectations of Karpenter's EC2NodeClass
// termination controller: every EC2NodeClass gets the finalizer karpenter.k8s.aws/termination;
// a deleted one waits, with a WaitingOnNodeClaimTermination Event, while a NodeClaim uses it;
// then the launch templates and the instance profile tenon made for it are deleted and the
// finalizer removed. An instance profile the user named in spec.instanceProfile, and what other
// EC2NodeClasses use, are left alone. A dry run (read-only) adds and removes nothing.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <functional>
#include <nlohmann/json.hpp>
#include <thread>

#include "adapters/aws/ec2.h"
#include "adapters/aws/iam.h"
#include "adapters/controller/cloud.h"
#include "adapters/kube/client.h"
#include "tests/aws/launch.h"
#include "tests/aws/moto.h"
#include "tests/kube/apiserver.h"
#include "tests/support/eventually.h"

namespace tenon::controller {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;

constexpr char kCluster[] = "term";
constexpr char kRole[] = "TermNodeRole";
constexpr char kNodeClasses[] = "/apis/karpenter.k8s.aws/v1/ec2nodeclasses";
constexpr char kNodeClaims[] = "/apis/karpenter.sh/v1/nodeclaims";
constexpr char kEvents[] = "/api/v1/namespaces/default/events";
constexpr auto kPatience = std::chrono::seconds(30);

bool Eventually(const std::function<bool()>& done) {
  return testing::Eventually(done, kPatience);
}

// moto with a tagged subnet per zone, a tagged security group, the node role and an image; the
// test API server; and a client of each for the test's own setup and checks.
struct World {
  World() {
    aws::testing::MakeSecurityGroup(aws, aws::testing::MakeNetwork(aws, kCluster).vpc, "nodes",
                                    kCluster);
    aws::testing::MakeNodeRole(aws, kRole);
    const auto images = ec2.DescribeImages({aws::SelectorTerm{{}, "", "", "amazon"}});
    EXPECT_TRUE(images.ok()) << images.error.message;
    for (const aws::Image& image : images.ok() ? *images.value : std::vector<aws::Image>{}) {
      if (image.arch == "amd64" && ami.empty()) ami = image.id;
    }
    EXPECT_FALSE(ami.empty());
    // The controller's credentials come from the environment, as in a pod without IRSA.
    ::setenv("AWS_ACCESS_KEY_ID", "AKIATENONTERMINATION", 1);
    ::setenv("AWS_SECRET_ACCESS_KEY", "termination-secret", 1);
    InstanceType m5;
    m5.name = "m5.large";
    m5.arch = "amd64";
    state.catalog = Catalog{{"m5.large", CatalogEntry{m5, {}, {}}}};
  }

  CloudOptions Options() const {
    CloudOptions options;
    options.aws.region = "us-east-1";
    for (const char* service : {"ec2", "ssm", "iam", "sts"}) {
      options.aws.endpoints[service] = moto.url();
    }
    options.cluster_name = kCluster;
    options.cluster_endpoint = "https://term.example";
    options.cluster_ca_base64 = "Y2E=";
    options.kubernetes_version = "1.31";
    options.refresh_catalog = false;
    options.gc_every = std::chrono::hours(1);
    options.nodeclass_every = milliseconds(200);
    options.retry = milliseconds(200);
    return options;
  }

  json NodeClass(const std::string& name, const json& identity) const {
    const json selector = json::array({{{"tags", {{"karpenter.sh/discovery", kCluster}}}}});
    json spec = {{"amiFamily", "AL2023"},
                 {"amiSelectorTerms", json::array({{{"id", ami}}})},
                 {"subnetSelectorTerms", selector},
                 {"securityGroupSelectorTerms", selector}};
    spec.update(identity);
    return {{"apiVersion", "karpenter.k8s.aws/v1"},
            {"kind", "EC2NodeClass"},
            {"metadata", {{"name", name}}},
            {"spec", spec}};
  }

  json Get(const std::string& nodeclass) {
    const auto answer = admin.Get(std::string(kNodeClasses) + "/" + nodeclass);
    return answer.status == 200 ? answer.Json() : json();
  }
  bool HasFinalizer(const std::string& nodeclass) {
    const json object = Get(nodeclass);
    if (object.is_null()) return false;
    for (const auto& f : object["metadata"].value("finalizers", json::array())) {
      if (f == kNodeClassFinalizer) return true;
    }
    return false;
  }
  // The launch templates tenon made for `nodeclass`, by the tags it gives them.
  std::size_t Templates(const std::string& nodeclass) {
    const auto found =
        ec2.DescribeLaunchTemplatesByTags(aws::NodeClassOwnerTags(kCluster, nodeclass));
    EXPECT_TRUE(found.ok()) << found.error.message;
    return found.ok() ? found.value->size() : 0;
  }
  bool ProfileExists(const std::string& name) { return iam.GetInstanceProfile(name).ok(); }

  aws::testing::Moto moto;
  kube::testing::ApiServer api;
  kube::testing::Client admin{api.port()};
  aws::CurlTransport transport;
  aws::StaticProvider credentials{aws::testing::DummyCredentials()};
  aws::AwsClient aws{transport, &credentials,
                     aws::ClientOptions{.region = "us-east-1",
                                        .endpoints = {{"ec2", moto.url()}, {"iam", moto.url()}}},
                     aws::testing::FastHooks()};
  aws::Ec2 ec2{aws};
  aws::Iam iam{aws};
  std::string ami;
  State state;
};

kube::Client KubeClient(int port) {
  kube::ClusterConfig config;
  config.server = "http://127.0.0.1:" + std::to_string(port);
  config.token = kube::testing::kToken;
  return kube::Client(config);
}

json NodeClaim(const std::string& name, const std::string& nodeclass) {
  return {{"apiVersion", "karpenter.sh/v1"},
          {"kind", "NodeClaim"},
          {"metadata", {{"name", name}}},
          {"spec",
           {{"nodeClassRef",
             {{"group", "karpenter.k8s.aws"}, {"kind", "EC2NodeClass"}, {"name", nodeclass}}},
            {"requirements", json::array()}}}};
}

std::vector<json> WaitingEvents(kube::testing::Client& admin, const std::string& nodeclass) {
  std::vector<json> out;
  const auto listed = admin.Get(kEvents);
  if (listed.status != 200) return out;
  const json list = listed.Json();
  for (const auto& e : list["items"]) {
    if (e.value("reason", "") == "WaitingOnNodeClaimTermination" &&
        e["involvedObject"].value("name", "") == nodeclass) {
      out.push_back(e);
    }
  }
  return out;
}

TEST(AwsNodeClassTermination, WaitsForItsNodeClaimsThenDeletesWhatTenonMadeForIt) {
  World w;
  // The user's own instance profile, named in spec.instanceProfile of "byprofile".
  ASSERT_TRUE(w.iam.EnsureInstanceProfile("users-profile", kRole, {}).ok());
  for (const auto& [name, identity] : std::vector<std::pair<std::string, json>>{
           {"default", {{"role", kRole}}},
           {"gpu", {{"role", kRole}}},
           {"byprofile", {{"instanceProfile", "users-profile"}}}}) {
    ASSERT_EQ(w.admin.Post(kNodeClasses, w.NodeClass(name, identity)).status, 201) << name;
  }
  kube::Client kube = KubeClient(w.api.port());
  CloudSource cloud(w.Options(), kube, [] { return true; });
  cloud.Start();

  // Each gets the finalizer; the two with a role get a profile of tenon's.
  ASSERT_TRUE(Eventually([&] {
    return w.HasFinalizer("default") && w.HasFinalizer("gpu") && w.HasFinalizer("byprofile") &&
           w.ProfileExists("term_default") && w.ProfileExists("term_gpu") &&
           cloud.nodeclasses_resolved() >= 3;
  }));
  // A launch with each, as the core fills it in from what the cloud resolved, makes its launch
  // template.
  const std::vector<Event> published = cloud.Drain();
  CommandId id{1};
  for (const std::string nodeclass : {"default", "gpu", "byprofile"}) {
    const LaunchInstances launch =
        aws::testing::CoreLaunch(w.state, published, kCluster, nodeclass + "-a1b2c", nodeclass);
    ASSERT_EQ(launch.overrides.size(), 1u) << nodeclass;
    const std::vector<Event> launched = cloud.Execute(Command{id, Seq{id.value}, launch});
    ASSERT_EQ(launched.size(), 1u);
    EXPECT_TRUE(std::holds_alternative<FleetLaunched>(launched[0])) << nodeclass;
    id = CommandId{id.value + 1};
    EXPECT_EQ(w.Templates(nodeclass), 1u) << nodeclass;
  }
  ASSERT_EQ(w.admin.Post(kNodeClaims, NodeClaim("default-a1b2c", "default")).status, 201);
  ASSERT_EQ(w.admin.Post(kNodeClaims, NodeClaim("default-d3e4f", "default")).status, 201);
  ASSERT_EQ(w.admin.Post(kNodeClaims, NodeClaim("gpu-a1b2c", "gpu")).status, 201);

  // Deleted while two NodeClaims use it: it waits, and says on which.
  ASSERT_EQ(w.admin.Delete(std::string(kNodeClasses) + "/default").status, 200);
  cloud.PokeNodeClasses();
  ASSERT_TRUE(Eventually([&] { return !WaitingEvents(w.admin, "default").empty(); }))
      << w.admin.Get(kEvents).body;
  const json event = WaitingEvents(w.admin, "default").front();
  EXPECT_EQ(event.value("type", ""), "Normal");
  EXPECT_EQ(event.value("message", ""),
            "Waiting on NodeClaim termination for default-a1b2c, default-d3e4f");
  EXPECT_EQ(event["involvedObject"].value("kind", ""), "EC2NodeClass");
  const json held = w.Get("default");
  ASSERT_FALSE(held.is_null()) << "the finalizer holds it";
  EXPECT_TRUE(held["metadata"].contains("deletionTimestamp"));
  EXPECT_TRUE(w.ProfileExists("term_default"));
  EXPECT_EQ(w.Templates("default"), 1u);

  // One NodeClaim gone: still waiting, now on the other alone.
  ASSERT_EQ(w.admin.Delete(std::string(kNodeClaims) + "/default-a1b2c").status, 200);
  ASSERT_TRUE(Eventually([&] {
    for (const json& e : WaitingEvents(w.admin, "default")) {
      if (e.value("message", "") == "Waiting on NodeClaim termination for default-d3e4f") {
        return true;
      }
    }
    return false;
  }));
  EXPECT_FALSE(w.Get("default").is_null());
  EXPECT_TRUE(w.ProfileExists("term_default"));

  // The last one gone: the profile and the launch templates go, then the EC2NodeClass.
  ASSERT_EQ(w.admin.Delete(std::string(kNodeClaims) + "/default-d3e4f").status, 200);
  ASSERT_TRUE(Eventually([&] { return w.Get("default").is_null(); }));
  EXPECT_FALSE(w.ProfileExists("term_default"));
  EXPECT_EQ(w.Templates("default"), 0u);
  // The other EC2NodeClasses keep theirs.
  EXPECT_TRUE(w.ProfileExists("term_gpu"));
  EXPECT_EQ(w.Templates("gpu"), 1u);
  EXPECT_TRUE(w.HasFinalizer("gpu"));

  // The user's instance profile stays with its role; tenon's launch template goes.
  ASSERT_EQ(w.admin.Delete(std::string(kNodeClasses) + "/byprofile").status, 200);
  ASSERT_TRUE(Eventually([&] { return w.Get("byprofile").is_null(); }));
  const auto users = w.iam.GetInstanceProfile("users-profile");
  ASSERT_TRUE(users.ok()) << users.error.message;
  EXPECT_EQ(users.value->roles, std::vector<std::string>{kRole});
  EXPECT_EQ(w.Templates("byprofile"), 0u);
  cloud.Stop();
}

// A dry run writes nothing to the cluster and deletes nothing in AWS: no finalizer is added,
// and a deleted EC2NodeClass holding the finalizer keeps it and its launch template.
TEST(AwsNodeClassTermination, ReadOnlyAddsNoFinalizerAndDeletesNothing) {
  World w;
  ASSERT_EQ(w.admin.Post(kNodeClasses, w.NodeClass("default", {{"role", kRole}})).status, 201);
  json held = w.NodeClass("held", {{"role", kRole}});
  held["metadata"]["finalizers"] = {kNodeClassFinalizer};
  ASSERT_EQ(w.admin.Post(kNodeClasses, held).status, 201);
  ASSERT_EQ(w.admin.Delete(std::string(kNodeClasses) + "/held").status, 200);
  aws::LaunchTemplateSpec spec;
  spec.name = aws::LaunchTemplateName(kCluster, "held-hash", w.ami);
  spec.image_id = w.ami;
  spec.tags = aws::NodeClassOwnerTags(kCluster, "held");
  ASSERT_TRUE(w.ec2.CreateLaunchTemplate(spec).ok());

  kube::Client kube = KubeClient(w.api.port());
  CloudOptions options = w.Options();
  options.read_only = true;
  CloudSource cloud(options, kube, [] { return true; });
  cloud.Start();
  // Three passes over both.
  ASSERT_TRUE(Eventually([&] { return cloud.nodeclasses_resolved() >= 3; }));
  cloud.Stop();
  EXPECT_FALSE(w.HasFinalizer("default"));
  EXPECT_TRUE(w.HasFinalizer("held"));
  EXPECT_EQ(w.Templates("held"), 1u);
  EXPECT_TRUE(WaitingEvents(w.admin, "held").empty());
}

}  // namespace
}  // namespace tenon::controller
