#!/usr/bin/env python3
"""Builds every test target of the workspace, then runs the test binaries side by side.

`cargo test` runs its test binaries one after another, and most of ours mostly wait (paced
runs, a Kafka broker, processes started and killed), so the test phase used about one core of
two (README.md, "Tests"). This runs up to `-j` binaries at a time (default: the CPU count),
longest first by the durations the previous run recorded in `target/test-durations.json`
(or, on a clean checkout, those committed in `scripts/test-durations.json`; unknown ones first), each in its package's folder with cargo's variables, as cargo would,
and the doctests beside them; those in `ALONE` run first, one at a time. Every binary runs even after one fails; a binary that runs
longer than `--timeout` seconds is killed and counted as failed. Each binary's output goes to
`target/test-logs/NAME.log`; a failed binary's log is printed whole at the end.

Usage: scripts/run-tests.py [-j N] [--timeout S] [-- ARGS passed to every test binary]
Exit status: 0 when every binary passed, 1 when one failed, 2 when the build failed.
"""

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time

CARGO = os.environ.get("CARGO", "cargo")
# Binaries that measure against the machine's whole CPU run alone, before the others: the bench
# stand's smoke profile drives 4 processes and a tracker process at 20,000 el/s with 17x the
# acks on 2 cores and checks the rate was kept (it fell to 35 % beside another binary); the
# profiler's tests check that perf's samples and /proc agree on a process's CPU within 3 %
# (19 % apart beside another binary); the runtime's unit tests of the sampled CPU accounting
# (measure/cpu.rs) take a preempted iteration for a long one (a 0.5 share measured 0.16 to 4.2
# beside another binary, in each of three tries), and its CPU-accounting test charges a 50 us
# busy wait to its operator within 25 % (35 us beside another binary).
ALONE = {"lab:stand", "lab:profile", "runtime:lib", "runtime:cpu_accounting"}
# The release profile with the libraries no test measures at opt-level 1 (Cargo.toml,
# [profile.release-tests]): a cold build on 2 cores is shorter, the engine the same.
FEATURES = ["--workspace", "--profile", "release-tests", "--all-features"]


