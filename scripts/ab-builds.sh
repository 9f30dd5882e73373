#!/usr/bin/env bash
# Two builds side by side, alternating run by run (a refactoring must not change what the engine
# does or how fast): the trAcker paper's chain (K=10) in 1 process x 2 workers and in 2 processes
# x 1 worker, with no tracking and with trAcker at granularity 1 and 1000, and the YSB bench
# (generator inside the job) at 100,000 events/s; notification latency of the chain at 100,000
# elements/s, granularity 100. Medians of REPEAT rounds and each build's ratio
# to the first; raw JSON lines and the summary into bench/results/ab-<UTC time>/.
#
#   BINS="before=/path/to/old/xorflow after=target/release/xorflow-lab" scripts/ab-builds.sh
#
# Each binary must take `bench chain` and `bench ysb` (the lab's binary, or xorflow before the
# lab had its own).
set -euo pipefail
cd "$(dirname "$0")/.."
BINS=${BINS:?BINS="label=path label=path"}
ELEMENTS=${ELEMENTS:-100000000}
ELEMENTS_2P=${ELEMENTS_2P:-40000000}
REPEAT=${REPEAT:-5}
YSB_DURATION=${YSB_DURATION:-30s}
for b in $BINS; do
  [ -x "${b#*=}" ] || { echo "ab-builds: ${b#*=} is not an executable" >&2; exit 2; }
done
out=bench/results/ab-$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$out"
raw="$out/raw.jsonl"
: > "$raw"
tag() { sed "s|^{|{\"bin\":\"$1\",\"point\":\"$2\",\"rep\":$3,|"; }
for rep in $(seq 1 "$REPEAT"); do
  for procs in 1 2; do
    if [ "$procs" = 1 ]; then shape=(--workers 2); n=$ELEMENTS; else shape=(--processes 2 --workers 1); n=$ELEMENTS_2P; fi
    for t in none tracker-1 tracker-1000; do
      case $t in
        none) args=(--tracking none) ;;
        tracker-*) args=(--tracking tracker --granularity "${t#tracker-}") ;;
      esac
      for b in $BINS; do
        "${b#*=}" bench chain --stages 10 "${shape[@]}" "${args[@]}" --elements "$n" --json \
          | tail -1 | tag "${b%%=*}" "chain ${procs}p $t" "$rep" | tee -a "$raw"
      done
    done
    # Notification latency at a fixed rate (at the maximum rate it measures the queues).
    for b in $BINS; do
      "${b#*=}" bench chain --stages 10 "${shape[@]}" --tracking tracker --granularity 100 \
        --rate 100000 --elements 500000 --json \
        | tail -1 | tag "${b%%=*}" "chain ${procs}p tracker-100 at 100k/s" "$rep" | tee -a "$raw"
    done
  done
  for b in $BINS; do
    "${b#*=}" bench ysb --rate 100000 --duration "$YSB_DURATION" --workers 2 --json \
      | tail -1 | tag "${b%%=*}" "ysb 100k" "$rep" | tee -a "$raw"
  done
done
{
  echo "command: BINS=\"$BINS\" ELEMENTS=$ELEMENTS ELEMENTS_2P=$ELEMENTS_2P REPEAT=$REPEAT YSB_DURATION=$YSB_DURATION scripts/ab-builds.sh"
  echo "git: $(git rev-parse --short HEAD)$(git diff --quiet || echo '-dirty')"
  echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(uname -r)"
  python3 - "$raw" <<'EOF'
import json, statistics, sys
from collections import defaultdict
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
bins = list(dict.fromkeys(r["bin"] for r in rows))
points = list(dict.fromkeys(r["point"] for r in rows))
def measures(r):
    if r["point"].startswith("ysb"):
        w = r["window_latency_ms"]
        return {"events/s": r["throughput_events_per_s"], "window p99 ms": w["p99"], "window p50 ms": w["p50"]}
    if r["point"].endswith("/s"):
        return {"notif p50 us": r["latency_p50_us"], "notif p99 us": r["latency_p99_us"]}
    return {"M el/s": r["elements_per_s"] / 1e6}
vals = defaultdict(lambda: defaultdict(list))
for r in rows:
    for k, v in measures(r).items():
        vals[(r["point"], k)][r["bin"]].append(v)
head = "| point | measure | " + " | ".join(f"{b} (median, all)" for b in bins) + " | " + " | ".join(f"{b} / {bins[0]}" for b in bins[1:]) + " |"
print(head)
print("|" + "---|" * (head.count("|") - 1))
for p in points:
    for (pp, k), by in vals.items():
        if pp != p:
            continue
        med = {b: statistics.median(by[b]) for b in bins if by[b]}
        cells = [f"{med[b]:.2f} ({', '.join(f'{x:.2f}' for x in by[b])})" for b in bins if b in med]
        ratios = [f"{med[b] / med[bins[0]]:.3f}" for b in bins[1:] if b in med and med[bins[0]]]
        print(f"| {p} | {k} | " + " | ".join(cells) + " | " + " | ".join(ratios) + " |")
EOF
} | tee "$out/summary.txt"
