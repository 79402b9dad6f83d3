#!/usr/bin/env bash
# Tests scripts/compare-crds: the tree passes; a planted difference, a stale entry of the
# deliberate list and an out-of-date page each fail and are named.
# Usage: compare_crds_test.sh [SOURCE_DIR]
set -u
ROOT="${1:-$(cd "$(dirname "$0")/../.." && pwd)}"
COMPARE="$ROOT/scripts/compare-crds"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
failures=0

fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

# expect CODE NEEDLE ARGS...: compare-crds exits CODE and, unless NEEDLE is empty, prints it.
expect() {
  local code="$1" needle="$2"
  shift 2
  local out rc
  out="$("$COMPARE" "$@" 2>&1)"
  rc=$?
  if [ "$rc" -ne "$code" ]; then
    fail "compare-crds $* exited $rc, expected $code"
    echo "$out" | head -20
  elif [ -n "$needle" ] && ! grep -qF -- "$needle" <<<"$out"; then
    fail "compare-crds $* did not print: $needle"
    echo "$out" | head -20
  fi
}

# The tree: every difference is listed, every entry matches, the page is current.
expect 0 "" --check
expect 0 "" --check-doc

# Copies tenon's CRDs to $WORK/$1 and runs the Python statement $2 on the copy's NodePool spec
# schema (`spec`).
plant() {
  cp -r "$ROOT/deploy/base/crds" "$WORK/$1"
  python3 - "$WORK/$1/karpenter.sh_nodepools.yaml" "$2" <<'EOF' || fail "could not plant: $2"
import sys
import yaml
path = sys.argv[1]
with open(path) as f:
    crd = yaml.safe_load(f)
spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
exec(sys.argv[2])
with open(path, "w") as f:
    yaml.safe_dump(crd, f, sort_keys=False)
EOF
}

# A planted difference: WhenEmpty dropped from a copy of tenon's NodePool enum.
plant crds 'spec["properties"]["disruption"]["properties"]["consolidationPolicy"]["enum"].remove("WhenEmpty")'
expect 1 "[enum] NodePool spec.disruption.consolidationPolicy" \
  --tenon "$WORK/crds" --deliberate "$ROOT/deploy/base/crds/deliberate-differences.yml" --check

# A field added to a copy of tenon's NodePool is only in tenon's schema.
plant extra 'spec["properties"]["planted"] = {"type": "string"}'
expect 1 "[only-tenon] NodePool spec.planted" --tenon "$WORK/extra" --check

# A deliberate entry that matches no difference is stale.
cp "$ROOT/deploy/base/crds/deliberate-differences.yml" "$WORK/deliberate.yml"
cat >>"$WORK/deliberate.yml" <<'EOF'
  - path: NodePool spec.weight
    difference: maximum
    reason: "An entry that matches nothing."
EOF
expect 1 "matches no difference: [maximum] NodePool spec.weight" \
  --deliberate "$WORK/deliberate.yml" --check

# A page that is not what --markdown prints is out of date.
cp "$ROOT/docs/reference/crd-comparison.md" "$WORK/page.md"
echo "An edit by hand." >>"$WORK/page.md"
expect 1 "is out of date" --doc "$WORK/page.md" --check-doc

if [ "$failures" -ne 0 ]; then
  echo "compare_crds_test: $failures failure(s)"
  exit 1
fi
echo "compare_crds_test: passed"
