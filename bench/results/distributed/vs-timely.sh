#!/bin/bash
# xorflow next to the timely peer on the chain at 100,000 elements/s, alternating (docs/distributed.md,
# session 3). Usage: vs-timely.sh REPS W PROCESSES (1 or 2; 2 workers in all). Needs the release
# build and peers/timely built (cargo build --release in peers/timely).
ROOT=$(cd "$(dirname "$0")/../../.." && pwd); OUT=$(mktemp); trap 'rm -f "$OUT" "$OUT.err"' EXIT
REPS=$1; W=$2; P=${3:-1}; WK=$((2/P))
T=$ROOT/peers/timely/target/release/xorflow-peer-timely
X=$ROOT/target/release/xorflow
for r in $(seq $REPS); do
  for sys in xorflow timely; do
    if [ $sys = xorflow ]; then $X bench chain --stages 10 --processes $P --workers $WK --granularity $W --tracking tracker --rate 100000 --elements 300000 --warmup 50000 --json > $OUT 2>/dev/null
    else PA=""; [ $P -gt 1 ] && PA="--processes $P"; $T --json --workers $WK $PA --stages 10 --granularity $W --elements 300000 --rate 100000 --warmup 50000 > $OUT 2>/dev/null; fi
    python3 -c "
import json;d=json.load(open('$OUT')); a=d['notification_latency_any']; e=d['element_latency']
print('%-8s W=%-5s inst %5.0f/%5.0f any %5.0f/%5.0f elem %5.0f' % ('$sys', $W, d['latency_p50_us'], d['latency_p99_us'], a['p50_us'], a['p99_us'], e['p50_us']))"
  done
done
