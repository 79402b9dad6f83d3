// What `tenon run` costs: resident memory and CPU of the controller on a simulated
// ~5,000-node / ~50,000-pod cluster over one virtual hour of churn.
//
// The controller is the one `tenon run` runs: runtime::Runtime over a RocksDB event log in a
// temporary folder (snapshots every 1,000 events, no fsync, as `tenon run`'s defaults), folding
// through the reducers' Step, ticked every virtual second. The simulated cluster and cloud
// (sim::World, kept in memory) stand where the API server and EC2 stand. The scenario is
// generated here: 100 deployments of 500 pods appear over ten minutes on a NodePool of 8-vCPU
// types (spot and on-demand); after 20 virtual minutes the hour of churn begins, in which one
// deployment scales to between half and one and a half times its size every 20 s, a spot
// interruption arrives every 5 minutes, a rebalance recommendation every 15, an instance is
// terminated behind the controller's back and a NodeClaim deleted by hand, and consolidation
// runs as the controller schedules it.
//
// Printed: the process's resident memory before anything is loaded, once the cluster is built
// and at its peak during the hour; CPU seconds (user + sys, every thread) spent on the hour and
// "average cores" = CPU seconds / virtual seconds; events/s and log bytes. The simulated World
// lives in this process too, so its CPU (timed around every call into it) and its heap
// (measured by destroying it at the end) are reported beside the process figures and taken out
// of the controller's. Baseline in the same run: the hour's recorded events folded by the pure
// core alone (a log Scan, decode and Step; no RocksDB writes, no adapters).
//
//   bench_run [--catalog PATH] [--quick] [--deployments N] [--replicas N] [--churn-seconds N]
#include <malloc.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "adapters/runtime/runtime.h"
#include "adapters/sim/scenario.h"
#include "adapters/sim/world.h"
#include "bench/churn.h"
#include "bench/workload.h"
#include "log/codec.h"
#include "log/event_log.h"
#include "reducers/core.h"

namespace {

using namespace tenon;
using Clock = std::chrono::steady_clock;

constexpr double kTargetRssMb = 100, kTargetCores = 0.2;
constexpr double kTargetIdleTickUs = 20, kTargetFoldRate = 100'000;
constexpr double kKarpenterRssMb = 260, kKarpenterCores = 0.5;
constexpr std::uint64_t kSnapshotEvery = 1000;  // `tenon run`'s defaults.
constexpr Duration kSnapshotMinInterval{5 * 60 * kSecond.value};

using Args = bench::ChurnArgs;
using bench::kStart;

// ---- measuring the process ----

double StatusMb(const char* key) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) == 0) return std::stod(line.substr(std::strlen(key) + 1)) / 1024.0;
  }
  return -1;
}

// Resets VmHWM to the current RSS (Linux 4.0+), so the next VmHWM is the peak from now on.
bool ResetPeak() {
  std::ofstream out("/proc/self/clear_refs");
  out << "5";
  out.flush();
  return static_cast<bool>(out);
}

double CpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  auto seconds = [](const timeval& t) { return t.tv_sec + t.tv_usec / 1e6; };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

double ThreadCpuSeconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec + t.tv_nsec / 1e9;
}

// What the allocator has handed out and not had back, in every arena (jemalloc's count: the
// benchmark links the controller's allocator, whose arenas glibc's mallinfo2 does not see).
double HeapMb() {
  return static_cast<double>(runtime::HeapBytesInUse()) / (1024.0 * 1024.0);
}

double Since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// ---- the controller's surroundings ----

// Counts what the runtime appends to the log.
struct AppendCounter : runtime::Observer {
  void OnAppend(std::size_t records_in, std::size_t bytes_in, std::chrono::nanoseconds,
                Seq) override {
    records += records_in;
    bytes += bytes_in;
  }
  void OnSnapshot(Seq) override { ++snapshots; }
  std::uint64_t records = 0, bytes = 0, snapshots = 0;
};

// The World as the runtime's executor, with the CPU it takes kept apart from the controller's.
struct TimedWorld : runtime::Executor {
  explicit TimedWorld(sim::World& w) : world(w) {}
  std::vector<Event> Execute(const Command& command) override {
    double start = ThreadCpuSeconds();
    auto events = world.Execute(command);
    cpu_seconds += ThreadCpuSeconds() - start;
    return events;
  }
  std::vector<Event> Advance(Instant now) {
    double start = ThreadCpuSeconds();
    auto events = world.Advance(now);
    cpu_seconds += ThreadCpuSeconds() - start;
    return events;
  }
  sim::World& world;
  double cpu_seconds = 0;
};

