// The AWS adapters against moto_server on loopback, with the fault proxy in front of it where
// moto cannot produce what AWS does (error sets, throttling, HTML 500s, offering pages).
// One moto and one proxy serve the whole binary; each test uses its own resources.
#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "adapters/aws/catalog_export.h"
#include "adapters/aws/credentials.h"
#include "adapters/aws/ec2.h"
#include "adapters/aws/executor.h"
#include "adapters/aws/iam.h"
#include "adapters/aws/nodeclass.h"
#include "adapters/aws/pricing.h"
#include "adapters/aws/s3.h"
#include "adapters/aws/sqs.h"
#include "adapters/aws/ssm.h"
#include "adapters/sim/scenario.h"
#include "tests/aws/messages.h"
#include "tests/aws/moto.h"

namespace tenon::aws {
namespace {

using testing::Between;
using testing::DummyCredentials;
using testing::FastHooks;
using testing::Must;

struct Servers {
  testing::Moto moto;
  testing::FaultProxy proxy{moto};
};
Servers* servers = nullptr;

class ServersEnvironment : public ::testing::Environment {
 public:
  void SetUp() override { servers = new Servers(); }
  void TearDown() override {
    delete servers;
    servers = nullptr;
  }
};

// A client for every service at one base URL, with dummy credentials and no real sleeping.
struct Client {
  explicit Client(const std::string& url, std::int32_t attempts_max = 4)
      : client(transport, &credentials,
               ClientOptions{.region = "us-east-1",
                             .endpoints = {{"ec2", url},
                                           {"sqs", url},
                                           {"sts", url},
                                           {"iam", url},
                                           {"ssm", url},
                                           {"pricing", url},
                                           {"s3", url}},
                             .attempts_max = attempts_max},
               FastHooks(&sleeps)) {}
  CurlTransport transport;
  StaticProvider credentials{DummyCredentials()};
  std::vector<Duration> sleeps;
  AwsClient client;
  Ec2 ec2{client};
};

void Fault(const nlohmann::json& spec) {
  CurlTransport transport;
  HttpRequest r;
  r.method = "POST";
  r.scheme = "http";
  r.host = "127.0.0.1:" + std::to_string(servers->proxy.port());
  r.path = "/__fault";
  r.body = spec.dump();
  ASSERT_EQ(transport.Send(r).status, 200);
}

std::string LastBody(const std::string& action) {
  CurlTransport transport;
  HttpRequest r;
  r.scheme = "http";
  r.host = "127.0.0.1:" + std::to_string(servers->proxy.port());
  r.path = "/__last";
  r.query = {{"action", action}};
  return transport.Send(r).body;
}

// A VPC with one tagged subnet per zone; returns zone -> subnet.
std::map<std::string, std::string> MakeNetwork(Client& c, const std::string& cluster) {
  return testing::MakeNetwork(c.client, cluster).subnets;
}

TEST(AwsMoto, CatalogTypesOfferingsZonesAndSpotPrices) {
  Client c(servers->moto.url());
  const auto types = c.ec2.DescribeInstanceTypes({"m5.large", "g4dn.xlarge", "m6g.large"});
  ASSERT_TRUE(types.ok()) << types.error.message;
  ASSERT_EQ(types.value->size(), 3u);
  std::map<std::string, InstanceType> by_name;
  for (const auto& t : *types.value) by_name[t.name] = t;
  EXPECT_EQ(by_name["m5.large"].cpu, Millicores{2000});
  EXPECT_EQ(by_name["m5.large"].memory, Bytes{8192 * kMebibyte.value});
  EXPECT_EQ(by_name["m5.large"].arch, "amd64");
  EXPECT_EQ(by_name["m5.large"].max_enis, 3);
  EXPECT_EQ(by_name["m5.large"].ipv4_per_eni, 10);
  EXPECT_EQ(by_name["m6g.large"].arch, "arm64");
  EXPECT_EQ(by_name["g4dn.xlarge"].gpu_count, 1);
  EXPECT_EQ(by_name["g4dn.xlarge"].gpu_manufacturer, "NVIDIA");
  const auto zones = c.ec2.DescribeAvailabilityZones();
  ASSERT_TRUE(zones.ok());
  EXPECT_GE(zones.value->size(), 3u);
  const auto catalog = c.ec2.Catalog({"m5.large"}, {{"m5.large", MicroUsdPerHour{96000}}});
  ASSERT_TRUE(catalog.ok()) << catalog.error.message;
  ASSERT_EQ(catalog.value->size(), 1u);
  EXPECT_GE(catalog.value->front().offerings.size(), 6u);  // >= 3 zones x 2 capacity types.
  for (const Offering& o : catalog.value->front().offerings) {
    if (o.capacity_type == "on-demand") {
      EXPECT_EQ(o.price, MicroUsdPerHour{96000});
    }
  }
}

TEST(AwsMoto, OfferingsFollowNextTokenThroughEveryPage) {
  Client direct(servers->moto.url());
  const auto all = direct.ec2.DescribeInstanceTypeOfferings();
  ASSERT_TRUE(all.ok());
  Fault({{"action", "DescribeInstanceTypeOfferings"},
         {"kind", "paginate"},
         {"page_size", 500},
         {"count", 1000}});
  Client proxied(servers->proxy.url());
  const std::int64_t before = proxied.client.attempts_made();
  const auto paged = proxied.ec2.DescribeInstanceTypeOfferings();
  Fault({{"action", "DescribeInstanceTypeOfferings"}, {"kind", "none"}, {"count", 1}});
  ASSERT_TRUE(paged.ok()) << paged.error.message;
  EXPECT_EQ(paged.value->size(), all.value->size());
  EXPECT_EQ(proxied.client.attempts_made() - before,
            static_cast<std::int64_t>((all.value->size() + 499) / 500));
  EXPECT_NE(LastBody("DescribeInstanceTypeOfferings").find("NextToken="), std::string::npos);
}

TEST(AwsMoto, SubnetsSecurityGroupsAndImagesBySelectorTerms) {
  Client c(servers->moto.url());
  const auto subnets = MakeNetwork(c, "selectors");
  const auto by_tag =
      c.ec2.DescribeSubnets({SelectorTerm{{{"karpenter.sh/discovery", "selectors"}}, "", "", ""}});
  ASSERT_TRUE(by_tag.ok());
  ASSERT_EQ(by_tag.value->size(), 2u);
  EXPECT_EQ(by_tag.value->at(0).tags.at("karpenter.sh/discovery"), "selectors");
  const auto by_id = c.ec2.DescribeSubnets({SelectorTerm{{}, subnets.at("us-east-1b"), "", ""}});
  ASSERT_TRUE(by_id.ok());
  ASSERT_EQ(by_id.value->size(), 1u);
  EXPECT_EQ(by_id.value->at(0).zone, "us-east-1b");
  EXPECT_TRUE(by_id.value->at(0).zone_id.starts_with("use1-az")) << by_id.value->at(0).zone_id;
  const std::string vpc = Must(c.client.Query("ec2", "DescribeSubnets", kEc2Version,
                                              {{"SubnetId.1", subnets.at("us-east-1a")}}));
  const std::string group = testing::MakeSecurityGroup(
      c.client, Between(vpc, "<vpcId>", "</vpcId>"), "nodes-selectors", "selectors");
  for (const SelectorTerm& term :
       {SelectorTerm{{{"karpenter.sh/discovery", "selectors"}}, "", "", ""},
        SelectorTerm{{}, group, "", ""}, SelectorTerm{{}, "", "nodes-selectors", ""}}) {
    const auto groups = c.ec2.DescribeSecurityGroups({term});
    ASSERT_TRUE(groups.ok()) << groups.error.message;
    ASSERT_EQ(groups.value->size(), 1u);
    EXPECT_EQ(groups.value->at(0).id, group);
  }
  const auto images = c.ec2.DescribeImages({SelectorTerm{{}, "", "", "amazon"}});
  ASSERT_TRUE(images.ok()) << images.error.message;
  ASSERT_FALSE(images.value->empty());
  const Image& any = images.value->front();
  const auto by_name = c.ec2.DescribeImages({SelectorTerm{{}, "", any.name, ""}});
  ASSERT_TRUE(by_name.ok());
  ASSERT_FALSE(by_name.value->empty());
  EXPECT_EQ(by_name.value->front().name, any.name);
  const auto newest = NewestPerArch(*images.value);
  EXPECT_GE(newest.size(), 1u);
}

TEST(AwsMoto, LaunchTemplateCreateDescribeDelete) {
  Client c(servers->moto.url());
  LaunchTemplateSpec spec;
  spec.name = "tenon-lt-crud";
  spec.image_id = "ami-12c6146b";
  spec.user_data = "#!/bin/bash\necho hello\n";
  spec.tags = {{"karpenter.k8s.aws/cluster", "crud"}};
  const auto created = c.ec2.CreateLaunchTemplate(spec);
  ASSERT_TRUE(created.ok()) << created.error.message;
  EXPECT_EQ(created.value->name, "tenon-lt-crud");
  const auto described = c.ec2.DescribeLaunchTemplates({"tenon-lt-crud"});
  ASSERT_TRUE(described.ok());
  ASSERT_EQ(described.value->size(), 1u);
  EXPECT_EQ(described.value->at(0).id, created.value->id);
  ASSERT_TRUE(c.ec2.DeleteLaunchTemplate("tenon-lt-crud").ok());
  const auto gone = c.ec2.DescribeLaunchTemplates({"tenon-lt-crud"});
  EXPECT_FALSE(gone.ok());
  EXPECT_EQ(gone.error.code, ErrorCode::kNotFound);
}

struct Fleet {
  explicit Fleet(const std::string& url, const std::string& cluster_name)
      : client(url), cluster(cluster_name) {
    subnets = MakeNetwork(client, cluster);
    executor = std::make_unique<AwsExecutor>(client.ec2, nullptr, &known);
  }

