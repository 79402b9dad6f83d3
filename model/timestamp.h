// RFC 3339 times read into the core's nanoseconds: the one reader of them in tenon (Kubernetes
// objects, AWS answers and the command line's time flags all use it).
#pragma once

#include <optional>
#include <string_view>

#include "model/model.h"

namespace tenon {

// "2026-01-01T00:00:00Z", "2026-01-01T02:00:00.5+02:00" (a 't' or 'z' in lower case too) ->
// nanoseconds since the epoch; nullopt for anything else: another shape, a day or time that
// does not exist (2026-02-30, 25:00), or a time outside what 64-bit nanoseconds reach (1677 to
// 2262). Digits of a fraction past nanoseconds count for nothing.
std::optional<Nanos> ParseRfc3339(std::string_view text);

}  // namespace tenon
