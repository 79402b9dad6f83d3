// libFuzzer target: a scenario's YAML either loads or is refused with ScenarioError, never
// another exception (yaml-cpp's, nlohmann's, the object parsers' are all turned into it). A
// loaded scenario keeps the promises the simulator relies on: positive tick and duration, at
// least one NodePool, workloads, jobs and actions sorted by time.
#include <algorithm>

#include "adapters/sim/scenario.h"
#include "tests/fuzz/fuzz.h"

namespace {

template <class T>
bool SortedByTime(const std::vector<T>& items) {
  return std::is_sorted(items.begin(), items.end(),
                        [](const T& a, const T& b) { return a.at < b.at; });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tenon;
  const std::string yaml = fuzz::Text(data, size);
  sim::Scenario scenario;
  // The seeds name their catalog as the examples do ("../catalogs/small.json").
  const bool loaded = fuzz::ReturnsOrThrows<sim::ScenarioError>(
      [&] { scenario = sim::ParseScenario(yaml, TENON_SOURCE_DIR "/examples/scenarios"); });
  if (!loaded) return 0;
  if (scenario.tick.value <= 0 || scenario.duration.value <= 0) fuzz::Fail("tick or duration <= 0");
  if (scenario.nodepools.empty()) fuzz::Fail("a scenario without a NodePool loaded");
  if (!SortedByTime(scenario.workloads) || !SortedByTime(scenario.jobs) ||
      !SortedByTime(scenario.actions)) {
    fuzz::Fail("workloads, jobs or actions out of time order");
  }
  return 0;
}
