#include "adapters/http/retry.h"
#include "adapters/http/wall_clock.h"

#include <algorithm>
#include <cassert>
#include <chrono>
#include <cmath>
#include <memory>
#include <mutex>
#include <random>
#include <thread>

namespace tenon::http {
namespace {

// Gives up on shifting past this: base * 2^30 is past any cap.
constexpr std::int32_t kBackoffDoublingsMax = 30;
constexpr std::int64_t kRetryAfterSecondsMax = 24 * 3600;

struct SharedEngine {
  std::mutex mu;
  std::mt19937_64 engine{std::random_device{}()};
};

}  // namespace

RetryHooks RealRetryHooks() {
  auto shared = std::make_shared<SharedEngine>();
  return RetryHooks{
      .now = WallClock,
      .sleep = [](Duration d) { std::this_thread::sleep_for(std::chrono::nanoseconds(d.value)); },
      .jitter =
          [shared] {
            std::lock_guard lock(shared->mu);  // The Kubernetes client retries from many threads.
            return std::uniform_real_distribution<double>(0.0, 1.0)(shared->engine);
          },
  };
}

bool Retryable(const Response& response) {
  if (response.aborted) return false;
  if (response.status != 0) return response.status == 429 || response.status >= 500;
  return response.failure == Failure::kConnect || response.failure == Failure::kConnection ||
         response.failure == Failure::kTimeout;
}

Verdict DefaultVerdict(const Response& response) {
  return Retryable(response) ? Verdict::kRetry : Verdict::kDone;
}

std::chrono::milliseconds AttemptTimeout(std::chrono::milliseconds timeout, Duration time_left) {
  if (time_left.value <= 0) return timeout;
  const auto left =
      std::chrono::ceil<std::chrono::milliseconds>(std::chrono::nanoseconds(time_left.value));
  return timeout.count() == 0 ? left : std::min(left, timeout);
}

Duration RetryAfter(const Response& response) {
  const auto it = response.headers.find("retry-after");
  if (it == response.headers.end() || it->second.empty()) return Duration{0};
  std::int64_t seconds = 0;
  for (char c : it->second) {
    if (c < '0' || c > '9') return Duration{0};  // An HTTP date: not worth a parser here.
    seconds = std::min(kRetryAfterSecondsMax, seconds * 10 + (c - '0'));
  }
  return Duration{seconds * kSecond.value};
}

Retrier::Retrier(RetryPolicy policy, RetryHooks hooks) : policy_(policy), hooks_(std::move(hooks)) {
  assert(policy_.attempts_max >= 1);
  assert(hooks_.now && hooks_.sleep && hooks_.jitter);
}

Duration Retrier::Backoff(std::int32_t attempt) const {
  // Full jitter: uniform in [0, min(max, base * 2^attempt)).
  const double ceiling =
      std::min<double>(static_cast<double>(policy_.backoff_max.value),
                       static_cast<double>(policy_.backoff_base.value) *
                           std::ldexp(1.0, std::min(attempt, kBackoffDoublingsMax)));
  const double jitter = std::clamp(hooks_.jitter(), 0.0, 1.0);
  return Duration{static_cast<std::int64_t>(ceiling * jitter)};
}

Response Retrier::Run(const Attempt& attempt, const Judge& judge) const {
  const Instant started = hooks_.now();
  const bool bounded = policy_.deadline.value > 0;
  const auto time_left = [&] { return policy_.deadline - (hooks_.now() - started); };
  Response last;
  for (std::int32_t n = 0; n < policy_.attempts_max; ++n) {
    const Duration left = bounded ? time_left() : Duration{0};
    if (bounded && left.value <= 0) break;  // Only after a first attempt: the deadline is > 0.
    last = attempt(left);
    const Verdict verdict = judge ? judge(last, n) : DefaultVerdict(last);
    if (verdict == Verdict::kDone || n + 1 == policy_.attempts_max) break;
    if (verdict == Verdict::kRetryNow) continue;
    // A server's Retry-After lengthens the pause, up to the cap.
    const Duration pause = std::max(Backoff(n), std::min(RetryAfter(last), policy_.backoff_max));
    // A pause that would end past the deadline leaves no time for the attempt after it.
    if (bounded && time_left() - pause <= Duration{0}) break;
    hooks_.sleep(pause);
  }
  return last;
}

}  // namespace tenon::http
