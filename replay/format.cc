// Times, prices and time parsing shared by tenon's incident commands.
#include <cinttypes>
#include <cstdio>
#include <ctime>
#include <regex>

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

std::optional<Nanos> ParseTime(const std::string& text, Nanos reference) {
  static const std::regex kFull(R"((\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})Z?)");
  static const std::regex kClock(R"((\d{1,2}):(\d{2})(?::(\d{2}))?)");
  std::smatch m;
  auto num = [&](int i) { return m[i].matched ? std::stoi(m[i].str()) : 0; };
  std::int64_t seconds = 0;
  if (std::regex_match(text, m, kFull)) {
    std::tm tm{};
    tm.tm_year = num(1) - 1900;
    tm.tm_mon = num(2) - 1;
    tm.tm_mday = num(3);
    tm.tm_hour = num(4);
    tm.tm_min = num(5);
    tm.tm_sec = num(6);
    seconds = static_cast<std::int64_t>(timegm(&tm));
  } else if (std::regex_match(text, m, kClock)) {
    const std::int64_t day = reference.value / kSecond.value / 86400 * 86400;
    seconds = day + num(1) * 3600 + num(2) * 60 + num(3);
  } else {
    return std::nullopt;
  }
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
