// The churning cluster bench_run and bench_simulate drive: `deployments` Deployments of
// `replicas` pods (500-1000m CPU, 0.5-2 GiB) appear over the first half of `build_seconds` on one
// NodePool of six 4- and 8-vCPU types, spot and on-demand, `consolidateAfter: 1m`; then for
// `churn_seconds` one deployment scales to between half and one and a half times its size every
// `scale_every_seconds`, a spot interruption arrives every 5 minutes, a rebalance recommendation
// every 15, one instance is terminated behind the controller's back and one NodeClaim deleted
// by hand (at minutes 30 and 45 of each hour).
#pragma once

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <filesystem>
#include <random>
#include <string>

#include "adapters/sim/scenario.h"

namespace tenon::bench {

inline constexpr Instant kStart{1'767'225'600'000'000'000};  // 2026-01-01T00:00:00Z
inline constexpr const char* kTypes[] = {"m5.2xlarge",  "m5a.2xlarge", "m6i.2xlarge",
                                         "m6a.2xlarge", "m5.xlarge",   "m6i.xlarge"};

struct ChurnArgs {
  std::string catalog = "data/catalog/ec2-us-east-1.json";
  std::int64_t deployments = 100;
  std::int64_t replicas = 500;
  std::int64_t build_seconds = 1200;  // Deployments appear over the first half of it.
  std::int64_t churn_seconds = 3600;
  std::int64_t scale_every_seconds = 20;
};

// The bytes of the files under `dir`. RocksDB may delete a compacted table file while the walk
// is under way (the log is still open): a file that vanishes counts as nothing, not an error.
inline std::uintmax_t DirBytes(const std::filesystem::path& dir) {
  std::uintmax_t bytes = 0;
  std::error_code ec;
  for (std::filesystem::recursive_directory_iterator it(dir, ec), end; !ec && it != end;
       it.increment(ec)) {
    std::error_code size_ec;
    const std::uintmax_t size = it->file_size(size_ec);
    if (!size_ec && it->is_regular_file(size_ec)) bytes += size;
  }
  return bytes;
}

inline Duration Seconds(std::int64_t s) {
  return Duration{s * kSecond.value};
}

inline sim::WorkloadStep Deployment(std::int64_t i, std::int64_t replicas, Duration at) {
  static constexpr std::int64_t kCpu[] = {500, 750, 1000};
  static constexpr std::int64_t kMemMib[] = {512, 1024, 2048};
  sim::WorkloadStep step;
  char name[32];
  std::snprintf(name, sizeof name, "app-%03" PRId64, i);  // Fixed width: no name prefixes another.
  step.at = at;
  step.name = name;
  step.replicas = replicas;
  step.requests = {Millicores{kCpu[i % 3]}, Bytes{kMemMib[(i / 3) % 3] * kMebibyte.value}, 0, {}};
  return step;
}

inline void AddChurn(const ChurnArgs& args, sim::Scenario& scenario) {
  std::mt19937_64 rng(scenario.seed);
  const std::int64_t from = args.build_seconds, to = args.build_seconds + args.churn_seconds;
  for (std::int64_t t = from + args.scale_every_seconds; t <= to; t += args.scale_every_seconds) {
    sim::WorkloadStep step =
        Deployment(static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(args.deployments)),
                   0, Seconds(t));
    step.requests = {};  // Scale only: the deployment keeps its pod template.
    step.replicas = args.replicas / 2 + static_cast<std::int64_t>(
                                            rng() % static_cast<std::uint64_t>(args.replicas + 1));
    scenario.workloads.push_back(step);
  }
  using Kind = sim::Action::Kind;
  auto add = [&](std::int64_t t, Kind kind) {
    sim::Action action;
    action.at = Seconds(t);
    action.kind = kind;
    scenario.actions.push_back(action);
  };
  for (std::int64_t t = from + 60; t <= to; t += 60) {
    std::int64_t minute = (t - from) / 60;
    if (minute % 5 == 0) add(t, Kind::kSpotInterruption);
    if (minute % 15 == 7) add(t, Kind::kRebalanceRecommendation);
    if (minute % 60 == 30) add(t, Kind::kTerminateInstance);
    if (minute % 60 == 45) add(t, Kind::kDeleteNodeClaim);
  }
}

inline sim::Scenario MakeScenario(const ChurnArgs& args) {
  sim::Scenario scenario;
  scenario.name = "bench-run";
  scenario.seed = 42;
  scenario.start = kStart;
  scenario.duration = Seconds(args.build_seconds + args.churn_seconds);
  scenario.settings.cluster_name = "bench";
  scenario.catalog = sim::LoadCatalogJson(args.catalog, scenario.seed);
  NodeClass nodeclass;
  nodeclass.name = "default";
  nodeclass.role = "KarpenterNodeRole-bench";
  scenario.nodeclasses.push_back(nodeclass);
  NodePool pool;
  pool.name = "default";
  pool.nodeclass = "default";
  Requirement types{label::kInstanceType, RequirementOp::kIn, {}, 0};
  for (const char* type : kTypes) {
    for (const auto& t : scenario.catalog) {
      if (t.name == type) types.values.push_back(type);
    }
  }
  pool.requirements = {
      types, {label::kCapacityType, RequirementOp::kIn, {kCapacitySpot, kCapacityOnDemand}, 0}};
  pool.consolidate_after = Duration{kMinute.value};
  scenario.nodepools.push_back(pool);
  const std::int64_t ramp = args.build_seconds / 2;
  for (std::int64_t i = 0; i < args.deployments; ++i) {
    scenario.workloads.push_back(
        Deployment(i, args.replicas, Seconds(i * ramp / args.deployments)));
  }
  AddChurn(args, scenario);
  std::stable_sort(scenario.workloads.begin(), scenario.workloads.end(),
                   [](const auto& a, const auto& b) { return a.at < b.at; });
  return scenario;
}

}  // namespace tenon::bench
