//! Micro-benchmarks of trAcker's hot operations: a batch's range registration at the local acker, a
//! flush, and the tracker applying a flush and advancing.
//!
//! Run: `cargo bench -p xorflow-tracking` (criterion; results in target/criterion).

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use std::hint::black_box;
use xorflow_tracking::{Granularity, LocalAcker, TagSource, Topology, Tracker};

/// One batch crossing one edge: the sender's and the receiver's range XOR (4 point updates).
fn acker_batch(c: &mut Criterion) {
    let mut g = c.benchmark_group("local_acker");
    g.throughput(Throughput::Elements(1));
    let mut acker = LocalAcker::new(Granularity::new(1));
    let mut tags = TagSource::seeded(1);
    let mut t = 0u64;
    g.bench_function("send+receive range tag (cancels locally)", |b| {
        b.iter(|| {
            let x = tags.next_tag();
            acker.xor_times(3, t, t + 1023, x);
            acker.xor_times(3, t, t + 1023, x);
            t += 1024;
        })
    });
    g.bench_function("send range tag then flush every 64 batches", |b| {
        let mut n = 0;
        b.iter(|| {
            acker.xor_times(3, t, t + 1023, tags.next_tag());
            t += 1024;
            n += 1;
            if n % 64 == 0 {
                black_box(acker.flush());
            }
        })
    });
    g.finish();
}

/// The tracker applying a flush of 128 entries (64 batches' sends, chain of 12 components) and
/// advancing.
fn tracker_apply(c: &mut Criterion) {
    let mut g = c.benchmark_group("tracker");
    g.throughput(Throughput::Elements(128));
    g.bench_function("apply 128 entries + advance (12 components)", |b| {
        let mut tracker = Tracker::new(Granularity::new(1), Topology::chain(12), 1);
        let mut acker = LocalAcker::new(Granularity::new(1));
        let mut tags = TagSource::seeded(2);
        let mut t = 0u64;
        b.iter_batched(
            || {
                // Sends of 64 batches, then their receives in the next flush: the table grows and
                // shrinks as in a run.
                let mut xs = Vec::new();
                for i in 0..64 {
                    let x = tags.next_tag();
                    acker.xor_times(i % 12, t, t + 1023, x);
                    xs.push((i % 12, t, x));
                    t += 1024;
                }
                let sends = acker.flush();
                for (c, s, x) in xs {
                    acker.xor_times(c, s, s + 1023, x);
                }
                acker.heartbeat(0, t);
                (sends, acker.flush())
            },
            |(sends, receives)| {
                tracker.apply(&sends).unwrap();
                black_box(tracker.advance());
                tracker.apply(&receives).unwrap();
                black_box(tracker.advance());
            },
            BatchSize::SmallInput,
        )
    });
    g.finish();
}

criterion_group!(benches, acker_batch, tracker_apply);
criterion_main!(benches);