def build():
    """Builds the test targets; returns [(name, executable, package dir, package name)]."""
    cmd = [CARGO, "test", *FEATURES, "--no-run", "--message-format=json-render-diagnostics"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    found = []
    for line in proc.stdout:
        try:
            msg = json.loads(line)
        except json.JSONDecodeError:
            continue
        if msg.get("reason") != "compiler-artifact" or not msg.get("executable"):
            continue
        if not msg.get("profile", {}).get("test"):
            continue
        target = msg["target"]
        pkg_dir = os.path.dirname(msg["manifest_path"])
        pkg = os.path.basename(pkg_dir)
        kind = target["kind"][0]
        name = f"{pkg}:{target['name']}" if kind != "lib" else f"{pkg}:lib"
        if kind == "bin":
            name = f"{pkg}:bin:{target['name']}"
        found.append((name, msg["executable"], pkg_dir, package_name(msg["package_id"])))
    if proc.wait() != 0:
        sys.exit(2)
    return found


def package_name(package_id):
    # "path+file:///work/main/crates/sql#xorflow-sql@0.1.0" or the older "name 0.1.0 (path+...)".
    m = re.search(r"#([^@]+)@", package_id)
    if m:
        return m.group(1)
    return package_id.split(" ")[0]


class Run:
    def __init__(self, name, cmd, cwd, env):
        self.name, self.cmd, self.cwd, self.env = name, cmd, cwd, env
        self.status = None
        self.seconds = 0.0
        self.log = None


def run_one(run, log_dir, timeout):
    run.log = os.path.join(log_dir, run.name.replace(":", "_").replace("/", "_") + ".log")
    start = time.monotonic()
    with open(run.log, "w") as out:
        proc = subprocess.Popen(
            run.cmd, cwd=run.cwd, env=run.env, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            code = proc.wait(timeout=timeout)
            run.status = "ok" if code == 0 else f"FAILED (exit {code})"
        except subprocess.TimeoutExpired:
            # The whole process group: a test's children (engines, brokers) too.
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            run.status = f"FAILED (killed after {timeout} s)"
    run.seconds = time.monotonic() - start


def skips(log):
    """The distinct `skipped: <what is missing>` lines of tests that skipped (crates/testkit)."""
    with open(log, errors="replace") as f:
        return sorted({line.strip() for line in f if line.startswith("skipped: ")})


def summary(log):
    """The binary's `test result:` line counts: (passed, failed, ignored)."""
    passed = failed = ignored = 0
    with open(log, errors="replace") as f:
        for line in f:
            m = re.match(r"test result: \w+\. (\d+) passed; (\d+) failed; (\d+) ignored", line)
            if m:
                passed += int(m.group(1))
                failed += int(m.group(2))
                ignored += int(m.group(3))
    return passed, failed, ignored


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-j", "--jobs", type=int,
                    default=int(os.environ.get("XORFLOW_TEST_JOBS", os.cpu_count() or 2)))
    ap.add_argument("--timeout", type=int, default=900, help="seconds per test binary")
    ap.add_argument("args", nargs="*", help="passed to every test binary (after --)")
    opts = ap.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    os.chdir(root)
    targets = build()
    log_dir = os.path.join(root, "target", "test-logs")
    os.makedirs(log_dir, exist_ok=True)
    times_path = os.path.join(root, "target", "test-durations.json")
    known = {}
    # The committed durations order a clean checkout's first run (CI's); this machine's own
    # from its last run, where there is one, take their place.
    for path in (os.path.join(root, "scripts", "test-durations.json"), times_path):
        try:
            with open(path) as f:
                known.update(json.load(f))
        except (OSError, ValueError):
            pass
    runs = []
    for name, exe, pkg_dir, pkg in targets:
        env = dict(os.environ, CARGO_MANIFEST_DIR=pkg_dir, CARGO_PKG_NAME=pkg)
        runs.append(Run(name, [exe, *opts.args], pkg_dir, env))
    doc = [CARGO, "test", *FEATURES, "--doc", "--", *opts.args]
    runs.append(Run("doctests", doc, root, dict(os.environ)))
    # Longest first, unknown ones before all (they may be long): the last to start are short.
    runs.sort(key=lambda r: -known.get(r.name, float("inf")))
    lock = threading.Lock()
    started = time.monotonic()

    def report(run):
        p, f, i = summary(run.log)
        with lock:
            print(f"{run.status:>6}  {run.name}: {p} passed, {f} failed, {i} ignored "
                  f"({run.seconds:.1f} s)", flush=True)
            for line in skips(run.log):
                print(f"        {line}", flush=True)

    for run in (r for r in runs if r.name in ALONE):
        run_one(run, log_dir, opts.timeout)
        report(run)
    queue = [r for r in runs if r.name not in ALONE]

    def lane():
        while True:
            with lock:
                if not queue:
                    return
                run = queue.pop(0)
            run_one(run, log_dir, opts.timeout)
            report(run)

    lanes = [threading.Thread(target=lane) for _ in range(max(1, opts.jobs))]
    for t in lanes:
        t.start()
    for t in lanes:
        t.join()
    failed = [r for r in runs if r.status != "ok"]
    for r in failed:
        print(f"\n==== {r.name}: {r.status}, {r.log} ====", flush=True)
        with open(r.log, errors="replace") as f:
            sys.stdout.write(f.read())
    known.update({r.name: round(r.seconds, 1) for r in runs if r.status == "ok"})
    with open(times_path, "w") as f:
        json.dump(known, f, indent=1, sort_keys=True)
    total = [summary(r.log) for r in runs]
    print(f"\n{len(runs) - len(failed)} of {len(runs)} test binaries passed: "
          f"{sum(t[0] for t in total)} tests passed, {sum(t[1] for t in total)} failed, "
          f"{sum(t[2] for t in total)} ignored, in {time.monotonic() - started:.0f} s "
          f"({opts.jobs} at a time)", flush=True)
    if failed:
        print("failed: " + ", ".join(r.name for r in failed), flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
