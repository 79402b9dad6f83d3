// The shared retry policy against a loopback server: 503 and a connection reset are tried
// again, the attempts are bounded, 400 and 404 are not repeated, and the total deadline ends
// the loop (both the pause before an attempt and an attempt in flight). Then the two adapters'
// judgements on top of it: the Kubernetes client's eviction rule and AWS's error codes.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "adapters/aws/http.h"
#include "adapters/http/client.h"
#include "adapters/http/retry.h"
#include "adapters/kube/client.h"
#include "tests/support/scripted_server.h"

namespace tenon::http {
namespace {

using std::chrono::milliseconds;
using testing::ScriptedServer;

constexpr Duration kMillisecond{1'000'000};

Duration Millis(std::int64_t n) {
  return Duration{n * kMillisecond.value};
}

// A clock that moves only when the loop sleeps, and a fixed jitter.
struct FakeWorld {
  Instant clock;
  std::vector<Duration> sleeps;
  double jitter = 0.5;
  RetryHooks Hooks() {
    return RetryHooks{.now = [this] { return clock; },
                      .sleep =
                          [this](Duration d) {
                            sleeps.push_back(d);
                            clock += d;
                          },
                      .jitter = [this] { return jitter; }};
  }
};

RetryPolicy Policy(std::int32_t attempts, Duration deadline = Duration{60 * kSecond.value}) {
  return RetryPolicy{.attempts_max = attempts,
                     .backoff_base = Millis(100),
                     .backoff_max = Millis(5000),
                     .deadline = deadline};
}

// GETs `url` through the loop; `seen` gets every attempt's answer.
Response Get(const Retrier& retrier, const std::string& url, std::vector<Response>* seen = nullptr,
             milliseconds timeout = milliseconds(5000)) {
  Connection connection;
  return retrier.Run(
      [&](Duration time_left) {
        Transfer transfer;
        transfer.connect_timeout = milliseconds(1000);
        transfer.timeout = AttemptTimeout(timeout, time_left);
        Response response = connection.Perform(Request{"GET", url + "/x", {}, ""}, transfer);
        if (seen != nullptr) seen->push_back(response);
        return response;
      },
      [](const Response& response, std::int32_t) { return DefaultVerdict(response); });
}

TEST(HttpRetry, A503IsTriedAgainWithExponentialBackoff) {
  ScriptedServer server({ScriptedServer::Answer(503), ScriptedServer::Answer(503)});
  FakeWorld world;
  const Response response = Get(Retrier(Policy(5), world.Hooks()), server.url());
  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(server.requests(), 3);
  // Full jitter at 0.5 of 100 ms * 2^attempt.
  EXPECT_EQ(world.sleeps, (std::vector<Duration>{Millis(50), Millis(100)}));
}

TEST(HttpRetry, AConnectionResetIsTriedAgain) {
  ScriptedServer server({ScriptedServer::Reset()});
  FakeWorld world;
  std::vector<Response> seen;
  const Response response = Get(Retrier(Policy(5), world.Hooks()), server.url(), &seen);
  EXPECT_EQ(response.status, 200);
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].status, 0);
  EXPECT_EQ(seen[0].failure, Failure::kConnection) << seen[0].transport_error;
  EXPECT_EQ(world.sleeps.size(), 1u);
}

TEST(HttpRetry, ARefusedConnectionIsTriedAgainUntilTheAttemptsRunOut) {
  std::string url;
  {
    ScriptedServer gone({});
    url = gone.url();
  }  // Nothing listens on its port any more.
  FakeWorld world;
  std::vector<Response> seen;
  const Response response = Get(Retrier(Policy(3), world.Hooks()), url, &seen);
  EXPECT_EQ(response.status, 0);
  EXPECT_EQ(response.failure, Failure::kConnect) << response.transport_error;
  EXPECT_EQ(seen.size(), 3u);
  EXPECT_EQ(world.sleeps.size(), 2u);
}

