#!/usr/bin/env python3
"""`tenon run` as a process: how it stops and how it fails, as an operator sees it in the
container's log under the default `--log-format json`.

  Shutdown.test_sigterm_during_a_long_poll
      In the world of e2e_test.py (the test API server, moto behind the fault proxy, the
      stand-in), tenon leads with an interruption queue configured (moto's SQS holds an empty
      long poll for its whole WaitTimeSeconds, as SQS does) and is sent SIGTERM while its poll is
      waiting: it exits with status 0 within 2 s, having logged, as JSON, one info line when
      the shutdown began and one when it completed, in that order; a message sent to the queue
      afterwards is still there for the next leader (after its visibility timeout, when the
      abandoned poll took it).
  FatalErrors.*
      An unreadable kubeconfig, a flag value of the wrong type, and a bad environment setting:
      each ends the process with a non-zero status and one JSON line at level fatal naming the
      problem (every line on stderr is JSON). With --log-format text the error is plain text;
      --help still prints help and exits 0.
  CommandLine.*
      The other commands refuse what they cannot mean, with exit status 1 or more and a message
      that names the word, the file or the line: an unknown subcommand, a time that is no real
      time or lies beyond 2262, an empty time, a sequence number that is negative, zero or
      beyond 64 bits, a catalog that is a folder, a namespace that is no Kubernetes name (10 MB
      of it: refused before a log is written), a scenario file larger than the limit.

Usage: process_test.py TENON_BINARY [unittest arguments].
"""
import gzip
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_test  # noqa: E402
from standin_test import free_port, wait_for  # noqa: E402

TENON = None  # Set from argv.
ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
STOP_LIMIT_S = 2.0
POLL_S = 0.02
VISIBILITY_S = 1


def json_lines(path):
    """Every line of a log file, parsed; fails on a line that is not one JSON object."""
    lines = []
    with open(path) as f:
        for number, text in enumerate(f, 1):
            try:
                line = json.loads(text)
            except ValueError:
                raise AssertionError("line %d of %s is not JSON: %r" % (number, path, text))
            if not isinstance(line, dict):
                raise AssertionError("line %d of %s is not a JSON object: %r"
                                     % (number, path, text))
            lines.append(line)
    return lines


class Shutdown(e2e_test.Cluster):
    def test_sigterm_during_a_long_poll(self):
        # The abandoned poll may take a message sent later; it comes back after this long.
        self.sqs.set_queue_attributes(QueueUrl=self.queue_url,
                                      Attributes={"VisibilityTimeout": str(VISIBILITY_S)})
        self.start_tenon()
        tenon = self.tenon
        log = self.logs[-1][2]

        def polling():
            return any("interruption: polling" in line.get("message", "")
                       for line in json_lines(log))
        wait_for("tenon's first long poll of %s" % e2e_test.QUEUE, polling, e2e_test.STARTUP_S)
        time.sleep(1.0)  # Well inside the poll's 20 s wait.

        tenon.stdout.close()
        sent = time.monotonic()
        os.killpg(tenon.pid, signal.SIGTERM)
        while tenon.poll() is None and time.monotonic() - sent < 30:
            time.sleep(POLL_S)
        took = time.monotonic() - sent
        sys.stderr.write("tenon stopped %.2f s after SIGTERM\n" % took)
        code = tenon.wait()
        self.processes.remove(tenon)
        self.tenon = None
        self.assertEqual(code, 0, "exit status after SIGTERM")
        self.assertLess(took, STOP_LIMIT_S, "seconds from SIGTERM to exit")

        lines = json_lines(log)
        messages = [line["message"] for line in lines]
        begins = [i for i, m in enumerate(messages) if m.startswith("shutdown: stop requested")]
        ends = [i for i, m in enumerate(messages) if m.startswith("shutdown complete")]
        self.assertEqual(len(begins), 1, messages[-10:])
        self.assertEqual(len(ends), 1, messages[-10:])
        self.assertLess(begins[0], ends[0])
        self.assertEqual(ends[0], len(lines) - 1, "nothing is logged after the shutdown completed")
        self.assertEqual(lines[begins[0]]["level"], "info")
        self.assertEqual(lines[ends[0]]["level"], "info")
        self.assertFalse([line for line in lines[begins[0]:]
                          if line["level"] in ("warn", "error", "fatal")],
                         "the calls cut short are no failure to report")

        # The poll tenon abandoned may still be open at SQS, and take a message sent now; the
        # message is not deleted, so it comes back once its visibility timeout has passed.
        self.sqs.send_message(QueueUrl=self.queue_url, MessageBody="{}")
        received = self.sqs.receive_message(QueueUrl=self.queue_url,
                                            WaitTimeSeconds=VISIBILITY_S + 5)
        self.assertEqual(len(received.get("Messages", [])), 1)


