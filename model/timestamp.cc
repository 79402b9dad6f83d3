#include "model/timestamp.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <limits>
#include <string>

namespace tenon {
namespace {

constexpr std::size_t kTimestampCharsMax = 64;

// The `len` digits at `pos` as a number; -1 when one of them is not a digit (from_chars would
// take a sign).
int Digits(std::string_view text, std::size_t pos, std::size_t len) {
  int value = 0;
  for (std::size_t k = pos; k < pos + len; ++k) {
    if (text[k] < '0' || text[k] > '9') return -1;
    value = value * 10 + (text[k] - '0');
  }
  return value;
}

}  // namespace

std::optional<Instant> ParseRfc3339(std::string_view text) {
  // YYYY-MM-DDTHH:MM:SS, an optional fraction of a second, then Z or an offset +HH:MM / -HH:MM.
  if (text.size() < 20 || text.size() > kTimestampCharsMax) return std::nullopt;
  if (text[4] != '-' || text[7] != '-' || (text[10] != 'T' && text[10] != 't') || text[13] != ':' ||
      text[16] != ':') {
    return std::nullopt;
  }
  const int y = Digits(text, 0, 4), mo = Digits(text, 5, 2), d = Digits(text, 8, 2);
  const int h = Digits(text, 11, 2), mi = Digits(text, 14, 2), sec = Digits(text, 17, 2);
  if (y < 0 || mo < 0 || d < 0 || h < 0 || mi < 0 || sec < 0) return std::nullopt;
  using namespace std::chrono;
  const year_month_day date{year{y}, month{static_cast<unsigned>(mo)},
                            day{static_cast<unsigned>(d)}};
  if (!date.ok() || h > 23 || mi > 59 || sec > 60) return std::nullopt;
  std::int64_t frac_nanos = 0;
  std::size_t i = 19;
  if (i < text.size() && text[i] == '.') {
    ++i;
    const std::size_t start = i;
    std::int64_t scale = 100'000'000;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
      frac_nanos += (text[i] - '0') * scale;  // Digits past nanoseconds scale to zero.
      scale /= 10;
      ++i;
    }
    if (i == start) return std::nullopt;
  }
  std::int64_t offset_seconds = 0;
  if (i < text.size() && (text[i] == 'Z' || text[i] == 'z')) {
    ++i;
  } else if (i + 6 == text.size() && (text[i] == '+' || text[i] == '-') && text[i + 3] == ':') {
    const int oh = Digits(text, i + 1, 2), om = Digits(text, i + 4, 2);
    if (oh < 0 || om < 0 || oh > 23 || om > 59) return std::nullopt;
    offset_seconds = (text[i] == '+' ? 1 : -1) * (oh * 3600 + om * 60);
    i += 6;
  } else {
    return std::nullopt;
  }
  if (i != text.size()) return std::nullopt;
  const auto local = sys_days{date} + hours{h} + minutes{mi} + seconds{sec};
  const auto utc = local - seconds{offset_seconds};
  // Nanoseconds since the epoch in 64 bits reach from 1677 to 2262 (less a second for the
  // fraction).
  constexpr std::int64_t kSecondsMax = std::numeric_limits<std::int64_t>::max() / 1'000'000'000 - 1;
  const std::int64_t since_epoch = utc.time_since_epoch().count();
  if (since_epoch > kSecondsMax || since_epoch < -kSecondsMax) return std::nullopt;
  return Instant{since_epoch * 1'000'000'000 + frac_nanos};
}

std::string Rfc3339Text(Instant at, int fraction_digits) {
  using namespace std::chrono;
  const sys_time<nanoseconds> exact{nanoseconds(at.value)};
  const sys_seconds t = floor<seconds>(exact);
  const sys_days day = floor<days>(t);
  const year_month_day date(day);
  const hh_mm_ss time(t - day);
  std::string text = "0000-00-00T00:00:00Z";
  const auto put = [&](std::size_t pos, std::size_t len, long long value) {
    for (std::size_t k = pos + len; k-- > pos; value /= 10)
      text[k] = static_cast<char>('0' + value % 10);
  };
  put(0, 4, static_cast<int>(date.year()));
  put(5, 2, static_cast<unsigned>(date.month()));
  put(8, 2, static_cast<unsigned>(date.day()));
  put(11, 2, time.hours().count());
  put(14, 2, time.minutes().count());
  put(17, 2, time.seconds().count());
  const auto digits = static_cast<std::size_t>(std::clamp(fraction_digits, 0, 9));
  if (digits > 0) {
    std::string fraction(9, '0');
    long long nanos = (exact - t).count();
    for (std::size_t k = 9; k-- > 0; nanos /= 10) fraction[k] = static_cast<char>('0' + nanos % 10);
    text.insert(19, "." + fraction.substr(0, digits));
  }
  return text;
}

}  // namespace tenon
