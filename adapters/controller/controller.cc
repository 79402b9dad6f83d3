#include "adapters/controller/controller.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <map>
#include <optional>
#include <random>
#include <stdexcept>
#include <thread>

#include "adapters/aws/executor.h"
#include "adapters/http/health.h"
#include "adapters/http/wall_clock.h"
#include "adapters/kube/events.h"
#include "adapters/kube/executor.h"
#include "adapters/kube/objects.h"
#include "adapters/kube/source.h"
#include "adapters/metrics/logging.h"
#include "adapters/metrics/metrics.h"
#include "adapters/runtime/lanes.h"
#include "adapters/runtime/runtime.h"
#include "adapters/sim/scenario.h"
#include "log/codec.h"
#include "log/event_log.h"

namespace tenon::controller {
namespace {

// The command lanes of `tenon run`, by index.
constexpr std::size_t kAwsLane = 0;
constexpr std::size_t kKubeLane = 1;

constexpr const char* kStopRequested = "stop requested (SIGTERM or SIGINT)";

const char* Env(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? value : nullptr;
}

bool ParseBool(const char* name, const std::string& value) {
  if (value == "true" || value == "1") return true;
  if (value == "false" || value == "0") return false;
  throw std::invalid_argument(std::string(name) + "=" + value + ": want true or false");
}

Duration EnvDuration(const char* name, const std::string& value) {
  try {
    const Duration d = kube::ParseDuration(value);
    if (d.value <= 0) throw kube::ObjectError("not positive");
    return d;
  } catch (const kube::ObjectError& e) {
    throw std::invalid_argument(std::string(name) + "=" + value + ": " + e.what());
  }
}

// --cloud-provider none: every cloud command fails with a clear reason, which the core
// handles as it handles any failed launch.
class NoCloud : public runtime::Executor {
 public:
  std::vector<Event> Execute(const Command& command) override {
    spdlog::error("command {}: no cloud provider is configured", command.id.value);
    return {CommandFailed{command.id, ErrorCode::kUnauthorized, "no cloud provider configured"}};
  }
};

// --dry-run: says what it would do and does nothing; the commands stay in flight, so the core
// does not repeat them.
class DryRun : public runtime::Executor {
 public:
  std::vector<Event> Execute(const Command& command) override {
    spdlog::info("dry run: would {} (command {}, caused by seq {})", log::CommandKind(command),
                 command.id.value, command.cause.value);
    return {};
  }
};

std::int32_t ParsePermille(const char* name, const std::string& value) {
  // VM_MEMORY_OVERHEAD_PERCENT is a fraction (0.075 = 7.5%), read here without floating point
  // so the setting folded into the log is exact.
  std::size_t dot = value.find('.');
  std::string whole = value.substr(0, dot);
  std::string frac = dot == std::string::npos ? "" : value.substr(dot + 1);
  const bool digits = !value.empty() &&
                      value.find_first_not_of("0123456789.") == std::string::npos &&
                      value.find('.', dot == std::string::npos ? 0 : dot + 1) == std::string::npos;
  if (!digits || (whole.empty() && frac.empty())) {
    throw std::invalid_argument(std::string(name) + "=" + value + ": want a fraction like 0.075");
  }
  frac = (frac + "000").substr(0, 3);
  const std::int64_t permille = (whole.empty() ? 0 : std::stoll(whole)) * 1000 + std::stoll(frac);
  if (permille < 0 || permille >= 1000) {
    throw std::invalid_argument(std::string(name) + "=" + value + ": must be in [0, 1)");
  }
  return static_cast<std::int32_t>(permille);
}

int ParsePort(const char* name, const std::string& value) {
  int port = -1;
  try {
    std::size_t used = 0;
    port = std::stoi(value, &used);
    if (used != value.size()) port = -1;
  } catch (const std::exception&) {
  }
  if (port < 0 || port > 65535) {
    throw std::invalid_argument(std::string(name) + "=" + value + ": want a port number");
  }
  return port;
}

}  // namespace

void ApplyEnvironment(RunOptions& options) {
  Settings& s = options.settings;
  if (const char* v = Env("CLUSTER_NAME")) s.cluster_name = v;
  if (const char* v = Env("BATCH_IDLE_DURATION"))
    s.batch_idle = EnvDuration("BATCH_IDLE_DURATION", v);
  if (const char* v = Env("BATCH_MAX_DURATION")) s.batch_max = EnvDuration("BATCH_MAX_DURATION", v);
  if (const char* v = Env("FEATURE_GATES")) {
    // "SpotToSpotConsolidation=true,NodeRepair=false"
    std::string gates = v;
    std::size_t start = 0;
    while (start < gates.size()) {
      const std::size_t comma = std::min(gates.find(',', start), gates.size());
      const std::string gate = gates.substr(start, comma - start);
      const std::size_t eq = gate.find('=');
      if (eq == std::string::npos) {
        throw std::invalid_argument("FEATURE_GATES: '" + gate + "' is not Name=true|false");
      }
      const bool on = ParseBool("FEATURE_GATES", gate.substr(eq + 1));
      if (gate.substr(0, eq) == "SpotToSpotConsolidation") s.spot_to_spot_consolidation = on;
      if (gate.substr(0, eq) == "StaticCapacity") s.static_capacity = on;
      if (gate.substr(0, eq) == "NodeOverlay") s.node_overlay = on;
      if (gate.substr(0, eq) == "NodeRepair") s.node_repair = on;
      if (gate.substr(0, eq) == "PodDeletionCostManagement") s.pod_deletion_cost = on;
      start = comma + 1;
    }
  }
  if (const char* v = Env("KUBE_CLIENT_QPS")) {
    options.kube_qps = std::stod(v);
    if (options.kube_qps <= 0) throw std::invalid_argument("KUBE_CLIENT_QPS must be positive");
  }
  if (const char* v = Env("KUBE_CLIENT_BURST")) {
    options.kube_burst = std::stoi(v);
    if (options.kube_burst <= 0) throw std::invalid_argument("KUBE_CLIENT_BURST must be positive");
  }
  if (const char* v = Env("DISABLE_LEADER_ELECTION")) {
    options.leader_election = !ParseBool("DISABLE_LEADER_ELECTION", v);
  }
  if (const char* v = Env("PREFERENCE_POLICY")) {
    const std::string policy = v;
    if (policy != "Respect" && policy != "Ignore") {
      throw std::invalid_argument("PREFERENCE_POLICY=" + policy + ": want Respect or Ignore");
    }
    s.ignore_preferences = policy == "Ignore";
  }
  if (const char* v = Env("MIN_VALUES_POLICY")) {
    const std::string policy = v;
    if (policy != "Strict" && policy != "BestEffort") {
      throw std::invalid_argument("MIN_VALUES_POLICY=" + policy + ": want Strict or BestEffort");
    }
    s.min_values_best_effort = policy == "BestEffort";
  }
  if (const char* v = Env("VM_MEMORY_OVERHEAD_PERCENT")) {
    s.vm_memory_overhead_permille = ParsePermille("VM_MEMORY_OVERHEAD_PERCENT", v);
  }
  if (const char* v = Env("RESERVED_ENIS")) {
    const int enis = ParsePort("RESERVED_ENIS", v);
    if (enis > 16) throw std::invalid_argument(std::string("RESERVED_ENIS=") + v + ": too many");
    s.reserved_enis = enis;
  }
  if (const char* v = Env("LOG_LEVEL")) {
    const std::string level = v;
    if (level != "debug" && level != "info" && level != "warn" && level != "error") {
      throw std::invalid_argument("LOG_LEVEL=" + level + ": want debug, info, warn or error");
    }
    options.log_level = level;
  }
  if (const char* v = Env("METRICS_PORT")) options.metrics_port = ParsePort("METRICS_PORT", v);
  if (const char* v = Env("HEALTH_PROBE_PORT")) {
    options.health_port = ParsePort("HEALTH_PROBE_PORT", v);
  }
  CloudOptions& cloud = options.cloud;
  if (const char* v = Env("CLUSTER_ENDPOINT")) cloud.cluster_endpoint = v;
  if (const char* v = Env("INTERRUPTION_QUEUE")) cloud.interruption_queue = v;
  cloud.aws = aws::AwsSettingsFromEnvironment(aws::ProcessEnv());
}

namespace {

// Says once that the process starts to stop, whatever stops it; cmd/main.cc logs the end, once
// everything here is released.
class Shutdown {
 public:
  void Begin(const std::string& why) {
    if (stopping_) return;
    stopping_ = true;
    spdlog::info("shutdown: {}; stopping the informers, the AWS pollers and the lease", why);
  }

