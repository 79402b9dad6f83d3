#!/usr/bin/env python3
"""Proves the e2e stand-in (standin.py) plays kubelet, scheduler, ReplicaSet controller and node
lifecycle controller against the test API server and moto: a NodeClaim of a running instance
becomes a Node, a Deployment's pods are bound to it and scaled down, a pod too big for it is
marked Unschedulable, and the Node goes when its instance is terminated (its pod is collected
and replaced).

Starts tests/kube/apiserver.py, moto_server and standin.py on free loopback ports; each
expectation is polled with a deadline, so a stand-in that never gets there fails the test.
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import unittest
import urllib.error
import urllib.request

import boto3

HERE = os.path.dirname(os.path.abspath(__file__))
APISERVER = os.path.join(HERE, "..", "kube", "apiserver.py")
STANDIN = os.path.join(HERE, "standin.py")
MOTO_SERVER = shutil.which("moto_server") or "/root/.pyenv/shims/moto_server"
TOKEN = "standin-test-token"
REGION = "us-east-1"
ZONE = "us-east-1a"
STARTUP_TIMEOUT_S = 20  # moto_server imports slowly on a busy machine.
WAIT_TIMEOUT_S = 10  # Each expectation; the stand-in passes every 0.1 s.
POLL_S = 0.05
STOP_TIMEOUT_S = 5
NODECLAIMS = "/apis/karpenter.sh/v1/nodeclaims"
NODES = "/api/v1/nodes"
PODS = "/api/v1/namespaces/default/pods"
DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(what, probe, timeout_s=WAIT_TIMEOUT_S):
    """-> probe()'s first truthy answer; fails the test at the deadline."""
    deadline = time.monotonic() + timeout_s
    while True:
        answer = probe()
        if answer:
            return answer
        if time.monotonic() > deadline:
            raise AssertionError("timed out after %.0f s waiting for %s" % (timeout_s, what))
        time.sleep(POLL_S)


class Api:
    """A tiny client for the test API server."""

    def __init__(self, port):
        self.base = "http://127.0.0.1:%d" % port

    def call(self, method, path, body=None, content_type="application/json"):
        """-> (HTTP status, decoded body)."""
        request = urllib.request.Request(
            self.base + path, method=method, data=None if body is None else json.dumps(body)
            .encode(), headers={"Authorization": "Bearer " + TOKEN, "Content-Type": content_type})
        try:
            with urllib.request.urlopen(request, timeout=5) as response:
                return response.status, json.loads(response.read() or b"{}")
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"{}")

    def ok(self, method, path, body=None, content_type="application/json"):
        code, answer = self.call(method, path, body, content_type)
        if code // 100 != 2:
            raise AssertionError("%s %s: %d %s" % (method, path, code, answer))
        return answer

    def patch(self, path, body):
        return self.ok("PATCH", path, body, "application/merge-patch+json")

    def items(self, path):
        return self.ok("GET", path)["items"]


def start_process(argv, stderr_path):
    """Starts a child in its own process group with stderr to a file."""
    stderr = open(stderr_path, "w")
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=stderr, start_new_session=True,
                            text=True), stderr


def stop_process(process):
    process.stdout.close()
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


