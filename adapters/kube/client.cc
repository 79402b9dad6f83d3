#include "adapters/kube/client.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <yaml-cpp/yaml.h>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "adapters/http/wall_clock.h"
#include "adapters/kube/objects.h"

extern char** environ;

namespace tenon::kube {
namespace {

using Clock = std::chrono::steady_clock;

constexpr auto kTokenFileReread = std::chrono::minutes(1);  // As client-go's cached token source.
constexpr auto kExecRefreshMargin = std::chrono::seconds(30);
constexpr auto kExecTimeout = std::chrono::seconds(30);
constexpr std::size_t kExecOutputMax = 1 << 20;
constexpr std::size_t kDescribeExcerptMax = 200;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError("cannot read " + path + ": " + std::strerror(errno));
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

std::string Trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  std::size_t i = 0;
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  return s.substr(i);
}

std::string Base64Decode(const std::string& text, const std::string& what) {
  std::string clean;
  for (char c : text) {
    if (!std::isspace(static_cast<unsigned char>(c))) clean.push_back(c);
  }
  if (clean.size() % 4 != 0) throw ConfigError(what + ": not base64");
  std::string out(clean.size() / 4 * 3, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(clean.data()),
                                static_cast<int>(clean.size()));
  if (n < 0) throw ConfigError(what + ": not base64");
  std::size_t pad = 0;
  if (!clean.empty() && clean.back() == '=') ++pad;
  if (clean.size() > 1 && clean[clean.size() - 2] == '=') ++pad;
  out.resize(static_cast<std::size_t>(n) - pad);
  return out;
}

// Runs an exec credential plugin with KUBERNETES_EXEC_INFO set and returns what it printed.
std::string RunPlugin(const ExecPlugin& plugin) {
  int out_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) throw ConfigError("exec plugin: pipe failed");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], STDOUT_FILENO);
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) env_strings.emplace_back(*e);
  nlohmann::json info = {{"apiVersion", plugin.api_version},
                         {"kind", "ExecCredential"},
                         {"spec", {{"interactive", false}}}};
  env_strings.push_back("KUBERNETES_EXEC_INFO=" + info.dump());
  for (const auto& [k, v] : plugin.env) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_strings{plugin.command};
  argv_strings.insert(argv_strings.end(), plugin.args.begin(), plugin.args.end());
  std::vector<char*> argv;
  for (auto& s : argv_strings) argv.push_back(s.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int spawned =
      posix_spawnp(&pid, plugin.command.c_str(), &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  close(out_pipe[1]);
  if (spawned != 0) {
    close(out_pipe[0]);
    throw ConfigError("exec plugin " + plugin.command + ": " + std::strerror(spawned));
  }
  std::string output;
  const auto deadline = Clock::now() + kExecTimeout;
  char buffer[4096];
  while (output.size() < kExecOutputMax) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) break;
    pollfd pfd{out_pipe[0], POLLIN, 0};
    if (poll(&pfd, 1, static_cast<int>(left.count())) <= 0) break;
    const ssize_t n = read(out_pipe[0], buffer, sizeof buffer);
    if (n <= 0) break;
    output.append(buffer, static_cast<std::size_t>(n));
  }
  close(out_pipe[0]);
  int status = 0;
  if (Clock::now() >= deadline) kill(pid, SIGKILL);
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    throw ConfigError("exec plugin " + plugin.command + " failed (status " +
                      std::to_string(status) + ")");
  }
  return output;
}

std::string ResolvePath(const std::string& path, const std::filesystem::path& base) {
  if (path.empty() || std::filesystem::path(path).is_absolute()) return path;
  return (base / path).string();
}

std::string Str(const YAML::Node& node, const char* key) {
  return node && node[key] ? node[key].as<std::string>() : std::string();
}

YAML::Node Named(const YAML::Node& list, const std::string& name, const char* what) {
  if (list && list.IsSequence()) {
    for (const auto& item : list) {
      if (Str(item, "name") == name) return item;
    }
  }
  throw ConfigError(std::string("kubeconfig: no ") + what + " named '" + name + "'");
}

}  // namespace

