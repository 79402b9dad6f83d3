// The test Kubernetes API server (tests/kube/apiserver.py) as a child process on loopback, and a
// tiny libcurl client for tests: plain requests on one keep-alive connection, and watch streams
// read line by line on a thread of their own. Test-only; the kube adapter has its own client.
#pragma once

#include <curl/curl.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/child_process.h"

namespace tenon::kube::testing {

using nlohmann::json;

inline constexpr char kToken[] = "tenon-test-token";
inline constexpr int kStartupPollsMax = 200;  // x 50 ms = 10 s.

struct Response {
  long status = 0;  // 0: no answer.
  std::string body;
  long connects = 0;  // New connections this request opened (0 when kept alive).
  json Json() const { return json::parse(body); }
};

inline size_t AppendTo(char* data, size_t size, size_t count, void* out) {
  static_cast<std::string*>(out)->append(data, size * count);
  return size * count;
}

// One easy handle, so consecutive requests reuse the connection.
class Client {
 public:
  explicit Client(int port, std::string token = kToken)
      : base_("http://127.0.0.1:" + std::to_string(port)), token_(std::move(token)) {
    curl_ = curl_easy_init();
    if (curl_ == nullptr) throw std::runtime_error("curl_easy_init");
  }
  ~Client() { curl_easy_cleanup(curl_); }
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  Response Send(const std::string& method, const std::string& path, const std::string& body = "",
                const std::string& content_type = "application/json") {
    Response response;
    curl_slist* headers = nullptr;
    if (!token_.empty())
      headers = curl_slist_append(headers, ("Authorization: Bearer " + token_).c_str());
    headers = curl_slist_append(headers, ("Content-Type: " + content_type).c_str());
    headers = curl_slist_append(headers, "Accept: application/json");
    curl_easy_reset(curl_);
    curl_easy_setopt(curl_, CURLOPT_URL, (base_ + path).c_str());
    curl_easy_setopt(curl_, CURLOPT_CUSTOMREQUEST, method.c_str());
    curl_easy_setopt(curl_, CURLOPT_HTTPHEADER, headers);
    if (!user_agent_.empty()) curl_easy_setopt(curl_, CURLOPT_USERAGENT, user_agent_.c_str());
    if (!body.empty() || method == "POST" || method == "PUT" || method == "PATCH") {
      curl_easy_setopt(curl_, CURLOPT_POSTFIELDS, body.c_str());
      curl_easy_setopt(curl_, CURLOPT_POSTFIELDSIZE, static_cast<long>(body.size()));
    }
    curl_easy_setopt(curl_, CURLOPT_WRITEFUNCTION, AppendTo);
    curl_easy_setopt(curl_, CURLOPT_WRITEDATA, &response.body);
    curl_easy_setopt(curl_, CURLOPT_TIMEOUT_MS, 5000L);
    curl_easy_setopt(curl_, CURLOPT_CONNECTTIMEOUT_MS, 500L);
    if (curl_easy_perform(curl_) == CURLE_OK) {
      curl_easy_getinfo(curl_, CURLINFO_RESPONSE_CODE, &response.status);
      curl_easy_getinfo(curl_, CURLINFO_NUM_CONNECTS, &response.connects);
    }
    curl_slist_free_all(headers);
    return response;
  }
  // Sent as User-Agent from the next request on; empty sends none.
  void set_user_agent(std::string user_agent) { user_agent_ = std::move(user_agent); }
  Response Get(const std::string& path) { return Send("GET", path); }
  Response Post(const std::string& path, const json& body) {
    return Send("POST", path, body.dump());
  }
  Response Put(const std::string& path, const json& body) { return Send("PUT", path, body.dump()); }
  Response MergePatch(const std::string& path, const json& patch) {
    return Send("PATCH", path, patch.dump(), "application/merge-patch+json");
  }
  Response Delete(const std::string& path) { return Send("DELETE", path); }

 private:
  std::string base_;
  std::string token_;
  std::string user_agent_;
  CURL* curl_ = nullptr;
};

// A watch request streaming on its own thread; Next() hands out one decoded event at a time.
class Watch {
 public:
  Watch(int port, const std::string& path) {
    curl_ = curl_easy_init();
    headers_ = curl_slist_append(nullptr, (std::string("Authorization: Bearer ") + kToken).c_str());
    curl_easy_setopt(curl_, CURLOPT_URL,
                     ("http://127.0.0.1:" + std::to_string(port) + path).c_str());
    curl_easy_setopt(curl_, CURLOPT_HTTPHEADER, headers_);
    curl_easy_setopt(curl_, CURLOPT_WRITEFUNCTION, OnData);
    curl_easy_setopt(curl_, CURLOPT_WRITEDATA, this);
    multi_ = curl_multi_init();
    curl_multi_add_handle(multi_, curl_);
    thread_ = std::thread([this] { Run(); });
  }
  ~Watch() {
    stop_ = true;
    curl_multi_wakeup(multi_);
    thread_.join();
    curl_multi_remove_handle(multi_, curl_);
    curl_easy_cleanup(curl_);
    curl_multi_cleanup(multi_);
    curl_slist_free_all(headers_);
  }
  Watch(const Watch&) = delete;
  Watch& operator=(const Watch&) = delete;

