#!/usr/bin/env python3
"""`tenon run` while EC2 does not answer: the fold loop keeps its tick, the Kubernetes side keeps
working and /healthz stays 200.

  test_kubernetes_lane_and_healthz_go_on_during_an_ec2_stall
      Three pods on their nodes, tenon ticking every second. First a phase with EC2 answering,
      then one where the fault proxy holds every AWS answer (the `stall` fault) for as long:
      in each, a NodeClaim is deleted, which drains its node (node patches and evictions, on
      the Kubernetes lane) and terminates its instance and launches a replacement (on the AWS
      lane). Checked in the stalled phase: Kubernetes commands finished, /healthz answered 200
      every time it was asked and named the stuck AWS lane once its oldest command passed the
      deadline (--aws-command-deadline, half the phase), and the tick interval's p99 stayed
      within 1.5 s.
      Both phases' figures are printed, side by side; afterwards the cluster converges.

Usage: stall_test.py TENON_BINARY [unittest arguments]. STALL_SECONDS (20 by default; the
benchmark, bench/bench_stall, runs 60) sets each phase's length.
"""
import os
import re
import sys
import threading
import time
import unittest
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_test  # noqa: E402
from e2e_test import CLUSTER, NODECLAIMS, QUEUE, REGION, Cluster  # noqa: E402
from standin_test import free_port, wait_for  # noqa: E402

PHASE_S = float(os.environ.get("STALL_SECONDS", "20"))
AWS_KINDS = ("LaunchInstance", "TerminateInstance", "TagInstance", "DeleteQueueMessage")
TICK_P99_LIMIT_S = 1.5


def histogram(text, name):
    """-> {upper bound: cumulative count} of an unlabeled histogram in a /metrics text."""
    buckets = {}
    for line in text.splitlines():
        m = re.match(r'^%s_bucket\{le="([^"]+)"\} (\S+)$' % re.escape(name), line)
        if m:
            buckets[float(m.group(1))] = float(m.group(2))
    return buckets


def quantile(before, after, q):
    """-> (the bucket bound holding quantile q of what was observed between two samples of a
    histogram, how many were observed)."""
    delta = {le: after.get(le, 0) - before.get(le, 0) for le in after}
    total = delta.get(float("inf"), 0)
    if total == 0:
        return float("nan"), 0
    for le in sorted(delta):
        if delta[le] >= q * total:
            return le, int(total)
    return float("inf"), int(total)


def commands(text, kube):
    """-> commands finished so far, of the Kubernetes kinds (kube) or the AWS ones."""
    total = 0.0
    for line in text.splitlines():
        m = re.match(r'^tenon_commands_total\{([^}]*)\} (\S+)$', line)
        if not m:
            continue
        kind = re.search(r'kind="([^"]+)"', m.group(1)).group(1)
        if (kind not in AWS_KINDS) == kube:
            total += float(m.group(2))
    return int(total)


class Prober(threading.Thread):
    """Asks /healthz four times a second: every status, and the warnings its body carried."""

    def __init__(self, port):
        super().__init__(daemon=True)
        self.url = "http://127.0.0.1:%d/healthz" % port
        self.statuses, self.warnings = [], set()
        self.stopping = threading.Event()

    def run(self):
        while not self.stopping.is_set():
            try:
                with urllib.request.urlopen(self.url, timeout=2) as r:
                    status, body = r.status, r.read().decode()
            except urllib.error.HTTPError as e:
                status, body = e.code, e.read().decode()
            except OSError:
                status, body = 0, ""
            self.statuses.append(status)
            for line in body.splitlines():
                m = re.match(r"warning: command lane (\w+):", line)
                if m:
                    self.warnings.add(m.group(1))
            time.sleep(0.25)

    def stop(self):
        self.stopping.set()
        self.join()


