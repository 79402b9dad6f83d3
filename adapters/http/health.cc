#include "adapters/http/health.h"

#include <CivetServer.h>
#include <prometheus/exposer.h>
#include <prometheus/registry.h>

#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <stdexcept>
#include <thread>
#include <vector>

namespace tenon::http {
namespace {

// Writes a whole plain-text answer and closes the connection.
void Reply(mg_connection* conn, const Answer& answer) {
  const char* status_text = answer.status == 200   ? "OK"
                            : answer.status == 503 ? "Service Unavailable"
                                                   : "Internal Server Error";
  mg_printf(conn,
            "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\n"
            "Content-Length: %zu\r\nConnection: close\r\n\r\n",
            answer.status, status_text, answer.body.size());
  mg_write(conn, answer.body.data(), answer.body.size());
}

class EndpointHandler : public CivetHandler {
 public:
  explicit EndpointHandler(std::function<Answer()> answer) : answer_(std::move(answer)) {}
  bool handleGet(CivetServer* /*server*/, mg_connection* conn) override {
    Reply(conn, answer_());
    return true;
  }

 private:
  std::function<Answer()> answer_;
};

// Where to connect to reach a server listening on `address` (civetweb's form: "8081",
// "0.0.0.0:8081", "[::]:8081", "10.0.0.1:8081"): its host, or loopback for any address.
std::string ConnectHost(const std::string& address) {
  const auto colon = address.rfind(':');
  std::string host = colon == std::string::npos ? "" : address.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  if (host.empty() || host == "0.0.0.0") return "127.0.0.1";
  if (host == "::") return "::1";
  return host;
}

// Runs `stop` (which stops a civetweb server) while connecting to the server every 5 ms, so
// that its listener wakes from its 2 s poll and sees the stop at once.
void StopPromptly(const std::string& address, int port, const std::function<void()>& stop) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (port <= 0 || getaddrinfo(ConnectHost(address).c_str(), std::to_string(port).c_str(), &hints,
                               &found) != 0) {
    stop();  // Nothing to connect to: the listener's own timeout ends it.
    return;
  }
  std::atomic<bool> stopped{false};
  std::thread waker([&] {
    while (!stopped.load()) {
      const int fd = ::socket(found->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
      if (fd >= 0) {
        ::connect(fd, found->ai_addr, found->ai_addrlen);
        ::close(fd);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  });
  stop();
  stopped = true;
  waker.join();
  freeaddrinfo(found);
}

}  // namespace

struct HealthServer::Handlers {
  EndpointHandler healthz;
  EndpointHandler readyz;
};

HealthServer::HealthServer(HealthOptions options) : options_(std::move(options)) {
  last_beat_ = Now();
  handlers_ = std::make_unique<Handlers>(Handlers{EndpointHandler([this] { return Healthz(); }),
                                                  EndpointHandler([this] { return Readyz(); })});
  // Two worker threads: probes are tiny and rare.
  std::vector<std::string> civet_options = {"listening_ports", options_.address, "num_threads",
                                            "2"};
  try {
    server_ = std::make_unique<CivetServer>(civet_options);
  } catch (const CivetException& e) {
    throw std::runtime_error("health server: cannot listen on " + options_.address + ": " +
                             e.what());
  }
  server_->addHandler("/healthz", handlers_->healthz);
  server_->addHandler("/readyz", handlers_->readyz);
}

HealthServer::~HealthServer() {
  // Stop serving before the handlers and the state they read go away.
  if (!server_) return;
  StopPromptly(options_.address, port(), [&] {
    server_->close();
    server_.reset();
  });
}

std::chrono::steady_clock::time_point HealthServer::Now() const {
  return options_.clock ? options_.clock() : std::chrono::steady_clock::now();
}

void HealthServer::Beat() {
  const auto now = Now();
  std::lock_guard lock(mu_);
  last_beat_ = now;
}

void HealthServer::SetReady(bool ready, const std::string& reason) {
  std::lock_guard lock(mu_);
  ready_ = ready;
  not_ready_reason_ = ready ? "" : (reason.empty() ? "not ready" : reason);
}

void HealthServer::SetWarnings(std::vector<std::string> warnings) {
  std::lock_guard lock(mu_);
  warnings_ = std::move(warnings);
}

namespace {

std::string WithWarnings(std::string body, const std::vector<std::string>& warnings) {
  for (const auto& w : warnings) body += "\nwarning: " + w;
  return body;
}

}  // namespace

Answer HealthServer::Healthz() const {
  const auto now = Now();
  std::lock_guard lock(mu_);
  const auto since = std::chrono::duration_cast<std::chrono::milliseconds>(now - last_beat_);
  if (since <= options_.staleness) return {200, WithWarnings("ok", warnings_)};
  return {500, "controller loop stalled: no progress for " + std::to_string(since.count()) +
                   " ms (limit " + std::to_string(options_.staleness.count()) + " ms)"};
}

Answer HealthServer::Readyz() const {
  std::lock_guard lock(mu_);
  if (ready_) return {200, WithWarnings("ok", warnings_)};
  return {503, "not ready: " + not_ready_reason_};
}

int HealthServer::port() const {
  auto ports = server_->getListeningPorts();
  return ports.empty() ? 0 : ports.front();
}

MetricsServer::MetricsServer(const std::string& address,
                             std::shared_ptr<prometheus::Registry> registry)
    : address_(address) {
  try {
    exposer_ = std::make_unique<prometheus::Exposer>(address, 2);
  } catch (const std::exception& e) {
    throw std::runtime_error("metrics server: cannot listen on " + address + ": " + e.what());
  }
  exposer_->RegisterCollectable(registry, "/metrics");
}

MetricsServer::~MetricsServer() {
  if (exposer_) StopPromptly(address_, port(), [&] { exposer_.reset(); });
}

int MetricsServer::port() const {
  auto ports = exposer_->GetListeningPorts();
  return ports.empty() ? 0 : ports.front();
}

}  // namespace tenon::http