  // The next event, or nullopt when none arrives within `timeout` or the stream has ended.
  std::optional<json> Next(std::chrono::milliseconds timeout = std::chrono::milliseconds(3000)) {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, timeout, [this] { return !events_.empty() || done_; });
    if (events_.empty()) return std::nullopt;
    json event = std::move(events_.front());
    events_.pop_front();
    return event;
  }
  // The next event that is not a BOOKMARK.
  std::optional<json> NextChange() {
    for (int i = 0; i < 100; ++i) {
      std::optional<json> event = Next();
      if (!event || (*event)["type"] != "BOOKMARK") return event;
    }
    return std::nullopt;
  }
  // True once the stream has ended; `result` says how (CURLE_OK: a clean end).
  bool Ended(std::chrono::milliseconds timeout, CURLcode* result = nullptr) {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, timeout, [this] { return done_; });
    if (result != nullptr) *result = result_;
    return done_;
  }
  long status() {
    long code = 0;
    curl_easy_getinfo(curl_, CURLINFO_RESPONSE_CODE, &code);
    return code;
  }

 private:
  static size_t OnData(char* data, size_t size, size_t count, void* self_ptr) {
    auto* self = static_cast<Watch*>(self_ptr);
    self->partial_.append(data, size * count);
    size_t newline;
    while ((newline = self->partial_.find('\n')) != std::string::npos) {
      std::string line = self->partial_.substr(0, newline);
      self->partial_.erase(0, newline + 1);
      if (line.empty()) continue;
      std::lock_guard lock(self->mu_);
      self->events_.push_back(json::parse(line));
      self->cv_.notify_all();
    }
    return size * count;
  }
  void Run() {
    int running = 1;
    while (running > 0 && !stop_) {
      curl_multi_perform(multi_, &running);
      if (running > 0) curl_multi_poll(multi_, nullptr, 0, 100, nullptr);
    }
    CURLcode result = CURLE_ABORTED_BY_CALLBACK;
    int queued = 0;
    while (CURLMsg* msg = curl_multi_info_read(multi_, &queued)) {
      if (msg->msg == CURLMSG_DONE) result = msg->data.result;
    }
    std::lock_guard lock(mu_);
    result_ = result;
    done_ = true;
    cv_.notify_all();
  }

  CURL* curl_ = nullptr;
  CURLM* multi_ = nullptr;
  curl_slist* headers_ = nullptr;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::string partial_;  // Only touched on the thread.
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<json> events_;
  bool done_ = false;
  CURLcode result_ = CURLE_OK;
};

// apiserver.py's HTTPS flags: the server's PEM certificate (--tls-cert) and private key
// (--tls-key) and, when set, the CA a client certificate must be signed by (--client-ca: the
// handshake then requires one). All empty: plain HTTP.
struct TlsFiles {
  std::string cert_file;
  std::string key_file;
  std::string client_ca_file;
};

// tests/kube/apiserver.py on 127.0.0.1; it binds a free port itself and prints it. Started as its
// own process group and killed (SIGTERM, then SIGKILL) at destruction.
class ApiServer {
 public:
  // `history`: the events kept for watches; older resourceVersions answer 410.
  explicit ApiServer(int bookmark_ms = 200, int history = 100000)
      : child_(Argv(bookmark_ms, history, {}), {}, true, false) {
    Client probe(child_.port());
    for (int i = 0; i < kStartupPollsMax; ++i) {
      if (probe.Get("/readyz").status == 200) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    throw std::runtime_error("the test API server never answered");
  }
  // HTTPS. No plain /readyz probe: the server prints its port once it listens with its
  // certificate loaded, so connections made from then on wait in the backlog until it serves.
  explicit ApiServer(const TlsFiles& tls, int bookmark_ms = 200, int history = 100000)
      : child_(Argv(bookmark_ms, history, tls), {}, true, false) {}
  int port() const { return child_.port(); }

 private:
  static std::vector<std::string> Argv(int bookmark_ms, int history, const TlsFiles& tls) {
    std::vector<std::string> argv{"/usr/bin/env",
                                  "python3",
                                  TENON_KUBE_APISERVER,
                                  "--token",
                                  kToken,
                                  "--bookmark-ms",
                                  std::to_string(bookmark_ms),
                                  "--history",
                                  std::to_string(history)};
    if (!tls.cert_file.empty()) {
      argv.insert(argv.end(), {"--tls-cert", tls.cert_file, "--tls-key", tls.key_file});
    }
    if (!tls.client_ca_file.empty()) argv.insert(argv.end(), {"--client-ca", tls.client_ca_file});
    return argv;
  }

  tenon::testing::Child child_;
};

}  // namespace tenon::kube::testing
