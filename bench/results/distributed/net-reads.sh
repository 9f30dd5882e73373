#!/bin/bash
# Who reads the connections (docs/distributed.md, "Session 8"): the chain across 2 processes with
# the network thread reading (the default before session 8) next to the workers reading (the
# default since), alternating. Usage: net-reads.sh ROUNDS [WORKERS_PER_PROCESS]. Needs the
# release build. Prints one line per run.
ROOT=$(cd "$(dirname "$0")/../../.." && pwd); OUT=$(mktemp); trap 'rm -f "$OUT"' EXIT
R=${1:-3}; WK=${2:-1}; X=$ROOT/target/release/xorflow
run() { # label, then bench chain options
  local label=$1; shift
  $X bench chain --stages 10 --processes 2 --workers $WK --json "$@" > $OUT 2>/dev/null || { echo "$label: FAILED"; return; }
  python3 -c "
import json;d=json.load(open('$OUT'));e=d.get('element_latency') or {};n=d.get('notification_latency_any') or {}
f=lambda m,k: '%6.0f' % m[k] if m.get(k) is not None else '     -'
print('%-40s %6.2f M/s  elem p50 %s p99 %s  notif-any p50 %s p99 %s  cpu/s %.2f  received %d' % ('$label',d['elements_per_s']/1e6,f(e,'p50_us'),f(e,'p99_us'),f(n,'p50_us'),f(n,'p99_us'),d['cpu_per_s'],d['elements_received']))"
}
for r in $(seq $R); do
  for reads in network-thread worker; do
    run "r$r $reads none throughput" --net-reads $reads --tracking none --elements 20000000
    run "r$r $reads W=1000 throughput" --net-reads $reads --tracking tracker --granularity 1000 --elements 20000000
    for rate in 1000 10000 100000; do for w in 100 1000; do
      [ $rate -lt 100000 ] && [ $w = 1000 ] && continue
      run "r$r $reads W=$w $rate/s" --net-reads $reads --tracking tracker --granularity $w --rate $rate --elements $((rate*5)) --warmup $rate
    done; done
  done
done
