// What `tenon simulate` costs at scale: a 24-hour virtual run of a ~1,000-node cluster
// with churn, and the replay of its log.
//
// The controller is `tenon simulate`'s: runtime::Runtime over a RocksDB event log in a temporary
// folder ($TMPDIR) without RocksDB's WAL, snapshots as `tenon simulate` takes them (every 500
// events, at most one per 15 virtual minutes), no fsync, a tick every virtual
// second; the simulated cluster and cloud (sim::World) in memory. As `tenon simulate` without
// --log, the log's appends are pipelined and the commands do not wait for them
// (runtime::Appends::kPipelinedAhead): a writer thread encodes and appends the records, and encodes
// and writes the snapshots, beside the core's Step
// (--wait-for-log: commands wait for their outputs to be in the log, kPipelined, as with --log;
// --synchronous: every append and snapshot on the runtime's thread, as `tenon run`). The cluster is
// bench_run's churning one (bench/churn.h) at a fifth of its size: 20 Deployments of 500 pods on 4-
// and 8-vCPU types; after 20 minutes one deployment rescales every 60 s (by default), a spot
// interruption arrives every 5 minutes, a rebalance recommendation every 15, an instance is
// terminated behind the controller's back and a NodeClaim deleted by hand every hour; consolidation
// runs as the controller schedules it.
//
// Printed: the run's wall time and events per second, split into the World, the core's Step,
// the time the runtime's thread waited for the writer and the rest (and, beside it on the
// writer thread, the encoding, appends and snapshots it overlapped; or, synchronous, the log
// appends on the runtime's thread); then `tenon replay --verify`'s work on the log (replay::Verify:
// every output, decision and snapshot hash compared, the stretches between snapshots folded side by
// side, one per core) with its events per second. Baseline in the same run: the log's events folded
// by the core alone from zero on one core (Scan + decode + Step, nothing compared).
//
//   bench_simulate [--catalog PATH] [--quick] [--hours N] [--deployments N] [--replicas N]
//                  [--scale-every SECONDS] [--wait-for-log | --synchronous] [--keep-log DIR]
//                  [--snapshot-min-interval SECONDS] [--verify-threads N]
//   bench_simulate --fold DIR [--repeat N] [--audit-simulation]
//   bench_simulate --verify DIR [--repeat N] [--verify-threads N]
//
// --keep-log writes the log to DIR and leaves it there; --fold times the core alone folding
// such a log from zero, N times (the fastest is the figure least disturbed by the machine), to
// compare two builds of the core on the same events; --verify times the replay alone on such a
// log. --audit-simulation places every consolidation trial that used the base run's hints
// again without them, and every trial stopped once blocked again in full, and stops at the
// first difference. --verify-threads sets the replay's threads
// (0, the default: one per core, at most 16): the log is cut into 4 stretches a thread, and at
// least 64 where it has the snapshots; the longest stretch's CPU time is what the replay would take
// on a machine with a core for each.
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "adapters/runtime/runtime.h"
#include "adapters/sim/simulator.h"
#include "adapters/sim/world.h"
#include "bench/churn.h"
#include "log/codec.h"
#include "log/event_log.h"
#include "replay/replay.h"

