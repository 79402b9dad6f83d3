#!/usr/bin/env bash
# Proves the purity lint catches each kind of violation planted in a copy of reducers/, and
# stays quiet about the same words in comments and strings.
set -u
root="$1"
lint="$root/scripts/lint-purity"

source "$root/tests/lint/expect_caught.sh"

plant() {  # plant NAME CODE: copy reducers/, add CODE, expect the lint to fail naming the file.
  rm -rf "$work/reducers" && cp -r "$root/reducers" "$work/reducers"
  expect_caught "$1" "$2" "$work/reducers/planted.cc" "planted.cc:.*$1" "$lint" "$work/reducers"
}

plant clock 'long Now() { return std::chrono::system_clock::now().time_since_epoch().count(); }'
plant clock 'auto t = std::chrono::steady_clock::now();'
plant randomness 'int Roll() { return rand() % 6; }'
plant randomness 'std::random_device device;'
plant environment 'const char* home = getenv("HOME");'
plant 'I/O' 'std::ifstream in("state.bin");'
plant 'I/O' 'FILE* f = fopen("x", "r");'
plant threads 'std::thread worker([] {});'
plant sleep 'void Wait() { usleep(10); }'
plant 'effectful library' 'rocksdb::DB* db = nullptr;'
plant 'unordered container' 'std::unordered_map<int, int> order_leaks;'

# The same words in comments and strings are not code.
rm -rf "$work/reducers" && cp -r "$root/reducers" "$work/reducers"
cat >"$work/reducers/quiet.cc" <<'CODE'
// We never call std::chrono::system_clock::now() or getenv() here.
/* std::thread, rand(), unordered_map: none of these. */
const char* kText = "std::chrono::system_clock::now()";
CODE
if ! python3 "$lint" "$work/reducers" >/dev/null 2>&1; then
  echo "FALSE ALARM on comments/strings"; failures=$((failures + 1))
fi

if [ "$failures" -ne 0 ]; then echo "$failures lint check(s) failed"; exit 1; fi
echo "all planted violations caught"
