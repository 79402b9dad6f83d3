// `tenon log repair`: the one way on from a log whose write-ahead log is damaged before its
// end, or whose MANIFEST lost files, which every other open refuses (log/event_log.h). The log as
// it was is set aside, never deleted; the log goes on from its last good record; the repair is
// recorded in the log's meta and written, with what was lost, beside what was set aside.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>

#include "log/event_log.h"

namespace tenon::log {

struct RepairReport {
  bool repaired = false;          // False: the log opened strictly, nothing was touched.
  bool manifest_rebuilt = false;  // The MANIFEST had dropped tables; their records are back.
  std::string damage;             // RocksDB's account: the file and the bytes it dropped.
  std::filesystem::path aside;    // The log folder as it was (SST files hard-linked).
  std::filesystem::path report;   // aside / "REPAIR.txt"
  Seq last_seq{0};                // The log goes on after this record.
};

// The first decision id the kept records did not make (the fold's next id after `last`).
using FirstLostDecision = std::function<std::uint64_t(const EventLog& log, Seq last)>;

// Snapshots past the last kept record, and decisions (with their index entries) from the first
// lost id on, go with the records that made them. Throws LogError when `dir` holds no log, or
// another process holds it (its LOCK).
RepairReport RepairLog(const std::filesystem::path& dir, const FirstLostDecision& first_lost);

}  // namespace tenon::log