 private:
  bool stopping_ = false;
};

// The Lease's client: its own connections and rate limit, and every call, retries included,
// ends within the renew deadline (as client-go bounds a renewal), so a slow API server cannot
// hold a renewal past the moment this process stops counting itself leader.
kube::ClusterConfig LeaseClientConfig(kube::ClusterConfig config, const kube::LeaseOptions& lease) {
  config.retry.deadline =
      Duration{std::chrono::duration_cast<std::chrono::nanoseconds>(lease.renew_deadline).count()};
  config.request_timeout = std::min(config.request_timeout, lease.renew_deadline);
  return config;
}

// The leader Lease, with leader election on: a standby waits for it, and the leader renews it on
// a thread of its own until Finish.
class Leadership {
 public:
  Leadership(const kube::ClusterConfig& config, const RunOptions& options)
      : options_(options),
        client_(LeaseClientConfig(config, options.lease)),
        elector_(client_, options.lease) {}

  // Waits for the Lease, beating the liveness probe meanwhile; false when stopped first.
  bool Acquire(const std::atomic<bool>& stop, http::HealthServer& health) {
    if (!options_.leader_election) return true;
    spdlog::info("standby: waiting for lease {}/{} as {}", options_.lease.ns, options_.lease.name,
                 options_.lease.identity);
    health.SetReady(true);  // Ready to take over; the Service has nothing else to route.
    std::atomic<bool> acquired{false};
    std::thread beats([&] {
      while (!acquired.load() && !stop.load()) {
        health.Beat();
        std::this_thread::sleep_for(std::chrono::milliseconds(500));
      }
    });
    const bool leader = elector_.Acquire(stop);
    acquired = true;
    beats.join();
    if (!leader) return false;
    renewer_ = std::thread([this] {
      elector_.KeepRenewing(renewing_stop_);
      if (!renewing_stop_.load()) lost_ = true;
    });
    return true;
  }

