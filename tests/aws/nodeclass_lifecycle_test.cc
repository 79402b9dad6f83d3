// The EC2NodeClass's effects in `tenon run`, each a command of the core (reducers/nodeclass.cc),
// against moto and the test API server, with the expectations of Karpenter's EC2NodeClass
// controller: the resolver only reads (a missing instance profile is reported as
// InstanceProfileNotFound, not made); EnsureInstanceProfile makes it with the role and the
// resolution finds it at once; SetNodeClassFinalizer adds and removes
// karpenter.k8s.aws/termination, keeping other finalizers; DeleteNodeClassResources deletes the
// launch templates and the instance profile tenon made for the EC2NodeClass, and leaves a profile
// named in spec.instanceProfile, one not tagged as tenon's, and other EC2NodeClasses' alone.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>

#include "adapters/aws/ec2.h"
#include "adapters/aws/iam.h"
#include "adapters/controller/cloud.h"
#include "adapters/kube/client.h"
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
      if (f == label::kNodeClassFinalizer) return true;
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
};

kube::Client KubeClient(int port) {
  kube::ClusterConfig config;
  config.server = "http://127.0.0.1:" + std::to_string(port);
  config.token = kube::testing::kToken;
  return kube::Client(config);
}

// The resolution of the EC2NodeClass `name` latest among `events`; nullopt when none.
std::optional<NodeClassResolution> LatestResolution(const std::vector<Event>& events,
                                                    const std::string& name) {
  std::optional<NodeClassResolution> found;
  for (const Event& e : events) {
    if (const auto* r = std::get_if<NodeClassResolved>(&e); r != nullptr && r->nodeclass == name) {
      found = r->resolution;
    }
  }
  return found;
}

bool Succeeded(const std::vector<Event>& results) {
  return results.size() == 1 && std::holds_alternative<CommandSucceeded>(results[0]);
}

TEST(AwsNodeClassLifecycle, ResolverReadsAndTheProfileIsMadeByItsCommand) {
  World w;
  ASSERT_TRUE(w.iam.EnsureInstanceProfile("users-profile", kRole, {}).ok());
  ASSERT_EQ(w.admin.Post(kNodeClasses, w.NodeClass("default", {{"role", kRole}})).status, 201);
  ASSERT_EQ(
      w.admin.Post(kNodeClasses, w.NodeClass("byprofile", {{"instanceProfile", "users-profile"}}))
          .status,
      201);
  kube::Client kube = KubeClient(w.api.port());
  CloudSource cloud(w.Options(), kube, [] { return true; });
  cloud.Start();
  std::vector<Event> seen;
  ASSERT_TRUE(Eventually([&] {
    for (Event& e : cloud.Drain()) seen.push_back(std::move(e));
    return LatestResolution(seen, "default") && LatestResolution(seen, "byprofile");
  }));
  const NodeClassResolution missing = *LatestResolution(seen, "default");
  EXPECT_EQ(missing.reason, kInstanceProfileNotFound) << missing.message;
  EXPECT_EQ(missing.instance_profile, "");
  EXPECT_FALSE(missing.amis.empty()) << "the rest resolves";
  const NodeClassResolution users = *LatestResolution(seen, "byprofile");
  EXPECT_EQ(users.reason, "") << users.message;
  EXPECT_EQ(users.instance_profile, "users-profile");
  // Nothing written: no profile, no finalizer.
  EXPECT_FALSE(w.ProfileExists("term_default"));
  EXPECT_FALSE(w.HasFinalizer("default"));
  EXPECT_FALSE(w.HasFinalizer("byprofile"));

  const std::vector<Event> made = cloud.Execute(
      Command{CommandId{1}, Seq{1}, EnsureInstanceProfile{"default", kRole, kCluster}});
  ASSERT_TRUE(Succeeded(made));
  const auto profile = w.iam.GetInstanceProfile("term_default");
  ASSERT_TRUE(profile.ok()) << profile.error.message;
  EXPECT_EQ(profile.value->roles, std::vector<std::string>{kRole});
  // Made: resolved again at once (not a minute later), and Ready.
  seen.clear();
  ASSERT_TRUE(Eventually([&] {
    for (Event& e : cloud.Drain()) seen.push_back(std::move(e));
    const auto latest = LatestResolution(seen, "default");
    return latest && latest->reason.empty();
  }));
  EXPECT_EQ(LatestResolution(seen, "default")->instance_profile, "term_default");
  cloud.Stop();
}

