#!/usr/bin/env bash
# Proves the size lint catches a file over 700 lines, a function over 80 (however its braces
# and literals are laid out) and a known one that grew, planted in a copy of the tree, and
# passes the tree as it is.
set -u
root="$1"
lint="$root/scripts/lint-size"
source "$root/tests/lint/expect_caught.sh"
copy() { copy_parts model reducers log adapters replay whatif cmd; }

body() {  # body N: N lines of statements.
  for _ in $(seq "$1"); do echo '  total += 1;'; done
}

plant() {  # plant FILE CODE PATTERN: add CODE as FILE in a copy, expect the lint to name it.
  copy
  expect_caught "$1" "$2" "$work/$1" "$3" "$lint" "$work"
}

plant reducers/planted.cc "$(for _ in $(seq 701); do echo '// line'; done)" \
  'reducers/planted.cc: 701 lines, over the limit of 700'
plant reducers/planted.cc "int Long(int total) {
$(body 79)
  return total;
}" 'reducers/planted.cc:1:Long: 82 lines'
plant adapters/kube/planted.cc "namespace tenon {
struct Holder {
  int x_;
  Holder(int x) : x_{x} {
$(body 80)
  }
};
}  // namespace tenon" 'planted.cc:4:Holder: 82 lines'
plant log/planted.cc "const auto kLong = [](int total) -> int {
  const char* text = R\"(}}}})\";
  // }}}
$(body 80)
  return total;
};" 'planted.cc:1:kLong: 85 lines'
plant replay/planted.cc "int Short() { return 1; }
std::string Text() const noexcept {
  const char brace = '}';
$(body 80)
  return {};
}" 'planted.cc:2:Text: 84 lines'

# A known file that grew: the first file KNOWN lists, with lines added.
known=$(python3 -c '
import importlib.machinery, sys
lint = importlib.machinery.SourceFileLoader("lint_size", sys.argv[1]).load_module()
print(next((key for key in lint.KNOWN if ":" not in key), ""))' "$lint")
if [ -n "$known" ]; then
  copy
  for _ in $(seq 50); do echo '// line' >>"$work/$known"; done
  expect_caught "a known one grown" '' "$work/reducers/planted.cc" "$known: .* grown" \
    "$lint" "$work"
else
  echo "no known file left to grow"
fi

copy
if ! python3 "$lint" "$work" >/dev/null; then
  echo "the tree itself fails the lint"; failures=$((failures + 1))
fi
printf '%s\n' "int Split() {" "$(body 70)" "}" "int Rest() {" "$(body 70)" "}" \
  >"$work/reducers/planted.cc"
if ! python3 "$lint" "$work" >/dev/null; then
  echo "two short functions were taken for a long one"; failures=$((failures + 1))
fi
finish "every planted size caught"
