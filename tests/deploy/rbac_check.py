#!/usr/bin/env python3
"""Compares what tenon's Kubernetes client did with what its RBAC grants, both ways.

  rbac_check.py USED.json [DEPLOY_DIR]

USED.json is a JSON list of {"group", "resource", "verb"} (as recorded by the test API server's
GET /_test/requests; "resource" may carry a subresource, "pods/eviction"). The grants are the
rules of the ClusterRole and Role that `kubectl kustomize DEPLOY_DIR` (default deploy/) renders.
Exits 1, printing both differences, when the client used anything not granted (it would be
refused in a cluster) or anything granted was never used (the role is wider than it must be).
Grants restricted by resourceNames are compared as grants of their verb; the names themselves
are checked by render_test.py.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rendering  # noqa: E402


def granted(objects):
    """-> {(group, resource, verb)} from the rendered ClusterRole and Role."""
    out = set()
    for kind in ("ClusterRole", "Role"):
        for rule in rendering.find(objects, kind, "tenon").get("rules") or []:
            for group in rule.get("apiGroups") or []:
                for resource in rule.get("resources") or []:
                    for verb in rule.get("verbs") or []:
                        out.add((group, resource, verb))
    return out


def used_set(used):
    return {(u["group"], u["resource"], u["verb"]) for u in used}


def differences(used, grants):
    """-> (used but not granted, granted but never used), each sorted."""
    used = used_set(used)
    return sorted(used - grants), sorted(grants - used)


def report(missing, unused):
    lines = []
    if missing:
        lines.append("used but not granted (the API server would answer 403):")
        lines += ["  %s %s/%s" % (v, g or "core", r) for g, r, v in missing]
    if unused:
        lines.append("granted but never used (remove from the role):")
        lines += ["  %s %s/%s" % (v, g or "core", r) for g, r, v in unused]
    return "\n".join(lines)


def check(used, deploy_dir=rendering.DEPLOY):
    """-> an empty string when grants and use are equal, else the report of the differences."""
    return report(*differences(used, granted(rendering.render(deploy_dir))))


def main(argv):
    if len(argv) not in (2, 3):
        print(__doc__, file=sys.stderr)
        return 2
    with open(argv[1]) as f:
        used = json.load(f)
    problems = check(used, argv[2] if len(argv) == 3 else rendering.DEPLOY)
    if problems:
        print(problems)
        return 1
    print("rbac_check: the client used exactly what the roles grant (%d grants)"
          % len(used_set(used)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
