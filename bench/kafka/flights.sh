#!/usr/bin/env bash
# The flights job from the file and from a topic, side by side, alternating (docs/kafka.md):
# wall time of the whole command, ROUNDS rounds (default 3). Starts its own broker on a free
# port and stops it at the end.
#
#   bench/kafka/flights.sh [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds=${1:-3}
x=target/release/xorflow
[ -x "$x" ] || cargo build --release -p xorflow-cli
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
tmp=$(mktemp -d)
trap 'scripts/kafka.sh stop --port "$port" >/dev/null 2>&1 || true; rm -rf "$tmp" "target/kafka/broker-$port"' EXIT
b=$(scripts/kafka.sh start --port "$port")
"$x" kafka produce-flights --bootstrap "$b" --topic flights --partitions 3
for i in $(seq "$rounds"); do
  /usr/bin/time -f "file -> file: %e s" "$x" run flights --sources 3 --output "$tmp/f.csv" >/dev/null
  /usr/bin/time -f "topic -> file: %e s" "$x" run flights --sources 3 \
    --input "kafka://$b/flights" --output "$tmp/k.csv" >/dev/null
  /usr/bin/time -f "topic -> topic, checkpoints 1s: %e s" "$x" run flights --sources 3 \
    --input "kafka://$b/flights" --output "kafka://$b/hourly-$i" \
    --checkpoint-interval 1s --checkpoint-dir "$tmp/ck-$i" >/dev/null
done
