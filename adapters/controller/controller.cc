#include "adapters/controller/controller.h"

#include <spdlog/spdlog.h>

#include <cstdlib>
#include <random>
#include <stdexcept>
#include <thread>

#include "adapters/aws/executor.h"
#include "adapters/kube/executor.h"
#include "adapters/kube/objects.h"
#include "adapters/kube/source.h"
#include "adapters/runtime/runtime.h"
#include "adapters/sim/scenario.h"
#include "log/event_log.h"

namespace tenon::controller {
namespace {

const char* Env(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? value : nullptr;
}

bool ParseBool(const char* name, const std::string& value) {
  if (value == "true" || value == "1") return true;
  if (value == "false" || value == "0") return false;
  throw std::invalid_argument(std::string(name) + "=" + value + ": want true or false");
}

Nanos EnvDuration(const char* name, const std::string& value) {
  try {
    const Nanos d = kube::ParseDuration(value);
    if (d.value <= 0) throw kube::ObjectError("not positive");
    return d;
  } catch (const kube::ObjectError& e) {
    throw std::invalid_argument(std::string(name) + "=" + value + ": " + e.what());
  }
}

Nanos WallNow() {
  return Nanos{std::chrono::duration_cast<std::chrono::nanoseconds>(
                   std::chrono::system_clock::now().time_since_epoch())
                   .count()};
}

// The cloud side until the AWS adapters are wired into `tenon run` (issue 8): every cloud
// command fails with a clear reason, which the core handles as it handles any failed launch.
class NoCloud : public runtime::Executor {
 public:
  std::vector<Event> Execute(const Command& command) override {
    spdlog::error("command {}: no cloud provider is configured for tenon run", command.id.value);
    return {CommandFailed{command.id, ErrorCode::kUnauthorized,
                          "no cloud provider configured for tenon run"}};
  }
};

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
}

int Run(const RunOptions& options, const std::atomic<bool>& stop) {
  kube::ClusterConfig config = kube::ResolveConfig(options.kubeconfig, options.context);
  config.qps = options.kube_qps;
  config.burst = options.kube_burst;
  config.user_agent = "tenon/" + options.lease.identity;
  kube::Client client(config);

  kube::LeaderElector elector(client, options.lease);
  std::atomic<bool> renewing_stop{false};
  std::atomic<bool> lost{false};
  std::thread renewer;
  if (options.leader_election) {
    spdlog::info("standby: waiting for lease {}/{} as {}", options.lease.ns, options.lease.name,
                 options.lease.identity);
    if (!elector.Acquire(stop)) return 0;
    renewer = std::thread([&] {
      elector.KeepRenewing(renewing_stop);
      if (!renewing_stop.load()) lost = true;
    });
  }
  auto may_act = [&] { return !options.leader_election || elector.IsLeader(); };
  auto finish = [&](int code) {
    renewing_stop = true;
    if (renewer.joinable()) renewer.join();
    if (code == 0 && options.leader_election) elector.Release();
    return code;
  };

  // A previous leader that is paused or partitioned may still hold the log's LOCK (the log is
  // on a shared volume): wait for it to let go, as long as the Lease is ours.
  log::OpenOptions open;
  log::OpenReport report;
  std::unique_ptr<log::EventLog> log;
  while (log == nullptr) {
    try {
      log = log::EventLog::Open(options.log_dir, open, &report);
    } catch (const log::LogError& e) {
      if (stop.load()) return finish(0);
      if (!may_act()) return finish(kExitLeadershipLost);
      spdlog::warn("log {} cannot be opened yet: {}", options.log_dir, e.what());
      std::this_thread::sleep_for(options.lease.retry_period);
    }
  }
  if (report.torn_tail_truncated) spdlog::warn("log: {}", report.message);
  kube::KubeExecutor kube_executor(client, {}, may_act);
  NoCloud cloud;
  aws::RoutingExecutor executor(cloud, kube_executor);
  runtime::Options runtime_options;
  runtime_options.snapshot_every_events = options.snapshot_every_events;
  runtime::Runtime rt(*log, executor, runtime_options);
  kube::KubeSource source(client);
  try {
    const auto recovery = rt.Recover();
    spdlog::info("recovered: {} events folded from snapshot {}, {} commands re-driven",
                 recovery.events_folded, recovery.snapshot_seq, recovery.commands_redriven);
    std::vector<Event> start{
        ControllerStarted{options.version, std::random_device{}(), options.settings},
        Tick{WallNow()}};
    if (!options.catalog_file.empty()) {
      start.push_back(CatalogRefreshed{sim::LoadCatalogJson(options.catalog_file, 0)});
    }
    rt.Ingest(std::move(start));
    source.Seed(rt.state());
    source.Start();
    auto next_tick = std::chrono::steady_clock::now() + options.tick;
    while (!stop.load()) {
      if (lost.load() || !may_act()) throw kube::LeadershipLost("the lease was lost");
      std::vector<Event> events = source.Drain(std::chrono::milliseconds(100));
      if (std::chrono::steady_clock::now() >= next_tick) {
        events.push_back(Tick{WallNow()});
        next_tick += options.tick;
      }
      if (!events.empty()) rt.Ingest(std::move(events));
    }
  } catch (const kube::LeadershipLost& e) {
    spdlog::error("{}: stopping every effect and exiting", e.what());
    source.Stop();
    return finish(kExitLeadershipLost);
  }
  source.Stop();
  return finish(0);
}

}  // namespace tenon::controller
