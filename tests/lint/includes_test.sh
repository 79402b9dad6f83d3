#!/usr/bin/env bash
# Proves the include-graph lint catches a part including a header of a part it may not depend
# on, planted in a copy of the tree, and passes the tree as it is.
set -u
root="$1"
lint="$root/scripts/lint-includes"
source "$root/tests/lint/expect_caught.sh"
copy() { copy_parts model reducers log adapters replay whatif cmd tests bench; }

plant() {  # plant FILE CODE PATTERN: add CODE as FILE in a copy, expect the lint to name it.
  copy
  expect_caught "$1" "$2" "$work/$1" "$3" "$lint" "$work"
}

plant reducers/planted.cc '#include "adapters/sim/world.h"' \
  'reducers/planted.cc:1: includes adapters/sim/world.h, and reducers may not depend on adapters/sim'
plant reducers/planted.h '#include <log/codec.h>' 'reducers may not depend on log'
plant log/planted.cc '#include "replay/replay.h"' 'log may not depend on replay'
plant adapters/kube/planted.cc '#include "adapters/controller/cloud.h"' \
  'adapters/kube may not depend on adapters/controller'
plant replay/planted.cc '#include "tests/support/temp_dir.h"' 'which no part of the product may include'
plant adapters/planted.cc '// A file outside any adapter.' 'a part not in'

copy
if ! python3 "$lint" "$work" >/dev/null; then
  echo "the tree itself fails the lint"; failures=$((failures + 1))
fi
printf '%s\n' '// #include "adapters/sim/world.h" is how the simulator is reached.' \
  >"$work/reducers/planted.cc"
if ! python3 "$lint" "$work" >/dev/null; then
  echo "an include in a comment was taken for one"; failures=$((failures + 1))
fi

finish "every planted include caught"
