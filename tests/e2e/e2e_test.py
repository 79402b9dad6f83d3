#!/usr/bin/env python3
"""`tenon run` end to end: the test API server, moto behind the fault proxy, the stand-in for
kubelet/scheduler/ReplicaSet/node lifecycle (standin.py), and tenon itself as a process.

  test_scale_interrupt_scale_down_drift
      NodePool + EC2NodeClass applied, a Deployment scaled up (one CreateFleet answered with
      InsufficientInstanceCapacity and a DescribeInstances throttled on the way), a spot
      interruption sent to the queue for one node, the Deployment scaled down, then a NodePool
      change that drifts every node. After each step the cluster converges: every pod runs,
      every NodeClaim has exactly one running instance and every running instance a NodeClaim.
      /metrics shows the counters; `tenon replay --verify` on the log says "identical".
  test_killed_at_random_points
      The same scale-up while tenon is SIGKILLed at random points and restarted: no NodeClaim
      ever gets a second instance, nothing leaks, the replay is identical.
  test_adopts_karpenter_nodeclaims
      A cluster migrating from Karpenter: an instance, its NodeClaim (with Karpenter's labels,
      hash annotations and finalizer) and its Node exist before tenon starts. tenon adopts the
      claim: the instance outlives garbage collection (past the 30 s leak age), no second node
      is launched for the pods already running on it; deleting the claim then drains it, gets
      its pods a new node and terminates the old instance. The log replays identically and
      names the adoption.

Usage: e2e_test.py TENON_BINARY [unittest arguments]. The seed of the kill points is printed;
E2E_SEED=N repeats one.
"""
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request

import boto3
import botocore.exceptions

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from standin_test import (APISERVER, MOTO_SERVER, STANDIN, TOKEN, Api, free_port,  # noqa: E402
                          start_process, stop_process, wait_for)

HERE = os.path.dirname(os.path.abspath(__file__))
FAULT_PROXY = os.path.join(HERE, "..", "aws", "fault_proxy.py")
TENON = None  # Set from argv.
REGION = "us-east-1"
CLUSTER = "e2e"
QUEUE = "e2e-interruption"
TYPES = ["c5.large", "m5.large", "c5.xlarge", "m5.xlarge"]
PRICES = {"c5.large": 0.085, "m5.large": 0.096, "c5.xlarge": 0.17, "m5.xlarge": 0.192}
CONVERGE_S = 120  # Disruption validates for 15 s, and drift replaces node by node.
STARTUP_S = 20
NODECLAIMS = "/apis/karpenter.sh/v1/nodeclaims"
NODEPOOLS = "/apis/karpenter.sh/v1/nodepools"
NODECLASSES = "/apis/karpenter.k8s.aws/v1/ec2nodeclasses"
PODS = "/api/v1/namespaces/default/pods"
DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"


