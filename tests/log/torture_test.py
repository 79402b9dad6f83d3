#!/usr/bin/env python3
"""Damage in every kind of file of a log folder, and every read tool's answer to it.

A demo log is written and killed part-way (so that its write-ahead log holds records), and its
export archive taken. Each trial copies it, flips one bit in or cuts off the end of one file
chosen by the seed (the write-ahead log, an SST file of each column family, snapshots
included, the MANIFEST, CURRENT, OPTIONS, or the archive), and runs the read tools on the copy.
Each tool must either answer exactly as it does on the undamaged log, or say what it dropped
from a torn write-ahead log, or exit non-zero naming the damaged file or the folder; none may
change a byte of the folder. Then `tenon simulate` resumes the run on the copy (the runtime's
recovery, as `tenon run` does it), and `tenon run` starts on another: each must finish as on
the undamaged copy, or go on from a torn tail it names, or exit non-zero naming the file,
leaving a log that says what it said before (RocksDB's own recovery may have tidied its files).

    torture_test.py TENON DEMO_SCENARIO

TORTURE_SEED repeats a run (the seed is printed first); TORTURE_TRIALS sets the trials (60).
"""
import hashlib
import os
import random
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import seeded  # noqa: E402

TOOLS = [
    ["replay", "{log}"],
    ["replay", "{log}", "--verify"],
    ["audit", "{log}"],
    ["explain", "{log}", "pod", "default/web-1"],
    ["cost", "{log}"],
    ["timeline", "{log}", "-o", "{log}.html"],
]


def run(tenon, args):
    done = subprocess.run([tenon, *args], capture_output=True, text=True, timeout=300)
    return done.returncode, done.stdout, done.stderr


def folder_digest(folder):
    digest = {}
    for name in sorted(os.listdir(folder)):
        path = os.path.join(folder, name)
        if os.path.isfile(path):
            with open(path, "rb") as f:
                digest[name] = hashlib.sha256(f.read()).hexdigest()
    return digest


def file_kinds(tenon, log):
    """{file name: kind} from `tenon log files`: tables by column family, WAL, MANIFEST, ..."""
    code, out, err = run(tenon, ["log", "files", log])
    assert code == 0, err
    kinds = {}
    for line in out.splitlines()[1:]:
        name, rest = line.split(None, 1)
        family = rest.split()[-2]
        if name.endswith(".sst"):
            kinds[name] = "sst:" + family
        elif name.endswith(".log"):
            kinds[name] = "wal"
        else:
            for prefix in ("MANIFEST", "CURRENT", "OPTIONS"):
                if name.startswith(prefix):
                    kinds[name] = prefix.lower()
    return kinds


KUBECONFIG = """apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:9", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
"""


