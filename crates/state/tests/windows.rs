//! Window state in every form and layout against a plain map, on random sequences of elements,
//! window closes, snapshots and restores: fold-left in memory (laid out per window), fold-left
//! behind a small cache (a value table) in memory and on disk, retain-all in memory and on disk.
//! Every closed window gives the oracle's sums, and a fresh state restored from the snapshots
//! taken so far carries on exactly where the old one was.

use proptest::prelude::*;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use xorflow_state::backend::{DiskBackend, MemoryBackend};
use xorflow_state::delta::Delta;
use xorflow_state::window::{WindowForm, WindowState};
use xorflow_state::{Backend, CacheConfig, StateStore};

mod common;
use common::Sum;

#[derive(Clone, Debug)]
enum Op {
    Add(u64, u8, u32),
    Close(u64),
    Snapshot(bool),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        8 => (1u64..6, 0u8..4, any::<u16>()).prop_map(|(e, k, v)| Op::Add(e, k, u32::from(v))),
        1 => (0u64..6).prop_map(Op::Close),
        1 => any::<bool>().prop_map(Op::Snapshot),
    ]
}

type W = WindowState<u8, u32, u64>;

fn state(kind: usize, dir: &std::path::Path, n: &mut u32) -> (StateStore, W) {
    *n += 1;
    let small = CacheConfig {
        dirty_limit: 2,
        capacity: 3,
    };
    let disk = || -> Box<dyn Backend> {
        Box::new(DiskBackend::open(&dir.join(format!("w{n}.redb"))).unwrap())
    };
    let (backend, cache, form): (Box<dyn Backend>, _, _) = match kind {
        0 => (
            Box::new(MemoryBackend::new()),
            CacheConfig::MEMORY,
            WindowForm::Fold,
        ),
        1 => (Box::new(MemoryBackend::new()), small, WindowForm::Fold),
        2 => (disk(), small, WindowForm::Fold),
        3 => (
            Box::new(MemoryBackend::new()),
            CacheConfig::MEMORY,
            WindowForm::Retain,
        ),
        _ => (disk(), small, WindowForm::Retain),
    };
    let mut store = StateStore::with_backend(backend, cache);
    let group = Arc::new(|k: &u8| u16::from(*k % 7));
    let w = WindowState::new(&mut store, "w", form, group).unwrap();
    (store, w)
}

const KINDS: usize = 5;
const NAMES: [&str; KINDS] = [
    "fold in memory",
    "fold, small cache",
    "fold on disk",
    "retain in memory",
    "retain on disk",
];

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn every_window_form_closes_and_restores_like_a_plain_map(
        ops in proptest::collection::vec(op(), 1..150)
    ) {
        let dir = tempfile::tempdir().unwrap();
        let mut n = 0;
        let mut states: Vec<(StateStore, W)> = (0..KINDS).map(|k| state(k, dir.path(), &mut n)).collect();
        let mut chains: Vec<Vec<Delta>> = vec![Vec::new(); KINDS];
        let mut oracle: BTreeMap<u64, HashMap<u8, u64>> = BTreeMap::new();
        let mut closed_below = 0u64;
        for op in ops {
            match op {
                Op::Add(end, key, v) => {
                    if end <= closed_below {
                        continue; // late: the operator drops it before the state sees it
                    }
                    *oracle.entry(end).or_default().entry(key).or_default() += u64::from(v);
                    for (_, w) in &mut states {
                        w.add(end, key, &v, &Sum).unwrap();
                    }
                }
                Op::Close(f) => {
                    closed_below = closed_below.max(f);
                    let mut want: Vec<(u64, Vec<(u8, u64)>)> = Vec::new();
                    while let Some(e) = oracle.first_entry() {
                        if *e.key() > f { break; }
                        let end = *e.key();
                        let mut v: Vec<(u8, u64)> = e.remove().into_iter().collect();
                        v.sort_unstable();
                        want.push((end, v));
                    }
                    for (i, (_, w)) in states.iter_mut().enumerate() {
                        let mut got = Vec::new();
                        while let Some((end, mut v)) = w.close_next(f, &Sum).unwrap() {
                            v.sort_unstable();
                            got.push((end, v));
                        }
                        prop_assert_eq!(&got, &want, "{} closing at {}", NAMES[i], f);
                    }
                }
                Op::Snapshot(full) => {
                    for i in 0..KINDS {
                        let full = full || chains[i].is_empty();
                        let mut d = Delta::new(full);
                        states[i].1.snapshot(&mut d).unwrap();
                        if full { chains[i].clear(); }
                        chains[i].push(d);
                        let (store, mut fresh) = state(i, dir.path(), &mut n);
                        fresh.restore(&chains[i], &|_| true).unwrap();
                        prop_assert_eq!(fresh.windows(), oracle.len(), "{} windows after restore", NAMES[i]);
                        states[i] = (store, fresh);
                    }
                }
            }
        }
    }
}
