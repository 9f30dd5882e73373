//! Per-call cost of each event-log handler (the Cloudprofiler paper, Table III; docs/papers.md).
//!
//! `cargo bench -p xorflow-measure --bench handlers`; results and the paper's figures side by
//! side: `bench/results/measure/handlers.md`.
//!
//! * `log/SPEC`: `Channel::log(id)`, the timestamp read (`clock::now`) included;
//! * `log_at/SPEC`: `Channel::log_at(id, ticks)`, the handler alone (a timestamp given);
//! * `sustained/SPEC`: 1 Mi calls of `log` and then `close`, which waits until the writer
//!   thread has written everything: the cost per call when the writer must keep up.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use xorflow_measure::log::{LogConfig, Logs};

const SPECS: [&str; 8] = [
    "null",
    "counter:1s",
    "xoy:1/64",
    "xoy:1/100",
    "downsample:1000",
    "first-last",
    "id",
    "buffered",
];

fn logs(spec: &str, dir: &std::path::Path) -> Logs {
    let config = LogConfig::parse(spec).expect("a valid spec").with_dir(dir);
    Logs::new(config, 0)
}

fn per_call(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let mut g = c.benchmark_group("log");
    for spec in SPECS {
        let mut ch = logs(spec, dir.path()).open("bench").expect("channel opens");
        let mut id = 0u64;
        g.bench_function(spec, |b| {
            b.iter(|| {
                ch.log(black_box(id));
                id = id.wrapping_add(1);
            })
        });
        ch.close().expect("file completes");
    }
    let mut ch = logs("ret", dir.path())
        .open("bench")
        .expect("channel opens");
    let mut id = 0u64;
    g.bench_function("ret (start+end pair)", |b| {
        b.iter(|| {
            ch.ret_start(black_box(id));
            ch.ret_end(black_box(id));
            id = id.wrapping_add(1);
        })
    });
    ch.close().expect("file completes");
    g.bench_function("clock::now", |b| b.iter(xorflow_measure::clock::now));
    g.finish();

    let mut g = c.benchmark_group("log_at");
    for spec in SPECS {
        let mut ch = logs(spec, dir.path()).open("bench").expect("channel opens");
        let mut id = 0u64;
        g.bench_function(spec, |b| {
            b.iter(|| {
                ch.log_at(black_box(id), black_box(id * 16));
                id = id.wrapping_add(1);
            })
        });
        ch.close().expect("file completes");
    }
    g.finish();
}

fn sustained(c: &mut Criterion) {
    const CALLS: u64 = 1 << 20;
    let dir = tempfile::tempdir().expect("a temporary directory");
    let mut g = c.benchmark_group("sustained");
    g.sample_size(10).measurement_time(Duration::from_secs(10));
    for spec in ["id", "buffered"] {
        let logs = logs(spec, dir.path());
        g.bench_function(spec, |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let mut ch = logs.open("sustained").expect("channel opens");
                    let t0 = Instant::now();
                    for id in 0..CALLS {
                        ch.log(black_box(id));
                    }
                    ch.close().expect("file completes");
                    total += t0.elapsed();
                }
                // criterion reports per iteration; one iteration is CALLS calls.
                total / CALLS as u32
            })
        });
    }
    g.finish();
}

criterion_group!(benches, per_call, sustained);
criterion_main!(benches);