namespace {

using namespace tenon;
using Clock = std::chrono::steady_clock;

constexpr double kTargetRunSeconds = 60;
constexpr double kTargetReplaySeconds = 20;  // replay --verify on this machine.
// With a core for each stretch: the longest stretch's CPU time.
constexpr double kTargetReplayPerStretchSeconds = 2.5;
constexpr double kTargetFoldEventsPerSecond = 200'000;  // The core alone, on one core.
// `tenon simulate`'s snapshot schedule (every 500 events, at most one per 15 virtual minutes;
// --snapshot-min-interval sets another minimum).
const sim::SimulateOptions kSimulateDefaults;

double Since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Where the run's time goes: the log's appends and the core's Step, as the runtime reports them
// (on its own thread: pipelined appends are reported once written, not as the writer makes them).
struct Split : runtime::Observer {
  void OnAppend(std::size_t n, std::size_t b, std::chrono::nanoseconds took, Seq) override {
    records += n;
    bytes += b;
    append_seconds += std::chrono::duration<double>(took).count();
  }
  void OnFolded(Seq, const Event& e, const Output&, std::chrono::nanoseconds took) override {
    const double s = std::chrono::duration<double>(took).count();
    step_seconds += s;
    auto& [count, seconds] = by_kind[log::EventKind(e)];
    ++count;
    seconds += s;
  }
  void OnSnapshot(Seq) override { ++snapshots; }
  std::uint64_t records = 0, bytes = 0, snapshots = 0;
  double append_seconds = 0, step_seconds = 0;
  std::map<std::string, std::pair<std::uint64_t, double>> by_kind;  // kind: count, seconds
};

struct Args {
  bench::ChurnArgs churn;
  std::int64_t hours = 24;
  // The world lives in memory and the log is removed at exit: nothing outlives the process, so
  // commands need not wait for the log (runtime::Appends::kPipelinedAhead).
  runtime::Appends appends = runtime::Appends::kPipelinedAhead;
  std::filesystem::path keep_log;  // Empty: a temporary folder, removed at the end.
  std::filesystem::path fold;      // Set: only fold this log, `repeat` times.
  std::filesystem::path verify;    // Set: only verify this log, `repeat` times.
  std::size_t verify_threads = 0;  // replay::Verify's threads (0: one per core, at most 16).
  Duration snapshot_min_interval = kSimulateDefaults.snapshot_min_interval;
  std::int64_t repeat = 3;
  bool audit_simulation = false;  // --fold: check every hinted consolidation trial.
};

// CPU seconds of the calling thread, of the whole process (every thread: the runtime's, the log
// writer, RocksDB's flushes and compactions), and the machine's steal time (what the hypervisor
// gave other guests while this one had work: /proc/stat's steal column over all CPUs, 0 where
// it cannot be read). On a shared host the wall time moves with the other guests' load; the CPU
// times move less, and the steal time shows how much of the wall time the host took away.
struct CpuClock {
  double thread = 0, process = 0, steal = 0;
  static CpuClock Now() {
    CpuClock c;
    timespec ts{};
    ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    c.thread = static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
    rusage usage{};
    ::getrusage(RUSAGE_SELF, &usage);
    auto seconds = [](const timeval& tv) {
      return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) / 1e6;
    };
    c.process = seconds(usage.ru_utime) + seconds(usage.ru_stime);
    if (std::FILE* stat = std::fopen("/proc/stat", "r")) {
      unsigned long long v[8] = {};
      if (std::fscanf(stat, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2],
                      &v[3], &v[4], &v[5], &v[6], &v[7]) == 8) {
        c.steal = static_cast<double>(v[7]) / static_cast<double>(::sysconf(_SC_CLK_TCK));
      }
      std::fclose(stat);
    }
    return c;
  }
};

// A log as `tenon replay` opens it: read-only, and only if it is there.
std::unique_ptr<log::EventLog> OpenReadOnly(const std::filesystem::path& dir) {
  log::OpenOptions open;
  open.read_only = true;
  open.create_if_missing = false;
  return log::EventLog::Open(dir, open);
}

// replay::Verify's figures: the wall time with its events per second, then the CPU time of its
// jobs (the stretches and the fold from the newest snapshot), whose longest is about what the
// replay would take with a core for each.
// What the verification would take with a core for each of its jobs: its longest, a stretch or
// the fold from the newest snapshot beside them.
double CoreEachSeconds(const replay::VerifyReport& verify) {
  std::chrono::nanoseconds longest = verify.newest_cpu;
  for (auto cpu : verify.stretch_cpu) longest = std::max(longest, cpu);
  return std::chrono::duration<double>(longest).count();
}