  // A launch as the core issues it: each override with its subnet and AMI, and what the
  // launch template is made of.
  LaunchInstance Launch(const std::string& claim) const {
    LaunchInstance launch{claim,
                          "default",
                          "default",
                          claim,
                          "on-demand",
                          {{"m5.large", "us-east-1a", "on-demand", MicroUsdPerHour{96000},
                            subnets.at("us-east-1a"), kImage},
                           {"c5.large", "us-east-1b", "on-demand", MicroUsdPerHour{85000},
                            subnets.at("us-east-1b"), kImage}},
                          {{"karpenter.sh/nodeclaim", claim},
                           {"karpenter.sh/nodepool", "default"},
                           {"kubernetes.io/cluster/" + cluster, "owned"}},
                          "lowest-price",
                          {}};
    launch.node.ami_family = "AL2023";
    launch.node.cluster_name = cluster;
    launch.node.cluster_endpoint = "https://" + cluster + ".example";
    launch.node.cluster_ca_bundle = "Y2E=";
    launch.node.labels = {{"karpenter.sh/nodepool", "default"}};
    launch.node.tags = NodeClassOwnerTags(cluster, "default");
    return launch;
  }

  static constexpr char kImage[] = "ami-12c6146b";
  Client client;
  std::string cluster;
  std::map<std::string, std::string> subnets;
  KnownTemplates known;
  std::unique_ptr<AwsExecutor> executor;
};

TEST(AwsMoto, CreateFleetLaunchesListsTagsAndTerminates) {
  Fleet f(servers->proxy.url(), "fleet");
  const std::vector<Event> events =
      f.executor->Execute(Command{CommandId{1}, Seq{1}, f.Launch("claim-a")});
  ASSERT_EQ(events.size(), 1u);
  const auto* launched = std::get_if<FleetLaunched>(&events[0]);
  ASSERT_NE(launched, nullptr);
  EXPECT_EQ(launched->instance_type, "m5.large");
  EXPECT_EQ(launched->zone, "us-east-1a");
  EXPECT_EQ(launched->provider_id, "aws:///us-east-1a/" + launched->instance_id);
  EXPECT_EQ(launched->price, MicroUsdPerHour{96000});
  // What drift compares later: the AMI of the launch template and the instance's subnet.
  EXPECT_EQ(launched->image_id, "ami-12c6146b");
  EXPECT_EQ(launched->subnet_id.rfind("subnet-", 0), 0u) << launched->subnet_id;
  const std::string wire = LastBody("CreateFleet");
  // The body sent is recorded with the outcome, and the command alone renders it again.
  EXPECT_EQ(launched->request, wire);
  EXPECT_EQ(RenderLaunch(f.Launch("claim-a")).body, wire);
  EXPECT_NE(wire.find("LaunchTemplateConfigs.1.Overrides.2.SubnetId=" + f.subnets.at("us-east-1b")),
            std::string::npos);
  EXPECT_NE(wire.find("TagSpecification.1.ResourceType=instance"), std::string::npos);
  EXPECT_EQ(wire.find("TagSpecifications."), std::string::npos);
  EXPECT_NE(wire.find("ClientToken=claim-a"), std::string::npos);
  EXPECT_NE(wire.find("Type=instant"), std::string::npos);
  const auto listed =
      f.client.ec2.DescribeInstancesByTags({{"kubernetes.io/cluster/fleet", "owned"}});
  ASSERT_TRUE(listed.ok()) << listed.error.message;
  ASSERT_EQ(listed.value->size(), 1u);
  EXPECT_EQ(listed.value->at(0).id, launched->instance_id);
  EXPECT_EQ(listed.value->at(0).tags.at("karpenter.sh/nodeclaim"), "claim-a");
  // An instance of an EKS managed node group carries the cluster's tag too, but no NodePool's:
  // garbage collection never lists it.
  Must(f.client.client.Query("ec2", "RunInstances", kEc2Version,
                             {{"ImageId", "ami-12c6146b"},
                              {"InstanceType", "m5.large"},
                              {"MinCount", "1"},
                              {"MaxCount", "1"},
                              {"TagSpecification.1.ResourceType", "instance"},
                              {"TagSpecification.1.Tag.1.Key", "kubernetes.io/cluster/fleet"},
                              {"TagSpecification.1.Tag.1.Value", "owned"},
                              {"TagSpecification.1.Tag.2.Key", "eks:nodegroup-name"},
                              {"TagSpecification.1.Tag.2.Value", "system"}}));
  const auto collected = f.client.ec2.DescribeInstancesByTags(LaunchedByNodePoolTags("fleet"));
  ASSERT_TRUE(collected.ok()) << collected.error.message;
  ASSERT_EQ(collected.value->size(), 1u);
  EXPECT_EQ(collected.value->at(0).id, launched->instance_id);
  EXPECT_EQ(f.client.ec2.DescribeInstancesByTags({{"kubernetes.io/cluster/fleet", "owned"}})
                .value->size(),
            2u);
  ASSERT_TRUE(f.client.ec2.CreateTags({launched->instance_id}, {{"Name", "claim-a"}}).ok());
  EXPECT_EQ(f.client.ec2.DescribeInstancesByTags({{"Name", "claim-a"}}).value->size(), 1u);
  // An unknown id fails the whole call; the adapter drops it and terminates the rest.
  const auto terminated =
      f.client.ec2.TerminateInstances({launched->instance_id, "i-0123456789abcdef0"});
  ASSERT_TRUE(terminated.ok()) << terminated.error.message;
  EXPECT_EQ(terminated.value->terminated, std::vector<std::string>{launched->instance_id});
  EXPECT_EQ(terminated.value->missing, std::vector<std::string>{"i-0123456789abcdef0"});
  const auto after = f.executor->Execute(
      Command{CommandId{2}, Seq{2}, TerminateInstance{"i-0fedcba987654321f", ""}});
  EXPECT_EQ(after, (std::vector<Event>{CommandSucceeded{CommandId{2}}}));
}

// Karpenter's tagging controller: a registered NodeClaim's instance gets Name (the Node's
// name), the claim and the cluster's name; a key the instance already carries keeps its value,
// nothing is sent when nothing is missing, and an instance that is gone fails NotFound.
TEST(AwsMoto, TagInstanceTagsWhatTheInstanceLacks) {
  Fleet f(servers->proxy.url(), "tagging");
  std::vector<std::string> ids;
  for (const char* claim : {"tagging-a", "tagging-b"}) {
    const auto events = f.executor->Execute(Command{CommandId{1}, Seq{1}, f.Launch(claim)});
    ASSERT_EQ(events.size(), 1u);
    const auto* launched = std::get_if<FleetLaunched>(&events[0]);
    ASSERT_NE(launched, nullptr) << claim;
    ids.push_back(launched->instance_id);
  }
  ASSERT_TRUE(f.client.ec2.CreateTags({ids[1]}, {{"Name", "named-by-its-nodeclass"}}).ok());
  auto tag = [&](const std::string& id, const std::string& claim, std::uint64_t command) {
    return f.executor->Execute(
        Command{CommandId{command}, Seq{2},
                TagInstance{id,
                            claim,
                            {{"Name", "ip-10-0-0-" + std::to_string(command) + ".ec2.internal"},
                             {"karpenter.sh/nodeclaim", claim},
                             {"eks:eks-cluster-name", "tagging"}}}});
  };
  EXPECT_EQ(tag(ids[0], "tagging-a", 2), (std::vector<Event>{CommandSucceeded{CommandId{2}}}));
  EXPECT_EQ(tag(ids[1], "tagging-b", 3), (std::vector<Event>{CommandSucceeded{CommandId{3}}}));
  const auto described = f.client.ec2.DescribeInstances(ids);
  ASSERT_TRUE(described.ok()) << described.error.message;
  std::map<std::string, Labels> tags;
  for (const InstanceSummary& i : *described.value) tags[i.id] = i.tags;
  EXPECT_EQ(tags[ids[0]].at("Name"), "ip-10-0-0-2.ec2.internal");
  EXPECT_EQ(tags[ids[0]].at("eks:eks-cluster-name"), "tagging");
  EXPECT_EQ(tags[ids[0]].at("karpenter.sh/nodeclaim"), "tagging-a");
  EXPECT_EQ(tags[ids[1]].at("Name"), "named-by-its-nodeclass");
  EXPECT_EQ(tags[ids[1]].at("eks:eks-cluster-name"), "tagging");
  // Re-driven after a restart: every key is there, so no CreateTags goes out.
  const std::string last = LastBody("CreateTags");
  EXPECT_EQ(tag(ids[0], "tagging-a", 4), (std::vector<Event>{CommandSucceeded{CommandId{4}}}));
  EXPECT_EQ(LastBody("CreateTags"), last);
  const auto gone = tag("i-0123456789abcdef0", "tagging-c", 5);
  ASSERT_EQ(gone.size(), 1u);
  const auto* failed = std::get_if<CommandFailed>(&gone[0]);
  ASSERT_NE(failed, nullptr);
  EXPECT_EQ(failed->code, ErrorCode::kNotFound);
}

TEST(AwsMoto, InsufficientCapacityErrorSetThroughTheProxy) {
  Fleet f(servers->proxy.url(), "ice");
  Fault({{"action", "CreateFleet"}, {"kind", "ice"}, {"types", {"m5.large"}}, {"count", 1}});
  std::vector<Event> events =
      f.executor->Execute(Command{CommandId{3}, Seq{1}, f.Launch("claim-ice")});
  ASSERT_EQ(events.size(), 1u);
  const auto* launched = std::get_if<FleetLaunched>(&events[0]);
  ASSERT_NE(launched, nullptr);
  EXPECT_EQ(launched->instance_type, "c5.large");
  EXPECT_EQ(launched->zone, "us-east-1b");
  ASSERT_EQ(launched->errors.size(), 1u);
  EXPECT_EQ(launched->errors[0].instance_type, "m5.large");
  EXPECT_EQ(launched->errors[0].zone, "us-east-1a");
  EXPECT_EQ(launched->errors[0].code, ErrorCode::kInsufficientCapacity);

  Fault({{"action", "CreateFleet"},
         {"kind", "ice"},
         {"types", {"m5.large", "c5.large"}},
         {"count", 1}});
  events = f.executor->Execute(Command{CommandId{4}, Seq{2}, f.Launch("claim-ice-2")});
  ASSERT_EQ(events.size(), 1u);
  const auto* failed = std::get_if<FleetFailed>(&events[0]);
  ASSERT_NE(failed, nullptr);
  ASSERT_EQ(failed->errors.size(), 2u);
  for (const FleetError& e : failed->errors) EXPECT_EQ(e.code, ErrorCode::kInsufficientCapacity);
  EXPECT_EQ(failed->errors[1].zone, "us-east-1b");
}

TEST(AwsMoto, ThrottlingIsRetriedThenGivenUp) {
  Client c(servers->proxy.url());
  Fault({{"action", "DescribeAvailabilityZones"}, {"kind", "throttle"}, {"count", 2}});
  const auto zones = c.ec2.DescribeAvailabilityZones();
  ASSERT_TRUE(zones.ok()) << zones.error.message;
  EXPECT_EQ(c.sleeps.size(), 2u);
  EXPECT_EQ(c.client.attempts_made(), 3);
  Fault({{"action", "DescribeAvailabilityZones"}, {"kind", "throttle"}, {"count", 10}});
  const auto throttled = c.ec2.DescribeAvailabilityZones();
  Fault({{"action", "DescribeAvailabilityZones"}, {"kind", "none"}, {"count", 1}});
  ASSERT_FALSE(throttled.ok());
  EXPECT_EQ(throttled.error.code, ErrorCode::kThrottled);
  EXPECT_EQ(throttled.error.aws_code, "RequestLimitExceeded");
  EXPECT_EQ(c.client.attempts_made(), 3 + 4);
}

TEST(AwsMoto, Html500IsTransientAndRetried) {
  Client once(servers->proxy.url(), 1);
  Fault({{"action", "DescribeAvailabilityZones"}, {"kind", "html500"}, {"count", 1}});
  const auto failed = once.ec2.DescribeAvailabilityZones();
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.error.code, ErrorCode::kTransient);
  EXPECT_EQ(failed.error.aws_code, "HTTP500");
  EXPECT_NE(failed.error.message.find("Internal Server Error"), std::string::npos);
  Client retrying(servers->proxy.url());
  Fault({{"action", "DescribeAvailabilityZones"}, {"kind", "html500"}, {"count", 1}});
  EXPECT_TRUE(retrying.ec2.DescribeAvailabilityZones().ok());
}

TEST(AwsMoto, SqsRoundTripOfEveryEventBridgeKindAndAMalformedOne) {
  Client c(servers->moto.url());
  const auto created = nlohmann::json::parse(
      Must(SqsCall(c.client, "CreateQueue", R"({"QueueName":"interruptions"})")));
  const std::string url = created.at("QueueUrl");
  for (const char* body : {testing::kSpotInterruption, testing::kRebalance,
                           testing::kScheduledChange, testing::kStateChange, testing::kMalformed}) {
    Must(SqsCall(c.client, "SendMessage",
                 nlohmann::json{{"QueueUrl", url}, {"MessageBody", body}}.dump()));
  }
  InterruptionQueue queue(c.client, url);
  std::vector<Event> events;
  for (int poll = 0; poll < 10 && events.size() < 6; ++poll) {
    auto got = queue.Receive(10, 1);
    ASSERT_TRUE(got.ok()) << got.error.message;
    events.insert(events.end(), got.value->begin(), got.value->end());
  }
  std::map<InterruptionKind, int> kinds;
  std::vector<std::string> ids;
  int rejected = 0;
  std::string rejected_message;
  for (const Event& e : events) {
    if (const auto* i = std::get_if<InterruptionReceived>(&e)) {
      ++kinds[i->kind];
      ids.push_back(i->message_id);
    } else if (const auto* r = std::get_if<InputRejected>(&e)) {
      ++rejected;
      EXPECT_EQ(r->payload, testing::kMalformed);
      rejected_message = r->message_id;
    }
  }
  EXPECT_EQ(kinds[InterruptionKind::kSpotInterruption], 1);
  EXPECT_EQ(kinds[InterruptionKind::kRebalanceRecommendation], 1);
  EXPECT_EQ(kinds[InterruptionKind::kScheduledChange], 2);
  EXPECT_EQ(kinds[InterruptionKind::kStateChange], 1);
  EXPECT_EQ(rejected, 1);
  // Acknowledge the interruptions through the executor; the queue still holds the malformed one.
  AwsExecutor executor(c.ec2, &queue);
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  ASSERT_EQ(ids.size(), 4u);
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const CommandId id{i + 10};
    EXPECT_EQ(executor.Execute(Command{id, Seq{1}, DeleteQueueMessage{ids[i]}}),
              (std::vector<Event>{CommandSucceeded{id}}));
  }
  const auto unknown =
      executor.Execute(Command{CommandId{99}, Seq{1}, DeleteQueueMessage{"never-received"}});
  ASSERT_EQ(unknown.size(), 1u);
  EXPECT_EQ(std::get<CommandFailed>(unknown[0]).code, ErrorCode::kNotFound);
  const auto attributes = nlohmann::json::parse(Must(SqsCall(
      c.client, "GetQueueAttributes",
      nlohmann::json{{"QueueUrl", url},
                     {"AttributeNames",
                      {"ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"}}}
          .dump())));
  EXPECT_EQ(attributes["Attributes"]["ApproximateNumberOfMessagesNotVisible"], "1");
  EXPECT_EQ(attributes["Attributes"]["ApproximateNumberOfMessages"], "0");
  // The malformed message's rejection names it; the core's DeleteQueueMessage deletes it.
  ASSERT_FALSE(rejected_message.empty());
  EXPECT_EQ(executor.Execute(Command{CommandId{100}, Seq{2}, DeleteQueueMessage{rejected_message}}),
            (std::vector<Event>{CommandSucceeded{CommandId{100}}}));
  const auto empty = nlohmann::json::parse(
      Must(SqsCall(c.client, "GetQueueAttributes",
                   nlohmann::json{{"QueueUrl", url},
                                  {"AttributeNames", {"ApproximateNumberOfMessagesNotVisible"}}}
                       .dump())));
  EXPECT_EQ(empty["Attributes"]["ApproximateNumberOfMessagesNotVisible"], "0");
}

