#!/usr/bin/env bash
# Validates the Cloudprofiler paper's clock alignment (docs/papers.md) where the truth is known:
# three processes in network namespaces (xc0-3 at 10.78.0.1-3/24, veth pairs on a bridge in a fourth
# namespace) share the host's TSC; each gets a synthetic offset and rate error
# (XORFLOW_CLOCK_SKEW=offset_ns:ppm), runs 100 ping-pongs per ordered pair before and after a run of
# events (each returned to its sender for the ReT baseline), and process 0 checks
# |true - estimated| <= bound for every converted timestamp and duration. The processes are the
# `validate_child` role of crates/measure/tests/clock_validate.rs (built in release).
#
# usage: scripts/clock-validate.sh [--out DIR] [--run-ms MS] [--skews A,B,C] [--port P]
#   --out     where summary.json and process<i>.log go (default: out/clock-validate)
#   --run-ms  length of the run between the two alignments, ms (default: 2000)
#   --skews   offset_ns:ppm per process (default: 7000000:10,-2500000:-20,40000000:30)
#   --port    port every process listens on (default: 7900)
#
# Exit: 0 when every converted value is within its bound; 1 when one is not or a process fails;
# 2 on bad usage; 77 when the namespaces cannot be created (not root, no `ip`): the reason is on
# stderr, on a line starting with "skipped: ".

set -u

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT="$ROOT/out/clock-validate"
RUN_MS=2000
SKEWS="7000000:10,-2500000:-20,40000000:30"
PORT=7900

die() { echo "clock-validate: error: $*" >&2; exit 2; }
skip() { echo "skipped: $*" >&2; exit 77; }

while [ $# -gt 0 ]; do
    case "$1" in
        --out) [ $# -ge 2 ] || die "--out needs a value"; OUT=$2; shift 2 ;;
        --run-ms) [ $# -ge 2 ] || die "--run-ms needs a value"; RUN_MS=$2; shift 2 ;;
        --skews) [ $# -ge 2 ] || die "--skews needs a value"; SKEWS=$2; shift 2 ;;
        --port) [ $# -ge 2 ] || die "--port needs a value"; PORT=$2; shift 2 ;;
        -h|--help) sed -n '2,/^$/p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) die "unknown option '$1'" ;;
    esac
done
case "$RUN_MS" in ''|*[!0-9]*) die "--run-ms must be whole milliseconds, got '$RUN_MS'" ;; esac
case "$PORT" in ''|*[!0-9]*) die "--port must be a number, got '$PORT'" ;; esac
IFS=, read -r -a SKEW <<<"$SKEWS"
[ "${#SKEW[@]}" = 3 ] || die "--skews needs three offset_ns:ppm values, got '$SKEWS'"

[ "$(id -u)" = 0 ] || skip "network namespaces need root (running as uid $(id -u))"
command -v ip >/dev/null 2>&1 || skip "no 'ip' command (install iproute2)"
mkdir -p "$OUT" || die "cannot create '$OUT'"
OUT=$(cd "$OUT" && pwd)

