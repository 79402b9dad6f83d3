#!/usr/bin/env python3
"""The parts of a cluster that are not tenon, for end-to-end tests: kubelet, kube-scheduler, the
ReplicaSet (Deployment) controller and the cloud node-lifecycle controller, played against the
test API server (tests/kube/apiserver.py) and moto's EC2.

  standin.py --apiserver http://127.0.0.1:PORT [--token T] --ec2 http://127.0.0.1:MOTOPORT
             [--region us-east-1] [--register-delay 0.5] [--interval 0.2]

Every --interval seconds it makes one pass, each part listing what it needs afresh:
  kubelet     a NodeClaim whose status.providerID names a running EC2 instance, seen for
              --register-delay seconds, gets a Node as a kubelet started by Karpenter's userdata
              registers it: named after the instance's private DNS name, with the NodeClaim's
              labels, taints and startup taints, the karpenter.sh/unregistered:NoExecute taint,
              the well-known labels of the instance, then a Ready status with capacity and
              allocatable. A Node of a running instance without that status gets it again.
  lifecycle   a Node whose instance is terminated, shutting down or unknown to EC2 is deleted
              (the API server keeps it while finalizers remain; removing them is tenon's job).
  podgc       a pod bound to a node that no longer exists is deleted, as the pod garbage
              collector does (at once, where the real one waits 40 s).
  replicaset  each Deployment keeps exactly spec.replicas active pods matching its
              spec.selector.matchLabels (unbound pods go first on scale-down, then the newest);
              its status.replicas and readyReplicas follow.
  scheduler   each pod without spec.nodeName is bound (pods/binding) to the first Node by name
              that is Ready, schedulable, tolerated, selected (nodeSelector, required node
              affinity) and has room for its cpu, memory and pod count; it is then marked
              Running. A pod that fits nowhere gets PodScheduled=False, reason Unschedulable.
404 and 409 answers are normal (tenon writes the same objects concurrently): they are logged
and the next pass tries again. Each action is one line on stderr; each distinct problem is
reported once. SIGTERM (or SIGINT) ends it cleanly after the pass in progress.
Requests carry the User-Agent "tenon-standin", so a request log can tell them from tenon's.
Python 3 standard library and boto3 only; EC2 credentials are "testing" unless the environment
sets AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY.
"""
import argparse
import copy
import decimal
import http.client
import json
import os
import random
import signal
import ssl
import sys
import threading
import time
from urllib.parse import quote, urlsplit

import boto3
import botocore.config
import botocore.exceptions
import botocore.parsers

USER_AGENT = "tenon-standin"
HTTP_TIMEOUT_S = 10  # One API request; the test server answers in milliseconds.
LIST_PAGE_LIMIT = 500  # Objects per list page.
LIST_PAGES_MAX = 100  # Pages per list; a longer list is cut (and logged).
POD_NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # The alphabet of Kubernetes' random names.
POD_NAME_SUFFIX_LEN = 5
PODS_CREATED_PER_PASS_MAX = 100  # Per Deployment; a larger scale-up takes several passes.
PODS_PER_NODE = 110  # The kubelet's default --max-pods.
MEMORY_ALLOCATABLE_PERMILLE = 900  # Allocatable memory: capacity minus 10%.
UNREGISTERED_TAINT = {"key": "karpenter.sh/unregistered", "effect": "NoExecute"}
SCHEDULING_EFFECTS = ("NoSchedule", "NoExecute")  # The taint effects that keep pods off.
TERMINAL_PHASES = ("Succeeded", "Failed")
GONE_STATES = ("shutting-down", "terminated")  # Instance states whose Node is deleted.
KUBELET_VERSION = "v1.31.0"
WARNINGS_REMEMBERED_MAX = 10000  # Distinct problem reports remembered, so each prints once.


def log(message):
    stamp = time.strftime("%H:%M:%S", time.gmtime())
    print("standin %s %s" % (stamp, message), file=sys.stderr, flush=True)


# Problem reports already printed: a problem that persists (an object not understood, a name
# taken) is reported once, not on every pass.
warned = set()


def warn(message):
    if message in warned:
        return
    if len(warned) >= WARNINGS_REMEMBERED_MAX:
        warned.clear()
    warned.add(message)
    log(message)