std::string CaBundle(const ClusterConfig& config) {
  if (!config.ca_data.empty()) return config.ca_data;
  if (config.ca_file.empty()) return "";
  std::ifstream in(config.ca_file);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

ClusterConfig InClusterConfig(const std::string& account_dir) {
  const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
  const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
  if (host == nullptr || port == nullptr || *host == '\0' || *port == '\0') {
    throw ConfigError("not in a cluster: KUBERNETES_SERVICE_HOST/PORT are not set");
  }
  ClusterConfig config;
  std::string h = host;
  if (h.find(':') != std::string::npos) h = "[" + h + "]";  // IPv6
  config.server = "https://" + h + ":" + port;
  config.token_file = account_dir + "/token";
  config.ca_file = account_dir + "/ca.crt";
  if (!std::filesystem::exists(config.token_file)) {
    throw ConfigError("in-cluster: no service-account token at " + config.token_file);
  }
  return config;
}

ClusterConfig LoadKubeconfig(const std::string& path, const std::string& context) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::Exception& e) {
    throw ConfigError("kubeconfig " + path + ": " + e.what());
  }
  const std::filesystem::path base = std::filesystem::path(path).parent_path();
  const std::string name = context.empty() ? Str(root, "current-context") : context;
  if (name.empty()) throw ConfigError("kubeconfig " + path + ": no current-context");
  const YAML::Node ctx = Named(root["contexts"], name, "context")["context"];
  const YAML::Node cluster = Named(root["clusters"], Str(ctx, "cluster"), "cluster")["cluster"];
  ClusterConfig config;
  config.server = Str(cluster, "server");
  if (config.server.empty()) throw ConfigError("kubeconfig: cluster has no server");
  config.ca_file = ResolvePath(Str(cluster, "certificate-authority"), base);
  if (cluster["certificate-authority-data"]) {
    config.ca_data =
        Base64Decode(Str(cluster, "certificate-authority-data"), "certificate-authority-data");
  }
  config.insecure_skip_tls_verify =
      cluster["insecure-skip-tls-verify"] && cluster["insecure-skip-tls-verify"].as<bool>();
  const std::string user_name = Str(ctx, "user");
  if (user_name.empty()) return config;
  const YAML::Node user = Named(root["users"], user_name, "user")["user"];
  config.token = Str(user, "token");
  config.token_file = ResolvePath(Str(user, "tokenFile"), base);
  config.client_cert_file = ResolvePath(Str(user, "client-certificate"), base);
  config.client_key_file = ResolvePath(Str(user, "client-key"), base);
  if (user["client-certificate-data"]) {
    config.client_cert_data =
        Base64Decode(Str(user, "client-certificate-data"), "client-certificate-data");
  }
  if (user["client-key-data"]) {
    config.client_key_data = Base64Decode(Str(user, "client-key-data"), "client-key-data");
  }
  if (const YAML::Node exec = user["exec"]) {
    ExecPlugin plugin;
    plugin.command = Str(exec, "command");
    if (plugin.command.empty()) throw ConfigError("kubeconfig: exec without a command");
    if (plugin.command.find('/') != std::string::npos) {
      plugin.command = ResolvePath(plugin.command, base);
    }
    if (exec["apiVersion"]) plugin.api_version = Str(exec, "apiVersion");
    if (exec["args"]) plugin.args = exec["args"].as<std::vector<std::string>>();
    if (exec["env"] && exec["env"].IsSequence()) {
      for (const auto& e : exec["env"]) plugin.env.emplace_back(Str(e, "name"), Str(e, "value"));
    }
    config.exec = plugin;
  }
  return config;
}

ClusterConfig ResolveConfig(const std::string& kubeconfig, const std::string& context) {
  if (!kubeconfig.empty()) return LoadKubeconfig(kubeconfig, context);
  if (const char* env = std::getenv("KUBECONFIG"); env != nullptr && *env != '\0') {
    std::string first = env;
    first = first.substr(0, first.find(':'));
    return LoadKubeconfig(first, context);
  }
  if (const char* host = std::getenv("KUBERNETES_SERVICE_HOST"); host != nullptr && *host != '\0') {
    return InClusterConfig();
  }
  if (const char* home = std::getenv("HOME"); home != nullptr) {
    const std::string path = std::string(home) + "/.kube/config";
    if (std::filesystem::exists(path)) return LoadKubeconfig(path, context);
  }
  throw ConfigError(
      "no Kubernetes configuration: pass --kubeconfig, set KUBECONFIG, or run in a cluster");
}

