#!/usr/bin/env bash
# Runs the flights job as a 3-process cluster over a real (virtual) network: three network
# namespaces xf0, xf1, xf2 (10.77.0.1-3/24), each joined by a veth pair to a bridge that lives in a
# fourth namespace, so nothing is added to the root namespace and parallel runs cannot clash.
# Process i runs `xorflow run flights --hostfile H --process i --cluster-token T` in namespace xf<i>.
#
# usage: scripts/netns-cluster.sh [--bin PATH] [--out DIR] [--input CSV] [--token T] [--port P]
#                                 [--timeout SECS] [-- EXTRA ENGINE ARGS...]
#   --bin      xorflow binary (default: target/release/xorflow)
#   --out      output directory (default: out/netns): hosts, flights_hourly.csv, summary.json,
#              process<i>.log
#   --input    flights.csv (default: data/nycflights13/flights.csv)
#   --token    cluster token (default: random)
#   --port     port every process listens on (default: 7700)
#   --timeout  seconds before the processes are killed and the run fails (default: 120)
#   --pod-names  start the processes the way a Kubernetes StatefulSet does (deploy/k8s/): the
#              hostfile names pods (xorflow-<i>.xorflow:PORT), each process gets its index and
#              the token from the environment (XORFLOW_PROCESS, XORFLOW_CLUSTER_TOKEN), they
#              start in reverse order a second apart, and the names resolve only 2 s after the
#              first start (each namespace's /etc/hosts, filled late in a shuffled order)
#   after --   passed to every process, e.g. -- --tracking markers --workers 1
#
# Exit: 0 when all three processes exit 0; 1 when one fails or times out; 2 on bad usage; 77 when
# the namespaces cannot be created (not root, no `ip`, `ip netns add` or the links fail): the
# reason is printed on stderr, on a line starting with "skipped: ".
#
# Names carry this shell's pid (xf0-<pid>, ..., xfbr-<pid>); namespaces left by earlier runs whose
# shell is gone are deleted first. Everything this run creates is torn down on exit, even on
# failure or Ctrl-C.

set -u

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN="$ROOT/target/release/xorflow"
OUT="$ROOT/out/netns"
INPUT="$ROOT/data/nycflights13/flights.csv"
TOKEN=""
PORT=7700
TIMEOUT=120
PODS=0
EXTRA=()

die() { echo "netns-cluster: error: $*" >&2; exit 2; }
skip() { echo "skipped: $*" >&2; exit 77; }

while [ $# -gt 0 ]; do
    case "$1" in
        --bin) [ $# -ge 2 ] || die "--bin needs a value"; BIN=$2; shift 2 ;;
        --out) [ $# -ge 2 ] || die "--out needs a value"; OUT=$2; shift 2 ;;
        --input) [ $# -ge 2 ] || die "--input needs a value"; INPUT=$2; shift 2 ;;
        --token) [ $# -ge 2 ] || die "--token needs a value"; TOKEN=$2; shift 2 ;;
        --port) [ $# -ge 2 ] || die "--port needs a value"; PORT=$2; shift 2 ;;
        --timeout) [ $# -ge 2 ] || die "--timeout needs a value"; TIMEOUT=$2; shift 2 ;;
        --pod-names) PODS=1; shift ;;
        --) shift; EXTRA=("$@"); break ;;
        -h|--help) sed -n '2,/^$/p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) die "unknown option '$1' (engine options go after --)" ;;
    esac
done

[ "$(id -u)" = 0 ] || skip "network namespaces need root (running as uid $(id -u))"
command -v ip >/dev/null 2>&1 || skip "no 'ip' command (install iproute2)"
command -v timeout >/dev/null 2>&1 || die "no 'timeout' command (coreutils)"
case "$PORT" in ''|*[!0-9]*) die "--port must be a number, got '$PORT'" ;; esac
case "$TIMEOUT" in ''|*[!0-9]*) die "--timeout must be whole seconds, got '$TIMEOUT'" ;; esac
[ -x "$BIN" ] || die "no executable xorflow at '$BIN' (cargo build --release -p xorflow-cli)"
[ -f "$INPUT" ] || die "no input '$INPUT' (make data)"
BIN=$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")
INPUT=$(cd "$(dirname "$INPUT")" && pwd)/$(basename "$INPUT")
mkdir -p "$OUT" || die "cannot create output directory '$OUT'"
OUT=$(cd "$OUT" && pwd)
if [ -z "$TOKEN" ]; then
    TOKEN=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
fi


N=3
ID=$$
NS=()
for i in $(seq 0 $((N - 1))); do NS+=("xf$i-$ID"); done
BR="xfbr-$ID"
PIDS=()
ERR=""

# Kills the processes still running in namespace $1, then deletes it.
delete_ns() {
    local ns=$1 pids
    pids=$(ip netns pids "$ns" 2>/dev/null)
    if [ -n "$pids" ]; then
        # shellcheck disable=SC2086
        kill -KILL $pids 2>/dev/null
    fi
    ip netns del "$ns" 2>/dev/null
}

