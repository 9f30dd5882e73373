"""Summarises bench-cluster raw JSON lines: medians per (granularity, configuration)."""
import json
import statistics
import sys
from collections import defaultdict

runs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
by = defaultdict(list)
for r in runs:
    by[(r["kind"], r["granularity"], r["config"])].append(r)
order = ["none", "tracker", "tracker-2-shards", "tracker-process", "markers"]
key = lambda k: (k[1], order.index(k[2]))


def med(rs, f):
    vals = [f(x) for x in rs if f(x) is not None]
    return statistics.median(vals) if vals else float("nan")


print("\nmax throughput, chain K=10, 2 processes x 1 worker (median of runs)")
print(f"{'g':>4} {'config':>17} {'M el/s':>7} {'runs':>20} {'vs none':>8} {'svc msg/1000':>13} {'svc bytes/el':>13}")
for k in sorted((k for k in by if k[0] == "max"), key=key):
    rs = by[k]
    v = [x["elements_per_s"] / 1e6 for x in rs]
    none = by.get(("max", k[1], "none"))
    ratio = statistics.median(v) / med(none, lambda x: x["elements_per_s"] / 1e6) if none else float("nan")
    svc = med(rs, lambda x: x["service_messages_per_1000"])
    b = med(rs, lambda x: x["traffic"]["service"]["bytes"] / x["elements"])
    print(f"{k[1]:>4} {k[2]:>17} {statistics.median(v):>7.2f} {' '.join(f'{x:.2f}' for x in v):>20} {ratio:>8.3f} {svc:>13.3f} {b:>13.3f}")

print("\nnotification latency at 100,000 elements/s (median over runs of p50 / p99, us)")
for k in sorted((k for k in by if k[0] == "rate"), key=key):
    rs = by[k]
    print(f"g={k[1]:>4} {k[2]:>17}: p50 {med(rs, lambda x: x['latency_p50_us']):9.1f}  p99 {med(rs, lambda x: x['latency_p99_us']):9.1f}"
          f"  achieved {med(rs, lambda x: x['elements_per_s']):,.0f} el/s, svc msg/1000 {med(rs, lambda x: x['service_messages_per_1000']):.2f}")