using bench::DirBytes;
using bench::MakeScenario;
using bench::Seconds;

// ---- the run ----

struct Phase {
  double cpu_seconds = 0, world_cpu_seconds = 0, wall_seconds = 0;
  std::uint64_t events = 0, records = 0, bytes = 0, snapshots = 0;
  double rss_max_sampled_mb = 0;
};

void PrintWorld(const char* when, Instant now, const sim::World& world, const State& state) {
  sim::WorldSummary w = world.Summary();
  std::printf("  %-12s t=%5" PRId64
              " s  nodes %5zu  nodeclaims %5zu  pods bound %6zu  pending %5zu"
              "  RSS %6.1f MB\n",
              when, (now - kStart).value / kSecond.value, w.nodes,
              state.lifecycle.nodeclaims.size(), w.pods_bound, w.pods_pending, StatusMb("VmRSS:"));
  std::fflush(stdout);
}

// Ticks the controller from `from` through `to` (virtual), once a second.
Phase Drive(runtime::Runtime& runtime, TimedWorld& world, const AppendCounter& counter,
            Instant from, Instant to, bool progress) {
  Phase phase;
  const double cpu0 = CpuSeconds(), world0 = world.cpu_seconds;
  const auto wall0 = Clock::now();
  const std::uint64_t events0 = runtime.events_folded(), records0 = counter.records,
                      bytes0 = counter.bytes, snapshots0 = counter.snapshots;
  for (Instant t = from; t <= to; t += kSecond) {
    runtime.Ingest(world.Advance(t));
    if ((t - kStart).value % (60 * kSecond.value) == 0) {
      phase.rss_max_sampled_mb = std::max(phase.rss_max_sampled_mb, StatusMb("VmRSS:"));
    }
    if (progress && (t - kStart).value % (600 * kSecond.value) == 0) {
      PrintWorld("", t, world.world, runtime.state());
    }
  }
  phase.cpu_seconds = CpuSeconds() - cpu0;
  phase.world_cpu_seconds = world.cpu_seconds - world0;
  phase.wall_seconds = Since(wall0);
  phase.events = runtime.events_folded() - events0;
  phase.records = counter.records - records0;
  phase.bytes = counter.bytes - bytes0;
  phase.snapshots = counter.snapshots - snapshots0;
  return phase;
}

struct CoreOnly {
  double cpu_seconds = 0, step_cpu_seconds = 0, wall_seconds = 0;
  std::uint64_t events = 0;
  std::uint64_t state_hash = 0;
  double state_heap_mb = 0;
  // Of the State's heap: what freeing its pods, nodes, NodeClaims and catalog gave back.
  double pods_heap_mb = 0, nodes_heap_mb = 0, nodeclaims_heap_mb = 0, catalog_heap_mb = 0;
};

// One-second ticks with no other input: a minute of them to let the last changes settle (the
// first disruption pass after a change still looks at the cluster), then kIdleTicks timed, CPU
// microseconds per tick. `outputs` counts what the timed ones did (an idle cluster's do
// nothing).
constexpr int kSettleTicks = 60, kIdleTicks = 600;
double IdleTickMicros(State& state, std::size_t& outputs) {
  const Instant start = state.now;
  const Seq seq = state.last_seq;
  double cpu0 = ThreadCpuSeconds();
  for (int i = 1; i <= kSettleTicks + kIdleTicks; ++i) {
    if (i == kSettleTicks + 1) cpu0 = ThreadCpuSeconds();
    const std::size_t n = Step(state, Seq{seq.value + static_cast<std::uint64_t>(i)},
                               Tick{start + static_cast<std::int64_t>(i) * kSecond})
                              .size();
    if (i > kSettleTicks) outputs += n;
  }
  return (ThreadCpuSeconds() - cpu0) / kIdleTicks * 1e6;
}

// The baseline: the same events folded by the pure core alone. The state at the start of the
// hour comes from the newest snapshot below it plus the events after (untimed); the hour's
// events are then read, decoded and folded, with Step's own CPU time summed apart.
std::size_t SnapshotBytes(const log::Snapshot& snapshot) {
  std::size_t bytes = 0;
  for (const auto& part : snapshot.parts) bytes += part.size();
  return bytes;
}

