#!/usr/bin/env python3
"""The kubelets of a real control plane's nodes, played against kube-apiserver and moto's EC2,
for the end-to-end tests in tests/envtest. The real kube-scheduler binds the pods and the real
kube-controller-manager runs Deployments, ReplicaSets, the garbage collector, the pod garbage
collector and the node lifecycle controller; this plays only what runs on the nodes, and the
cloud node-lifecycle controller (the control plane runs without a cloud provider).

  kubelet.py --apiserver https://127.0.0.1:PORT --token T --ec2 http://127.0.0.1:MOTOPORT
             [--region us-east-1] [--register-delay 0.5] [--interval 0.3] [--heartbeat 10]
             [--stop-delay 1]

Every --interval seconds it makes one pass:
  register    a NodeClaim (not being deleted) whose instance is running gets a Node, as the
              kubelet started by Karpenter's user data registers one: named after the instance's
              private DNS name, with the NodeClaim's labels, taints and startup taints, the
              karpenter.sh/unregistered:NoExecute taint and the instance's well-known labels;
              then a Ready status with capacity and allocatable. The instance is the one
              status.providerID names, or, when the status was never written, the one tagged
              karpenter.sh/nodeclaim with the claim's name: a booted instance joins whether or
              not its controller recorded the launch. Registration waits --register-delay
              seconds after the instance is first seen running.
  heartbeat   each Node of a running instance, being deleted or not, renews its Lease in
              kube-node-lease every --heartbeat seconds, so the node lifecycle controller keeps
              it Ready. The Lease is owned by its Node, so the garbage collector removes it with
              the Node.
  pods        a pod bound to an existing Node (being deleted or not) and still Pending is reported Running and Ready
              (the PodScheduled condition the scheduler wrote is kept); a pod bound to an
              existing Node and being deleted is removed --stop-delay seconds after it was
              first seen being deleted (DELETE with grace period 0, as the kubelet does once
              its containers have stopped).
  lifecycle   a Node whose instance is terminated, shutting down or unknown to EC2 is deleted,
              as the cloud node-lifecycle controller does (the API server keeps it while
              finalizers remain).
It uses the admin token: real kubelets authenticate as system:node:NAME through the Node
authorizer, which has nothing to check here. Each action is one line on stderr; each distinct
problem is reported once. SIGTERM or SIGINT ends it after the pass in progress.
"""
import argparse
import os
import signal
import sys
import threading
import time
from urllib.parse import quote

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
# The pieces of the test API server's stand-in that are the same here: the JSON client, EC2
# and how a Node registered by Karpenter's user data looks.
from standin import (EC2_ERRORS, ApiFailure, Ec2, Kube, Kubelet, deleting,  # noqa: E402
                     instance_id_of, instance_state, meta, spec, status)

NODES = "/api/v1/nodes"
NODECLAIMS = "/apis/karpenter.sh/v1/nodeclaims"
PODS = "/api/v1/pods"
LEASES = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"
GONE_STATES = ("shutting-down", "terminated")
NODECLAIM_TAG = "karpenter.sh/nodeclaim"
LEASE_DURATION_S = 40  # The kubelet's default.
WARNINGS_REMEMBERED_MAX = 10000

warned = set()


def log(message):
    stamp = time.strftime("%H:%M:%S", time.gmtime())
    print("kubelet %s %s" % (stamp, message), file=sys.stderr, flush=True)


def warn(message):
    """Logs a problem once, not on every pass."""
    if message in warned:
        return
    if len(warned) >= WARNINGS_REMEMBERED_MAX:
        warned.clear()
    warned.add(message)
    log(message)


def micro_time():
    """The metav1.MicroTime format: RFC 3339 with exactly six fractional digits."""
    now = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + ".%06dZ" % (
        int(now * 1e6) % 1000000)


def rfc3339():
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def pod_path(namespace, name):
    return "/api/v1/namespaces/%s/pods/%s" % (quote(namespace), quote(name))


def tags_of(instance):
    return {t.get("Key"): t.get("Value") for t in instance.get("Tags") or []}


