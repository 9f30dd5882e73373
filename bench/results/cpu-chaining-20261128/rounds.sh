#!/bin/bash
# Operator chaining side by side: the same build with --chaining true (default) and false;
# YSB at 100,000 events/s, 20 s, 1 process x 2 workers, 2 sources, in the load experiment's
# low-load modes; 2 rounds alternating. CPU = user + sys of the whole process (/usr/bin/time),
# start-up included, over events emitted.
# Usage: XORFLOW=target/release/xorflow bench/results/cpu-chaining-20261128/rounds.sh
X=${XORFLOW:-target/release/xorflow}
run() { # label options
  local out=$( { /usr/bin/time -f "TIME %U %S" $X bench ysb --rate 100000 --duration 20s --processes 1 --workers 2 --sources 2 $2 --json; } 2>&1 )
  python3 - "$1" "$out" <<'PY'
import sys,json,re
label,out=sys.argv[1],sys.argv[2]
t=re.search(r"TIME ([\d.]+) ([\d.]+)",out); cpu=float(t.group(1))+float(t.group(2))
d=json.loads([l for l in out.splitlines() if l.startswith("{")][-1])
ev=d["events_emitted"]
ops=" ".join(f"{o['vertex']} {o['ns_per_element']:.0f}" for o in d["cpu"]["operators"] if o.get("ns_per_element"))
print(f"{label:24s} cpu_s {cpu:6.2f} ns/ev {cpu*1e9/ev:7.0f} prewin p50 {d['prewindow_latency_ms']['p50']:6.2f} win p99 {d['window_latency_ms']['p99']:6.1f} ok {d['views_counted']} | {ops}",flush=True)
PY
}
BAT="--timer-slack 50us --batch-flush-on-idle false --ack-flush-on-idle false"
for r in 1 2; do
  for ms in 2 5; do
    B="--timer-slack ${ms}ms --flush-timeout ${ms}ms --batch-flush-on-idle false --ack-flush-on-idle false"
    run "unchained b$ms" "$B --chaining false"
    run "chained b$ms" "$B"
  done
  run "unchained batched" "$BAT --chaining false"
  run "chained batched" "$BAT"
  run "unchained defaults" "--chaining false"
  run "chained defaults" ""
done
