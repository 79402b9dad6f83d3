#!/usr/bin/env python3
"""A small Kubernetes API server for the kube adapter's integration tests.

It keeps the semantics a production controller relies on, as the real kube-apiserver has them:
  - one global, monotonically increasing resourceVersion (a decimal string) set on every write;
    metadata.uid, creationTimestamp and generation (bumped when anything but metadata/status
    changes); a write that changes nothing is a no-op and keeps the resourceVersion;
  - LIST with labelSelector, fieldSelector, limit and continue: every page of one list comes from
    the snapshot taken at the first page's resourceVersion; a continue token older than the
    compaction point answers 410 Expired;
  - WATCH from a resourceVersion: every change after it, in order, as chunked JSON lines, with
    BOOKMARK events when allowWatchBookmarks=true; a resourceVersion older than the compaction
    point gets HTTP 200 and an ERROR event carrying a Status with code 410, then the stream
    ends, as the real server's watch cache answers (POST /_test/config {"expiredWatch":"http"}
    makes it answer HTTP 410 Gone with a Status body instead); a watch that is open when the
    history is compacted gets the same ERROR event (as when the watch cache is re-initialised);
  - CREATE (409 AlreadyExists), GET (404 NotFound), PUT with a metadata.resourceVersion
    precondition (409 Conflict when stale; required for custom resources), PATCH with
    application/merge-patch+json (a resourceVersion in the patch is a precondition), DELETE with
    finalizers (deletionTimestamp set, the object stays until an update empties the finalizers;
    no finalizer may be added while deleting) and DeleteOptions preconditions;
  - the /status subresource: a status write changes only .status, a main write (and a create)
    ignores .status; a pod is created Pending;
  - policy/v1 Eviction: 429 TooManyRequests while a PDB selecting a Running pod allows no
    disruption (status.disruptionsAllowed when the test has set a status, else computed from
    minAvailable/maxUnavailable over the matching Running pods); otherwise the pod is deleted
    (finalizers respected), 201, and a PDB status that was set is decremented;
  - the pods/binding subresource (a v1 Binding, as kube-scheduler posts it): sets spec.nodeName
    and a PodScheduled=True status condition, 201; 409 Conflict when the pod is already bound or
    is being deleted; 400 when the Binding names another pod or no node;
  - bearer-token authentication (401 Unauthorized otherwise), HTTP/1.1 keep-alive;
  - optionally HTTPS (TLS 1.2 or newer, HTTP/1.1 by ALPN) with --tls-cert FILE --tls-key FILE
    (PEM; the certificate chain and its private key), and with --client-ca FILE a client
    certificate signed by that CA is required in the handshake (a connection without one is
    refused there); a request on such a connection is authenticated by it, with or without a
    bearer token, as the real server maps the certificate's CN to a user. Each connection's
    handshake runs on that connection's own thread, so none holds up the others.
  - a watch with a selector sees an object entering the selection as ADDED and leaving it as
    DELETED; a watch without a resourceVersion starts with ADDED events for what exists.
apps/v1 deployments are stored (with a status subresource) but nothing acts on them: the e2e
stand-in (tests/e2e/standin.py) plays the ReplicaSet controller and the scheduler.
Not modelled: strategic-merge and JSON patch (415), graceful pod deletion (pods go at once),
namespaces as objects, admission, schemas, resourceVersionMatch, sendInitialEvents.

Test hooks, without authentication, under /_test/ only:
  POST /_test/compact          forget the history up to the current resourceVersion; open
                               watches get an ERROR 410 event and end
  POST /_test/config           {"expiredWatch": "event" | "http"}: how a too-old watch is told
  POST /_test/drop-watches     close every open watch connection abruptly (no final chunk)
  GET  /_test/stats            {"resourceVersion", "compactedResourceVersion", "openWatches"}
  GET  /_test/requests         every authenticated API request so far, oldest first (the newest
                               REQUESTS_MAX are kept), as a JSON list of {"verb", "group",
                               "resource", "namespace", "name", "user_agent"}: verb is the
                               Kubernetes authorization verb (get, list, watch, create, update,
                               patch, delete, deletecollection; a GET with watch=true is watch, a
                               GET on a collection is list), resource has "/subresource" appended
                               when there is one ("pods/eviction", "nodes/status"), namespace and
                               name are "" when absent. It is what tests/deploy/rbac_check.py
                               compares with the RBAC roles in deploy/.

Usage: apiserver.py --token TOKEN [--bookmark-ms 1000] [--history 100000]
                    [--tls-cert FILE --tls-key FILE [--client-ca FILE]]
Prints the loopback port it listens on, then serves.
"""
import argparse
import base64
import bisect
import collections
import copy
import json
import re
import socket
import ssl
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

