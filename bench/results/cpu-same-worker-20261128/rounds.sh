#!/bin/bash
# Same-worker batches at idle (Flush::Idle / Flush::SameWorker) and the event scan, side by side:
# BASE = a build of 6016f44 (before), NEW = this build; YSB at 100,000 events/s, 20 s,
# 1 process x 2 workers, 2 sources, in three low-load modes; 2 rounds alternating.
# CPU = user + sys of the whole process (/usr/bin/time), start-up included, over events emitted.
# Usage: BASE=/tmp/xorflow-base NEW=target/release/xorflow bench/results/cpu-same-worker-20261128/rounds.sh
BASE=${BASE:-/tmp/xorflow-base}; NEW=${NEW:-target/release/xorflow}
run() { # label binary options
  local out=$( { /usr/bin/time -f "TIME %U %S" $2 bench ysb --rate 100000 --duration 20s --processes 1 --workers 2 --sources 2 $3 --json; } 2>&1 )
  python3 - "$1" "$out" <<'PY'
import sys,json,re
label,out=sys.argv[1],sys.argv[2]
t=re.search(r"TIME ([\d.]+) ([\d.]+)",out); cpu=float(t.group(1))+float(t.group(2))
d=json.loads([l for l in out.splitlines() if l.startswith("{")][-1])
ev=d["events_emitted"]; ops={o["vertex"]:o["ns_per_element"] for o in d["cpu"]["operators"]}
print(f"{label:28s} cpu_s {cpu:6.2f} ns/ev {cpu*1e9/ev:7.0f} prewin p50 {d['prewindow_latency_ms']['p50']:6.2f} win p99 {d['window_latency_ms']['p99']:6.1f} ok {d['views_counted']} parse {ops.get('parse',0):.0f} join {ops.get('join',0):.0f}",flush=True)
PY
}
BAT="--timer-slack 50us --batch-flush-on-idle false --ack-flush-on-idle false"
for r in 1 2; do
  for ms in 2 5; do
    B="--timer-slack ${ms}ms --flush-timeout ${ms}ms --batch-flush-on-idle false --ack-flush-on-idle false"
    run "base b$ms" $BASE "$B"
    run "new b$ms" $NEW "$B"
  done
  run "base batched" $BASE "$BAT"
  run "new batched" $NEW "$BAT"
done