TEST(AwsMoto, WebIdentityThroughMotoSts) {
  const std::string token =
      (std::filesystem::temp_directory_path() / ("tenon-wi-" + std::to_string(getpid()))).string();
  std::ofstream(token)
      << "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQ6a2FycGVudGVyIn0.sig\n";
  CurlTransport transport;
  AwsClient sts(transport, nullptr,
                ClientOptions{.region = "us-east-1", .endpoints = {{"sts", servers->moto.url()}}},
                FastHooks());
  WebIdentityProvider provider(
      [&](const std::string& name) -> std::optional<std::string> {
        if (name == "AWS_ROLE_ARN") return "arn:aws:iam::123456789012:role/karpenter";
        if (name == "AWS_WEB_IDENTITY_TOKEN_FILE") return token;
        return std::nullopt;
      },
      sts);
  const Result<Credentials> c = provider.Get(Instant{});
  ASSERT_TRUE(c.ok()) << c.error.aws_code << ": " << c.error.message;
  EXPECT_FALSE(c.value->access_key_id.empty());
  EXPECT_FALSE(c.value->session_token.empty());
  EXPECT_GT(c.value->expires, Instant{});
  // The temporary credentials sign EC2 calls.
  StaticProvider temporary(*c.value);
  AwsClient ec2_client(
      transport, &temporary,
      ClientOptions{.region = "us-east-1", .endpoints = {{"ec2", servers->moto.url()}}},
      FastHooks());
  EXPECT_TRUE(Ec2(ec2_client).DescribeAvailabilityZones().ok());
}