  bool MayAct() const { return !options_.leader_election || elector_.IsLeader(); }
  bool Lost() const { return lost_.load(); }

  // Stops renewing, and gives the Lease up when the process stops cleanly; returns `code`.
  int Finish(int code) {
    renewing_stop_ = true;
    if (renewer_.joinable()) renewer_.join();
    if (code == 0 && options_.leader_election) elector_.Release();
    return code;
  }

 private:
  const RunOptions& options_;
  kube::Client client_;
  kube::LeaderElector elector_;
  std::atomic<bool> renewing_stop_{false};
  std::atomic<bool> lost_{false};
  std::thread renewer_;
};

struct OpenedLog {
  std::unique_ptr<log::EventLog> log;  // Null: the process ends with `exit_code`.
  int exit_code = 0;
};

// A previous leader that is paused or partitioned may still hold the log's LOCK (the log is on
// a shared volume): waits for it to let go, as long as the Lease is ours.
OpenedLog OpenLog(const RunOptions& options, const std::atomic<bool>& stop,
                  const Leadership& leadership, Shutdown& shutdown) {
  log::OpenOptions open;
  open.on_store_warning = [](const std::string& line) { spdlog::warn("log store: {}", line); };
  log::OpenReport report;
  OpenedLog opened;
  while (opened.log == nullptr) {
    try {
      opened.log = log::EventLog::Open(options.log_dir, open, &report);
    } catch (const log::LogError& e) {
      if (stop.load()) {
        shutdown.Begin(kStopRequested);
        return {nullptr, 0};
      }
      if (!leadership.MayAct()) {
        shutdown.Begin("the lease was lost");
        return {nullptr, kExitLeadershipLost};
      }
      if (e.kind() != log::ErrorKind::kIo) {
        // Damage, or a folder that is no log: waiting mends neither, and writing past damage
        // would bury what it hides (`tenon log repair` is the way on).
        spdlog::critical("log {} cannot be used: {}", options.log_dir, e.what());
        shutdown.Begin("the log cannot be used");
        return {nullptr, 1};
      }
      spdlog::warn("log {} cannot be opened yet: {}", options.log_dir, e.what());
      std::this_thread::sleep_for(options.lease.retry_period);
    }
  }
  if (report.torn_tail_truncated) spdlog::warn("{}", report.message);
  return opened;
}

kube::ClusterConfig ClusterConfigFor(const RunOptions& options) {
  kube::ClusterConfig config = kube::ResolveConfig(options.kubeconfig, options.context);
  config.qps = options.kube_qps;
  config.burst = options.kube_burst;
  config.user_agent = "tenon/" + options.lease.identity;
  return config;
}

kube::ExecutorOptions KubeExecutorOptions(metrics::Metrics& metrics) {
  kube::ExecutorOptions executor_options;
  executor_options.on_write_failed = [&metrics] { metrics.KubeWriteFailed(); };
  return executor_options;
}

CloudOptions CloudOptionsFor(const RunOptions& options, const kube::ClusterConfig& config) {
  CloudOptions cloud_options = options.cloud;
  cloud_options.cluster_name = options.settings.cluster_name;
  cloud_options.refresh_catalog = options.catalog_file.empty();
  cloud_options.read_only = options.dry_run;
  if (cloud_options.cluster_endpoint.empty()) cloud_options.cluster_endpoint = config.server;
  if (cloud_options.cluster_ca_base64.empty()) {
    cloud_options.cluster_ca_base64 = aws::Base64(kube::CaBundle(config));
  }
  return cloud_options;
}

// The nodes' user data names the API server and its CA: logged with the settings, so every
// launch carries them.
Settings SettingsFor(const RunOptions& options, const CloudOptions& cloud_options) {
  Settings settings = options.settings;
  settings.cluster_endpoint = cloud_options.cluster_endpoint;
  settings.cluster_ca_bundle = cloud_options.cluster_ca_base64;
  return settings;
}

// The commands run on the lanes' workers, off the fold's thread (runtime/lanes.h): one lane for
// the cloud, one for the Kubernetes API, each in the order the core issued its commands.
// Each command carries all its effect needs; no executor reads the folded state.
std::vector<runtime::Lane> LaneSpecs(const RunOptions& options, runtime::Executor* cloud,
                                     runtime::Executor* kube) {
  std::vector<runtime::Lane> lane_specs(2);
  lane_specs[kAwsLane] = {options.aws_lane, cloud};
  lane_specs[kKubeLane] = {options.kube_lane, kube};
  return lane_specs;
}

std::size_t LaneOf(const Command& command) {
  return aws::AwsExecutor::Owns(command) ? kAwsLane : kKubeLane;
}

runtime::Options RuntimeOptionsFor(const RunOptions& options, runtime::Observer* observer) {
  runtime::Options runtime_options;
  runtime_options.snapshot_every_events = options.snapshot_every_events;
  runtime_options.snapshot_min_interval = options.snapshot_min_interval;
  runtime_options.retain_age = options.retain_age;
  runtime_options.retain_bytes = options.retain_bytes;
  runtime_options.observer = observer;
  return runtime_options;
}

// What the leader runs: the executors of the core's commands on their lanes, the runtime
// folding into the log, and the sources feeding it (the informers, the AWS pollers, the clock).
class Leader {
 public:
  Leader(const RunOptions& options, const kube::ClusterConfig& config, kube::Client& client,
         log::EventLog& log, const Leadership& leadership, metrics::Metrics& metrics,
         http::HealthServer& health);

