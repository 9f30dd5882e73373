//! A keyed process function's state access per element (`operators/process.rs` in the runtime):
//! take the value out and put it back (get, remove, insert: three lookups) against changing it
//! in place ([`ValueTable::update`]: one), on the in-memory backend with 1,000 and 100,000 keys.
//!
//! `cargo bench -p xorflow-state --bench value_update`; results in bench/results/state-update.md.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use std::hint::black_box;
use xorflow_state::backend::MemoryBackend;
use xorflow_state::{CacheConfig, KeyGroups, StateStore, ValueTable};

fn table(keys: u64) -> (StateStore, ValueTable<u64, u64>) {
    let mut store = StateStore::with_backend(Box::new(MemoryBackend::new()), CacheConfig::MEMORY);
    let mut t = store
        .value_table("counts", |k: &u64| KeyGroups::DEFAULT.of_hash(*k))
        .expect("a fresh table");
    for k in 0..keys {
        t.insert(&k, 0).expect("in memory");
    }
    (store, t)
}

/// Keys visited in a scattered order, as a stream's keys arrive.
fn key(i: u64, keys: u64) -> u64 {
    i.wrapping_mul(0x9E37_79B9_7F4A_7C15) % keys
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("value_update");
    const N: u64 = 10_000;
    g.throughput(Throughput::Elements(N));
    for keys in [1_000u64, 100_000] {
        let (_s, mut t) = table(keys);
        g.bench_with_input(
            BenchmarkId::new("get_remove_insert", keys),
            &keys,
            |b, &keys| {
                b.iter(|| {
                    for i in 0..N {
                        let k = key(i, keys);
                        let st = match t.get(&k).expect("in memory").is_some() {
                            true => t.remove(&k).expect("in memory"),
                            false => None,
                        };
                        let v = st.map_or(1, |x| x + 1);
                        t.insert(&k, black_box(v)).expect("in memory");
                    }
                })
            },
        );
        let (_s, mut t) = table(keys);
        g.bench_with_input(BenchmarkId::new("update", keys), &keys, |b, &keys| {
            b.iter(|| {
                for i in 0..N {
                    let k = key(i, keys);
                    t.update(&k, |st| *st = Some(black_box(st.map_or(1, |x| x + 1))))
                        .expect("in memory");
                }
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
