#include "adapters/kube/objects.h"

#include "model/timestamp.h"

#include <limits>

namespace tenon::kube {
namespace {

constexpr std::size_t kQuantityCharsMax = 64;

struct Decimal {
  std::int64_t whole = 0;
  std::int64_t fraction = 0;        // Digits after the point, as an integer...
  std::int64_t fraction_scale = 1;  // ...over this power of ten.
  std::string_view suffix;
};

Decimal SplitDecimal(std::string_view text, std::string_view what) {
  if (text.empty() || text.size() > kQuantityCharsMax) {
    throw ObjectError("invalid " + std::string(what) + " quantity '" + std::string(text) + "'");
  }
  Decimal d;
  std::size_t i = 0;
  auto digits = [&](std::int64_t& value, std::int64_t* scale) {
    std::size_t start = i;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
      if (value > std::numeric_limits<std::int64_t>::max() / 100) {
        throw ObjectError(std::string(what) + " quantity '" + std::string(text) + "' too large");
      }
      value = value * 10 + (text[i] - '0');
      if (scale) {
        // Past 18 places the scale would overflow; no unit is that fine.
        if (*scale > std::numeric_limits<std::int64_t>::max() / 10) {
          throw ObjectError(std::string(what) + " quantity '" + std::string(text) +
                            "' has too many decimal places");
        }
        *scale *= 10;
      }
      ++i;
    }
    return i > start;
  };
  bool any = digits(d.whole, nullptr);
  if (i < text.size() && text[i] == '.') {
    ++i;
    any = digits(d.fraction, &d.fraction_scale) || any;
  }
  if (!any) {
    throw ObjectError("invalid " + std::string(what) + " quantity '" + std::string(text) + "'");
  }
  d.suffix = text.substr(i);
  return d;
}

std::int64_t Scale(const Decimal& d, std::int64_t multiplier, std::int64_t divisor) {
  // value = (whole + fraction/fraction_scale) * multiplier / divisor, rounded up as Kubernetes
  // rounds quantities up to the unit.
  // whole * fraction_scale stays below 2^117 (whole < 2^57, fraction_scale <= 10^18); the
  // multiplier (up to hours in nanoseconds) could carry it past what 128 bits hold.
  const __int128 base = static_cast<__int128>(d.whole) * d.fraction_scale + d.fraction;
  if (multiplier > 0 && base > std::numeric_limits<__int128>::max() / 2 / multiplier) {
    throw ObjectError("quantity too large");
  }
  __int128 numerator = base * multiplier;
  __int128 denominator = static_cast<__int128>(d.fraction_scale) * divisor;
  __int128 value = (numerator + denominator - 1) / denominator;
  if (value > std::numeric_limits<std::int64_t>::max()) throw ObjectError("quantity too large");
  return static_cast<std::int64_t>(value);
}

}  // namespace

std::int64_t ParseScaledDecimal(std::string_view text, std::int64_t multiplier,
                                std::string_view what) {
  const Decimal d = SplitDecimal(text, what);
  if (!d.suffix.empty()) {
    throw ObjectError("invalid " + std::string(what) + " '" + std::string(text) + "'");
  }
  return Scale(d, multiplier, 1);
}

Millicores ParseCpu(std::string_view quantity) {
  Decimal d = SplitDecimal(quantity, "cpu");
  if (d.suffix.empty()) return Millicores{Scale(d, 1000, 1)};
  if (d.suffix == "m") return Millicores{Scale(d, 1, 1)};
  throw ObjectError("invalid cpu quantity '" + std::string(quantity) + "'");
}

Bytes ParseMemory(std::string_view quantity) {
  Decimal d = SplitDecimal(quantity, "memory");
  struct Unit {
    std::string_view suffix;
    std::int64_t multiplier;
    std::int64_t divisor;
  };
  constexpr std::int64_t kKi = 1024;
  constexpr Unit kUnits[] = {
      {"", 1, 1},
      {"m", 1, 1000},
      {"k", 1000, 1},
      {"M", 1000 * 1000, 1},
      {"G", 1000LL * 1000 * 1000, 1},
      {"T", 1000LL * 1000 * 1000 * 1000, 1},
      {"Ki", kKi, 1},
      {"Mi", kKi * kKi, 1},
      {"Gi", kKi * kKi * kKi, 1},
      {"Ti", kKi * kKi * kKi * kKi, 1},
      {"Pi", kKi * kKi * kKi * kKi * kKi, 1},
  };
  for (const auto& unit : kUnits) {
    if (d.suffix == unit.suffix) return Bytes{Scale(d, unit.multiplier, unit.divisor)};
  }
  throw ObjectError("invalid memory quantity '" + std::string(quantity) + "'");
}

Instant ParseTimestamp(std::string_view text) {
  if (auto at = ParseRfc3339(text)) return *at;
  throw ObjectError("invalid RFC 3339 timestamp '" + std::string(text) + "'");
}

std::optional<Duration> ParseDurationOrNever(std::string_view text) {
  if (text == "Never") return std::nullopt;
  return ParseDuration(text);
}

Duration ParseDuration(std::string_view text) {
  if (text.empty() || text.size() > kQuantityCharsMax) {
    throw ObjectError("invalid duration '" + std::string(text) + "'");
  }
  struct Unit {
    std::string_view suffix;
    std::int64_t nanos;
  };
  constexpr Unit kUnits[] = {{"ns", 1},           {"us", 1000},         {"ms", 1000 * 1000},
                             {"s", 1000000000LL}, {"m", 60000000000LL}, {"h", 3600000000000LL}};
  std::int64_t total = 0;
  std::size_t i = 0;
  while (i < text.size()) {
    std::size_t start = i;
    while (i < text.size() && ((text[i] >= '0' && text[i] <= '9') || text[i] == '.')) ++i;
    std::size_t unit_start = i;
    while (i < text.size() && !((text[i] >= '0' && text[i] <= '9') || text[i] == '.')) ++i;
    auto number = text.substr(start, unit_start - start);
    auto suffix = text.substr(unit_start, i - unit_start);
    const Unit* unit = nullptr;
    for (const auto& u : kUnits) {
      if (u.suffix == suffix) unit = &u;
    }
    if (number.empty() || unit == nullptr) {
      throw ObjectError("invalid duration '" + std::string(text) + "'");
    }
    Decimal d = SplitDecimal(number, "duration");
    if (__builtin_add_overflow(total, Scale(d, unit->nanos, 1), &total)) {
      throw ObjectError("duration '" + std::string(text) + "' too large");
    }
  }
  return Duration{total};
}

}  // namespace tenon::kube