  // Recovers and folds until `stop` or the Lease is lost; returns the exit code.
  int Run(const std::atomic<bool>& stop, Shutdown& shutdown);

 private:
  void RecoverAndStart();
  void FoldUntil(const std::atomic<bool>& stop);
  void Completed(std::vector<Event>& events);
  void ObserveLanes();
  void ObserveState(bool now);
  void StopSources();

  const RunOptions& options_;
  const Leadership& leadership_;
  metrics::Metrics& metrics_;
  http::HealthServer& health_;
  kube::KubeExecutor kube_executor_;
  CloudOptions cloud_options_;
  Settings settings_;
  std::unique_ptr<CloudSource> cloud_;
  NoCloud no_cloud_;
  runtime::Lanes lanes_;
  DryRun dry_run_;
  metrics::DecisionLogger decision_logger_;
  runtime::ObserverList observers_;
  runtime::Runtime rt_;
  std::map<std::string, std::string> stuck_lanes_;  // By lane name: why it is stuck.
  std::chrono::steady_clock::time_point state_seen_{};
  kube::KubeSource source_;
};

Leader::Leader(const RunOptions& options, const kube::ClusterConfig& config, kube::Client& client,
               log::EventLog& log, const Leadership& leadership, metrics::Metrics& metrics,
               http::HealthServer& health)
    : options_(options),
      leadership_(leadership),
      metrics_(metrics),
      health_(health),
      kube_executor_(client, KubeExecutorOptions(metrics),
                     [&leadership] { return leadership.MayAct(); }),
      cloud_options_(CloudOptionsFor(options, config)),
      settings_(SettingsFor(options, cloud_options_)),
      cloud_(options.cloud_provider == CloudProvider::kAws
                 ? std::make_unique<CloudSource>(cloud_options_, client,
                                                 [&leadership] { return leadership.MayAct(); })
                 : nullptr),
      lanes_(
          LaneSpecs(options,
                    cloud_ != nullptr ? static_cast<runtime::Executor*>(cloud_.get()) : &no_cloud_,
                    &kube_executor_),
          LaneOf),
      rt_(log,
          options.dry_run ? static_cast<runtime::Executor&>(dry_run_)
                          : static_cast<runtime::Executor&>(lanes_),
          RuntimeOptionsFor(options, &observers_)),
      source_(client) {
  observers_.Add(&metrics);
  observers_.Add(&decision_logger_);
}

int Leader::Run(const std::atomic<bool>& stop, Shutdown& shutdown) {
  try {
    RecoverAndStart();
    FoldUntil(stop);
  } catch (const kube::LeadershipLost& e) {
    spdlog::error("{}: stopping every effect and exiting", e.what());
    shutdown.Begin(e.what());
    // The sources first: stopping the AWS side aborts the call an AWS command may be stuck in,
    // so the lanes then stop after at most the Kubernetes call in progress.
    StopSources();
    lanes_.Stop();
    return kExitLeadershipLost;
  }
  shutdown.Begin(kStopRequested);
  StopSources();
  lanes_.Stop();
  return 0;
}

void Leader::RecoverAndStart() {
  // The AWS side first: what its pollers find while recovery runs waits in their queues for
  // the loop. Commands re-driven from the log carry all they need.
  if (cloud_ != nullptr) cloud_->Start();
  const auto recovery = rt_.Recover();
  spdlog::info("recovered: {} events folded from snapshot {}, {} commands re-driven",
               recovery.events_folded, recovery.snapshot_seq.value, recovery.commands_redriven);
  ObserveState(true);
  // Nothing is decided on the recovered state until the informers have listed the cluster
  // again: it may have changed while no controller was watching.
  std::vector<Event> start{ControllerStarted{options_.version, std::random_device{}(), settings_},
                           WatchesStarted{}, Tick{WallClock()}};
  if (!options_.catalog_file.empty()) {
    start.push_back(CatalogRefreshed{sim::LoadCatalogJson(options_.catalog_file, 0)});
  }
  rt_.Ingest(std::move(start));
  source_.Seed(rt_.state());
  source_.Start();
}

void Leader::FoldUntil(const std::atomic<bool>& stop) {
  auto next_tick = std::chrono::steady_clock::now() + options_.tick;
  std::optional<std::chrono::steady_clock::time_point> last_tick;
  while (!stop.load()) {
    if (leadership_.Lost() || !leadership_.MayAct()) {
      throw kube::LeadershipLost("the lease was lost");
    }
    std::vector<Event> events = source_.Drain(std::chrono::milliseconds(100));
    bool nodeclass_changed = false;
    for (const Event& e : events) {
      nodeclass_changed |= std::holds_alternative<NodeClassUpserted>(e);
    }
    if (cloud_ != nullptr) {
      for (Event& e : cloud_->Drain()) events.push_back(std::move(e));
    }
    Completed(events);
    bool ticked = false;
    if (std::chrono::steady_clock::now() >= next_tick) {
      events.push_back(Tick{WallClock()});
      next_tick = std::max(next_tick + options_.tick, std::chrono::steady_clock::now());
      ticked = true;
    }
    if (!events.empty()) rt_.Ingest(std::move(events));
    if (ticked) {
      const auto folded_at = std::chrono::steady_clock::now();
      if (last_tick) metrics_.ObserveTickInterval(folded_at - *last_tick);
      last_tick = folded_at;
    }
    ObserveState(false);
    health_.Beat();
    if (source_.synced()) {
      health_.SetReady(true);
    } else {
      health_.SetReady(false, "informers have not synced yet");
    }
    if (cloud_ != nullptr) {
      if (nodeclass_changed) cloud_->PokeNodeClasses();
    }
  }
}

// The results the lanes' workers brought back, for the next fold.
void Leader::Completed(std::vector<Event>& events) {
  for (runtime::Completion& done : lanes_.Drain()) {
    rt_.Executed(done.command, done.results, done.took);
    for (Event& e : done.results) events.push_back(std::move(e));
  }
}

// The lanes as metrics, and as health warnings and a log line when one becomes stuck or
// recovers.
void Leader::ObserveLanes() {
  const std::vector<runtime::LaneStatus> status = lanes_.Status();
  metrics_.ObserveLanes(status);
  std::vector<std::string> warnings;
  for (const runtime::LaneStatus& lane : status) {
    const std::string problem = lane.Problem();
    const bool was_stuck = stuck_lanes_.contains(lane.name);
    if (!problem.empty()) {
      warnings.push_back("command lane " + problem);
      if (!was_stuck) spdlog::warn("command lane stuck: {}", problem);
      stuck_lanes_[lane.name] = problem;
    } else if (was_stuck) {
      spdlog::info("command lane {} is moving again", lane.name);
      stuck_lanes_.erase(lane.name);
    }
  }
  health_.SetWarnings(std::move(warnings));
}

void Leader::ObserveState(bool now) {
  // At most once a second: the gauges walk every node and pod.
  const auto t = std::chrono::steady_clock::now();
  if (!now && t - state_seen_ < std::chrono::seconds(1)) return;
  state_seen_ = t;
  metrics_.ObserveState(rt_.state());
  ObserveLanes();
}

void Leader::StopSources() {
  // Side by side: the informers' watches notice within a second, the AWS pollers at once.
  std::thread cloud_stop([&] {
    if (cloud_ != nullptr) cloud_->Stop();
  });
  source_.Stop();
  cloud_stop.join();
}

}  // namespace

int Run(const RunOptions& options, const std::atomic<bool>& stop) {
  // Probes and metrics answer from the start, standby included: a standby is healthy.
  http::HealthServer health(
      http::HealthOptions{options.bind_address + ":" + std::to_string(options.health_port),
                          std::chrono::milliseconds(60'000),
                          {}});
  metrics::Metrics metrics;
  http::MetricsServer metrics_server(
      options.bind_address + ":" + std::to_string(options.metrics_port), metrics.registry());
  health.SetReady(false, "starting");
  spdlog::info("probes on :{}, metrics on :{}", health.port(), metrics_server.port());

  const kube::ClusterConfig config = ClusterConfigFor(options);
  kube::Client client(config);
  Shutdown shutdown;
  Leadership leadership(config, options);
  if (!leadership.Acquire(stop, health)) {
    shutdown.Begin(std::string(kStopRequested) + " while standing by");
    return 0;
  }
  const OpenedLog opened = OpenLog(options, stop, leadership, shutdown);
  if (opened.log == nullptr) return leadership.Finish(opened.exit_code);
  Leader leader(options, config, client, *opened.log, leadership, metrics, health);
  return leadership.Finish(leader.Run(stop, shutdown));
}

}  // namespace tenon::controller