TEST(AwsMoto, PodIdentityAndImdsV2) {
  const std::string token =
      (std::filesystem::temp_directory_path() / ("tenon-pod-" + std::to_string(getpid()))).string();
  std::ofstream(token) << "pod-identity-authorization-token";
  CurlTransport transport;
  ContainerProvider pod(
      [&](const std::string& name) -> std::optional<std::string> {
        if (name == "AWS_CONTAINER_CREDENTIALS_FULL_URI")
          return servers->proxy.url() + "/pod-identity";
        if (name == "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE") return token;
        return std::nullopt;
      },
      transport);
  const Result<Credentials> c = pod.Get(Instant{});
  ASSERT_TRUE(c.ok()) << c.error.message;
  EXPECT_EQ(c.value->access_key_id, "ASIAPODIDENTITY00001");
  EXPECT_EQ(c.value->session_token, "pod-identity-session-token-do-not-log");
  ImdsProvider imds(servers->proxy.url(), transport);
  const Result<Credentials> i = imds.Get(Instant{});
  ASSERT_TRUE(i.ok()) << i.error.aws_code << ": " << i.error.message;
  EXPECT_EQ(i.value->access_key_id, "ASIAPODIDENTITY00001");
  ContainerProvider wrong(
      [&](const std::string& name) -> std::optional<std::string> {
        if (name == "AWS_CONTAINER_CREDENTIALS_FULL_URI")
          return servers->proxy.url() + "/pod-identity";
        if (name == "AWS_CONTAINER_AUTHORIZATION_TOKEN") return "wrong";
        return std::nullopt;
      },
      transport);
  EXPECT_EQ(wrong.Get(Instant{}).error.code, ErrorCode::kUnauthorized);
}