class FatalErrors(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="tenon-fatal-")
        self.addCleanup(shutil.rmtree, self.dir, True)

    def run_tenon(self, *args, env=None):
        ports = ["--metrics-port", str(free_port()), "--health-port", str(free_port()),
                 "--bind-address", "127.0.0.1"]
        return subprocess.run(
            [TENON, "run", "--log-dir", os.path.join(self.dir, "log"), *ports, *args],
            capture_output=True, text=True, timeout=60,
            env=dict(os.environ, **(env or {})))

    def fatal_line(self, done, *words):
        """The one fatal JSON line on stderr, which names every word."""
        self.assertNotEqual(done.returncode, 0, done.stderr)
        path = os.path.join(self.dir, "stderr")
        with open(path, "w") as f:
            f.write(done.stderr)
        lines = json_lines(path)
        fatal = [line for line in lines if line.get("level") == "fatal"]
        self.assertEqual(len(fatal), 1, done.stderr)
        self.assertEqual(fatal[0], lines[-1], "the fatal line is the last")
        for word in words:
            self.assertIn(word, fatal[0]["message"])
        self.assertIn("time", fatal[0])
        return fatal[0]

    def test_unreadable_kubeconfig(self):
        missing = os.path.join(self.dir, "no-such-kubeconfig")
        done = self.run_tenon("--kubeconfig", missing)
        self.fatal_line(done, missing)

    def test_flag_value_of_the_wrong_type(self):
        done = self.run_tenon("--tick", "1s", "--retain-bytes", "lots")
        self.fatal_line(done, "--retain-bytes")

    def test_flag_value_not_allowed(self):
        done = self.run_tenon("--cloud-provider", "gcp")
        self.fatal_line(done, "--cloud-provider", "gcp")

    def test_bad_duration(self):
        done = self.run_tenon("--lease-duration", "soon")
        self.fatal_line(done, "--lease-duration", "soon")

    def test_bad_environment_setting(self):
        done = self.run_tenon(env={"BATCH_IDLE_DURATION": "soon"})
        self.assertEqual(done.returncode, 2)
        self.fatal_line(done, "BATCH_IDLE_DURATION")

    def test_text_logs_print_plain_text(self):
        missing = os.path.join(self.dir, "no-such-kubeconfig")
        done = self.run_tenon("--log-format", "text", "--kubeconfig", missing)
        self.assertNotEqual(done.returncode, 0)
        last = done.stderr.strip().splitlines()[-1]
        self.assertTrue(last.startswith("tenon: "), done.stderr)
        self.assertIn(missing, last)

    def test_help_is_not_an_error(self):
        done = subprocess.run([TENON, "run", "--help"], capture_output=True, text=True,
                              timeout=60)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("--log-format", done.stdout)