class StandInTest(unittest.TestCase):
    def setUp(self):
        self.tmp = os.environ.get("TMPDIR", "/tmp")
        self.processes, self.files = [], []
        self.addCleanup(self.stop_all)
        api = self.start([sys.executable, APISERVER, "--token", TOKEN], "apiserver")
        self.api_port = int(api.stdout.readline())
        self.api = Api(self.api_port)
        self.moto_port = free_port()
        self.start([MOTO_SERVER, "-H", "127.0.0.1", "-p", str(self.moto_port)], "moto")
        wait_for("moto_server", self.moto_answers, STARTUP_TIMEOUT_S)
        self.ec2 = boto3.client("ec2", endpoint_url="http://127.0.0.1:%d" % self.moto_port,
                                region_name=REGION, aws_access_key_id="testing",
                                aws_secret_access_key="testing")
        self.standin = self.start(
            [sys.executable, STANDIN, "--apiserver", "http://127.0.0.1:%d" % self.api_port,
             "--token", TOKEN, "--ec2", "http://127.0.0.1:%d" % self.moto_port,
             "--region", REGION, "--register-delay", "0.2", "--interval", "0.1"], "standin")

    def start(self, argv, name):
        path = os.path.join(self.tmp, "standin_test_%d_%s.log" % (os.getpid(), name))
        process, stderr = start_process(argv, path)
        self.processes.append(process)
        self.files.append((stderr, path))
        return process

    def stop_all(self):
        for process in reversed(self.processes):
            stop_process(process)
        for stderr, path in self.files:
            stderr.close()
            if path.endswith("_standin.log"):  # What it did, for a failure's diagnosis.
                with open(path) as f:
                    sys.stderr.write(f.read())
            os.unlink(path)

    def moto_answers(self):
        try:
            with urllib.request.urlopen("http://127.0.0.1:%d/moto-api/" % self.moto_port,
                                        timeout=1):
                return True
        except (OSError, urllib.error.URLError):
            return False

    # ---- helpers ----

    def node_of(self, provider_id):
        nodes = [n for n in self.api.items(NODES) if n["spec"].get("providerID") == provider_id]
        return nodes[0] if nodes and nodes[0].get("status", {}).get("allocatable") else None

    def web_pods(self):
        return [p for p in self.api.items(PODS + "?labelSelector=app%3Dweb")
                if "deletionTimestamp" not in p["metadata"]]

    def create_nodeclaim(self, name, provider_id):
        self.api.ok("POST", NODECLAIMS, {
            "apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
            "metadata": {"name": name, "labels": {"karpenter.sh/nodepool": "default"}},
            "spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                                      "name": "default"},
                     "taints": [{"key": "dedicated", "value": "web", "effect": "NoSchedule"}],
                     "startupTaints": [{"key": "example.com/agent", "effect": "NoSchedule"}]}})
        self.api.patch(NODECLAIMS + "/" + name + "/status",
                       {"status": {"providerID": provider_id}})

    def create_deployment(self, replicas):
        container = {"name": "web", "image": "nginx",
                     "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}
        self.api.ok("POST", DEPLOYMENTS, {
            "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}}, "spec": {
                         "containers": [container],
                         "tolerations": [{"key": "dedicated", "operator": "Equal",
                                          "value": "web", "effect": "NoSchedule"}],
                         "nodeSelector": {"karpenter.sh/nodepool": "default"}}}}})

    def create_pod(self, name, cpu, memory):
        self.api.ok("POST", PODS, {
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "resources": {
                "requests": {"cpu": cpu, "memory": memory}}}],
                "tolerations": [{"operator": "Exists"}]}})

    # ---- the scenario ----

    def test_node_pods_scale_down_unschedulable_and_termination(self):
        launched = self.ec2.run_instances(ImageId="ami-12345678", MinCount=1, MaxCount=1,
                                          InstanceType="t3.medium",
                                          Placement={"AvailabilityZone": ZONE})["Instances"][0]
        instance_id = launched["InstanceId"]
        provider_id = "aws:///%s/%s" % (ZONE, instance_id)
        self.create_nodeclaim("default-abcde", provider_id)

        node = wait_for("the Node of " + instance_id, lambda: self.node_of(provider_id))
        self.check_registered(node, launched)
        name = node["metadata"]["name"]

        # Every pod waits while the node is tainted unregistered: the scheduler says so.
        self.create_deployment(3)
        wait_for("3 unschedulable pods", lambda: len(
            [p for p in self.web_pods() if self.unschedulable(p)]) == 3)
        self.api.patch(NODES + "/" + name,
                       {"spec": {"taints": [{"key": "dedicated", "value": "web",
                                             "effect": "NoSchedule"}]}})
        wait_for("3 pods running on " + name, lambda: self.running_on(name) == 3)
        wait_for("the deployment's status", lambda: self.api.ok(
            "GET", DEPLOYMENTS + "/web").get("status", {}).get("readyReplicas") == 3)

        self.api.patch(DEPLOYMENTS + "/web", {"spec": {"replicas": 1}})
        wait_for("1 pod left", lambda: len(self.web_pods()) == 1)
        self.assertEqual(self.running_on(name), 1)

        # Both tolerate every taint; one fits in what is left of the node, the other does not.
        self.create_pod("tolerant", "500m", "1Gi")
        self.create_pod("huge", "64", "1Gi")
        huge = wait_for("huge to be unschedulable", lambda: self.unschedulable(
            self.api.ok("GET", PODS + "/huge")))
        self.assertNotIn("nodeName", huge["spec"])
        wait_for("tolerant to run on " + name, lambda: self.api.ok(
            "GET", PODS + "/tolerant")["spec"].get("nodeName") == name)

        self.ec2.terminate_instances(InstanceIds=[instance_id])
        wait_for("the Node to be deleted", lambda: not [
            n for n in self.api.items(NODES) if n["spec"].get("providerID") == provider_id])
        # Its pod is collected and replaced by one that has nowhere to go.
        wait_for("the web pod to be replaced and unschedulable", lambda: [
            p for p in self.web_pods() if self.unschedulable(p) and "nodeName" not in p["spec"]])
        self.assertEqual(len(self.web_pods()), 1)

    def test_objects_not_understood_are_skipped(self):
        # A node made by hand (no aws:// providerID: the lifecycle part leaves it alone).
        self.api.ok("POST", NODES, {"metadata": {"name": "manual", "labels": {"tier": "a"}},
                                    "spec": {"providerID": "kind://manual"}})
        self.api.patch(NODES + "/manual/status", {"status": {
            "allocatable": {"cpu": "2", "memory": "4Gi", "pods": "10"},
            "conditions": [{"type": "Ready", "status": "True"}]}})
        # A NodeClaim of no instance gets no Node; one with taints not understood gets a Node.
        self.api.ok("POST", NODECLAIMS, {"metadata": {"name": "none"}})
        self.api.patch(NODECLAIMS + "/none/status", {"status": {"providerID": "aws:///z/i-none"}})
        instance_id = self.ec2.run_instances(ImageId="ami-12345678", MinCount=1, MaxCount=1,
                                             InstanceType="m6g.large")["Instances"][0]["InstanceId"]
        self.api.ok("POST", NODECLAIMS, {"metadata": {"name": "odd"},
                                         "spec": {"taints": "x", "startupTaints": [5]}})
        self.api.patch(NODECLAIMS + "/odd/status",
                       {"status": {"providerID": "aws:///us-east-1b/" + instance_id}})
        self.api.ok("POST", DEPLOYMENTS, {"metadata": {"name": "noselector"},
                                          "spec": {"replicas": 2}})
        self.api.ok("POST", PODS, {"metadata": {"name": "bad"}, "spec": {"containers": [
            {"name": "c", "resources": {"requests": {"cpu": "lots"}}}]}})
        affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [
                {"key": "tier", "operator": "In", "values": ["a", "b"]},
                {"key": "gpu", "operator": "DoesNotExist"}]}]}}}
        self.api.ok("POST", PODS, {"metadata": {"name": "good"}, "spec": {
            "affinity": affinity, "containers": [{"name": "c", "resources": {
                "limits": {"cpu": "1", "memory": "1Gi"}}}]}})
        affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
            "nodeSelectorTerms"][0]["matchExpressions"][0]["operator"] = "NotIn"
        self.api.ok("POST", PODS, {"metadata": {"name": "elsewhere"}, "spec": {
            "affinity": affinity, "containers": [{"name": "c"}]}})

        wait_for("good to run on manual", lambda: self.api.ok(
            "GET", PODS + "/good")["status"].get("phase") == "Running")
        self.assertEqual(self.api.ok("GET", PODS + "/good")["spec"]["nodeName"], "manual")
        wait_for("elsewhere to be unschedulable", lambda: self.unschedulable(
            self.api.ok("GET", PODS + "/elsewhere")))
        bad = self.api.ok("GET", PODS + "/bad")
        self.assertNotIn("nodeName", bad["spec"])
        odd = wait_for("the Node of " + instance_id,
                       lambda: self.node_of("aws:///us-east-1b/" + instance_id))
        self.assertEqual(odd["spec"]["taints"], [{"key": "karpenter.sh/unregistered",
                                                  "effect": "NoExecute"}])
        self.assertEqual(odd["metadata"]["labels"]["kubernetes.io/arch"], "arm64")
        self.assertEqual(odd["status"]["allocatable"]["cpu"], "1930m")
        self.assertEqual(len(self.api.items(NODES)), 2)
        self.assertEqual(self.api.items(PODS + "?labelSelector=app"), [])
        self.assertIsNone(self.standin.poll(), "the stand-in exited")
        self.standin.send_signal(signal.SIGTERM)
        self.assertEqual(self.standin.wait(STOP_TIMEOUT_S), 0)  # A clean exit.

    def check_registered(self, node, launched):
        self.assertEqual(node["metadata"]["name"], launched["PrivateDnsName"])
        labels = node["metadata"]["labels"]
        for key, value in {"karpenter.sh/nodepool": "default",
                           "kubernetes.io/hostname": launched["PrivateDnsName"],
                           "node.kubernetes.io/instance-type": "t3.medium",
                           "topology.kubernetes.io/zone": ZONE,
                           "karpenter.sh/capacity-type": "on-demand",
                           "kubernetes.io/arch": "amd64", "kubernetes.io/os": "linux"}.items():
            self.assertEqual(labels.get(key), value, key)
        taints = {(t["key"], t["effect"]) for t in node["spec"]["taints"]}
        self.assertEqual(taints, {("dedicated", "NoSchedule"), ("example.com/agent", "NoSchedule"),
                                  ("karpenter.sh/unregistered", "NoExecute")})
        # t3.medium: 2 vCPUs less 70m kube-reserved; 4 GiB less 10%.
        self.assertEqual(node["status"]["allocatable"],
                         {"cpu": "1930m", "memory": "%dKi" % (4096 * 1024 * 9 // 10),
                          "pods": "110"})
        ready = [c for c in node["status"]["conditions"] if c["type"] == "Ready"]
        self.assertEqual(ready[0]["status"], "True")

    def unschedulable(self, pod):
        for c in pod.get("status", {}).get("conditions") or []:
            if c["type"] == "PodScheduled" and c["status"] == "False" \
                    and c.get("reason") == "Unschedulable":
                return pod
        return None

    def running_on(self, node_name):
        return len([p for p in self.web_pods() if p["spec"].get("nodeName") == node_name
                    and p["status"].get("phase") == "Running"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