TEST(AwsMoto, InstancesListedFollowsDescribeInstancesPages) {
  Client c(servers->moto.url());
  // moto pages by reservation, so each instance gets its own.
  for (int i = 0; i < 7; ++i) {
    Must(c.client.Query("ec2", "RunInstances", kEc2Version,
                        {{"ImageId", "ami-12c6146b"},
                         {"InstanceType", "m5.large"},
                         {"MinCount", "1"},
                         {"MaxCount", "1"},
                         {"TagSpecification.1.ResourceType", "instance"},
                         {"TagSpecification.1.Tag.1.Key", "kubernetes.io/cluster/paged"},
                         {"TagSpecification.1.Tag.1.Value", "owned"},
                         {"TagSpecification.1.Tag.2.Key", "karpenter.sh/nodeclaim"},
                         {"TagSpecification.1.Tag.2.Value", "claim-paged"}}));
  }
  const std::int64_t before = c.client.attempts_made();
  const auto instances =
      c.ec2.DescribeInstancesByTags({{"kubernetes.io/cluster/paged", "owned"}}, 5);
  ASSERT_TRUE(instances.ok()) << instances.error.message;
  EXPECT_EQ(c.client.attempts_made() - before, 2);  // 5 + 2, following NextToken.
  const InstancesListed listed = ToInstancesListed(*instances.value);
  ASSERT_EQ(listed.instances.size(), 7u);
  for (const CloudInstance& i : listed.instances) {
    EXPECT_EQ(i.nodeclaim, "claim-paged");
    EXPECT_EQ(i.state, "running");
    EXPECT_GT(i.launched, Instant{});
  }
}

// S3 for log archives: every byte value survives a put and a get (the payload hash is signed),
// a missing key is NotFound, and s3:// URLs split into bucket and key.
TEST(AwsMoto, S3PutAndGetAnArchive) {
  Client c(servers->moto.url());
  S3 s3(c.client);
  ASSERT_TRUE(s3.CreateBucket("incidents").ok());
  std::string body;
  for (int i = 0; i < 300'000; ++i) body.push_back(static_cast<char>((i * 7919) & 0xff));
  auto put = s3.PutObject("incidents", "2026/01/01/demo.tenonlog", body);
  ASSERT_TRUE(put.ok()) << put.error.aws_code << ": " << put.error.message;
  auto got = s3.GetObject("incidents", "2026/01/01/demo.tenonlog");
  ASSERT_TRUE(got.ok()) << got.error.aws_code << ": " << got.error.message;
  EXPECT_EQ(got.value->size(), body.size());
  EXPECT_TRUE(*got.value == body);
  auto missing = s3.GetObject("incidents", "no-such-key");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error.code, ErrorCode::kNotFound) << missing.error.aws_code;
  std::string bucket, key;
  EXPECT_TRUE(ParseS3Url("s3://incidents/2026/01/demo.tenonlog", &bucket, &key));
  EXPECT_EQ(bucket, "incidents");
  EXPECT_EQ(key, "2026/01/demo.tenonlog");
  EXPECT_FALSE(ParseS3Url("s3://incidents/", &bucket, &key));
  EXPECT_FALSE(ParseS3Url("/tmp/demo.tenonlog", &bucket, &key));
}

