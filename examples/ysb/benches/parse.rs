//! What reading one YSB event line costs: serde_json's derive over [`EventRef`] against the
//! fast path of `src/event_scan.rs`, over the generator's own lines (the ones a run parses).
//!
//! `cargo bench -p xorflow-ysb --bench parse`; results: docs/cpu.md, "The parse stage's scan".

use criterion::{criterion_group, criterion_main, Criterion};
use std::hint::black_box;
use xorflow_ysb::bench::generated;
use xorflow_ysb::event::EventRef;
use xorflow_ysb::event_scan;

fn parse(c: &mut Criterion) {
    let (events, _) = generated(1_000, 1);
    let lines: Vec<&str> = events.lines().collect();
    let mut g = c.benchmark_group("ysb line");
    g.throughput(criterion::Throughput::Elements(lines.len() as u64));
    g.bench_function("serde_json", |b| {
        b.iter(|| {
            for l in &lines {
                black_box(serde_json::from_str::<EventRef>(black_box(l)).unwrap());
            }
        })
    });
    g.bench_function("scan", |b| {
        b.iter(|| {
            for l in &lines {
                black_box(event_scan::scan(black_box(l)).unwrap());
            }
        })
    });
    g.finish();
}

criterion_group!(benches, parse);
criterion_main!(benches);
