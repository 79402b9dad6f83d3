// The health and metrics endpoints over real HTTP on loopback: /healthz follows the loop's
// beats (on a fake clock), /readyz follows SetReady, /metrics serves the registry.
#include <curl/curl.h>
#include <gtest/gtest.h>

#include "adapters/http/health.h"
#include "adapters/metrics/metrics.h"

namespace tenon {
namespace {

struct Got {
  long status = 0;
  std::string body;
};

std::size_t Append(char* data, std::size_t size, std::size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

Got Get(int port, const std::string& path) {
  Got got;
  CURL* curl = curl_easy_init();
  const std::string url = "http://127.0.0.1:" + std::to_string(port) + path;
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, Append);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &got.body);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT, 10L);
  if (curl_easy_perform(curl) == CURLE_OK) {
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &got.status);
  }
  curl_easy_cleanup(curl);
  return got;
}

// healthz: ok while beats are fresh, 500 with the reason once stale, ok again after a beat.
TEST(Health, HealthzFollowsBeats) {
  auto now = std::chrono::steady_clock::time_point{} + std::chrono::hours(1);
  http::HealthOptions options;
  options.address = "127.0.0.1:0";
  options.staleness = std::chrono::seconds(30);
  options.clock = [&now] { return now; };
  http::HealthServer server(options);
  ASSERT_GT(server.port(), 0);

  Got got = Get(server.port(), "/healthz");
  EXPECT_EQ(got.status, 200);
  EXPECT_EQ(got.body, "ok");

  now += std::chrono::seconds(30);  // Exactly at the limit: still healthy.
  EXPECT_EQ(Get(server.port(), "/healthz").status, 200);
  now += std::chrono::seconds(1);
  got = Get(server.port(), "/healthz");
  EXPECT_EQ(got.status, 500);
  EXPECT_NE(got.body.find("no progress for 31000 ms"), std::string::npos) << got.body;

  server.Beat();
  EXPECT_EQ(Get(server.port(), "/healthz").status, 200);
}

// readyz: 503 with the reason until SetReady(true), and again after SetReady(false).
TEST(Health, ReadyzFollowsSetReady) {
  http::HealthOptions options;
  options.address = "127.0.0.1:0";
  http::HealthServer server(options);
  Got got = Get(server.port(), "/readyz");
  EXPECT_EQ(got.status, 503);
  EXPECT_EQ(got.body, "not ready: starting");

  server.SetReady(false, "informers not synced");
  got = Get(server.port(), "/readyz");
  EXPECT_EQ(got.status, 503);
  EXPECT_EQ(got.body, "not ready: informers not synced");

  server.SetReady(true);
  got = Get(server.port(), "/readyz");
  EXPECT_EQ(got.status, 200);
  EXPECT_EQ(got.body, "ok");
  EXPECT_EQ(Get(server.port(), "/nothing").status, 404);
}

// A warning (a stuck command lane) follows "ok" in both bodies and changes no status.
TEST(Health, WarningsShowWithoutFailingTheProbes) {
  http::HealthOptions options;
  options.address = "127.0.0.1:0";
  http::HealthServer server(options);
  server.SetReady(true);
  server.SetWarnings({"command lane aws: oldest command 75 s old (deadline 60 s)"});
  for (const char* path : {"/healthz", "/readyz"}) {
    const Got got = Get(server.port(), path);
    EXPECT_EQ(got.status, 200) << path;
    EXPECT_EQ(got.body, "ok\nwarning: command lane aws: oldest command 75 s old (deadline 60 s)")
        << path;
  }
  server.SetWarnings({});
  EXPECT_EQ(Get(server.port(), "/healthz").body, "ok");
}

// An address already in use is refused with a clear error.
TEST(Health, BusyPortIsAnError) {
  http::HealthOptions options;
  options.address = "127.0.0.1:0";
  http::HealthServer first(options);
  options.address = "127.0.0.1:" + std::to_string(first.port());
  EXPECT_THROW(http::HealthServer second(options), std::runtime_error);
}

// /metrics serves the Metrics registry in the Prometheus text format.
TEST(Health, MetricsEndpointServesTheRegistry) {
  metrics::Metrics m;
  m.OnAppend(3, 300, std::chrono::microseconds(50), Seq{7});
  http::MetricsServer server("127.0.0.1:0", m.registry());
  ASSERT_GT(server.port(), 0);
  Got got = Get(server.port(), "/metrics");
  EXPECT_EQ(got.status, 200);
  EXPECT_NE(got.body.find("tenon_log_sequence 7"), std::string::npos) << got.body;
  EXPECT_NE(got.body.find("tenon_log_records_total 3"), std::string::npos);
}

}  // namespace
}  // namespace tenon
