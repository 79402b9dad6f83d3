// `tenon run`: the controller against a real cluster. A standby waits for the leader Lease;
// the leader opens the log, recovers (snapshot, tail, re-driving commands in flight), starts
// the informers seeded with what the log holds, and folds their events and clock ticks,
// executing the commands the core issues. Losing the lease stops every effect at once and
// ends the process (as controller-runtime does), so a restart begins again as a standby.
#pragma once

#include <atomic>
#include <chrono>
#include <string>

#include "adapters/controller/cloud.h"
#include "adapters/kube/client.h"
#include "adapters/kube/leader.h"
#include "adapters/runtime/lanes.h"
#include "model/model.h"

namespace tenon::controller {

enum class CloudProvider { kAws, kNone };

struct RunOptions {
  std::string kubeconfig;  // Empty: $KUBECONFIG, in-cluster, ~/.kube/config.
  std::string context;
  std::string log_dir;
  std::string catalog_file;  // A `tenon catalog export` file, folded at start.
  Settings settings;
  double kube_qps = 200;
  int kube_burst = 300;
  bool leader_election = true;
  kube::LeaseOptions lease;
  std::chrono::milliseconds tick{1000};
  std::uint64_t snapshot_every_events = 1000;
  Duration snapshot_min_interval{5 * 60 * kSecond.value};  // And at most one per 5 min.
  // Log retention: records older than this (cluster time) and beyond this size are dropped at
  // a snapshot (0: keep). A week and 8 GiB by default (the volume is 10 GiB in deploy/).
  Duration retain_age{7 * 24 * 3600 * kSecond.value};
  std::uint64_t retain_bytes = std::uint64_t{8} << 30;
  std::string version;
  // kNone: cloud commands fail and NodeClasses are left alone (tests of the Kubernetes side).
  CloudProvider cloud_provider = CloudProvider::kAws;
  CloudOptions cloud;
  // Fold the live cluster and log every decision and command, executing nothing: no Lease,
  // no writes to the cluster or the cloud, no messages taken off the interruption queue.
  bool dry_run = false;
  std::string log_level = "info";        // LOG_LEVEL
  int metrics_port = 8080;               // METRICS_PORT
  int health_port = 8081;                // HEALTH_PROBE_PORT
  std::string bind_address = "0.0.0.0";  // Of the probe and metrics servers.
  // The command lanes (runtime/lanes.h): how many commands each holds, and how long a command
  // may take before its lane is reported stuck. The AWS client retries a call for up to about
  // 2.5 min; a Kubernetes write takes seconds.
  runtime::LaneOptions aws_lane{"aws", 1024, std::chrono::milliseconds(60'000)};
  runtime::LaneOptions kube_lane{"kube", 4096, std::chrono::milliseconds(30'000)};
};

// Exit codes: 0 stopped by `stop` (SIGTERM), 3 leadership lost.
inline constexpr int kExitLeadershipLost = 3;

// Reads Karpenter's environment names into `options` (flags given later override them).
// Throws std::invalid_argument naming the variable on a bad value.
void ApplyEnvironment(RunOptions& options);

int Run(const RunOptions& options, const std::atomic<bool>& stop);

}  // namespace tenon::controller