class Ec2Stall(Cluster):
    def start_tenon_ticking(self):
        self.runs += 1
        self.metrics_port, self.health_port = free_port(), free_port()
        env = dict(os.environ, AWS_ENDPOINT_URL=self.proxy, AWS_ACCESS_KEY_ID="testing",
                   AWS_SECRET_ACCESS_KEY="testing", AWS_REGION=REGION, CLUSTER_NAME=CLUSTER,
                   INTERRUPTION_QUEUE=QUEUE, BATCH_IDLE_DURATION="500ms",
                   BATCH_MAX_DURATION="2s", CLUSTER_ENDPOINT="https://e2e.example")
        self.tenon = self.start(
            [e2e_test.TENON, "run", "--kubeconfig", self.kubeconfig, "--log-dir", self.log_dir,
             "--identity", "stall-%d" % self.runs, "--lease-namespace", "kube-system",
             "--lease-duration", "2s", "--renew-deadline", "1500ms", "--retry-period", "200ms",
             "--tick", "1s", "--gc-every", "3s", "--nodeclass-every", "2s",
             "--aws-command-deadline", "%ds" % int(PHASE_S / 2),
             "--price-file", self.price_file, "--kubernetes-version", "1.31",
             "--bind-address", "127.0.0.1", "--metrics-port", str(self.metrics_port),
             "--health-port", str(self.health_port)], "tenon", env)
        wait_for("tenon's /readyz", lambda: self.answers(
            "http://127.0.0.1:%d/readyz" % self.health_port), 20)

    def phase(self, name, stall):
        """Deletes a NodeClaim, with EC2 stalled or not, and measures PHASE_S seconds."""
        prober = Prober(self.health_port)
        before = self.metrics()
        started = time.monotonic()
        prober.start()
        if stall:
            self.fault({"action": "*", "kind": "stall", "seconds": PHASE_S})
        victim = self.claims()[0]["metadata"]["name"]
        self.api.ok("DELETE", NODECLAIMS + "/" + victim)
        time.sleep(max(0.0, PHASE_S - 1 - (time.monotonic() - started)))
        after = self.metrics()
        prober.stop()
        p99, ticks = quantile(histogram(before, "tenon_tick_interval_seconds"),
                              histogram(after, "tenon_tick_interval_seconds"), 0.99)
        figures = {
            "p99": p99, "ticks": ticks,
            "kube": commands(after, True) - commands(before, True),
            "aws": commands(after, False) - commands(before, False),
            "healthz": "%d of %d answers 200" % (prober.statuses.count(200), len(prober.statuses)),
            "all_ok": bool(prober.statuses) and all(s == 200 for s in prober.statuses),
            "warnings": sorted(prober.warnings)}
        print("%-13s tick interval p99 <= %.3g s over %d ticks; %d Kubernetes and %d AWS "
              "commands finished; /healthz %s; lanes named stuck: %s"
              % (name, p99, ticks, figures["kube"], figures["aws"], figures["healthz"],
                 ", ".join(figures["warnings"]) or "none"), flush=True)
        return figures

    def test_kubernetes_lane_and_healthz_go_on_during_an_ec2_stall(self):
        self.start_tenon_ticking()
        self.scale(3)
        self.converge("scale-up to 3 pods")
        print("tick 1 s, each phase %.0f s, a NodeClaim deleted at its start" % PHASE_S,
              flush=True)
        normal = self.phase("EC2 answering", stall=False)
        self.converge("the first replacement")
        stalled = self.phase("EC2 stalled", stall=True)
        for figures in (normal, stalled):
            self.assertTrue(figures["all_ok"], "/healthz: %s" % figures["healthz"])
            self.assertGreater(figures["ticks"], PHASE_S / 2)
        self.assertLessEqual(stalled["p99"], TICK_P99_LIMIT_S, "ticks kept their cadence")
        self.assertGreater(stalled["kube"], 0, "Kubernetes commands ran during the stall")
        self.assertIn("aws", stalled["warnings"], "/healthz named the stuck AWS lane")
        self.assertNotIn("kube", stalled["warnings"])
        self.converge("after the stall", timeout_s=180)
        self.no_instance_twice()


if __name__ == "__main__":
    e2e_test.TENON = os.path.abspath(sys.argv.pop(1))
    unittest.main()
