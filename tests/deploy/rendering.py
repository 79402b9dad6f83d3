"""Renders deploy/ (or an overlay) with `kubectl kustomize`, offline, into a list of objects."""
import os
import shutil
import subprocess
import sys

try:
    import yaml
except ImportError as e:
    sys.exit("tests/deploy needs python3 with PyYAML (apt install python3-yaml): %s" % e)

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DEPLOY = os.path.join(ROOT, "deploy")
OVERLAYS = os.path.join(DEPLOY, "overlays")
KUSTOMIZE_TIMEOUT_S = 60


def kubectl():
    path = shutil.which("kubectl")
    if path is None:
        sys.exit("tests/deploy needs kubectl (v1.14+, with kustomize built in) on PATH")
    return path


def render(directory):
    """-> the objects `kubectl kustomize directory` prints; fails the caller on any error."""
    result = subprocess.run([kubectl(), "kustomize", directory], capture_output=True, text=True,
                            timeout=KUSTOMIZE_TIMEOUT_S)
    if result.returncode != 0:
        raise RuntimeError("kubectl kustomize %s failed:\n%s" % (directory, result.stderr))
    return [d for d in yaml.safe_load_all(result.stdout) if d is not None]


def overlay_names():
    return sorted(n for n in os.listdir(OVERLAYS)
                  if os.path.isfile(os.path.join(OVERLAYS, n, "kustomization.yaml")))


def find(objects, kind, name=None):
    """The one object of `kind` (and `name`); raises when there is not exactly one."""
    found = [o for o in objects
             if o["kind"] == kind and (name is None or o["metadata"]["name"] == name)]
    if len(found) != 1:
        raise LookupError("expected one %s %s, found %d" % (kind, name or "", len(found)))
    return found[0]
