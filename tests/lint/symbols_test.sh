#!/usr/bin/env bash
# Proves the symbol lint catches what the purity lint's regular expressions can be fooled by: each
# trick is compiled on its own and checked as part of the core's libraries (model and reducers).
#   symbols_test.sh ROOT CXX ARCHIVE...
set -u
root="$1"
cxx="$2"
archives=("${@:3}")
lint="$root/scripts/lint-symbols"
source "$root/tests/lint/expect_caught.sh"

# plant WHAT PATTERN CODE: compiles CODE, expects the lint to fail naming PATTERN.
plant() {
  local what="$1" pattern="$2" code="$3"
  printf '%s\n' "$code" >"$work/planted.cc"
  if ! "$cxx" -std=c++20 -O1 -I"$root" -c "$work/planted.cc" -o "$work/planted.o" 2>"$work/cc.log"
  then
    echo "planted code does not compile ($what)"; cat "$work/cc.log"; failures=$((failures + 1))
    return
  fi
  local out
  out=$(python3 "$lint" "${archives[@]}" "$work/planted.o" 2>&1)
  if [ $? -ne 1 ] || ! grep -qF -- "$pattern" <<<"$out"; then
    echo "NOT CAUGHT ($what)"; echo "$out"; failures=$((failures + 1))
  else
    echo "caught ($what)"
  fi
}

plant 'a clock behind a type alias' 'system_clock::now' '#include <chrono>
namespace tenon { using wall = std::chrono::system_clock;
long Now() { return wall::now().time_since_epoch().count(); } }'
plant 'a clock behind a namespace alias' 'steady_clock::now' '#include <chrono>
namespace tenon { namespace clk = std::chrono;
long Now() { return clk::steady_clock::now().time_since_epoch().count(); } }'
plant 'POSIX open' 'uses open,' '#include <fcntl.h>
namespace tenon { int Read() { return open("/etc/hostname", O_RDONLY); } }'
plant 'a function declared here, defined in an adapter' 'tenon::AdapterClock' '#include <string>
namespace tenon { std::string AdapterClock(); std::string Ask() { return AdapterClock(); } }'
plant 'getenv behind a raw string' 'uses getenv,' '#include <cstdlib>
namespace tenon { const char* Home() { return std::getenv(R"(HOME)"); } }'
plant 'system("date")' 'uses system,' '#include <cstdlib>
namespace tenon { int Date() { return std::system("date"); } }'
plant 'a random device' 'random_device' '#include <random>
namespace tenon { unsigned Roll() { std::random_device r; return r(); } }'
plant 'a thread' 'std::thread::' '#include <thread>
namespace tenon { void Spawn() { std::thread t([] {}); t.join(); } }'
plant 'a namespace-scope mutable static' 'writable data tenon::calls' 'namespace tenon {
int calls = 0;
int Count() { return ++calls; } }'
plant 'a mutable static inside a function' 'writable data tenon::Next()::n' 'namespace tenon {
int Next() { static int n = 0; return ++n; } }'

# The library as built passes.
if ! python3 "$lint" "${archives[@]}" >/dev/null; then
  echo "the reducers library itself fails the lint"; failures=$((failures + 1))
fi

finish "every planted trick caught"
