// `tenon log files`: what each file of a log folder is, for an operator looking at a damaged
// or unfamiliar folder, and for the tests that damage one kind of file at a time.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace tenon::log {

struct LogFile {
  std::string name;
  // "table" (an SST file the MANIFEST lists), "unlisted table", "write-ahead log", "MANIFEST",
  // "CURRENT", "OPTIONS", "LOCK", "IDENTITY", "snapshot being written" or "other".
  std::string kind;
  std::string family;  // A listed table's column family; "" otherwise.
  std::uint64_t bytes = 0;
};

// The folder's files in name order. Opens the log read-only to learn which tables its MANIFEST
// lists; throws LogError when there is no log at `dir` or it cannot be opened.
std::vector<LogFile> ListLogFiles(const std::filesystem::path& dir);

}  // namespace tenon::log
