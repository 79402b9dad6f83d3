#!/usr/bin/env bash
# Proves the effects lint catches a write API called outside a command executor, planted in a
# copy of adapters/, and stays quiet about the same call in a comment.
set -u
root="$1"
lint="$root/scripts/lint-effects"

copy() {
  rm -rf "$work/adapters" && cp -r "$root/adapters" "$work/adapters"
}

source "$root/tests/lint/expect_caught.sh"

plant() {  # plant KIND CODE: add CODE to a copy of adapters/, expect the lint to name the file.
  copy
  expect_caught "$1" "$2" "$work/adapters/controller/planted.cc" "planted.cc:1: $1" "$lint" "$work"
}

plant 'AWS write' 'void F(aws::Ec2& ec2) { ec2.TerminateInstances({"i-1"}); }'
plant 'AWS write' 'auto p = iam.EnsureInstanceProfile(name, role, tags);'
plant 'AWS write' 'queue->Acknowledge(id);'
plant 'Kubernetes write' 'client.Request("DELETE", path);'
plant 'Kubernetes write' 'writer.Update(path, "", patch);'
plant 'Kubernetes write' 'executor.RecordEvent(ref, "Normal", "Reason", "text");'

copy
printf '%s\n' '// ec2.CreateFleet(request) is what the executor calls.' >"$work/adapters/controller/planted.cc"
if ! python3 "$lint" "$work" >/dev/null 2>&1; then
  echo "a comment was taken for a call"; failures=$((failures + 1))
fi

finish "every planted write caught"