TEST(AwsMoto, SsmParametersUnderAConfigurablePrefix) {
  Client c(servers->moto.url());
  Must(c.client.Json(
      "ssm", "AmazonSSM.PutParameter", "application/x-amz-json-1.1",
      R"({"Name":"/tenon-test/eks/optimized-ami/1.31/amazon-linux-2023/x86_64/standard/recommended/image_id","Value":"ami-0123456789abcdef0","Type":"String"})"));
  Ssm ssm(c.client, "/tenon-test");
  const std::string path = ssm.AliasPath("al2023@latest", "amd64", "1.31");
  const Result<std::string> value = ssm.GetParameter(path);
  ASSERT_TRUE(value.ok()) << value.error.message;
  EXPECT_EQ(*value.value, "ami-0123456789abcdef0");
  // Pinned releases name their own parameters, as Karpenter's AWS provider reads them.
  EXPECT_EQ(ssm.AliasPath("al2023@v20240807", "amd64", "1.31"),
            "/tenon-test/eks/optimized-ami/1.31/amazon-linux-2023/x86_64/standard/"
            "amazon-eks-node-al2023-x86_64-standard-1.31-v20240807/image_id");
  EXPECT_EQ(ssm.AliasPath("al2023@v20240807", "arm64", "1.31"),
            "/tenon-test/eks/optimized-ami/1.31/amazon-linux-2023/arm64/standard/"
            "amazon-eks-node-al2023-arm64-standard-1.31-v20240807/image_id");
  EXPECT_EQ(ssm.AliasPath("al2@v20240807", "amd64", "1.31"),
            "/tenon-test/eks/optimized-ami/1.31/amazon-linux-2/amazon-eks-node-1.31-v20240807/"
            "image_id");
  EXPECT_EQ(ssm.AliasPath("al2@v20240807", "arm64", "1.31"),
            "/tenon-test/eks/optimized-ami/1.31/amazon-linux-2-arm64/"
            "amazon-eks-arm64-node-1.31-v20240807/image_id");
  EXPECT_EQ(ssm.AliasPath("al2@latest", "amd64", "1.31"),
            "/tenon-test/eks/optimized-ami/1.31/amazon-linux-2/recommended/image_id");
  EXPECT_EQ(ssm.AliasPath("bottlerocket@v1.20.1", "arm64", "1.31"),
            "/tenon-test/bottlerocket/aws-k8s-1.31/arm64/1.20.1/image_id");
  EXPECT_EQ(ssm.AliasPath("bottlerocket@latest", "amd64", "1.31"),
            "/tenon-test/bottlerocket/aws-k8s-1.31/x86_64/latest/image_id");
  const Result<std::string> missing = ssm.GetParameter("eks/none");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error.code, ErrorCode::kNotFound);
}

// An EC2NodeClass's selector terms resolve to the ids its status carries: the alias through
// SSM (only the architecture with a parameter), subnets and security groups by tag.
TEST(AwsMoto, NodeClassResolvesItsSelectorTerms) {
  Client c(servers->moto.url());
  const auto subnets = MakeNetwork(c, "resolve");
  const std::string vpc = Between(Must(c.client.Query("ec2", "DescribeSubnets", kEc2Version,
                                                      {{"SubnetId.1", subnets.at("us-east-1a")}})),
                                  "<vpcId>", "</vpcId>");
  const std::string group = testing::MakeSecurityGroup(c.client, vpc, "nodes-resolve", "resolve");
  Must(c.client.Json(
      "ssm", "AmazonSSM.PutParameter", "application/x-amz-json-1.1",
      R"({"Name":"/tenon-resolve/eks/optimized-ami/1.31/amazon-linux-2023/x86_64/standard/recommended/image_id","Value":"ami-0aaaaaaaaaaaaaaa1","Type":"String"})"));
  Ssm ssm(c.client, "/tenon-resolve");
  NodeClassTerms terms = ParseNodeClassTerms(YAML::Load(R"(
spec:
  amiSelectorTerms: [{alias: al2023@latest}]
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: resolve}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: resolve}}]
)"));
  NodeClass nodeclass;
  nodeclass.name = "default";
  const Result<NodeClass> resolved = ResolveNodeClass(c.ec2, ssm, nodeclass, terms, "1.31");
  ASSERT_TRUE(resolved.ok()) << resolved.error.message;
  EXPECT_EQ(resolved.value->amis, std::vector<std::string>{"ami-0aaaaaaaaaaaaaaa1"});
  std::vector<std::string> want = {subnets.at("us-east-1a"), subnets.at("us-east-1b")};
  std::sort(want.begin(), want.end());
  EXPECT_EQ(resolved.value->subnets, want);
  EXPECT_EQ(resolved.value->security_groups, std::vector<std::string>{group});
  // A term that matches nothing is a clear error, not an empty status.
  terms.subnets = {SelectorTerm{{{"karpenter.sh/discovery", "nowhere"}}, "", "", ""}};
  const Result<NodeClass> none = ResolveNodeClass(c.ec2, ssm, nodeclass, terms, "1.31");
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error.code, ErrorCode::kNotFound);
  EXPECT_NE(none.error.message.find("no subnet matches"), std::string::npos);
  // The status condition's reason comes with the failure, as Karpenter names it.
  EXPECT_EQ(ResolveNodeClassDetail(c.ec2, ssm, nodeclass, terms, "1.31").reason, kSubnetsNotFound);
  terms.subnets = {SelectorTerm{{{"karpenter.sh/discovery", "resolve"}}, "", "", ""}};
  terms.security_groups = {SelectorTerm{{{"karpenter.sh/discovery", "nowhere"}}, "", "", ""}};
  EXPECT_EQ(ResolveNodeClassDetail(c.ec2, ssm, nodeclass, terms, "1.31").reason,
            kSecurityGroupsNotFound);
  terms.amis = {AmiTerm{"", SelectorTerm{{{"karpenter.sh/discovery", "nowhere"}}, "", "", ""}}};
  EXPECT_EQ(ResolveNodeClassDetail(c.ec2, ssm, nodeclass, terms, "1.31").reason, kAmiNotFound);
  EXPECT_THROW(ParseNodeClassTerms(YAML::Load("spec: {subnetSelectorTerms: [{}]}")),
               std::invalid_argument);
}

