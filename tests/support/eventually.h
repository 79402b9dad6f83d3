// Polling for a condition that another process or thread brings about.
#pragma once

#include <chrono>
#include <thread>

namespace tenon::testing {

// Asks `done` every 50 ms until it holds or `timeout` has passed: whether it held.
template <class Pred>
bool Eventually(Pred done, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return done();
}

}  // namespace tenon::testing