def provider_id_of(instance):
    zone = (instance.get("Placement") or {}).get("AvailabilityZone", "")
    return "aws:///%s/%s" % (zone, instance["InstanceId"])


class Kubelets(Kubelet):
    """All the nodes' kubelets, one pass at a time. A Node registers as the test API server's
    stand-in registers one (Kubelet.register)."""

    def __init__(self, kube, ec2, region, register_delay_s, heartbeat_s, stop_delay_s):
        super().__init__(kube, ec2, region, register_delay_s)
        self.heartbeat_s = heartbeat_s
        self.stop_delay_s = stop_delay_s
        self.stopping = {}  # pod uid -> monotonic time it was first seen being deleted
        self.renewed = {}  # node name -> monotonic time of its last Lease renewal

    # ---- register ----

    def register_all(self, instances, nodes):
        by_provider = {spec(n).get("providerID"): n for n in nodes}
        by_tag = {}
        for instance in instances.values():
            claim_name = tags_of(instance).get(NODECLAIM_TAG)
            if claim_name and instance_state(instance) == "running":
                by_tag.setdefault(claim_name, instance)
        running = set()
        for claim in sorted(self.kube.list(NODECLAIMS), key=lambda c: str(meta(c).get("name"))):
            if deleting(claim):
                continue
            name = meta(claim).get("name", "")
            provider_id = status(claim).get("providerID")
            instance = instances.get(instance_id_of(provider_id)) if provider_id \
                else by_tag.get(name)
            if instance is None or instance_state(instance) != "running":
                continue
            provider_id = provider_id or provider_id_of(instance)
            running.add(provider_id)
            try:
                self.register(claim, provider_id, instance, by_provider.get(provider_id))
            except (ApiFailure, ValueError, KeyError, IndexError, TypeError, AttributeError,
                    *EC2_ERRORS) as e:
                warn("register: NodeClaim %s: %s" % (name, e))
        for provider_id in list(self.first_seen):
            if provider_id not in running:
                del self.first_seen[provider_id]

    # ---- heartbeat ----

    def heartbeat(self, instances, nodes):
        alive = set()
        for node in nodes:
            name = meta(node).get("name", "")
            instance = instances.get(instance_id_of(spec(node).get("providerID")))
            # A Node being deleted keeps its kubelet for as long as its instance runs.
            if instance is None or instance_state(instance) != "running":
                continue
            alive.add(name)
            last = self.renewed.get(name)
            if last is not None and time.monotonic() - last < self.heartbeat_s:
                continue
            try:
                self.renew(node)
                self.renewed[name] = time.monotonic()
            except ApiFailure as e:
                warn("heartbeat: node %s: %s" % (name, e))
        for name in list(self.renewed):
            if name not in alive:
                del self.renewed[name]

    def renew(self, node):
        name = meta(node)["name"]
        path = LEASES + "/" + quote(name)
        try:
            self.kube.merge_patch(path, {"spec": {"renewTime": micro_time()}})
        except ApiFailure as e:
            if e.code != 404:
                raise
            self.kube.request("POST", LEASES, {
                "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                "metadata": {"name": name, "ownerReferences": [{
                    "apiVersion": "v1", "kind": "Node", "name": name,
                    "uid": meta(node).get("uid", "")}]},
                "spec": {"holderIdentity": name, "leaseDurationSeconds": LEASE_DURATION_S,
                         "renewTime": micro_time()}})

    # ---- pods ----

    def run_pods(self, nodes):
        names = {meta(n).get("name") for n in nodes}
        stopping = {}
        for pod in self.kube.list(PODS):
            node_name = spec(pod).get("nodeName")
            if node_name not in names:
                continue
            namespace, name = meta(pod).get("namespace", ""), meta(pod).get("name", "")
            try:
                if deleting(pod):
                    uid = meta(pod).get("uid")
                    stopping[uid] = self.stopping.get(uid, time.monotonic())
                    if time.monotonic() - stopping[uid] < self.stop_delay_s:
                        continue  # Its containers are still stopping.
                    self.kube.request("DELETE", pod_path(namespace, name), {
                        "apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0,
                        "preconditions": {"uid": meta(pod).get("uid")}})
                    log("pod %s/%s on %s stopped and removed" % (namespace, name, node_name))
                elif status(pod).get("phase", "Pending") == "Pending":
                    self.start(namespace, name)
                    log("pod %s/%s on %s is Running" % (namespace, name, node_name))
            except ApiFailure as e:
                if e.code not in (404, 409):  # Gone already, or changed meanwhile.
                    warn("pods: %s/%s: %s" % (namespace, name, e))
        self.stopping = stopping

    def start(self, namespace, name):
        """Running and Ready; a strategic merge patch, so the scheduler's PodScheduled
        condition stays as it wrote it."""
        now = rfc3339()
        conditions = [{"type": kind, "status": "True", "lastProbeTime": None,
                       "lastTransitionTime": now}
                      for kind in ("Initialized", "Ready", "ContainersReady")]
        self.kube.request("PATCH", pod_path(namespace, name) + "/status",
                          {"status": {"phase": "Running", "startTime": now,
                                      "conditions": conditions}},
                          "application/strategic-merge-patch+json")

    # ---- cloud node lifecycle ----

    def delete_gone_nodes(self, instances, nodes):
        for node in nodes:
            instance_id = instance_id_of(spec(node).get("providerID"))
            if instance_id is None or deleting(node):
                continue
            instance = instances.get(instance_id)
            state = instance_state(instance) if instance else "unknown"
            if instance is not None and state not in GONE_STATES:
                continue
            name = meta(node).get("name", "")
            try:
                self.kube.request("DELETE", NODES + "/" + quote(name))
                log("deleted node %s (instance %s is %s)" % (name, instance_id, state))
            except ApiFailure as e:
                if e.code != 404:
                    warn("lifecycle: deleting node %s: %s" % (name, e))

    # ---- one pass ----

    def one_pass(self):
        try:
            instances = self.ec2.instances()
        except EC2_ERRORS as e:
            warn("ec2: DescribeInstances failed, nothing registered or deleted this pass: %s" % e)
            instances = None
        try:
            nodes = self.kube.list(NODES)
            if instances is not None:
                self.guarded("register", self.register_all, instances, nodes)
                nodes = self.kube.list(NODES)  # With the ones just registered.
                self.guarded("lifecycle", self.delete_gone_nodes, instances, nodes)
                self.guarded("heartbeat", self.heartbeat, instances, nodes)
            self.guarded("pods", self.run_pods, nodes)
        except ApiFailure as e:
            warn("listing nodes: %s" % e)

    @staticmethod
    def guarded(part, function, *args):
        """Runs one part; its failure is logged and the others still run."""
        try:
            function(*args)
        except ApiFailure as e:
            warn("%s: %s" % (part, e))
        except Exception as e:  # Never die on an object or answer not understood.
            warn("%s: unexpected %s: %s" % (part, type(e).__name__, e))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--apiserver", required=True, help="https://127.0.0.1:PORT")
    parser.add_argument("--token", required=True, help="a bearer token of system:masters")
    parser.add_argument("--ec2", required=True, help="the EC2 endpoint (moto_server)")
    parser.add_argument("--region", default="us-east-1")
    parser.add_argument("--register-delay", type=float, default=0.5,
                        help="seconds between a running instance and its Node")
    parser.add_argument("--interval", type=float, default=0.3, help="seconds between passes")
    parser.add_argument("--heartbeat", type=float, default=10.0,
                        help="seconds between Lease renewals of a node")
    parser.add_argument("--stop-delay", type=float, default=1.0,
                        help="seconds a pod being deleted takes to stop")
    args = parser.parse_args()
    if args.interval <= 0 or args.heartbeat <= 0 or min(args.register_delay,
                                                        args.stop_delay) < 0:
        parser.error("--interval and --heartbeat must be positive, --register-delay and "
                     "--stop-delay not negative")
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    kubelets = Kubelets(Kube(args.apiserver, args.token), Ec2(args.ec2, args.region),
                        args.region, args.register_delay, args.heartbeat, args.stop_delay)
    log("started: apiserver %s, ec2 %s" % (args.apiserver, args.ec2))
    while not stop.is_set():
        kubelets.one_pass()
        stop.wait(args.interval)
    log("stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
