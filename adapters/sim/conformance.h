// `tenon conformance`: cases taken from Karpenter's test suites, each a scenario (Kubernetes
// objects plus a timeline) and the outcome Karpenter's test expects, run through the same path a
// user's scenario takes and checked against the simulated world's final state. The case format
// is in docs/conformance.md.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace tenon::sim {

struct CaseResult {
  std::string file;
  std::string name;
  std::string source;     // The Karpenter test the case came from.
  std::string deviation;  // Why tenon differs here on purpose; empty: it must pass.
  bool passed = false;
  std::vector<std::string> failures;  // Each expectation that did not hold, or the error.
};

// Runs every case of `path` (a file, or a folder's .yaml files in name order). A case that cannot
// be read or run fails with its error; a file that cannot be parsed throws ScenarioError.
std::vector<CaseResult> RunConformance(const std::filesystem::path& path);

// One line per case and a summary; the exit code tenon conformance returns (1 when a case
// failed without a recorded deviation, or fewer than `pass_percent_min` percent passed).
int PrintConformance(const std::vector<CaseResult>& results, int pass_percent_min);

}  // namespace tenon::sim