TEST(AwsNodeClassLifecycle, FinalizerAddedAndRemovedKeepingOthers) {
  World w;
  json keeps = w.NodeClass("default", {{"role", kRole}});
  keeps["metadata"]["finalizers"] = {"example.com/keep"};
  ASSERT_EQ(w.admin.Post(kNodeClasses, keeps).status, 201);
  ASSERT_EQ(w.admin.Post(kNodeClasses, w.NodeClass("other", {{"role", kRole}})).status, 201);
  kube::Client kube = KubeClient(w.api.port());
  kube::KubeExecutor executor(kube, {}, [] { return true; });
  auto run = [&, id = std::uint64_t{0}](const std::string& nodeclass, bool present) mutable {
    return executor.Execute(
        Command{CommandId{++id}, Seq{1}, SetNodeClassFinalizer{nodeclass, present}});
  };
  auto finalizers = [&](const std::string& nodeclass) {
    return w.Get(nodeclass)["metadata"].value("finalizers", json::array());
  };
  ASSERT_TRUE(Succeeded(run("default", true)));
  EXPECT_EQ(finalizers("default"), json({"example.com/keep", label::kNodeClassFinalizer}));
  ASSERT_TRUE(Succeeded(run("default", true))) << "already there";
  EXPECT_EQ(finalizers("default"), json({"example.com/keep", label::kNodeClassFinalizer}));
  // Being deleted, an EC2NodeClass without it gets none (the API server would refuse it).
  ASSERT_EQ(w.admin.Delete(std::string(kNodeClasses) + "/other").status, 200);
  EXPECT_TRUE(w.Get("other").is_null()) << "nothing held it";
  ASSERT_EQ(w.admin.Delete(std::string(kNodeClasses) + "/default").status, 200);
  ASSERT_FALSE(w.Get("default").is_null());
  ASSERT_TRUE(Succeeded(run("default", false)));
  EXPECT_EQ(finalizers("default"), json({"example.com/keep"})) << "the other finalizer holds it";
  // Gone: removing the finalizer of an EC2NodeClass that no longer exists succeeds.
  ASSERT_TRUE(Succeeded(run("gone", false)));
  const std::vector<Event> refused = run("gone", true);
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_TRUE(std::holds_alternative<CommandFailed>(refused[0]));
}

TEST(AwsNodeClassLifecycle, CleanupDeletesWhatTenonMadeAndNothingElse) {
  World w;
  ASSERT_TRUE(w.iam.EnsureInstanceProfile("users-profile", kRole, {}).ok());
  // A profile with tenon's name that tenon did not make (no owner tags): left alone.
  ASSERT_TRUE(w.iam.EnsureInstanceProfile("term_foreign", kRole, {}).ok());
  aws::KnownTemplates known;
  aws::AwsExecutor executor(w.ec2, nullptr, &known, &w.iam);
  CommandId id{1};
  auto run = [&](CommandBody body) {
    const std::vector<Event> results = executor.Execute(Command{id, Seq{1}, std::move(body)});
    id = CommandId{id.value + 1};
    return results;
  };
  for (const std::string nodeclass : {"default", "gpu", "byprofile", "foreign"}) {
    if (nodeclass == "default" || nodeclass == "gpu") {
      ASSERT_TRUE(Succeeded(run(EnsureInstanceProfile{nodeclass, kRole, kCluster}))) << nodeclass;
    }
    aws::LaunchTemplateSpec spec;
    spec.name = aws::LaunchTemplateName(kCluster, nodeclass + "-hash", w.ami);
    spec.image_id = w.ami;
    spec.tags = aws::NodeClassOwnerTags(kCluster, nodeclass);
    ASSERT_TRUE(w.ec2.CreateLaunchTemplate(spec).ok());
    known.insert(spec.name);
    EXPECT_EQ(w.Templates(nodeclass), 1u);
  }
  ASSERT_TRUE(w.ProfileExists("term_default"));

  ASSERT_TRUE(Succeeded(run(DeleteNodeClassResources{"default", kCluster, true})));
  EXPECT_FALSE(w.ProfileExists("term_default"));
  EXPECT_EQ(w.Templates("default"), 0u);
  EXPECT_FALSE(known.contains(aws::LaunchTemplateName(kCluster, "default-hash", w.ami)));
  // Again: nothing left to delete is no failure.
  EXPECT_TRUE(Succeeded(run(DeleteNodeClassResources{"default", kCluster, true})));
  // The other EC2NodeClass keeps its own.
  EXPECT_TRUE(w.ProfileExists("term_gpu"));
  EXPECT_EQ(w.Templates("gpu"), 1u);

  // spec.instanceProfile: the user's profile stays, with its role; tenon's template goes.
  ASSERT_TRUE(Succeeded(run(DeleteNodeClassResources{"byprofile", kCluster, false})));
  const auto users = w.iam.GetInstanceProfile("users-profile");
  ASSERT_TRUE(users.ok()) << users.error.message;
  EXPECT_EQ(users.value->roles, std::vector<std::string>{kRole});
  EXPECT_EQ(w.Templates("byprofile"), 0u);

  ASSERT_TRUE(Succeeded(run(DeleteNodeClassResources{"foreign", kCluster, true})));
  EXPECT_TRUE(w.ProfileExists("term_foreign"));
  EXPECT_EQ(w.Templates("foreign"), 0u);
}

}  // namespace
}  // namespace tenon::controller
