// The Kubernetes API client: where to connect and how to authenticate (in-cluster service
// account, kubeconfig with tokens, client certificates or exec credential plugins), and
// client-side QPS/burst limits as client-go has them. Requests go through the shared HTTP layer
// (adapters/http): its libcurl connection (TLS verification on, HTTP/2 where offered) and its
// retry policy. Thread-safe: every request borrows a connection of its own, so informers stream
// watches on their threads while writers call from the controller's loop.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "adapters/http/client.h"
#include "adapters/http/retry.h"

namespace tenon::kube {

class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// users[].user.exec of a kubeconfig: a command that prints an ExecCredential, such as
// `aws eks get-token --cluster-name C`.
struct ExecPlugin {
  std::string command;
  std::vector<std::string> args;
  std::vector<std::pair<std::string, std::string>> env;
  std::string api_version = "client.authentication.k8s.io/v1beta1";
};

struct ClusterConfig {
  std::string server;  // https://host:port (http:// only for loopback test servers)
  std::string ca_file;
  std::string ca_data;  // PEM
  bool insecure_skip_tls_verify = false;
  std::string token;
  std::string token_file;  // Re-read as it rotates (bound service-account tokens).
  std::string client_cert_file;
  std::string client_key_file;
  std::string client_cert_data;  // PEM
  std::string client_key_data;   // PEM
  std::optional<ExecPlugin> exec;
  std::string user_agent = "tenon";
  double qps = 200;  // KUBE_CLIENT_QPS
  int burst = 300;   // KUBE_CLIENT_BURST
  // One attempt's timeout; the retry policy bounds all attempts of a request together.
  std::chrono::milliseconds request_timeout = http::kRequestTimeout;
  http::RetryPolicy retry;
};

inline constexpr char kServiceAccountDir[] = "/var/run/secrets/kubernetes.io/serviceaccount";

// KUBERNETES_SERVICE_HOST/PORT, the service account's token (re-read) and CA bundle.
ClusterConfig InClusterConfig(const std::string& account_dir = kServiceAccountDir);
// A kubeconfig file: the named context, or current-context. Relative file paths are taken
// from the kubeconfig's directory, as kubectl does.
ClusterConfig LoadKubeconfig(const std::string& path, const std::string& context = "");
// The cluster's CA bundle (PEM) as the config names it; empty when it names none.
std::string CaBundle(const ClusterConfig& config);
// The first that applies: `kubeconfig` if given, $KUBECONFIG, in-cluster, ~/.kube/config.
ClusterConfig ResolveConfig(const std::string& kubeconfig, const std::string& context = "");

// A token bucket: `burst` requests at once, refilled at `qps` per second. Thread-safe.
class RateLimiter {
 public:
  RateLimiter(double qps, int burst);
  void Acquire();
  std::int64_t waits() const;  // Requests that had to wait.

 private:
  mutable std::mutex mu_;
  double qps_;
  double burst_;
  double tokens_;
  std::chrono::steady_clock::time_point last_;
  std::int64_t waits_ = 0;
};

// The Authorization header, kept fresh: a token file is re-read every minute, an exec
// credential is cached until it expires; Invalidate() after a 401 forces a reload.
class Credentials {
 public:
  explicit Credentials(const ClusterConfig& config);
  std::string Header();  // "Bearer ..." or "" (client certificates only).
  // Client certificate and key from an exec plugin, when it returns them.
  std::pair<std::string, std::string> ExecCertificate();
  void Invalidate();

 private:
  void Refresh();
  std::mutex mu_;
  ClusterConfig config_;
  std::string token_;
  std::string cert_;
  std::string key_;
  std::chrono::steady_clock::time_point expires_{};
};

struct Response {
  long status = 0;  // 0: no HTTP answer; see transport_error.
  std::string body;
  std::string transport_error;
  bool ok() const { return status >= 200 && status < 300; }
};

// The reason and message of a metav1.Status body, or an excerpt of whatever came back.
std::string Describe(const Response& response);

class Client {
 public:
  explicit Client(ClusterConfig config);
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // One request; never throws. Retried as the shared policy says (connection errors, timeouts,
  // 429, 5xx), except an eviction's 429 and 5xx, which are the PodDisruptionBudgets' answer. A
  // 401 reloads the credentials and tries once more at once.
  Response Request(const std::string& method, const std::string& path, const std::string& body = "",
                   const std::string& content_type = "application/json");

  // A watch (or any streamed GET): `on_line` gets each newline-terminated JSON object as it
  // arrives and returns false to stop. Returns when the stream ends, breaks, times out after
  // `timeout`, `on_line` stops it or `cancel` becomes true (checked at least once a second);
  // the status tells which (0 with transport_error: broken or cancelled). One attempt, never
  // retried here: the informer resumes or relists, as only it knows the resourceVersion. No idle
  // timeout: a quiet resource may send nothing for minutes, and TCP keepalive notices a dead
  // peer.
  Response Stream(const std::string& path, const std::function<bool(std::string_view)>& on_line,
                  std::chrono::milliseconds timeout, const std::atomic<bool>* cancel = nullptr);

  const ClusterConfig& config() const { return config_; }
  std::int64_t requests() const;

 private:
  // One attempt: waits for the rate limiter, borrows a connection and sends.
  http::Response Send(const std::string& method, const std::string& path, const std::string& body,
                      const std::string& content_type, http::Transfer& transfer);
  std::unique_ptr<http::Connection> Borrow();
  void Return(std::unique_ptr<http::Connection> connection);
  http::Request Prepare(const std::string& method, const std::string& path, const std::string& body,
                        const std::string& content_type);
  http::TlsOptions Tls();

  ClusterConfig config_;
  Credentials credentials_;
  RateLimiter limiter_;
  http::Retrier retrier_;
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<http::Connection>> idle_;
  std::int64_t requests_ = 0;
};

// Percent-encodes a query value (label selectors, continue tokens).
std::string QueryEscape(std::string_view value);

}  // namespace tenon::kube
