#include "adapters/sim/simulator.h"

#include <memory>
#include <string>

#include "adapters/runtime/runtime.h"

namespace tenon::sim {
namespace {
constexpr const char* kWriterVersion = "tenon-0.1.0";

std::unique_ptr<log::EventLog> OpenLog(const Scenario& scenario, const SimulateOptions& options,
                                       SimulateReport& report) {
  log::OpenOptions open;
  open.writer_version = kWriterVersion;
  open.cluster_id = scenario.settings.cluster_name;
  open.write_ahead_log = runtime::NeedsWriteAheadLog(options.appends);
  log::OpenReport opened;
  auto log = log::EventLog::Open(options.log_dir, open, &opened);
  report.open_message = opened.message;
  return log;
}

// The log's inputs came from a world that is gone when its file is: a new empty world would
// contradict them.
void RequireWorldOfLog(bool resumed, const log::EventLog& log, const std::filesystem::path& dir) {
  if (resumed || log.LastSeq() == Seq{0}) return;
  if (std::filesystem::exists(dir / kJsonWorldFile)) {
    throw ScenarioError((dir / kJsonWorldFile).string() +
                        " is a world file in the JSON form older versions of tenon wrote, which "
                        "this version does not resume (start again in an empty folder)");
  }
  throw ScenarioError((dir / kWorldFile).string() + " is missing, but the log in " + dir.string() +
                      " holds " + std::to_string(log.LastSeq().value) +
                      " records of its run; the run cannot resume without it (start again "
                      "in an empty folder)");
}

// A world saved after a tick's events reached the log is never more than that tick ahead
// of it; further, and the log was cut back under it (`tenon log repair`).
void RequireLogUnderWorld(const World& world, const State& state, const Scenario& scenario,
                          const std::filesystem::path& dir, const std::string& open_message) {
  if (!world.started() || world.now() <= state.now + scenario.tick) return;
  throw ScenarioError((dir / kWorldFile).string() + " is at " + ClockText(world.now()) +
                      ", past the log's last record (" + ClockText(state.now) +
                      "): the log was cut back under it and a simulated world cannot be "
                      "rewound; start the run again in an empty folder" +
                      (open_message.empty() ? "" : " (" + open_message + ")"));
}

// `observers` gathers the observer and the report builder, and must outlive the runtime.
runtime::Options RuntimeOptions(const SimulateOptions& options, runtime::ObserverList& observers) {
  runtime::Options runtime_options;
  runtime_options.snapshot_every_events = options.snapshot_every_events;
  runtime_options.snapshot_min_interval = options.snapshot_min_interval;
  runtime_options.sync = options.sync;
  runtime_options.appends = options.appends;
  runtime_options.on_ack = options.on_ack;
  if (options.observer != nullptr) observers.Add(options.observer);
  if (options.report != nullptr) observers.Add(options.report);
  runtime_options.observer =
      options.observer != nullptr || options.report != nullptr ? &observers : nullptr;
  return runtime_options;
}

void SampleTick(const SimulateOptions& options, Instant now, const World& world) {
  if (!options.on_progress && options.report == nullptr) return;
  const WorldSummary summary = world.Summary();
  if (options.report != nullptr) options.report->Sample(now, summary);
  if (options.on_progress) options.on_progress(now, summary);
}

void ReportEnd(SimulateReport& report, const runtime::Runtime& runtime, const log::EventLog& log,
               const World& world) {
  report.events_folded = runtime.events_folded();
  report.last_seq = log.LastSeq();
  report.world = world.Summary();
  report.nodeclaims = runtime.state().lifecycle.nodeclaims.size();
  report.state_hash = StateHash(runtime.state());
  report.interruptions_unmatched = world.unmatched_interruptions();
  report.by_hand_unmatched = world.unmatched_by_hand();
}

}  // namespace

SimulateReport Simulate(const Scenario& scenario, const SimulateOptions& options) {
  SimulateReport report;
  auto log = OpenLog(scenario, options, report);
  World world(scenario, options.log_dir / kWorldFile);
  report.resumed = world.Load();
  RequireWorldOfLog(report.resumed, *log, options.log_dir);
  world.Save();  // A world file from the start: a log never exists without one.
  const Instant end = scenario.start + scenario.duration;
  report.finished_before = world.started() && world.now() + scenario.tick > end;

  runtime::ObserverList observers;
  runtime::Runtime runtime(*log, world, RuntimeOptions(options, observers));
  // The world, once saved, must not be ahead of the log: a restart would find it holding
  // changes whose events the log lost. The state is then shown as the controller shows it.
  auto save_world = [&] {
    if (options.appends != runtime::Appends::kPipelinedAhead) runtime.Flush();
    world.Save();
    if (options.on_state) options.on_state(runtime.state());
  };
  auto recovery = runtime.Recover();
  if (report.resumed) {
    RequireLogUnderWorld(world, runtime.state(), scenario, options.log_dir, report.open_message);
  }
  report.recovered_snapshot = recovery.snapshot_seq;
  report.outputs_restored = recovery.outputs_restored;
  report.commands_redriven = recovery.commands_redriven;
  save_world();

  // A run that already reached the scenario's end is over: started again, it finishes what a
  // kill left unanswered (above) and adds nothing, so the log and the world stay as they were.
  if (!report.finished_before) {
    runtime.Ingest(world.StartupEvents(runtime.state()));
    save_world();
  }
  // A fresh world starts at `start`; a resumed one continues from where it stood.
  Instant next = world.started() ? world.now() + scenario.tick : world.now();
  for (; next <= end; next += scenario.tick) {
    runtime.Ingest(world.Advance(next));
    save_world();
    SampleTick(options, next, world);
  }
  runtime.Flush();
  if (options.on_end) options.on_end(world);
  ReportEnd(report, runtime, *log, world);
  return report;
}

}  // namespace tenon::sim
