// `tenon simulate`: the real runtime and core against the simulated world, on a virtual clock,
// writing the same log as production. Re-running on an existing log resumes where it stopped.
#pragma once

#include <filesystem>
#include <functional>
#include <string>

#include "adapters/runtime/runtime.h"
#include "adapters/sim/report.h"
#include "adapters/sim/scenario.h"
#include "adapters/sim/world.h"
#include "log/event_log.h"

namespace tenon::sim {

// The simulated world's file in a --log folder (a Cap'n Proto message of adapters/sim/world.capnp),
// and the JSON one older versions wrote there, which this version does not resume.
inline constexpr const char* kWorldFile = "sim-world.bin";
inline constexpr const char* kJsonWorldFile = "sim-world.json";

struct SimulateOptions {
  std::filesystem::path log_dir;
  std::uint64_t snapshot_every_events = 500;
  // And at most one snapshot per this much virtual time: a day of a 1,000-node cluster folds ~1.6
  // million events, which every 500 events alone would snapshot over 3,000 times. 15 minutes,
  // where `tenon run` takes 5 (a crashed controller refolds at most that much before it acts
  // again): a simulation's snapshots serve replay's stretches side by side, the time-travel
  // queries (each folds at most 15 virtual minutes from the one before its time, ~0.5 s at
  // 1,000 nodes) and resuming with --log, and each costs the run its encoding and write (a day
  // at 1,000 nodes: 96 snapshots instead of 288, the writer thread's snapshot time 18 -> 6 s,
  // the log on disk 1.1 -> 0.8 GB). A scenario shorter than that still gets one after its first
  // 500 events.
  Duration snapshot_min_interval{15 * kMinute.value};
  bool sync = false;
  // Pipelined appends keep the world no further ahead of the log than synchronous ones would (the
  // world is saved, and a command run, only once the log holds what led to it); a run whose log
  // and world are removed at exit may let the commands run ahead (kPipelinedAhead).
  runtime::Appends appends = runtime::Appends::kPipelined;
  // Called for every record the log acknowledges (tests use it to check nothing acked is lost).
  std::function<void(Seq, const std::string&)> on_ack;
  // Called once per virtual tick with the world's summary (progress display).
  std::function<void(Instant, const WorldSummary&)> on_progress;
  // Sees the runtime's appends, folds, outputs and commands (metrics, decision logs). Not owned.
  runtime::Observer* observer = nullptr;
  // Called with the core's state after recovery and after every ingest round, as the controller
  // does for its gauges.
  std::function<void(const State&)> on_state;
  // Builds the closing report (observes the folds, samples the world every tick). Not owned.
  ReportBuilder* report = nullptr;
  // Called once at the end with the world as the run left it (conformance checks read it).
  std::function<void(const World&)> on_end;
};

struct SimulateReport {
  bool resumed = false;
  bool finished_before = false;  // The log's run had already reached the scenario's end.
  std::string open_message;      // What the log said at open (e.g. a torn tail truncated).
  Seq recovered_snapshot{0};
  std::uint64_t outputs_restored = 0;
  std::uint64_t commands_redriven = 0;
  std::uint64_t events_folded = 0;
  Seq last_seq{0};
  WorldSummary world;
  std::size_t nodeclaims = 0;
  std::uint64_t state_hash = 0;
  std::size_t interruptions_unmatched = 0;  // Recorded interruptions with no instance to reach.
  std::size_t by_hand_unmatched = 0;  // Recorded deletions and terminations by hand, likewise.
};

SimulateReport Simulate(const Scenario& scenario, const SimulateOptions& options);

}  // namespace tenon::sim
