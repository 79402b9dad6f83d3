// Logs for `tenon run`: spdlog configured from LOG_LEVEL, optionally one JSON object per line
// ({"level","time","logger","message","seq"}; level is debug, info, warn, error, or fatal for
// spdlog's critical: an error that ends the process), and a DecisionLogger that writes one line per
// decision and per command the core produces, each carrying the sequence number that caused it.
#pragma once

#include <spdlog/common.h>

#include <ostream>
#include <string>

#include "adapters/runtime/runtime.h"

namespace tenon::metrics {

// Karpenter's LOG_LEVEL names: debug, info, warn, error. Throws std::invalid_argument otherwise.
spdlog::level::level_enum ParseLogLevel(const std::string& level);

// Makes the default spdlog logger write at `level` to `out` (stderr when null): one JSON object
// per line when `json`, spdlog's default text pattern otherwise. Throws std::invalid_argument on
// an unknown level. `out` must outlive the logger (until the next call).
void ConfigureLogging(const std::string& level, bool json, std::ostream* out = nullptr);

// The sequence number of the event being handled on this thread, added to JSON lines as "seq"
// (0: none). A SeqScope sets it for its lifetime and restores the previous value after.
std::uint64_t CurrentSeq();
class SeqScope {
 public:
  explicit SeqScope(std::uint64_t seq);
  ~SeqScope();
  SeqScope(const SeqScope&) = delete;
  SeqScope& operator=(const SeqScope&) = delete;

 private:
  std::uint64_t previous_;
};

// One info line per decision ("decision <kind> ...: <reason>") and per command ("command <kind>
// #id"), each inside a SeqScope of the event that caused it. Logs through spdlog's default
// logger as it is when each line is written.
class DecisionLogger : public runtime::Observer {
 public:
  void OnOutput(Seq cause, const Output& output) override;
};

// The one-line text DecisionLogger writes for a decision (also used by tests).
std::string DescribeDecision(const Decision& decision);

}  // namespace tenon::metrics
