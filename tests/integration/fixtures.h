// Inputs the runtime's integration tests share: a small churning cluster and pending pods.
#pragma once

#include <filesystem>
#include <string>

#include "bench/churn.h"
#include "reducers/core.h"

namespace tenon::testing {

// bench_run's churning cluster (bench/churn.h) made small: 4 Deployments of 25 pods on the small
// catalog, built over 10 minutes, then an hour of churn with a Deployment rescaled every 30 s.
inline bench::ChurnArgs SmallChurnArgs() {
  bench::ChurnArgs args;
  args.catalog =
      (std::filesystem::path(TENON_SOURCE_DIR) / "examples/catalogs/small.json").string();
  args.deployments = 4;
  args.replicas = 25;
  args.build_seconds = 600;
  args.churn_seconds = 3600;
  args.scale_every_seconds = 30;
  return args;
}

// An unschedulable pod default/web-<i> asking for 100m and 64 MiB.
inline Pod PendingPod(int i) {
  Pod pod;
  pod.ns = "default";
  pod.name = "web-" + std::to_string(i);
  pod.requests.cpu = Millicores{100};
  pod.requests.memory = Bytes{64 << 20};
  pod.unschedulable = true;
  return pod;
}

}  // namespace tenon::testing
