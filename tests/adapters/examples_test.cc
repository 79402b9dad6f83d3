// Every NodePool and EC2NodeClass under examples/nodepools and examples/nodeclasses, written as
// Karpenter v1 users write them, parses with tenon's own parser into the values the YAML says.
#include <gtest/gtest.h>

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "adapters/kube/objects.h"

namespace tenon::kube {
namespace {

constexpr std::size_t kDocumentsPerFileMax = 64;

struct Parsed {
  std::map<std::string, NodePool> pools;
  std::map<std::string, NodeClass> classes;
  std::map<std::string, NodeOverlay> overlays;
  std::vector<std::string> files;
};

// Parses every document of every .yaml file in examples/<folder>; a document of another kind,
// or one that does not parse, fails the test.
Parsed ParseFolder(const std::string& folder) {
  Parsed parsed;
  std::vector<std::filesystem::path> paths;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::filesystem::path(TENON_EXAMPLES_DIR) / folder)) {
    if (entry.path().extension() == ".yaml") paths.push_back(entry.path());
  }
  std::sort(paths.begin(), paths.end());
  for (const auto& path : paths) {
    parsed.files.push_back(path.filename().string());
    const std::vector<YAML::Node> documents = YAML::LoadAllFromFile(path.string());
    EXPECT_LE(documents.size(), kDocumentsPerFileMax) << path;
    for (const auto& doc : documents) {
      const std::string kind = doc["kind"].as<std::string>("");
      try {
        if (kind == "NodePool") {
          NodePool pool = ParseNodePool(doc);
          parsed.pools.emplace(pool.name, pool);
        } else if (kind == "EC2NodeClass") {
          NodeClass nodeclass = ParseNodeClass(doc);
          parsed.classes.emplace(nodeclass.name, nodeclass);
        } else if (kind == "NodeOverlay") {
          NodeOverlay overlay = ParseNodeOverlay(doc);
          parsed.overlays.emplace(overlay.name, overlay);
        } else {
          ADD_FAILURE() << path << ": unexpected kind '" << kind << "'";
        }
      } catch (const ObjectError& e) {
        ADD_FAILURE() << path << ": " << e.what();
      }
    }
  }
  return parsed;
}

const Requirement& Find(const NodePool& pool, const std::string& key, RequirementOp op) {
  auto it = std::find_if(pool.requirements.begin(), pool.requirements.end(),
                         [&](const Requirement& r) { return r.key == key && r.op == op; });
  if (it == pool.requirements.end()) throw std::runtime_error(pool.name + " lacks " + key);
  return *it;
}

// Karpenter's documented NodeOverlays, with the values its documentation gives them.
TEST(Examples, NodeOverlaysParseWithTheirValues) {
  const Parsed parsed = ParseFolder("nodeoverlays");
  EXPECT_EQ(parsed.files,
            (std::vector<std::string>{"conflict-resolution.yaml", "custom-devices.yaml",
                                      "example-overlay.yaml"}));
  const auto& overlays = parsed.overlays;
  ASSERT_EQ(overlays.size(), 4u);
  for (const auto& [name, overlay] : overlays) EXPECT_EQ(overlay.invalid, "") << name;
  EXPECT_EQ(overlays.at("custom-devices").capacity,
            (std::map<std::string, std::int64_t>{{"custom-hardware/accelerator", 2},
                                                 {"smarter-devices/fuse", 1}}));
  EXPECT_FALSE(overlays.at("custom-devices").price.has_value());
  EXPECT_EQ(overlays.at("overlay-a").weight, 5);
  EXPECT_EQ(overlays.at("overlay-a").price,
            (PriceChange{PriceChange::Kind::kPercent, -100'000'000}));
  EXPECT_EQ(overlays.at("overlay-a").capacity.at("hugepages-2Mi"), 50 * 1024 * 1024);
  EXPECT_EQ(overlays.at("overlay-b").weight, 10);
  EXPECT_EQ(overlays.at("overlay-b").price,
            (PriceChange{PriceChange::Kind::kPercent, -200'000'000}));
  EXPECT_EQ(overlays.at("example-overlay").requirements.size(), 3u);
  EXPECT_EQ(overlays.at("example-overlay").price,
            (PriceChange{PriceChange::Kind::kPercent, 100'000'000}));
}