def now_rfc3339():
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


# ---- the Kubernetes API ---------------------------------------------------------------------

class ApiFailure(Exception):
    """A non-2xx answer (code is the HTTP status) or no answer at all (code 0)."""

    def __init__(self, code, message):
        super().__init__("%d %s" % (code, message))
        self.code = code


class Kube:
    """A JSON client on one keep-alive connection, reopened after any transport error."""

    def __init__(self, url, token):
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("--apiserver must be an http:// or https:// URL: %r" % url)
        self.scheme, self.host = parts.scheme, parts.hostname
        self.port = parts.port or (443 if parts.scheme == "https" else 80)
        self.token = token
        self.conn = None

    def connect(self):
        if self.scheme == "https":
            # A test server with a throwaway certificate: the stand-in verifies nothing.
            context = ssl._create_unverified_context()
            return http.client.HTTPSConnection(self.host, self.port, timeout=HTTP_TIMEOUT_S,
                                               context=context)
        return http.client.HTTPConnection(self.host, self.port, timeout=HTTP_TIMEOUT_S)

    def request(self, method, path, body=None, content_type="application/json"):
        """-> the decoded JSON answer; raises ApiFailure on anything else."""
        headers = {"User-Agent": USER_AGENT, "Accept": "application/json"}
        if self.token:
            headers["Authorization"] = "Bearer " + self.token
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = content_type
        try:
            if self.conn is None:
                self.conn = self.connect()
            self.conn.request(method, path, body=data, headers=headers)
            response = self.conn.getresponse()
            raw = response.read()
        except (OSError, http.client.HTTPException) as e:
            self.conn = None  # The next request opens a new connection.
            raise ApiFailure(0, "%s %s: %s" % (method, path, e))
        if response.status // 100 != 2:
            raise ApiFailure(response.status, "%s %s: %s" % (method, path, status_message(raw)))
        try:
            return json.loads(raw) if raw else {}
        except ValueError:
            raise ApiFailure(response.status, "%s %s: the answer is not JSON" % (method, path))

    def list(self, path):
        """-> every item of a collection, following continue tokens."""
        items, token = [], ""
        for _ in range(LIST_PAGES_MAX):
            query = "?limit=%d" % LIST_PAGE_LIMIT
            if token:
                query += "&continue=" + quote(token, safe="")
            page = self.request("GET", path + query)
            items += [i for i in page.get("items") or [] if isinstance(i, dict)]
            token = (page.get("metadata") or {}).get("continue")
            if not token:
                return items
        warn("list %s: more than %d pages, the rest is ignored" % (path, LIST_PAGES_MAX))
        return items

    def merge_patch(self, path, patch):
        return self.request("PATCH", path, patch, "application/merge-patch+json")


def status_message(raw):
    try:
        return json.loads(raw).get("message") or raw[:200].decode(errors="replace")
    except (ValueError, AttributeError):
        return raw[:200].decode(errors="replace")


NODES = "/api/v1/nodes"
NODECLAIMS = "/apis/karpenter.sh/v1/nodeclaims"
PODS = "/api/v1/pods"
DEPLOYMENTS = "/apis/apps/v1/deployments"


def pod_path(namespace, name):
    return "/api/v1/namespaces/%s/pods/%s" % (quote(namespace), quote(name))


def deployment_path(namespace, name):
    return "/apis/apps/v1/namespaces/%s/deployments/%s" % (quote(namespace), quote(name))


def meta(obj):
    value = obj.get("metadata")
    return value if isinstance(value, dict) else {}


def spec(obj):
    value = obj.get("spec")
    return value if isinstance(value, dict) else {}


def status(obj):
    value = obj.get("status")
    return value if isinstance(value, dict) else {}


def labels_of(obj):
    value = meta(obj).get("labels")
    return value if isinstance(value, dict) else {}


def deleting(obj):
    return "deletionTimestamp" in meta(obj)


def condition(obj, kind):
    """-> the status condition of that type, or {}."""
    for c in status(obj).get("conditions") or []:
        if isinstance(c, dict) and c.get("type") == kind:
            return c
    return {}


def instance_id_of(provider_id):
    """aws:///us-east-1a/i-0123 -> i-0123; None for anything else."""
    if not isinstance(provider_id, str) or not provider_id.startswith("aws://"):
        return None
    last = provider_id.rstrip("/").rsplit("/", 1)[-1]
    return last if last.startswith("i-") else None


