// Test servers on loopback: moto_server on a free port and the fault-injecting proxy in front of
// it. Each is started as its own process group and killed (SIGTERM, then SIGKILL) at teardown.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "adapters/aws/credentials.h"
#include "adapters/aws/http.h"

namespace tenon::aws::testing {

inline constexpr char kMotoServer[] = "/root/.pyenv/shims/moto_server";
inline constexpr int kStartupPollsMax = 300;  // x 50 ms = 15 s.

inline int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
    throw std::runtime_error("bind");
  socklen_t len = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

// A child process in its own process group; `port_from_stdout` reads the port it prints.
class Child {
 public:
  Child(std::vector<std::string> argv, std::vector<std::string> env, bool port_from_stdout) {
    int fds[2];
    if (pipe(fds) != 0) throw std::runtime_error("pipe");
    pid_ = fork();
    if (pid_ == 0) {
      setpgid(0, 0);
      prctl(PR_SET_PDEATHSIG, SIGTERM);  // A test killed by a timeout takes its servers along.
      dup2(fds[1], STDOUT_FILENO);
      close(fds[0]);
      if (!port_from_stdout) freopen("/dev/null", "w", stdout);
      freopen("/dev/null", "w", stderr);
      for (const std::string& e : env) putenv(const_cast<char*>(e.c_str()));
      std::vector<char*> args;
      for (std::string& a : argv) args.push_back(a.data());
      args.push_back(nullptr);
      execv(args[0], args.data());
      _exit(127);
    }
    close(fds[1]);
    if (port_from_stdout) {
      char line[32] = {};
      FILE* out = fdopen(fds[0], "r");
      if (out == nullptr || fgets(line, sizeof line, out) == nullptr)
        throw std::runtime_error("no port");
      port_ = std::atoi(line);
      fclose(out);
    } else {
      close(fds[0]);
    }
  }
  ~Child() {
    if (pid_ <= 0) return;
    kill(-pid_, SIGTERM);
    for (int i = 0; i < 40; ++i) {
      if (waitpid(pid_, nullptr, WNOHANG) == pid_) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    kill(-pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  int port() const { return port_; }
  void set_port(int port) { port_ = port; }

 private:
  pid_t pid_ = -1;
  int port_ = 0;
};

inline void WaitUntilAnswering(int port, const std::string& path) {
  CurlTransport transport(TransportOptions{.connect_timeout_ms = 200, .total_timeout_ms = 1000});
  HttpRequest probe;
  probe.scheme = "http";
  probe.host = "127.0.0.1:" + std::to_string(port);
  probe.path = path;
  for (int i = 0; i < kStartupPollsMax; ++i) {
    if (transport.Send(probe).status != 0) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  throw std::runtime_error("server on port " + std::to_string(port) + " never answered");
}

// moto_server on 127.0.0.1 and a free port.
class Moto {
 public:
  Moto()
      : port_(FreePort()),
        child_({kMotoServer, "-p", std::to_string(port_), "-H", "127.0.0.1"}, {}, false) {
    WaitUntilAnswering(port_, "/moto-api/");
  }
  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  int port_;
  Child child_;
};

// tests/aws/fault_proxy.py in front of `moto`.
class FaultProxy {
 public:
  explicit FaultProxy(const Moto& moto)
      : child_({"/usr/bin/env", "python3", TENON_FAULT_PROXY, std::to_string(moto.port())}, {},
               true) {
    WaitUntilAnswering(child_.port(), "/__ping");
  }
  int port() const { return child_.port(); }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port()); }

 private:
  Child child_;
};

// Hooks that never sleep, with fixed jitter, and the real clock (moto checks nothing of it).
inline ClientHooks FastHooks(std::vector<Nanos>* sleeps = nullptr) {
  ClientHooks hooks = RealHooks();
  hooks.sleep = [sleeps](Nanos d) {
    if (sleeps != nullptr) sleeps->push_back(d);
  };
  hooks.jitter = [] { return 0.5; };
  return hooks;
}

inline Credentials DummyCredentials() {
  return Credentials{"AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "",
                     Nanos{0}, "test"};
}

}  // namespace tenon::aws::testing
