#include "adapters/aws/http.h"

#include <curl/curl.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cassert>
#include <chrono>
#include <cmath>
#include <nlohmann/json.hpp>
#include <pugixml.hpp>
#include <random>
#include <thread>

#include "adapters/aws/credentials.h"

namespace tenon::aws {
namespace {

constexpr std::size_t kErrorExcerptBytesMax = 200;
// The longest a transfer waits in one poll; curl's own timers and an AbortSignal end it sooner.
constexpr int kPollMillis = 1000;

struct Received {
  std::string* body;
  std::map<std::string, std::string>* headers;
  std::int64_t bytes_max;
};

std::size_t OnBody(char* data, std::size_t size, std::size_t count, void* user) {
  auto* received = static_cast<Received*>(user);
  const std::size_t n = size * count;
  if (static_cast<std::int64_t>(received->body->size() + n) > received->bytes_max) return 0;
  received->body->append(data, n);
  return n;
}

std::size_t OnHeader(char* data, std::size_t size, std::size_t count, void* user) {
  auto* received = static_cast<Received*>(user);
  const std::size_t n = size * count;
  std::string line(data, n);
  const auto colon = line.find(':');
  if (colon == std::string::npos) return n;
  std::string name = line.substr(0, colon);
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  std::string value = line.substr(colon + 1);
  const auto first = value.find_first_not_of(" \t");
  const auto last = value.find_last_not_of(" \t\r\n");
  value = first == std::string::npos ? "" : value.substr(first, last - first + 1);
  (*received->headers)[name] = value;
  return n;
}

// Printable, short, one line: what an HTML error page says, without flooding the log.
std::string Excerpt(std::string_view body) {
  std::string out;
  for (char c : body.substr(0, kErrorExcerptBytesMax)) {
    out.push_back(std::isprint(static_cast<unsigned char>(c)) ? c : ' ');
  }
  return out;
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

void AbortSignal::Trigger() {
  std::lock_guard lock(mu_);
  triggered_ = true;
  // Thread-safe in libcurl; the wake-up stays pending until the poll it ends takes it.
  for (void* multi : multis_) curl_multi_wakeup(static_cast<CURLM*>(multi));
}

void AbortSignal::Attach(void* multi) {
  std::lock_guard lock(mu_);
  multis_.insert(multi);
}

void AbortSignal::Detach(void* multi) {
  std::lock_guard lock(mu_);
  multis_.erase(multi);
}

CurlTransport::CurlTransport(TransportOptions options) : options_(options) {
  static const CURLcode global = curl_global_init(CURL_GLOBAL_DEFAULT);
  assert(global == CURLE_OK);
  (void)global;
  curl_ = curl_easy_init();
  assert(curl_ != nullptr);
  multi_ = curl_multi_init();
  assert(multi_ != nullptr);
  if (options_.abort != nullptr) options_.abort->Attach(multi_);
}

CurlTransport::~CurlTransport() {
  if (options_.abort != nullptr) options_.abort->Detach(multi_);
  curl_easy_cleanup(static_cast<CURL*>(curl_));
  curl_multi_cleanup(static_cast<CURLM*>(multi_));  // Closes the cached connections.
}

HttpResponse CurlTransport::Send(const HttpRequest& request) {
  HttpResponse response;
  const auto aborted = [&] {
    response.status = 0;
    response.aborted = true;
    response.transport_error = "aborted: the process is stopping";
    return response;
  };
  if (options_.abort != nullptr && options_.abort->triggered()) return aborted();
  CURL* curl = static_cast<CURL*>(curl_);
  CURLM* multi = static_cast<CURLM*>(multi_);
  curl_easy_reset(curl);  // The connections stay in the multi handle's cache.
  Received received{&response.body, &response.headers, options_.response_bytes_max};
  const std::string url = FullUrl(request);
  curl_slist* headers = nullptr;
  for (const auto& [name, value] : request.headers) {
    headers = curl_slist_append(headers, (name + ": " + value).c_str());
  }
  headers = curl_slist_append(headers, "Expect:");  // No 100-continue round trip.
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, request.method.c_str());
  if (request.method != "GET") {
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, request.body.data());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE,
                     static_cast<curl_off_t>(request.body.size()));
  }
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(options_.connect_timeout_ms));
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(options_.total_timeout_ms));
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, OnBody);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &received);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, OnHeader);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &received);
  // curl_easy_perform's loop, on a multi handle an AbortSignal can wake from its poll.
  curl_multi_add_handle(multi, curl);
  std::optional<CURLcode> code;
  std::string failure;
  bool abort = false;
  while (!code && failure.empty() && !abort) {
    int running = 0;
    CURLMcode step = curl_multi_perform(multi, &running);
    int queued = 0;
    while (CURLMsg* message = curl_multi_info_read(multi, &queued)) {
      if (message->msg == CURLMSG_DONE) code = message->data.result;
    }
    if (code) break;
    abort = options_.abort != nullptr && options_.abort->triggered();
    if (step == CURLM_OK && running == 0) failure = "the transfer ended without a result";
    if (step == CURLM_OK && running > 0 && !abort) {
      step = curl_multi_poll(multi, nullptr, 0, kPollMillis, nullptr);
    }
    if (step != CURLM_OK) failure = curl_multi_strerror(step);
  }
  curl_multi_remove_handle(multi, curl);  // Mid-transfer, this closes the connection.
  curl_slist_free_all(headers);
  if (abort && !code) return aborted();
  if (!code || *code != CURLE_OK) {
    response.status = 0;
    response.transport_error = code ? curl_easy_strerror(*code) : failure;
    return response;
  }
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &response.status);
  return response;
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

