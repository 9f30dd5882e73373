#!/usr/bin/env python3
"""The chain's cost per element per hop, xorflow next to timely, and the floor of a hop
(issue 51, items 2 and 4; docs/benchmarks.md, "Where the limit is").

Runs, alternating within each round: `xorflow-lab bench chain` and the timely peer
(`peers/timely`, open-loop feed as in `bench peers`) at K = 1 and K = 10 stages without
tracking, in 1 process x 2 workers and 2 processes x 1 worker; then `xorflow-lab bench floor`.
Each run's CPU is the process tree's (user + system, `getrusage(RUSAGE_CHILDREN)` around it).
Per element per hop: (CPU per element at K = 10 - at K = 1) / 9. Writes
bench/results/hop-cost-<UTC>/raw.jsonl and summary.md.

    scripts/hop-cost.py [--rounds 5] [--elements 40000000] [--processes 1,2]
"""
import argparse
import datetime
import json
import os
import resource
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LAB = os.path.join(ROOT, "target/release/xorflow-lab")
TIMELY = os.path.join(ROOT, "peers/timely/target/release/xorflow-peer-timely")


def cpu_model():
    """The first model name with its family and model, as crates/bench/src/machine.rs says it."""
    fields = {}
    with open("/proc/cpuinfo") as f:
        for line in f:
            k, _, v = line.partition(":")
            fields.setdefault(k.strip(), v.strip())
    name = fields.get("model name", "unknown")
    if "cpu family" in fields and "model" in fields:
        return f"{name} (cpu family {fields['cpu family']}, model {fields['model']})"
    return name


def measured(argv):
    """Runs argv; returns (its JSON result line, CPU seconds of its process tree)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(argv, check=True, capture_output=True, text=True).stdout
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    lines = [l for l in out.splitlines() if l.startswith("{")]
    return json.loads(lines[-1]), cpu


def argv(engine, k, procs, elements):
    workers = 2 if procs == 1 else 1
    common = ["--stages", str(k), "--workers", str(workers), "--elements", str(elements), "--json"]
    if procs > 1:
        common += ["--processes", str(procs)]
    if engine == "xorflow":
        return [LAB, "bench", "chain", "--tracking", "none"] + common
    return [TIMELY, "--granularity", "0", "--feed", "open"] + common


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--elements", type=int, default=40_000_000)
    ap.add_argument("--processes", default="1,2")
    a = ap.parse_args()
    for exe in (LAB, TIMELY):
        if not os.access(exe, os.X_OK):
            sys.exit(f"hop-cost: {exe} is missing: cargo build --release -p xorflow-lab; "
                     "cargo build --release --manifest-path peers/timely/Cargo.toml")
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    out = os.path.join(ROOT, "bench/results", f"hop-cost-{stamp}")
    os.makedirs(out)
    raw = open(os.path.join(out, "raw.jsonl"), "w")
    procs = [int(p) for p in a.processes.split(",")]
    rows = []
    floors = []
    for r in range(a.rounds):
        # The floor in every round, between the engines' runs: the machine's speed moves
        # between hours (a floor measured after all rounds read 5x one measured alone).
        o = subprocess.run([LAB, "bench", "floor", "--json"], check=True, capture_output=True,
                           text=True).stdout
        for line in o.splitlines():
            f = json.loads(line)
            floors.append(f)
            raw.write(json.dumps({"round": r, "floor": f}) + "\n")
        for p in procs:
            for k in (1, 10):
                for engine in ("xorflow", "timely"):
                    res, cpu = measured(argv(engine, k, p, a.elements))
                    row = {"round": r, "engine": engine, "stages": k, "processes": p,
                           "elements": a.elements, "elements_per_s": res["elements_per_s"],
                           "cpu_s": cpu, "cpu_ns_per_element": cpu * 1e9 / a.elements}
                    rows.append(row)
                    raw.write(json.dumps(row) + "\n")
                    raw.flush()
                    print(json.dumps(row), flush=True)
    raw.close()

    def med(engine, k, p, key):
        return statistics.median(x[key] for x in rows
                                 if x["engine"] == engine and x["stages"] == k and x["processes"] == p)

    s = [f"# Cost per element per hop, xorflow and timely\n",
         f"Command: `scripts/hop-cost.py --rounds {a.rounds} --elements {a.elements} "
         f"--processes {a.processes}`; CPU: {cpu_model()}, {os.cpu_count()} cores; medians of "
         f"{a.rounds} alternating rounds; CPU is the process tree's user + system time.\n",
         "| processes | K | xorflow M el/s | timely M el/s | xorflow / timely | xorflow CPU ns/el "
         "| timely CPU ns/el |", "|---:|---:|---:|---:|---:|---:|---:|"]
    for p in procs:
        for k in (1, 10):
            x, t = med("xorflow", k, p, "elements_per_s"), med("timely", k, p, "elements_per_s")
            s.append(f"| {p} | {k} | {x / 1e6:.1f} | {t / 1e6:.1f} | {x / t:.2f}x | "
                     f"{med('xorflow', k, p, 'cpu_ns_per_element'):.1f} | "
                     f"{med('timely', k, p, 'cpu_ns_per_element'):.1f} |")
    s.append("\nPer element per hop, CPU ns ((K = 10 - K = 1) / 9):\n")
    for p in procs:
        for e in ("xorflow", "timely"):
            hop = (med(e, 10, p, "cpu_ns_per_element") - med(e, 1, p, "cpu_ns_per_element")) / 9
            s.append(f"- {p} process(es), {e}: {hop:.2f}")
    for v in ("hand-over", "copy"):
        c = statistics.median(f["cpu_ns_per_element"] for f in floors if f["variant"] == v)
        w = statistics.median(f["wall_ns_per_element"] for f in floors if f["variant"] == v)
        s.append(f"- the floor, {v} (`xorflow-lab bench floor`, once per round, median): CPU {c:.2f} ns per "
                 f"element per hop on two threads, {w:.2f} ns wall")
    text = "\n".join(s) + "\n"
    open(os.path.join(out, "summary.md"), "w").write(text)
    print(text)
    print(out)


if __name__ == "__main__":
    main()
