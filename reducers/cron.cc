#include "reducers/cron.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <chrono>
#include <vector>

namespace tenon::core {
namespace {

constexpr std::int64_t kMinuteNs = 60 * kSecond.value;
constexpr std::int64_t kLookBackMinutesMax = 366LL * 24 * 60;  // A year of minutes.

struct Field {
  const char* name;
  int min;
  int max;
  const char* const* names;  // Optional names for min.. (e.g. "jan" = 1); null when none.
  int names_count;
};

constexpr const char* kMonthNames[] = {"jan", "feb", "mar", "apr", "may", "jun",
                                       "jul", "aug", "sep", "oct", "nov", "dec"};
constexpr const char* kDayNames[] = {"sun", "mon", "tue", "wed", "thu", "fri", "sat"};

std::vector<std::string_view> Split(std::string_view text, char by) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= text.size(); ++i) {
    if (i == text.size() || text[i] == by) {
      out.push_back(text.substr(start, i - start));
      start = i + 1;
    }
  }
  return out;
}

int Value(std::string_view text, const Field& f) {
  std::string lower(text);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (int i = 0; i < f.names_count; ++i) {
    if (lower == f.names[i]) return f.min + i;
  }
  int value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) {
    throw CronError(std::string(f.name) + ": '" + std::string(text) + "' is not a number");
  }
  return value;
}

// Sets the bits of one field; values are checked against [min, max].
template <std::size_t N>
void ParseField(std::string_view text, const Field& f, std::bitset<N>& bits, bool* any) {
  if (any != nullptr) *any = text == "*" || text == "?";
  for (std::string_view part : Split(text, ',')) {
    if (part.empty()) throw CronError(std::string(f.name) + ": empty list element");
    int step = 1;
    if (auto slash = part.find('/'); slash != std::string_view::npos) {
      step = Value(part.substr(slash + 1), Field{f.name, 1, f.max, nullptr, 0});
      if (step < 1) throw CronError(std::string(f.name) + ": step must be at least 1");
      part = part.substr(0, slash);
    }
    int lo = f.min;
    int hi = f.max;
    if (part != "*" && part != "?") {
      if (auto dash = part.find('-'); dash != std::string_view::npos) {
        lo = Value(part.substr(0, dash), f);
        hi = Value(part.substr(dash + 1), f);
      } else {
        lo = Value(part, f);
        hi = step > 1 ? f.max : lo;  // "5/15": from 5 to the end, every 15.
      }
    }
    if (lo < f.min || hi > f.max || lo > hi) {
      throw CronError(std::string(f.name) + ": '" + std::string(part) + "' is outside " +
                      std::to_string(f.min) + "-" + std::to_string(f.max));
    }
    for (int v = lo; v <= hi; v += step) bits.set(static_cast<std::size_t>(v));
  }
}

std::string_view Macro(std::string_view text) {
  if (text == "@yearly" || text == "@annually") return "0 0 1 1 *";
  if (text == "@monthly") return "0 0 1 * *";
  if (text == "@weekly") return "0 0 * * 0";
  if (text == "@daily" || text == "@midnight") return "0 0 * * *";
  if (text == "@hourly") return "0 * * * *";
  return text;
}

}  // namespace

Cron Cron::Parse(std::string_view text) {
  std::vector<std::string_view> fields;
  for (std::string_view f : Split(Macro(text), ' ')) {
    if (!f.empty()) fields.push_back(f);
  }
  if (fields.size() != 5) {
    throw CronError("schedule '" + std::string(text) +
                    "' needs 5 fields (minute hour day-of-month month day-of-week) or an @-macro");
  }
  Cron c;
  ParseField(fields[0], Field{"minute", 0, 59, nullptr, 0}, c.minutes_, nullptr);
  ParseField(fields[1], Field{"hour", 0, 23, nullptr, 0}, c.hours_, nullptr);
  ParseField(fields[2], Field{"day-of-month", 1, 31, nullptr, 0}, c.days_, &c.any_day_);
  ParseField(fields[3], Field{"month", 1, 12, kMonthNames, 12}, c.months_, nullptr);
  std::bitset<8> weekdays;  // 7 is Sunday too.
  ParseField(fields[4], Field{"day-of-week", 0, 7, kDayNames, 7}, weekdays, &c.any_weekday_);
  for (std::size_t d = 0; d < 7; ++d) c.weekdays_[d] = weekdays[d];
  if (weekdays[7]) c.weekdays_.set(0);
  return c;
}

bool Cron::Fires(Instant at) const {
  using namespace std::chrono;
  sys_time<nanoseconds> t{nanoseconds{at.value}};
  auto day = floor<days>(t);
  year_month_day ymd{day};
  hh_mm_ss hms{floor<minutes>(t - day)};
  unsigned weekday = year_month_weekday{day}.weekday().c_encoding();
  if (!minutes_[static_cast<std::size_t>(hms.minutes().count())] ||
      !hours_[static_cast<std::size_t>(hms.hours().count())] ||
      !months_[static_cast<unsigned>(ymd.month())]) {
    return false;
  }
  bool dom = days_[static_cast<unsigned>(ymd.day())];
  bool dow = weekdays_[weekday];
  // Standard cron: when both day fields are restricted, either may match.
  if (!any_day_ && !any_weekday_) return dom || dow;
  return dom && dow;
}

std::optional<Instant> Cron::LastFiring(Instant at, Duration horizon) const {
  std::int64_t minute = at.value - ((at.value % kMinuteNs) + kMinuteNs) % kMinuteNs;
  std::int64_t steps = std::min(horizon.value / kMinuteNs, kLookBackMinutesMax);
  for (std::int64_t i = 0; i <= steps; ++i) {
    Instant candidate{minute - i * kMinuteNs};
    if (Fires(candidate)) return candidate;
  }
  return std::nullopt;
}

}  // namespace tenon::core
