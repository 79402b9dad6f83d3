// The client retries throttling and 5xx with bounded jittered backoff, never retries client
// errors, maps every failure (XML, JSON, HTML or no answer) into the closed ErrorCode set, and
// ends a request in flight when the process stops.
#include "adapters/aws/http.h"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <deque>
#include <thread>

#include "adapters/aws/credentials.h"

namespace tenon::aws {
namespace {

class ScriptedTransport : public Transport {
 public:
  std::deque<HttpResponse> answers;
  std::vector<HttpRequest> sent;
  HttpResponse Send(const HttpRequest& request) override {
    sent.push_back(request);
    if (answers.empty()) return HttpResponse{200, "<ok/>", {}, ""};
    HttpResponse next = answers.front();
    answers.pop_front();
    return next;
  }
};

HttpResponse Ec2Error(long status, const std::string& code) {
  return HttpResponse{
      status,
      "<?xml version=\"1.0\"?><Response><Errors><Error><Code>" + code +
          "</Code><Message>m</Message></Error></Errors><RequestID>r</RequestID></Response>",
      {},
      ""};
}

struct Fixture {
  ScriptedTransport transport;
  StaticProvider credentials{Credentials{"AKID", "SECRET", "", std::nullopt, "test"}};
  std::vector<Duration> sleeps;
  AwsClient client{transport, &credentials,
                   ClientOptions{.region = "us-east-1",
                                 .endpoints = {{"ec2", "http://127.0.0.1:1"}},
                                 .attempts_max = 4,
                                 .backoff_base = Duration{100},
                                 .backoff_max = Duration{250}},
                   ClientHooks{.now = [] { return Instant{}; },
                               .sleep = [this](Duration d) { sleeps.push_back(d); },
                               .jitter = [] { return 0.5; }}};
};

TEST(AwsHttp, RetriesThrottlingWithJitteredCappedBackoff) {
  Fixture f;
  f.transport.answers = {Ec2Error(503, "RequestLimitExceeded"), Ec2Error(400, "Throttling"),
                         Ec2Error(400, "ThrottlingException")};
  Result<std::string> r = f.client.Query("ec2", "DescribeRegions", "2016-11-15", {});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(f.transport.sent.size(), 4u);
  // base 100 * 2^attempt, capped at 250, times jitter 0.5.
  EXPECT_EQ(f.sleeps, (std::vector<Duration>{Duration{50}, Duration{100}, Duration{125}}));
}

TEST(AwsHttp, GivesUpAfterTheAttemptLimitWithThrottled) {
  Fixture f;
  for (int i = 0; i < 10; ++i) f.transport.answers.push_back(Ec2Error(503, "RequestLimitExceeded"));
  Result<std::string> r = f.client.Query("ec2", "DescribeRegions", "2016-11-15", {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error.code, ErrorCode::kThrottled);
  EXPECT_EQ(f.transport.sent.size(), 4u);
  EXPECT_EQ(f.sleeps.size(), 3u);
}

TEST(AwsHttp, Html500IsTransientAndRetried) {
  Fixture f;
  f.transport.answers = {
      HttpResponse{500, "<html><body><h1>Internal Server Error</h1></body></html>", {}, ""}};
  ASSERT_TRUE(f.client.Query("ec2", "DescribeRegions", "2016-11-15", {}).ok());
  AwsError e = ParseError(HttpResponse{502, "<html><body>Bad Gateway</body></html>", {}, ""});
  EXPECT_EQ(e.code, ErrorCode::kTransient);
  EXPECT_EQ(e.aws_code, "HTTP502");
  EXPECT_NE(e.message.find("Bad Gateway"), std::string::npos);
}

TEST(AwsHttp, ClientErrorsAreNotRetried) {
  Fixture f;
  f.transport.answers = {Ec2Error(400, "InvalidParameterValue")};
  Result<std::string> r = f.client.Query("ec2", "DescribeRegions", "2016-11-15", {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error.code, ErrorCode::kInvalid);
  EXPECT_EQ(r.error.aws_code, "InvalidParameterValue");
  EXPECT_EQ(f.transport.sent.size(), 1u);
}

TEST(AwsHttp, NoAnswerIsTransient) {
  AwsError e = ParseError(HttpResponse{0, "", {}, "Couldn't connect to server"});
  EXPECT_EQ(e.code, ErrorCode::kTransient);
  EXPECT_TRUE(Retryable(e));
}

TEST(AwsHttp, JsonErrorsAndTheQueryErrorHeader) {
  AwsError e = ParseError(HttpResponse{
      400, R"({"__type":"com.amazonaws.sqs#QueueDoesNotExist","message":"gone"})", {}, ""});
  EXPECT_EQ(e.aws_code, "QueueDoesNotExist");
  EXPECT_EQ(e.code, ErrorCode::kNotFound);
  e = ParseError(
      HttpResponse{400,
                   R"({"__type":"x#y"})",
                   {{"x-amzn-query-error", "AWS.SimpleQueueService.NonExistentQueue;Sender"}},
                   ""});
  EXPECT_EQ(e.code, ErrorCode::kNotFound);
}

TEST(AwsHttp, ErrorCodesMapIntoTheClosedSet) {
  EXPECT_EQ(MapErrorCode("InsufficientInstanceCapacity", 400), ErrorCode::kInsufficientCapacity);
  EXPECT_EQ(MapErrorCode("UnfulfillableCapacity", 400), ErrorCode::kInsufficientCapacity);
  EXPECT_EQ(MapErrorCode("RequestLimitExceeded", 503), ErrorCode::kThrottled);
  EXPECT_EQ(MapErrorCode("SignatureDoesNotMatch", 403), ErrorCode::kUnauthorized);
  EXPECT_EQ(MapErrorCode("UnauthorizedOperation", 403), ErrorCode::kUnauthorized);
  EXPECT_EQ(MapErrorCode("InvalidInstanceID.NotFound", 400), ErrorCode::kNotFound);
  EXPECT_EQ(MapErrorCode("InvalidLaunchTemplateName.NotFoundException", 400), ErrorCode::kNotFound);
  EXPECT_EQ(MapErrorCode("InternalError", 500), ErrorCode::kTransient);
  EXPECT_EQ(MapErrorCode("Whatever", 429), ErrorCode::kThrottled);
  EXPECT_EQ(MapErrorCode("InvalidParameterCombination", 400), ErrorCode::kInvalid);
}

TEST(AwsHttp, QueryIsASignedFormPostToTheOverriddenEndpoint) {
  Fixture f;
  ASSERT_TRUE(
      f.client.Query("ec2", "DescribeRegions", "2016-11-15", {{"Filter.1.Name", "a b"}}).ok());
  const HttpRequest& sent = f.transport.sent.at(0);
  EXPECT_EQ(sent.method, "POST");
  EXPECT_EQ(sent.host, "127.0.0.1:1");
  EXPECT_EQ(sent.body, "Action=DescribeRegions&Version=2016-11-15&Filter.1.Name=a%20b");
  bool signed_for_ec2 = false;
  for (const auto& [name, value] : sent.headers) {
    signed_for_ec2 |=
        name == "Authorization" && value.find("/us-east-1/ec2/aws4_request") != std::string::npos;
  }
  EXPECT_TRUE(signed_for_ec2);
  EXPECT_EQ(f.client.Endpoint("sqs"), "https://sqs.us-east-1.amazonaws.com");
}

// Regional services answer in the client's region; IAM is global and signed for us-east-1, and
// the Price List API answers under api.pricing, as AWS publishes them.
TEST(AwsHttp, GlobalAndPriceListEndpointsAreAwssOwn) {
  ScriptedTransport transport;
  StaticProvider credentials{Credentials{"AKID", "SECRET", "", std::nullopt, "test"}};
  AwsClient client{
      transport, &credentials,
      ClientOptions{.region = "eu-west-1", .endpoints = {{"sts", "http://127.0.0.1:1"}}},
      ClientHooks{
          .now = [] { return Instant{}; }, .sleep = [](Duration) {}, .jitter = [] { return 0.5; }}};
  EXPECT_EQ(client.Endpoint("ec2"), "https://ec2.eu-west-1.amazonaws.com");
  EXPECT_EQ(client.Endpoint("iam"), "https://iam.amazonaws.com");
  EXPECT_EQ(client.Endpoint("pricing"), "https://api.pricing.eu-west-1.amazonaws.com");
  EXPECT_EQ(client.Endpoint("sts"), "http://127.0.0.1:1");
  EXPECT_EQ(client.SigningRegion("iam"), "us-east-1");
  EXPECT_EQ(client.SigningRegion("ec2"), "eu-west-1");
  ASSERT_TRUE(client.Query("iam", "GetInstanceProfile", "2010-05-08", {}).ok());
  bool signed_for_iam_in_us_east_1 = false;
  for (const auto& [name, value] : transport.sent.at(0).headers) {
    signed_for_iam_in_us_east_1 |=
        name == "Authorization" && value.find("/us-east-1/iam/aws4_request") != std::string::npos;
  }
  EXPECT_TRUE(signed_for_iam_in_us_east_1);
  EXPECT_EQ(transport.sent.at(0).host, "iam.amazonaws.com");
}

class RotatingProvider : public CredentialsProvider {
 public:
  int fetches = 0;
  int invalidations = 0;
  Result<Credentials> Get(Instant) override {
    ++fetches;
    return Result<Credentials>::Ok(
        Credentials{"ASIA" + std::to_string(invalidations), "s", "t", std::nullopt, "rotating"});
  }
  void Invalidate() override { ++invalidations; }
};

TEST(AwsHttp, ExpiredTokenFetchesCredentialsAgainOnce) {
  ScriptedTransport transport;
  RotatingProvider credentials;
  AwsClient client(
      transport, &credentials,
      ClientOptions{.region = "us-east-1", .endpoints = {{"sts", "http://127.0.0.1:1"}}},
      ClientHooks{
          .now = [] { return Instant{}; }, .sleep = [](Duration) {}, .jitter = [] { return 0.0; }});
  transport.answers = {Ec2Error(400, "ExpiredToken")};
  ASSERT_TRUE(client.Query("sts", "GetCallerIdentity", "2011-06-15", {}).ok());
  EXPECT_EQ(credentials.invalidations, 1);
  EXPECT_EQ(transport.sent.size(), 2u);
  transport.answers = {Ec2Error(400, "ExpiredToken"), Ec2Error(400, "ExpiredToken")};
  const auto twice = client.Query("sts", "GetCallerIdentity", "2011-06-15", {});
  ASSERT_FALSE(twice.ok());
  EXPECT_EQ(twice.error.code, ErrorCode::kUnauthorized);
  EXPECT_EQ(credentials.invalidations, 2);  // Once per call, never in a loop.
}

// A stopping process ends a request that waits for its answer (an SQS long poll) at once, and
// every later request without sending it; the client does not retry an aborted request.
TEST(AwsHttp, AbortEndsTheRequestInFlightAndEveryLaterOne) {
  // A server that takes the connection and never answers.
  const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(listener, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  ASSERT_EQ(::listen(listener, 4), 0);
  socklen_t length = sizeof address;
  ASSERT_EQ(::getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length), 0);
  const std::string endpoint = "http://127.0.0.1:" + std::to_string(ntohs(address.sin_port));

  AbortSignal abort;
  CurlTransport transport(TransportOptions{.total_timeout_ms = 30'000, .abort = &abort});
  StaticProvider credentials{Credentials{"AKID", "SECRET", "", std::nullopt, "test"}};
  std::vector<Duration> sleeps;
  AwsClient client(transport, &credentials,
                   ClientOptions{.region = "us-east-1", .endpoints = {{"sqs", endpoint}}},
                   ClientHooks{.now = [] { return Instant{}; },
                               .sleep = [&](Duration d) { sleeps.push_back(d); },
                               .jitter = [] { return 0.5; }});
  const auto started = std::chrono::steady_clock::now();
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    abort.Trigger();
  });
  const Result<std::string> polled =
      client.Json("sqs", "AmazonSQS.ReceiveMessage", "application/x-amz-json-1.0", "{}");
  const auto took = std::chrono::steady_clock::now() - started;
  stopper.join();
  ASSERT_FALSE(polled.ok());
  EXPECT_EQ(polled.error.aws_code, "Aborted");
  EXPECT_GE(took, std::chrono::milliseconds(300));
  EXPECT_LT(took, std::chrono::milliseconds(1500)) << "the 30 s timeout did not end it";
  EXPECT_EQ(client.attempts_made(), 1) << "an aborted request is not retried";
  EXPECT_TRUE(sleeps.empty());

  HttpRequest request;
  request.method = "POST";
  request.scheme = "http";
  request.host = endpoint.substr(std::string("http://").size());
  const HttpResponse later = transport.Send(request);
  EXPECT_TRUE(later.aborted);
  EXPECT_EQ(later.status, 0);
  ::close(listener);
}

}  // namespace
}  // namespace tenon::aws