CoreOnly FoldCoreOnly(const log::EventLog& log, Seq churn_from) {
  CoreOnly core;
  const double heap0 = HeapMb();
  State state;
  Seq from{1};
  if (auto snapshot = log.SnapshotAtOrBelow(churn_from - 1)) {
    std::uint64_t hash = 0;
    state = log::DecodeSnapshot(snapshot->parts, &hash);
    from = snapshot->seq + 1;
  }
  auto fold = [&](const log::Record& record, bool timed) {
    auto entry = log::DecodeEntry(record.payload);
    if (const auto* event = std::get_if<Event>(&entry)) {
      double start = timed ? ThreadCpuSeconds() : 0;
      Step(state, Seq{record.seq}, *event);
      if (timed) core.step_cpu_seconds += ThreadCpuSeconds() - start, ++core.events;
    }
    return true;
  };
  if (from < churn_from)
    log.Scan(from, churn_from - 1, [&](const auto& r) { return fold(r, false); });
  const double cpu0 = ThreadCpuSeconds();
  const auto wall0 = Clock::now();
  log.Scan(churn_from, Seq{0}, [&](const auto& r) { return fold(r, true); });
  core.cpu_seconds = ThreadCpuSeconds() - cpu0;
  core.wall_seconds = Since(wall0);
  core.state_hash = StateHash(state);
  core.state_heap_mb = HeapMb() - heap0;
  auto freed = [](auto& part) {
    const double before = HeapMb();
    std::decay_t<decltype(part)>().swap(part);
    return before - HeapMb();
  };
  core.pods_heap_mb = freed(state.cluster.pods);
  core.nodes_heap_mb = freed(state.cluster.nodes);
  core.nodeclaims_heap_mb = freed(state.lifecycle.nodeclaims);
  core.catalog_heap_mb = freed(state.cluster.catalog.Mutable());
  return core;
}

const char* Verdict(bool pass) {
  return pass ? "PASS" : "MISS";
}

// An idle cluster of the hour's size: its pods bound to initialized nodes of one type
// (bench/workload.h), none waiting, nothing in flight, consolidation held by a zero budget.
// Its ticks beside those of an empty cluster.
void ReportIdleTicks(const std::vector<InstanceType>& catalog, std::size_t pods) {
  State state =
      bench::MakeCluster(catalog, "m5.2xlarge", pods, std::numeric_limits<std::size_t>::max(), "0");
  std::size_t outputs = 0;
  const double tick_us = IdleTickMicros(state, outputs);
  State empty;
  Step(empty, Seq{1}, ControllerStarted{"bench", 42, Settings{}});
  Step(empty, Seq{2}, Tick{state.now});
  std::size_t empty_outputs = 0;
  const double empty_us = IdleTickMicros(empty, empty_outputs);
  std::printf(
      "\nidle ticks (%d after %d to settle) on an idle cluster of %zu nodes and %zu pods: "
      "%.1f us each (%zu outputs) | baseline, the same ticks on an empty cluster: %.1f us "
      "each\n",
      kIdleTicks, kSettleTicks, state.cluster.nodes.size(), state.cluster.pods.size(), tick_us,
      outputs, empty_us);
  std::printf("  idle tick %.1f us: %s (target < %.0f us)\n", tick_us,
              Verdict(tick_us < kTargetIdleTickUs), kTargetIdleTickUs);
}