# (group, version, plural) -> (kind, namespaced, has status subresource, custom resource)
RESOURCES = {
    ("", "v1", "pods"): ("Pod", True, True, False),
    ("", "v1", "nodes"): ("Node", False, True, False),
    ("karpenter.sh", "v1", "nodepools"): ("NodePool", False, True, True),
    ("karpenter.sh", "v1", "nodeclaims"): ("NodeClaim", False, True, True),
    ("karpenter.sh", "v1alpha1", "nodeoverlays"): ("NodeOverlay", False, True, True),
    ("karpenter.k8s.aws", "v1", "ec2nodeclasses"): ("EC2NodeClass", False, True, True),
    ("policy", "v1", "poddisruptionbudgets"): ("PodDisruptionBudget", True, True, False),
    ("coordination.k8s.io", "v1", "leases"): ("Lease", True, False, False),
    ("", "v1", "events"): ("Event", True, False, False),
    ("apps", "v1", "daemonsets"): ("DaemonSet", True, True, False),
    ("apps", "v1", "deployments"): ("Deployment", True, True, False),
    ("apps", "v1", "replicasets"): ("ReplicaSet", True, True, False),
    ("apps", "v1", "statefulsets"): ("StatefulSet", True, True, False),
    ("batch", "v1", "jobs"): ("Job", True, True, False),
    ("scheduling.k8s.io", "v1", "priorityclasses"): ("PriorityClass", False, False, False),
    ("node.k8s.io", "v1", "runtimeclasses"): ("RuntimeClass", False, False, False),
    ("", "v1", "persistentvolumeclaims"): ("PersistentVolumeClaim", True, True, False),
    ("", "v1", "persistentvolumes"): ("PersistentVolume", False, True, False),
    ("storage.k8s.io", "v1", "storageclasses"): ("StorageClass", False, False, False),
    ("storage.k8s.io", "v1", "csinodes"): ("CSINode", False, False, False),
}
PODS = ("", "v1", "pods")
PDBS = ("policy", "v1", "poddisruptionbudgets")
# Subresources that only take a POST of an object of their own (an Eviction, a Binding).
POST_SUBRESOURCES = ("eviction", "binding")
SNAPSHOTS_MAX = 64  # Paged lists in progress; an older continue token answers 410 Expired.
REQUESTS_MAX = 100000  # Entries of the request log; the oldest go first.
HANDSHAKE_TIMEOUT_S = 10  # A TLS client that stalls in the handshake is dropped after it.
NAME_RE = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")


class ApiError(Exception):
    def __init__(self, code, reason, message, details=None):
        super().__init__(message)
        self.code, self.reason, self.message, self.details = code, reason, message, details


def status_body(code, reason, message, details=None):
    body = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "code": code,
            "status": "Success" if code < 400 else "Failure", "message": message}
    if reason:
        body["reason"] = reason
    if details is not None:
        body["details"] = details
    return body


def now_rfc3339():
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def api_version(gvr):
    return gvr[1] if gvr[0] == "" else "%s/%s" % (gvr[0], gvr[1])


def gone(message):
    return ApiError(410, "Expired", message)


# ---- selectors -----------------------------------------------------------------------------

def split_top(text):
    """Splits a selector on commas outside parentheses."""
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    return [p.strip() for p in parts if p.strip()]


def parse_label_selector(text):
    reqs = []
    for term in split_top(text or ""):
        m = re.match(r"^([\w./-]+)\s+(in|notin)\s+\(([^)]*)\)$", term)
        if m:
            values = {v.strip() for v in m.group(3).split(",") if v.strip()}
            reqs.append((m.group(1), m.group(2), values))
            continue
        m = re.match(r"^([\w./-]+)\s*(==|!=|=)\s*([\w.-]*)$", term)
        if m:
            op = "!=" if m.group(2) == "!=" else "="
            reqs.append((m.group(1), op, m.group(3)))
            continue
        m = re.match(r"^(!?)([\w./-]+)$", term)
        if m:
            reqs.append((m.group(2), "!exists" if m.group(1) else "exists", None))
            continue
        raise ApiError(400, "BadRequest", "unable to parse requirement: %r" % term)
    return reqs


def labels_match(reqs, labels):
    for key, op, value in reqs:
        present = key in labels
        if op == "=" and labels.get(key) != value:
            return False
        if op == "!=" and labels.get(key) == value:
            return False
        if op == "in" and labels.get(key) not in value:
            return False
        if op == "notin" and present and labels[key] in value:
            return False
        if op == "exists" and not present:
            return False
        if op == "!exists" and present:
            return False
    return True


FIELDS = {
    "metadata.name": lambda o: o["metadata"].get("name", ""),
    "metadata.namespace": lambda o: o["metadata"].get("namespace", ""),
    "spec.nodeName": lambda o: (o.get("spec") or {}).get("nodeName", ""),
    "status.phase": lambda o: (o.get("status") or {}).get("phase", ""),
}


def parse_field_selector(text):
    reqs = []
    for term in split_top(text or ""):
        m = re.match(r"^([\w.]+)\s*(==|!=|=)\s*(.*)$", term)
        if not m:
            raise ApiError(400, "BadRequest", "invalid field selector: %r" % term)
        if m.group(1) not in FIELDS:
            raise ApiError(400, "BadRequest",
                           "field label not supported: %s" % m.group(1))
        reqs.append((FIELDS[m.group(1)], m.group(2) != "!=", m.group(3)))
    return reqs


