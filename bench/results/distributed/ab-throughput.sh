#!/usr/bin/env bash
# usage: run.sh OUT bin1 bin2 ... ; alternates binaries, none/tracker, 3 reps
out=$1; shift  # usage: OUT BINARY... (each a copy of target/release/xorflow built at one commit)
: > $out
for rep in 1 2 3; do
  for t in none tracker; do
    for b in "$@"; do
      $b bench chain --stages 10 --processes 2 --workers 1 --granularity 1000 --tracking $t --elements 5000000 --json 2>/dev/null \
        | python3 -c "import json,sys; d=json.loads(sys.stdin.read()); print('$b', '$t', round(d['elements_per_s']/1e6,2), round(d['cpu_per_s'],2))" >> $out
    done
  done
done
python3 - $out <<'PY'
import sys,collections,statistics
r=collections.defaultdict(list)
for l in open(sys.argv[1]):
    b,t,e,c=l.split(); r[(b,t)].append(float(e))
for k,v in sorted(r.items()): print(k, 'median M/s', statistics.median(v), v)
PY
