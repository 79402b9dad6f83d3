// The IAM policies of deploy/aws/cloudformation.yaml against the requests tenon really sends.
// `tenon run`'s AWS side (controller::CloudSource, the object `tenon run` builds) runs against
// moto behind the fault proxy, with the recording proxy in front of both, and the test API
// server for its EC2NodeClasses. It goes through every path the controller takes: the catalog
// (instance types, offerings, spot prices, Pricing), EC2NodeClass resolution (an AMI alias
// through SSM, an AMI by id, subnets and security groups by tag, the instance profile read), the
// instance profile created and its role switched (EnsureInstanceProfile, as the core issues it
// when the resolution says InstanceProfileNotFound), a launch (launch template described,
// created, CreateFleet), the instance tagged once its Node registers (DescribeInstances,
// CreateTags), a termination, garbage collection (DescribeInstances), the interruption queue
// (GetQueueUrl, ReceiveMessage, DeleteMessage) and a deleted EC2NodeClass cleaned up
// (DeleteNodeClassResources: its launch templates described by tag and deleted, its instance
// profile's role removed and the profile deleted). tests/deploy/iam_check.py
// then maps each recorded request to its IAM action and compares the set with ControllerPolicy,
// both ways. The S3 calls of `tenon log export` and `import` are compared with ArchivePolicy the
// same way.
//
// The controller signs with one access key and the test's own setup with others, so the
// recording is filtered by key.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "adapters/aws/ec2.h"
#include "adapters/aws/iam.h"
#include "adapters/aws/s3.h"
#include "adapters/aws/sqs.h"
#include "adapters/controller/cloud.h"
#include "adapters/kube/client.h"
#include "tests/aws/launch.h"
#include "tests/aws/messages.h"
#include "tests/aws/moto.h"
#include "tests/kube/apiserver.h"
#include "tests/support/temp_dir.h"

