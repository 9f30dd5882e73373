"""Summarises bench-chain raw JSON lines: medians per configuration and tracker/none ratios."""
import json
import statistics
import sys
from collections import defaultdict

runs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
tput = defaultdict(list)
lat = defaultdict(list)
for r in runs:
    if r["kind"] == "max":
        name = r["tracking"] if r["tracking"] == "none" or r["latency_probe"] else "tracker-noprobe"
        tput[(r["granularity"], name)].append(r)
    else:
        lat[r["granularity"]].append(r)

print("\nmax throughput, K=10, P=2 (median of runs; all runs in M elements/s)")
print("(tracker = with the sink's per-slot latency probe; tracker-noprobe = tracking alone)")
print(f"{'g':>6} {'tracking':>16} {'median M/s':>11} {'runs':>24} {'svc msg/1000':>13}")
for (g, t), rs in sorted(tput.items()):
    v = [x["elements_per_s"] / 1e6 for x in rs]
    s = statistics.median(x["service_messages_per_1000"] for x in rs)
    print(f"{g:>6} {t:>16} {statistics.median(v):>11.2f} {' '.join(f'{x:.2f}' for x in v):>24} {s:>13.3f}")
for g in sorted({g for g, _ in tput}):
    n = statistics.median(x["elements_per_s"] for x in tput.get((g, "none"), []) or [0])
    for t in ("tracker", "tracker-noprobe"):
        if n and (g, t) in tput:
            m = statistics.median(x["elements_per_s"] for x in tput[(g, t)])
            print(f"g={g}: {t}/none = {m / n:.3f} (overhead {100 * (1 - m / n):.1f} %)")

if lat:
    print("\nnotification latency at 100,000 elements/s, K=10, P=2, tracker (median over runs of p50/p99, us)")
    for g, rs in sorted(lat.items()):
        p50 = statistics.median(x["latency_p50_us"] for x in rs)
        p99 = statistics.median(x["latency_p99_us"] for x in rs)
        rate = statistics.median(x["elements_per_s"] for x in rs)
        print(f"g={g:>5}: p50 {p50:9.1f} us  p99 {p99:9.1f} us  (achieved {rate:,.0f} elements/s)")
