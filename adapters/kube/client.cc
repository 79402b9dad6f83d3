#include "adapters/kube/client.h"

#include <curl/curl.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <yaml-cpp/yaml.h>
#include <cassert>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

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
      const auto wall = std::chrono::system_clock::now().time_since_epoch();
      const auto left = std::chrono::nanoseconds(expiry.value) - wall - kExecRefreshMargin;
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
  std::string excerpt;
  for (char c : response.body.substr(0, kDescribeExcerptMax)) {
    excerpt.push_back(std::isprint(static_cast<unsigned char>(c)) ? c : ' ');
  }
  return out + (excerpt.empty() ? "" : ": " + excerpt);
}

struct Client::Handle {
  CURL* curl = nullptr;
  curl_slist* headers = nullptr;
  std::string body;
  std::string line_buffer;
  const std::function<bool(std::string_view)>* on_line = nullptr;
  const std::atomic<bool>* cancel = nullptr;
  std::string request_body;
  char error[CURL_ERROR_SIZE] = {};  // libcurl's detail of a failure (TLS alerts, verification).
  Handle() : curl(curl_easy_init()) { assert(curl != nullptr); }
  ~Handle() {
    curl_slist_free_all(headers);
    curl_easy_cleanup(curl);
  }
};

namespace {

std::size_t OnBody(char* data, std::size_t size, std::size_t count, void* user) {
  auto* handle = static_cast<Client::Handle*>(user);
  const std::size_t n = size * count;
  long status = 0;
  curl_easy_getinfo(handle->curl, CURLINFO_RESPONSE_CODE, &status);
  if (handle->on_line == nullptr || status < 200 || status >= 300) {
    handle->body.append(data, n);  // Whole bodies, and a Status that answers a watch.
    return n;
  }
  handle->line_buffer.append(data, n);
  std::size_t start = 0;
  for (std::size_t nl; (nl = handle->line_buffer.find('\n', start)) != std::string::npos;
       start = nl + 1) {
    std::string_view line(handle->line_buffer.data() + start, nl - start);
    if (line.empty()) continue;
    if (!(*handle->on_line)(line)) return 0;  // Aborts the transfer.
  }
  handle->line_buffer.erase(0, start);
  return n;
}

int OnProgress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto* handle = static_cast<Client::Handle*>(user);
  return handle->cancel != nullptr && handle->cancel->load() ? 1 : 0;
}

}  // namespace

Client::Client(ClusterConfig config)
    : config_(std::move(config)), credentials_(config_), limiter_(config_.qps, config_.burst) {
  static const CURLcode global = curl_global_init(CURL_GLOBAL_DEFAULT);
  assert(global == CURLE_OK);
  (void)global;
}

Client::~Client() = default;

std::unique_ptr<Client::Handle> Client::Borrow() {
  std::lock_guard lock(mu_);
  ++requests_;
  if (idle_.empty()) return std::make_unique<Handle>();
  auto handle = std::move(idle_.back());
  idle_.pop_back();
  return handle;
}

void Client::Return(std::unique_ptr<Handle> handle) {
  std::lock_guard lock(mu_);
  idle_.push_back(std::move(handle));
}

std::int64_t Client::requests() const {
  std::lock_guard lock(mu_);
  return requests_;
}

