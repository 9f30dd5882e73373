#!/bin/bash
# One process, 2 workers, 10 stages: binary A next to binary B, alternating (docs/distributed.md,
# "Session 8": the single-process path after workers began reading connections).
# Usage: one-process-ab.sh A B ROUNDS. Prints one line per run.
A=$1; B=$2; R=${3:-3}; OUT=$(mktemp); trap 'rm -f "$OUT"' EXIT
run() { # binary label, then bench chain options
  local x=$1 label=$2; shift 2
  $x bench chain --stages 10 --workers 2 --json "$@" > $OUT 2>/dev/null || { echo "$label: FAILED"; return; }
  python3 -c "
import json;d=json.load(open('$OUT'));n=d.get('notification_latency_any') or {}
f=lambda v: '%6.0f' % v if v is not None else '     -'
print('%-34s %6.2f M/s  per-instance p50 %s p99 %s  any p50 %s p99 %s  received %d' % ('$label',d['elements_per_s']/1e6,f(d.get('latency_p50_us')),f(d.get('latency_p99_us')),f(n.get('p50_us')),f(n.get('p99_us')),d['elements_received']))"
}
for r in $(seq $R); do
  for ab in A B; do
    x=$A; [ $ab = B ] && x=$B
    run $x "r$r $ab none" --tracking none --elements 20000000
    run $x "r$r $ab W=1000 throughput" --tracking tracker --granularity 1000 --elements 20000000
    for w in 100 1000; do
      run $x "r$r $ab W=$w 100000/s" --tracking tracker --granularity $w --rate 100000 --elements 500000 --warmup 100000
    done
  done
done
