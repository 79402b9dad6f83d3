// One run of the bundled demo scenario (examples/scenarios/demo.yaml) through the simulator and
// the runtime, with Metrics and a DecisionLogger (writing JSON lines) observing it; shared by
// the tests of both, and kept with its log for them to compare against.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <sstream>
#include <string>

#include "adapters/metrics/logging.h"
#include "adapters/metrics/metrics.h"
#include "adapters/sim/simulator.h"
#include "log/codec.h"
#include "replay/replay.h"
#include "tests/support/temp_dir.h"

namespace tenon::testing {

struct DemoRun {
  TempDir dir;
  metrics::Metrics metrics;
  metrics::DecisionLogger decision_logger;
  std::ostringstream log_lines;  // JSON, one object per line.
  std::unique_ptr<log::EventLog> log;
  State final_state;
  std::uint64_t state_rounds = 0;  // How often ObserveState ran.
};

inline const DemoRun& Demo() {
  static DemoRun* run = [] {
    auto* r = new DemoRun();
    metrics::ConfigureLogging("info", true, &r->log_lines);
    auto scenario =
        sim::LoadScenario(std::filesystem::path(TENON_SOURCE_DIR) / "examples/scenarios/demo.yaml");
    runtime::ObserverList observers;
    observers.Add(&r->metrics);
    observers.Add(&r->decision_logger);
    sim::SimulateOptions options;
    options.log_dir = r->dir.path() / "log";
    options.snapshot_every_events = 500;
    options.observer = &observers;
    options.on_state = [r](const State& state) {
      r->metrics.ObserveState(state);
      ++r->state_rounds;
    };
    sim::Simulate(scenario, options);
    metrics::ConfigureLogging("info", false);  // Stop writing into the run's stream.
    log::OpenOptions open;
    open.read_only = true;
    open.create_if_missing = false;
    r->log = log::EventLog::Open(options.log_dir, open);
    r->final_state = replay::FoldTo(*r->log, Seq{0}, true);
    return r;
  }();
  return *run;
}

}  // namespace tenon::testing