TEST(Examples, NodePoolsParseWithTheirValues) {
  const Parsed parsed = ParseFolder("nodepools");
  EXPECT_EQ(parsed.files,
            (std::vector<std::string>{"balanced.yaml", "disruption-budgets.yaml", "gpu.yaml",
                                      "reserved-first.yaml", "spot-and-on-demand.yaml",
                                      "static.yaml", "weighted.yaml"}));
  const auto& pools = parsed.pools;
  ASSERT_EQ(pools.size(), 9u);
  EXPECT_EQ(pools.at("static-capacity").replicas, 10);  // static.yaml
  EXPECT_EQ(pools.at("static-capacity").limits.nodes, 15);
  EXPECT_EQ(pools.at("balanced").consolidation_policy, ConsolidationPolicy::kBalanced);
  EXPECT_EQ(pools.at("balanced").consolidate_after, ParseDuration("1m"));

  const NodePool& general = pools.at("default");  // spot-and-on-demand.yaml
  EXPECT_EQ(general.nodeclass, "default");
  EXPECT_EQ(general.requirements.size(), 8u);
  EXPECT_EQ(Find(general, label::kInstanceFamily, RequirementOp::kExists).min_values, 5);
  EXPECT_EQ(Find(general, label::kInstanceCpu, RequirementOp::kLt).values,
            std::vector<std::string>{"33"});
  EXPECT_EQ(general.limits.cpu, Millicores{1'000'000});
  EXPECT_EQ(general.limits.memory, ParseMemory("1000Gi"));
  EXPECT_EQ(general.consolidate_after, ParseDuration("1m"));
  EXPECT_EQ(general.termination_grace_period, ParseDuration("48h"));
  EXPECT_EQ(general.labels.at("billing-team"), "platform");

  EXPECT_EQ(pools.at("savings-plan").weight, 50);  // weighted.yaml
  EXPECT_EQ(pools.at("savings-plan").limits.cpu, Millicores{64'000});
  EXPECT_EQ(Find(pools.at("savings-plan"), label::kInstanceType, RequirementOp::kIn).min_values, 2);
  EXPECT_EQ(pools.at("general").weight, 10);

  const NodePool& reserved = pools.at("reserved-first");  // reserved-first.yaml
  EXPECT_EQ(reserved.weight, 100);
  EXPECT_EQ(reserved.nodeclass, "reserved");
  EXPECT_EQ(Find(reserved, label::kCapacityType, RequirementOp::kIn).values,
            (std::vector<std::string>{"reserved", "on-demand", "spot"}));
  EXPECT_EQ(reserved.consolidation_policy, ConsolidationPolicy::kWhenEmpty);

  const NodePool& gpu = pools.at("gpu");  // gpu.yaml
  ASSERT_EQ(gpu.taints.size(), 1u);
  EXPECT_EQ(gpu.taints[0], (Taint{"nvidia.com/gpu", "true", TaintEffect::kNoSchedule}));
  ASSERT_EQ(gpu.startup_taints.size(), 1u);
  EXPECT_EQ(gpu.startup_taints[0].effect, TaintEffect::kNoExecute);
  EXPECT_EQ(gpu.expire_after, std::nullopt);  // Never.
  EXPECT_EQ(gpu.limits.extended.at("nvidia.com/gpu"), 16);
  ASSERT_EQ(gpu.budgets.size(), 1u);
  EXPECT_EQ(gpu.budgets[0].nodes, "1");

  const NodePool& budgeted = pools.at("budgeted");  // disruption-budgets.yaml
  ASSERT_EQ(budgeted.budgets.size(), 4u);
  EXPECT_EQ(budgeted.budgets[0].nodes, "20%");
  EXPECT_EQ(budgeted.budgets[1].schedule, "0 9 * * mon-fri");
  EXPECT_EQ(budgeted.budgets[1].duration, ParseDuration("8h"));
  EXPECT_EQ(budgeted.budgets[1].reasons, std::vector<std::string>{"Underutilized"});
  EXPECT_EQ(budgeted.budgets[3].schedule, "@daily");
  EXPECT_EQ(budgeted.budgets[3].duration, ParseDuration("2h30m"));
  EXPECT_TRUE(budgeted.budgets[3].reasons.empty());
  EXPECT_EQ(budgeted.expire_after, ParseDuration("168h"));
  EXPECT_EQ(pools.at("stateful").consolidate_after, std::nullopt);  // Never.
}

TEST(Examples, NodeClassesParseWithTheirValues) {
  const Parsed parsed = ParseFolder("nodeclasses");
  EXPECT_EQ(parsed.files, (std::vector<std::string>{"capacity-reservations.yaml", "custom-ami.yaml",
                                                    "default.yaml", "gpu.yaml", "tuned.yaml"}));
  const auto& classes = parsed.classes;
  ASSERT_EQ(classes.size(), 6u);
  EXPECT_EQ(classes.at("default").role, "KarpenterNodeRole-my-cluster");
  EXPECT_EQ(classes.at("default").ami_family, "al2023");  // From the alias.
  EXPECT_EQ(classes.at("custom-ami").ami_family, "AL2023");
  EXPECT_EQ(classes.at("custom-ami").role, "KarpenterNodeInstanceProfile-my-cluster");
  EXPECT_EQ(classes.at("bottlerocket").ami_family, "bottlerocket");
  EXPECT_EQ(classes.at("tuned").max_pods, 110);
  EXPECT_EQ(classes.at("tuned").pods_per_core, 4);
  EXPECT_FALSE(classes.at("gpu").max_pods.has_value());
  EXPECT_EQ(classes.at("reserved").role, "KarpenterNodeRole-my-cluster");
}

}  // namespace
}  // namespace tenon::kube
