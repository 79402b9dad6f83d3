// The AWS side of the HTTP layer: a transport over the shared libcurl connection
// (adapters/http/client.h), and a client that signs every attempt, runs the shared retry loop
// (adapters/http/retry.h) with AWS's own judgement of which errors are worth another attempt,
// and maps every failure into the closed ErrorCode set the core switches over.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "adapters/aws/sigv4.h"
#include "adapters/http/client.h"
#include "adapters/http/retry.h"
#include "model/model.h"

namespace tenon::aws {

// An answer; status 0: the request never got an HTTP answer (see transport_error).
using HttpResponse = http::Response;

// Sends one request; never throws. Implementations are not thread-safe.
class Transport {
 public:
  virtual ~Transport() = default;
  virtual HttpResponse Send(const HttpRequest& request) = 0;
  // The same, taking at most `time_left` (zero: the transport's own timeout alone). The retry
  // loop calls this one so that no attempt outlasts the request's deadline.
  virtual HttpResponse SendWithin(const HttpRequest& request, Duration time_left) {
    (void)time_left;
    return Send(request);
  }
};

// Ends the requests in flight on every transport given it, and fails every later one without
// sending it (see http::AbortSignal). An aborted request answers with `aborted` set; the client
// does not retry it.
using AbortSignal = http::AbortSignal;

struct TransportOptions {
  std::int64_t connect_timeout_ms = http::kConnectTimeout.count();
  std::int64_t total_timeout_ms = http::kRequestTimeout.count();  // Must exceed the SQS long poll.
  std::int64_t response_bytes_max = 64 << 20;
  AbortSignal* abort = nullptr;  // None: requests run to their answer or their timeout.
};

// One shared-layer connection reused for every request, so keep-alive connections are reused.
class CurlTransport : public Transport {
 public:
  explicit CurlTransport(TransportOptions options = {});
  HttpResponse Send(const HttpRequest& request) override;
  HttpResponse SendWithin(const HttpRequest& request, Duration time_left) override;

 private:
  TransportOptions options_;
  http::Connection connection_;
};

// An AWS error after mapping. `aws_code` is what the service said (or HTTP<status>).
struct AwsError {
  ErrorCode code = ErrorCode::kTransient;
  std::string aws_code;
  std::string message;
  long http_status = 0;
};

template <class T>
struct Result {
  std::optional<T> value;
  AwsError error;
  bool ok() const { return value.has_value(); }
  static Result Ok(T v) { return Result{std::move(v), {}}; }
  static Result Fail(AwsError e) { return Result{std::nullopt, std::move(e)}; }
};

struct Unit {};

// Maps a service error code and HTTP status into the closed set.
ErrorCode MapErrorCode(std::string_view aws_code, long http_status);
// Reads the error out of an XML (EC2, Query) or JSON body; falls back to HTTP<status> and a
// short printable excerpt for bodies that are neither (an HTML 500 from a load balancer).
AwsError ParseError(const HttpResponse& response);
bool Retryable(const AwsError& error);
// AWS's judgement of an answer for the shared retry loop: an answer that never came is judged by
// the shared rule (connection errors and timeouts); an HTTP answer by its mapped error, so a
// throttling code on a 400 is retried and a capacity error on a 500 is not.
bool Retryable(const HttpResponse& response, const AwsError& error);

class CredentialsProvider;

struct ClientOptions {
  std::string region = "us-east-1";
  // Service name (ec2, sqs, sts, ssm, iam) -> base URL such as http://127.0.0.1:5000.
  std::map<std::string, std::string> endpoints;
  // The shared retry policy's numbers (http::RetryPolicy), the same as the Kubernetes client's.
  std::int32_t attempts_max = http::RetryPolicy{}.attempts_max;
  Duration backoff_base = http::RetryPolicy{}.backoff_base;
  Duration backoff_max = http::RetryPolicy{}.backoff_max;
  Duration deadline = http::RetryPolicy{}.deadline;  // All attempts of one call together.
};

// What the client needs from the world: the clock (signing and the deadline), sleeping and a
// jitter source in [0, 1).
using ClientHooks = http::RetryHooks;
ClientHooks RealHooks();

class AwsClient {
 public:
  // `credentials` null: requests go unsigned (STS AssumeRoleWithWebIdentity).
  AwsClient(Transport& transport, CredentialsProvider* credentials, ClientOptions options,
            ClientHooks hooks);

  // EC2 / IAM / STS / SSM-free Query protocol: a form-encoded POST, answered in XML.
  Result<std::string> Query(const std::string& service, const std::string& action,
                            const std::string& version, const Pairs& params);
  // The JSON protocol (SQS, SSM): X-Amz-Target and application/x-amz-json-1.x.
  Result<std::string> Json(const std::string& service, const std::string& target,
                           const std::string& content_type, const std::string& body);

  // The REST protocol with a payload hash (S3): METHOD on a path of the service's endpoint.
  Result<std::string> Rest(const std::string& service, const std::string& method,
                           const std::string& path, std::string body);

  std::string Endpoint(const std::string& service) const;
  // The region a request to `service` is signed for: the client's, but us-east-1 for IAM.
  std::string SigningRegion(const std::string& service) const;
  const ClientOptions& options() const { return options_; }
  std::int64_t attempts_made() const { return attempts_made_; }

 private:
  Result<std::string> Perform(const std::string& service, const std::string& operation,
                              HttpRequest request);

  Transport& transport_;
  CredentialsProvider* credentials_;
  ClientOptions options_;
  ClientHooks hooks_;
  http::Retrier retrier_;
  std::int64_t attempts_made_ = 0;
};

// Splits a base URL into scheme and host[:port].
std::pair<std::string, std::string> SplitUrl(const std::string& url);
std::string FormEncode(const Pairs& params);

}  // namespace tenon::aws
