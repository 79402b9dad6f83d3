# Sourced by the lints' planted-violation tests, after they set `root`: a scratch folder `work`
# (removed on exit) and the count of `failures`.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0

# copy_parts PART...: the scratch folder holds a fresh copy of these folders of `root`.
copy_parts() {
  rm -rf "${work:?}"/*
  for part in "$@"; do cp -r "$root/$part" "$work/$part"; done
}

# expect_caught WHAT CODE FILE PATTERN LINT [ARG...]: writes CODE to FILE, runs the Python lint
# LINT with its arguments, and counts a failure unless it exits 1 with PATTERN in its output.
expect_caught() {
  local what="$1" code="$2" file="$3" pattern="$4"
  shift 4
  printf '%s\n' "$code" >"$file"
  local out
  out=$(python3 "$@" 2>&1)
  if [ $? -ne 1 ] || ! grep -q "$pattern" <<<"$out"; then
    echo "NOT CAUGHT ($what): $code"; echo "$out"; failures=$((failures + 1))
  else
    echo "caught ($what)"
  fi
}

# finish MESSAGE: exits 1 naming how many cases were not caught, else prints MESSAGE.
finish() {
  if [ "$failures" -ne 0 ]; then
    echo "$failures case(s) not caught"
    exit 1
  fi
  echo "$1"
}
