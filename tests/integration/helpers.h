// Shared helpers for integration tests: temporary folders and child processes.
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "tests/support/temp_dir.h"

namespace tenon::testing {

// A seed from TENON_SEED when set (to reproduce a failure), else a fresh one; always printed.
inline std::uint64_t TestSeed() {
  const char* env = std::getenv("TENON_SEED");
  std::uint64_t seed = env ? std::stoull(env) : std::random_device{}();
  std::printf("seed %llu (rerun with TENON_SEED=%llu)\n", static_cast<unsigned long long>(seed),
              static_cast<unsigned long long>(seed));
  return seed;
}

// A child process whose standard output we read line by line.
class Child {
 public:
  // With `with_stderr`, the child's stderr comes through the same pipe as its stdout.
  explicit Child(const std::vector<std::string>& argv, bool with_stderr = false) {
    int fds[2];
    if (::pipe(fds) != 0) return;
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(fds[1], 1);
      if (with_stderr) ::dup2(fds[1], 2);
      ::close(fds[0]);
      ::close(fds[1]);
      std::vector<char*> args;
      for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      ::execv(args[0], args.data());
      ::_exit(127);
    }
    ::close(fds[1]);
    out_ = ::fdopen(fds[0], "r");
  }
  ~Child() {
    if (pid_ > 0 && !reaped_) Kill();
    if (out_) ::fclose(out_);
  }
  // The next line of output without its newline; false at end of output.
  bool ReadLine(std::string& line) {
    line.clear();
    for (int c; (c = std::fgetc(out_)) != EOF;) {
      if (c == '\n') return true;
      line.push_back(static_cast<char>(c));
    }
    return false;  // A partial last line (cut by a kill) is not a line.
  }
  // Everything the child writes until it ends (a last line without its newline included).
  std::string ReadAll() {
    std::string all;
    for (int c; (c = std::fgetc(out_)) != EOF;) all.push_back(static_cast<char>(c));
    return all;
  }
  void Kill() {
    ::kill(pid_, SIGKILL);
    Wait();
  }
  int Wait() {
    int status = 0;
    ::waitpid(pid_, &status, 0);
    reaped_ = true;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }

 private:
  pid_t pid_ = -1;
  FILE* out_ = nullptr;
  bool reaped_ = false;
};

}  // namespace tenon::testing
