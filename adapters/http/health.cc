#include "adapters/http/health.h"

#include <CivetServer.h>
#include <prometheus/exposer.h>
#include <prometheus/registry.h>

#include <stdexcept>
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
  if (server_) server_->close();
  server_.reset();
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

Answer HealthServer::Healthz() const {
  const auto now = Now();
  std::lock_guard lock(mu_);
  const auto since = std::chrono::duration_cast<std::chrono::milliseconds>(now - last_beat_);
  if (since <= options_.staleness) return {200, "ok"};
  return {500, "controller loop stalled: no progress for " + std::to_string(since.count()) +
                   " ms (limit " + std::to_string(options_.staleness.count()) + " ms)"};
}

Answer HealthServer::Readyz() const {
  std::lock_guard lock(mu_);
  if (ready_) return {200, "ok"};
  return {503, "not ready: " + not_ready_reason_};
}

int HealthServer::port() const {
  auto ports = server_->getListeningPorts();
  return ports.empty() ? 0 : ports.front();
}

MetricsServer::MetricsServer(const std::string& address,
                             std::shared_ptr<prometheus::Registry> registry) {
  try {
    exposer_ = std::make_unique<prometheus::Exposer>(address, 2);
  } catch (const std::exception& e) {
    throw std::runtime_error("metrics server: cannot listen on " + address + ": " + e.what());
  }
  exposer_->RegisterCollectable(registry, "/metrics");
}

MetricsServer::~MetricsServer() = default;

int MetricsServer::port() const {
  auto ports = exposer_->GetListeningPorts();
  return ports.empty() ? 0 : ports.front();
}

}  // namespace tenon::http