# ---- quantities -----------------------------------------------------------------------------

SUFFIXES = {"Ki": 2 ** 10, "Mi": 2 ** 20, "Gi": 2 ** 30, "Ti": 2 ** 40, "Pi": 2 ** 50,
            "Ei": 2 ** 60, "m": decimal.Decimal("0.001"), "k": 10 ** 3, "M": 10 ** 6,
            "G": 10 ** 9, "T": 10 ** 12, "P": 10 ** 15, "E": 10 ** 18, "": 1}


def parse_quantity(text):
    """A Kubernetes quantity ("250m", "1.5", "512Mi", "2G", 3) -> a Decimal in base units;
    raises ValueError for anything else."""
    if isinstance(text, bool) or not isinstance(text, (str, int, float)):
        raise ValueError("not a quantity: %r" % (text,))
    text = str(text).strip()
    suffix = text[-2:] if text[-2:] in SUFFIXES else text[-1:]
    if suffix not in SUFFIXES or suffix.isdigit():
        suffix = ""
    number = text[: len(text) - len(suffix)]
    try:
        value = decimal.Decimal(number)
    except decimal.InvalidOperation:
        raise ValueError("not a quantity: %r" % text)
    if not value.is_finite():
        raise ValueError("not a quantity: %r" % text)
    return value * SUFFIXES[suffix]


def cpu_millis(text):
    return int((parse_quantity(text) * 1000).to_integral_value(decimal.ROUND_CEILING))


def memory_bytes(text):
    return int(parse_quantity(text).to_integral_value(decimal.ROUND_CEILING))


def as_dict(value):
    return value if isinstance(value, dict) else {}


def as_list(value):
    return value if isinstance(value, list) else []


def pod_requests(pod):
    """-> (cpu millicores, memory bytes) summed over the pod's containers; a container with a
    limit and no request requests its limit, as the API server defaults it."""
    cpu, memory = 0, 0
    for container in spec(pod).get("containers") or []:
        resources = as_dict(as_dict(container).get("resources"))
        requests = as_dict(resources.get("requests"))
        limits = as_dict(resources.get("limits"))
        if "cpu" in requests or "cpu" in limits:
            cpu += cpu_millis(requests.get("cpu", limits.get("cpu")))
        if "memory" in requests or "memory" in limits:
            memory += memory_bytes(requests.get("memory", limits.get("memory")))
    return cpu, memory


# ---- EC2 ------------------------------------------------------------------------------------

# What a failed EC2 call raises: botocore's own errors, the service's error answers, and an
# answer that is not XML at all (moto answers an internal error with an HTML page).
EC2_ERRORS = (botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError,
              botocore.parsers.ResponseParserError)


class Ec2:
    """The instances (one DescribeInstances per pass) and instance types (cached)."""

    def __init__(self, endpoint, region):
        self.client = boto3.client(
            "ec2", endpoint_url=endpoint, region_name=region,
            aws_access_key_id=os.environ.get("AWS_ACCESS_KEY_ID", "testing"),
            aws_secret_access_key=os.environ.get("AWS_SECRET_ACCESS_KEY", "testing"),
            config=botocore.config.Config(retries={"max_attempts": 2},
                                          connect_timeout=HTTP_TIMEOUT_S,
                                          read_timeout=HTTP_TIMEOUT_S))
        self.types = {}  # instance type -> (vCPUs, MiB, Kubernetes arch)

    def instances(self):
        """-> {instance id: instance}; raises botocore errors, so that a failed call is never
        mistaken for instances that are gone."""
        out = {}
        for page in self.client.get_paginator("describe_instances").paginate():
            for reservation in page.get("Reservations") or []:
                for instance in reservation.get("Instances") or []:
                    out[instance["InstanceId"]] = instance
        return out

    def instance_type(self, name):
        """-> (vCPUs, memory MiB, arch) of an instance type."""
        if name not in self.types:
            answer = self.client.describe_instance_types(InstanceTypes=[name])
            info = answer["InstanceTypes"][0]
            archs = info.get("ProcessorInfo", {}).get("SupportedArchitectures") or ["x86_64"]
            arch = "arm64" if "arm64" in archs else "amd64" if "x86_64" in archs else archs[0]
            self.types[name] = (int(info["VCpuInfo"]["DefaultVCpus"]),
                                int(info["MemoryInfo"]["SizeInMiB"]), arch)
        return self.types[name]


