"""Summarises bench-chain raw JSON lines: medians per configuration and tracker/none ratios; with
several builds (BINS), each build's medians and their ratios to the first build's."""
import json
import statistics
import sys
from collections import defaultdict

runs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
bins = list(dict.fromkeys(r.get("bin", "HEAD") for r in runs))
tput = defaultdict(list)
lat = defaultdict(list)
for r in runs:
    b = r.get("bin", "HEAD")
    if r["kind"] == "max":
        name = r["tracking"] if r["tracking"] == "none" or r["latency_probe"] else "tracker-noprobe"
        tput[(r["granularity"], name, b)].append(r)
    else:
        lat[(r["granularity"], b)].append(r)


def med(rs, key):
    return statistics.median(x[key] for x in rs)


print("\nmax throughput, K=10, P=2 (median of runs; all runs in M elements/s)")
print("(tracker = with the sink's per-slot latency probe; tracker-noprobe = tracking alone)")
print(f"{'g':>6} {'tracking':>16} {'build':>10} {'median M/s':>11} {'runs':>24} {'svc msg/1000':>13}")
for (g, t, b), rs in sorted(tput.items(), key=lambda kv: (kv[0][0], kv[0][1], bins.index(kv[0][2]))):
    v = [x["elements_per_s"] / 1e6 for x in rs]
    s = med(rs, "service_messages_per_1000")
    print(f"{g:>6} {t:>16} {b:>10} {statistics.median(v):>11.2f} {' '.join(f'{x:.2f}' for x in v):>24} {s:>13.3f}")
for b in bins:
    for g in sorted({g for g, _, _ in tput}):
        none = tput.get((g, "none", b))
        for t in ("tracker", "tracker-noprobe"):
            if none and (g, t, b) in tput:
                m = med(tput[(g, t, b)], "elements_per_s") / med(none, "elements_per_s")
                print(f"[{b}] g={g}: {t}/none = {m:.3f} (overhead {100 * (1 - m):.1f} %)")

if lat:
    print("\nnotification latency at 100,000 elements/s, K=10, P=2, tracker (median over runs of p50/p99, us)")
    for (g, b), rs in sorted(lat.items(), key=lambda kv: (kv[0][0], bins.index(kv[0][1]))):
        p50, p99, rate = med(rs, "latency_p50_us"), med(rs, "latency_p99_us"), med(rs, "elements_per_s")
        print(f"g={g:>5} {b:>10}: p50 {p50:9.1f} us  p99 {p99:9.1f} us  (achieved {rate:,.0f} elements/s)")

if len(bins) > 1:
    base = bins[0]
    print(f"\nratios to build '{base}' (throughput: >1 is faster; latency: <1 is lower)")
    for (g, t, b), rs in sorted(tput.items()):
        if b != base and (g, t, base) in tput:
            r = med(rs, "elements_per_s") / med(tput[(g, t, base)], "elements_per_s")
            print(f"  throughput g={g:>5} {t:>16} {b}/{base} = {r:.3f}")
    for (g, b), rs in sorted(lat.items()):
        if b != base and (g, base) in lat:
            o = lat[(g, base)]
            r50 = med(rs, "latency_p50_us") / med(o, "latency_p50_us")
            r99 = med(rs, "latency_p99_us") / med(o, "latency_p99_us")
            print(f"  latency    g={g:>5} {b}/{base}: p50 {r50:.3f}  p99 {r99:.3f}")
