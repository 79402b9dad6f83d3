// The wall clock as the model's Instant: what the effectful parts read for "now" (a retry's
// deadline, a Kubernetes write's timestamp, the controller's ticks). The core never reads it:
// its time comes from the Tick events in the log.
#pragma once

#include "model/model.h"

namespace tenon {

// Now, in nanoseconds since the Unix epoch.
Instant WallClock();

}  // namespace tenon
