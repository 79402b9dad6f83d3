// Replay: fold a log through the core again and compare with what was recorded.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "log/event_log.h"
#include "reducers/core.h"

namespace tenon::replay {

enum class Verdict {
  kIdentical,   // Every output, decision and snapshot hash matched.
  kDiverged,    // The core produced something other than what was recorded.
  kIncomplete,  // The log ends with events whose outputs were never written (a crash, not yet
                // recovered by restarting the writer on this log).
  kCorrupt,     // A record failed its checksum or does not decode.
};

struct VerifyReport {
  Verdict verdict = Verdict::kIdentical;
  log::Seq first_bad_seq = 0;  // The first diverging, incomplete or corrupt sequence number.
  std::string detail;          // What differed, in a sentence.
  std::uint64_t events = 0;
  std::uint64_t outputs = 0;
  std::uint64_t decisions = 0;
  std::uint64_t snapshots_checked = 0;
  log::Seq last_seq = 0;
  std::uint64_t final_hash = 0;
  std::uint64_t final_hash_from_snapshot = 0;
  log::Seq newest_snapshot = 0;
  log::Seq first_seq = 1;  // Where the log begins (above 1: truncated by retention).
};

const char* VerdictName(Verdict verdict);

// Folds from zero comparing every recorded output and decision and every snapshot's hash, then
// folds from the newest snapshot and checks both folds end in the same state.
// `progress` (optional) is called with the current sequence number now and then.
VerifyReport Verify(const log::EventLog& log,
                    const std::function<void(log::Seq, log::Seq)>& progress = {});

// The state after folding every event with seq <= `to` (0: all), starting at the newest
// snapshot at or below `to` when `use_snapshot` is set.
State FoldTo(const log::EventLog& log, log::Seq to, bool use_snapshot);

}  // namespace tenon::replay
