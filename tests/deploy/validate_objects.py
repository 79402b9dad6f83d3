#!/usr/bin/env python3
"""Checks objects against tenon's CRDs as the API server would on create or update.

  validate_objects.py FILE...

Each FILE holds one JSON object or a JSON list of objects (NodePool, NodeClaim, EC2NodeClass,
with or without status). Prints every refusal and exits 1 when any object would be refused;
objects of other kinds are an error too, so a typo cannot make the check pass vacuously."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import crd_schema  # noqa: E402


def main(paths):
    validator = crd_schema.Validator()
    failures = 0
    checked = 0
    for path in paths:
        with open(path) as f:
            data = json.load(f)
        for obj in data if isinstance(data, list) else [data]:
            name = "%s %s" % (obj.get("kind"), obj.get("metadata", {}).get("name"))
            if not validator.handles(obj):
                print("%s: %s is not a tenon custom resource" % (path, name))
                failures += 1
                continue
            checked += 1
            for error in validator.errors(obj):
                print("%s: %s: %s" % (path, name, error))
                failures += 1
    print("validate_objects: %d objects checked, %d refusals" % (checked, failures))
    return 1 if failures or not checked else 0


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1:]))
