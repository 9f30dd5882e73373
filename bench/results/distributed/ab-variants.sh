#!/bin/bash
# Side-by-side 2-process chain runs of several xorflow binaries or option sets (docs/distributed.md,
# session 3). Usage: ab-variants.sh RATE REPS W "BIN args..." "BIN args..." ...; PW overrides
# "--processes 2 --workers 1". Prints per variant: notification p50/p99 per instance and from the
# last arrival anywhere (us), element p50 (us), cores, ack messages per element, tracker cores, rate.
ROOT=$(cd "$(dirname "$0")/../../.." && pwd); OUT=$(mktemp); trap 'rm -f "$OUT" "$OUT.err"' EXIT
RATE=$1; REPS=$2; W=$3; shift 3
X=${XBIN:-$ROOT/target/release/xorflow}
for r in $(seq $REPS); do i=0; for V in "$@"; do i=$((i+1)); V_BIN=${V%% *}; V_ARGS=${V#* }
  $V_BIN bench chain --stages 10 ${PW:---processes 2 --workers 1} --granularity $W --tracking tracker --rate $RATE --elements $((RATE*3)) --warmup $((RATE/2)) --json $V_ARGS > $OUT 2>$OUT.err || { echo "$i failed"; tail -3 $OUT.err; continue; }
  python3 -c "
import json;d=json.load(open('$OUT'))
a=d['notification_latency_any']; e=d['element_latency']; n=d['elements']; t=d['traffic']
print('v%d inst %5.0f/%5.0f any %5.0f/%5.0f elem %5.0f cpu %.2f ack/el %.2f trk %.3f rate %.0f' % ($i, d['latency_p50_us'], d['latency_p99_us'], a['p50_us'], a['p99_us'], e['p50_us'], (d.get('cpu_per_s') or 0), t['ack']['messages']/n, d['tracker_busy_per_s'] or 0, d['elements_per_s']))"
done; done