TEST(HttpRetry, GivesUpAfterTheAttempts) {
  std::vector<ScriptedServer::Step> script(10, ScriptedServer::Answer(503));
  ScriptedServer server(script);
  FakeWorld world;
  const Response response = Get(Retrier(Policy(3), world.Hooks()), server.url());
  EXPECT_EQ(response.status, 503);
  EXPECT_EQ(server.requests(), 3);
  EXPECT_EQ(world.sleeps.size(), 2u) << "no pause after the last attempt";
}

TEST(HttpRetry, ClientErrorsAreNotRepeated) {
  for (const int status : {400, 404}) {
    ScriptedServer server({ScriptedServer::Answer(status)});
    FakeWorld world;
    const Response response = Get(Retrier(Policy(5), world.Hooks()), server.url());
    EXPECT_EQ(response.status, status);
    EXPECT_EQ(server.requests(), 1) << status;
    EXPECT_TRUE(world.sleeps.empty()) << status;
  }
}

TEST(HttpRetry, ThrottlingWaitsAsLongAsTheServerAsksUpToTheCap) {
  ScriptedServer server({ScriptedServer::Answer(429, "Retry-After: 2\r\n"),
                         ScriptedServer::Answer(429, "Retry-After: 600\r\n")});
  FakeWorld world;
  const Response response = Get(Retrier(Policy(5), world.Hooks()), server.url());
  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(server.requests(), 3);
  EXPECT_EQ(world.sleeps, (std::vector<Duration>{Millis(2000), Millis(5000)}));
}

// With 400 ms and then 800 ms of backoff, a 1 s deadline leaves room for the first pause only:
// the second would end past it, so the loop stops with the last answer.
TEST(HttpRetry, NoPauseOrAttemptPastTheDeadline) {
  std::vector<ScriptedServer::Step> script(10, ScriptedServer::Answer(503));
  ScriptedServer server(script);
  FakeWorld world;
  world.jitter = 1.0;
  RetryPolicy policy = Policy(10, Millis(1000));
  policy.backoff_base = Millis(400);
  const Response response = Get(Retrier(policy, world.Hooks()), server.url());
  EXPECT_EQ(response.status, 503);
  EXPECT_EQ(server.requests(), 2);
  EXPECT_EQ(world.sleeps, (std::vector<Duration>{Millis(400)}));
}