void PrintVerify(const replay::VerifyReport& verify, double seconds) {
  std::printf("replay --verify: %" PRIu64 " events, %" PRIu64 " outputs, %" PRIu64
              " decisions, %" PRIu64 " snapshots checked (%" PRIu64
              " decoded) in %.2f s (%.0f events/s; %zu stretches side by side on %u cores): %s\n",
              verify.events, verify.outputs, verify.decisions, verify.snapshots_checked,
              verify.snapshots_decoded, seconds, static_cast<double>(verify.events) / seconds,
              verify.cuts.size() + 1, std::thread::hardware_concurrency(),
              replay::VerdictName(verify.verdict));
  double total = 0, longest = 0;
  for (const auto cpu : verify.stretch_cpu) {
    const double s = std::chrono::duration<double>(cpu).count();
    total += s;
    longest = std::max(longest, s);
  }
  const double newest = std::chrono::duration<double>(verify.newest_cpu).count();
  std::printf(
      "  CPU time: %.2f s in all; its %zu stretches %.2f s, the longest %.2f s, and the "
      "fold from the newest snapshot beside them %.2f s: with a core for each, the wall "
      "time would be about %.2f s\n",
      total + newest, verify.stretch_cpu.size(), total, longest, newest, CoreEachSeconds(verify));
  std::fflush(stdout);
}

struct RunFigures {
  CpuClock cpu;  // Spent during the run (end minus start).
  double wall_seconds = 0, world_seconds = 0;
  std::uint64_t events = 0, state_hash = 0;
  std::size_t nodes_max = 0, nodes_min = SIZE_MAX, pods_max = 0;
  Split split;
  runtime::Appends appends = runtime::Appends::kSynchronous;
  runtime::PipelineStats pipeline;
};

RunFigures Simulate(const sim::Scenario& scenario, log::EventLog& log, runtime::Appends appends,
                    Duration snapshot_min_interval) {
  RunFigures f;
  sim::World world(scenario, std::filesystem::path());
  runtime::Options options;
  options.snapshot_every_events = kSimulateDefaults.snapshot_every_events;
  options.snapshot_min_interval = snapshot_min_interval;
  options.observer = &f.split;
  options.appends = appends;
  f.appends = appends;
  runtime::Runtime runtime(log, world, options);
  const auto start = Clock::now();
  const CpuClock cpu_start = CpuClock::Now();
  runtime.Recover();
  runtime.Ingest(world.StartupEvents(runtime.state()));
  const Instant end = scenario.start + scenario.duration;
  const Instant ramp_done = scenario.start + Duration{20 * kMinute.value};
  for (Instant t = scenario.start + scenario.tick; t <= end; t += scenario.tick) {
    const auto world_start = Clock::now();
    std::vector<Event> events = world.Advance(t);
    f.world_seconds += Since(world_start);
    runtime.Ingest(std::move(events));
    if ((t - scenario.start).value % (3600 * kSecond.value) != 0) continue;
    const sim::WorldSummary w = world.Summary();
    if (t > ramp_done) {
      f.nodes_max = std::max(f.nodes_max, w.nodes);
      f.nodes_min = std::min(f.nodes_min, w.nodes);
      f.pods_max = std::max(f.pods_max, w.pods_bound);
    }
    std::printf("  hour %2" PRId64 ": nodes %5zu  pods bound %6zu pending %4zu  %.1f s wall\n",
                (t - scenario.start).value / (3600 * kSecond.value), w.nodes, w.pods_bound,
                w.pods_pending, Since(start));
    std::fflush(stdout);
  }
  runtime.Flush();  // The run ends once the log holds all of it.
  f.wall_seconds = Since(start);
  const CpuClock cpu_end = CpuClock::Now();
  f.cpu = {cpu_end.thread - cpu_start.thread, cpu_end.process - cpu_start.process,
           cpu_end.steal - cpu_start.steal};
  f.pipeline = runtime.pipeline_stats();
  f.events = runtime.events_folded();
  f.state_hash = StateHash(runtime.state());
  return f;
}

// The baseline: every event folded from zero by the core alone, nothing compared.
double FoldAlone(const log::EventLog& log, std::uint64_t* hash) {
  const auto start = Clock::now();
  State state = replay::FoldTo(log, Seq{0}, false);
  *hash = StateHash(state);
  return Since(start);
}

const char* Verdict(bool pass) {
  return pass ? "PASS" : "MISS";
}