TEST(AwsMoto, InstanceProfileCreatedOnceWithItsRole) {
  Client c(servers->moto.url());
  for (const char* role : {"KarpenterNodeRole", "OtherRole"}) testing::MakeNodeRole(c.client, role);
  Iam iam(c.client);
  EXPECT_EQ(iam.GetInstanceProfile("tenon-default").error.code, ErrorCode::kNotFound);
  const auto created = iam.EnsureInstanceProfile("tenon-default", "KarpenterNodeRole",
                                                 {{"karpenter.sh/managed-by", "test"}});
  ASSERT_TRUE(created.ok()) << created.error.message;
  EXPECT_EQ(created.value->roles, std::vector<std::string>{"KarpenterNodeRole"});
  EXPECT_NE(created.value->arn.find("instance-profile/tenon-default"), std::string::npos);
  const std::int64_t before = c.client.attempts_made();
  ASSERT_TRUE(iam.EnsureInstanceProfile("tenon-default", "KarpenterNodeRole", {}).ok());
  EXPECT_EQ(c.client.attempts_made() - before, 1);  // Already right: one Get, nothing else.
  const auto switched = iam.EnsureInstanceProfile("tenon-default", "OtherRole", {});
  ASSERT_TRUE(switched.ok()) << switched.error.message;
  EXPECT_EQ(switched.value->roles, std::vector<std::string>{"OtherRole"});
}

// As Karpenter's EC2NodeClass termination: the profile made for spec.role goes with its roles;
// a profile without the owner's tags is someone else's and stays.
TEST(AwsMoto, InstanceProfileDeletedWithItsRoleOnlyWhenTaggedAsTenons) {
  Client c(servers->moto.url());
  testing::MakeNodeRole(c.client, "DeletionNodeRole");
  Iam iam(c.client);
  const Labels owner = NodeClassOwnerTags("deletion", "default");
  EXPECT_EQ(InstanceProfileName("deletion", "default"), "deletion_default");
  const auto made = iam.EnsureInstanceProfile("deletion_default", "DeletionNodeRole", owner);
  ASSERT_TRUE(made.ok()) << made.error.message;
  EXPECT_EQ(iam.GetInstanceProfile("deletion_default").value->tags, owner);
  ASSERT_TRUE(iam.EnsureInstanceProfile("deletion_other", "DeletionNodeRole",
                                        {{"kubernetes.io/cluster/deletion", "owned"}})
                  .ok());

  const auto foreign = iam.DeleteInstanceProfile("deletion_other", owner);
  ASSERT_TRUE(foreign.ok()) << foreign.error.message;
  EXPECT_EQ(*foreign.value, ProfileRemoval::kNotOwned);
  EXPECT_TRUE(iam.GetInstanceProfile("deletion_other").ok());

  const auto deleted = iam.DeleteInstanceProfile("deletion_default", owner);
  ASSERT_TRUE(deleted.ok()) << deleted.error.message;
  EXPECT_EQ(*deleted.value, ProfileRemoval::kDeleted);
  EXPECT_EQ(iam.GetInstanceProfile("deletion_default").error.code, ErrorCode::kNotFound);
  const auto again = iam.DeleteInstanceProfile("deletion_default", owner);
  ASSERT_TRUE(again.ok()) << again.error.message;
  EXPECT_EQ(*again.value, ProfileRemoval::kAbsent);
}

// Karpenter's launch template DeleteAll: the templates tagged with the cluster and the
// EC2NodeClass. tenon also requires a name it gives, so a template someone tagged alike stays.
TEST(AwsMoto, NodeClassLaunchTemplatesDeletedByTheirTagsAndName) {
  Client c(servers->moto.url());
  auto make = [&](const std::string& name, const Labels& tags) {
    LaunchTemplateSpec spec;
    spec.name = name;
    spec.image_id = "ami-12c6146b";
    spec.tags = tags;
    ASSERT_TRUE(c.ec2.CreateLaunchTemplate(spec).ok()) << name;
  };
  const std::string a = LaunchTemplateName("ltdel", "hash-a", "ami-12c6146b");
  const std::string b = LaunchTemplateName("ltdel", "hash-b", "ami-12c6146b");
  const std::string other_class = LaunchTemplateName("ltdel", "hash-c", "ami-12c6146b");
  const std::string other_cluster = LaunchTemplateName("ltdel2", "hash-a", "ami-12c6146b");
  make(a, NodeClassOwnerTags("ltdel", "default"));
  make(b, NodeClassOwnerTags("ltdel", "default"));
  make(other_class, NodeClassOwnerTags("ltdel", "gpu"));
  make(other_cluster, NodeClassOwnerTags("ltdel2", "default"));
  make("ltdel-handmade", NodeClassOwnerTags("ltdel", "default"));

  const auto deleted = DeleteNodeClassLaunchTemplates(c.ec2, "ltdel", "default");
  ASSERT_TRUE(deleted.ok()) << deleted.error.message;
  std::vector<std::string> want{a, b};
  std::sort(want.begin(), want.end());
  EXPECT_EQ(*deleted.value, want);
  for (const std::string& gone : {a, b}) {
    EXPECT_EQ(c.ec2.DescribeLaunchTemplates({gone}).error.code, ErrorCode::kNotFound) << gone;
  }
  for (const std::string& kept : {other_class, other_cluster, std::string("ltdel-handmade")}) {
    EXPECT_TRUE(c.ec2.DescribeLaunchTemplates({kept}).ok()) << kept;
  }
  const auto nothing_left = DeleteNodeClassLaunchTemplates(c.ec2, "ltdel", "default");
  ASSERT_TRUE(nothing_left.ok()) << nothing_left.error.message;
  EXPECT_TRUE(nothing_left.value->empty());
}