cleanup() {
    local rc=$? p ns
    trap - EXIT INT TERM HUP
    for p in "${PIDS[@]}"; do
        kill -TERM "$p" 2>/dev/null
    done
    for ns in "${NS[@]}" "$BR"; do
        delete_ns "$ns"
        rm -rf "/etc/netns/$ns"
    done
    [ -n "$ERR" ] && rm -f "$ERR"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

# Leftovers of earlier runs whose shell is gone (or of an earlier shell with this pid).
for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E '^xf(br|[0-9]+)-[0-9]+$'); do
    owner=${ns##*-}
    if [ "$owner" = "$ID" ] || ! kill -0 "$owner" 2>/dev/null; then
        echo "netns-cluster: removing leftover namespace $ns" >&2
        delete_ns "$ns"
    fi
done

# The network: a bridge br0 in namespace $BR, a veth pair per process (v<i> on the bridge, eth0
# in xf<i>), created inside the namespaces so no interface name ever exists in the root namespace.
ERR=$(mktemp) || die "mktemp failed"
net() {
    if ! "$@" 2>"$ERR"; then
        skip "cannot build the network namespaces: '$*' failed: $(tr '\n' ' ' <"$ERR")"
    fi
}
for ns in "$BR" "${NS[@]}"; do
    net ip netns add "$ns"
done
net ip -n "$BR" link add br0 type bridge forward_delay 0
net ip -n "$BR" link set br0 up
net ip -n "$BR" link set lo up
for i in $(seq 0 $((N - 1))); do
    net ip -n "$BR" link add "v$i" type veth peer name eth0 netns "${NS[$i]}"
    net ip -n "$BR" link set "v$i" master br0
    net ip -n "$BR" link set "v$i" up
    net ip -n "${NS[$i]}" link set lo up
    net ip -n "${NS[$i]}" addr add "10.77.0.$((i + 1))/24" dev eth0
    net ip -n "${NS[$i]}" link set eth0 up
done

HOSTS="$OUT/hosts"
{
    echo "# xorflow netns cluster $ID: one host:port per process"
    for i in $(seq 0 $((N - 1))); do
        if [ "$PODS" = 1 ]; then echo "xorflow-$i.xorflow:$PORT"; else echo "10.77.0.$((i + 1)):$PORT"; fi
    done
} >"$HOSTS"
rm -f "$OUT/flights_hourly.csv" "$OUT/summary.json"

# Pod names: `ip netns exec` mounts /etc/netns/<ns>/hosts over /etc/hosts if it exists when a
# process starts, so each namespace gets one holding only localhost now; the pod names are
# written into the same file (same inode: the mount follows it) later.
if [ "$PODS" = 1 ]; then
    for ns in "${NS[@]}"; do
        mkdir -p "/etc/netns/$ns" || die "cannot create /etc/netns/$ns"
        printf '127.0.0.1 localhost\n' >"/etc/netns/$ns/hosts"
    done
fi

echo "netns-cluster: $N processes in namespaces ${NS[*]} (bridge in $BR); logs in $OUT" >&2
START=$(date +%s.%N)
if [ "$PODS" = 1 ]; then
    ORDER=$(seq $((N - 1)) -1 0)
else
    ORDER=$(seq 0 $((N - 1)))
fi
declare -A PID_OF
for i in $ORDER; do
    if [ "$PODS" = 1 ]; then
        # As a StatefulSet's pod: index and token from the environment, no flags for them.
        XORFLOW_PROCESS=$i XORFLOW_CLUSTER_TOKEN=$TOKEN timeout --kill-after=5 "$TIMEOUT" \
            ip netns exec "${NS[$i]}" "$BIN" run flights \
            --input "$INPUT" --hostfile "$HOSTS" \
            --output "$OUT/flights_hourly.csv" --summary "$OUT/summary.json" \
            "${EXTRA[@]}" \
            </dev/null >"$OUT/process$i.log" 2>&1 &
        PID_OF[$i]=$!
        sleep 1
    else
        timeout --kill-after=5 "$TIMEOUT" \
            ip netns exec "${NS[$i]}" "$BIN" run flights \
            --input "$INPUT" \
            --hostfile "$HOSTS" --process "$i" --cluster-token "$TOKEN" \
            --output "$OUT/flights_hourly.csv" --summary "$OUT/summary.json" \
            "${EXTRA[@]}" \
            </dev/null >"$OUT/process$i.log" 2>&1 &
        PID_OF[$i]=$!
    fi
done
for i in $(seq 0 $((N - 1))); do PIDS+=("${PID_OF[$i]}"); done
if [ "$PODS" = 1 ]; then
    # The names resolve late (2 s after the first start, counting the starts above), one
    # namespace at a time in a shuffled order.
    for ns in $(printf '%s\n' "${NS[@]}" | shuf); do
        {
            printf '127.0.0.1 localhost\n'
            for i in $(seq 0 $((N - 1))); do printf '10.77.0.%d xorflow-%d.xorflow\n' $((i + 1)) "$i"; done
        } >"/etc/netns/$ns/hosts"
        echo "netns-cluster: pod names resolve in $ns" >&2
    done
fi

FAILED=0
for i in $(seq 0 $((N - 1))); do
    wait "${PIDS[$i]}"
    rc=$?
    if [ "$rc" = 0 ]; then
        echo "netns-cluster: process $i (${NS[$i]}, 10.77.0.$((i + 1)):$PORT) exited 0" >&2
    else
        FAILED=1
        if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
            why="timed out after ${TIMEOUT}s"
        else
            why="exited $rc"
        fi
        echo "netns-cluster: process $i (${NS[$i]}, 10.77.0.$((i + 1)):$PORT) $why; its log:" >&2
        tail -n 20 "$OUT/process$i.log" | sed 's/^/    /' >&2
    fi
done
PIDS=()
END=$(date +%s.%N)
ELAPSED=$(awk -v a="$START" -v b="$END" 'BEGIN { printf "%.2f", b - a }')

if [ "$FAILED" = 0 ]; then
    cat "$OUT/process0.log"
    echo "netns-cluster: all $N processes exited 0 in ${ELAPSED}s; result $OUT/flights_hourly.csv" >&2
    exit 0
fi
echo "netns-cluster: FAILED after ${ELAPSED}s" >&2
exit 1
