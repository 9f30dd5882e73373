//! The versioned cut's window state (`crates/state/src/window/version.rs`) against plain maps:
//! random rounds, each an epoch `e` not yet snapshotted whose elements interleave with the next
//! epoch's (and with window closes, which belong to the next epoch), then a snapshot of `e`.
//! A state restored from the snapshots so far must hold exactly what epochs up to `e` put in
//! (nothing of the next epoch, every window closed during the round still open with its older
//! contents), and the live state everything. In fold-left form in memory and behind a small
//! cache on disk, full and incremental snapshots.

use proptest::prelude::*;
use std::collections::BTreeMap;
use std::sync::Arc;
use xorflow_state::backend::{DiskBackend, MemoryBackend};
use xorflow_state::delta::Delta;
use xorflow_state::window::{WindowForm, WindowState};
use xorflow_state::{Backend, CacheConfig, StateStore};

mod common;
use common::Sum;

type W = WindowState<u8, u32, u64>;
type Sums = BTreeMap<(u64, u8), u64>;

#[derive(Clone, Debug)]
enum Op {
    /// An element of the epoch being cut (`false`) or of the next one (`true`), to the window
    /// `offset` windows after the last closed one, under a key.
    Add(bool, u64, u8, u32),
    /// The frontier passes `n` more windows: they close (a write of the next epoch).
    Close(u64),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        8 => (any::<bool>(), 1u64..4, 0u8..4, any::<u16>())
            .prop_map(|(l, o, k, v)| Op::Add(l, o, k, u32::from(v))),
        1 => (1u64..3).prop_map(Op::Close),
    ]
}

fn state(disk: bool, dir: &std::path::Path, n: usize) -> (StateStore, W) {
    let (backend, cache): (Box<dyn Backend>, _) = if disk {
        let b = DiskBackend::open(&dir.join(format!("v{n}.redb"))).unwrap();
        let small = CacheConfig {
            dirty_limit: 2,
            capacity: 3,
        };
        (Box::new(b), small)
    } else {
        (Box::new(MemoryBackend::new()), CacheConfig::MEMORY)
    };
    let mut store = StateStore::with_backend(backend, cache);
    let group = Arc::new(|k: &u8| u16::from(*k % 7));
    let w = WindowState::new(&mut store, "w", WindowForm::Fold, group).unwrap();
    (store, w)
}

/// Closes every window of `w` and returns their sums.
fn drain(w: &mut W) -> Sums {
    let mut out = Sums::new();
    while let Some((end, keys)) = w.close_next(u64::MAX, &Sum).unwrap() {
        for (k, acc) in keys {
            out.insert((end, k), acc);
        }
    }
    out
}

fn add(sums: &mut Sums, end: u64, k: u8, v: u32) {
    *sums.entry((end, k)).or_default() += u64::from(v);
}

fn close(sums: &mut Sums, upto: u64) {
    sums.retain(|&(end, _), _| end > upto);
}

fn check(disk: bool, rounds: Vec<(Vec<Op>, bool)>) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().unwrap();
    let (_store, mut w) = state(disk, dir.path(), 0);
    // The oracles: everything applied (live), and what epochs up to the cut one did.
    let (mut live, mut cut) = (Sums::new(), Sums::new());
    let mut closed_upto = 0u64;
    let mut chain: Vec<Delta> = Vec::new();
    for (i, (ops, full)) in rounds.into_iter().enumerate() {
        w.begin_version().unwrap();
        // The next epoch's elements and closes, applied at the end of the round to `cut`.
        let mut next: Vec<Op> = Vec::new();
        let mut cut_closed = closed_upto;
        for op in ops {
            match op {
                Op::Add(later, offset, k, v) => {
                    let end = closed_upto + offset;
                    w.set_later(later);
                    // Both ways in: one element, or a run of one window's elements.
                    match v % 2 {
                        0 => w.add(end, k, &v, &Sum).unwrap(),
                        _ => w.add_run(end, std::iter::once((k, &v)), &Sum).unwrap(),
                    }
                    add(&mut live, end, k, v);
                    match later {
                        true => next.push(Op::Add(true, end, k, v)),
                        false => add(&mut cut, end, k, v),
                    }
                }
                Op::Close(n) => {
                    closed_upto += n;
                    w.set_later(true);
                    while let Some((end, keys)) = w.close_next(closed_upto, &Sum).unwrap() {
                        for (k, acc) in keys {
                            let want = live.get(&(end, k)).copied();
                            prop_assert_eq!(Some(acc), want, "window {} key {}", end, k);
                        }
                    }
                    close(&mut live, closed_upto);
                    next.push(Op::Close(closed_upto));
                }
            }
        }
        let mut d = Delta::new(full || chain.is_empty());
        w.snapshot_older(&mut d).unwrap();
        if d.full {
            chain.clear();
        }
        chain.push(d);
        let (_s, mut restored) = state(disk, dir.path(), i + 1);
        restored.restore(&chain, &|_| true).unwrap();
        prop_assert_eq!(drain(&mut restored), cut.clone(), "round {}: the cut", i);
        // The next epoch's writes, now part of the epoch the next round cuts from.
        for op in next {
            match op {
                Op::Add(_, end, k, v) => add(&mut cut, end, k, v),
                Op::Close(upto) => {
                    cut_closed = cut_closed.max(upto);
                    close(&mut cut, cut_closed);
                }
            }
        }
        prop_assert_eq!(&cut, &live);
        w.end_version();
    }
    // A plain snapshot after the rounds states everything.
    let mut d = Delta::new(false);
    w.snapshot(&mut d).unwrap();
    chain.push(d);
    let (_s, mut restored) = state(disk, dir.path(), 999);
    restored.restore(&chain, &|_| true).unwrap();
    prop_assert_eq!(drain(&mut restored), live.clone());
    prop_assert_eq!(drain(&mut w), live);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn a_versioned_snapshot_states_the_cut_epoch_and_nothing_later(
        rounds in prop::collection::vec(
            (prop::collection::vec(op(), 0..40), any::<bool>()), 1..5),
        disk in any::<bool>(),
    ) {
        check(disk, rounds)?;
    }
}