void Report(const Args& args, double rss_start, double rss_built, double rss_peak,
            double rss_peak_sampled, const Phase& hour, double world_heap_mb,
            double scenario_heap_mb, double state_heap_mb, const CoreOnly& core,
            std::uintmax_t log_disk_bytes) {
  const double cores = hour.cpu_seconds / static_cast<double>(args.churn_seconds);
  const double controller_cpu = hour.cpu_seconds - hour.world_cpu_seconds;
  const double controller_cores = controller_cpu / static_cast<double>(args.churn_seconds);
  const double controller_peak = rss_peak - world_heap_mb - scenario_heap_mb;
  std::printf("\nmemory (resident, MB)\n");
  std::printf("  process before anything is loaded   %7.1f\n", rss_start);
  std::printf("  cluster built                       %7.1f\n", rss_built);
  std::printf("  peak during the hour (VmHWM)        %7.1f   (max of per-minute samples %.1f)\n",
              rss_peak, rss_peak_sampled);
  std::printf("  of which the simulated World's heap %7.1f   (freed when it was destroyed)\n",
              world_heap_mb);
  std::printf("  and the scenario it runs (heap)     %7.1f   (catalog, workload steps, actions)\n",
              scenario_heap_mb);
  std::printf("  the controller's State alone (heap) %7.1f   (a second copy, folded by replay)\n",
              state_heap_mb);
  std::printf("    of which pods / nodes / NodeClaims / catalog  %.1f / %.1f / %.1f / %.1f\n",
              core.pods_heap_mb, core.nodes_heap_mb, core.nodeclaims_heap_mb, core.catalog_heap_mb);
  std::printf("  peak minus World and scenario       %7.1f   (the controller's estimate)\n",
              controller_peak);
  std::printf("\ncpu over %" PRId64 " virtual seconds (%.1f s wall)\n", args.churn_seconds,
              hour.wall_seconds);
  std::printf("  process (user+sys, all threads)     %7.1f s = %.3f cores on average\n",
              hour.cpu_seconds, cores);
  std::printf("  of which the simulated World        %7.1f s\n", hour.world_cpu_seconds);
  std::printf("  controller (process minus World)    %7.1f s = %.3f cores on average\n",
              controller_cpu, controller_cores);
  std::printf("  events folded %" PRIu64
              " (%.0f/s wall, %.0f per controller cpu second, %.1f per virtual second); records "
              "appended %" PRIu64 ", %.1f MB; snapshots %" PRIu64 "; log on disk %.1f MB\n",
              hour.events, static_cast<double>(hour.events) / hour.wall_seconds,
              static_cast<double>(hour.events) / controller_cpu,
              static_cast<double>(hour.events) / static_cast<double>(args.churn_seconds),
              hour.records, static_cast<double>(hour.bytes) / 1e6, hour.snapshots,
              static_cast<double>(log_disk_bytes) / 1e6);
  std::printf("\nbaseline, same run: the hour's %" PRIu64
              " events folded by the core alone "
              "(Scan + decode + Step, no writes): %.1f s cpu (Step itself %.1f s) = %.3f cores; "
              "%.0f events/s\n",
              core.events, core.cpu_seconds, core.step_cpu_seconds,
              core.cpu_seconds / static_cast<double>(args.churn_seconds),
              static_cast<double>(core.events) / core.wall_seconds);
  std::printf("  the log and adapters cost %.1f s cpu over the core (%.2fx the core-only fold)\n",
              controller_cpu - core.cpu_seconds, controller_cpu / core.cpu_seconds);
  std::printf(
      "\ntarget: < %.0f MB resident, < %.1f cores   (Karpenter's SLO: %.0f MB, %.1f cores "
      "for a 1,000-pod scale-out)\n",
      kTargetRssMb, kTargetCores, kKarpenterRssMb, kKarpenterCores);
  std::printf("  memory, process peak %.1f MB: %s (controller estimate %.1f MB: %s)\n", rss_peak,
              Verdict(rss_peak < kTargetRssMb), controller_peak,
              Verdict(controller_peak < kTargetRssMb));
  std::printf("  cpu, process %.3f cores: %s (controller %.3f cores: %s)\n", cores,
              Verdict(cores < kTargetCores), controller_cores,
              Verdict(controller_cores < kTargetCores));
  std::printf("  core-only fold %.0f events/s: %s (target %.0f)\n",
              static_cast<double>(core.events) / core.wall_seconds,
              Verdict(static_cast<double>(core.events) / core.wall_seconds >= kTargetFoldRate),
              kTargetFoldRate);
}

