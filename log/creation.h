// A writer killed while RocksDB was creating a log leaves files and no record: nothing is
// appended before the open returns. The next open goes on from such a folder instead of taking
// it for a stranger's; everything else that is not a log stays refused and untouched.
#pragma once

#include <filesystem>

#include "log/event_log.h"

namespace tenon::log {

// Throws LogError (kInvalid) when `dir` holds files and no log (no CURRENT). A creation cut
// short before CURRENT was written is cleared instead, for a writer, and `out.message` says so.
void RefuseOtherFiles(const std::filesystem::path& dir, bool read_only, OpenReport& out);

// Whether a log folder never held a record: no table file and no write-ahead log with anything
// in it. A MANIFEST that lacks some of tenon's families in such a folder is a first open cut
// short between RocksDB's creation and the families'; in a log that held records it is damage.
bool NothingWritten(const std::filesystem::path& dir);

}  // namespace tenon::log
