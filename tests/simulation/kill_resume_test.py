#!/usr/bin/env python3
"""Kill and resume: `tenon simulate SCENARIO --log DIR`, SIGKILLed at random moments and started
again on the same folder, over every bundled scenario. Each series of kills ends with a run left
to finish; its world must end no dearer, with no more pods pending, than a run never killed,
and its log must replay identically.

    kill_resume_test.py TENON SCENARIOS_DIR CAPNP SOURCE_DIR

The saved world (sim-world.bin, a Cap'n Proto message of adapters/sim/world.capnp under
SOURCE_DIR) is read as JSON through the Cap'n Proto tool CAPNP (`capnp convert`).

KILL_RESUME_CYCLES (default 100) is the number of kills over all the scenarios;
KILL_RESUME_SEED repeats the kill moments of an earlier run (the seed is printed first).
"""
import glob
import json
import math
import os
import random
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import seeded  # noqa: E402
import time

KILLS_PER_SERIES = 6  # Kills before a series' last run is left to finish.


def saved_world(capnp, source_dir, log_dir):
    """The world `tenon simulate` saved in `log_dir`, as `capnp convert` gives it in JSON."""
    with open(os.path.join(log_dir, "sim-world.bin"), "rb") as f:
        result = subprocess.run(
            [capnp, "convert", "binary:json", "-I", os.path.join(source_dir, "log"),
             os.path.join(source_dir, "adapters", "sim", "world.capnp"), "World"],
            stdin=f, capture_output=True, check=True)
    return json.loads(result.stdout)


def world_end(world):
    """(cost in micro-USD/h, nodes, pending pods, virtual now) of a saved world."""
    # Cap'n Proto's JSON writes 64-bit integers as strings, and leaves out empty fields.
    instances = world.get("instances", [])
    cost = sum(int(i.get("priceMicroUsdHour", 0)) for i in instances)
    pending = sum(1 for p in world.get("pods", []) if not p.get("nodeName"))
    return cost, len(instances), pending, int(world.get("nowNs", 0))


def simulate(tenon, scenario, log_dir, kill_after=None):
    """Runs tenon simulate; SIGKILLs it after `kill_after` seconds. True if it was killed."""
    process = subprocess.Popen([tenon, "simulate", scenario, "--log", log_dir, "--quiet"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        process.wait(timeout=kill_after)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        return True
    if process.returncode != 0:
        raise AssertionError("tenon simulate %s exited %d: %s" % (
            scenario, process.returncode, process.stderr.read().decode()[-2000:]))
    return False


def explain_pending(tenon, log_dir, world):
    """The end of `tenon explain` for each pod the saved world left pending."""
    said = []
    for pod in world.get("pods", []):
        if pod.get("nodeName"):
            continue
        name = "%s/%s" % (pod.get("namespace", ""), pod["name"])
        result = subprocess.run([tenon, "explain", log_dir, "pod", name], capture_output=True,
                                text=True)
        lines = (result.stdout + result.stderr).strip().splitlines()
        said.append("  pending %s:\n    %s" % (name, "\n    ".join(lines[-15:])))
    return "\n".join(said)


def replay_verify(tenon, log_dir):
    result = subprocess.run([tenon, "replay", "--verify", log_dir], capture_output=True,
                            text=True)
    return result.returncode == 0, (result.stdout + result.stderr).strip()[-600:]


def main():
    tenon, scenarios_dir, capnp, source_dir = sys.argv[1:5]
    scenarios = sorted(glob.glob(os.path.join(scenarios_dir, "*.yaml")))
    cycles = int(os.environ.get("KILL_RESUME_CYCLES", "100"))
    seed = seeded.seed_from("KILL_RESUME_SEED", "these kill moments")
    rng = random.Random(seed)
    per_scenario = math.ceil(cycles / len(scenarios))
    work = tempfile.mkdtemp(prefix="tenon-kill-resume-")
    failures, kills = [], 0
    try:
        for scenario in scenarios:
            name = os.path.basename(scenario)[:-len(".yaml")]
            clean_dir = os.path.join(work, name + "-clean")
            started = time.monotonic()
            simulate(tenon, scenario, clean_dir)
            wall = time.monotonic() - started
            clean = world_end(saved_world(capnp, source_dir, clean_dir))
            done, series = 0, 0
            while done < per_scenario:
                series += 1
                log_dir = os.path.join(work, "%s-%d" % (name, series))
                moments = []
                while len(moments) < KILLS_PER_SERIES and done < per_scenario:
                    after = rng.uniform(0.05, wall)
                    if not simulate(tenon, scenario, log_dir, kill_after=after):
                        break  # It finished first: this series is over.
                    moments.append("%.2f" % after)
                    done += 1
                simulate(tenon, scenario, log_dir)  # Left to finish.
                world = saved_world(capnp, source_dir, log_dir)
                end = world_end(world)
                what = "%s series %d (killed after %s s)" % (name, series, ", ".join(moments))
                if end[3] != clean[3]:
                    failures.append("%s: ends at %d, not %d" % (what, end[3], clean[3]))
                if end[0] > clean[0] or end[2] > clean[2]:
                    failures.append("%s: ends at $%.4f/h, %d nodes, %d pods pending; never killed: "
                                    "$%.4f/h, %d nodes, %d pending" % (
                                        what, end[0] / 1e6, end[1], end[2], clean[0] / 1e6,
                                        clean[1], clean[2]))
                    if end[2] > clean[2]:
                        failures.append(explain_pending(tenon, log_dir, world))
                identical, said = replay_verify(tenon, log_dir)
                if not identical:
                    failures.append("%s: replay --verify: %s" % (what, said))
                shutil.rmtree(log_dir, ignore_errors=True)
            kills += done
            print("%-26s never killed: $%.4f/h, %d nodes; %d kills in %d series" % (
                name, clean[0] / 1e6, clean[1], done, series), flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("%d kills over %d scenarios" % (kills, len(scenarios)))
    return seeded.verdict(failures, "KILL_RESUME_SEED", seed)


if __name__ == "__main__":
    sys.exit(main())