class CommandLine(unittest.TestCase):
    """tenon's read tools and simulate, given what they cannot mean."""

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="tenon-cli-")
        cls.log = os.path.join(cls.dir, "log")
        cls.demo = os.path.join(ROOT, "examples", "scenarios", "demo.yaml")
        done = subprocess.run([TENON, "simulate", cls.demo, "--log", cls.log, "--quiet"],
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, True)

    def refused(self, args, *words):
        done = subprocess.run([TENON, *args], capture_output=True, text=True, timeout=120)
        self.assertNotEqual(done.returncode, 0, done.stdout)
        for word in words:
            self.assertIn(word, done.stderr)
        return done

    def scenario(self, name, text):
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def demo_with(self, old, new):
        with open(self.demo) as f:
            text = f.read()
        self.assertIn(old, text)
        catalog = os.path.join(ROOT, "examples", "catalogs", "small.json")
        return text.replace(old, new, 1).replace("../catalogs/small.json", catalog)

    def test_unknown_subcommand(self):
        self.refused(["frobnicate"], "unknown subcommand 'frobnicate'", "simulate")

    def test_times_that_are_no_real_time(self):
        for text in ["9999-12-31T23:59:59Z", "25:00:00", "02:61:00", "2026-02-30T00:00:00Z",
                     "yesterday", "03:14: 9X", "0:0:", "2:14"]:
            for command in (["replay", self.log, "--until", text],
                            ["audit", self.log, "--since", text],
                            ["explain", self.log, "pod", "default/x", "--at", text],
                            ["cost", self.log, "--until", text]):
                with self.subTest(command=command):
                    self.refused(command, text)
        self.refused(["replay", self.log, "--until", ""], "--until", "empty time")

    def test_a_real_time_is_read(self):
        done = subprocess.run([TENON, "replay", self.log, "--until", "02:10:00"],
                              capture_output=True, text=True, timeout=120)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("2026-01-01T02:", done.stdout)

    def test_sequence_numbers_out_of_range(self):
        for text in ["-5", "0", "18446744073709551616", "12x"]:
            with self.subTest(to=text):
                self.refused(["replay", self.log, "--to", text], "--to", text)

    def test_catalog_that_is_a_folder(self):
        path = self.scenario("folder-catalog.yaml",
                             self.demo_with("catalog: ../catalogs/small.json", "catalog: /"))
        self.refused(["simulate", path], "catalog / is not a file")

    def test_namespace_that_is_no_name(self):
        out = os.path.join(self.dir, "huge-log")
        path = self.scenario("huge-namespace.yaml", self.demo_with(
            "metadata: {name: web}", "metadata: {namespace: " + "a" * 10_000_000 + ", name: web}"))
        self.refused(["simulate", path, "--log", out], path, "namespace", "not a Kubernetes name")
        self.assertFalse(os.path.exists(out), "a log was written for a refused scenario")
        path = self.scenario("bad-namespace.yaml", self.demo_with(
            "metadata: {name: web}", "metadata: {namespace: Web_Tier, name: web}"))
        self.refused(["simulate", path], "'Web_Tier'", "line 93")

    def test_start_beyond_what_nanoseconds_hold(self):
        path = self.scenario("far-start.yaml", self.demo_with(
            'start: "2026-01-01T02:00:00Z"', 'start: "6026-01-01T02:00:00Z"'))
        self.refused(["simulate", path], path, "in the years 1678 to 2261")

    def test_scenario_larger_than_the_limit(self):
        path = self.scenario("large.yaml", "# padding\n" * (2 << 20))
        self.refused(["simulate", path], path, "MiB")


# Logs written by earlier versions (tests/data/logs/README.md) and the final state each recorded.
EARLIER_LOGS = {
    "consolidation-scale-down-d05f000.tlog.gz": "bae7007fe7cb5d4f",
}


class EarlierLogs(unittest.TestCase):
    """Logs an earlier tenon wrote still replay identical: snapshots decode, hashes match."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="tenon-earlier-")

    def tearDown(self):
        shutil.rmtree(self.dir, True)

    def tenon(self, *args):
        done = subprocess.run([TENON, *args], capture_output=True, text=True, timeout=300)
        self.assertEqual(done.returncode, 0, done.stderr)
        return done.stdout

    def test_each_replays_identical(self):
        for name, final_state in EARLIER_LOGS.items():
            with self.subTest(log=name):
                archive = os.path.join(self.dir, name[:-len(".gz")])
                with gzip.open(os.path.join(ROOT, "tests", "data", "logs", name)) as packed:
                    with open(archive, "wb") as out:
                        shutil.copyfileobj(packed, out)
                log = os.path.join(self.dir, name + ".log")
                self.tenon("log", "import", archive, "-o", log)
                verified = self.tenon("replay", "--verify", log)
                self.assertIn("verdict: identical", verified)
                self.assertIn("final state " + final_state, verified)
                self.assertNotIn(" 0 snapshots checked", verified)
                # The incident tools read its decisions: disruptions proposed, validated over
                # the pending state and carried out.
                audit = self.tenon("audit", log)
                self.assertIn("Emptiness executed", audit)
                self.assertIn("MultiNodeConsolidation replaced", audit)


if __name__ == "__main__":
    TENON = e2e_test.TENON = os.path.abspath(sys.argv.pop(1))
    unittest.main()