RateLimiter::RateLimiter(double qps, int burst)
    : qps_(qps), burst_(std::max(1, burst)), tokens_(burst_), last_(Clock::now()) {}

void RateLimiter::Acquire() {
  std::chrono::duration<double> wait{0};
  {
    std::lock_guard lock(mu_);
    if (qps_ <= 0) return;  // Unlimited.
    const auto now = Clock::now();
    tokens_ = std::min(burst_, tokens_ + std::chrono::duration<double>(now - last_).count() * qps_);
    last_ = now;
    tokens_ -= 1;  // May go negative: later callers queue behind this one.
    if (tokens_ < 0) {
      wait = std::chrono::duration<double>(-tokens_ / qps_);
      ++waits_;
    }
  }
  if (wait.count() > 0) std::this_thread::sleep_for(wait);
}

std::int64_t RateLimiter::waits() const {
  std::lock_guard lock(mu_);
  return waits_;
}

Credentials::Credentials(const ClusterConfig& config) : config_(config) {}

void Credentials::Refresh() {
  const auto now = Clock::now();
  if (now < expires_) return;
  if (config_.exec) {
    const std::string output = RunPlugin(*config_.exec);
    const auto json = nlohmann::json::parse(output, nullptr, false);
    if (json.is_discarded() || !json.contains("status") || !json["status"].is_object()) {
      throw ConfigError("exec plugin " + config_.exec->command +
                        ": output is not an ExecCredential");
    }
    const auto& status = json["status"];
    token_ = status.value("token", std::string());
    cert_ = status.value("clientCertificateData", std::string());
    key_ = status.value("clientKeyData", std::string());
    if (token_.empty() && cert_.empty()) {
      throw ConfigError("exec plugin " + config_.exec->command + ": no token or certificate");
    }
    expires_ = now + std::chrono::hours(1);
    if (status.contains("expirationTimestamp") && status["expirationTimestamp"].is_string()) {
      const auto expiry = ParseTimestamp(status["expirationTimestamp"].get<std::string>());
      const auto left = std::chrono::nanoseconds((expiry - WallClock()).value) - kExecRefreshMargin;
      expires_ = now + std::chrono::duration_cast<Clock::duration>(left);
    }
  } else if (!config_.token_file.empty()) {
    token_ = Trim(ReadFile(config_.token_file));
    expires_ = now + kTokenFileReread;
  } else {
    token_ = config_.token;
    expires_ = Clock::time_point::max();
  }
}

std::string Credentials::Header() {
  std::lock_guard lock(mu_);
  Refresh();
  return token_.empty() ? std::string() : "Bearer " + token_;
}

std::pair<std::string, std::string> Credentials::ExecCertificate() {
  std::lock_guard lock(mu_);
  Refresh();
  return {cert_, key_};
}

void Credentials::Invalidate() {
  std::lock_guard lock(mu_);
  expires_ = {};
}

std::string Describe(const Response& response) {
  if (response.status == 0) return "no answer: " + response.transport_error;
  const auto json = nlohmann::json::parse(response.body, nullptr, false);
  std::string out = "HTTP " + std::to_string(response.status);
  if (json.is_object() && json.value("kind", std::string()) == "Status") {
    out += " " + json.value("reason", std::string()) + ": " + json.value("message", std::string());
    return out;
  }
  const std::string excerpt = http::Excerpt(response.body, kDescribeExcerptMax);
  return out + (excerpt.empty() ? "" : ": " + excerpt);
}

Client::Client(ClusterConfig config)
    : config_(std::move(config)),
      credentials_(config_),
      limiter_(config_.qps, config_.burst),
      retrier_(config_.retry, http::RealRetryHooks()) {}

Client::~Client() = default;

std::unique_ptr<http::Connection> Client::Borrow() {
  std::lock_guard lock(mu_);
  ++requests_;
  if (idle_.empty()) return std::make_unique<http::Connection>();
  auto connection = std::move(idle_.back());
  idle_.pop_back();
  return connection;
}

void Client::Return(std::unique_ptr<http::Connection> connection) {
  std::lock_guard lock(mu_);
  idle_.push_back(std::move(connection));
}