def instance_state(instance):
    return (instance.get("State") or {}).get("Name", "")


# ---- kubelet --------------------------------------------------------------------------------

def kube_reserved_cpu_millis(cpu):
    """Karpenter's kube-reserved CPU, which its userdata gives the kubelet: 6% of the first core,
    1% of the second, 0.5% of cores 3-4 and 0.25% of the rest."""
    reserved = 0
    for start, end, per_ten_thousand in ((0, 1000, 600), (1000, 2000, 100), (2000, 4000, 50),
                                         (4000, 1 << 40, 25)):
        if cpu < start:
            break
        reserved += (min(cpu, end) - start) * per_ten_thousand // 10000
    return reserved


def node_taints(claim):
    """The NodeClaim's taints and startup taints and karpenter.sh/unregistered, each once."""
    out, seen = [], set()
    claim_spec = spec(claim)
    for taint in as_list(claim_spec.get("taints")) + as_list(claim_spec.get("startupTaints")) + [
            UNREGISTERED_TAINT]:
        if not isinstance(taint, dict):
            continue
        key = (taint.get("key"), taint.get("value"), taint.get("effect"))
        if key not in seen:
            seen.add(key)
            out.append(dict(taint))
    return out


def node_labels(claim, instance, name, arch, region):
    labels = dict(labels_of(claim))
    lifecycle = instance.get("InstanceLifecycle")
    labels.update({
        "kubernetes.io/hostname": name,
        "kubernetes.io/arch": arch,
        "kubernetes.io/os": "linux",
        "node.kubernetes.io/instance-type": instance.get("InstanceType", ""),
        "topology.kubernetes.io/zone": (instance.get("Placement") or {}).get(
            "AvailabilityZone", ""),
        "topology.kubernetes.io/region": region,
        "karpenter.sh/capacity-type": "spot" if lifecycle == "spot" else "on-demand",
    })
    return labels


def node_status(instance, vcpus, memory_mib, arch):
    """What the kubelet reports: capacity, allocatable (cpu less kube-reserved, memory less 10%:
    no less than tenon's own estimate, so what tenon expects to fit does), Ready."""
    cpu = vcpus * 1000
    memory_ki = memory_mib * 1024
    now = now_rfc3339()
    addresses = [{"type": "InternalIP", "address": instance.get("PrivateIpAddress", "")},
                 {"type": "InternalDNS", "address": instance.get("PrivateDnsName", "")},
                 {"type": "Hostname", "address": instance.get("PrivateDnsName", "")}]
    return {
        "capacity": {"cpu": str(vcpus), "memory": "%dKi" % memory_ki,
                     "pods": str(PODS_PER_NODE)},
        "allocatable": {"cpu": "%dm" % (cpu - kube_reserved_cpu_millis(cpu)),
                        "memory": "%dKi" % (memory_ki * MEMORY_ALLOCATABLE_PERMILLE // 1000),
                        "pods": str(PODS_PER_NODE)},
        "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                        "message": "kubelet is posting ready status",
                        "lastHeartbeatTime": now, "lastTransitionTime": now}],
        "addresses": [a for a in addresses if a["address"]],
        "nodeInfo": {"architecture": arch, "operatingSystem": "linux",
                     "kubeletVersion": KUBELET_VERSION},
    }


