#!/usr/bin/env bash
# Side-by-side runs of the 2-process chain (docs/distributed.md). Each BIN is a copy of
# target/release/xorflow built at one commit; the binaries alternate, 3 rounds, medians printed.
#   ab.sh throughput OUT BIN...   10 stages, 5M elements, W = 1000, --tracking none and tracker
#   ab.sh latency OUT BIN...      10 stages, 300,000 elements at 100,000/s, tracker, W = 100 and 1000
set -euo pipefail
mode=$1; out=$2; shift 2
: > "$out"
for rep in 1 2 3; do
  for v in $([ "$mode" = throughput ] && echo none tracker || echo 100 1000); do
    for b in "$@"; do
      if [ "$mode" = throughput ]; then
        args=(--granularity 1000 --tracking "$v" --elements 5000000)
      else
        args=(--granularity "$v" --tracking tracker --elements 300000 --rate 100000)
      fi
      "$b" bench chain --stages 10 --processes 2 --workers 1 "${args[@]}" --json 2>/dev/null |
        python3 -c "
import json, sys
d = json.loads(sys.stdin.read()); n = d['notification_latency_any']
print('$b', '$v', round(d['elements_per_s'] / 1e6, 2), n['p50_us'], n['p99_us'])" >> "$out"
    done
  done
done
python3 - "$out" "$mode" <<'PY'
import collections, statistics, sys
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    b, v, mps, p50, p99 = line.split()
    rows[(b, v)].append((float(mps), p50, p99))
for k, v in sorted(rows.items()):
    if sys.argv[2] == 'throughput':
        print(k, 'M elements/s median', statistics.median(x[0] for x in v), [x[0] for x in v])
    else:
        print(k, 'notification p50 / p99 us, medians',
              statistics.median(float(x[1]) for x in v), statistics.median(float(x[2]) for x in v))
PY
