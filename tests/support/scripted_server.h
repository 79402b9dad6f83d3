// A loopback HTTP/1.1 server that answers each request as a script says: a status (with extra
// headers), a connection reset, or no answer at all. One request per connection (it answers
// with Connection: close), one connection at a time: enough to drive a client's retry loop
// through the failures it must survive.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <deque>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace tenon::testing {

class ScriptedServer {
 public:
  enum class Act { kAnswer, kReset, kStall };
  struct Step {
    Act act = Act::kAnswer;
    int status = 200;
    std::string headers{};  // Extra header lines, each ending in \r\n.
  };
  static Step Answer(int status, std::string headers = "") {
    return Step{Act::kAnswer, status, std::move(headers)};
  }
  static Step Reset() { return Step{Act::kReset}; }
  static Step Stall() { return Step{Act::kStall}; }

  // After the script runs out, every request is answered 200.
  explicit ScriptedServer(std::vector<Step> script) : script_(script.begin(), script.end()) {
    listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (listener_ < 0 ||
        ::bind(listener_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
        ::listen(listener_, 16) != 0) {
      throw std::runtime_error("scripted server: cannot listen on loopback");
    }
    socklen_t length = sizeof address;
    ::getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &length);
    port_ = ntohs(address.sin_port);
    thread_ = std::thread([this] { Serve(); });
  }
  ~ScriptedServer() {
    stop_ = true;
    thread_.join();
    for (int fd : held_) ::close(fd);
    ::close(listener_);
  }
  ScriptedServer(const ScriptedServer&) = delete;
  ScriptedServer& operator=(const ScriptedServer&) = delete;

  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int requests() const { return requests_.load(); }
  // Request lines as received ("GET /x HTTP/1.1"), oldest first.
  std::vector<std::string> request_lines() const {
    std::lock_guard lock(mu_);
    return lines_;
  }

 private:
  void Serve() {
    while (!stop_) {
      pollfd pfd{listener_, POLLIN, 0};
      if (::poll(&pfd, 1, 20) <= 0) continue;
      const int fd = ::accept(listener_, nullptr, nullptr);
      if (fd < 0) continue;
      const std::string head = ReadHead(fd);
      if (head.empty()) {  // The client gave up before asking.
        ::close(fd);
        continue;
      }
      Step step;
      {
        std::lock_guard lock(mu_);
        lines_.push_back(head.substr(0, head.find("\r\n")));
        if (!script_.empty()) {
          step = script_.front();
          script_.pop_front();
        }
      }
      ++requests_;
      Play(fd, step);
    }
  }

  // The request line and headers, and as much of a body as Content-Length announces.
  static std::string ReadHead(int fd) {
    std::string data;
    char buffer[4096];
    std::size_t end = std::string::npos;
    while ((end = data.find("\r\n\r\n")) == std::string::npos) {
      pollfd pfd{fd, POLLIN, 0};
      if (::poll(&pfd, 1, 2000) <= 0) return "";
      const ssize_t n = ::read(fd, buffer, sizeof buffer);
      if (n <= 0) return "";
      data.append(buffer, static_cast<std::size_t>(n));
    }
    std::size_t length = 0;
    if (const auto at = data.find("Content-Length: "); at != std::string::npos && at < end) {
      length = std::stoul(data.substr(at + 16));
    }
    while (data.size() < end + 4 + length) {
      const ssize_t n = ::read(fd, buffer, sizeof buffer);
      if (n <= 0) break;
      data.append(buffer, static_cast<std::size_t>(n));
    }
    return data.substr(0, end);
  }

  void Play(int fd, const Step& step) {
    if (step.act == Act::kStall) {
      held_.push_back(fd);  // Open and silent until the server goes.
      return;
    }
    if (step.act == Act::kReset) {
      linger reset{1, 0};  // Closing now sends a RST, not a FIN.
      ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
      ::close(fd);
      return;
    }
    const std::string body = "{\"status\":" + std::to_string(step.status) + "}";
    const std::string answer = "HTTP/1.1 " + std::to_string(step.status) +
                               " Scripted\r\nContent-Type: application/json\r\nContent-Length: " +
                               std::to_string(body.size()) + "\r\nConnection: close\r\n" +
                               step.headers + "\r\n" + body;
    for (std::size_t sent = 0; sent < answer.size();) {
      const ssize_t n = ::write(fd, answer.data() + sent, answer.size() - sent);
      if (n <= 0) break;
      sent += static_cast<std::size_t>(n);
    }
    ::close(fd);
  }

  int listener_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> requests_{0};
  mutable std::mutex mu_;
  std::deque<Step> script_;
  std::vector<std::string> lines_;
  std::vector<int> held_;  // Touched by the serving thread only, then by the destructor.
  std::thread thread_;
};

}  // namespace tenon::testing
