// Test servers as child processes: a free loopback port, and a process in its own process
// group that dies with the test. Shared by the AWS (moto, fault proxy) and Kubernetes (test API
// server) suites.
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
#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace tenon::testing {

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

// A child process in its own process group, killed (SIGTERM, then SIGKILL) with it;
// `port_from_stdout` reads the port it prints on its first line.
class Child {
 public:
  // `quiet` sends its stderr to /dev/null.
  Child(std::vector<std::string> argv, std::vector<std::string> env, bool port_from_stdout,
        bool quiet = true) {
    int fds[2];
    if (pipe(fds) != 0) throw std::runtime_error("pipe");
    pid_ = fork();
    if (pid_ == 0) {
      setpgid(0, 0);
      prctl(PR_SET_PDEATHSIG, SIGTERM);  // A test killed by a timeout takes its servers along.
      dup2(fds[1], STDOUT_FILENO);
      close(fds[0]);
      if (!port_from_stdout) freopen("/dev/null", "w", stdout);
      if (quiet) freopen("/dev/null", "w", stderr);
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
  pid_t pid() const { return pid_; }
  // Its exit code (128 + signal when killed) once it has ended within `timeout`.
  std::optional<int> WaitExit(std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (pid_ > 0) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return std::nullopt;
  }

 private:
  pid_t pid_ = -1;
  int port_ = 0;
};

}  // namespace tenon::testing
