//! What the in-engine CPU accounting's laps (`src/measure/cpu.rs`) cost amid work: one loop
//! iteration of 12 steps of a given size, per iteration:
//! * `plain`: no accounting;
//! * `lapped`: every step and the four runtime tasks lapped (outside an iteration, as every
//!   iteration was lapped before sampling);
//! * `sampled`: as the worker laps it (`begin_iteration` / `end_iteration`: one iteration in 16
//!   lapped step by step).
//!
//! `cargo bench -p xorflow-runtime --bench cpu_laps`; the sizes bracket a busy 10-stage chain's
//! steps (about 230 ns each at 22 M elements/s on one worker); results: docs/cpu.md, "The
//! accounting's own cost".

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use xorflow_runtime::measure::cpu::{Task, WorkerClock};

const STEPS: usize = 12;

/// About `n` dependent multiply-adds over a 64-element buffer, like a step's per-element work.
#[inline(never)]
fn step(buf: &mut [u64; 64], n: usize) -> u64 {
    let mut acc = 0u64;
    for k in 0..n {
        let x = &mut buf[k & 63];
        *x = x.wrapping_mul(0x9E37_79B9_7F4A_7C15).wrapping_add(acc);
        acc ^= *x >> 17;
    }
    acc
}

fn iteration(c: &mut Criterion) {
    let mut g = c.benchmark_group("iteration");
    let mut buf = [1u64; 64];
    for n in [16usize, 64, 256] {
        g.bench_with_input(BenchmarkId::new("plain", n), &n, |b, &n| {
            b.iter(|| {
                let mut s = 0;
                for _ in 0..STEPS {
                    s ^= step(&mut buf, n);
                }
                black_box(s)
            })
        });
        let mut clock = WorkerClock::new(STEPS);
        clock.start();
        for (name, sampled) in [("lapped", false), ("sampled", true)] {
            g.bench_with_input(BenchmarkId::new(name, n), &n, |b, &n| {
                b.iter(|| {
                    if sampled {
                        clock.begin_iteration();
                    }
                    let mut s = 0;
                    clock.task(Task::Frontiers);
                    for i in 0..STEPS {
                        s ^= step(&mut buf, n);
                        clock.vertex(i);
                    }
                    clock.task(Task::Flush);
                    clock.task(Task::Acks);
                    clock.task(Task::Network);
                    if sampled {
                        clock.end_iteration();
                    }
                    black_box(s)
                })
            });
        }
    }
    g.finish();
}

criterion_group!(benches, iteration);
criterion_main!(benches);