def fields_match(reqs, obj):
    return all((get(obj) == value) == equal for get, equal, value in reqs)


def selected_type(event_type, obj, prev, labels, fields):
    """The event a selector watch sees: an object entering the selection is ADDED, one leaving
    it DELETED, as the real watch cache reports them; None when it is outside before and after."""

    def selected(o):
        return o is not None and labels_match(labels, o["metadata"].get("labels") or {}) \
            and fields_match(fields, o)

    now = selected(obj)
    if event_type != "MODIFIED":
        return event_type if now else None
    before = selected(prev)
    if now and before:
        return "MODIFIED"
    if now:
        return "ADDED"
    return "DELETED" if before else None


def pdb_selects(pdb, pod):
    selector = (pdb.get("spec") or {}).get("selector")
    if selector is None:
        return False  # policy/v1: a null selector selects nothing.
    labels = pod["metadata"].get("labels") or {}
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr.get("key"), expr.get("operator"), set(expr.get("values") or [])
        if op == "In" and labels.get(key) not in values:
            return False
        if op == "NotIn" and key in labels and labels[key] in values:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
    return True


def merge_patch(target, patch):
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def scaled(value, total, round_up):
    if isinstance(value, str) and value.endswith("%"):
        try:
            percent = int(value[:-1])
        except ValueError:
            raise ApiError(400, "BadRequest", "invalid percentage %r" % value)
        whole = percent * total
        return (whole + 99) // 100 if round_up else whole // 100
    if isinstance(value, int):
        return value
    raise ApiError(400, "BadRequest", "invalid int-or-percent %r" % (value,))


# ---- the store ------------------------------------------------------------------------------

