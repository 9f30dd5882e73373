#!/bin/bash
# YSB on 2 processes x 1 worker: delay inside xorflow on loopback (--rtt) against the processes in
# network namespaces behind `xorflow delay-router` (every packet delayed, kernel TCP included).
# usage: run.sh BIN OUTDIR "RATES" "RTTS_MS" DURATION_S
BIN=$1; OUT=$2; RATES=$3; RTTS=$4; DUR=$5
mkdir -p "$OUT"
TOKEN=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
printf '10.78.0.1:7700\n10.78.0.2:7700\n' > "$OUT/hosts"
summ() { python3 -c '
import json,sys
d=json.load(open(sys.argv[1])); w=d["window_latency_ms"]
print("%s %s %s p50 %.1f p90 %.1f p99 %.1f tput %.0f oracle %s" % (sys.argv[2], d["rate"], sys.argv[3], w["p50"], w["p90"], w["p99"], d["throughput_events_per_s"], d["counts_match_oracle"]))' "$@"; }
for rate in $RATES; do for rtt in $RTTS; do
  f="$OUT/loopback-$rate-$rtt.json"
  echo "$BIN bench ysb --rate $rate --duration ${DUR}s --processes 2 --workers 1 --sources 2 --rtt ${rtt}ms --json" > "${f%.json}.cmd"
  $BIN bench ysb --rate $rate --duration ${DUR}s --processes 2 --workers 1 --sources 2 --rtt ${rtt}ms --json > "$f" 2>"${f%.json}.err"
  summ "$f" loopback "${rtt}ms" | tee -a "$OUT/summary.txt"
  f="$OUT/netns-$rate-$rtt.json"
  $BIN delay-router --hosts 2 --rtt ${rtt}ms --prefix xfw > "$OUT/router.out" 2>"${f%.json}.router" &
  RP=$!
  for k in $(seq 50); do grep -q ready "$OUT/router.out" 2>/dev/null && break; sleep 0.1; done
  start=$(( ( $(date +%s) + 5 + rtt * 15 / 100 ) * 1000 ))
  echo "$BIN delay-router --hosts 2 --rtt ${rtt}ms --prefix xfw; ip netns exec xfwI $BIN bench ysb --rate $rate --duration ${DUR}s --workers 1 --sources 2 --hostfile hosts --process I --cluster-token T --start-ms $start --json" > "${f%.json}.cmd"
  ip netns exec xfw1 $BIN bench ysb --rate $rate --duration ${DUR}s --workers 1 --sources 2 --hostfile "$OUT/hosts" --process 1 --cluster-token $TOKEN --start-ms $start > /dev/null 2>"${f%.json}.p1.err" &
  ip netns exec xfw0 $BIN bench ysb --rate $rate --duration ${DUR}s --workers 1 --sources 2 --hostfile "$OUT/hosts" --process 0 --cluster-token $TOKEN --start-ms $start --json > "$f" 2>"${f%.json}.err"
  wait %2 2>/dev/null
  kill -TERM $RP; wait $RP
  summ "$f" netns "${rtt}ms" | tee -a "$OUT/summary.txt"
done; done
