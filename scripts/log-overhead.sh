#!/bin/bash
# What event logging costs the YSB job (the Cloudprofiler paper, section 6.6: 2.2 % of throughput;
# our aim < 2 %): `xorflow-lab run ysb` in catch-up mode on a generated file, without --log and with
# each SPEC, alternating run by run (the machine is shared: side by side, never one block after the
# other), medians of REPS runs of events/s. Usage:
#   scripts/log-overhead.sh [EVENTS] [REPS] [SPEC...]   (defaults: 3000000 7 '*=xoy:1/64' '*=buffered')
set -euo pipefail
cd "$(dirname "$0")/.."
events=${1:-3000000}; reps=${2:-7}; shift $(( $# < 2 ? $# : 2 ))
specs=("$@"); [ ${#specs[@]} -gt 0 ] || specs=('*=xoy:1/64' '*=buffered')
# The YSB's job and generator are both the lab's (crates/lab/src/ysb_job.rs, ysb.rs).
x=target/release/xorflow-lab
[ -x "$x" ] || cargo build --release -p xorflow-lab
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
$x ysb generate --events "$events" --start-ms 1700000000000 --output "$work/k.txt" \
  --ad-campaigns "$work/a.txt" > /dev/null
run() { # spec -> events/s
  local extra=()
  [ "$1" = off ] || extra=(--log "$1" --log-dir "$work/logs")
  rm -rf "$work/logs"
  $x run ysb --input "$work/k.txt" --ad-campaigns "$work/a.txt" --output "$work/c.csv" \
    --summary "$work/s.json" "${extra[@]}" > /dev/null
  python3 -c "import json;print(json.load(open('$work/s.json'))['events_per_s'])"
}
declare -A got
for ((r = 0; r < reps; r++)); do
  for s in off "${specs[@]}"; do got[$s]+="$(run "$s") "; done
done
median() { python3 -c "import statistics,sys;print(statistics.median(map(float,sys.argv[1:])))" $1; }
base=$(median "${got[off]}")
echo "events=$events reps=$reps load=$(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-22s %14s %10s\n' spec 'events/s' 'vs off'
printf '%-22s %14.0f %10s\n' off "$base" 1.000
for s in "${specs[@]}"; do
  m=$(median "${got[$s]}")
  printf '%-22s %14.0f %10.3f\n' "$s" "$m" "$(python3 -c "print($m/$base)")"
done