class Store:
    def __init__(self, history_max):
        self.cond = threading.Condition()
        self.rv = 1
        self.compacted_rv = 0
        self.objects = {}  # gvr -> {(namespace, name): object}
        self.history = []  # (rv, gvr, type, object)
        self.history_max = history_max
        self.snapshots = {}  # id -> (rv, [objects])
        self.watch_epoch = 0  # bumped to end open watches with 410
        self.drop_epoch = 0  # bumped to drop open watch connections
        self.open_watches = 0
        for gvr in RESOURCES:
            self.objects[gvr] = {}

    # All methods below run with self.cond held.
    def record(self, gvr, event_type, obj, prev=None):
        """Appends an event; `prev` is the object before a MODIFIED, for selector watches."""
        self.history.append((int(obj["metadata"]["resourceVersion"]), gvr, event_type,
                             copy.deepcopy(obj), prev))
        if len(self.history) > self.history_max:
            dropped = self.history[: len(self.history) - self.history_max]
            self.history = self.history[len(dropped):]
            self.compacted_rv = dropped[-1][0]
        self.cond.notify_all()

    def next_rv(self):
        self.rv += 1
        return str(self.rv)

    def compact(self):
        self.compacted_rv = self.rv
        self.history = []
        self.snapshots = {}
        self.watch_epoch += 1
        self.cond.notify_all()

    def get(self, gvr, ns, name):
        obj = self.objects[gvr].get((ns, name))
        if obj is None:
            kind = RESOURCES[gvr][0]
            raise ApiError(404, "NotFound", '%s "%s" not found' % (plural_of(gvr), name),
                           {"name": name, "kind": plural_of(gvr)} if kind else None)
        return obj

    def create(self, gvr, ns, body):
        kind, namespaced, _, _ = RESOURCES[gvr]
        check_body(gvr, body)
        meta = body.setdefault("metadata", {})
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = meta["generateName"] + uuid.uuid4().hex[:5]
        name = meta.get("name")
        if not isinstance(name, str) or not NAME_RE.match(name):
            raise ApiError(422, "Invalid", "%s: metadata.name: Invalid value: %r" % (kind, name))
        if namespaced:
            if meta.get("namespace", ns) != ns:
                raise ApiError(400, "BadRequest",
                               "the namespace of the object does not match the request")
            meta["namespace"] = ns
        else:
            meta.pop("namespace", None)
        if (ns, name) in self.objects[gvr]:
            raise ApiError(409, "AlreadyExists",
                           '%s "%s" already exists' % (plural_of(gvr), name),
                           {"name": name, "kind": plural_of(gvr)})
        for field in ("deletionTimestamp", "deletionGracePeriodSeconds"):
            meta.pop(field, None)
        if RESOURCES[gvr][2]:  # Status is written through /status only.
            body.pop("status", None)
            if gvr == PODS:
                body["status"] = {"phase": "Pending"}
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = now_rfc3339()
        meta["generation"] = 1
        meta["resourceVersion"] = self.next_rv()
        body["kind"], body["apiVersion"] = kind, api_version(gvr)
        self.objects[gvr][(ns, name)] = body
        self.record(gvr, "ADDED", body)
        return body

    def update(self, gvr, ns, name, body, subresource, precondition_required):
        kind, _, has_status, custom = RESOURCES[gvr]
        old = self.get(gvr, ns, name)
        check_body(gvr, body)
        meta = body.get("metadata")
        if not isinstance(meta, dict):
            raise ApiError(400, "BadRequest", "metadata is required")
        if meta.get("name", name) != name or (ns and meta.get("namespace", ns) != ns):
            raise ApiError(400, "BadRequest",
                           "the name or namespace of the object does not match the request")
        want_rv = meta.get("resourceVersion")
        if want_rv in (None, "") and precondition_required and custom:
            raise ApiError(422, "Invalid", "%s \"%s\": metadata.resourceVersion: Invalid value: "
                           "0: must be specified for an update" % (kind, name))
        if want_rv not in (None, "") and want_rv != old["metadata"]["resourceVersion"]:
            raise ApiError(409, "Conflict",
                           'Operation cannot be fulfilled on %s "%s": the object has been '
                           "modified; please apply your changes to the latest version and "
                           "try again" % (plural_of(gvr), name),
                           {"name": name, "kind": plural_of(gvr)})
        if subresource == "status":
            new = copy.deepcopy(old)
            if "status" in body:
                new["status"] = copy.deepcopy(body["status"])
            else:
                new.pop("status", None)
        else:
            new = copy.deepcopy(body)
            new["metadata"] = copy.deepcopy(meta)
            if has_status:
                if "status" in old:
                    new["status"] = copy.deepcopy(old["status"])
                else:
                    new.pop("status", None)
            for field in ("uid", "creationTimestamp", "deletionTimestamp",
                          "deletionGracePeriodSeconds", "generation", "namespace", "name"):
                if field in old["metadata"]:
                    new["metadata"][field] = old["metadata"][field]
                else:
                    new["metadata"].pop(field, None)
            if "deletionTimestamp" in old["metadata"]:
                added = set(new["metadata"].get("finalizers") or []) - set(
                    old["metadata"].get("finalizers") or [])
                if added:
                    raise ApiError(422, "Invalid", "metadata.finalizers: Forbidden: no new "
                                   "finalizers can be added if the object is being deleted, "
                                   "found new finalizers %s" % sorted(added))
        new["kind"], new["apiVersion"] = kind, api_version(gvr)
        new["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"]
        if new == old:
            return old  # A no-op write keeps the resourceVersion and emits nothing.

        def spec_of(o):
            return {k: v for k, v in o.items() if k not in ("metadata", "status")}

        if spec_of(new) != spec_of(old):
            new["metadata"]["generation"] = old["metadata"].get("generation", 1) + 1
        new["metadata"]["resourceVersion"] = self.next_rv()
        if "deletionTimestamp" in new["metadata"] and not new["metadata"].get("finalizers"):
            del self.objects[gvr][(ns, name)]
            self.record(gvr, "DELETED", new)
            return new
        self.objects[gvr][(ns, name)] = new
        self.record(gvr, "MODIFIED", new, old)
        return new

    def delete(self, gvr, ns, name, options):
        old = self.get(gvr, ns, name)
        pre = (options or {}).get("preconditions") or {}
        if pre.get("uid") not in (None, old["metadata"]["uid"]) or pre.get(
                "resourceVersion") not in (None, old["metadata"]["resourceVersion"]):
            raise ApiError(409, "Conflict", 'Operation cannot be fulfilled on %s "%s": '
                           "precondition failed" % (plural_of(gvr), name),
                           {"name": name, "kind": plural_of(gvr)})
        if old["metadata"].get("finalizers"):
            if "deletionTimestamp" in old["metadata"]:
                return old
            new = copy.deepcopy(old)
            new["metadata"]["deletionTimestamp"] = now_rfc3339()
            new["metadata"]["deletionGracePeriodSeconds"] = 0
            new["metadata"]["resourceVersion"] = self.next_rv()
            self.objects[gvr][(ns, name)] = new
            self.record(gvr, "MODIFIED", new, old)
            return new
        gone_obj = copy.deepcopy(old)
        gone_obj["metadata"]["resourceVersion"] = self.next_rv()
        del self.objects[gvr][(ns, name)]
        self.record(gvr, "DELETED", gone_obj)
        return gone_obj

    def list_snapshot(self, gvr, ns, labels, fields):
        items = [copy.deepcopy(o) for (ons, _), o in sorted(self.objects[gvr].items())
                 if (ns is None or ons == ns)
                 and labels_match(labels, o["metadata"].get("labels") or {})
                 and fields_match(fields, o)]
        return self.rv, items

    def evict(self, ns, name, body):
        if not isinstance(body, dict) or body.get("kind") not in (None, "Eviction"):
            raise ApiError(400, "BadRequest", "the body must be a policy/v1 Eviction")
        if (body.get("metadata") or {}).get("name", name) != name:
            raise ApiError(400, "BadRequest", "name in URL does not match name in Eviction")
        pod = self.get(PODS, ns, name)
        phase = (pod.get("status") or {}).get("phase", "")
        if phase == "Running" and "deletionTimestamp" not in pod["metadata"]:
            pdbs = [p for (pns, _), p in sorted(self.objects[PDBS].items())
                    if pns == ns and pdb_selects(p, pod)]
            if len(pdbs) > 1:
                raise ApiError(500, "InternalError",
                               "This pod has more than one PodDisruptionBudget, which the "
                               "eviction subresource does not support.")
            if pdbs:
                self.consume_disruption(pdbs[0])
        return self.delete(PODS, ns, name, body.get("deleteOptions"))

    def bind(self, ns, name, body):
        """POST pods/NAME/binding: assigns the pod to the Binding's target node, as the real
        server's binding storage does (spec.nodeName, and a PodScheduled=True condition)."""
        if not isinstance(body, dict) or body.get("kind") not in (None, "Binding"):
            raise ApiError(400, "BadRequest", "the body must be a v1 Binding")
        if (body.get("metadata") or {}).get("name", name) != name:
            raise ApiError(400, "BadRequest", "name in URL does not match name in Binding object")
        target = body.get("target")
        if not isinstance(target, dict) or target.get("kind") not in (None, "", "Node") \
                or not isinstance(target.get("name"), str) or not target["name"]:
            raise ApiError(400, "BadRequest", "the Binding's target must name a Node")
        pod = self.get(PODS, ns, name)
        conflict = None
        if "deletionTimestamp" in pod["metadata"]:
            conflict = "pod %s is being deleted, cannot be assigned to a host" % name
        elif (pod.get("spec") or {}).get("nodeName"):
            conflict = "pod %s is already assigned to node %r" % (name, pod["spec"]["nodeName"])
        if conflict:
            raise ApiError(409, "Conflict", 'Operation cannot be fulfilled on pods/binding "%s": '
                           "%s" % (name, conflict), {"name": name, "kind": "pods/binding"})
        new = copy.deepcopy(pod)
        new.setdefault("spec", {})["nodeName"] = target["name"]
        status = new.setdefault("status", {})
        conditions = [c for c in status.get("conditions") or []
                      if not isinstance(c, dict) or c.get("type") != "PodScheduled"]
        conditions.append({"type": "PodScheduled", "status": "True",
                           "lastTransitionTime": now_rfc3339()})
        status["conditions"] = conditions
        new["metadata"]["generation"] = pod["metadata"].get("generation", 1) + 1
        new["metadata"]["resourceVersion"] = self.next_rv()
        self.objects[PODS][(ns, name)] = new
        self.record(PODS, "MODIFIED", new, pod)
        return new

    def consume_disruption(self, pdb):
        status = pdb.get("status") or {}
        if "disruptionsAllowed" in status:
            allowed, healthy, desired = (status["disruptionsAllowed"],
                                         status.get("currentHealthy", 0),
                                         status.get("desiredHealthy", 0))
        else:
            allowed, healthy, desired = self.compute_disruptions(pdb)
        if allowed <= 0:
            pdb_name = pdb["metadata"]["name"]
            raise ApiError(429, "TooManyRequests",
                           "Cannot evict pod as it would violate the pod's disruption budget.",
                           {"causes": [{"reason": "DisruptionBudget",
                                        "message": "The disruption budget %s needs %d healthy "
                                        "pods and has %d currently" % (pdb_name, desired,
                                                                       healthy)}]})
        if "disruptionsAllowed" in status:
            new = copy.deepcopy(pdb)
            new["status"]["disruptionsAllowed"] = allowed - 1
            new["metadata"]["resourceVersion"] = self.next_rv()
            key = (pdb["metadata"]["namespace"], pdb["metadata"]["name"])
            self.objects[PDBS][key] = new
            self.record(PDBS, "MODIFIED", new, pdb)

    def compute_disruptions(self, pdb):
        ns = pdb["metadata"]["namespace"]
        pods = [p for (pns, _), p in self.objects[PODS].items()
                if pns == ns and pdb_selects(pdb, p) and "deletionTimestamp" not in p["metadata"]]
        healthy = sum(1 for p in pods if (p.get("status") or {}).get("phase") == "Running")
        spec = pdb.get("spec") or {}
        if "minAvailable" in spec:
            desired = scaled(spec["minAvailable"], len(pods), True)
        elif "maxUnavailable" in spec:
            desired = len(pods) - scaled(spec["maxUnavailable"], len(pods), True)
        else:
            desired = len(pods)  # policy/v1 default: maxUnavailable unset means none allowed
        return max(0, healthy - desired), healthy, desired


