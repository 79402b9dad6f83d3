// Catalog files: offerings written by hand (zones, capacity types, prices, availability) take
// the place of the ones a type's zones and usage classes would make; a type's own labels,
// extended resources and allocatable reach the controller and the simulated cluster; bad
// entries are refused with the file, the type and the field.
#include <gtest/gtest.h>

#include <fstream>
#include <map>

#include "adapters/sim/scenario.h"
#include "adapters/sim/simulator.h"
#include "tests/support/scenario_objects.h"
#include "tests/support/temp_dir.h"

namespace tenon::sim {
namespace {

std::filesystem::path Write(const testing::TempDir& dir, const std::string& offerings) {
  const auto path = dir.path() / "catalog.json";
  std::ofstream(path) << R"({"instance_types": [
    {"name": "m5.large", "vcpu": 2, "memory_mib": 8192, "architectures": ["x86_64"],
     "on_demand_price_usd_hour": 0.096, "zones": ["us-east-1a"], "usage_classes": ["on-demand"]},
    {"name": "x1.test", "vcpu": 4, "memory_mib": 16384, "architectures": ["arm64"],
     "offerings": )" + offerings +
                             "}]}";
  return path;
}

TEST(CatalogFile, HandWrittenOfferingsKeepTheirPricesAndAvailability) {
  testing::TempDir dir;
  const auto types = LoadCatalogJson(
      Write(dir, R"([{"zone": "us-east-1a", "capacity_type": "spot", "price_usd_hour": 0.02},
                     {"zone": "us-east-1b", "capacity_type": "on-demand", "price_usd_hour": 0.2,
                      "available": false}])"),
      1);
  ASSERT_EQ(types.size(), 2u);
  const InstanceType& x = types[1];
  EXPECT_EQ(x.name, "x1.test");
  EXPECT_EQ(x.arch, "arm64");
  ASSERT_EQ(x.offerings.size(), 2u);
  EXPECT_EQ(x.offerings[0], (Offering{"us-east-1a", "spot", MicroUsdPerHour{20'000}, true}));
  EXPECT_EQ(x.offerings[1], (Offering{"us-east-1b", "on-demand", MicroUsdPerHour{200'000}, false}));
  // The other type's offerings still come from its zones and usage classes.
  ASSERT_EQ(types[0].offerings.size(), 1u);
  EXPECT_EQ(types[0].offerings[0].price, MicroUsdPerHour{96'000});
}

TEST(CatalogFile, RefusesBadOfferingsNamingTheField) {
  testing::TempDir dir;
  const auto refused = [&](const std::string& offerings, const std::string& expected) {
    const auto path = Write(dir, offerings);
    try {
      LoadCatalogJson(path, 1);
      ADD_FAILURE() << "accepted " << offerings;
    } catch (const ScenarioError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(path.string()), std::string::npos) << what;
      EXPECT_NE(what.find(expected), std::string::npos) << what;
    }
  };
  refused(R"([{"zone": "us-east-1a", "capacity_type": "spto", "price_usd_hour": 1}])",
          "x1.test: offerings[0].capacity_type: on-demand, spot or reserved");
  refused(R"([{"zone": "us-east-1a", "capacity_type": "spot", "price_usd_hour": -1}])",
          "offerings[0].price_usd_hour: must be a price");
  refused(R"([{"zone": "us-east-1a", "capacity_type": "spot", "price": 1}])",
          "offerings[0].price: unknown field");
  refused(R"([{"zone": "a", "capacity_type": "spot", "price_usd_hour": 1},
              {"zone": "a", "capacity_type": "spot", "price_usd_hour": 2}])",
          "offerings[1]: a/spot is listed twice");
  refused(R"({"zone": "a"})", "x1.test: offerings: a list");
}

}  // namespace
}  // namespace tenon::sim

namespace tenon::sim {
namespace {

// A catalog of Karpenter's test kind: a type whose own label a pod selects (and another pod
// refuses), an extended resource only one type advertises, and allocatable written by hand. The
// controller launches the type each pod needs, the node carries the type's label (from the
// controller's registration, which the simulated scheduler then requires), and the simulated
// kubelet reports the hand-written allocatable.
TEST(CatalogFile, OwnLabelsExtendedResourcesAndAllocatableReachTheCluster) {
  testing::TempDir dir;
  std::ofstream(dir.path() / "catalog.json") << R"({"instance_types": [
    {"name": "fake.small", "vcpu": 2, "memory_mib": 4096, "architectures": ["x86_64"],
     "offerings": [{"zone": "us-east-1a", "capacity_type": "on-demand", "price_usd_hour": 0.05}]},
    {"name": "fake.large", "vcpu": 8, "memory_mib": 32768, "architectures": ["x86_64"],
     "labels": {"example.com/size": "large"},
     "extended_resources": {"example.com/fpga": 2},
     "allocatable": {"cpu": "7", "memory": "28Gi", "pods": 50, "example.com/fpga": 2},
     "offerings": [{"zone": "us-east-1a", "capacity_type": "on-demand", "price_usd_hour": 0.4}]}
  ]})";
  std::ofstream(dir.path() / "scenario.yaml") << R"(kind: Scenario
name: own-catalog
duration: 5m
catalog: catalog.json
)" << testing::kDefaultPoolAndClass << R"(---
apiVersion: v1
kind: Pod
metadata: {name: sized}
spec:
  nodeSelector: {example.com/size: large}
  containers: [{name: c, image: x, resources: {requests: {cpu: 100m}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: fpga}
spec:
  containers: [{name: c, image: x, resources: {limits: {example.com/fpga: 1}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: plain}
spec:
  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms:
        - matchExpressions: [{key: example.com/size, operator: DoesNotExist}]
  containers: [{name: c, image: x, resources: {requests: {cpu: 500m}}}]
)";
  const Scenario scenario = LoadScenario(dir.path() / "scenario.yaml");
  SimulateOptions options;
  options.log_dir = dir.path() / "log";
  std::map<std::string, std::string> type_of_pod;
  std::map<std::string, Node> nodes;
  options.on_end = [&](const World& world) {
    nodes = world.nodes();
    for (const auto& [key, pod] : world.pods()) {
      auto node = world.nodes().find(pod.node_name.str());
      if (node == world.nodes().end()) continue;
      type_of_pod[pod.name] = node->second.labels.at(label::kInstanceType);
    }
  };
  Simulate(scenario, options);
  EXPECT_EQ(type_of_pod["sized"], "fake.large");
  EXPECT_EQ(type_of_pod["fpga"], "fake.large");
  EXPECT_EQ(type_of_pod["plain"], "fake.small");
  std::size_t large = 0;
  for (const auto& [name, node] : nodes) {
    if (node.labels.at(label::kInstanceType) != "fake.large") continue;
    ++large;
    EXPECT_EQ(node.labels.at("example.com/size"), "large");
    EXPECT_EQ(
        node.allocatable,
        (Resources{
            Millicores{7'000}, Bytes{28 * 1024 * kMebibyte.value}, 50, {{"example.com/fpga", 2}}}));
  }
  EXPECT_GE(large, 1u);
}

TEST(CatalogFile, RefusesBadLabelsResourcesAndAllocatable) {
  testing::TempDir dir;
  const auto refused = [&](const std::string& own, const std::string& expected) {
    const auto path = dir.path() / "catalog.json";
    std::ofstream(path) << R"({"instance_types": [{"name": "x1.test", "vcpu": 4,
      "memory_mib": 16384, "architectures": ["arm64"], "on_demand_price_usd_hour": 0.1,
      "zones": ["us-east-1a"], "usage_classes": ["on-demand"], )" +
                               own + "}]}";
    try {
      LoadCatalogJson(path, 1);
      ADD_FAILURE() << "accepted " << own;
    } catch (const ScenarioError& e) {
      EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
    }
  };
  refused(R"("labels": {"size": 3})", "x1.test: labels.size: a string");
  refused(R"("extended_resources": {"example.com/fpga": -1})",
          "extended_resources.example.com/fpga: must be a whole number");
  refused(R"("allocatable": {"cpu": "lots"})", "allocatable.cpu: ");
  refused(R"("allocatable": {"pods": "1.5"})", "allocatable.pods: must be a whole number");
}

}  // namespace
}  // namespace tenon::sim
