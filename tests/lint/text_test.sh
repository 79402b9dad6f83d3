#!/usr/bin/env bash
# Proves scripts/check-text fails on a diary line planted in a docs page, names each rule it
# breaks, passes clean technical prose (including the legitimate uses its rules must let
# through), honours the per-line escape, and checks commit subjects after a base commit.
# The flagged samples below end with the escape marker so that this file itself passes.
set -u
root="$1"
check="$root/scripts/check-text"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# A docs page: a copy of a real one when the tree has docs/*.md, else a written one.
mkdir -p "$work/docs"
page=$(ls "$root"/docs/*.md 2>/dev/null | head -n 1)
if [ -n "$page" ]; then
  cp "$page" "$work/docs/page.md"
else
  printf '# Simulating a cluster\n\ntenon simulate runs a scenario against a simulated cloud.\n' \
    >"$work/docs/page.md"
fi
diary='In session 12 we measured this on the VM (issue 9).'  # check-text: allow
printf '\n%s\n' "$diary" >>"$work/docs/page.md"
line=$(wc -l <"$work/docs/page.md")

out=$(python3 "$check" "$work/docs" 2>&1)
rc=$?
if [ "$rc" -ne 1 ]; then
  fail "planted diary line: exit $rc, expected 1"; echo "$out"
fi
for rule in 'narration: numbered period of work' 'narration: tracker number' \
  'machine: virtual machine' 'people: first-person past tense'; do
  grep -q "page.md:$line: \[$rule" <<<"$out" || { fail "diary line: no [$rule] hit"; echo "$out"; }
done
[ "$failures" -eq 0 ] && echo "caught the planted diary line (page.md:$line)"

# One sample per kind of hit: plant NAME TEXT expects TEXT alone in a page to fail with NAME.
plant() {
  printf '%s\n' "$2" >"$work/docs/one.md"
  out=$(python3 "$check" "$work/docs/one.md" 2>&1)
  if [ $? -ne 1 ] || ! grep -q "one.md:1: \[$1" <<<"$out"; then
    fail "not caught ($1): $2"; echo "$out"
  else
    echo "caught ($1)"
  fi
}
plant narration 'The audit table gained a row in session-19.'               # check-text: allow
plant narration 'This was measured in an earlier session.'                  # check-text: allow
plant narration 'Spot storms (issue 6, in progress) are next.'              # check-text: allow
plant narration 'Fixed during the last sprint.'                             # check-text: allow
plant narration 'What the session measured: 54 s for 24 hours.'             # check-text: allow
plant narration 'Both runs were made the same morning.'                     # check-text: allow
plant machine 'On a 2-core VM the run takes 8 s.'                           # check-text: allow
plant machine 'The numbers are noisy runs from a busy box.'                 # check-text: allow
plant machine "Wall time moves with the neighbours' load."                  # check-text: allow
plant machine "CPU moved with the machine's load more than with the change." # check-text: allow
plant people 'The CEO asked for a migration page.'                          # check-text: allow
plant people 'A reviewer said the table was wrong.'                         # check-text: allow
plant people 'I ran the benchmark twice.'                                   # check-text: allow
plant outside-docs 'The formulas follow KARPENTER.md, Provisioning.'        # check-text: allow
plant outside-docs 'See ../shared/data/ec2-us-east-1.json for the catalog.' # check-text: allow

# Clean prose, with the words the rules must let through in their legitimate senses.
cat >"$work/docs/clean.md" <<'TEXT'
# Running tenon

tenon reads AWS credentials from the environment; an IMDSv2 session token is fetched first,
and a web identity role gets the session name tenon. A request in progress is retried once.
When a preemption is in progress the pod keeps its nominated node. A pod's neighbours on the
node count for anti-affinity. Allocatable memory is capacity less the VM memory overhead
(vmMemoryOverheadPercent), kube-reserved and the eviction threshold. bench_simulate reports
CPU steal time, which the hypervisor gives other guests. We sort the candidates by price.
See docs/migrating-from-karpenter.md to switch over.
TEXT
out=$(python3 "$check" "$work/docs/clean.md" 2>&1) || { fail "clean prose flagged"; echo "$out"; }

# The escape: the diary line passes when it ends with the marker.
printf '%s <!-- check-text: allow -->\n' "$diary" >"$work/docs/allowed.md"
python3 "$check" "$work/docs/allowed.md" >/dev/null 2>&1 || fail "the escape marker is ignored"
# ...and only at the end of the line.
printf 'check-text: allow %s\n' "$diary" >"$work/docs/early.md"
python3 "$check" "$work/docs/early.md" >/dev/null 2>&1 && fail "a marker mid-line escapes"

# Commit subjects: after the base commit each stays under 72 characters.
repo="$work/repo"
g() { git -C "$repo" -c user.name=check -c user.email=check@example.invalid "$@"; }
git init -q "$repo" && printf 'tenon\n' >"$repo/notes.md" && g add notes.md
g commit -q -m 'Base'
base=$(g rev-parse HEAD)
printf 'more\n' >>"$repo/notes.md" && g commit -q -am 'Short subject'
python3 "$check" --root "$repo" --commits-since "$base" >/dev/null 2>&1 ||
  fail "a short subject after the base is flagged"
long='Scheduler: relax preferences one at a time in the order Karpenter relaxes them'
printf 'again\n' >>"$repo/notes.md" && g commit -q -am "$long"
out=$(python3 "$check" --root "$repo" --commits-since "$base" 2>&1)
if [ $? -ne 1 ] || ! grep -q "commit-subject: ${#long} characters" <<<"$out"; then
  fail "a ${#long}-character subject is not flagged"; echo "$out"
fi
out=$(python3 "$check" --root "$repo" --commits-since HEAD 2>&1) ||
  { fail "commits up to the base are checked"; echo "$out"; }
out=$(python3 "$check" --root "$repo" --commits-since 0000000 2>&1)
if [ $? -ne 0 ] || ! grep -q "not in this history" <<<"$out"; then
  fail "an absent base commit is not skipped"; echo "$out"
fi

if [ "$failures" -ne 0 ]; then echo "$failures check-text test(s) failed"; exit 1; fi
echo "check-text: every planted line caught, clean prose passes, subjects checked"
