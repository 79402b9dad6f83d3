#!/usr/bin/env bash
# Proves the slice-writers lint catches each kind of write to a slice of the State from a reducer
# that is not its writer, planted in a copy of the core, and passes the core as it is and the
# reads that look like writes.
set -u
root="$1"
lint="$root/scripts/lint-writers"
source "$root/tests/lint/expect_caught.sh"
copy() { copy_parts reducers; }

plant() {  # plant FILE CODE PATTERN: add CODE as FILE in a copy, expect the lint to name it.
  copy
  expect_caught "$1" "$2" "$work/$1" "$3" "$lint" "$work"
}

plant reducers/disruption/planted.cc 'void F(State& state) { state.cluster.nodes.erase("n"); }' \
  'reducers/disruption/planted.cc:1: changes State::cluster (changes it)'
plant reducers/repair_planted.cc \
  'void F(State& state) { state.lifecycle.nodeclaims.at("c").deleting = true; }' \
  'changes State::lifecycle (assigns to it)'
plant reducers/planted.cc \
  'void F(State& s) { for (auto& [name, claim] : s.lifecycle.nodeclaims) claim.price = {}; }' \
  'changes State::lifecycle (walks it by changing reference)'
plant reducers/planted.cc 'void F(State& state) { NodeClaim& c = state.lifecycle.nodeclaims.at("c"); }' \
  'changes State::lifecycle (binds a changing reference)'
plant reducers/planted.cc 'void F(State& state) {
  auto it = state.lifecycle.nodeclaims.find("c");
  if (it != state.lifecycle.nodeclaims.end()) it->second.deleting = true;
}' 'reducers/planted.cc:3: changes State::lifecycle (writes through an iterator into it)'
plant reducers/planted.cc 'void F(State& state) { ++state.disruption.consolidated_generation; }' \
  'changes State::disruption (assigns to it)'
plant reducers/planted.cc \
  'void F(State& state) { std::erase_if(state.nodeclass.terminations, [](auto&) { return true; }); }' \
  'changes State::nodeclass (moves or changes it)'
plant reducers/disruption/planted.cc 'void F(State& state) { state.batch.open = true; }' \
  'changes State::batch (assigns to it), which only reducers/provisioning.cc may change'
plant reducers/planted.cc 'void F(State& state) { state.cluster.pods.Upsert("ns/p", Pod{}); }' \
  'changes State::cluster (changes it)'

copy
if ! python3 "$lint" "$work" >/dev/null; then
  echo "the core itself fails the lint"; failures=$((failures + 1))
fi
cat >"$work/reducers/planted.cc" <<'CODE'
// state.cluster.nodes.erase(name) is how step.cc forgets a node.
void F(const State& state) {
  const NodeClaim& c = state.lifecycle.nodeclaims.at("c");
  for (const auto& [name, claim] : state.lifecycle.nodeclaims) Use(claim);
  auto it = state.cluster.nodes.find(c.node_name);
  const Node& node = it->second;
  if (state.disruption.consolidated_generation == state.cluster_generation) Use(node);
  Log("state.batch.open = true");
}
CODE
if ! out=$(python3 "$lint" "$work"); then
  echo "reads were taken for writes:"; echo "$out"; failures=$((failures + 1))
fi

finish "every planted write caught"