echo "clock-validate: building the validation binary (release)" >&2
BIN=$(cd "$ROOT" && cargo test -p xorflow-measure --release --test clock_validate --no-run \
    --message-format=json 2>"$OUT/build.log" |
    python3 -c 'import json,sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == "clock_validate":
        print(m["executable"])')
[ -x "$BIN" ] || { cat "$OUT/build.log" >&2; die "the validation binary did not build"; }

N=3
ID=$$
NS=()
for i in $(seq 0 $((N - 1))); do NS+=("xc$i-$ID"); done
BR="xcbr-$ID"
PIDS=()

delete_ns() {
    local pids
    pids=$(ip netns pids "$1" 2>/dev/null)
    # shellcheck disable=SC2086
    [ -n "$pids" ] && kill -KILL $pids 2>/dev/null
    ip netns del "$1" 2>/dev/null
}
cleanup() {
    local rc=$? ns
    trap - EXIT INT TERM
    for ns in "${NS[@]}" "$BR"; do delete_ns "$ns"; done
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

net() { "$@" 2>/dev/null || skip "cannot build the network namespaces: '$*' failed"; }
for ns in "$BR" "${NS[@]}"; do net ip netns add "$ns"; done
net ip -n "$BR" link add br0 type bridge forward_delay 0
net ip -n "$BR" link set br0 up
ADDRS=""
for i in $(seq 0 $((N - 1))); do
    net ip -n "$BR" link add "v$i" type veth peer name eth0 netns "${NS[$i]}"
    net ip -n "$BR" link set "v$i" master br0
    net ip -n "$BR" link set "v$i" up
    net ip -n "${NS[$i]}" link set lo up
    net ip -n "${NS[$i]}" addr add "10.78.0.$((i + 1))/24" dev eth0
    net ip -n "${NS[$i]}" link set eth0 up
    ADDRS="$ADDRS${ADDRS:+,}10.78.0.$((i + 1)):$PORT"
done

rm -f "$OUT/summary.json"
for i in $(seq 0 $((N - 1))); do
    timeout --kill-after=5 120 ip netns exec "${NS[$i]}" env \
        XORFLOW_CLOCK_VALIDATE="$i" XORFLOW_CLOCK_VALIDATE_ADDRS="$ADDRS" \
        XORFLOW_CLOCK_VALIDATE_OUT="$OUT/summary.json" XORFLOW_CLOCK_VALIDATE_RUN_MS="$RUN_MS" \
        XORFLOW_CLOCK_SKEW="${SKEW[$i]}" \
        "$BIN" --exact validate_child --include-ignored --nocapture \
        </dev/null >"$OUT/process$i.log" 2>&1 &
    PIDS+=($!)
done
FAILED=0
for i in $(seq 0 $((N - 1))); do
    wait "${PIDS[$i]}" || { FAILED=1; echo "clock-validate: process $i failed:" >&2; tail -n 20 "$OUT/process$i.log" >&2; }
done
[ "$FAILED" = 0 ] && [ -f "$OUT/summary.json" ] || exit 1

python3 - "$OUT/summary.json" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
us = lambda v: "-" if v is None else f"{v / 1000:.2f}"
print("pair (initiator<-responder)  MinRTT before/after us  bound us  offset us  rate ppm (true)")
for p in s["pairs"]:
    print(f"  {p['initiator']} <- {p['responder']}  {us(p['before_min_rtt_ns']):>8} / {us(p['after_min_rtt_ns']):<8}"
          f"  {us(p['bound_ns']):>7}  {us(p['offset_ns']):>10}  {p['rate_ppm']:8.3f} ({p['true_rate_ppm']:.1f})")
print("timestamps converted to process 0: |error| p50/max us, bound p50/max us")
for t in s["timestamps"]:
    e, b = t["error_ns"], t["bound_ns"]
    print(f"  process {t['process']}: n={e['n']}  {us(e['p50'])}/{us(e['max'])}  bound {us(b['p50'])}/{us(b['max'])}")
print("durations: |error| p50/max us, bound p50/max us, naive two-conversion bound max us")
for d in sorted(s["durations"], key=lambda d: d["case"]):
    e, b, n = d["error_ns"], d["bound_ns"], d["naive_bound_ns"]
    print(f"  {d['case']:<13} n={e['n']}  {us(e['p50'])}/{us(e['max'])}  bound {us(b['p50'])}/{us(b['max'])}  naive {us(n['max'])}")
r = s["ret"]
print(f"ReT: overstatement p50/max us {us(r['overstatement_ns']['p50'])}/{us(r['overstatement_ns']['max'])},"
      f" bound (ReTACK RTT) p50/p99/max us {us(r['bound_ns']['p50'])}/{us(r['bound_ns']['p99'])}/{us(r['bound_ns']['max'])}")
v = s["violations"]
print(f"violations: {len(v)}")
for x in v[:10]:
    print("  " + x)
sys.exit(1 if v else 0)
EOF