TEST(AwsMoto, DefaultChainPicksTheFirstConfiguredSource) {
  CurlTransport transport;
  AwsClient sts(transport, nullptr,
                ClientOptions{.region = "us-east-1", .endpoints = {{"sts", servers->moto.url()}}},
                FastHooks());
  std::map<std::string, std::string> vars{
      {"AWS_CONTAINER_CREDENTIALS_FULL_URI", servers->proxy.url() + "/pod-identity"},
      {"AWS_CONTAINER_AUTHORIZATION_TOKEN", "pod-identity-authorization-token"},
      {"HOME", "/nonexistent"}};
  const auto env = [&vars](const std::string& name) -> std::optional<std::string> {
    const auto it = vars.find(name);
    return it == vars.end() ? std::nullopt : std::optional<std::string>(it->second);
  };
  auto chain = DefaultChain(env, transport, sts, servers->proxy.url());
  EXPECT_EQ(chain->Get(Instant{}).value->source, "container");
  vars["AWS_ACCESS_KEY_ID"] = "AKIAENVIRONMENT";
  vars["AWS_SECRET_ACCESS_KEY"] = "secret";
  auto env_first = DefaultChain(env, transport, sts, servers->proxy.url());
  EXPECT_EQ(env_first->Get(Instant{}).value->source, "environment");
  vars.clear();
  vars["HOME"] = "/nonexistent";
  auto imds_last = DefaultChain(env, transport, sts, servers->proxy.url());
  EXPECT_EQ(imds_last->Get(Instant{}).value->source, "imds");
}

TEST(AwsMoto, CatalogExportIsReadBackBySimulate) {
  Client c(servers->moto.url());
  const auto dir =
      std::filesystem::temp_directory_path() / ("tenon-export-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "prices.json") << R"({"m5.large": 0.096, "g4dn.xlarge": 0.526})";
  const auto prices = LoadPriceFile(dir / "prices.json");
  ASSERT_TRUE(prices.ok()) << prices.error.message;
  const auto written = ExportCatalog(c.ec2, "us-east-1", *prices.value, dir / "catalog.json");
  ASSERT_TRUE(written.ok()) << written.error.message;
  EXPECT_GT(*written.value, 500);
  // Types without an on-demand price are skipped by the reader: exactly the two priced ones.
  const std::vector<InstanceType> read = sim::LoadCatalogJson(dir / "catalog.json", 1);
  ASSERT_EQ(read.size(), 2u);
  EXPECT_EQ(read[0].name, "g4dn.xlarge");
  EXPECT_EQ(read[0].gpu_count, 1);
  EXPECT_EQ(read[0].gpu_memory, Bytes{16384 * kMebibyte.value});
  EXPECT_EQ(read[1].name, "m5.large");
  EXPECT_EQ(read[1].cpu, Millicores{2000});
  ASSERT_FALSE(read[1].offerings.empty());
  EXPECT_EQ(read[1].offerings[0].price, MicroUsdPerHour{96000});
  EXPECT_FALSE(LoadPriceFile(dir / "missing.json").ok());
  std::filesystem::remove_all(dir);
}

TEST(AwsMoto, RedeliveredMessagesYieldNoSecondEventsAndAckWithTheNewestReceipt) {
  Client c(servers->moto.url());
  const auto created = nlohmann::json::parse(
      Must(SqsCall(c.client, "CreateQueue",
                   R"({"QueueName":"redelivered","Attributes":{"VisibilityTimeout":"0"}})")));
  const std::string url = created.at("QueueUrl");
  Must(SqsCall(c.client, "SendMessage",
               nlohmann::json{{"QueueUrl", url}, {"MessageBody", testing::kRebalance}}.dump()));
  InterruptionQueue queue(c.client, url);
  std::vector<Event> first;
  for (int poll = 0; poll < 5 && first.empty(); ++poll) first = *queue.Receive(10, 1).value;
  ASSERT_EQ(first.size(), 1u);
  const std::string id = std::get<InterruptionReceived>(first[0]).message_id;
  std::vector<Event> again;
  for (int poll = 0; poll < 5 && queue.redeliveries() == 0; ++poll) {
    auto got = queue.Receive(10, 1);
    ASSERT_TRUE(got.ok());
    again.insert(again.end(), got.value->begin(), got.value->end());
  }
  EXPECT_EQ(queue.redeliveries(), 1);
  EXPECT_TRUE(again.empty());
  ASSERT_TRUE(queue.Acknowledge(id).ok());
  const auto attributes = nlohmann::json::parse(
      Must(SqsCall(c.client, "GetQueueAttributes",
                   nlohmann::json{{"QueueUrl", url}, {"AttributeNames", {"All"}}}.dump())));
  EXPECT_EQ(attributes["Attributes"]["ApproximateNumberOfMessages"], "0");
}

TEST(AwsMoto, LaunchTemplatePerAmiAndNodeClassHashIsCreatedOnce) {
  Client c(servers->moto.url());
  LaunchTemplateSpec spec;
  spec.name = LaunchTemplateName("prod", "nodeclass-hash-1", "ami-12c6146b");
  spec.image_id = "ami-12c6146b";
  EXPECT_EQ(spec.name.rfind("tenon/prod/", 0), 0u);
  EXPECT_NE(spec.name, LaunchTemplateName("prod", "nodeclass-hash-2", "ami-12c6146b"));
  EXPECT_NE(spec.name, LaunchTemplateName("prod", "nodeclass-hash-1", "ami-0000000000000000f"));
  const auto first = EnsureLaunchTemplate(c.ec2, spec);
  ASSERT_TRUE(first.ok()) << first.error.message;
  const std::int64_t before = c.client.attempts_made();
  const auto second = EnsureLaunchTemplate(c.ec2, spec);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second.value->id, first.value->id);
  EXPECT_EQ(c.client.attempts_made() - before, 1);  // Found: no second create.
}

TEST(AwsMoto, OnDemandPricesFromThePriceListOrTheOperatorsFile) {
  Client c(servers->proxy.url());
  Pricing pricing(c.client);
  const auto prices = pricing.OnDemandPrices("us-east-1");
  ASSERT_TRUE(prices.ok()) << prices.error.message;
  EXPECT_EQ(*prices.value,
            (PriceMap{{"c5.large", MicroUsdPerHour{85000}}, {"m5.large", MicroUsdPerHour{96000}}}));
  EXPECT_NE(LastBody("AWSPriceListService.GetProducts").find("page-2"), std::string::npos);
  EXPECT_FALSE(pricing.OnDemandPrices("mars-north-1").ok());
  Fault({{"action", "AWSPriceListService.GetProducts"}, {"kind", "throttle"}, {"count", 4}});
  bool used_fallback = false;
  const PriceMap fallback{{"m5.large", MicroUsdPerHour{1}}};
  EXPECT_EQ(OnDemandPricesOrFallback(pricing, "us-east-1", fallback, &used_fallback), fallback);
  EXPECT_TRUE(used_fallback);
}

}  // namespace
}  // namespace tenon::aws

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  ::testing::AddGlobalTestEnvironment(new tenon::aws::ServersEnvironment());
  return RUN_ALL_TESTS();
}