namespace tenon::aws {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using testing::Between;
using testing::Must;

constexpr char kControllerKey[] = "AKIATENONCONTROLLER1";
constexpr char kArchiveKey[] = "AKIATENONARCHIVE0001";
constexpr char kCluster[] = "iam";
constexpr char kQueue[] = "iam-interruption";
constexpr char kNodeClasses[] = "/apis/karpenter.k8s.aws/v1/ec2nodeclasses";
constexpr auto kPatience = std::chrono::seconds(40);

// moto, the fault proxy in front of it (the Price List API, CreateFleet by ClientToken), the
// recording proxy in front of that, and the test API server.
struct Servers {
  testing::Moto moto;
  testing::FaultProxy fault{moto};
  testing::RecordingProxy recorder{fault.port()};
  kube::testing::ApiServer api;
};

// A client of moto itself, for the test's own setup and checks: never recorded.
struct Admin {
  explicit Admin(const std::string& url)
      : client(transport, &credentials,
               ClientOptions{.region = "us-east-1",
                             .endpoints = {{"ec2", url}, {"sqs", url}, {"iam", url}, {"s3", url}}},
               testing::FastHooks()) {}
  CurlTransport transport;
  StaticProvider credentials{testing::DummyCredentials()};
  AwsClient client;
  Ec2 ec2{client};
};

// Runs tests/deploy/iam_check.py on the recording; its report goes to the test's output.
int IamCheck(const std::string& recording, const std::string& key, const std::string& policy) {
  tenon::testing::TempDir dir;
  const auto file = dir.path() / "recording.jsonl";
  std::ofstream(file) << recording;
  const std::string command = std::string("python3 ") + TENON_IAM_CHECK + " " + file.string() +
                              " --list --access-key-id " + key + " --policy " + policy;
  const int status = std::system(command.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

// Waits for `done`, draining the source's events into `events` meanwhile.
template <class Done>
bool Await(controller::CloudSource& cloud, std::vector<Event>& events, Done done) {
  const auto deadline = std::chrono::steady_clock::now() + kPatience;
  while (std::chrono::steady_clock::now() < deadline) {
    for (Event& e : cloud.Drain()) events.push_back(std::move(e));
    if (done()) return true;
    std::this_thread::sleep_for(milliseconds(50));
  }
  return false;
}

template <class T>
const T* Find(const std::vector<Event>& events) {
  for (const Event& e : events) {
    if (const auto* found = std::get_if<T>(&e)) return found;
  }
  return nullptr;
}

json NodeClass(const std::string& name, const std::string& role, const json& ami_terms) {
  const json selector = json::array({{{"tags", {{"karpenter.sh/discovery", kCluster}}}}});
  return {{"apiVersion", "karpenter.k8s.aws/v1"},
          {"kind", "EC2NodeClass"},
          {"metadata", {{"name", name}}},
          {"spec",
           {{"role", role},
            {"amiFamily", "AL2023"},
            {"amiSelectorTerms", ami_terms},
            {"subnetSelectorTerms", selector},
            {"securityGroupSelectorTerms", selector}}}};
}

TEST(AwsIamPolicy, ControllerPolicyGrantsExactlyWhatTenonRunCalls) {
  Servers servers;
  Admin admin(servers.moto.url());
  kube::testing::Client api(servers.api.port());

  // The account: a VPC with a tagged subnet per zone and a tagged security group, two node
  // roles, the interruption queue and an x86_64 image of Amazon's.
  testing::MakeSecurityGroup(admin.client, testing::MakeNetwork(admin.client, kCluster).vpc,
                             "nodes", kCluster);
  for (const char* role : {"tenon-node-iam", "other-node-role"}) {
    testing::MakeNodeRole(admin.client, role);
  }
  const std::string queue_url = json::parse(
      Must(SqsCall(admin.client, "CreateQueue", json{{"QueueName", kQueue}}.dump())))["QueueUrl"];
  const auto images = admin.ec2.DescribeImages({SelectorTerm{{}, "", "", "amazon"}});
  ASSERT_TRUE(images.ok()) << images.error.message;
  std::string ami;
  for (const Image& image : *images.value) {
    if (image.arch == "amd64" && ami.empty()) ami = image.id;
  }
  ASSERT_FALSE(ami.empty());

  // Two EC2NodeClasses: one by AMI id (it becomes Ready), one by alias (resolved through SSM;
  // moto has no EKS parameters, so it stays not Ready, but the requests are sent).
  ASSERT_EQ(api.Post(kNodeClasses, NodeClass("default", "tenon-node-iam", {{{"id", ami}}})).status,
            201);
  ASSERT_EQ(
      api.Post(kNodeClasses, NodeClass("alias", "tenon-node-iam", {{{"alias", "al2023@latest"}}}))
          .status,
      201);

  // The controller's credentials come from the environment, as in a pod without IRSA.
  ::setenv("AWS_ACCESS_KEY_ID", kControllerKey, 1);
  ::setenv("AWS_SECRET_ACCESS_KEY", "controller-secret", 1);
  ::unsetenv("AWS_SESSION_TOKEN");
  ::unsetenv("AWS_ROLE_ARN");
  ::unsetenv("AWS_CONTAINER_CREDENTIALS_FULL_URI");
  controller::CloudOptions options;
  options.aws.region = "us-east-1";
  for (const char* service : {"ec2", "sqs", "ssm", "iam", "sts", "pricing", "s3"}) {
    options.aws.endpoints[service] = servers.recorder.url();
  }
  options.cluster_name = kCluster;
  options.cluster_endpoint = "https://iam.example";
  options.cluster_ca_base64 = "Y2E=";
  options.interruption_queue = kQueue;  // A name: the controller asks for its URL.
  options.kubernetes_version = "1.31";
  options.catalog_every = std::chrono::hours(1);
  options.gc_every = milliseconds(300);
  options.nodeclass_every = milliseconds(300);
  options.retry = milliseconds(200);
  options.poll_wait_seconds = 1;

  kube::ClusterConfig config;
  config.server = "http://127.0.0.1:" + std::to_string(servers.api.port());
  config.token = kube::testing::kToken;
  kube::Client kube(config);
  // The core's state for the launch below: the instance type's architecture.
  State state;
  InstanceType m5;
  m5.name = "m5.large";
  m5.arch = "amd64";
  state.cluster.catalog = Catalog{{"m5.large", CatalogEntry{m5, {}, {}}}};
  controller::CloudSource cloud(options, kube, [] { return true; });
  cloud.Start();

  std::vector<Event> events;
  // The resolver only reads: the profile is missing, and the core has it made.
  auto resolved = [&](const std::string& reason) {
    for (auto it = events.rbegin(); it != events.rend(); ++it) {
      const auto* r = std::get_if<NodeClassResolved>(&*it);
      if (r != nullptr && r->nodeclass == "default") return r->resolution.reason == reason;
    }
    return false;
  };
  ASSERT_TRUE(Await(cloud, events, [&] { return resolved(kInstanceProfileNotFound); }));
  EXPECT_EQ(cloud.Execute(Command{CommandId{10}, Seq{1},
                                  EnsureInstanceProfile{"default", "tenon-node-iam", kCluster}}),
            (std::vector<Event>{CommandSucceeded{CommandId{10}}}));
  ASSERT_TRUE(Await(cloud, events,
                    [&] {
                      return cloud.catalogs_published() > 0 && cloud.nodeclasses_resolved() > 0 &&
                             resolved("") && Find<InstancesListed>(events) != nullptr;
                    }))
      << "catalog " << cloud.catalogs_published() << ", nodeclasses "
      << cloud.nodeclasses_resolved();

  // A launch: the launch template is described (absent), created, then CreateFleet.
  const std::string claim = "default-x4k2p";
  const LaunchInstance launch = aws::testing::CoreLaunch(state, events, kCluster, claim, "default");
  ASSERT_EQ(launch.overrides.size(), 1u);
  const std::vector<Event> launched = cloud.Execute(Command{CommandId{1}, Seq{1}, launch});
  ASSERT_EQ(launched.size(), 1u);
  const auto* fleet = std::get_if<FleetLaunched>(&launched[0]);
  ASSERT_NE(fleet, nullptr) << "FleetFailed: "
                            << std::get<FleetFailed>(launched[0]).errors[0].message;

  // An interruption message for it: received, then acknowledged (DeleteMessage).
  std::string message = testing::kSpotInterruption;
  message.replace(message.find("i-0123456789abcdef0"), 19, fleet->instance_id);
  message.replace(message.find("i-0123456789abcdef0"), 19, fleet->instance_id);
  Must(SqsCall(admin.client, "SendMessage",
               json{{"QueueUrl", queue_url}, {"MessageBody", message}}.dump()));
  ASSERT_TRUE(Await(cloud, events, [&] { return Find<InterruptionReceived>(events) != nullptr; }));
  const std::string message_id = Find<InterruptionReceived>(events)->message_id;
  EXPECT_EQ(cloud.Execute(Command{CommandId{2}, Seq{2}, DeleteQueueMessage{message_id}}),
            (std::vector<Event>{CommandSucceeded{CommandId{2}}}));

  // Its Node registered: the instance is tagged (DescribeInstances, CreateTags).
  EXPECT_EQ(cloud.Execute(Command{CommandId{4}, Seq{4},
                                  TagInstance{fleet->instance_id,
                                              claim,
                                              {{"Name", "ip-10-0-0-1.ec2.internal"},
                                               {"karpenter.sh/nodeclaim", claim},
                                               {"eks:eks-cluster-name", kCluster}}}}),
            (std::vector<Event>{CommandSucceeded{CommandId{4}}}));

  // The termination.
  EXPECT_EQ(
      cloud.Execute(Command{CommandId{3}, Seq{3}, TerminateInstance{fleet->instance_id, claim}}),
      (std::vector<Event>{CommandSucceeded{CommandId{3}}}));

  // The EC2NodeClass's role changes: the resolution says so, and its instance profile gets the
  // new role.
  ASSERT_EQ(api.MergePatch(std::string(kNodeClasses) + "/default",
                           {{"spec", {{"role", "other-node-role"}}}})
                .status,
            200);
  cloud.PokeNodeClasses();
  ASSERT_TRUE(Await(cloud, events, [&] { return resolved(kInstanceProfileNotFound); }));
  EXPECT_EQ(cloud.Execute(Command{CommandId{11}, Seq{5},
                                  EnsureInstanceProfile{"default", "other-node-role", kCluster}}),
            (std::vector<Event>{CommandSucceeded{CommandId{11}}}));
  Iam iam(admin.client);
  const auto switched = iam.GetInstanceProfile("iam_default");
  ASSERT_TRUE(switched.ok()) << switched.error.message;
  EXPECT_EQ(switched.value->roles, std::vector<std::string>{"other-node-role"});

  // The EC2NodeClass deleted with no NodeClaim using it: its launch template (found by its
  // tags) and its instance profile (its role removed first) are deleted.
  ASSERT_EQ(api.Delete(std::string(kNodeClasses) + "/default").status, 200);
  EXPECT_EQ(cloud.Execute(Command{CommandId{12}, Seq{6},
                                  DeleteNodeClassResources{"default", kCluster, true}}),
            (std::vector<Event>{CommandSucceeded{CommandId{12}}}));
  EXPECT_EQ(iam.GetInstanceProfile("iam_default").error.code, ErrorCode::kNotFound);
  cloud.Stop();

  EXPECT_EQ(IamCheck(servers.recorder.Recording(), kControllerKey, "ControllerPolicy"), 0)
      << "the requests `tenon run` sent and ControllerPolicy differ (report above)";
}

// `tenon log export LOG -o s3://B/K` and `tenon log import s3://B/K` call S3::PutObject and
// S3::GetObject (cmd/incident.cc), nothing else.
TEST(AwsIamPolicy, ArchivePolicyGrantsExactlyWhatLogExportAndImportCall) {
  Servers servers;
  Admin admin(servers.moto.url());
  ASSERT_TRUE(S3(admin.client).CreateBucket("incidents").ok());
  CurlTransport transport;
  StaticProvider credentials{Credentials{kArchiveKey, "archive-secret", "", std::nullopt, "test"}};
  AwsClient client(
      transport, &credentials,
      ClientOptions{.region = "us-east-1", .endpoints = {{"s3", servers.recorder.url()}}},
      testing::FastHooks());
  S3 s3(client);
  ASSERT_TRUE(s3.PutObject("incidents", "2026/01/01/demo.tenonlog", "archive bytes").ok());
  const auto got = s3.GetObject("incidents", "2026/01/01/demo.tenonlog");
  ASSERT_TRUE(got.ok()) << got.error.message;
  EXPECT_EQ(*got.value, "archive bytes");
  EXPECT_EQ(IamCheck(servers.recorder.Recording(), kArchiveKey, "ArchivePolicy"), 0);
}

}  // namespace
}  // namespace tenon::aws
