// The simulated kubelet is the world's own, and checks the core's estimate of allocatable: on
// every instance type of the catalog the core never plans on more than the kubelet reports, and
// a simulation reports every node that falls short of what tenon planned on.
//
// The same tests are built a second time against a mutant of the core's formula
// (reducers/catalog.cc with kube-reserved memory per pod cut from 11 MiB to 1 MiB; see
// CMakeLists.txt): there both must catch it, or the check checks nothing.
#include <gtest/gtest.h>

#include "adapters/sim/kubelet.h"
#include "adapters/sim/simulator.h"
#include "reducers/core.h"
#include "tests/integration/helpers.h"

namespace tenon::testing {
namespace {

#ifdef TENON_MUTANT_CORE
constexpr bool kMutant = true;
#else
constexpr bool kMutant = false;
#endif

// The kubelet configurations a NodeClass can give: none, maxPods, podsPerCore.
std::vector<std::optional<NodeClass>> KubeletConfigs() {
  NodeClass max_pods;
  max_pods.max_pods = 20;
  NodeClass per_core;
  per_core.pods_per_core = 4;
  return {std::nullopt, max_pods, per_core};
}

TEST(Kubelet, TheCoreNeverPlansOnMoreThanAKubeletReports) {
  const auto catalog = sim::LoadCatalogJson(TENON_CATALOG, 1);
  ASSERT_GT(catalog.size(), 100u);
  const Settings settings;
  std::size_t over = 0;
  std::string first;
  for (const auto& config : KubeletConfigs()) {
    const NodeClass* nodeclass = config ? &*config : nullptr;
    for (const auto& type : catalog) {
      const Resources planned = Allocatable(type, settings, nodeclass);
      const Resources reported = sim::KubeletAllocatable(type, nodeclass, settings.reserved_enis);
      if (!Fits(planned, reported)) {
        if (over++ == 0) first = type.name;
        continue;
      }
      // Not needlessly cautious either: the same cpu, pods and devices, memory within the
      // rounding of a MiB-grained estimate.
      EXPECT_EQ(planned.cpu, reported.cpu) << type.name;
      EXPECT_EQ(planned.pods, reported.pods) << type.name;
      EXPECT_EQ(planned.extended, reported.extended) << type.name;
      EXPECT_LT(reported.memory.value - planned.memory.value, 2 * kMebibyte.value) << type.name;
    }
  }
  if (kMutant) {
    EXPECT_GT(over, 0u) << "the mutant core's estimate went unnoticed";
  } else {
    EXPECT_EQ(over, 0u) << "the core plans on more than the kubelet of " << first << " reports";
  }
}

TEST(Kubelet, ASimulationReportsNodesShortOfWhatTenonPlannedOn) {
  TempDir dir;
  auto scenario =
      sim::LoadScenario(std::filesystem::path(TENON_SOURCE_DIR) / "examples/scenarios/demo.yaml");
  sim::SimulateOptions options;
  options.log_dir = dir.path() / "log";
  const auto result = sim::Simulate(scenario, options);
  ASSERT_GT(result.world.nodes, 0u);
  if (kMutant) {
    EXPECT_GT(result.world.allocatable_overestimates, 0u);
    EXPECT_NE(result.world.first_overestimate.find("memory (bytes) "), std::string::npos)
        << result.world.first_overestimate;
  } else {
    EXPECT_EQ(result.world.allocatable_overestimates, 0u) << result.world.first_overestimate;
  }
}

}  // namespace
}  // namespace tenon::testing
