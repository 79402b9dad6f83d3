// The EC2 XML parsers read the real answer formats and turn broken bodies into errors; the
// catalog joins types, offerings and prices; CreateFleet answers become FleetLaunched/FleetFailed.
#include "adapters/aws/ec2_xml.h"

#include <gtest/gtest.h>

#include "adapters/aws/ec2.h"
#include "adapters/aws/executor.h"

namespace tenon::aws {
namespace {

constexpr char kFleetWithErrors[] = R"(<?xml version="1.0" encoding="UTF-8"?>
<CreateFleetResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/">
  <requestId>r</requestId><fleetId>fleet-1</fleetId>
  <errorSet><item>
    <launchTemplateAndOverrides>
      <launchTemplateSpecification><launchTemplateName>lt</launchTemplateName><version>1</version></launchTemplateSpecification>
      <overrides><instanceType>m5.large</instanceType><subnetId>subnet-a</subnetId></overrides>
    </launchTemplateAndOverrides>
    <lifecycle>spot</lifecycle><errorCode>InsufficientInstanceCapacity</errorCode>
    <errorMessage>There is no Spot capacity available that matches your request.</errorMessage>
  </item></errorSet>
  <fleetInstanceSet><item>
    <launchTemplateAndOverrides>
      <launchTemplateSpecification><launchTemplateName>lt</launchTemplateName><version>1</version></launchTemplateSpecification>
      <overrides><instanceType>c5.large</instanceType><subnetId>subnet-b</subnetId><availabilityZone>us-east-1b</availabilityZone></overrides>
    </launchTemplateAndOverrides>
    <lifecycle>spot</lifecycle><instanceIds><item>i-0abc</item></instanceIds><instanceType>c5.large</instanceType>
  </item></fleetInstanceSet>
</CreateFleetResponse>)";

TEST(AwsEc2Xml, CreateFleetInstancesAndErrorSet) {
  std::string error;
  const std::optional<FleetResult> r = ParseCreateFleet(kFleetWithErrors, &error);
  ASSERT_TRUE(r) << error;
  EXPECT_EQ(r->fleet_id, "fleet-1");
  ASSERT_EQ(r->instances.size(), 1u);
  EXPECT_EQ(r->instances[0].instance_id, "i-0abc");
  EXPECT_EQ(r->instances[0].zone, "us-east-1b");
  ASSERT_EQ(r->errors.size(), 1u);
  EXPECT_EQ(r->errors[0].instance_type, "m5.large");
  EXPECT_EQ(r->errors[0].subnet_id, "subnet-a");
  EXPECT_EQ(r->errors[0].error_code, "InsufficientInstanceCapacity");
}

TEST(AwsEc2Xml, FleetOutcomeFillsZonesFromSubnetsAndPricesFromOverrides) {
  std::string error;
  const Result<FleetResult> r =
      Result<FleetResult>::Ok(*ParseCreateFleet(kFleetWithErrors, &error));
  LaunchInstance launch{
      "claim-1",
      "pool",
      "class",
      "claim-1",
      "spot",
      {{"m5.large", "us-east-1a", "spot", MicroUsdPerHour{40000}, "subnet-a", "ami-1"},
       {"c5.large", "us-east-1b", "spot", MicroUsdPerHour{35000}, "subnet-b", "ami-1"}},
      {},
      "price-capacity-optimized",
      {}};
  launch.node.security_groups = {"sg-1"};
  RenderedLaunch rendered;
  rendered.body = "Action=CreateFleet";
  const Event e = FleetOutcome(Command{CommandId{7}, Seq{1}, launch}, launch, rendered, r);
  const auto* launched = std::get_if<FleetLaunched>(&e);
  ASSERT_NE(launched, nullptr);
  EXPECT_EQ(launched->provider_id, "aws:///us-east-1b/i-0abc");
  EXPECT_EQ(launched->price, MicroUsdPerHour{35000});
  EXPECT_EQ(launched->image_id, "ami-1");
  EXPECT_EQ(launched->security_groups, std::vector<std::string>{"sg-1"});
  EXPECT_EQ(launched->subnet_id, "subnet-b");
  EXPECT_EQ(launched->request, "Action=CreateFleet");
  ASSERT_EQ(launched->errors.size(), 1u);
  EXPECT_EQ(launched->errors[0].zone, "us-east-1a");
  EXPECT_EQ(launched->errors[0].code, ErrorCode::kInsufficientCapacity);
  const Event failed = FleetOutcome(
      Command{CommandId{8}, Seq{1}, launch}, launch, rendered,
      Result<FleetResult>::Fail(AwsError{ErrorCode::kThrottled, "RequestLimitExceeded", "", 503}));
  ASSERT_TRUE(std::holds_alternative<FleetFailed>(failed));
  EXPECT_EQ(std::get<FleetFailed>(failed).errors.at(0).code, ErrorCode::kThrottled);
}

TEST(AwsEc2Xml, BrokenBodiesAreErrorsNotCrashes) {
  EXPECT_FALSE(ParseInstanceTypes("<html>oops").error.empty());
  EXPECT_FALSE(ParseSubnets("").error.empty());
  EXPECT_FALSE(ParseInstances("<Response><Errors><Error><Code>X</Code></Error></Errors></Response>")
                   .error.empty());
  std::string error;
  EXPECT_FALSE(ParseCreateFleet("not xml at all", &error));
  EXPECT_FALSE(error.empty());
}

// Figures no instance type has (an exbibyte of GPU memory, a negative vCPU count, a million
// devices) are read as absent or held at a bound: scaling and summing them cannot overflow.
TEST(AwsEc2Xml, OutlandishFiguresAreAbsentOrBounded) {
  const std::string gpu =
      "<item><count>1000000000</count><memoryInfo><sizeInMiB>"
      "163842222222222222</sizeInMiB></memoryInfo></item>";
  std::string gpus;
  for (int i = 0; i < 4; ++i) gpus += gpu;
  const auto page = ParseInstanceTypes(
      "<DescribeInstanceTypesResponse><instanceTypeSet><item><instanceType>g9.huge"
      "</instanceType><vCpuInfo><defaultVCpus>-4</defaultVCpus></vCpuInfo><memoryInfo>"
      "<sizeInMiB>9223372036854775807</sizeInMiB></memoryInfo><networkInfo>"
      "<maximumNetworkInterfaces>99999999999</maximumNetworkInterfaces></networkInfo>"
      "<gpuInfo><gpus>" +
      gpus + "</gpus></gpuInfo></item></instanceTypeSet></DescribeInstanceTypesResponse>");
  ASSERT_TRUE(page.error.empty()) << page.error;
  ASSERT_EQ(page.items.size(), 1u);
  const InstanceType& t = page.items[0];
  EXPECT_EQ(t.cpu, Millicores{0});
  EXPECT_EQ(t.memory, Bytes{0});
  EXPECT_EQ(t.gpu_memory, Bytes{0});
  EXPECT_EQ(t.gpu_count, 1 << 20);
  EXPECT_EQ(t.max_enis, 1 << 20);
}

TEST(AwsEc2Xml, PricesAndNotFoundIds) {
  EXPECT_EQ(ParsePrice("0.0416"), MicroUsdPerHour{41600});
  EXPECT_FALSE(ParsePrice("abc"));
  EXPECT_FALSE(ParsePrice("-1"));
  EXPECT_EQ(IdsInNotFoundMessage("The instance IDs 'i-0abc, i-0def' do not exist"),
            (std::vector<std::string>{"i-0abc", "i-0def"}));
  EXPECT_EQ(Base64("hello"), "aGVsbG8=");
}

TEST(AwsEc2Xml, CatalogJoinsOfferingsAndTheNewestSpotPrice) {
  InstanceType m5;
  m5.name = "m5.large";
  m5.offerings = {Offering{"", "on-demand", MicroUsdPerHour{0}, true},
                  Offering{"", "spot", MicroUsdPerHour{0}, true}};
  const std::vector<InstanceType> catalog =
      BuildCatalog({m5}, {{"m5.large", "us-east-1a"}, {"m5.large", "us-east-1b"}},
                   {{"m5.large", "us-east-1a", MicroUsdPerHour{30000}, "2026-11-22T00:00:00Z"},
                    {"m5.large", "us-east-1a", MicroUsdPerHour{31000}, "2026-11-23T00:00:00Z"}},
                   {{"m5.large", MicroUsdPerHour{96000}}});
  ASSERT_EQ(catalog.size(), 1u);
  // us-east-1b has no spot price: that offering is left out rather than priced at zero.
  ASSERT_EQ(catalog[0].offerings.size(), 3u);
  EXPECT_EQ(catalog[0].offerings[0],
            (Offering{"us-east-1a", "on-demand", MicroUsdPerHour{96000}, true}));
  EXPECT_EQ(catalog[0].offerings[1],
            (Offering{"us-east-1a", "spot", MicroUsdPerHour{31000}, true}));
  EXPECT_EQ(catalog[0].offerings[2],
            (Offering{"us-east-1b", "on-demand", MicroUsdPerHour{96000}, true}));
}

TEST(AwsEc2Xml, NewestImagePerArchitecture) {
  const std::vector<Image> newest = NewestPerArch({{"ami-1", "a", "amd64", "2026-01-01", "", {}},
                                                   {"ami-2", "b", "amd64", "2026-06-01", "", {}},
                                                   {"ami-3", "c", "arm64", "2025-01-01", "", {}}});
  ASSERT_EQ(newest.size(), 2u);
  EXPECT_EQ(newest[0].id, "ami-2");
  EXPECT_EQ(newest[1].id, "ami-3");
}

class CountingExecutor : public runtime::Executor {
 public:
  std::vector<Command> seen;
  std::vector<Event> Execute(const Command& command) override {
    seen.push_back(command);
    return {};
  }
};

TEST(AwsEc2Xml, RoutingSendsLaunchTerminateAndAckToAwsAndTheRestElsewhere) {
  CountingExecutor aws;
  CountingExecutor kube;
  RoutingExecutor routing(aws, kube);
  routing.Execute(Command{CommandId{1}, Seq{1}, LaunchInstance{}});
  routing.Execute(Command{CommandId{2}, Seq{1}, TerminateInstance{"i-1", "c"}});
  routing.Execute(Command{CommandId{3}, Seq{1}, DeleteQueueMessage{"m"}});
  routing.Execute(Command{CommandId{4}, Seq{1}, PatchNode{}});
  routing.Execute(Command{CommandId{5}, Seq{1}, EvictPod{}});
  routing.Execute(Command{CommandId{6}, Seq{1}, CreateNodeClaim{}});
  ASSERT_EQ(aws.seen.size(), 3u);
  ASSERT_EQ(kube.seen.size(), 3u);
  EXPECT_EQ(aws.seen[2].id, CommandId{3});
  EXPECT_EQ(kube.seen[0].id, CommandId{4});
}

}  // namespace
}  // namespace tenon::aws
