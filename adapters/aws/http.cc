#include "adapters/aws/http.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>
#include <pugixml.hpp>

#include "adapters/aws/credentials.h"

namespace tenon::aws {
namespace {

constexpr std::size_t kErrorExcerptBytesMax = 200;

// Printable, short, one line: what an HTML error page says, without flooding the log.
std::string Excerpt(std::string_view body) {
  return http::Excerpt(body, kErrorExcerptBytesMax);
}

bool Contains(std::string_view haystack, std::string_view needle) {
  return haystack.find(needle) != std::string_view::npos;
}

std::optional<AwsError> ParseXmlError(const std::string& body) {
  pugi::xml_document doc;
  if (!doc.load_buffer(body.data(), body.size())) return std::nullopt;
  // EC2: Response/Errors/Error; Query services: ErrorResponse/Error.
  pugi::xml_node error = doc.select_node("//Error").node();
  if (!error) return std::nullopt;
  AwsError out;
  out.aws_code = error.child_value("Code");
  out.message = error.child_value("Message");
  if (out.aws_code.empty()) return std::nullopt;
  return out;
}

std::optional<AwsError> ParseJsonError(const HttpResponse& response) {
  const auto json = nlohmann::json::parse(response.body, nullptr, false);
  if (json.is_discarded() || !json.is_object()) return std::nullopt;
  AwsError out;
  std::string type = json.value("__type", std::string());
  // com.amazonaws.sqs#QueueDoesNotExist -> QueueDoesNotExist
  if (const auto hash = type.rfind('#'); hash != std::string::npos) type = type.substr(hash + 1);
  // SQS says the legacy Query code in a header, e.g. AWS.SimpleQueueService.NonExistentQueue;Sender
  if (const auto it = response.headers.find("x-amzn-query-error"); it != response.headers.end()) {
    type = it->second.substr(0, it->second.find(';'));
  }
  out.aws_code = type;
  out.message = json.value("message", json.value("Message", std::string()));
  if (out.aws_code.empty()) return std::nullopt;
  return out;
}

}  // namespace

CurlTransport::CurlTransport(TransportOptions options)
    : options_(options), connection_(options.abort) {}

HttpResponse CurlTransport::Send(const HttpRequest& request) {
  return SendWithin(request, Duration{0});
}

HttpResponse CurlTransport::SendWithin(const HttpRequest& request, Duration time_left) {
  http::Transfer transfer;
  transfer.connect_timeout = std::chrono::milliseconds(options_.connect_timeout_ms);
  transfer.timeout =
      http::AttemptTimeout(std::chrono::milliseconds(options_.total_timeout_ms), time_left);
  transfer.response_bytes_max = options_.response_bytes_max;
  return connection_.Perform(
      http::Request{request.method, FullUrl(request), request.headers, request.body}, transfer);
}

ErrorCode MapErrorCode(std::string_view aws_code, long http_status) {
  static constexpr std::string_view kCapacity[] = {"InsufficientInstanceCapacity",
                                                   "InsufficientHostCapacity",
                                                   "InsufficientReservedInstanceCapacity",
                                                   "InsufficientCapacity",
                                                   "UnfulfillableCapacity",
                                                   "MaxSpotInstanceCountExceeded",
                                                   "VcpuLimitExceeded",
                                                   "InsufficientFreeAddressesInSubnet"};
  static constexpr std::string_view kThrottle[] = {
      "RequestLimitExceeded", "Throttling", "ThrottlingException",      "TooManyRequestsException",
      "RequestThrottled",     "SlowDown",   "RequestThrottledException"};
  static constexpr std::string_view kAuth[] = {"AuthFailure",
                                               "UnauthorizedOperation",
                                               "SignatureDoesNotMatch",
                                               "InvalidClientTokenId",
                                               "AccessDenied",
                                               "AccessDeniedException",
                                               "ExpiredToken",
                                               "ExpiredTokenException",
                                               "UnrecognizedClientException",
                                               "IncompleteSignature",
                                               "MissingAuthenticationToken",
                                               "InvalidAccessKeyId",
                                               "OptInRequired"};
  const auto in = [&](const auto& set) {
    return std::find(std::begin(set), std::end(set), aws_code) != std::end(set);
  };
  if (in(kCapacity)) return ErrorCode::kInsufficientCapacity;
  if (in(kThrottle)) return ErrorCode::kThrottled;
  if (in(kAuth)) return ErrorCode::kUnauthorized;
  if (Contains(aws_code, "NotFound") || Contains(aws_code, "NonExistent") ||
      Contains(aws_code, "DoesNotExist") || aws_code == "NoSuchEntity" || aws_code == "NoSuchKey" ||
      aws_code == "NoSuchBucket" || aws_code == "ParameterNotFound") {
    return ErrorCode::kNotFound;
  }
  if (http_status == 429) return ErrorCode::kThrottled;
  if (http_status == 401 || http_status == 403) return ErrorCode::kUnauthorized;
  if (http_status >= 500 || http_status == 0) return ErrorCode::kTransient;
  return ErrorCode::kInvalid;
}

AwsError ParseError(const HttpResponse& response) {
  AwsError error;
  if (response.status == 0) {
    error.aws_code = "TransportError";
    error.message = response.transport_error;
  } else if (auto xml = ParseXmlError(response.body)) {
    error = *xml;
  } else if (auto json = ParseJsonError(response)) {
    error = *json;
  } else {
    error.aws_code = "HTTP" + std::to_string(response.status);
    error.message = Excerpt(response.body);
  }
  error.http_status = response.status;
  error.code = MapErrorCode(error.aws_code, response.status);
  return error;
}

bool Retryable(const AwsError& error) {
  return error.code == ErrorCode::kThrottled || error.code == ErrorCode::kTransient;
}

bool Retryable(const HttpResponse& response, const AwsError& error) {
  if (response.aborted) return false;
  if (response.status == 0) return http::Retryable(response);
  return Retryable(error);
}

ClientHooks RealHooks() {
  return http::RealRetryHooks();
}

std::pair<std::string, std::string> SplitUrl(const std::string& url) {
  const auto sep = url.find("://");
  if (sep == std::string::npos) return {"https", url};
  std::string host = url.substr(sep + 3);
  if (const auto slash = host.find('/'); slash != std::string::npos) host.resize(slash);
  return {url.substr(0, sep), host};
}

std::string FormEncode(const Pairs& params) {
  std::string out;
  for (const auto& [k, v] : params) {
    if (!out.empty()) out.push_back('&');
    out += UriEncode(k, true) + "=" + UriEncode(v, true);
  }
  return out;
}

AwsClient::AwsClient(Transport& transport, CredentialsProvider* credentials, ClientOptions options,
                     ClientHooks hooks)
    : transport_(transport),
      credentials_(credentials),
      options_(std::move(options)),
      hooks_(std::move(hooks)),
      retrier_(http::RetryPolicy{.attempts_max = options_.attempts_max,
                                 .backoff_base = options_.backoff_base,
                                 .backoff_max = options_.backoff_max,
                                 .deadline = options_.deadline},
               hooks_) {}

// AWS's endpoints: most services are regional; IAM is global (signed for us-east-1), and the
// Price List query API answers under api.pricing.
std::string AwsClient::Endpoint(const std::string& service) const {
  if (const auto it = options_.endpoints.find(service); it != options_.endpoints.end()) {
    return it->second;
  }
  if (service == "iam") return "https://iam.amazonaws.com";
  if (service == "pricing") return "https://api.pricing." + options_.region + ".amazonaws.com";
  return "https://" + service + "." + options_.region + ".amazonaws.com";
}

std::string AwsClient::SigningRegion(const std::string& service) const {
  return service == "iam" ? "us-east-1" : options_.region;
}

Result<std::string> AwsClient::Query(const std::string& service, const std::string& action,
                                     const std::string& version, const Pairs& params) {
  HttpRequest request;
  request.method = "POST";
  std::tie(request.scheme, request.host) = SplitUrl(Endpoint(service));
  Pairs form{{"Action", action}, {"Version", version}};
  form.insert(form.end(), params.begin(), params.end());
  request.body = FormEncode(form);
  request.headers.emplace_back("Content-Type", "application/x-www-form-urlencoded; charset=utf-8");
  return Perform(service, action, std::move(request));
}

Result<std::string> AwsClient::Json(const std::string& service, const std::string& target,
                                    const std::string& content_type, const std::string& body) {
  HttpRequest request;
  request.method = "POST";
  std::tie(request.scheme, request.host) = SplitUrl(Endpoint(service));
  request.body = body;
  request.headers.emplace_back("Content-Type", content_type);
  request.headers.emplace_back("X-Amz-Target", target);
  return Perform(service, target, std::move(request));
}

Result<std::string> AwsClient::Rest(const std::string& service, const std::string& method,
                                    const std::string& path, std::string body) {
  HttpRequest request;
  request.method = method;
  std::tie(request.scheme, request.host) = SplitUrl(Endpoint(service));
  // S3 signs the payload's hash and wants it in a header of its own.
  request.headers.emplace_back("x-amz-content-sha256", Sha256Hex(body));
  // Bytes, not a form (libcurl would otherwise label a body as form-encoded).
  request.headers.emplace_back("Content-Type", "application/octet-stream");
  request.body = std::move(body);
  request.path = path;
  return Perform(service, method + " " + path, std::move(request));
}

// Every attempt is signed again (a fresh X-Amz-Date) with the credentials of the moment.
// Expired temporary credentials are fetched again once, at once; that attempt counts like any
// other. Everything else follows the shared retry loop, with AWS's judgement (Retryable).
Result<std::string> AwsClient::Perform(const std::string& service, const std::string& operation,
                                       HttpRequest request) {
  std::optional<AwsError> unsigned_error;  // The credentials could not be had: nothing was sent.
  AwsError last;
  bool refreshed = false;
  std::int32_t attempts = 0;
  const auto attempt = [&](Duration time_left) {
    const Instant now = hooks_.now();
    HttpRequest signed_request = request;
    if (credentials_ != nullptr) {
      Result<Credentials> credentials = credentials_->Get(now);
      if (!credentials.ok()) {
        unsigned_error = credentials.error;
        return HttpResponse{};
      }
      Sign(signed_request, *credentials.value, SigningScope{SigningRegion(service), service}, now);
    }
    ++attempts_made_;
    return transport_.SendWithin(signed_request, time_left);
  };
  const auto judge = [&](const HttpResponse& response, std::int32_t n) {
    attempts = n + 1;
    if (unsigned_error || response.aborted || response.ok()) return http::Verdict::kDone;
    last = ParseError(response);
    const bool expired = last.aws_code == "ExpiredToken" ||
                         last.aws_code == "ExpiredTokenException" ||
                         last.aws_code == "RequestExpired";
    if (expired && !refreshed && credentials_ != nullptr && n + 1 < options_.attempts_max) {
      credentials_->Invalidate();
      refreshed = true;
      return http::Verdict::kRetryNow;
    }
    spdlog::debug("aws {} {}: HTTP {} {} ({}), attempt {}", service, operation, last.http_status,
                  last.aws_code, Excerpt(last.message), n + 1);
    return Retryable(response, last) ? http::Verdict::kRetry : http::Verdict::kDone;
  };
  const HttpResponse response = retrier_.Run(attempt, judge);
  if (unsigned_error) return Result<std::string>::Fail(*unsigned_error);
  if (response.aborted) {
    spdlog::debug("aws {} {}: {}", service, operation, response.transport_error);
    return Result<std::string>::Fail(
        AwsError{ErrorCode::kTransient, "Aborted", response.transport_error, 0});
  }
  if (response.ok()) {
    spdlog::debug("aws {} {}: HTTP {} ({} bytes, attempt {})", service, operation, response.status,
                  response.body.size(), attempts);
    return Result<std::string>::Ok(response.body);
  }
  spdlog::warn("aws {} {} failed: {} ({})", service, operation, last.aws_code,
               Excerpt(last.message));
  return Result<std::string>::Fail(last);
}

}  // namespace tenon::aws