// A server that never answers: every attempt times out, and the deadline cuts the attempt in
// flight short (each attempt's own timeout is 30 s).
TEST(HttpRetry, TimeoutsAreTriedAgainWithinTheDeadline) {
  std::vector<ScriptedServer::Step> script(10, ScriptedServer::Stall());
  ScriptedServer server(script);
  RetryHooks hooks = RealRetryHooks();
  hooks.jitter = [] { return 0.0; };  // No pause: the attempts alone fill the deadline.
  std::vector<Response> seen;
  const auto started = std::chrono::steady_clock::now();
  const Response response =
      Get(Retrier(Policy(3, Millis(900)), hooks), server.url(), &seen, milliseconds(400));
  const auto took = std::chrono::steady_clock::now() - started;
  EXPECT_EQ(response.status, 0);
  EXPECT_EQ(response.failure, Failure::kTimeout) << response.transport_error;
  // 400 ms, 400 ms, then the 100 ms left (two, when a slow machine has used them up).
  EXPECT_GE(seen.size(), 2u);
  EXPECT_LE(seen.size(), 3u);
  EXPECT_GE(took, milliseconds(850));
  EXPECT_LT(took, milliseconds(2000));

  const auto single = std::chrono::steady_clock::now();
  seen.clear();
  Get(Retrier(Policy(5, Millis(300)), hooks), server.url(), &seen, milliseconds(30'000));
  // One attempt, and at most a sliver of one more when curl's timer fired a little early.
  EXPECT_LE(seen.size(), 2u);
  EXPECT_LT(std::chrono::steady_clock::now() - single, milliseconds(1500))
      << "the deadline, not the attempt's 30 s, ended it";
}

TEST(HttpRetry, WhatIsRetryable) {
  const auto failed = [](Failure failure) {
    Response r;
    r.failure = failure;
    return r;
  };
  EXPECT_TRUE(Retryable(failed(Failure::kConnect)));
  EXPECT_TRUE(Retryable(failed(Failure::kConnection)));
  EXPECT_TRUE(Retryable(failed(Failure::kTimeout)));
  EXPECT_FALSE(Retryable(failed(Failure::kTls)));
  EXPECT_FALSE(Retryable(failed(Failure::kOther)));
  Response aborted = failed(Failure::kAborted);
  aborted.aborted = true;
  EXPECT_FALSE(Retryable(aborted));
  for (const long status : {429L, 500L, 502L, 503L, 504L}) {
    EXPECT_TRUE(Retryable(Response{status, "", {}, ""})) << status;
  }
  for (const long status : {200L, 400L, 401L, 403L, 404L, 409L, 422L}) {
    EXPECT_FALSE(Retryable(Response{status, "", {}, ""})) << status;
  }
  EXPECT_EQ(AttemptTimeout(milliseconds(30'000), Duration{0}), milliseconds(30'000));
  EXPECT_EQ(AttemptTimeout(milliseconds(30'000), Millis(250)), milliseconds(250));
  EXPECT_EQ(AttemptTimeout(milliseconds(30'000), Duration{1}), milliseconds(1));
}

// The Kubernetes client's judgement on the shared loop: a 503 is tried again; an eviction's 429
// and 500 are the PodDisruptionBudgets' answer and go back to the executor at once.
TEST(HttpRetry, KubeClientRetries503ButNotAnEvictionsAnswer) {
  ScriptedServer server({ScriptedServer::Answer(503), ScriptedServer::Answer(200),
                         ScriptedServer::Answer(429), ScriptedServer::Answer(500)});
  kube::ClusterConfig config;
  config.server = server.url();
  config.retry.backoff_base = Millis(1);
  kube::Client client(config);
  EXPECT_EQ(client.Request("GET", "/api/v1/pods").status, 200);
  EXPECT_EQ(server.requests(), 2);
  const std::string eviction = "/api/v1/namespaces/d/pods/p/eviction";
  EXPECT_EQ(client.Request("POST", eviction, "{}").status, 429);
  EXPECT_EQ(client.Request("POST", eviction, "{}").status, 500);
  EXPECT_EQ(server.requests(), 4);
}

// AWS's judgement on the shared loop: a throttling code on a 400 is retried, a capacity error on
// a 500 is not, and a dead endpoint is tried again like any connection error.
TEST(HttpRetry, AwsDecidesWhichErrorCodesAreRetried) {
  const auto ec2 = [](long status, const std::string& code) {
    return Response{
        status,
        "<Response><Errors><Error><Code>" + code + "</Code></Error></Errors></Response>",
        {},
        ""};
  };
  const auto judged = [](const Response& response) {
    return aws::Retryable(response, aws::ParseError(response));
  };
  EXPECT_TRUE(judged(ec2(400, "Throttling")));
  EXPECT_TRUE(judged(ec2(503, "RequestLimitExceeded")));
  EXPECT_FALSE(judged(ec2(500, "InsufficientInstanceCapacity")));
  EXPECT_FALSE(judged(ec2(400, "InvalidParameterValue")));
  Response refused;
  refused.failure = Failure::kConnect;
  refused.transport_error = "Couldn't connect to server";
  EXPECT_TRUE(judged(refused));
  Response refused_certificate;
  refused_certificate.failure = Failure::kTls;
  EXPECT_FALSE(judged(refused_certificate));
}

}  // namespace
}  // namespace tenon::http
