// Cron schedules for disruption budgets: fields, lists, ranges, steps, names, macros, the
// day-of-month / day-of-week OR rule, and finding the last firing.
#include "reducers/cron.h"

#include <gtest/gtest.h>

#include <chrono>

namespace tenon::core {
namespace {

// 2026-01-05 is a Monday.
Instant At(int day, int hour, int minute) {
  using namespace std::chrono;
  auto t = sys_days{year{2026} / January / day} + hours{hour} + minutes{minute};
  return Instant{duration_cast<nanoseconds>(t.time_since_epoch()).count()};
}

TEST(Cron, BusinessHoursOnWeekdays) {
  Cron c = Cron::Parse("0 9 * * mon-fri");
  EXPECT_TRUE(c.Fires(At(5, 9, 0)));            // Monday 09:00
  EXPECT_TRUE(c.Fires(At(9, 9, 0) + kSecond));  // Friday 09:00:01 is the same minute
  EXPECT_FALSE(c.Fires(At(10, 9, 0)));          // Saturday
  EXPECT_FALSE(c.Fires(At(5, 9, 1)));
  EXPECT_FALSE(c.Fires(At(5, 10, 0)));
}

TEST(Cron, ListsRangesStepsAndNames) {
  Cron c = Cron::Parse("*/15 8-10,20 * JAN,mar *");
  EXPECT_TRUE(c.Fires(At(5, 8, 45)));
  EXPECT_TRUE(c.Fires(At(5, 20, 0)));
  EXPECT_FALSE(c.Fires(At(5, 11, 0)));
  EXPECT_FALSE(c.Fires(At(5, 8, 10)));
  Cron sunday = Cron::Parse("30 2 * * 7");
  EXPECT_TRUE(sunday.Fires(At(4, 2, 30)));  // 7 is Sunday too.
  Cron from = Cron::Parse("5/20 * * * *");
  EXPECT_TRUE(from.Fires(At(5, 3, 45)));
  EXPECT_FALSE(from.Fires(At(5, 3, 0)));
}

TEST(Cron, Macros) {
  EXPECT_TRUE(Cron::Parse("@daily").Fires(At(7, 0, 0)));
  EXPECT_FALSE(Cron::Parse("@daily").Fires(At(7, 1, 0)));
  EXPECT_TRUE(Cron::Parse("@hourly").Fires(At(7, 13, 0)));
  EXPECT_TRUE(Cron::Parse("@weekly").Fires(At(4, 0, 0)));  // Sunday midnight.
  EXPECT_TRUE(Cron::Parse("@monthly").Fires(At(1, 0, 0)));
  EXPECT_TRUE(Cron::Parse("@yearly").Fires(At(1, 0, 0)));
  EXPECT_FALSE(Cron::Parse("@yearly").Fires(At(2, 0, 0)));
}

// When both day fields are restricted, either one matching is enough (standard cron).
TEST(Cron, DayOfMonthOrDayOfWeek) {
  Cron c = Cron::Parse("0 0 1 * mon");
  EXPECT_TRUE(c.Fires(At(1, 0, 0)));   // The 1st (a Thursday).
  EXPECT_TRUE(c.Fires(At(12, 0, 0)));  // A Monday.
  EXPECT_FALSE(c.Fires(At(13, 0, 0)));
}

TEST(Cron, LastFiringWithinHorizon) {
  Cron c = Cron::Parse("0 9 * * mon-fri");
  Instant noon = At(5, 12, 0);
  EXPECT_EQ(c.LastFiring(noon, Duration{8 * 60 * kMinute.value}), At(5, 9, 0));
  EXPECT_EQ(c.LastFiring(noon, Duration{2 * 60 * kMinute.value}), std::nullopt);
  EXPECT_EQ(c.LastFiring(At(10, 12, 0), Duration{24 * 60 * kMinute.value}), std::nullopt);  // Sat.
}

TEST(Cron, RejectsBadSchedulesByField) {
  auto message = [](const char* text) {
    try {
      Cron::Parse(text);
    } catch (const CronError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(message("0 9 * *").find("5 fields"), std::string::npos);
  EXPECT_NE(message("60 * * * *").find("minute"), std::string::npos);
  EXPECT_NE(message("0 25 * * *").find("hour"), std::string::npos);
  EXPECT_NE(message("0 0 0 * *").find("day-of-month"), std::string::npos);
  EXPECT_NE(message("0 0 * foo *").find("month"), std::string::npos);
  EXPECT_NE(message("0 0 * * */0").find("day-of-week"), std::string::npos);
  EXPECT_NE(message("0 0 * * 5-1").find("day-of-week"), std::string::npos);
}

}  // namespace
}  // namespace tenon::core
