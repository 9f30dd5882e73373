#!/usr/bin/env python3
"""Notification latency of two builds run in alternating pairs (bench/results/issue12-ab/).

Usage: python3 scripts/latency_pairs.py RAW.jsonl A,B

RAW.jsonl holds `xorflow-lab bench chain --json` lines, each with a "bin" label (A or B) and a "rep"
number added (see bench/results/issue12-ab/README.md for the loop that writes them). Prints, per
granularity W, each build's median p50 and p99 (us) and every run's p50, then B/A ratios and in
how many pairs B's p50 is the higher: per-run p50 is bimodal on this machine, so the pair count
says more than one median.
"""
import json
import statistics as st
import sys


def main(path, labels):
    rows = [json.loads(line) for line in open(path)]
    a, b = labels
    for g in sorted({x["granularity"] for x in rows}):
        p50 = {}
        for label in labels:
            xs = sorted(
                (x for x in rows if x["bin"] == label and x["granularity"] == g),
                key=lambda x: x["rep"],
            )
            p50[label] = [x["latency_p50_us"] for x in xs]
            p99 = [x["latency_p99_us"] for x in xs]
            print("W=%-5d %-8s runs %2d  median p50 %6.1f us  p99 %7.1f us   p50 per run: %s" % (
                g, label, len(xs), st.median(p50[label]), st.median(p99),
                " ".join(str(round(p)) for p in p50[label])))
        pairs = list(zip(p50[a], p50[b]))
        higher = sum(y > x for x, y in pairs)
        print("W=%-5d %s/%s: median p50 %.2f; %s higher p50 in %d of %d pairs" % (
            g, b, a, st.median(p50[b]) / st.median(p50[a]), b, higher, len(pairs)))


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[2].count(",") != 1:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2].split(","))
