#!/usr/bin/env bash
out=$1; shift  # usage: OUT BINARY... (each a copy of target/release/xorflow built at one commit)
: > $out
for rep in 1 2 3; do
  for g in 100 1000; do
    for b in "$@"; do
      $b bench chain --stages 10 --processes 2 --workers 1 --granularity $g --tracking tracker --elements 300000 --rate 100000 --json 2>/dev/null \
        | python3 -c "import json,sys; d=json.loads(sys.stdin.read()); n=d['notification_latency_any']; print('$b', '$g', n['p50_us'], n['p99_us'], d.get('latency_p50_us'), d.get('latency_p99_us'))" >> $out
    done
  done
done
python3 - $out <<'PY'
import sys,collections,statistics
r=collections.defaultdict(list)
for l in open(sys.argv[1]):
    b,g,p50,p99,l50,l99=l.split(); r[(b,g)].append((float(p50),float(p99),float(l50),float(l99)))
for k,v in sorted(r.items()):
    print(k, 'any p50/p99', statistics.median(x[0] for x in v), statistics.median(x[1] for x in v), ' per-instance p50/p99', statistics.median(x[2] for x in v), statistics.median(x[3] for x in v))
PY
