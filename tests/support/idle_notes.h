// The idle notes (State::idle) are shortcuts and must never make a difference. A log folded
// from zero again, once as the controller folds it and once with every note dropped before each
// event (each walk done in full), must give the same outputs at every event and the same state.
// The second fold also checks consolidation's trials (SelfChecks::simulation): each one placed
// with the base run's hints is placed again without them.
#pragma once

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <variant>

#include "log/codec.h"
#include "log/event_log.h"
#include "reducers/core.h"

namespace tenon::testing {

// Empty when the two folds agree; what differed first otherwise. `skips` counts the ticks that
// skipped the walk over the NodeClaims on a note, so that a run that never used one is seen.
inline std::string CompareWithoutIdleNotes(const log::EventLog& log, std::uint64_t& skips) {
  State noted;
  State walked;
  walked.checks.simulation = true;
  std::string differed;
  log.Scan(Seq{1}, Seq{0}, [&](const log::Record& record) {
    auto entry = log::DecodeEntry(record.payload);
    const auto* event = std::get_if<Event>(&entry);
    if (event == nullptr) return true;
    const Seq seq{record.seq};
    if (const auto* tick = std::get_if<Tick>(event)) {
      const Instant now = std::max(noted.now, tick->now);
      if (noted.idle.lifecycle.Holds(noted.idle.changes, now)) ++skips;
    }
    const Output with = Step(noted, seq, *event);
    walked.idle = IdleNotes{};
    Output without;
    try {
      without = Step(walked, seq, *event);
    } catch (const std::logic_error& e) {
      differed = "at seq " + std::to_string(seq.value) + ": " + e.what();
      return false;
    }
    if (!(with.commands == without.commands) || !(with.decisions == without.decisions)) {
      differed = "with the idle notes dropped, the outputs of seq " + std::to_string(seq.value) +
                 " differ (" + std::to_string(with.size()) + " outputs with them, " +
                 std::to_string(without.size()) + " without)";
      return false;
    }
    return true;
  });
  if (differed.empty() && StateHash(noted) != StateHash(walked)) {
    differed = "with the idle notes dropped, the log folds to another state";
  }
  return differed;
}

}  // namespace tenon::testing
