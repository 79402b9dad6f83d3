// The controller's HTTP endpoints: /healthz and /readyz on the health probe port (8081), and
// Prometheus /metrics on the metrics port (8080), as Karpenter serves them.
//
// healthz: 200 "ok" while the controller loop has beaten (Beat) within the staleness window,
// else 500 with the reason. readyz: 200 "ok" once SetReady(true), else 503 with the reason.
// Warnings (SetWarnings: a stuck command lane) follow "ok" in both bodies, one per line, and
// change no status: a slow cloud is no reason to restart the controller or route around it.
//
// Both stop at once when destroyed: civetweb's listener notices a stop only between polls of
// its socket, 2 s apart, so the destructors connect to it until it has gone.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

class CivetServer;
namespace prometheus {
class Exposer;
class Registry;
}  // namespace prometheus

namespace tenon::http {

struct HealthOptions {
  // civetweb's listening_ports form: "8081", "0.0.0.0:8081", "127.0.0.1:0" (0: any free port).
  std::string address = "0.0.0.0:8081";
  // healthz fails when the loop has not beaten for longer than this.
  std::chrono::milliseconds staleness{std::chrono::seconds(60)};
  // The clock Beat and healthz read; tests pass a fake one. Null: std::chrono::steady_clock.
  std::function<std::chrono::steady_clock::time_point()> clock;
};

// What an endpoint answers, without HTTP.
struct Answer {
  int status = 200;
  std::string body;
};

class HealthServer {
 public:
  // Starts serving at once. Throws std::runtime_error when the address cannot be bound.
  explicit HealthServer(HealthOptions options);
  ~HealthServer();
  HealthServer(const HealthServer&) = delete;
  HealthServer& operator=(const HealthServer&) = delete;

  // The loop made progress now. Construction counts as the first beat (a start-up grace).
  void Beat();
  // Ready for traffic (leader or standby, informers synced); `reason` says why not when false.
  void SetReady(bool ready, const std::string& reason = "");
  // What an operator should see without a failing probe (each becomes a "warning: " line).
  void SetWarnings(std::vector<std::string> warnings);

  Answer Healthz() const;
  Answer Readyz() const;
  int port() const;  // The bound port (useful with port 0).

 private:
  std::chrono::steady_clock::time_point Now() const;

  HealthOptions options_;
  mutable std::mutex mu_;
  std::chrono::steady_clock::time_point last_beat_;
  bool ready_ = false;
  std::string not_ready_reason_ = "starting";
  std::vector<std::string> warnings_;
  std::unique_ptr<CivetServer> server_;
  struct Handlers;
  std::unique_ptr<Handlers> handlers_;
};

// Serves `registry` at /metrics through prometheus::Exposer.
class MetricsServer {
 public:
  // `address` as for HealthOptions ("0.0.0.0:8080", "127.0.0.1:0"). Throws std::runtime_error
  // when it cannot be bound.
  MetricsServer(const std::string& address, std::shared_ptr<prometheus::Registry> registry);
  ~MetricsServer();
  int port() const;

 private:
  std::string address_;
  std::unique_ptr<prometheus::Exposer> exposer_;
};

}  // namespace tenon::http