class Cluster(unittest.TestCase):
    """One test API server, moto, fault proxy and stand-in per test."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="tenon-e2e-")
        self.addCleanup(shutil.rmtree, self.dir, True)
        self.processes, self.logs = [], []
        self.addCleanup(self.stop_all)
        api = self.start([sys.executable, APISERVER, "--token", TOKEN], "apiserver")
        self.api = Api(int(api.stdout.readline()))
        moto_port = free_port()
        self.start([MOTO_SERVER, "-H", "127.0.0.1", "-p", str(moto_port)], "moto")
        self.moto = "http://127.0.0.1:%d" % moto_port
        wait_for("moto_server", lambda: self.answers(self.moto + "/moto-api/"), STARTUP_S)
        proxy = self.start([sys.executable, FAULT_PROXY, str(moto_port)], "proxy")
        self.proxy = "http://127.0.0.1:%d" % int(proxy.stdout.readline())
        aws = dict(endpoint_url=self.moto, region_name=REGION, aws_access_key_id="testing",
                   aws_secret_access_key="testing")
        self.ec2, self.sqs, self.iam = (boto3.client(s, **aws) for s in ("ec2", "sqs", "iam"))
        self.start([sys.executable, STANDIN, "--apiserver", self.api.base, "--token", TOKEN,
                    "--ec2", self.moto, "--region", REGION, "--register-delay", "0.5",
                    "--interval", "0.2"], "standin")
        self.make_aws()
        self.make_cluster()
        self.tenon = None
        self.runs = 0
        self.log_dir = os.path.join(self.dir, "log")

    # ---- processes ----

    def start(self, argv, name, env=None):
        path = os.path.join(self.dir, "%s-%d.log" % (name, len(self.logs)))
        process, stderr = start_process(argv, path) if env is None else self.start_env(argv, path, env)
        self.processes.append(process)
        self.logs.append((name, stderr, path))
        return process

    @staticmethod
    def start_env(argv, path, env):
        stderr = open(path, "w")
        return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=stderr, start_new_session=True,
                                text=True, env=env), stderr

    def stop_all(self):
        for process in reversed(self.processes):
            stop_process(process)
        outcome = getattr(self._outcome, "result", None)
        mine = [e[1] for e in (outcome.errors + outcome.failures) if e[0] is self] if outcome \
            else []
        failed = bool(mine) or outcome is None
        for trace in mine:  # First, so that a shortened output still shows why.
            sys.stderr.write("---- why the test failed ----\n%s\n" % trace)
        for name, stderr, path in self.logs:
            stderr.close()
            if failed and name in ("tenon", "standin"):
                with open(path) as f:
                    sys.stderr.write("---- %s (%s) ----\n%s" % (name, path, f.read()[-20000:]))

    @staticmethod
    def answers(url):
        try:
            with urllib.request.urlopen(url, timeout=1):
                return True
        except OSError:
            return False

    def start_tenon(self):
        self.runs += 1
        self.metrics_port, health_port = free_port(), free_port()
        env = dict(os.environ, AWS_ENDPOINT_URL=self.proxy, AWS_ACCESS_KEY_ID="testing",
                   AWS_SECRET_ACCESS_KEY="testing", AWS_REGION=REGION, CLUSTER_NAME=CLUSTER,
                   INTERRUPTION_QUEUE=QUEUE, BATCH_IDLE_DURATION="500ms",
                   BATCH_MAX_DURATION="2s", CLUSTER_ENDPOINT="https://e2e.example")
        self.tenon = self.start(
            [TENON, "run", "--kubeconfig", self.kubeconfig, "--log-dir", self.log_dir,
             "--identity", "e2e-%d" % self.runs, "--lease-namespace", "kube-system",
             "--lease-duration", "2s", "--renew-deadline", "1500ms", "--retry-period", "200ms",
             "--tick", "200ms", "--gc-every", "3s", "--nodeclass-every", "2s",
             "--price-file", self.price_file, "--kubernetes-version", "1.31",
             "--bind-address", "127.0.0.1", "--metrics-port", str(self.metrics_port),
             "--health-port", str(health_port)], "tenon", env)
        wait_for("tenon's /readyz", lambda: self.answers(
            "http://127.0.0.1:%d/readyz" % health_port), STARTUP_S)

    def stop_tenon(self, sig=signal.SIGTERM):
        self.tenon.stdout.close()
        os.killpg(self.tenon.pid, sig)
        code = self.tenon.wait(30)
        if sig == signal.SIGTERM:
            self.assertEqual(code, 0, "tenon run ends cleanly on SIGTERM")
        self.processes.remove(self.tenon)
        self.tenon = None

    def replay_verdict(self):
        out = subprocess.run([TENON, "replay", "--verify", self.log_dir], capture_output=True,
                             text=True, timeout=120)
        return out.stdout + out.stderr

    # ---- the world ----

    def make_aws(self):
        self.vpc = vpc = self.ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
        tag = [{"Key": "karpenter.sh/discovery", "Value": CLUSTER}]
        for i, zone in enumerate(["us-east-1a", "us-east-1b"]):
            self.ec2.create_subnet(VpcId=vpc, CidrBlock="10.0.%d.0/24" % i, AvailabilityZone=zone,
                                   TagSpecifications=[{"ResourceType": "subnet", "Tags": tag}])
        self.ec2.create_security_group(GroupName="e2e-nodes", Description="nodes", VpcId=vpc,
                                       TagSpecifications=[{"ResourceType": "security-group",
                                                           "Tags": tag}])
        images = self.ec2.describe_images(Owners=["amazon"])["Images"]
        self.ami = next(i["ImageId"] for i in images if i.get("Architecture") == "x86_64")
        self.iam.create_role(RoleName="KarpenterNodeRole-e2e", AssumeRolePolicyDocument=json.dumps(
            {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "sts:AssumeRole",
                                                     "Principal": {"Service": "ec2.amazonaws.com"}}]}))
        self.queue_url = self.sqs.create_queue(QueueName=QUEUE)["QueueUrl"]
        self.price_file = os.path.join(self.dir, "prices.json")
        with open(self.price_file, "w") as f:
            json.dump(PRICES, f)

    def make_cluster(self):
        self.kubeconfig = os.path.join(self.dir, "kubeconfig")
        with open(self.kubeconfig, "w") as f:
            f.write("apiVersion: v1\nkind: Config\ncurrent-context: e2e\nclusters: [{name: e2e, "
                    "cluster: {server: '%s'}}]\nusers: [{name: e2e, user: {token: %s}}]\n"
                    "contexts: [{name: e2e, context: {cluster: e2e, user: e2e}}]\n"
                    % (self.api.base, TOKEN))
        selector = [{"tags": {"karpenter.sh/discovery": CLUSTER}}]
        self.api.ok("POST", NODECLASSES, {
            "apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass",
            "metadata": {"name": "default"},
            "spec": {"role": "KarpenterNodeRole-e2e", "amiFamily": "AL2023",
                     "amiSelectorTerms": [{"id": self.ami}], "subnetSelectorTerms": selector,
                     "securityGroupSelectorTerms": selector}})
        self.api.ok("POST", NODEPOOLS, {
            "apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": "default"},
            "spec": {"template": {"metadata": {"labels": {"tier": "web"}}, "spec": {
                "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                                 "name": "default"},
                "requirements": [
                    {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": TYPES},
                    {"key": "karpenter.sh/capacity-type", "operator": "In",
                     "values": ["on-demand"]}]}},
                "disruption": {"consolidationPolicy": "WhenEmptyOrUnderutilized",
                               "consolidateAfter": "0s", "budgets": [{"nodes": "100%"}]}}})
        container = {"name": "web", "image": "nginx",
                     "resources": {"requests": {"cpu": "700m", "memory": "512Mi"}}}
        self.api.ok("POST", DEPLOYMENTS, {
            "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
            "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}},
                                  "spec": {"containers": [container]}}}})

    def scale(self, replicas):
        self.api.patch(DEPLOYMENTS + "/web", {"spec": {"replicas": replicas}})
        self.replicas = replicas

    def fault(self, spec):
        request = urllib.request.Request(self.proxy + "/__fault", data=json.dumps(spec).encode(),
                                         method="POST")
        urllib.request.urlopen(request, timeout=5).close()

    # ---- what converged means ----

    def instances(self, states=("pending", "running")):
        """Instance id -> its karpenter.sh/nodeclaim tag, for the cluster's instances."""
        found = {}
        pages = self.ec2.get_paginator("describe_instances").paginate(Filters=[
            {"Name": "tag:kubernetes.io/cluster/" + CLUSTER, "Values": ["owned"]},
            {"Name": "instance-state-name", "Values": list(states)}])
        for page in pages:
            for reservation in page["Reservations"]:
                for i in reservation["Instances"]:
                    tags = {t["Key"]: t["Value"] for t in i.get("Tags", [])}
                    found[i["InstanceId"]] = tags.get("karpenter.sh/nodeclaim", "")
        return found

    def claims(self):
        return self.api.items(NODECLAIMS)

    def problems(self):
        """Why the cluster has not converged; empty when it has."""
        why = []
        pods = [p for p in self.api.items(PODS + "?labelSelector=app%3Dweb")
                if "deletionTimestamp" not in p["metadata"]]
        running = [p for p in pods if p["spec"].get("nodeName")
                   and p.get("status", {}).get("phase") == "Running"]
        if len(pods) != self.replicas or len(running) != self.replicas:
            why.append("%d of %d pods running" % (len(running), self.replicas))
        claims = self.claims()
        by_instance = {}
        for c in claims:
            provider = c.get("status", {}).get("providerID", "")
            if not provider:
                why.append("claim %s has no instance yet" % c["metadata"]["name"])
            if "deletionTimestamp" in c["metadata"]:
                why.append("claim %s is being deleted" % c["metadata"]["name"])
            by_instance[provider.rsplit("/", 1)[-1]] = c["metadata"]["name"]
        running_instances = self.instances()
        if set(running_instances) != set(k for k in by_instance if k):
            why.append("instances %s vs claims %s" % (sorted(running_instances), by_instance))
        nodes = self.api.items("/api/v1/nodes")
        if len(nodes) != len(claims):
            why.append("%d nodes for %d claims" % (len(nodes), len(claims)))
        return why

    def converge(self, what, extra=lambda: [], timeout_s=CONVERGE_S):
        last = []

        def probe():
            nonlocal last
            last = self.problems() + extra()
            return not last
        def observed():
            # A read of the test's own observers (the test API server, moto) that fails once
            # says nothing about tenon: it counts as not converged yet and is named if it lasts.
            nonlocal last
            try:
                return probe()
            except (OSError, ValueError, botocore.exceptions.BotoCoreError,
                    botocore.exceptions.ClientError) as e:
                last = ["could not observe the cluster: %s: %s" % (type(e).__name__, e)]
                return False
        try:
            wait_for(what, observed, timeout_s)
        except AssertionError:
            raise AssertionError("%s: not converged: %s" % (what, "; ".join(last)))

    def no_instance_twice(self):
        """Every NodeClaim ever launched got exactly one instance, terminated ones included."""
        per_claim = {}
        for instance, claim in self.instances(
                ("pending", "running", "shutting-down", "terminated", "stopping",
                 "stopped")).items():
            per_claim.setdefault(claim, []).append(instance)
        twice = {c: ids for c, ids in per_claim.items() if len(ids) > 1}
        self.assertEqual(twice, {}, "NodeClaims launched twice")
        self.assertNotIn("", per_claim, "instances without a NodeClaim tag")
        return per_claim

    def metrics(self):
        with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % self.metrics_port,
                                    timeout=5) as r:
            return r.read().decode()

    @staticmethod
    def metric_sum(text, name, **labels):
        total = 0.0
        for line in text.splitlines():
            m = re.match(r"^%s(\{[^}]*\})? (\S+)$" % re.escape(name), line)
            if not m:
                continue
            if all('%s="%s"' % (k, v) in (m.group(1) or "") for k, v in labels.items()):
                total += float(m.group(2))
        return total


