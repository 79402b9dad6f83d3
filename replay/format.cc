// Times, prices and time parsing shared by tenon's incident commands.
#include <cinttypes>
#include <cstdio>
#include <ctime>
#include <limits>
#include <sstream>
#include <string_view>

#include <date/date.h>

#include "log/codec.h"
#include "replay/replay.h"

namespace tenon::replay {

std::string TimestampText(Nanos at) {
  std::time_t s = static_cast<std::time_t>(at.value / kSecond.value);
  std::tm tm{};
  gmtime_r(&s, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

namespace {

// `text` read whole with a date::parse `format`, which checks the calendar (no 2026-02-30) and
// the clock (no 25:00 or 02:61).
bool ParseWhole(const std::string& text, const char* format, date::sys_seconds& at) {
  std::istringstream in(text);
  in >> date::parse(format, at);
  return !in.fail() && in.peek() == std::char_traits<char>::eof();
}

// Whether `text` has one of the accepted shapes, digit for digit ('d' in a shape is a digit).
// date::parse alone reads looser text, and some of it ("0:0:", letters in the seconds) into a
// NaN it then converts to an integer, which is undefined.
bool HasTimeShape(const std::string& text) {
  for (const std::string_view shape :
       {"dddd-dd-ddTdd:dd:ddZ", "dddd-dd-ddTdd:dd:dd", "dd:dd:dd", "dd:dd"}) {
    if (text.size() != shape.size()) continue;
    bool fits = true;
    for (std::size_t i = 0; i < shape.size() && fits; ++i) {
      const bool digit = text[i] >= '0' && text[i] <= '9';
      fits = shape[i] == 'd' ? digit : text[i] == shape[i];
    }
    if (fits) return true;
  }
  return false;
}

}  // namespace

std::optional<Nanos> ParseTime(const std::string& text, Nanos reference) {
  if (!HasTimeShape(text)) return std::nullopt;
  date::sys_seconds at;
  bool ok = ParseWhole(text, "%Y-%m-%dT%H:%M:%SZ", at) || ParseWhole(text, "%Y-%m-%dT%H:%M:%S", at);
  if (!ok && text.find('T') == std::string::npos) {
    // A time of day: on the day of `reference`.
    const std::string day = TimestampText(reference).substr(0, 11);  // "2026-01-01T"
    ok = ParseWhole(day + text, "%Y-%m-%dT%H:%M:%S", at) ||
         ParseWhole(day + text, "%Y-%m-%dT%H:%M", at);
  }
  // Nanoseconds since the epoch in 64 bits reach from 1677 to 2262.
  constexpr std::int64_t kSecondsMax = std::numeric_limits<std::int64_t>::max() / kSecond.value;
  const std::int64_t seconds = at.time_since_epoch().count();
  if (!ok || seconds > kSecondsMax || seconds < -kSecondsMax) return std::nullopt;
  return Nanos{seconds * kSecond.value};
}

Nanos FirstEventTime(const log::EventLog& log) {
  // Decisions carry their time; the first one is as good a day as the first Tick.
  Nanos at{0};
  log.ScanDecisions(1, [&](const log::DecisionRecord& record) {
    at = log::DecodeDecision(record.payload).at;
    return false;
  });
  return at;
}

}  // namespace tenon::replay