class Kubelet:
    """Registers a Node for each launched NodeClaim whose instance runs."""

    def __init__(self, kube, ec2, region, register_delay_s):
        self.kube, self.ec2, self.region = kube, ec2, region
        self.register_delay_s = register_delay_s
        self.first_seen = {}  # providerID -> monotonic time its running instance was first seen

    def run(self, instances):
        nodes = {spec(n).get("providerID"): n for n in self.kube.list(NODES)}
        claims = [c for c in self.kube.list(NODECLAIMS) if not deleting(c)]
        wanted = set()
        for claim in sorted(claims, key=lambda c: str(meta(c).get("name"))):
            provider_id = status(claim).get("providerID")
            instance = instances.get(instance_id_of(provider_id))
            if instance is None or instance_state(instance) != "running":
                continue
            wanted.add(provider_id)
            try:
                self.register(claim, provider_id, instance, nodes.get(provider_id))
            except (ApiFailure, ValueError, KeyError, IndexError, TypeError, AttributeError,
                    *EC2_ERRORS) as e:
                warn("kubelet: NodeClaim %s: %s" % (meta(claim).get("name"), e))
        for provider_id in list(self.first_seen):
            if provider_id not in wanted:
                del self.first_seen[provider_id]

    def register(self, claim, provider_id, instance, node):
        if node is not None:
            if not deleting(node) and not status(node).get("allocatable"):
                self.post_status(meta(node)["name"], instance)
            return
        first = self.first_seen.setdefault(provider_id, time.monotonic())
        if time.monotonic() - first < self.register_delay_s:
            return
        name = instance.get("PrivateDnsName") or instance["InstanceId"]
        _, _, arch = self.ec2.instance_type(instance["InstanceType"])
        body = {"apiVersion": "v1", "kind": "Node",
                "metadata": {"name": name,
                             "labels": node_labels(claim, instance, name, arch, self.region)},
                "spec": {"providerID": provider_id, "taints": node_taints(claim)}}
        self.kube.request("POST", NODES, body)
        log("kubelet: created node %s for %s (NodeClaim %s)"
            % (name, instance["InstanceId"], meta(claim).get("name")))
        self.post_status(name, instance)

    def post_status(self, name, instance):
        vcpus, memory_mib, arch = self.ec2.instance_type(instance["InstanceType"])
        self.kube.merge_patch(NODES + "/" + quote(name) + "/status",
                              {"status": node_status(instance, vcpus, memory_mib, arch)})
        log("kubelet: node %s is Ready" % name)


# ---- node lifecycle -------------------------------------------------------------------------

def delete_gone_nodes(kube, instances):
    """Deletes each Node whose instance is terminated, shutting down or unknown to EC2, as the
    cloud node-lifecycle controller does. Nodes without an aws:// providerID are left alone."""
    for node in kube.list(NODES):
        instance_id = instance_id_of(spec(node).get("providerID"))
        if instance_id is None or deleting(node):
            continue
        instance = instances.get(instance_id)
        state = instance_state(instance) if instance else "unknown"
        if instance is not None and state not in GONE_STATES:
            continue
        name = meta(node).get("name", "")
        try:
            kube.request("DELETE", NODES + "/" + quote(name))
            log("lifecycle: deleted node %s (instance %s is %s)" % (name, instance_id, state))
        except ApiFailure as e:
            warn("lifecycle: deleting node %s: %s" % (name, e))


def delete_orphaned_pods(kube):
    """Deletes each pod bound to a node that no longer exists, as the pod garbage collector does
    (so that its Deployment replaces it). Pods are listed before nodes: a node created between
    the two lists cannot make its pods look orphaned."""
    pods = kube.list(PODS)
    names = {meta(n).get("name") for n in kube.list(NODES)}
    for pod in pods:
        node_name = spec(pod).get("nodeName")
        if not node_name or node_name in names or deleting(pod):
            continue
        namespace, name = meta(pod).get("namespace", ""), meta(pod).get("name", "")
        try:
            kube.request("DELETE", pod_path(namespace, name))
            log("podgc: deleted pod %s/%s of vanished node %s" % (namespace, name, node_name))
        except ApiFailure as e:
            warn("podgc: deleting pod %s/%s: %s" % (namespace, name, e))


# ---- ReplicaSet controller ------------------------------------------------------------------

def active(pod):
    return not deleting(pod) and status(pod).get("phase") not in TERMINAL_PHASES


def running(pod):
    return active(pod) and status(pod).get("phase") == "Running"


def selects(match_labels, pod):
    labels = labels_of(pod)
    return all(labels.get(k) == v for k, v in match_labels.items())