int Run(const Args& args) {
  const double rss_start = StatusMb("VmRSS:");
  const auto wall_start = Clock::now();
  const double heap_start = HeapMb();
  const sim::Scenario scenario = MakeScenario(args);
  const double scenario_heap_mb = HeapMb() - heap_start;
  auto dir =
      std::filesystem::temp_directory_path() / ("tenon-bench-run-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  log::OpenOptions open;
  open.writer_version = "bench";
  open.cluster_id = scenario.settings.cluster_name;
  auto log = log::EventLog::Open(dir, open);
  auto world = std::make_unique<sim::World>(scenario, std::filesystem::path());
  TimedWorld timed(*world);
  AppendCounter counter;
  runtime::Options options;
  options.snapshot_every_events = kSnapshotEvery;
  options.snapshot_min_interval = kSnapshotMinInterval;
  options.observer = &counter;
  auto runtime = std::make_unique<runtime::Runtime>(*log, timed, options);
  runtime->Recover();
  runtime->Ingest(world->StartupEvents(runtime->state()));
  std::printf("scenario: %" PRId64 " deployments x %" PRId64
              " pods, %zu catalog types, "
              "%zu scaling steps and %zu actions in the hour\n",
              args.deployments, args.replicas, scenario.catalog.size(),
              scenario.workloads.size() - static_cast<std::size_t>(args.deployments),
              scenario.actions.size());

  const Instant built_at = kStart + Seconds(args.build_seconds);
  Phase build = Drive(*runtime, timed, counter, kStart + kSecond, built_at, true);
  PrintWorld("built", built_at, *world, runtime->state());
  const double rss_built = StatusMb("VmRSS:");
  std::printf("  build: %.1f s wall, %.1f s cpu, %" PRIu64 " events\n", build.wall_seconds,
              build.cpu_seconds, build.events);
  const double rss_peak_build = StatusMb("VmHWM:");
  const bool reset = ResetPeak();
  const Seq churn_from = log->LastSeq() + 1;

  Phase hour = Drive(*runtime, timed, counter, built_at + kSecond,
                     built_at + Seconds(args.churn_seconds), true);
  PrintWorld("end", built_at + Seconds(args.churn_seconds), *world, runtime->state());
  const double rss_peak =
      reset ? StatusMb("VmHWM:") : std::max(rss_peak_build, hour.rss_max_sampled_mb);
  if (!reset) std::printf("  (could not reset VmHWM: the peak includes the build)\n");
  std::printf("  process peak before the hour (VmHWM, build included): %.1f MB\n", rss_peak_build);
  const std::uint64_t controller_hash = StateHash(runtime->state());

  // The World's heap: what destroying it gives back.
  const double heap_with_world = HeapMb();
  world.reset();
  const double world_heap_mb = heap_with_world - HeapMb();
  const double heap_with_runtime = HeapMb();
  runtime.reset();
  const double runtime_heap_mb = heap_with_runtime - HeapMb();
  CoreOnly core = FoldCoreOnly(*log, churn_from);
  std::printf("  core-only fold ends in the controller's state: %s\n",
              core.state_hash == controller_hash ? "yes" : "NO");
  std::uintmax_t disk = DirBytes(dir);
  auto snapshot = log->SnapshotAtOrBelow(Seq{0});
  std::printf(
      "  newest snapshot %.1f MB; heap given back: World %.1f MB, runtime (its State) "
      "%.1f MB, ",
      snapshot ? static_cast<double>(SnapshotBytes(*snapshot)) / 1e6 : 0.0, world_heap_mb,
      runtime_heap_mb);
  snapshot.reset();
  const double heap_with_log = HeapMb();
  log.reset();
  std::printf("RocksDB log (memtables, caches) %.1f MB\n", heap_with_log - HeapMb());
  std::filesystem::remove_all(dir);
  Report(args, rss_start, rss_built, rss_peak, hour.rss_max_sampled_mb, hour, world_heap_mb,
         scenario_heap_mb, core.state_heap_mb, core, disk);
  ReportIdleTicks(scenario.catalog, static_cast<std::size_t>(args.deployments * args.replicas));
  std::printf("\nbench wall time %.1f s\n", Since(wall_start));
  return core.state_hash == controller_hash ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  tenon::runtime::TuneAllocatorForLongRun();  // As tenon run does.
  Args args;
  bool idle_only = false;  // Only the idle-tick figure: quicker when working on a tick's cost.
  for (int i = 1; i < argc; ++i) {
    auto next = [&] { return i + 1 < argc ? std::stoll(argv[++i]) : 0; };
    if (std::strcmp(argv[i], "--quick") == 0) {
      args.deployments = 8, args.replicas = 25, args.build_seconds = 300, args.churn_seconds = 300;
    } else if (std::strcmp(argv[i], "--idle-only") == 0) {
      idle_only = true;
    } else if (std::strcmp(argv[i], "--catalog") == 0 && i + 1 < argc) {
      args.catalog = argv[++i];
    } else if (std::strcmp(argv[i], "--deployments") == 0) {
      args.deployments = next();
    } else if (std::strcmp(argv[i], "--replicas") == 0) {
      args.replicas = next();
    } else if (std::strcmp(argv[i], "--build-seconds") == 0) {
      args.build_seconds = next();
    } else if (std::strcmp(argv[i], "--churn-seconds") == 0) {
      args.churn_seconds = next();
    }
  }
  if (args.deployments <= 0 || args.replicas <= 0 || args.churn_seconds <= 0 ||
      args.build_seconds <= 0) {
    std::fprintf(stderr, "bench_run: sizes must be positive\n");
    return 2;
  }
  try {
    if (idle_only) {
      ReportIdleTicks(MakeScenario(args).catalog,
                      static_cast<std::size_t>(args.deployments * args.replicas));
      return 0;
    }
    return Run(args);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_run: %s (run from the repository root or pass --catalog)\n",
                 e.what());
    return 2;
  }
}
