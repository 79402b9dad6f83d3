// The HTTP layer under every AWS call: a libcurl transport that reuses its connection, and a
// client that signs, retries throttling and 5xx with jittered exponential backoff, and maps every
// failure into the closed ErrorCode set the core switches over.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "adapters/aws/sigv4.h"
#include "model/model.h"

namespace tenon::aws {

struct HttpResponse {
  long status = 0;  // 0: the request never got an HTTP answer (see transport_error).
  std::string body;
  std::map<std::string, std::string> headers;  // Lower-case names.
  std::string transport_error;
  bool aborted = false;  // Ended (or never sent) by an AbortSignal.
};

// Sends one request; never throws. Implementations are not thread-safe.
class Transport {
 public:
  virtual ~Transport() = default;
  virtual HttpResponse Send(const HttpRequest& request) = 0;
};

// Ends the requests in flight on every transport given it, at once, and fails every later one
// without sending it: a stopping process need not wait out an SQS long poll. Trigger is
// thread-safe and cannot be undone. An aborted request answers with `aborted` set; the client
// does not retry it. Must outlive the transports that use it.
class AbortSignal {
 public:
  AbortSignal() = default;
  AbortSignal(const AbortSignal&) = delete;
  AbortSignal& operator=(const AbortSignal&) = delete;
  void Trigger();
  bool triggered() const { return triggered_.load(); }

 private:
  friend class CurlTransport;
  void Attach(void* multi);
  void Detach(void* multi);
  std::mutex mu_;  // Guards multis_ and orders Trigger's wake-ups with Detach.
  std::set<void*> multis_;
  std::atomic<bool> triggered_{false};
};

struct TransportOptions {
  std::int64_t connect_timeout_ms = 3000;
  std::int64_t total_timeout_ms = 30000;  // Must exceed the SQS long-poll wait.
  std::int64_t response_bytes_max = 64 << 20;
  AbortSignal* abort = nullptr;  // None: requests run to their answer or their timeout.
};

// One CURL easy handle reused for every request, so keep-alive connections are reused.
class CurlTransport : public Transport {
 public:
  explicit CurlTransport(TransportOptions options = {});
  ~CurlTransport() override;
  CurlTransport(const CurlTransport&) = delete;
  CurlTransport& operator=(const CurlTransport&) = delete;
  HttpResponse Send(const HttpRequest& request) override;

 private:
  TransportOptions options_;
  void* curl_;
  void* multi_;  // Runs curl_ so that an AbortSignal can wake it.
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

class CredentialsProvider;

struct ClientOptions {
  std::string region = "us-east-1";
  // Service name (ec2, sqs, sts, ssm, iam) -> base URL such as http://127.0.0.1:5000.
  std::map<std::string, std::string> endpoints;
  std::int32_t attempts_max = 5;
  Nanos backoff_base{100'000'000};
  Nanos backoff_max{5 * kSecond.value};
};

// What the client needs from the world: the clock, sleeping and a jitter source in [0, 1).
struct ClientHooks {
  std::function<Nanos()> now;
  std::function<void(Nanos)> sleep;
  std::function<double()> jitter;
};
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
  Nanos Backoff(std::int32_t attempt) const;

  Transport& transport_;
  CredentialsProvider* credentials_;
  ClientOptions options_;
  ClientHooks hooks_;
  std::int64_t attempts_made_ = 0;
};

// Splits a base URL into scheme and host[:port].
std::pair<std::string, std::string> SplitUrl(const std::string& url);
std::string FormEncode(const Pairs& params);

}  // namespace tenon::aws
