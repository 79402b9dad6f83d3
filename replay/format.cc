// Times, prices and time parsing shared by tenon's incident commands.
#include <cinttypes>
#include <cstdio>
#include <ctime>
#include <limits>
#include <sstream>
#include <string_view>

#include "log/codec.h"
#include "model/timestamp.h"
#include "replay/replay.h"

namespace tenon::replay {

namespace {

// Whether `text` has `shape`, digit for digit ('d' in a shape is a digit).
bool HasShape(std::string_view text, std::string_view shape) {
  if (text.size() != shape.size()) return false;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    const bool digit = text[i] >= '0' && text[i] <= '9';
    if (shape[i] == 'd' ? !digit : text[i] != shape[i]) return false;
  }
  return true;
}

}  // namespace

std::optional<Instant> ParseTime(const std::string& text, Instant reference) {
  // Each shape the flags take, made a full RFC 3339 time; a time of day is on the day of
  // `reference`.
  const std::string day = Rfc3339Text(reference).substr(0, 11);  // "2026-01-01T"
  std::string full;
  if (HasShape(text, "dddd-dd-ddTdd:dd:ddZ")) {
    full = text;
  } else if (HasShape(text, "dddd-dd-ddTdd:dd:dd")) {
    full = text + "Z";
  } else if (HasShape(text, "dd:dd:dd")) {
    full = day + text + "Z";
  } else if (HasShape(text, "dd:dd")) {
    full = day + text + ":00Z";
  } else {
    return std::nullopt;
  }
  const std::optional<Instant> at = ParseRfc3339(full);
  // A leap second (":60") is RFC 3339's, not a time a flag names.
  if (!at || full[17] == '6') return std::nullopt;
  return at;
}

Instant FirstEventTime(const log::EventLog& log) {
  // Decisions carry their time; the first one is as good a day as the first Tick.
  Instant at;
  log.ScanDecisions(1, [&](const log::DecisionRecord& record) {
    at = log::DecodeDecision(record.payload).at;
    return false;
  });
  return at;
}

PodMoves SplitMoves(const std::string& outcome) {
  constexpr std::string_view kMarker = "; its pods move: ";
  PodMoves out;
  const auto at = outcome.find(kMarker);
  out.text = outcome.substr(0, at);
  if (at == std::string::npos) return out;
  std::string_view rest = std::string_view(outcome).substr(at + kMarker.size());
  while (!rest.empty()) {
    const auto comma = rest.find(", ");
    const std::string_view move = rest.substr(0, comma);
    const auto arrow = move.find(" -> ");
    if (arrow != std::string_view::npos) {
      out.moves.emplace_back(std::string(move.substr(0, arrow)),
                             std::string(move.substr(arrow + 4)));
    }
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 2);
  }
  return out;
}

}  // namespace tenon::replay
