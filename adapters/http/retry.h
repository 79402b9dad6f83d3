// The one retry policy of tenon's HTTP clients: a bounded number of attempts within a total
// deadline, full-jitter exponential backoff between them, and one rule for which failures are
// worth another attempt. The adapters keep the say over what an answer means: AWS maps its
// error codes (throttling codes on a 400 are retried, a capacity error on a 500 is not), the
// Kubernetes client refreshes its credentials after a 401 and takes an eviction's 429 as the
// PodDisruptionBudget's answer. Both go through Retrier::Run, so the loop, the backoff and the
// deadline are the same everywhere.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>

#include "adapters/http/client.h"
#include "model/units.h"

namespace tenon::http {

// The same for the AWS and the Kubernetes clients. Why these numbers:
// - 5 attempts: a throttled AWS API or an API server shedding load (429, 503) usually recovers
//   within a few seconds; more attempts only hold up the controller's command lanes, and the
//   core drives every command again anyway (it is level-triggered).
// - 100 ms base, 5 s cap, full jitter: AWS's advice for its APIs, and what spreads the retries
//   of many callers throttled at once.
// - 60 s deadline over all attempts and sleeps together: one request never holds its caller for
//   longer, however the attempts fail (each attempt is also bounded by its own timeout).
struct RetryPolicy {
  std::int32_t attempts_max = 5;
  Duration backoff_base{100'000'000};
  Duration backoff_max{5 * kSecond.value};
  Duration deadline{60 * kSecond.value};  // Zero: none.
};

// What a retry loop needs from the world: the clock (the Unix time: AWS signs with it), sleeping
// and a jitter source in [0, 1). Tests pass fakes.
struct RetryHooks {
  std::function<Instant()> now;
  std::function<void(Duration)> sleep;
  std::function<double()> jitter;
};
// The system clock, a real sleep and a seeded generator (thread-safe).
RetryHooks RealRetryHooks();

// What to do after an attempt.
enum class Verdict : std::uint8_t {
  kDone,      // Return this answer: a success, or a failure another attempt would not change.
  kRetry,     // Try again after the backoff.
  kRetryNow,  // Try again at once (after refreshing credentials); it counts as an attempt.
};

// The shared rule: a connection that could not be made or broke, a timeout, 429 and 5xx are
// worth another attempt; any other answer (400, 404, 409, ...) is not, nor is an abort or a
// local error, nor a TLS failure: a certificate refused now is refused the same way 100 ms later.
bool Retryable(const Response& response);
Verdict DefaultVerdict(const Response& response);

// An attempt's timeout: its own, shortened to the time left before the deadline (`time_left`
// zero: no deadline), and never zero, which would mean no timeout at all.
std::chrono::milliseconds AttemptTimeout(std::chrono::milliseconds timeout, Duration time_left);

// The delay a server asked for in Retry-After (delta-seconds form), or zero.
Duration RetryAfter(const Response& response);

class Retrier {
 public:
  Retrier(RetryPolicy policy, RetryHooks hooks);

  // One attempt: gets the time left before the deadline (its timeout should not exceed it; zero
  // when there is no deadline) and returns its answer.
  using Attempt = std::function<Response(Duration time_left)>;
  // Judges an answer; `attempt` counts from 0.
  using Judge = std::function<Verdict(const Response& response, std::int32_t attempt)>;

  // Runs `attempt` until `judge` says kDone, the attempts are used up, or the deadline would
  // pass before the next attempt begins; returns the last answer.
  Response Run(const Attempt& attempt, const Judge& judge) const;
  Response Run(const Attempt& attempt) const { return Run(attempt, Judge()); }

  // The pause after a failed attempt `attempt` (from 0): uniform in [0, min(max, base * 2^n)).
  Duration Backoff(std::int32_t attempt) const;

  const RetryPolicy& policy() const { return policy_; }
  const RetryHooks& hooks() const { return hooks_; }

 private:
  RetryPolicy policy_;
  RetryHooks hooks_;
};

}  // namespace tenon::http