class EndToEnd(Cluster):
    def test_scale_interrupt_scale_down_drift(self):
        # A cheapest type answered with ICE once, and the first DescribeInstances throttled.
        self.fault({"action": "CreateFleet", "kind": "ice", "types": ["c5.large"], "count": 1})
        self.fault({"action": "DescribeInstances", "kind": "throttle", "count": 1})
        self.start_tenon()
        wait_for("the EC2NodeClass Ready", lambda: any(
            c.get("type") == "Ready" and c.get("status") == "True"
            for c in self.api.ok("GET", NODECLASSES + "/default").get("status", {})
            .get("conditions", [])), 30)

        self.scale(5)
        self.converge("scale-up to 5 pods")
        self.no_instance_twice()

        # A spot interruption for one node: drained, deleted, replaced.
        victim = self.claims()[0]
        victim_name = victim["metadata"]["name"]
        instance = victim["status"]["providerID"].rsplit("/", 1)[-1]
        self.sqs.send_message(QueueUrl=self.queue_url, MessageBody=json.dumps({
            "version": "0", "id": "e2e-spot-1", "detail-type":
            "EC2 Spot Instance Interruption Warning", "source": "aws.ec2",
            "account": "123456789012", "time": "2026-11-23T12:00:00Z", "region": REGION,
            "resources": ["arn:aws:ec2:%s:instance/%s" % (REGION, instance)],
            "detail": {"instance-id": instance, "instance-action": "terminate"}}))

        def queue_left():
            attributes = self.sqs.get_queue_attributes(QueueUrl=self.queue_url, AttributeNames=[
                "ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"])
            left = sum(int(v) for v in attributes["Attributes"].values())
            return ["%d messages left in the queue" % left] if left else []

        def victim_gone():
            gone = all(c["metadata"]["name"] != victim_name for c in self.claims())
            return [] if gone else ["interrupted claim %s still there" % victim_name]
        self.converge("spot interruption", lambda: victim_gone() + queue_left())
        self.assertNotIn(instance, self.instances(), "the interrupted instance is terminated")

        # Scale down: consolidation removes what is no longer needed.
        before = len(self.claims())
        self.scale(1)
        self.converge("scale-down to 1 pod", lambda: [] if len(self.claims()) == 1 else [
            "%d claims for 1 pod" % len(self.claims())])
        self.assertLess(1, before)

        # The network and the image change under it: a larger subnet in us-east-1a (more free
        # addresses: launches there take it) and another AMI for the EC2NodeClass.
        tag = [{"Key": "karpenter.sh/discovery", "Value": CLUSTER}]
        new_subnet = self.ec2.create_subnet(
            VpcId=self.vpc, CidrBlock="10.0.128.0/17", AvailabilityZone="us-east-1a",
            TagSpecifications=[{"ResourceType": "subnet", "Tags": tag}])["Subnet"]["SubnetId"]
        images = self.ec2.describe_images(Owners=["amazon"])["Images"]
        new_ami = next(i["ImageId"] for i in images
                       if i.get("Architecture") == "x86_64" and i["ImageId"] != self.ami)
        self.api.patch(NODECLASSES + "/default", {"spec": {"amiSelectorTerms": [{"id": new_ami}]}})
        wait_for("the new AMI in the EC2NodeClass's status", lambda: [
            a.get("id") for a in self.api.ok("GET", NODECLASSES + "/default").get(
                "status", {}).get("amis", [])] == [new_ami], 30)

        # Drift: a new template label (and the new AMI); every node is replaced by one carrying
        # it, launched with the AMI and, in us-east-1a, the subnet as they resolve now.
        old = {c["metadata"]["name"] for c in self.claims()}
        self.api.patch(NODEPOOLS + "/default", {"spec": {"template": {"metadata": {
            "labels": {"tier": "web", "release": "2"}}}}})

        def drifted_away():
            names = {c["metadata"]["name"] for c in self.claims()}
            return ["drifted claims %s remain" % sorted(names & old)] if names & old else []
        self.converge("drift", drifted_away)
        for c in self.claims():
            self.assertEqual(c["metadata"]["labels"].get("release"), "2")
        per_claim = self.no_instance_twice()
        for c in self.claims():
            instance_id = c["status"]["providerID"].rsplit("/", 1)[-1]
            instance = self.ec2.describe_instances(InstanceIds=[instance_id])[
                "Reservations"][0]["Instances"][0]
            self.assertEqual(instance["ImageId"], new_ami, instance_id)
        with urllib.request.urlopen(self.proxy + "/__last?action=CreateFleet", timeout=5) as r:
            last_fleet = r.read().decode()
        self.assertIn("SubnetId=" + new_subnet, last_fleet)

        # The counters follow the results folded after the API showed them: waited for.
        def counted():
            text = self.metrics()
            return self.metric_sum(text, "karpenter_nodeclaims_terminated_total") >= \
                len(per_claim) - 1 and text
        text = wait_for("every terminated NodeClaim counted", counted, 10)
        self.assertGreaterEqual(self.metric_sum(text, "karpenter_nodeclaims_created_total"),
                                len(per_claim))
        self.assertGreaterEqual(self.metric_sum(
            text, "karpenter_interruption_received_messages_total"), 1)
        self.assertGreaterEqual(self.metric_sum(
            text, "karpenter_nodeclaims_disrupted_total", reason="drifted"), 1)
        self.assertGreater(self.metric_sum(text, "tenon_log_sequence"), 0)

        self.stop_tenon()
        verdict = self.replay_verdict()
        self.assertIn("verdict: identical", verdict)
        # Every CreateFleet body the adapter sent, rendered again from its command alone.
        rendered = re.search(r"(\d+) recorded CreateFleet bodies rendered again", verdict)
        self.assertIsNotNone(rendered, verdict)
        self.assertGreaterEqual(int(rendered.group(1)), len(per_claim))


