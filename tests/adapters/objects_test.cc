// Object parsing details the scheduler depends on: a pod's creation time (it orders pods of
// equal size) and its controlling owner (DaemonSet and mirror pods are not provisioned for).
#include "adapters/kube/objects.h"

#include <gtest/gtest.h>

#include <yaml-cpp/yaml.h>

namespace tenon::kube {
namespace {

TEST(ParseTimestamp, AcceptsUtcOffsetsAndFractions) {
  EXPECT_EQ(ParseTimestamp("1970-01-01T00:00:00Z"), Instant{0});
  EXPECT_EQ(ParseTimestamp("2026-01-01T00:00:00Z"), Instant{1'767'225'600'000'000'000});
  EXPECT_EQ(ParseTimestamp("2026-01-01T00:00:00.25Z"), Instant{1'767'225'600'250'000'000});
  EXPECT_EQ(ParseTimestamp("2026-01-01T02:30:00+02:30"), ParseTimestamp("2026-01-01T00:00:00Z"));
  EXPECT_EQ(ParseTimestamp("2025-12-31T23:00:00-01:00"), ParseTimestamp("2026-01-01T00:00:00Z"));
}

TEST(ParseTimestamp, RejectsWhatIsNotRfc3339) {
  EXPECT_THROW(ParseTimestamp("2026-02-30T00:00:00Z"), ObjectError);
  EXPECT_THROW(ParseTimestamp("2026-01-01 00:00:00Z"), ObjectError);
  EXPECT_THROW(ParseTimestamp("2026-01-01T00:00:00"), ObjectError);
  EXPECT_THROW(ParseTimestamp("yesterday"), ObjectError);
  // Signs, and years whose nanoseconds since the epoch overflow 64 bits.
  EXPECT_THROW(ParseTimestamp("-999-01-01T00:00:00Z"), ObjectError);
  EXPECT_THROW(ParseTimestamp("2026-01-01T-1:00:00Z"), ObjectError);
  EXPECT_THROW(ParseTimestamp("6026-01-01T00:00:00Z"), ObjectError);
  EXPECT_EQ(ParseTimestamp("2262-01-01T00:00:00Z"), Instant{9'214'646'400'000'000'000});
}

// Quantities and durations too large or too fine for 64 bits are refused, not overflowed.
TEST(ParseDuration, RefusesOverflow) {
  EXPECT_THROW(ParseDuration("2562047h2562047h"), ObjectError);
  EXPECT_THROW(ParseDuration("0.0000000000000000000001s"), ObjectError);
  EXPECT_THROW(ParseCpu("0.0000000000000000000001"), ObjectError);
  // A long whole part with a long fraction, in hours: past 128 bits before the division.
  EXPECT_THROW(ParseDuration("7111111111111111.111111111111120h"), ObjectError);
  EXPECT_EQ(ParseDuration("2562047h"), Duration{2'562'047LL * 3'600'000'000'000});
}

TEST(ParsePod, CreationTimeAndControllingOwner) {
  Pod pod = ParsePod(YAML::Load(R"(
metadata:
  name: web-1
  creationTimestamp: "2026-01-01T00:00:10Z"
  ownerReferences:
    - {kind: ConfigMap, name: settings}
    - {kind: ReplicaSet, name: web-abc, controller: true}
spec: {containers: [{name: c}]}
)"));
  EXPECT_EQ(pod.created, ParseTimestamp("2026-01-01T00:00:10Z"));
  EXPECT_EQ(pod.owner_kind, "ReplicaSet");
}

TEST(ParsePod, BadCreationTimeNamesThePodAndField) {
  try {
    ParsePod(YAML::Load("metadata: {name: p, creationTimestamp: soon}\nspec: {containers: []}"));
    ADD_FAILURE() << "no ObjectError";
  } catch (const ObjectError& e) {
    std::string message = e.what();
    EXPECT_NE(message.find("Pod p"), std::string::npos) << message;
    EXPECT_NE(message.find("metadata.creationTimestamp"), std::string::npos) << message;
  }
}

TEST(ParseNode, CreationTime) {
  Node node = ParseNode(
      YAML::Load("metadata: {name: n, creationTimestamp: \"2026-01-01T00:00:00Z\"}\nstatus: {}"));
  EXPECT_EQ(node.created, ParseTimestamp("2026-01-01T00:00:00Z"));
}

TEST(ParsePod, DoNotDisruptTrueOrADuration) {
  auto parse = [](const std::string& value) {
    return ParsePod(YAML::Load("metadata: {name: p, annotations: {karpenter.sh/do-not-disrupt: \"" +
                               value + "\"}}\nspec: {containers: []}"));
  };
  EXPECT_TRUE(parse("true").do_not_disrupt);
  EXPECT_EQ(parse("true").do_not_disrupt_for, std::nullopt);
  Pod timed = parse("30m");
  EXPECT_TRUE(timed.do_not_disrupt);
  EXPECT_EQ(timed.do_not_disrupt_for, Duration{30 * kMinute.value});
  EXPECT_FALSE(parse("false").do_not_disrupt);
  try {
    parse("soon");
    ADD_FAILURE() << "no ObjectError";
  } catch (const ObjectError& e) {
    EXPECT_NE(std::string(e.what()).find("do-not-disrupt"), std::string::npos) << e.what();
  }
}

TEST(ParseNodeClass, ResolvedStatusIds) {
  NodeClass nc = ParseNodeClass(YAML::Load(R"(
metadata: {name: default}
spec: {role: r, amiSelectorTerms: [{alias: al2023@latest}]}
status:
  amis: [{id: ami-1, name: al2023, requirements: []}, {id: ami-2}]
  subnets: [{id: subnet-a, zone: us-east-1a}]
  securityGroups: [{id: sg-1, name: nodes}]
)"));
  EXPECT_EQ(nc.amis, (std::vector<std::string>{"ami-1", "ami-2"}));
  EXPECT_EQ(nc.subnets, (std::vector<std::string>{"subnet-a"}));
  EXPECT_EQ(nc.security_groups, (std::vector<std::string>{"sg-1"}));
  EXPECT_EQ(nc.zones, (std::vector<std::string>{"us-east-1a"}));
  EXPECT_TRUE(nc.archs.empty());  // ami-1 and ami-2 name no architecture: any is served.
}

// Where the NodeClass can launch, as its controller's status says: the zones of its subnets
// and the architectures its AMIs' requirements name, each once, in order.
TEST(ParseNodeClass, ZonesAndArchitecturesFromStatus) {
  NodeClass nc = ParseNodeClass(YAML::Load(R"(
metadata: {name: default}
spec: {role: r, amiSelectorTerms: [{alias: al2023@latest}]}
status:
  amis:
    - {id: ami-arm, requirements: [{key: kubernetes.io/arch, operator: In, values: [arm64]}]}
    - id: ami-x86
      requirements:
        - {key: kubernetes.io/arch, operator: In, values: [amd64]}
        - {key: karpenter.k8s.aws/instance-gpu-count, operator: DoesNotExist}
  subnets:
    - {id: subnet-c, zone: us-east-1c, zoneID: use1-az3}
    - {id: subnet-a, zone: us-east-1a, zoneID: use1-az1}
    - {id: subnet-a2, zone: us-east-1a, zoneID: use1-az1}
)"));
  EXPECT_EQ(nc.zones, (std::vector<std::string>{"us-east-1a", "us-east-1c"}));
  EXPECT_EQ(nc.archs, (std::vector<std::string>{"amd64", "arm64"}));
  EXPECT_EQ(nc.subnets, (std::vector<std::string>{"subnet-c", "subnet-a", "subnet-a2"}));
}

TEST(ParsePod, PriorityAndDeletionCost) {
  Pod pod = ParsePod(YAML::Load(R"(
metadata:
  name: p
  annotations: {controller.kubernetes.io/pod-deletion-cost: "-100"}
spec: {priority: 1000, containers: []}
)"));
  EXPECT_EQ(pod.priority, 1000);
  EXPECT_EQ(pod.deletion_cost, -100);
  EXPECT_THROW(ParsePod(YAML::Load("metadata: {name: p, annotations: "
                                   "{controller.kubernetes.io/pod-deletion-cost: lots}}\n"
                                   "spec: {containers: []}")),
               ObjectError);
}

TEST(ParsePodDisruptionBudget, SelectorAndAllowedDisruptions) {
  PodDisruptionBudget pdb = ParsePodDisruptionBudget(YAML::Load(R"(
metadata: {name: cart, namespace: shop}
spec:
  minAvailable: 2
  selector:
    matchLabels: {app: cart}
    matchExpressions: [{key: tier, operator: In, values: [web]}]
status: {disruptionsAllowed: 1, currentHealthy: 3}
)"));
  EXPECT_EQ(pdb.ns, "shop");
  EXPECT_EQ(pdb.name, "cart");
  EXPECT_EQ(pdb.selector.match_labels.at("app"), "cart");
  ASSERT_EQ(pdb.selector.match_expressions.size(), 1u);
  EXPECT_EQ(pdb.disruptions_allowed, 1);
  // Not yet reconciled: no status, nothing allowed.
  EXPECT_EQ(
      ParsePodDisruptionBudget(YAML::Load("metadata: {name: x}\nspec: {}")).disruptions_allowed, 0);
}

TEST(LoadDocuments, ReadsEveryDocumentOfAStream) {
  const auto docs = LoadDocuments("a: 1\n---\nb: 2\n---\n");
  ASSERT_EQ(docs.size(), 3u);
  EXPECT_EQ(docs[0]["a"].as<int>(), 1);
  EXPECT_EQ(docs[1]["b"].as<int>(), 2);
  EXPECT_TRUE(docs[2].IsNull());
}

TEST(LoadDocuments, RefusesAStrayTokenWhereYamlCppWouldLoop) {
  // yaml-cpp 0.7's LoadAll never returns on these: each document it starts makes no progress.
  for (const char* text : {",", "[1, 2],", "a: 1\n---\n,", "- a\n,"}) {
    EXPECT_THROW(LoadDocuments(text), YAML::ParserException) << text;
  }
}

NodeOverlay Overlay(const std::string& spec) {
  return ParseNodeOverlay(YAML::Load("kind: NodeOverlay\nmetadata: {name: o}\nspec: " + spec));
}

// spec.price and spec.priceAdjustment as Karpenter's CRD patterns take them: an unsigned price in
// dollars, a signed amount, a signed percent no lower than -100%.
TEST(ParseNodeOverlay, PricesAndAdjustments) {
  EXPECT_EQ(Overlay("{price: \"5.00\"}").price, (PriceChange{PriceChange::Kind::kSet, 5'000'000}));
  EXPECT_EQ(Overlay("{price: \"0.432\"}").price, (PriceChange{PriceChange::Kind::kSet, 432'000}));
  EXPECT_EQ(Overlay("{priceAdjustment: \"+10%\"}").price,
            (PriceChange{PriceChange::Kind::kPercent, 100'000'000}));
  EXPECT_EQ(Overlay("{priceAdjustment: \"-100%\"}").price,
            (PriceChange{PriceChange::Kind::kPercent, -1'000'000'000}));
  EXPECT_EQ(Overlay("{priceAdjustment: \"+100.102%\"}").price,
            (PriceChange{PriceChange::Kind::kPercent, 1'001'020'000}));
  EXPECT_EQ(Overlay("{priceAdjustment: \"-0.50\"}").price,
            (PriceChange{PriceChange::Kind::kAdd, -500'000}));
  EXPECT_EQ(Overlay("{priceAdjustment: \"+.5\"}").price,
            (PriceChange{PriceChange::Kind::kAdd, 500'000}));
  EXPECT_FALSE(Overlay("{capacity: {smarter-devices/fuse: 1}}").price.has_value());
  for (const char* refused : {"1%", "1", "1.3", "10%", "-100.0%", "-101%", "+5.", "+1e3"}) {
    EXPECT_THROW(Overlay(std::string("{priceAdjustment: \"") + refused + "\"}"), ObjectError)
        << refused;
  }
  for (const char* refused : {"+42", ".5", "42.", "42%", "-1", "1e10"}) {
    EXPECT_THROW(Overlay(std::string("{price: \"") + refused + "\"}"), ObjectError) << refused;
  }
  try {
    Overlay("{price: \"1\", priceAdjustment: \"+1%\"}");
    ADD_FAILURE() << "both price fields accepted";
  } catch (const ObjectError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot set both 'price' and 'priceAdjustment'"),
              std::string::npos)
        << e.what();
  }
}

// Weight, capacity and requirements; what Karpenter refuses only at run time is kept, with why.
TEST(ParseNodeOverlay, CapacityWeightAndRuntimeValidation) {
  NodeOverlay o = Overlay(R"({weight: 10, requirements: [{key: karpenter.sh/capacity-type,
      operator: In, values: [spot]}], capacity: {smarter-devices/fuse: 2, hugepages-2Mi: 100Mi}})");
  EXPECT_EQ(o.weight, 10);
  ASSERT_EQ(o.requirements.size(), 1u);
  EXPECT_EQ(o.capacity.at("smarter-devices/fuse"), 2);
  EXPECT_EQ(o.capacity.at("hugepages-2Mi"), 100 * 1024 * 1024);
  EXPECT_TRUE(o.invalid.empty()) << o.invalid;
  EXPECT_EQ(Overlay("{}").weight, 0);
  EXPECT_THROW(Overlay("{weight: 0}"), ObjectError);
  EXPECT_THROW(Overlay("{weight: 10001}"), ObjectError);
  EXPECT_NE(Overlay("{capacity: {cpu: 1}}").invalid.find("invalid capacity: cpu"),
            std::string::npos);
  const std::string key = "test.com.test/test-" + std::string(250, 'a');
  EXPECT_NE(Overlay("{requirements: [{key: " + key + ", operator: Exists}]}").invalid, "");
  EXPECT_NE(Overlay("{requirements: [{key: kubernetes.io/hostname, operator: Exists}]}").invalid,
            "");
  EXPECT_EQ(Overlay("{requirements: [{key: karpenter.k8s.aws/ec2nodeclass, operator: In, "
                    "values: [default]}]}")
                .invalid,
            "");
}

}  // namespace
}  // namespace tenon::kube
