// Cron schedules for disruption budgets: the five standard fields (minute hour day-of-month
// month day-of-week, with lists, ranges, steps and English month/day names) and the @-macros,
// in UTC. Pure: times in and out are nanoseconds since the epoch.
//
// Debian packages no C++ cron library, and a budget only needs "was there a hit in the last
// `duration`?", so this is a small matcher, not a scheduler.
#pragma once

#include <bitset>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "model/model.h"

namespace tenon::core {

class CronError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

class Cron {
 public:
  // Throws CronError naming the bad field.
  static Cron Parse(std::string_view text);

  // Whether the schedule fires at the minute containing `at`.
  bool Fires(Instant at) const;
  // The latest firing minute at or before `at`, looking back no further than `horizon`.
  std::optional<Instant> LastFiring(Instant at, Duration horizon) const;

 private:
  std::bitset<60> minutes_;
  std::bitset<24> hours_;
  std::bitset<32> days_;     // 1..31
  std::bitset<13> months_;   // 1..12
  std::bitset<7> weekdays_;  // 0 = Sunday
  bool any_day_ = true;      // Day-of-month was "*".
  bool any_weekday_ = true;  // Day-of-week was "*".
};

}  // namespace tenon::core