def plural_of(gvr):
    return gvr[2]


def check_body(gvr, body):
    if not isinstance(body, dict):
        raise ApiError(400, "BadRequest", "the body must be a JSON object")
    kind = RESOURCES[gvr][0]
    if body.get("kind") not in (None, kind):
        raise ApiError(400, "BadRequest", "kind %r does not match %s" % (body.get("kind"), kind))
    if body.get("apiVersion") not in (None, api_version(gvr)):
        raise ApiError(400, "BadRequest", "apiVersion %r does not match %s"
                       % (body.get("apiVersion"), api_version(gvr)))
    if "metadata" in body and not isinstance(body["metadata"], dict):
        raise ApiError(400, "BadRequest", "metadata must be an object")


def split_path(path):
    """-> (group, version, namespace or None, [resource, name, subresource...]) or None when
    the path is not under /api/v1 or /apis/GROUP/VERSION."""
    parts = [p for p in path.split("/") if p]
    if parts[:2] == ["api", "v1"]:
        group, version, rest = "", "v1", parts[2:]
    elif len(parts) >= 3 and parts[0] == "apis":
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return None
    ns = None
    if len(rest) >= 3 and rest[0] == "namespaces":
        ns, rest = rest[1], rest[2:]
    return group, version, ns, rest


def request_record(method, path, query, user_agent):
    """The request log entry of one API request: what an authorizer would be asked."""
    split = split_path(path)
    group, _, ns, rest = split if split else ("", "", None, [])
    name = rest[1] if len(rest) >= 2 else ""
    resource = "/".join([rest[0]] + rest[2:3]) if rest else ""
    if method == "GET":
        verb = "get" if name else ("watch" if query.get("watch") in ("1", "true") else "list")
    elif method == "DELETE":
        verb = "delete" if name else "deletecollection"
    else:
        verb = {"POST": "create", "PUT": "update", "PATCH": "patch"}.get(method, method.lower())
    return {"verb": verb, "group": group, "resource": resource, "namespace": ns or "",
            "name": name, "user_agent": user_agent}