ClientHooks RealHooks() {
  auto engine = std::make_shared<std::mt19937_64>(std::random_device{}());
  return ClientHooks{
      .now =
          [] {
            return Nanos{std::chrono::duration_cast<std::chrono::nanoseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count()};
          },
      .sleep = [](Nanos d) { std::this_thread::sleep_for(std::chrono::nanoseconds(d.value)); },
      .jitter = [engine] { return std::uniform_real_distribution<double>(0.0, 1.0)(*engine); },
  };
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
      hooks_(std::move(hooks)) {
  assert(options_.attempts_max >= 1);
  assert(hooks_.now && hooks_.sleep && hooks_.jitter);
}

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

Nanos AwsClient::Backoff(std::int32_t attempt) const {
  // Full jitter: uniform in [0, min(max, base * 2^attempt)).
  const double ceiling = std::min<double>(
      static_cast<double>(options_.backoff_max.value),
      static_cast<double>(options_.backoff_base.value) * std::ldexp(1.0, std::min(attempt, 30)));
  const double jitter = std::clamp(hooks_.jitter(), 0.0, 1.0);
  return Nanos{static_cast<std::int64_t>(ceiling * jitter)};
}

Result<std::string> AwsClient::Perform(const std::string& service, const std::string& operation,
                                       HttpRequest request) {
  AwsError last;
  bool refreshed = false;
  for (std::int32_t attempt = 0; attempt < options_.attempts_max; ++attempt) {
    const Nanos now = hooks_.now();
    HttpRequest signed_request = request;
    if (credentials_ != nullptr) {
      Result<Credentials> credentials = credentials_->Get(now);
      if (!credentials.ok()) return Result<std::string>::Fail(credentials.error);
      Sign(signed_request, *credentials.value, SigningScope{SigningRegion(service), service}, now);
    }
    ++attempts_made_;
    const HttpResponse response = transport_.Send(signed_request);
    if (response.aborted) {
      spdlog::debug("aws {} {}: {}", service, operation, response.transport_error);
      return Result<std::string>::Fail(
          AwsError{ErrorCode::kTransient, "Aborted", response.transport_error, 0});
    }
    if (response.status >= 200 && response.status < 300) {
      spdlog::debug("aws {} {}: HTTP {} ({} bytes, attempt {})", service, operation,
                    response.status, response.body.size(), attempt + 1);
      return Result<std::string>::Ok(response.body);
    }
    last = ParseError(response);
    // Expired temporary credentials are fetched again once; that attempt counts like any other.
    const bool expired = last.aws_code == "ExpiredToken" ||
                         last.aws_code == "ExpiredTokenException" ||
                         last.aws_code == "RequestExpired";
    if (expired && !refreshed && credentials_ != nullptr && attempt + 1 < options_.attempts_max) {
      credentials_->Invalidate();
      refreshed = true;
      continue;
    }
    spdlog::debug("aws {} {}: HTTP {} {} ({}), attempt {}", service, operation, last.http_status,
                  last.aws_code, Excerpt(last.message), attempt + 1);
    if (!Retryable(last) || attempt + 1 == options_.attempts_max) break;
    hooks_.sleep(Backoff(attempt));
  }
  spdlog::warn("aws {} {} failed: {} ({})", service, operation, last.aws_code,
               Excerpt(last.message));
  return Result<std::string>::Fail(last);
}

}  // namespace tenon::aws
