// RFC 3339 times: the one reader and writer of them in tenon (Kubernetes objects, AWS answers,
// scenarios and the command line's time flags all use them).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "model/model.h"

namespace tenon {

// "2026-01-01T00:00:00Z", "2026-01-01T02:00:00.5+02:00" (a 't' or 'z' in lower case too) ->
// nanoseconds since the epoch; nullopt for anything else: another shape, a day or time that
// does not exist (2026-02-30, 25:00), or a time outside what 64-bit nanoseconds reach (1677 to
// 2262). Digits of a fraction past nanoseconds count for nothing.
std::optional<Instant> ParseRfc3339(std::string_view text);

// "2026-01-01T02:14:09Z" in UTC, as Kubernetes writes a metav1.Time; with `fraction_digits`
// (at most 9) digits of the second after a '.': 6 for a MicroTime, 3 for a log line. Digits
// beyond those are cut off, not rounded.
std::string Rfc3339Text(Instant at, int fraction_digits = 0);

}  // namespace tenon