double Seconds(std::chrono::nanoseconds ns) {
  return std::chrono::duration<double>(ns).count();
}

const char* AppendsName(runtime::Appends appends) {
  switch (appends) {
    case runtime::Appends::kSynchronous:
      return "synchronous";
    case runtime::Appends::kPipelined:
      return "pipelined";
    case runtime::Appends::kPipelinedAhead:
      return "pipelined ahead";
  }
  return "?";
}

// Where the run's wall time went, on the runtime's thread; with pipelined appends, what the
// writer thread did beside it (overlapped: not part of the wall time unless waited for).
void PrintSplit(const RunFigures& run) {
  const double core = run.split.step_seconds, append = run.split.append_seconds;
  if (run.appends == runtime::Appends::kSynchronous) {
    std::printf(
        "  of the wall time (synchronous appends): core Step %.1f s, log appends %.1f s, World "
        "%.1f s, the rest (encoding, snapshots, runtime) %.1f s\n",
        core, append, run.world_seconds, run.wall_seconds - core - append - run.world_seconds);
    return;
  }
  const double waited = Seconds(run.pipeline.waited);
  std::printf(
      "  of the wall time (%s appends): core Step %.1f s, World %.1f s, waiting for the log "
      "writer %.1f s, the rest (snapshots, runtime) %.1f s\n",
      AppendsName(run.appends), core, run.world_seconds, waited,
      run.wall_seconds - core - run.world_seconds - waited);
  std::printf("  on the writer thread, overlapped: encoding %.1f s, log appends %.1f s (%" PRIu64
              " appends), snapshots %.1f s (%" PRIu64
              "; their states copied in the rest: %.1f s)\n",
              Seconds(run.pipeline.encode), append, run.pipeline.appends,
              Seconds(run.pipeline.snapshot), run.pipeline.snapshots, Seconds(run.pipeline.copy));
}

// The run's figures, printed before the (as long) replay starts.
void PrintRun(const sim::Scenario& scenario, const RunFigures& run,
              const std::filesystem::path& dir) {
  const std::uintmax_t disk = bench::DirBytes(dir);
  const double virtual_seconds = static_cast<double>(scenario.duration.value) / 1e9;
  std::printf("\nsimulate: %.0f virtual seconds in %.1f s wall (%.0fx real time)\n",
              virtual_seconds, run.wall_seconds, virtual_seconds / run.wall_seconds);
  std::printf("  cluster after the ramp: %zu to %zu nodes, up to %zu pods bound\n", run.nodes_min,
              run.nodes_max, run.pods_max);
  std::printf("  events folded %" PRIu64 " (%.0f/s wall); records appended %" PRIu64
              " (%.1f MB), %" PRIu64 " snapshots, %.1f MB on disk\n",
              run.events, static_cast<double>(run.events) / run.wall_seconds, run.split.records,
              static_cast<double>(run.split.bytes) / 1e6, run.split.snapshots,
              static_cast<double>(disk) / 1e6);
  PrintSplit(run);
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  std::printf(
      "  CPU during the run: the runtime's thread %.1f s, the whole process %.1f s "
      "(%.2f of %u cores over the wall time); the hypervisor stole %.1f CPU-seconds\n",
      run.cpu.thread, run.cpu.process, run.cpu.process / (cores * run.wall_seconds), cores,
      run.cpu.steal);
  std::printf("  the core's Step by event kind:");
  for (const auto& [kind, figures] : run.split.by_kind) {
    std::printf(" %s %" PRIu64 " (%.1f s)", kind.c_str(), figures.first, figures.second);
  }
  std::printf("\n");
  std::fflush(stdout);
}