class KilledAndRestarted(Cluster):
    def test_killed_at_random_points(self):
        seed = int(os.environ.get("E2E_SEED", random.randrange(1 << 30)))
        print("E2E_SEED=%d" % seed, file=sys.stderr)
        rng = random.Random(seed)
        self.start_tenon()
        self.scale(6)
        for _ in range(4):
            time.sleep(rng.uniform(0.3, 3.0))
            self.stop_tenon(signal.SIGKILL)
            self.no_instance_twice()
            self.start_tenon()
        self.converge("scale-up across restarts (seed %d)" % seed)
        self.no_instance_twice()
        self.scale(2)
        time.sleep(rng.uniform(0.5, 2.0))
        self.stop_tenon(signal.SIGKILL)
        self.start_tenon()
        self.converge("scale-down across a restart (seed %d)" % seed,
                      lambda: [] if len(self.claims()) <= 2 else ["%d claims" % len(self.claims())])
        self.no_instance_twice()
        self.stop_tenon()
        self.assertIn("verdict: identical", self.replay_verdict())


class Migration(Cluster):
    CLAIM = "default-kp7x2"

    def karpenter_instance(self):
        subnet = self.ec2.describe_subnets(Filters=[
            {"Name": "availability-zone", "Values": ["us-east-1a"]}])["Subnets"][0]["SubnetId"]
        tags = [{"Key": "karpenter.sh/nodeclaim", "Value": self.CLAIM},
                {"Key": "karpenter.sh/nodepool", "Value": "default"},
                {"Key": "kubernetes.io/cluster/" + CLUSTER, "Value": "owned"}]
        reservation = self.ec2.run_instances(
            ImageId=self.ami, InstanceType="c5.large", MinCount=1, MaxCount=1, SubnetId=subnet,
            TagSpecifications=[{"ResourceType": "instance", "Tags": tags}])
        return reservation["Instances"][0]["InstanceId"]

    def karpenter_claim(self, instance):
        self.api.ok("POST", NODECLAIMS, {
            "apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
            "metadata": {"name": self.CLAIM, "finalizers": ["karpenter.sh/termination"],
                         "labels": {"karpenter.sh/nodepool": "default", "tier": "web",
                                    "node.kubernetes.io/instance-type": "c5.large",
                                    "topology.kubernetes.io/zone": "us-east-1a",
                                    "karpenter.sh/capacity-type": "on-demand"},
                         "annotations": {"karpenter.sh/nodepool-hash": "6821555240504101244",
                                         "karpenter.sh/nodepool-hash-version": "v3"}},
            "spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                                      "name": "default"},
                     "requirements": [{"key": "karpenter.sh/capacity-type", "operator": "In",
                                       "values": ["on-demand"]}]}})
        self.api.patch(NODECLAIMS + "/" + self.CLAIM + "/status", {"status": {
            "providerID": "aws:///us-east-1a/" + instance,
            "conditions": [{"type": "Launched", "status": "True"}]}})

    def test_adopts_karpenter_nodeclaims(self):
        created = time.monotonic()
        instance = self.karpenter_instance()
        self.karpenter_claim(instance)
        wait_for("the kubelet's Node", lambda: self.api.items("/api/v1/nodes"), 30)
        # Karpenter registered it long ago: the unregistered taint is gone.
        node = self.api.items("/api/v1/nodes")[0]["metadata"]["name"]
        self.api.patch("/api/v1/nodes/" + node, {"spec": {"taints": []}})
        self.scale(2)
        self.converge("Karpenter's node running the pods before tenon starts")
        self.start_tenon()
        # Past the leak age, with garbage collection every 3 s: the instance is still there.
        time.sleep(max(0.0, 40 - (time.monotonic() - created)))
        self.converge("adopted, nothing launched or collected")
        self.assertEqual(set(self.instances()), {instance})
        self.assertEqual([c["metadata"]["name"] for c in self.claims()], [self.CLAIM])

        self.api.ok("DELETE", NODECLAIMS + "/" + self.CLAIM)

        def replaced():
            names = [c["metadata"]["name"] for c in self.claims()]
            return [] if self.CLAIM not in names else ["the adopted claim is still there"]
        self.converge("the adopted claim deleted and its pods moved", replaced)
        self.assertNotIn(instance, self.instances())
        self.no_instance_twice()
        self.stop_tenon()
        self.assertIn("verdict: identical", self.replay_verdict())
        history = subprocess.run([TENON, "replay", self.log_dir, "--nodeclaim", self.CLAIM],
                                 capture_output=True, text=True, timeout=60).stdout
        self.assertIn("Adopted", history)
        self.assertIn("InstanceTerminated", history)


if __name__ == "__main__":
    TENON = os.path.abspath(sys.argv.pop(1))
    unittest.main()
