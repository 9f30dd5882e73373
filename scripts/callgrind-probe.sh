#!/bin/bash
# Instructions per element of the chain (1 worker, $ELEMENTS elements, default 2M, K = 10) with the
# latency probe measuring every slot, the default sampling, and off (docs/benchmarks.md). Needs
# valgrind.
cd "$(dirname "$0")/.."
ELEMENTS=${ELEMENTS:-2000000}
run() { # label args...
  local label=$1; shift
  local f=/tmp/cg.$label.out
  valgrind --tool=callgrind --callgrind-out-file=$f target/release/xorflow-lab bench chain --workers 1 --elements "$ELEMENTS" "$@" > /dev/null 2>/tmp/cg.$label.err
  local ir=$(grep -m1 "^summary:" $f | awk '{print $2}')
  echo "$label $ir $(python3 -c "print(round($ir/$ELEMENTS,1))") per element"
}
run none-g1 --granularity 1 --tracking none
run tracker-np-g1 --granularity 1 --tracking tracker --no-latency-probe
run tracker-all-g1 --granularity 1 --tracking tracker --latency-sample all
run tracker-default-g1 --granularity 1 --tracking tracker
run tracker-all-g1000 --granularity 1000 --tracking tracker --latency-sample all
run tracker-np-g1000 --granularity 1000 --tracking tracker --no-latency-probe
