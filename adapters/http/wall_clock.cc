#include "adapters/http/wall_clock.h"

#include <chrono>

namespace tenon {

Instant WallClock() {
  return Instant{std::chrono::duration_cast<std::chrono::nanoseconds>(
                     std::chrono::system_clock::now().time_since_epoch())
                     .count()};
}

}  // namespace tenon
