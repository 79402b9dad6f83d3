#!/usr/bin/env bash
# Proves a field added to the model cannot be left out of the state hash or the snapshot: each
# plant adds a field to a copy of the model and compiles the hash (and the snapshot codec) against
# it, which must fail naming the type. The unplanted copy must compile, so a failure is the plant's.
#   fields_test.sh ROOT CXX CAPNP_INCLUDE_DIR
set -u
root="$1"
cxx="$2"
generated="$3"  # Where the build put log/tenon.capnp.h.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0

# compile ROOT FILE: the file's syntax and static assertions, against the model under ROOT.
compile() {
  "$cxx" -std=c++20 -fsyntax-only -I"$1" -I"$generated" "$1/$2" 2>&1
}

fresh() {
  rm -rf "$work/tree" && mkdir -p "$work/tree" && cp -r "$root/model" "$root/log" "$work/tree/"
}

# plant WHAT FILE STRUCT PATTERN: adds a field to STRUCT in model/FILE; compiling the hash and the
# snapshot codec must fail with PATTERN.
plant() {
  local what="$1" file="$2" struct="$3" pattern="$4"
  fresh
  if ! grep -q "^struct $struct {" "$work/tree/model/$file"; then
    echo "no struct $struct in model/$file ($what)"; failures=$((failures + 1)); return
  fi
  sed -i "/^struct $struct {/a\\  int planted_field = 0;" "$work/tree/model/$file"
  local out
  out=$(compile "$work/tree" model/hash.cc; compile "$work/tree" log/codec_snapshot.cc)
  if grep -qF -- "$pattern" <<<"$out"; then
    echo "caught ($what)"
  else
    echo "NOT CAUGHT ($what)"; echo "$out" | head -20; failures=$((failures + 1))
  fi
}

fresh
if ! out=$(compile "$work/tree" model/hash.cc && compile "$work/tree" log/codec_snapshot.cc); then
  echo "the model as it is does not compile here:"; echo "$out" | head -20; exit 1
fi
plant 'a field added to the State' state.h State 'State: hash the field added'
plant 'a field added to the State, in the snapshot' state.h State 'State: encode the field added'
plant 'a field added to the cluster view' state.h ClusterView 'ClusterView: hash the field added'
plant 'a field added to the lifecycle slice' state.h ClaimLifecycle 'ClaimLifecycle: encode the field'
plant 'a field added to the disruption slice' state.h DisruptionState 'DisruptionState: hash the field'
plant 'a field added to a Node' kube.h Node 'Node: hash the field added'
plant 'a field added to a NodeClaim' kube.h NodeClaim 'NodeClaim: hash the field added'
plant 'a field added to a command' commands.h LaunchInstance 'LaunchInstance: hash the field'
plant 'a field added to the settings' catalog.h Settings 'Settings: hash the field added'

if [ "$failures" -ne 0 ]; then
  echo "$failures plant(s) not caught"; exit 1
fi
echo "every planted field was caught"