def controller(tenon, kubeconfig, log):
    """`tenon run` on the log with no cluster to reach: (exit code or None when it was still
    running after recovering the log, its stderr)."""
    process = subprocess.Popen(
        [tenon, "run", "--kubeconfig", kubeconfig, "--log-dir", log, "--cloud-provider", "none",
         "--disable-leader-election", "--metrics-port", "0", "--health-port", "0",
         "--bind-address", "127.0.0.1"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        text=True)
    try:
        _, err = process.communicate(timeout=2)
        return process.returncode, err
    except subprocess.TimeoutExpired:
        process.kill()
        _, err = process.communicate()
        return None, err


def changed_answers(tenon, log, base, answers, trial, said):
    """A writer that stopped may have let RocksDB tidy the folder (its recovery writes a new
    MANIFEST, and the write-ahead log it read into tables), but the log must say what it said
    before: the checks that read every record and every decision answer as they did."""
    changed = []
    for tool in (["replay", "{log}", "--verify"], ["audit", "{log}"]):
        code, out, _ = run(tenon, [a.format(log=log) for a in tool])
        if (code, out.replace(log, base)) != answers[" ".join(tool)]:
            changed.append("trial %d: %s stopped, and `%s` now answers otherwise (exit %d)" % (
                trial, said, " ".join(tool[:1] + tool[2:]), code))
    return changed


def resume(tenon, scenario, log):
    done = subprocess.run([tenon, "simulate", scenario, "--log", log], capture_output=True,
                          text=True, timeout=600)
    return done.returncode, done.stdout, done.stderr


def damage(path, rng, cut=True):
    """Flips one bit or (if `cut`) cuts the file short; returns what was done."""
    size = os.path.getsize(path)
    if size == 0:
        return None
    if rng.random() < 0.5 or not cut:
        at = rng.randrange(size)
        with open(path, "r+b") as f:
            f.seek(at)
            byte = f.read(1)[0]
            f.seek(at)
            f.write(bytes([byte ^ (1 << rng.randrange(8))]))
        return "bit flipped at %d of %d" % (at, size)
    cut = rng.randrange(1, min(size, 4096) + 1)
    with open(path, "r+b") as f:
        f.truncate(size - cut)
    return "cut by %d of %d bytes" % (cut, size)


def main():
    tenon, scenario = sys.argv[1], sys.argv[2]
    trials = int(os.environ.get("TORTURE_TRIALS", "60"))
    seed = seeded.seed_from("TORTURE_SEED", "these trials")
    rng = random.Random(seed)
    work = tempfile.mkdtemp(prefix="tenon-torture-")
    failures = []
    try:
        base = os.path.join(work, "base")
        # Killed twice: the restart's recovery writes what the first run left in the write-ahead
        # log into tables of every family, and the second kill leaves a write-ahead log again.
        for acks in (600, 300):
            process = subprocess.Popen([tenon, "simulate", scenario, "--log", base, "--quiet",
                                        "--trace-acks"], stdout=subprocess.PIPE, text=True)
            for count, _ in enumerate(process.stdout):
                if count == acks:
                    break
            process.kill()
            process.wait()
        archive = os.path.join(work, "base.tenonlog")
        code, _, err = run(tenon, ["log", "export", base, "-o", archive])
        assert code == 0, err
        expected = {}
        for tool in TOOLS:
            args = [a.format(log=base) for a in tool]
            code, out, err = run(tenon, args)
            assert code == 0, "%s on the undamaged log: %s" % (args, err)
            expected[" ".join(tool)] = out
        whole = os.path.join(work, "whole")
        shutil.copytree(base, whole)
        code, resumed, err = resume(tenon, scenario, whole)
        assert code == 0, "resuming the undamaged log: %s" % err
        shutil.rmtree(whole)
        kubeconfig = os.path.join(work, "kubeconfig")
        with open(kubeconfig, "w") as f:
            f.write(KUBECONFIG)
        kind_of = file_kinds(tenon, base)
        files = sorted(kind_of)
        kinds = sorted(set(kind_of.values())) + ["archive"]
        print("file kinds: %s" % ", ".join(kinds), flush=True)
        for trial in range(trials):
            kind = kinds[trial % len(kinds)]
            log = os.path.join(work, "trial")
            shutil.rmtree(log, ignore_errors=True)
            shutil.copytree(base, log)
            if kind == "archive":
                damaged = os.path.join(work, "trial.tenonlog")
                shutil.copy(archive, damaged)
                what = damage(damaged, rng)
                target = os.path.join(work, "imported")
                shutil.rmtree(target, ignore_errors=True)
                code, out, err = run(tenon, ["log", "import", damaged, "-o", target])
                if code == 0:
                    failures.append("trial %d: archive %s: imported without a word" % (
                        trial, what))
                elif damaged not in err and "archive" not in err:
                    failures.append("trial %d: archive %s: error names no file: %s" % (
                        trial, what, err.strip()[-300:]))
                continue
            name = rng.choice([n for n in files if kind_of[n] == kind])
            what = damage(os.path.join(log, name), rng)
            if what is None:
                continue
            before = folder_digest(log)
            for copy in ("-run", "-resume"):
                shutil.rmtree(log + copy, ignore_errors=True)
                shutil.copytree(log, log + copy)
            answered_in_full = True
            answers = {}
            for tool in TOOLS:
                args = [a.format(log=log) for a in tool]
                code, out, err = run(tenon, args)
                answers[" ".join(tool)] = (code, out.replace(log, base))
                said = "%s %s: %s" % (name, what, " ".join(tool))
                answered_in_full &= code == 0 and "torn record" not in err
                if code == 0:
                    torn = "torn record" in err and name in err
                    if out.replace(log, base) != expected[" ".join(tool)] and not torn:
                        failures.append("trial %d: %s answered differently, saying nothing" % (
                            trial, said))
                elif name not in err + out and log not in err + out:
                    failures.append("trial %d: %s: exit %d, naming neither the file nor the "
                                    "log: %s" % (trial, said, code, (out + err).strip()[-300:]))
                if folder_digest(log) != before:
                    failures.append("trial %d: %s changed the folder" % (trial, said))
            # The controller's recovery: a refusal names the file and changes nothing, and a log
            # every read tool answered from in full is not refused.
            said = "%s %s: tenon run" % (name, what)
            code, err = controller(tenon, kubeconfig, log + "-run")
            if code is not None:
                if name not in err and log not in err:
                    failures.append("trial %d: %s: exit %d, naming neither the file nor the "
                                    "log: %s" % (trial, said, code, err.strip()[-300:]))
                failures += changed_answers(tenon, log + "-run", base, answers, trial, said)
                if answered_in_full:
                    failures.append("trial %d: %s refused a log the read tools answered from: "
                                    "%s" % (trial, said, err.strip()[-300:]))
            said = "%s %s: simulate resume" % (name, what)
            log += "-resume"
            code, out, err = resume(tenon, scenario, log)
            if code == 0:
                torn = "torn record" in err + out and name in err + out
                if out.replace(log, base) != resumed.replace(whole, base) and not torn:
                    failures.append("trial %d: %s finished differently, saying nothing" % (
                        trial, said))
            else:
                if name not in err + out and log not in err + out:
                    failures.append("trial %d: %s: exit %d, naming neither the file nor the "
                                    "log: %s" % (trial, said, code, (out + err).strip()[-300:]))
                # A torn tail is recovered before the resumed run finds its world ahead of the
                # log: the log went on from it, as it may.
                if not ("torn record" in err + out and name in err + out):
                    failures += changed_answers(tenon, log, base, answers, trial, said)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("%d trials" % trials)
    return seeded.verdict(failures, "TORTURE_SEED", seed)


if __name__ == "__main__":
    sys.exit(main())