void Client::Prepare(Handle& handle, const std::string& method, const std::string& path,
                     const std::string& content_type) {
  CURL* curl = handle.curl;
  curl_easy_reset(curl);  // Keeps the connection cache.
  curl_slist_free_all(handle.headers);
  handle.headers = nullptr;
  handle.body.clear();
  handle.line_buffer.clear();
  handle.on_line = nullptr;
  handle.cancel = nullptr;
  handle.error[0] = '\0';
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, handle.error);
  const std::string authorization = credentials_.Header();
  if (!authorization.empty()) {
    handle.headers = curl_slist_append(handle.headers, ("Authorization: " + authorization).c_str());
  }
  handle.headers = curl_slist_append(handle.headers, "Accept: application/json");
  handle.headers = curl_slist_append(handle.headers, ("Content-Type: " + content_type).c_str());
  handle.headers = curl_slist_append(handle.headers, "Expect:");
  curl_easy_setopt(curl, CURLOPT_URL, (config_.server + path).c_str());
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, handle.headers);
  curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method.c_str());
  curl_easy_setopt(curl, CURLOPT_USERAGENT, config_.user_agent.c_str());
  if (method != "GET") {
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, handle.request_body.data());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE,
                     static_cast<curl_off_t>(handle.request_body.size()));
  }
  curl_easy_setopt(curl, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_2TLS);  // h2 over TLS if offered.
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
  curl_easy_setopt(curl, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, OnBody);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &handle);
  // TLS: verification stays on unless the kubeconfig says insecure-skip-tls-verify.
  curl_easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, config_.insecure_skip_tls_verify ? 0L : 1L);
  curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, config_.insecure_skip_tls_verify ? 0L : 2L);
  if (!config_.ca_data.empty()) {
    curl_blob blob{config_.ca_data.data(), config_.ca_data.size(), CURL_BLOB_COPY};
    curl_easy_setopt(curl, CURLOPT_CAINFO_BLOB, &blob);
  } else if (!config_.ca_file.empty()) {
    curl_easy_setopt(curl, CURLOPT_CAINFO, config_.ca_file.c_str());
  }
  std::string cert = config_.client_cert_data;
  std::string key = config_.client_key_data;
  if (config_.exec && cert.empty()) std::tie(cert, key) = credentials_.ExecCertificate();
  if (!cert.empty()) {
    curl_blob cert_blob{cert.data(), cert.size(), CURL_BLOB_COPY};
    curl_blob key_blob{key.data(), key.size(), CURL_BLOB_COPY};
    curl_easy_setopt(curl, CURLOPT_SSLCERT_BLOB, &cert_blob);
    curl_easy_setopt(curl, CURLOPT_SSLCERTTYPE, "PEM");
    curl_easy_setopt(curl, CURLOPT_SSLKEY_BLOB, &key_blob);
    curl_easy_setopt(curl, CURLOPT_SSLKEYTYPE, "PEM");
  } else if (!config_.client_cert_file.empty()) {
    curl_easy_setopt(curl, CURLOPT_SSLCERT, config_.client_cert_file.c_str());
    curl_easy_setopt(curl, CURLOPT_SSLKEY, config_.client_key_file.c_str());
  }
}

Response Client::Perform(Handle& handle) {
  Response response;
  const CURLcode code = curl_easy_perform(handle.curl);
  if (code == CURLE_OK || code == CURLE_WRITE_ERROR) {
    curl_easy_getinfo(handle.curl, CURLINFO_RESPONSE_CODE, &response.status);
  }
  if (code != CURLE_OK) {
    response.transport_error = curl_easy_strerror(code);
    if (handle.error[0] != '\0') response.transport_error += std::string(": ") + handle.error;
    if (code != CURLE_WRITE_ERROR) response.status = 0;
  }
  response.body = std::move(handle.body);
  return response;
}

Response Client::Request(const std::string& method, const std::string& path,
                         const std::string& body, const std::string& content_type) {
  Response response;
  for (int attempt = 0; attempt < 2; ++attempt) {
    limiter_.Acquire();
    auto handle = Borrow();
    handle->request_body = body;
    try {
      Prepare(*handle, method, path, content_type);
    } catch (const ConfigError& e) {
      Return(std::move(handle));
      return Response{0, "", e.what()};
    }
    curl_easy_setopt(handle->curl, CURLOPT_TIMEOUT_MS,
                     static_cast<long>(config_.request_timeout.count()));
    response = Perform(*handle);
    Return(std::move(handle));
    if (response.status != 401) break;
    credentials_.Invalidate();  // A rotated token or an expired exec credential.
  }
  return response;
}

Response Client::Stream(const std::string& path,
                        const std::function<bool(std::string_view)>& on_line,
                        std::chrono::milliseconds timeout, const std::atomic<bool>* cancel) {
  limiter_.Acquire();
  auto handle = Borrow();
  handle->request_body.clear();
  try {
    Prepare(*handle, "GET", path, "application/json");
  } catch (const ConfigError& e) {
    Return(std::move(handle));
    return Response{0, "", e.what()};
  }
  handle->on_line = &on_line;
  handle->cancel = cancel;
  curl_easy_setopt(handle->curl, CURLOPT_TIMEOUT_MS, static_cast<long>(timeout.count()));
  curl_easy_setopt(handle->curl, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(handle->curl, CURLOPT_XFERINFOFUNCTION, OnProgress);
  curl_easy_setopt(handle->curl, CURLOPT_XFERINFODATA, handle.get());
  Response response = Perform(*handle);
  if (response.status == 401) credentials_.Invalidate();
  handle->on_line = nullptr;
  handle->cancel = nullptr;
  Return(std::move(handle));
  return response;
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
