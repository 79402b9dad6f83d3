// Shared by the incident-command tests: scenarios whose outcome is known, run into a log kept
// for the test, and the tenon binary run on it.
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <string>

#include "tests/integration/scenario_run.h"

namespace tenon::testing {

// Two deployments on two m5.xlarge nodes, scaled down to one pod each at 4 min; the PDB a-pdb
// (minAvailable 1) protects a's last pod, so a's node is blocked by it and b's node is the one
// consolidated onto it.
inline std::string PdbScenario() {
  return Scenario(R"(
duration: 9m
workloads:
  - {name: a, replicas: 3, cpu: 1200m, memory: 512Mi}
  - {at: 2m, name: b, replicas: 3, cpu: 1200m, memory: 512Mi}
  - {at: 4m, name: a, replicas: 1}
  - {at: 4m, name: b, replicas: 1}
budgets:
  - {name: a-pdb, app: a, minAvailable: 1}
)");
}

// One m5.xlarge ($0.192/h) left with a single 1200m pod: replaced by an m5.large ($0.096/h).
inline std::string ReplaceScenario() {
  return Scenario(R"(
duration: 9m
workloads:
  - {name: a, replicas: 3, cpu: 1200m, memory: 512Mi}
  - {at: 4m, name: a, replicas: 1}
)");
}

// The cheapest offering (m5.large in us-east-1a) answers InsufficientInstanceCapacity.
inline std::string IceScenario() {
  return Scenario(R"(
duration: 6m
workloads:
  - {name: a, replicas: 3, cpu: 500m, memory: 512Mi}
cloud:
  insufficientCapacity: [m5.large/us-east-1a/on-demand]
)");
}

// A scenario run with its log kept in `dir`/log for the test to query.
struct KeptRun {
  TempDir dir;
  Outcome outcome;
  std::filesystem::path log() const { return dir.path() / "log"; }
  std::unique_ptr<log::EventLog> Open() const {
    log::OpenOptions open;
    open.read_only = true;
    open.create_if_missing = false;
    return log::EventLog::Open(log(), open);
  }
};

inline std::unique_ptr<KeptRun> RunKept(const std::string& yaml) {
  auto run = std::make_unique<KeptRun>();
  run->outcome = Simulate(yaml, &run->dir);
  EXPECT_EQ(run->outcome.verdict, replay::Verdict::kIdentical) << run->outcome.verify_detail;
  return run;
}

struct CommandResult {
  int exit_code = -1;
  std::string out;
};

// Runs the tenon binary with `args` (no shell metacharacters), capturing stdout.
inline CommandResult Tenon(const std::string& args) {
  CommandResult result;
  FILE* pipe = ::popen((std::string(TENON_BINARY) + " " + args + " 2>/dev/null").c_str(), "r");
  if (pipe == nullptr) return result;
  char buffer[4096];
  std::size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) result.out.append(buffer, n);
  const int status = ::pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

// The node a NodeClaim registered as, from its lifecycle history.
inline std::string NodeOf(const Outcome& o, const std::string& claim) {
  for (const auto& d : o.history) {
    if (d.nodeclaim == claim && !d.node_name.empty()) return d.node_name;
  }
  return {};
}

}  // namespace tenon::testing
