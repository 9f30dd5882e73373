#!/usr/bin/env bash
# Chain benchmark across processes (docs/benchmarks.md, "Across processes"): K=10 stages, 2
# processes x 1 worker on loopback, granularity 1 and 100, for none / tracker / tracker with 2
# shards / tracker in a 3rd (dedicated tracker) process / markers, interleaved so every
# configuration sees the same machine noise; median of REPEAT runs. Then notification latency at a
# fixed 100,000 elements/s. Writes raw JSON lines and a summary into
# bench/results/cluster-<UTC time>/.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=target/release/xorflow-lab
[ -x "$bin" ] || cargo build --release -p xorflow-lab
ELEMENTS=${ELEMENTS:-5000000}
REPEAT=${REPEAT:-3}
RATE_ELEMENTS=${RATE_ELEMENTS:-300000}
out=bench/results/cluster-$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$out"
raw="$out/raw.jsonl"
: > "$raw"
configs=(none tracker tracker-2-shards tracker-process markers)
args_of() {
  case $1 in
    tracker-2-shards) echo "--tracking tracker --tracker-shards 2" ;;
    tracker-process) echo "--tracking tracker --tracker-processes 1" ;;
    *) echo "--tracking $1" ;;
  esac
}
for kind in max rate; do
  for rep in $(seq 1 "$REPEAT"); do
    for g in 1 100; do
      for c in "${configs[@]}"; do
        if [ "$kind" = rate ]; then
          [ "$c" = none ] && continue
          load=(--elements "$RATE_ELEMENTS" --rate 100000)
        else
          load=(--elements "$ELEMENTS")
        fi
        # shellcheck disable=SC2046
        "$bin" bench chain --stages 10 --processes 2 --workers 1 --granularity "$g" \
          $(args_of "$c") "${load[@]}" --json \
          | sed "s/^{/{\"kind\":\"$kind\",\"config\":\"$c\",\"rep\":$rep,/" | tee -a "$raw"
      done
    done
  done
done
{
  echo "command: ELEMENTS=$ELEMENTS REPEAT=$REPEAT RATE_ELEMENTS=$RATE_ELEMENTS scripts/bench-cluster.sh"
  echo "git: $(git rev-parse --short HEAD)$(git diff --quiet || echo '-dirty')"
  echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(uname -r)"
  python3 scripts/cluster_summary.py "$raw"
} | tee "$out/summary.txt"