def parse_path(path):
    """-> (gvr, namespace or None, name or None, subresource or None)."""
    split = split_path(path)
    if split is None:
        raise ApiError(404, "NotFound", "the server could not find the requested resource")
    group, version, ns, rest = split
    if not rest or len(rest) > 3:
        raise ApiError(404, "NotFound", "the server could not find the requested resource")
    gvr = (group, version, rest[0])
    if gvr not in RESOURCES:
        raise ApiError(404, "NotFound", "the server could not find the requested resource")
    namespaced = RESOURCES[gvr][1]
    if ns is not None and not namespaced:
        raise ApiError(404, "NotFound", "%s is cluster-scoped" % rest[0])
    name = rest[1] if len(rest) >= 2 else None
    sub = rest[2] if len(rest) == 3 else None
    if namespaced and name is not None and ns is None:
        raise ApiError(404, "NotFound", "%s is namespaced" % rest[0])
    if not namespaced:
        ns = ""
    if sub not in (None, "status") + POST_SUBRESOURCES \
            or (sub == "status" and not RESOURCES[gvr][2]) \
            or (sub in POST_SUBRESOURCES and gvr != PODS):
        raise ApiError(404, "NotFound", "the server could not find the requested resource")
    return gvr, ns, name, sub


# ---- HTTP -----------------------------------------------------------------------------------