int Run(const Args& args) {
  const sim::Scenario scenario = bench::MakeScenario(args.churn);
  auto dir = !args.keep_log.empty() ? args.keep_log
                                    : std::filesystem::temp_directory_path() /
                                          ("tenon-bench-simulate-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  log::OpenOptions open;
  open.writer_version = "bench";
  open.cluster_id = scenario.settings.cluster_name;
  open.write_ahead_log = runtime::NeedsWriteAheadLog(args.appends);  // As `tenon simulate`.
  auto log = log::EventLog::Open(dir, open);
  std::printf("scenario: %" PRId64 " virtual hours, %" PRId64 " deployments x %" PRId64
              " pods, %zu catalog types, %zu scaling steps, %zu actions; log in %s\n",
              args.hours, args.churn.deployments, args.churn.replicas, scenario.catalog.size(),
              scenario.workloads.size(), scenario.actions.size(), dir.c_str());
  RunFigures run = Simulate(scenario, *log, args.appends, args.snapshot_min_interval);
  PrintRun(scenario, run, dir);
  // The pipelined modes hold a state copy per snapshot and the records not yet written: the
  // process's peak resident memory so far is the run's (the replay has not started).
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  std::printf("  peak resident memory of the process during the run: %.1f MB\n",
              static_cast<double>(usage.ru_maxrss) / 1024.0);
  std::fflush(stdout);

  // `tenon replay --verify` reads a closed log (copied out of a cluster, or left by `tenon
  // simulate --log`): the run's log is closed (its memtables flushed) and opened again read-only,
  // so no flush or compaction of the run's shares the cores with the replay.
  log.reset();
  log = OpenReadOnly(dir);
  const auto verify_start = Clock::now();
  replay::VerifyReport verify = replay::Verify(*log, {}, args.verify_threads);
  const double verify_seconds = Since(verify_start);
  PrintVerify(verify, verify_seconds);
  std::uint64_t alone_hash = 0;
  const double alone_seconds = FoldAlone(*log, &alone_hash);
  log.reset();
  if (args.keep_log.empty()) std::filesystem::remove_all(dir);
  std::printf(
      "baseline, same run: the core alone folding the log from zero (nothing compared): "
      "%.2f s (%.0f events/s); final state %s the run's (%016" PRIx64 ")\n",
      alone_seconds, static_cast<double>(verify.events) / alone_seconds,
      alone_hash == run.state_hash ? "equals" : "DIFFERS FROM", run.state_hash);
  const double longest_seconds = CoreEachSeconds(verify);
  const double fold_rate = static_cast<double>(verify.events) / alone_seconds;
  std::printf("\ntarget: run < %.0f s: %s (%.1f s); replay < %.0f s: %s (%.2f s)\n",
              kTargetRunSeconds, Verdict(run.wall_seconds < kTargetRunSeconds), run.wall_seconds,
              kTargetReplaySeconds, Verdict(verify_seconds < kTargetReplaySeconds), verify_seconds);
  std::printf(
      "  replay with a core for each stretch < %.1f s: %s (%.2f s); core alone >= %.0f "
      "events/s: %s (%.0f)\n",
      kTargetReplayPerStretchSeconds, Verdict(longest_seconds < kTargetReplayPerStretchSeconds),
      longest_seconds, kTargetFoldEventsPerSecond, Verdict(fold_rate >= kTargetFoldEventsPerSecond),
      fold_rate);
  const bool ok = verify.verdict == replay::Verdict::kIdentical && alone_hash == run.state_hash;
  if (!ok) std::printf("FAILED: the replay is not identical: %s\n", verify.detail.c_str());
  return ok ? 0 : 1;
}

// --verify: `tenon replay --verify`'s work on a kept log, `repeat` times.
int VerifyOnly(const Args& args) {
  auto log = OpenReadOnly(args.verify);
  bool identical = true;
  for (std::int64_t i = 0; i < args.repeat; ++i) {
    const auto start = Clock::now();
    replay::VerifyReport verify = replay::Verify(*log, {}, args.verify_threads);
    PrintVerify(verify, Since(start));
    identical = identical && verify.verdict == replay::Verdict::kIdentical;
  }
  return identical ? 0 : 1;
}

// --fold --audit-simulation: the log folded once with SelfChecks::simulation on, which throws
// at the first trial whose hints, or stopping once blocked, changed its answer.
int AuditFold(const log::EventLog& log) {
  State state;
  state.checks.simulation = true;
  std::uint64_t events = 0;
  log.Scan(Seq{1}, Seq{0}, [&](const log::Record& record) {
    auto entry = log::DecodeEntry(record.payload);
    if (const auto* event = std::get_if<Event>(&entry)) {
      Step(state, Seq{record.seq}, *event);
      ++events;
    }
    return true;
  });
  std::printf("audit: %" PRIu64
              " events folded, every hinted trial placed again without its hints and "
              "every trial stopped once blocked placed again in full, the same; final state "
              "%016" PRIx64 "\n",
              events, StateHash(state));
  return 0;
}

// --fold: the core alone on a kept log, `repeat` times.
int Fold(const Args& args) {
  auto log = OpenReadOnly(args.fold);
  if (args.audit_simulation) return AuditFold(*log);
  double fastest = 0;
  for (std::int64_t i = 0; i < args.repeat; ++i) {
    std::uint64_t hash = 0;
    const double seconds = FoldAlone(*log, &hash);
    fastest = i == 0 ? seconds : std::min(fastest, seconds);
    std::printf("fold %" PRId64 ": %.3f s, %" PRIu64 " records, final state %016" PRIx64 "\n",
                i + 1, seconds, log->LastSeq().value, hash);
  }
  std::printf("fastest: %.3f s\n", fastest);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  args.churn.deployments = 20;
  args.churn.scale_every_seconds = 60;
  for (int i = 1; i < argc; ++i) {
    auto next = [&] { return i + 1 < argc ? std::stoll(argv[++i]) : 0; };
    if (std::strcmp(argv[i], "--quick") == 0) {
      args.churn.deployments = 4, args.churn.replicas = 25, args.hours = 1;
    } else if (std::strcmp(argv[i], "--synchronous") == 0) {
      args.appends = runtime::Appends::kSynchronous;
    } else if (std::strcmp(argv[i], "--wait-for-log") == 0) {
      args.appends = runtime::Appends::kPipelined;
    } else if (std::strcmp(argv[i], "--catalog") == 0 && i + 1 < argc) {
      args.churn.catalog = argv[++i];
    } else if (std::strcmp(argv[i], "--hours") == 0) {
      args.hours = next();
    } else if (std::strcmp(argv[i], "--deployments") == 0) {
      args.churn.deployments = next();
    } else if (std::strcmp(argv[i], "--replicas") == 0) {
      args.churn.replicas = next();
    } else if (std::strcmp(argv[i], "--scale-every") == 0) {
      args.churn.scale_every_seconds = next();
    } else if (std::strcmp(argv[i], "--keep-log") == 0 && i + 1 < argc) {
      args.keep_log = argv[++i];
    } else if (std::strcmp(argv[i], "--fold") == 0 && i + 1 < argc) {
      args.fold = argv[++i];
    } else if (std::strcmp(argv[i], "--verify") == 0 && i + 1 < argc) {
      args.verify = argv[++i];
    } else if (std::strcmp(argv[i], "--snapshot-min-interval") == 0) {
      args.snapshot_min_interval = Duration{next() * kSecond.value};
    } else if (std::strcmp(argv[i], "--verify-threads") == 0) {
      args.verify_threads = static_cast<std::size_t>(std::max<long long>(0, next()));
    } else if (std::strcmp(argv[i], "--repeat") == 0) {
      args.repeat = std::max<std::int64_t>(1, next());
    } else if (std::strcmp(argv[i], "--audit-simulation") == 0) {
      args.audit_simulation = true;
    }
  }
  args.churn.churn_seconds = args.hours * 3600 - args.churn.build_seconds;
  if (args.churn.deployments <= 0 || args.churn.replicas <= 0 || args.churn.churn_seconds <= 0 ||
      args.churn.scale_every_seconds <= 0) {
    std::fprintf(stderr, "bench_simulate: sizes must be positive (hours >= 1)\n");
    return 2;
  }
  try {
    if (!args.fold.empty()) return Fold(args);
    if (!args.verify.empty()) return VerifyOnly(args);
    return Run(args);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_simulate: %s (run from the repository root or pass --catalog)\n",
                 e.what());
    return 2;
  }
}