def new_pod(deployment):
    """A pod of the Deployment's template, owned by the Deployment."""
    template = spec(deployment).get("template") or {}
    template_meta = template.get("metadata") or {}
    name = "%s-%s" % (meta(deployment)["name"], "".join(
        random.choice(POD_NAME_ALPHABET) for _ in range(POD_NAME_SUFFIX_LEN)))
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": meta(deployment)["namespace"],
                         "labels": dict(template_meta.get("labels") or {}),
                         "annotations": dict(template_meta.get("annotations") or {}),
                         "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment",
                                              "name": meta(deployment)["name"],
                                              "uid": meta(deployment).get("uid", ""),
                                              "controller": True,
                                              "blockOwnerDeletion": True}]},
            "spec": copy.deepcopy(template.get("spec") or {})}


def deletion_order(pods):
    """-> the pods in the order a scale-down deletes them: unbound pods first, as the ReplicaSet
    controller prefers, then the bound ones; each group newest first (ties: name)."""
    def newest_first(group):
        return sorted(group, reverse=True, key=lambda p: (
            str(meta(p).get("creationTimestamp", "")), str(meta(p).get("name", ""))))

    unbound = [p for p in pods if not spec(p).get("nodeName")]
    bound = [p for p in pods if spec(p).get("nodeName")]
    return newest_first(unbound) + newest_first(bound)


def reconcile_deployment(kube, deployment, pods):
    """Creates or deletes pods until spec.replicas are active, then writes the status."""
    name, namespace = meta(deployment)["name"], meta(deployment)["namespace"]
    match_labels = (spec(deployment).get("selector") or {}).get("matchLabels")
    if not isinstance(match_labels, dict) or not match_labels:
        warn("replicaset: deployment %s/%s has no selector.matchLabels, skipped" % (
            namespace, name))
        return
    replicas = spec(deployment).get("replicas", 1)
    replicas = replicas if isinstance(replicas, int) and replicas >= 0 else 1
    mine = [p for p in pods if meta(p).get("namespace") == namespace and active(p)
            and selects(match_labels, p)]
    for _ in range(min(replicas - len(mine), PODS_CREATED_PER_PASS_MAX)):
        pod = kube.request("POST", "/api/v1/namespaces/%s/pods" % quote(namespace),
                           new_pod(deployment))
        log("replicaset: created pod %s/%s" % (namespace, meta(pod).get("name")))
    for pod in deletion_order(mine)[: max(0, len(mine) - replicas)]:
        kube.request("DELETE", pod_path(namespace, meta(pod)["name"]))
        log("replicaset: deleted pod %s/%s" % (namespace, meta(pod)["name"]))
    want = {"replicas": len(mine), "readyReplicas": sum(1 for p in mine if running(p)),
            "availableReplicas": sum(1 for p in mine if running(p)),
            "observedGeneration": meta(deployment).get("generation", 1)}
    if any(status(deployment).get(k) != v for k, v in want.items()):
        kube.merge_patch(deployment_path(namespace, name) + "/status", {"status": want})


def reconcile_deployments(kube):
    pods = kube.list(PODS)
    for deployment in kube.list(DEPLOYMENTS):
        if deleting(deployment) or not meta(deployment).get("name"):
            continue
        try:
            reconcile_deployment(kube, deployment, pods)
        except (ApiFailure, ValueError, KeyError, TypeError) as e:
            warn("replicaset: deployment %s/%s: %s" % (
                meta(deployment).get("namespace"), meta(deployment).get("name"), e))


# ---- scheduler ------------------------------------------------------------------------------

def tolerates(tolerations, taint):
    for t in tolerations:
        if not isinstance(t, dict):
            continue
        if t.get("effect") not in (None, "", taint.get("effect")):
            continue
        operator = t.get("operator") or "Equal"
        if operator == "Exists" and t.get("key") in (None, "", taint.get("key")):
            return True
        if operator == "Equal" and t.get("key") == taint.get("key") and (
                t.get("value") or "") == (taint.get("value") or ""):
            return True
    return False


def expression_matches(expr, labels):
    """One nodeSelectorRequirement; an operator not understood matches nothing."""
    key, operator = expr.get("key"), expr.get("operator")
    values = expr.get("values") or []
    if operator == "In":
        return labels.get(key) in values
    if operator == "NotIn":
        return labels.get(key) not in values
    if operator == "Exists":
        return key in labels
    if operator == "DoesNotExist":
        return key not in labels
    if operator in ("Gt", "Lt") and key in labels and len(values) == 1:
        try:
            have, bound = int(labels[key]), int(values[0])
        except ValueError:
            return False
        return have > bound if operator == "Gt" else have < bound
    return False


