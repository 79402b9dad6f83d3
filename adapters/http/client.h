// The one HTTP client under the AWS and Kubernetes adapters: a libcurl connection that carries
// one request at a time, with its TLS options and timeouts, and reports why a request got no
// answer in a form the retry policy (retry.h) can judge. What a request means (signing, tokens,
// which answers to try again) stays with the adapter that sends it.
//
// A Connection keeps its easy handle and a multi handle across requests, so keep-alive
// connections are reused; the multi handle lets an AbortSignal, or a cancel flag, end a request
// that waits for its answer. A Connection is not thread-safe: a thread that sends owns one (the
// AWS adapters own one per AwsConnection, the Kubernetes client lends them from a pool).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tenon::http {

using Headers = std::vector<std::pair<std::string, std::string>>;

struct Request {
  std::string method = "GET";
  std::string url;  // scheme://host[:port]/path?query, already encoded.
  Headers headers;
  std::string body;  // Sent for every method but GET.
};

// Why a request got no HTTP answer. The retry policy repeats only the first three.
enum class Failure : std::uint8_t {
  kNone,        // An HTTP answer, whatever its status.
  kConnect,     // The host could not be resolved or connected to.
  kConnection,  // The connection broke: reset, closed early, a failed send or receive.
  kTimeout,     // The connect timeout or the request's own timeout passed.
  kTls,         // The TLS handshake failed or a certificate was refused.
  kAborted,     // An AbortSignal or the request's cancel flag ended it.
  kStopped,     // The caller's body sink asked to stop (the status is kept).
  kOther,       // Anything else: a local error, an answer over the size limit.
};

struct Response {
  long status = 0;  // 0: no HTTP answer (see failure and transport_error).
  std::string body;
  std::map<std::string, std::string> headers;  // Lower-case names.
  std::string transport_error;                 // libcurl's reason and its detail.
  bool aborted = false;                        // Ended, or never sent, by an abort or a cancel.
  Failure failure = Failure::kNone;
  bool ok() const { return status >= 200 && status < 300; }
};

// Ends the requests in flight on every Connection given it, at once, and fails every later one
// without sending it: a stopping process need not wait out an SQS long poll. Trigger is
// thread-safe and cannot be undone. Must outlive the connections that use it.
class AbortSignal {
 public:
  AbortSignal() = default;
  AbortSignal(const AbortSignal&) = delete;
  AbortSignal& operator=(const AbortSignal&) = delete;
  void Trigger();
  bool triggered() const { return triggered_.load(); }

 private:
  friend class Connection;
  void Attach(void* multi);
  void Detach(void* multi);
  std::mutex mu_;  // Guards multis_ and orders Trigger's wake-ups with Detach.
  std::set<void*> multis_;
  std::atomic<bool> triggered_{false};
};

// Verification is on unless a kubeconfig says insecure-skip-tls-verify. Without a CA, the
// system's bundle verifies the server. PEM data wins over a file of the same thing.
struct TlsOptions {
  bool verify = true;
  std::string ca_file;
  std::string ca_data;
  std::string client_cert_file;
  std::string client_key_file;
  std::string client_cert_data;
  std::string client_key_data;
};

// The connect timeout both adapters use: long enough for a TCP connect and a TLS handshake with
// a loaded API server or a VPC endpoint in another zone, short enough that a dead endpoint is
// tried again well within a request's deadline.
inline constexpr std::chrono::milliseconds kConnectTimeout{5'000};
// A request's own timeout: the longest one attempt may take, answer included.
inline constexpr std::chrono::milliseconds kRequestTimeout{30'000};

// How one request is carried.
struct Transfer {
  std::chrono::milliseconds connect_timeout = kConnectTimeout;
  std::chrono::milliseconds timeout = kRequestTimeout;  // Zero: none (only cancel ends it).
  std::int64_t response_bytes_max = 0;                  // Zero: no limit.
  std::string user_agent;                               // Empty: no User-Agent header.
  TlsOptions tls;
  // Checked at least once a second; when it reads true the request ends, `aborted`.
  const std::atomic<bool>* cancel = nullptr;
  // Set: the body of a 2xx answer goes here as it arrives instead of into Response::body (a
  // watch); returning false ends the request (Failure::kStopped). Other answers' bodies, such
  // as a Status that refuses a watch, are collected in Response::body as usual.
  std::function<bool(std::string_view)> on_body;
};

class Connection {
 public:
  explicit Connection(AbortSignal* abort = nullptr);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Sends one request and waits for its whole answer; never throws, never retries.
  Response Perform(const Request& request, const Transfer& transfer);

 private:
  AbortSignal* abort_;
  void* curl_;
  void* multi_;
};

// A printable excerpt of at most `bytes_max` bytes, on one line: what an HTML error page says,
// without flooding a log.
std::string Excerpt(std::string_view body, std::size_t bytes_max);

}  // namespace tenon::http