class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # Headers and body go out as separate writes.

    def log_message(self, *args):
        pass

    def send_json(self, code, body):
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def read_body(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if not raw:
            return None
        try:
            return json.loads(raw)
        except ValueError as e:
            raise ApiError(400, "BadRequest", "the body is not valid JSON: %s" % e)

    def do_GET(self):
        self.dispatch("GET")

    def do_POST(self):
        self.dispatch("POST")

    def do_PUT(self):
        self.dispatch("PUT")

    def do_PATCH(self):
        self.dispatch("PATCH")

    def do_DELETE(self):
        self.dispatch("DELETE")

    def dispatch(self, method):
        url = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
        try:
            if url.path.startswith("/_test/"):
                return self.test_hook(method, url.path)
            if url.path in ("/readyz", "/healthz", "/livez"):
                return self.send_ok()
            if not self.authenticated():
                body = self.read_body_quietly()
                del body
                raise ApiError(401, "Unauthorized", "Unauthorized")
            with self.server.store.cond:
                self.server.requests.append(request_record(
                    method, url.path, query, self.headers.get("User-Agent") or ""))
            self.serve_api(method, url.path, query)
        except ApiError as e:
            self.send_json(e.code, status_body(e.code, e.reason, e.message, e.details))

    def authenticated(self):
        if self.headers.get("Authorization") == "Bearer " + self.server.token:
            return True
        # With --client-ca the handshake has required and verified a client certificate.
        return isinstance(self.connection, ssl.SSLSocket) and bool(self.connection.getpeercert())

    def read_body_quietly(self):
        try:
            return self.read_body()
        except ApiError:
            return None

    def send_ok(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def test_hook(self, method, path):
        store = self.server.store
        body = self.read_body_quietly()
        if method == "GET" and path == "/_test/requests":
            with store.cond:
                requests = list(self.server.requests)
            return self.send_json(200, requests)
        with store.cond:
            if method == "POST" and path == "/_test/compact":
                store.compact()
            elif method == "POST" and path == "/_test/config":
                mode = (body or {}).get("expiredWatch") if isinstance(body, dict) else None
                if mode not in ("event", "http"):
                    raise ApiError(400, "BadRequest", 'expiredWatch must be "event" or "http"')
                self.server.expired_watch = mode
            elif method == "POST" and path == "/_test/drop-watches":
                store.drop_epoch += 1
                store.cond.notify_all()
            elif not (method == "GET" and path == "/_test/stats"):
                raise ApiError(404, "NotFound", "no test hook %s %s" % (method, path))
            stats = {"resourceVersion": str(store.rv),
                     "compactedResourceVersion": str(store.compacted_rv),
                     "openWatches": store.open_watches}
        self.send_json(200, stats)

    def serve_api(self, method, path, query):
        body = self.read_body()  # First, so that an error answer leaves the connection usable.
        gvr, ns, name, sub = parse_path(path)
        store = self.server.store
        if method == "GET" and name is None:
            if query.get("watch") in ("1", "true"):
                return self.watch(gvr, ns, query)
            return self.list(gvr, ns, query)
        with store.cond:
            if method == "GET" and name is not None and sub not in POST_SUBRESOURCES:
                return self.send_json(200, store.get(gvr, ns, name))
            if method == "POST" and name is None:
                return self.send_json(201, store.create(gvr, ns, body))
            if method == "POST" and sub == "eviction":
                store.evict(ns, name, body)
                return self.send_json(201, status_body(201, "", "evicted"))
            if method == "POST" and sub == "binding":
                store.bind(ns, name, body)
                return self.send_json(201, status_body(201, "", "bound"))
            if method == "PUT" and name is not None and sub not in POST_SUBRESOURCES:
                return self.send_json(200, store.update(gvr, ns, name, body, sub, True))
            if method == "PATCH" and name is not None and sub not in POST_SUBRESOURCES:
                return self.send_json(200, self.patch(gvr, ns, name, sub, body))
            if method == "DELETE" and name is not None and sub is None:
                return self.send_json(200, store.delete(gvr, ns, name, body))
        raise ApiError(405, "MethodNotAllowed", "%s is not allowed on %s" % (method, path))

    def patch(self, gvr, ns, name, sub, body):
        content_type = (self.headers.get("Content-Type") or "").split(";")[0].strip()
        if content_type != "application/merge-patch+json":
            raise ApiError(415, "UnsupportedMediaType",
                           "the body of the request was in an unknown format - accepted media "
                           "types include: application/merge-patch+json")
        if not isinstance(body, dict):
            raise ApiError(400, "BadRequest", "a merge patch must be a JSON object")
        store = self.server.store
        old = store.get(gvr, ns, name)
        new = merge_patch(old, body)
        if not isinstance(new.get("metadata"), dict):
            raise ApiError(400, "BadRequest", "the patch removed metadata")
        patch_rv = (body.get("metadata") or {}).get("resourceVersion")
        new["metadata"]["resourceVersion"] = patch_rv or old["metadata"]["resourceVersion"]
        return store.update(gvr, ns, name, new, sub, False)

    def list(self, gvr, ns, query):
        store = self.server.store
        try:
            limit = int(query.get("limit") or 0)
        except ValueError:
            raise ApiError(400, "BadRequest", "limit must be an integer")
        if limit < 0:
            raise ApiError(400, "BadRequest", "limit must not be negative")
        with store.cond:
            token = query.get("continue")
            if token:
                rv, items, offset = self.resume(token)
            else:
                labels = parse_label_selector(query.get("labelSelector"))
                fields = parse_field_selector(query.get("fieldSelector"))
                asked = query.get("resourceVersion")
                if asked not in (None, "", "0"):
                    self.check_rv(asked)
                rv, items = store.list_snapshot(gvr, ns, labels, fields)
                offset = 0
            meta = {"resourceVersion": str(rv)}
            page = items[offset:]
            if limit and len(page) > limit:
                page = page[:limit]
                snap_id = uuid.uuid4().hex
                store.snapshots[snap_id] = (rv, items)
                while len(store.snapshots) > SNAPSHOTS_MAX:  # Oldest first; its token gets 410.
                    del store.snapshots[next(iter(store.snapshots))]
                meta["continue"] = base64.urlsafe_b64encode(json.dumps(
                    {"id": snap_id, "rv": rv, "offset": offset + limit}).encode()).decode()
                meta["remainingItemCount"] = len(items) - offset - limit
        self.send_json(200, {"kind": RESOURCES[gvr][0] + "List", "apiVersion": api_version(gvr),
                             "metadata": meta, "items": page})

    def resume(self, token):
        store = self.server.store
        try:
            state = json.loads(base64.urlsafe_b64decode(token.encode()))
            snap_id, rv, offset = state["id"], int(state["rv"]), int(state["offset"])
        except (ValueError, KeyError, TypeError):
            raise ApiError(400, "BadRequest", "invalid continue token")
        if snap_id not in store.snapshots or rv < store.compacted_rv:
            raise gone("The provided continue parameter is too old to display a consistent "
                       "list result. You can start a new list without the continue parameter.")
        return rv, store.snapshots[snap_id][1], offset

    def check_rv(self, asked, expired_is_error=True):
        store = self.server.store
        try:
            rv = int(asked)
        except ValueError:
            raise ApiError(400, "BadRequest", "invalid resourceVersion %r" % asked)
        if rv < store.compacted_rv and expired_is_error:
            raise gone("too old resource version: %d (%d)" % (rv, store.compacted_rv))
        return rv

    def watch(self, gvr, ns, query):
        store = self.server.store
        labels = parse_label_selector(query.get("labelSelector"))
        fields = parse_field_selector(query.get("fieldSelector"))
        bookmarks = query.get("allowWatchBookmarks") in ("1", "true")
        try:
            timeout_s = float(query.get("timeoutSeconds") or 1800)
        except ValueError:
            raise ApiError(400, "BadRequest", "timeoutSeconds must be a number")
        asked = query.get("resourceVersion")
        with store.cond:
            pending = []
            if asked in (None, "", "0"):
                since, items = store.list_snapshot(gvr, ns, labels, fields)
                pending = [{"type": "ADDED", "object": o} for o in items]
            else:
                since = self.check_rv(asked, self.server.expired_watch == "http")
            watch_epoch, drop_epoch = store.watch_epoch, store.drop_epoch
            store.open_watches += 1
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            self.stream(gvr, ns, labels, fields, bookmarks, timeout_s, since, pending,
                        watch_epoch, drop_epoch)
        except OSError:  # The client went away.
            self.close_connection = True
        finally:
            with store.cond:
                store.open_watches -= 1

    def send_chunk(self, data):
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def stream(self, gvr, ns, labels, fields, bookmarks, timeout_s, since, pending,
               watch_epoch, drop_epoch):
        store = self.server.store
        deadline = time.monotonic() + timeout_s
        interval_s = self.server.bookmark_ms / 1000.0
        next_bookmark = time.monotonic() + interval_s
        while True:
            for event in pending:
                self.send_chunk(json.dumps(event).encode() + b"\n")
            pending = []
            now = time.monotonic()
            if now >= deadline:
                self.send_chunk(b"")
                return
            with store.cond:
                store.cond.wait_for(
                    lambda: store.drop_epoch != drop_epoch or store.watch_epoch != watch_epoch
                    or since < store.compacted_rv or store.rv > since,
                    max(0.0, min(deadline, next_bookmark) - now))
                if store.drop_epoch != drop_epoch:
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                if store.watch_epoch != watch_epoch or since < store.compacted_rv:
                    error = status_body(410, "Expired", "too old resource version: %d (%d)"
                                        % (since, store.compacted_rv))
                    pending = [{"type": "ERROR", "object": error}]
                    deadline = 0
                    continue
                first = bisect.bisect_right(store.history, since, key=lambda e: e[0])
                for _, egvr, etype, obj, prev in store.history[first:]:
                    if egvr == gvr and (not ns or obj["metadata"].get("namespace") == ns):
                        etype = selected_type(etype, obj, prev, labels, fields)
                        if etype:
                            pending.append({"type": etype, "object": obj})
                since = store.rv
                if bookmarks and time.monotonic() >= next_bookmark:
                    pending.append({"type": "BOOKMARK", "object": {
                        "kind": RESOURCES[gvr][0], "apiVersion": api_version(gvr),
                        "metadata": {"resourceVersion": str(store.rv)}}})
                if time.monotonic() >= next_bookmark:
                    next_bookmark = time.monotonic() + interval_s


class TlsServer(ThreadingHTTPServer):
    """HTTPS: an accepted connection is wrapped without a handshake, which then runs on the
    connection's own thread (finish_request), so the accepting loop never waits on a client."""

    def __init__(self, address, handler, context):
        super().__init__(address, handler)
        self.context = context

    def get_request(self):
        sock, address = super().get_request()
        return self.context.wrap_socket(sock, server_side=True,
                                        do_handshake_on_connect=False), address

    def finish_request(self, request, client_address):
        request.settimeout(HANDSHAKE_TIMEOUT_S)
        try:
            request.do_handshake()
        except (OSError, ValueError):  # ssl.SSLError is an OSError: untrusted, no certificate.
            return
        request.settimeout(None)
        super().finish_request(request, client_address)


def tls_context(args):
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(args.tls_cert, args.tls_key)
    context.set_alpn_protocols(["http/1.1"])
    if args.client_ca:
        context.verify_mode = ssl.CERT_REQUIRED
        context.load_verify_locations(cafile=args.client_ca)
    return context


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--token", required=True)
    parser.add_argument("--bookmark-ms", type=int, default=1000)
    parser.add_argument("--history", type=int, default=100000)
    parser.add_argument("--tls-cert", help="serve HTTPS with this PEM certificate (chain)")
    parser.add_argument("--tls-key", help="the PEM private key of --tls-cert")
    parser.add_argument("--client-ca", help="require a client certificate signed by this CA")
    args = parser.parse_args()
    if bool(args.tls_cert) != bool(args.tls_key):
        parser.error("--tls-cert and --tls-key go together")
    if args.client_ca and not args.tls_cert:
        parser.error("--client-ca needs --tls-cert and --tls-key")
    if args.tls_cert:
        server = TlsServer(("127.0.0.1", 0), Handler, tls_context(args))
    else:
        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    server.token = args.token
    server.bookmark_ms = args.bookmark_ms
    server.expired_watch = "event"
    server.store = Store(args.history)
    server.requests = collections.deque(maxlen=REQUESTS_MAX)
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
