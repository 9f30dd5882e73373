#!/bin/bash
# Side-by-side 2-process chain throughput of several xorflow binaries (docs/distributed.md,
# session 4). Usage: tput-variants.sh REPS TRACKING W "BIN args..." ...; prints elements/s per run.
REPS=$1; TR=$2; W=$3; shift 3
for r in $(seq $REPS); do i=0; for V in "$@"; do i=$((i+1)); B=${V%% *}; A=${V#"$B"}
  $B bench chain --stages 10 --processes 2 --workers 1 --tracking $TR --granularity $W --elements 20000000 --json $A 2>/dev/null \
    | python3 -c "import json,sys; d=json.load(sys.stdin); print('v$i tracking $TR W=$W %.2f M elements/s' % (d['elements_per_s']/1e6))" || echo "v$i failed"
done; done
