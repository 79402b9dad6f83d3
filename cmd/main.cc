// tenon: one binary, subcommands. Thin: parse flags, call into adapters/ and replay/, print.
#include <sys/stat.h>

#include <spdlog/spdlog.h>
#include <unistd.h>
#include <xxhash.h>
#include <CLI/CLI.hpp>

#include <atomic>
#include <chrono>
#include <cinttypes>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <optional>
#include <random>
#include <string_view>

#include "adapters/aws/catalog_export.h"
#include "adapters/aws/connection.h"
#include "adapters/aws/credentials.h"
#include "adapters/aws/pricing.h"
#include "adapters/controller/controller.h"
#include "adapters/http/wall_clock.h"
#include "adapters/kube/capture.h"
#include "adapters/kube/objects.h"
#include "adapters/metrics/logging.h"
#include "adapters/runtime/runtime.h"
#include "adapters/sim/conformance.h"
#include "adapters/sim/simulator.h"
#include "cmd/flags.h"
#include "cmd/incident.h"
#include "log/codec.h"
#include "log/event_log.h"
#include "replay/replay.h"
#include "whatif/whatif.h"

namespace {

using namespace tenon;

constexpr const char* kVersion = "tenon 0.1.0";

std::string Dollars(MicroUsdPerHour price) {
  return replay::DollarsText(price);
}

std::string Clock(Instant t) {
  return replay::ClockText(t);
}

// A private folder under $TMPDIR, removed with everything in it at the end of the scope.
struct ScratchDir {
  explicit ScratchDir(const std::string& prefix) {
    path = std::filesystem::temp_directory_path() / (prefix + "-" + std::to_string(::getpid()) +
                                                     "-" + std::to_string(std::random_device{}()));
    std::filesystem::create_directory(path);
  }
  ~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
  std::filesystem::path path;
};

struct SimulateArgs {
  std::string scenario;
  std::string log_dir;
  std::string compare;
  std::uint64_t snapshot_every = 500;
  std::string snapshot_min_interval = "15m";  // sim::SimulateOptions's.
  bool trace_acks = false;
  bool quiet = false;
  bool sync = false;
};

constexpr std::size_t kReportRows = 24;  // Cost-over-time samples in the report.

// One run of `scenario` into `log_dir`, printing progress unless quiet; returns its report.
sim::Report SimulateOnce(const sim::Scenario& scenario, const std::string& log_dir,
                         const SimulateArgs& args) {
  sim::SimulateOptions options;
  options.log_dir = log_dir;
  options.snapshot_every_events = args.snapshot_every;
  options.snapshot_min_interval = kube::ParseDuration(args.snapshot_min_interval);
  if (options.snapshot_min_interval.value < 0) {
    throw std::invalid_argument("--snapshot-min-interval must be a duration, e.g. 5m or 0s");
  }
  options.sync = args.sync;
  // Without --log, the log and the world go with the process: commands need not wait for the log.
  if (args.log_dir.empty()) options.appends = runtime::Appends::kPipelinedAhead;
  if (args.trace_acks) {
    options.on_ack = [](Seq seq, const std::string& payload) {
      std::printf("ack %" PRIu64 " %016" PRIx64 "\n", seq.value,
                  XXH3_64bits(payload.data(), payload.size()));
      std::fflush(stdout);
    };
  }
  std::optional<Instant> last_print;
  if (!args.quiet) {
    options.on_progress = [&](Instant now, const sim::WorldSummary& w) {
      if (last_print && now - *last_print < kMinute && now != scenario.start + scenario.duration) {
        return;
      }
      last_print = now;
      std::printf("  %s  nodes %3zu  pods bound %4zu pending %4zu  cost %s/h\n", Clock(now).c_str(),
                  w.nodes, w.pods_bound, w.pods_pending, Dollars(w.cost).c_str());
    };
  }
  const Duration sample_every{std::max<std::int64_t>(
      kMinute.value, scenario.duration.value / static_cast<std::int64_t>(kReportRows))};
  sim::ReportBuilder report(scenario.name, scenario.start, sample_every);
  options.report = &report;
  if (!args.quiet) std::printf("simulate %s -> %s\n", scenario.name.c_str(), log_dir.c_str());
  auto result = sim::Simulate(scenario, options);
  if (!result.open_message.empty()) std::fprintf(stderr, "%s\n", result.open_message.c_str());
  if (result.resumed && !args.quiet) {
    std::printf("resumed: snapshot %" PRIu64 ", %" PRIu64 " outputs restored, %" PRIu64
                " commands re-driven\n",
                result.recovered_snapshot.value, result.outputs_restored, result.commands_redriven);
    if (result.finished_before) {
      std::printf("the run had already reached the scenario's end (%s): nothing more to do\n",
                  Clock(scenario.start + scenario.duration).c_str());
    }
  }
  if (!args.quiet) {
    std::printf("done: %" PRIu64
                " records, %zu instances running (%zu CreateFleet calls), "
                "%zu nodes, %zu pods bound, %zu pending, %s/h, state %016" PRIx64 "\n",
                result.last_seq.value, result.world.instances, result.world.launch_calls,
                result.world.nodes, result.world.pods_bound, result.world.pods_pending,
                Dollars(result.world.cost).c_str(), result.state_hash);
  }
  if (result.world.allocatable_overestimates > 0) {
    // The simulated kubelets are the world's own: a node short of what tenon planned on means
    // pods tenon placed there may not fit on a real one either.
    std::fprintf(stderr,
                 "warning: %zu nodes reported less allocatable than tenon planned on; the "
                 "first: %s\n",
                 result.world.allocatable_overestimates, result.world.first_overestimate.c_str());
  }
  if (!result.resumed) return report.report();
  // This process saw only the part after the resume: the whole run's report comes from the log.
  log::OpenOptions open;
  open.read_only = true;
  open.create_if_missing = false;
  return whatif::ReportFromLog(*log::EventLog::Open(log_dir, open), scenario.name);
}

int RunSimulate(const SimulateArgs& args) {
  auto scenario = sim::LoadScenario(args.scenario);
  // Without --log the log goes to a private temporary folder, removed at the end.
  std::optional<ScratchDir> scratch;
  std::string log_dir = args.log_dir;
  if (log_dir.empty()) {
    scratch.emplace("tenon-simulate");
    log_dir = (scratch->path / "log").string();
  }
  sim::Report report = SimulateOnce(scenario, log_dir, args);
  if (args.compare.empty()) {
    if (!args.quiet) std::printf("%s", sim::FormatReport(report).c_str());
    return 0;
  }
  // The other configuration on this scenario's workload, into a log of its own.
  auto other = sim::WithConfigurationOf(scenario, sim::LoadScenario(args.compare));
  if (other.name == scenario.name) other.name += " (compared)";
  const std::string other_log = log_dir + "-compare";
  sim::Report compared = SimulateOnce(other, other_log, args);
  if (!args.quiet) {
    std::printf("%s%s%s", sim::FormatReport(report).c_str(), sim::FormatReport(compared).c_str(),
                sim::FormatComparison(report, compared).c_str());
  }
  return 0;
}

struct CatalogExportArgs {
  std::string region;
  std::string out;
  std::string endpoint;  // Overrides EC2's and STS's endpoint (moto, VPC endpoints).
  std::string prices;
};

int RunCatalogExport(const CatalogExportArgs& args) {
  std::map<std::string, MicroUsdPerHour> prices;
  if (!args.prices.empty()) {
    auto loaded = aws::LoadPriceFile(args.prices);
    if (!loaded.ok()) {
      std::fprintf(stderr, "tenon: %s\n", loaded.error.message.c_str());
      return 1;
    }
    prices = std::move(*loaded.value);
  }
  aws::AwsSettings settings = aws::AwsSettingsFromEnvironment(aws::ProcessEnv());
  settings.region = args.region;
  if (!args.endpoint.empty()) {
    for (const char* service : {"ec2", "sts", "pricing"})
      settings.endpoints[service] = args.endpoint;
  }
  aws::AwsConnection connection(settings, aws::ProcessEnv());
  aws::Ec2 ec2(connection.client());
  aws::Pricing pricing(connection.pricing());
  bool used_file = false;
  prices = aws::OnDemandPricesOrFallback(pricing, args.region, prices, &used_file);
  auto exported = aws::ExportCatalog(ec2, args.region, prices, args.out);
  if (!exported.ok()) {
    std::fprintf(stderr, "tenon: catalog export failed: %s: %s\n", exported.error.aws_code.c_str(),
                 exported.error.message.c_str());
    return 1;
  }
  std::printf("catalog: %" PRId64 " instance types written to %s\n", *exported.value,
              args.out.c_str());
  return 0;
}

struct CaptureArgs {
  std::string kubeconfig;
  std::string context;
  kube::CaptureOptions options;
};

int RunCapture(CaptureArgs args) {
  if (kube::ParseDuration(args.options.duration).value <= 0) {
    throw std::invalid_argument("--duration: must be > 0");
  }
  kube::Client client(kube::ResolveConfig(args.kubeconfig, args.context));
  args.options.start = Rfc3339Text(WallClock());
  if (args.options.name.empty()) args.options.name = args.options.folder.filename().string();
  const kube::CaptureReport report = kube::Capture(client, args.options);
  std::size_t total = 0;
  std::string counts;
  for (const auto& [kind, n] : report.objects) {
    total += n;
    counts += (counts.empty() ? "" : ", ") + std::to_string(n) + " " + kind;
  }
  std::printf("capture: %zu objects written to %s (%s)\n", total,
              args.options.folder.string().c_str(), counts.c_str());
  for (const auto& skipped : report.skipped) std::printf("capture: left out %s\n", skipped.c_str());
  std::printf("capture: run it with: tenon simulate %s\n", args.options.folder.string().c_str());
  return 0;
}

std::atomic<bool> g_stop{false};

// Whether `tenon run` logs JSON: --log-format (json unless it says text). Read from the
// arguments before they are parsed, so that even a parse error is a JSON line.
bool RunLogsJson(int argc, char** argv) {
  if (argc < 2 || std::string_view(argv[1]) != "run") return false;
  std::string format = "json";
  for (int i = 2; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--log-format" && i + 1 < argc) format = argv[i + 1];
    if (arg.rfind("--log-format=", 0) == 0) format = arg.substr(std::strlen("--log-format="));
  }
  return format != "text";
}

// An error that ends the process: one JSON log line at level fatal when `tenon run` logs JSON,
// "tenon: MESSAGE" on stderr otherwise. Returns `code`.
bool g_fatal_as_json = false;
int Fatal(int code, const std::string& message) {
  if (g_fatal_as_json) {
    spdlog::critical("{}", message);
    spdlog::default_logger()->flush();
  } else {
    std::fprintf(stderr, "tenon: %s\n", message.c_str());
  }
  return code;
}

void OnSignal(int) {
  g_stop = true;
}

struct RunArgs {
  controller::RunOptions options;
  std::string lease_duration = "15s";
  std::string renew_deadline = "10s";
  std::string retry_period = "2s";
  std::string tick = "1s";
  std::string catalog_every = "5m";
  std::string gc_every = "2m";
  std::string nodeclass_every = "1m";
  std::string aws_deadline = "1m";
  std::string cloud_provider = "aws";
  std::string log_format = "json";
  std::string retain_age = "168h";
  bool disable_leader_election = false;
};

// A duration flag's value; the error names the flag.
Duration DurationFlag(const std::string& flag, const std::string& text) {
  try {
    return kube::ParseDuration(text);
  } catch (const kube::ObjectError& e) {
    throw std::invalid_argument(flag + ": " + e.what());
  }
}

std::chrono::milliseconds Millis(const std::string& flag, const std::string& text) {
  const Duration d = DurationFlag(flag, text);
  if (d.value <= 0) throw std::invalid_argument(flag + " must be a positive duration");
  return std::chrono::milliseconds(d.value / 1'000'000);
}

int RunController(RunArgs& args) {
  runtime::TuneAllocatorForLongRun();
  auto& options = args.options;
  options.version = kVersion;
  if (args.disable_leader_election) options.leader_election = false;
  options.lease.lease_duration = Millis("--lease-duration", args.lease_duration);
  options.lease.renew_deadline = Millis("--renew-deadline", args.renew_deadline);
  options.lease.retry_period = Millis("--retry-period", args.retry_period);
  options.tick = Millis("--tick", args.tick);
  options.cloud.catalog_every = Millis("--catalog-every", args.catalog_every);
  options.retain_age =
      args.retain_age == "0" ? Duration{0} : DurationFlag("--retain", args.retain_age);
  options.cloud.gc_every = Millis("--gc-every", args.gc_every);
  options.cloud.nodeclass_every = Millis("--nodeclass-every", args.nodeclass_every);
  options.aws_lane.deadline = Millis("--aws-command-deadline", args.aws_deadline);
  options.cloud_provider = args.cloud_provider == "none" ? controller::CloudProvider::kNone
                                                         : controller::CloudProvider::kAws;
  std::optional<ScratchDir> dry_run_log;
  if (options.log_dir.empty()) {
    if (!options.dry_run) throw std::invalid_argument("--log-dir is required (unless --dry-run)");
    dry_run_log.emplace("tenon-dry-run");
    options.log_dir = dry_run_log->path.string();
  }
  // A dry run writes nothing to the cluster, so it needs no Lease and may run beside the
  // controller in charge.
  if (options.dry_run) options.leader_election = false;
  metrics::ConfigureLogging(options.log_level, args.log_format == "json");
  if (options.lease.renew_deadline >= options.lease.lease_duration) {
    throw std::invalid_argument("--renew-deadline must be shorter than --lease-duration");
  }
  if (options.lease.identity.empty()) {
    char host[256] = {};
    ::gethostname(host, sizeof host - 1);
    options.lease.identity = std::string(host) + "_" + std::to_string(std::random_device{}());
  }
  std::signal(SIGTERM, OnSignal);
  std::signal(SIGINT, OnSignal);
  const int code = controller::Run(options, g_stop);
  spdlog::info("shutdown complete: exit code {}", code);
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  // Everything tenon writes (the log above all) is for its owner only.
  ::umask(077);
  CLI::App app{"tenon: a Karpenter-compatible node autoscaler built on a replayable log"};
  // Every option's default shows in --help, and so in docs/reference (scripts/gen-reference).
  app.option_defaults()->always_capture_default();
  app.require_subcommand(1);
  app.set_version_flag("--version", kVersion);

  SimulateArgs sim_args;
  auto* simulate =
      app.add_subcommand("simulate", "run the controller on a simulated cluster and cloud");
  simulate
      ->add_option("scenario", sim_args.scenario,
                   "scenario: a YAML file of documents, or a folder of them")
      ->required()
      ->check(cmd::ExistingFileOrFolder());
  simulate->add_option("--log", sim_args.log_dir,
                       "log folder (created; resumed if it exists); default: a temporary one");
  simulate
      ->add_option("--compare", sim_args.compare,
                   "also run the NodePools, EC2NodeClasses and settings of this scenario on the "
                   "same workload (log in LOG-compare) and print the differences")
      ->check(cmd::ExistingFileOrFolder());
  simulate->add_option("--snapshot-every", sim_args.snapshot_every, "events between snapshots")
      ->check(cmd::PositiveCount());
  simulate
      ->add_option("--snapshot-min-interval", sim_args.snapshot_min_interval,
                   "and at least this much virtual time between them (0s: none)")
      ->capture_default_str();
  simulate->add_flag("--sync", sim_args.sync, "fsync the log on every append");
  simulate->add_flag("--quiet", sim_args.quiet, "print nothing but errors");
  simulate->add_flag("--trace-acks", sim_args.trace_acks,
                     "print 'ack SEQ HASH' for every record the log acknowledges");

  auto incident = cmd::AddIncidentCommands(app);

  CatalogExportArgs export_args;
  std::string conformance_path;
  int conformance_pass_percent = 95;
  auto* conformance = app.add_subcommand(
      "conformance", "run cases taken from Karpenter's test suites and compare the outcomes");
  conformance->add_option("cases", conformance_path, "a case file, or a folder of them")
      ->required()
      ->check(cmd::ExistingFileOrFolder());
  conformance
      ->add_option("--pass-percent", conformance_pass_percent,
                   "fail when fewer cases than this pass")
      ->check(cmd::Percent());

  auto* catalog_cmd = app.add_subcommand("catalog", "the EC2 catalog of a real account");
  catalog_cmd->require_subcommand(1);
  auto* export_cmd =
      catalog_cmd->add_subcommand("export", "write types, offerings and prices for tenon simulate");
  export_cmd->add_option("--region", export_args.region, "AWS region")->required();
  export_cmd->add_option("-o,--output", export_args.out, "catalog file to write")->required();
  export_cmd->add_option("--endpoint", export_args.endpoint, "EC2/STS endpoint override");
  export_cmd
      ->add_option("--prices", export_args.prices,
                   "on-demand prices: {type: usd} or a catalog file")
      ->check(CLI::ExistingFile);

  CaptureArgs capture_args;
  auto* capture = app.add_subcommand(
      "capture", "write a live cluster's objects as a scenario folder for tenon simulate");
  capture->add_option("folder", capture_args.options.folder, "folder to write (must not exist)")
      ->required();
  capture
      ->add_option("--catalog", capture_args.options.catalog,
                   "instance types for the scenario (from `tenon catalog export`)")
      ->required()
      ->check(CLI::ExistingFile);
  capture->add_option("--kubeconfig", capture_args.kubeconfig,
                      "kubeconfig (default: $KUBECONFIG, in-cluster, ~/.kube/config)");
  capture->add_option("--context", capture_args.context, "kubeconfig context");
  capture->add_option("--name", capture_args.options.name,
                      "scenario name (default: the folder's name)");
  capture->add_option("--duration", capture_args.options.duration,
                      "how long tenon simulate runs it");
  capture->add_option("--page-size", capture_args.options.page_size, "items per list request")
      ->check(cmd::PositiveCount());
  capture_args.options.name.clear();

  RunArgs run_args;
  auto* run_cmd = app.add_subcommand("run", "the controller, against a real cluster");
  run_cmd->add_option("--kubeconfig", run_args.options.kubeconfig,
                      "kubeconfig (default: $KUBECONFIG, in-cluster, ~/.kube/config)");
  run_cmd->add_option("--context", run_args.options.context, "kubeconfig context");
  run_cmd->add_option("--log-dir", run_args.options.log_dir,
                      "log folder (on the PersistentVolume); required unless --dry-run");
  run_cmd->add_flag("--dry-run", run_args.options.dry_run,
                    "fold the live cluster and log every decision, executing nothing");
  run_cmd->add_option("--cloud-provider", run_args.cloud_provider, "aws (default) or none")
      ->check(CLI::IsMember({"aws", "none"}));
  run_cmd->add_option("--cluster-name", run_args.options.settings.cluster_name,
                      "cluster name (CLUSTER_NAME)");
  run_cmd->add_option("--interruption-queue", run_args.options.cloud.interruption_queue,
                      "SQS queue name or URL (INTERRUPTION_QUEUE)");
  run_cmd
      ->add_option("--price-file", run_args.options.cloud.price_file,
                   "on-demand prices when the Pricing API cannot answer")
      ->check(CLI::ExistingFile);
  run_cmd->add_option("--kubernetes-version", run_args.options.cloud.kubernetes_version,
                      "for AMI aliases (default: the API server's)");
  run_cmd->add_option("--metrics-port", run_args.options.metrics_port, "metrics (METRICS_PORT)");
  run_cmd->add_option("--health-port", run_args.options.health_port,
                      "/healthz and /readyz (HEALTH_PROBE_PORT)");
  run_cmd->add_option("--bind-address", run_args.options.bind_address,
                      "address of the probe and metrics servers (0.0.0.0)");
  run_cmd->add_option("--log-level", run_args.options.log_level,
                      "debug|info|warn|error (LOG_LEVEL)");
  run_cmd->add_option("--log-format", run_args.log_format, "json (default) or text")
      ->check(CLI::IsMember({"json", "text"}));
  run_cmd->add_option("--retain", run_args.retain_age,
                      "drop log records older than this, at a snapshot (168h; 0: keep)");
  run_cmd
      ->add_option("--retain-bytes", run_args.options.retain_bytes,
                   "drop the oldest log records beyond this size (8GiB; 0: keep)")
      ->transform(CLI::AsSizeValue(false));
  run_cmd->add_option("--catalog-every", run_args.catalog_every, "catalog refresh (5m)");
  run_cmd->add_option("--gc-every", run_args.gc_every, "instance garbage collection (2m)");
  run_cmd->add_option("--nodeclass-every", run_args.nodeclass_every,
                      "EC2NodeClass resolution (1m)");
  run_cmd->add_option("--aws-command-deadline", run_args.aws_deadline,
                      "an AWS command taking longer marks the AWS lane stuck (1m)");
  run_cmd
      ->add_option("--catalog", run_args.options.catalog_file,
                   "instance types from `tenon catalog export`")
      ->check(CLI::ExistingFile);
  run_cmd->add_option("--identity", run_args.options.lease.identity,
                      "leader-election identity (default: hostname and a random suffix)");
  // Karpenter's name for the namespace it runs in (the Deployment sets it from the downward API).
  if (const char* ns = std::getenv("SYSTEM_NAMESPACE")) run_args.options.lease.ns = ns;
  run_cmd->add_option("--lease-namespace", run_args.options.lease.ns, "namespace of the Lease");
  run_cmd->add_option("--lease-name", run_args.options.lease.name, "name of the Lease");
  run_cmd->add_option("--lease-duration", run_args.lease_duration, "Lease duration (15s)");
  run_cmd->add_option("--renew-deadline", run_args.renew_deadline, "renew deadline (10s)");
  run_cmd->add_option("--retry-period", run_args.retry_period, "retry period (2s)");
  run_cmd->add_option("--tick", run_args.tick, "clock tick folded into the log (1s)");
  run_cmd->add_flag("--disable-leader-election", run_args.disable_leader_election,
                    "act without a Lease (one replica only)");

  // Karpenter's environment names give `tenon run` its defaults; flags override them. A bad
  // value is an error only for `run`.
  std::string environment_error;
  try {
    controller::ApplyEnvironment(run_args.options);
  } catch (const std::exception& e) {
    environment_error = e.what();
  }
  g_fatal_as_json = RunLogsJson(argc, argv);
  if (g_fatal_as_json) metrics::ConfigureLogging("info", true);  // Until --log-level is read.
  // CLI11 would call an unknown word "a subcommand is required"; name it instead.
  if (argc > 1 && argv[1][0] != '-') {
    std::string names;
    bool known = false;
    for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
      known = known || sub->check_name(argv[1]);
      names += (names.empty() ? "" : ", ") + sub->get_name();
    }
    if (!known) {
      return Fatal(2, "unknown subcommand '" + std::string(argv[1]) + "'; the subcommands are " +
                          names + " (tenon --help says more)");
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version are parse "errors" with exit code 0.
    if (!g_fatal_as_json || e.get_exit_code() == 0) return app.exit(e);
    return Fatal(e.get_exit_code(), std::string(e.get_name()) + ": " + e.what());
  }
  try {
    if (simulate->parsed()) return RunSimulate(sim_args);
    if (conformance->parsed()) {
      return sim::PrintConformance(sim::RunConformance(conformance_path), conformance_pass_percent);
    }
    if (auto code = cmd::RunIncidentCommand(*incident)) return *code;
    if (export_cmd->parsed()) return RunCatalogExport(export_args);
    if (capture->parsed()) return RunCapture(capture_args);
    if (run_cmd->parsed()) {
      if (!environment_error.empty()) return Fatal(2, "bad setting: " + environment_error);
      return RunController(run_args);
    }
  } catch (const log::LogError& e) {
    return Fatal(1, std::string("log error: ") + e.what());
  } catch (const std::exception& e) {
    return Fatal(1, e.what());
  }
  return 0;
}