std::int64_t Client::requests() const {
  std::lock_guard lock(mu_);
  return requests_;
}

http::Request Client::Prepare(const std::string& method, const std::string& path,
                              const std::string& body, const std::string& content_type) {
  http::Request request{method, config_.server + path, {}, body};
  const std::string authorization = credentials_.Header();
  if (!authorization.empty()) request.headers.emplace_back("Authorization", authorization);
  request.headers.emplace_back("Accept", "application/json");
  request.headers.emplace_back("Content-Type", content_type);
  return request;
}

// TLS: verification stays on unless the kubeconfig says insecure-skip-tls-verify.
http::TlsOptions Client::Tls() {
  http::TlsOptions tls;
  tls.verify = !config_.insecure_skip_tls_verify;
  tls.ca_file = config_.ca_file;
  tls.ca_data = config_.ca_data;
  tls.client_cert_file = config_.client_cert_file;
  tls.client_key_file = config_.client_key_file;
  tls.client_cert_data = config_.client_cert_data;
  tls.client_key_data = config_.client_key_data;
  if (config_.exec && tls.client_cert_data.empty()) {
    std::tie(tls.client_cert_data, tls.client_key_data) = credentials_.ExecCertificate();
  }
  return tls;
}

http::Response Client::Send(const std::string& method, const std::string& path,
                            const std::string& body, const std::string& content_type,
                            http::Transfer& transfer) {
  limiter_.Acquire();
  auto connection = Borrow();
  http::Request request;
  try {
    request = Prepare(method, path, body, content_type);
    transfer.tls = Tls();
  } catch (const ConfigError& e) {  // An exec plugin or a token file that fails.
    Return(std::move(connection));
    http::Response failed;
    failed.failure = http::Failure::kOther;
    failed.transport_error = e.what();
    return failed;
  }
  transfer.user_agent = config_.user_agent;
  http::Response response = connection->Perform(request, transfer);
  Return(std::move(connection));
  return response;
}

Response Client::Request(const std::string& method, const std::string& path,
                         const std::string& body, const std::string& content_type) {
  const bool eviction = path.ends_with("/eviction");
  bool refreshed = false;
  const auto attempt = [&](Duration time_left) {
    http::Transfer transfer;
    transfer.timeout = http::AttemptTimeout(config_.request_timeout, time_left);
    return Send(method, path, body, content_type, transfer);
  };
  const auto judge = [&](const http::Response& response, std::int32_t) {
    if (response.status == 401 && !refreshed) {
      credentials_.Invalidate();  // A rotated token or an expired exec credential.
      refreshed = true;
      return http::Verdict::kRetryNow;
    }
    // An eviction's 429 (a budget allows no disruption now) and 500 (the pod is under more than
    // one budget) are the API server's answer, which the executor turns into "later"; asking
    // again at once would not change it.
    if (eviction && response.status != 0) return http::Verdict::kDone;
    return http::DefaultVerdict(response);
  };
  http::Response response = retrier_.Run(attempt, judge);
  return Response{response.status, std::move(response.body), std::move(response.transport_error)};
}

Response Client::Stream(const std::string& path,
                        const std::function<bool(std::string_view)>& on_line,
                        std::chrono::milliseconds timeout, const std::atomic<bool>* cancel) {
  std::string pending;  // The start of a line whose newline has not come yet.
  http::Transfer transfer;
  transfer.timeout = timeout;
  transfer.cancel = cancel;
  transfer.on_body = [&](std::string_view data) {
    pending.append(data);
    std::size_t start = 0;
    for (std::size_t nl; (nl = pending.find('\n', start)) != std::string::npos; start = nl + 1) {
      const std::string_view line(pending.data() + start, nl - start);
      if (line.empty()) continue;
      if (!on_line(line)) return false;  // Ends the transfer.
    }
    pending.erase(0, start);
    return true;
  };
  http::Response response = Send("GET", path, "", "application/json", transfer);
  if (response.status == 401) credentials_.Invalidate();
  return Response{response.status, std::move(response.body), std::move(response.transport_error)};
}

std::string QueryEscape(std::string_view value) {
  std::string out;
  constexpr char kHex[] = "0123456789ABCDEF";
  for (unsigned char c : value) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

}  // namespace tenon::kube
