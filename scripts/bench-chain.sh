#!/usr/bin/env bash
# Chain benchmark of the trAcker paper (docs/papers.md; K=10 stages, P=2 workers), trAcker vs no
# tracking at granularity 1 and 1000, interleaved so every configuration sees the same machine
# noise; median of REPEAT runs. Then notification latency at a fixed 100,000 elements/s. Writes raw
# JSON lines and a summary into bench/results/chain-<UTC time>/.
#
# BINS="label=path ..." compares builds side by side: every configuration runs once per build,
# the builds alternating, and the summary gives each build's medians and their ratios to the
# first build's (e.g. BINS="before=/tmp/xorflow-lab-old after=target/release/xorflow-lab").
set -euo pipefail
cd "$(dirname "$0")/.."
BINS=${BINS:-HEAD=target/release/xorflow-lab}
[ "$BINS" != "HEAD=target/release/xorflow-lab" ] || [ -x target/release/xorflow-lab ] || cargo build --release -p xorflow-lab
for b in $BINS; do
  [ -x "${b#*=}" ] || { echo "bench-chain: ${b#*=} is not an executable (BINS entry '$b')" >&2; exit 2; }
done
ELEMENTS=${ELEMENTS:-20000000}
REPEAT=${REPEAT:-3}
RATE_ELEMENTS=${RATE_ELEMENTS:-500000}
out=bench/results/chain-$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$out"
raw="$out/raw.jsonl"
: > "$raw"
# Max throughput: none, tracker (with the sink's per-slot latency probe, as every chain run has
# by default) and tracker without the probe (tracking cost alone).
for rep in $(seq 1 "$REPEAT"); do
  for g in 1 1000; do
    for t in none tracker tracker-noprobe; do
      case $t in
        tracker-noprobe) args=(--tracking tracker --no-latency-probe) ;;
        *) args=(--tracking "$t") ;;
      esac
      for b in $BINS; do
        "${b#*=}" bench chain --stages 10 --workers 2 --granularity "$g" "${args[@]}" \
          --elements "$ELEMENTS" --json \
          | sed "s/^{/{\"bin\":\"${b%%=*}\",\"kind\":\"max\",\"rep\":$rep,/" | tee -a "$raw"
      done
    done
  done
done
for rep in $(seq 1 "$REPEAT"); do
  for g in 1 100 1000; do
    for b in $BINS; do
      "${b#*=}" bench chain --stages 10 --workers 2 --granularity "$g" --tracking tracker \
        --elements "$RATE_ELEMENTS" --rate 100000 --json \
        | sed "s/^{/{\"bin\":\"${b%%=*}\",\"kind\":\"rate\",\"rep\":$rep,/" | tee -a "$raw"
    done
  done
done
{
  echo "command: BINS=\"$BINS\" ELEMENTS=$ELEMENTS REPEAT=$REPEAT RATE_ELEMENTS=$RATE_ELEMENTS scripts/bench-chain.sh"
  echo "git: $(git rev-parse --short HEAD)$(git diff --quiet || echo '-dirty')"
  echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(uname -r)"
  python3 scripts/chain_summary.py "$raw"
} | tee "$out/summary.txt"