def affinity_matches(pod, labels):
    """spec.nodeSelector and required node affinity (terms ORed, expressions ANDed)."""
    selector = spec(pod).get("nodeSelector") or {}
    if any(labels.get(k) != v for k, v in selector.items()):
        return False
    required = (((spec(pod).get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution") or {})
    terms = required.get("nodeSelectorTerms")
    if not terms:
        return True
    return any(all(expression_matches(e, labels) for e in (term.get("matchExpressions") or []))
               for term in terms if isinstance(term, dict))


class Room:
    """What is left of a node's allocatable cpu, memory and pod count."""

    def __init__(self, node):
        allocatable = status(node).get("allocatable") or {}
        self.cpu = cpu_millis(allocatable.get("cpu", 0))
        self.memory = memory_bytes(allocatable.get("memory", 0))
        self.pods = int(parse_quantity(allocatable.get("pods", 0)))

    def fits(self, cpu, memory):
        return cpu <= self.cpu and memory <= self.memory and self.pods >= 1

    def take(self, cpu, memory):
        self.cpu, self.memory, self.pods = self.cpu - cpu, self.memory - memory, self.pods - 1


def schedulable_nodes(nodes, pods):
    """-> [(node, Room)] of the Ready, schedulable nodes by name, less what is bound there."""
    out = []
    for node in sorted(nodes, key=lambda n: str(meta(n).get("name"))):
        if deleting(node) or spec(node).get("unschedulable") \
                or condition(node, "Ready").get("status") != "True":
            continue
        try:
            out.append((node, Room(node)))
        except ValueError as e:
            warn("scheduler: node %s: %s" % (meta(node).get("name"), e))
    rooms = {meta(n)["name"]: room for n, room in out}
    for pod in pods:
        room = rooms.get(spec(pod).get("nodeName"))
        if room is not None and status(pod).get("phase") not in TERMINAL_PHASES:
            try:
                room.take(*pod_requests(pod))
            except ValueError:
                room.take(0, 0)
    return out


def fits_on(pod, node, room, cpu, memory):
    tolerations = spec(pod).get("tolerations") or []
    for taint in spec(node).get("taints") or []:
        if isinstance(taint, dict) and taint.get("effect") in SCHEDULING_EFFECTS \
                and not tolerates(tolerations, taint):
            return False
    return affinity_matches(pod, labels_of(node)) and room.fits(cpu, memory)


def first_fit(pod, candidates, cpu, memory):
    """-> the first (node, Room) the pod fits on, or None."""
    for node, room in candidates:
        if fits_on(pod, node, room, cpu, memory):
            return node, room
    return None


def bind(kube, pod, node_name):
    namespace, name = meta(pod)["namespace"], meta(pod)["name"]
    kube.request("POST", pod_path(namespace, name) + "/binding",
                 {"apiVersion": "v1", "kind": "Binding",
                  "metadata": {"name": name, "namespace": namespace},
                  "target": {"apiVersion": "v1", "kind": "Node", "name": node_name}})
    log("scheduler: bound pod %s/%s to %s" % (namespace, name, node_name))
    start(kube, namespace, name)


def start(kube, namespace, name):
    """What the kubelet reports of a pod it has started: Running, scheduled and ready."""
    now = now_rfc3339()
    kube.merge_patch(pod_path(namespace, name) + "/status", {"status": {
        "phase": "Running", "startTime": now,
        "conditions": [{"type": "PodScheduled", "status": "True", "lastTransitionTime": now},
                       {"type": "Ready", "status": "True", "lastTransitionTime": now}]}})


def start_bound_pods(kube, nodes, pods):
    """A pod bound to an existing node but still Pending (its status write after the binding
    failed, or it was created bound) is started, as that node's kubelet would."""
    names = {meta(n).get("name") for n in nodes if not deleting(n)}
    for pod in pods:
        if spec(pod).get("nodeName") in names and not deleting(pod) \
                and status(pod).get("phase", "Pending") == "Pending":
            namespace, name = meta(pod).get("namespace", ""), meta(pod).get("name", "")
            try:
                start(kube, namespace, name)
                log("kubelet: started pod %s/%s on %s" % (namespace, name, spec(pod)["nodeName"]))
            except ApiFailure as e:
                warn("kubelet: starting pod %s/%s: %s" % (namespace, name, e))


def mark_unschedulable(kube, pod, node_count):
    """Writes PodScheduled=False/Unschedulable, unless the pod already says so."""
    scheduled = condition(pod, "PodScheduled")
    if scheduled.get("status") == "False" and scheduled.get("reason") == "Unschedulable":
        return
    namespace, name = meta(pod)["namespace"], meta(pod)["name"]
    conditions = [c for c in status(pod).get("conditions") or []
                  if isinstance(c, dict) and c.get("type") != "PodScheduled"]
    conditions.append({"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                       "message": "0/%d nodes are available for this pod." % node_count,
                       "lastProbeTime": None, "lastTransitionTime": now_rfc3339()})
    kube.merge_patch(pod_path(namespace, name) + "/status", {"status": {"conditions": conditions}})
    log("scheduler: pod %s/%s is unschedulable" % (namespace, name))


def schedule(kube):
    """Binds each pending pod to the first node by name where it fits (oldest pod first)."""
    nodes = kube.list(NODES)
    pods = kube.list(PODS)
    candidates = schedulable_nodes(nodes, pods)
    pending = [p for p in pods if not spec(p).get("nodeName") and not deleting(p)
               and status(p).get("phase") not in TERMINAL_PHASES and meta(p).get("name")]
    pending.sort(key=lambda p: (str(meta(p).get("creationTimestamp")),
                                str(meta(p).get("namespace")), str(meta(p).get("name"))))
    start_bound_pods(kube, nodes, pods)
    for pod in pending:
        try:
            cpu, memory = pod_requests(pod)
            target = first_fit(pod, candidates, cpu, memory)
        except (ValueError, TypeError, AttributeError) as e:
            warn("scheduler: pod %s/%s not understood: %s" % (
                meta(pod).get("namespace"), meta(pod)["name"], e))
            continue
        try:
            if target is None:
                mark_unschedulable(kube, pod, len(nodes))
                continue
            node, room = target
            bind(kube, pod, meta(node)["name"])
            room.take(cpu, memory)
        except ApiFailure as e:
            warn("scheduler: pod %s/%s: %s" % (meta(pod).get("namespace"), meta(pod)["name"], e))


# ---- the loop -------------------------------------------------------------------------------

def one_pass(kube, ec2, kubelet):
    """One pass of every part; a failure of one part is logged and the others still run."""
    try:
        instances = ec2.instances()
    except EC2_ERRORS as e:
        warn("ec2: DescribeInstances failed, no node is registered or deleted this pass: %s" % e)
        instances = None
    parts = [("podgc", delete_orphaned_pods, (kube,)),
             ("replicaset", reconcile_deployments, (kube,)), ("scheduler", schedule, (kube,))]
    if instances is not None:
        parts = [("kubelet", kubelet.run, (instances,)),
                 ("lifecycle", delete_gone_nodes, (kube, instances))] + parts
    for name, function, args in parts:
        try:
            function(*args)
        except ApiFailure as e:
            warn("%s: %s" % (name, e))
        except Exception as e:  # Never die on an object or answer not understood.
            warn("%s: unexpected %s: %s" % (name, type(e).__name__, e))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--apiserver", required=True, help="http://127.0.0.1:PORT")
    parser.add_argument("--token", default="", help="bearer token for the API server")
    parser.add_argument("--ec2", required=True, help="the EC2 endpoint (moto_server)")
    parser.add_argument("--region", default="us-east-1")
    parser.add_argument("--register-delay", type=float, default=0.5,
                        help="seconds between a running instance and its Node")
    parser.add_argument("--interval", type=float, default=0.2, help="seconds between passes")
    args = parser.parse_args()
    if args.interval <= 0 or args.register_delay < 0:
        parser.error("--interval must be positive and --register-delay not negative")
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    kube = Kube(args.apiserver, args.token)
    ec2 = Ec2(args.ec2, args.region)
    kubelet = Kubelet(kube, ec2, args.region, args.register_delay)
    log("started: apiserver %s, ec2 %s" % (args.apiserver, args.ec2))
    while not stop.is_set():
        one_pass(kube, ec2, kubelet)
        stop.wait(args.interval)
    log("stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
