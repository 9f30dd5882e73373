//! Local recovery (host affinity, `crates/state/src/local.rs`): an on-disk store rolled back to a
//! checkpoint's savepoint holds exactly what a store restored from that checkpoint's chain holds,
//! on random sequences of elements, window closes and checkpoints, in both window forms, with a
//! small cache (so flushes, evictions and unflushed writes all happen). And a local file is used
//! only when it is the right one: another owner, a missing savepoint or a corrupt file give an
//! empty store that says why.

use proptest::prelude::*;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use xorflow_state::delta::Delta;
use xorflow_state::local::{Affinity, Opened};
use xorflow_state::window::{WindowForm, WindowState};
use xorflow_state::{BackendKind, CacheConfig, StateConfig, StateStore};

mod common;
use common::Sum;

type W = WindowState<u8, u32, u64>;

#[derive(Clone, Debug)]
enum Op {
    Add(u64, u8, u32),
    Close(u64),
    Checkpoint,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        8 => (1u64..6, 0u8..4, any::<u16>()).prop_map(|(e, k, v)| Op::Add(e, k, u32::from(v))),
        1 => (0u64..6).prop_map(Op::Close),
        1 => Just(Op::Checkpoint),
    ]
}

fn config(dir: &Path) -> StateConfig {
    StateConfig {
        backend: BackendKind::Disk,
        dir: dir.into(),
        cache: CacheConfig {
            dirty_limit: 2,
            capacity: 3,
        },
        changelog: None,
    }
}

fn open(dir: &Path, form: WindowForm, owner: &str, resume: Option<u64>) -> (StateStore, W) {
    let affinity = Affinity {
        owner,
        resume,
        savepoints: true,
    };
    let mut store = StateStore::open_with(&config(dir), "win", 0, Some(affinity)).unwrap();
    let w = WindowState::new(&mut store, "w", form, Arc::new(|k: &u8| u16::from(*k % 7))).unwrap();
    (store, w)
}

/// Every open window's sums, closing them all.
fn drain(w: &mut W) -> BTreeMap<(u64, u8), u64> {
    let mut out = BTreeMap::new();
    while let Some((end, keys)) = w.close_next(u64::MAX, &Sum).unwrap() {
        for (k, acc) in keys {
            out.insert((end, k), acc);
        }
    }
    out
}

/// Runs `ops` on a store, taking a snapshot and a savepoint at each checkpoint; then more
/// `after` ops (some flushed, some not), and drops the store. Returns the chain up to the last
/// checkpoint (`None` if there was none) and its number.
fn run(dir: &Path, form: WindowForm, ops: &[Op], after: &[Op]) -> Option<(u64, Vec<Delta>)> {
    let (store, mut w) = open(dir, form, "job-a", None);
    let mut chain = Vec::new();
    let mut last = None;
    for (i, op) in ops.iter().chain(after).enumerate() {
        match op {
            Op::Add(e, k, v) => w.add(*e, *k, v, &Sum).unwrap(),
            Op::Close(f) => {
                w.close_next(*f, &Sum).unwrap();
            }
            Op::Checkpoint if i < ops.len() => {
                let c = last.map_or(1, |l| l + 1);
                let mut d = Delta::new(chain.is_empty());
                w.snapshot(&mut d).unwrap();
                chain.push(d);
                w.flush().unwrap();
                store.savepoint(c..=c, last).unwrap();
                last = Some(c);
            }
            // After the last checkpoint: flushes that the rollback must undo.
            Op::Checkpoint => w.flush().unwrap(),
        }
    }
    last.map(|c| (c, chain))
}

fn check(form: WindowForm, ops: Vec<Op>, after: Vec<Op>) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().unwrap();
    let Some((c, chain)) = run(dir.path(), form, &ops, &after) else {
        return Ok(());
    };
    // The oracle: a store restored from the chain.
    let other = tempfile::tempdir().unwrap();
    let (_s, mut expected) = open(other.path(), form, "oracle", None);
    expected.restore(&chain, &|_| true).unwrap();
    let (store, mut local) = open(dir.path(), form, "job-a", Some(c));
    prop_assert_eq!(store.opened(), &Opened::RolledBack(c));
    local.reopen().unwrap();
    prop_assert_eq!(local.windows(), expected.windows());
    // Both carry on alike: the same further elements, then every window's sums.
    for w in [&mut local, &mut expected] {
        for (i, op) in after.iter().enumerate() {
            if let Op::Add(e, k, v) = op {
                w.add(*e, *k, v, &Sum).unwrap();
            }
            if i % 3 == 0 {
                w.flush().unwrap();
            }
        }
    }
    // And the next increment of the rolled-back store is relative to the checkpoint.
    let mut d = Delta::new(false);
    local.snapshot(&mut d).unwrap();
    let mut replayed = chain.clone();
    replayed.push(d);
    let third = tempfile::tempdir().unwrap();
    let (_s3, mut from_chain) = open(third.path(), form, "oracle", None);
    from_chain.restore(&replayed, &|_| true).unwrap();
    let sums = drain(&mut expected);
    prop_assert_eq!(&drain(&mut local), &sums);
    prop_assert_eq!(&drain(&mut from_chain), &sums);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn a_rolled_back_store_equals_the_restored_chain(
        ops in prop::collection::vec(op(), 0..60),
        after in prop::collection::vec(op(), 0..30),
        retain in any::<bool>(),
    ) {
        let form = if retain { WindowForm::Retain } else { WindowForm::Fold };
        check(form, ops, after)?;
    }
}

fn checkpointed(dir: &Path, owner: &str) {
    let (store, mut w) = open(dir, WindowForm::Retain, owner, None);
    w.add(1, 1, &5, &Sum).unwrap();
    w.flush().unwrap();
    // One snapshot for checkpoints 1 and 2 (nothing changed in between).
    store.savepoint(1..=2, None).unwrap();
    w.add(1, 1, &7, &Sum).unwrap();
    w.flush().unwrap();
}

fn why(store: &StateStore) -> String {
    match store.opened() {
        Opened::Fresh { why: Some(w) } => w.clone(),
        other => panic!("expected a fresh store with a reason, got {other:?}"),
    }
}

#[test]
fn the_local_file_is_used_only_by_its_owner_for_its_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    checkpointed(dir.path(), "job-a");
    // Another job (or the same job on another checkpoint store) has files of its own.
    let (s, mut w) = open(dir.path(), WindowForm::Retain, "job-b", Some(1));
    assert!(why(&s).contains("no local state file"), "{}", why(&s));
    assert_eq!(w.windows(), 0);
    assert_eq!(drain(&mut w), BTreeMap::new());
    drop((s, w));
    checkpointed(dir.path(), "job-a");
    let (s, _w) = open(dir.path(), WindowForm::Retain, "job-a", Some(3));
    assert!(
        why(&s).contains("no savepoint of checkpoint 3"),
        "{}",
        why(&s)
    );
    drop(s);
    checkpointed(dir.path(), "job-a");
    let (s, _w) = open(dir.path(), WindowForm::Retain, "job-a", Some(0));
    assert!(
        why(&s).contains("no savepoint of checkpoint 0"),
        "{}",
        why(&s)
    );
    drop(s);
    checkpointed(dir.path(), "job-a");
    for c in [1, 2] {
        checkpointed(dir.path(), "job-a");
        let (s, mut w) = open(dir.path(), WindowForm::Retain, "job-a", Some(c));
        assert!(s.restored_locally(), "checkpoint {c}: {:?}", s.opened());
        w.reopen().unwrap();
        assert_eq!(drain(&mut w), BTreeMap::from([((1, 1), 5)]));
    }
}

#[test]
fn a_corrupt_or_missing_local_file_gives_an_empty_store() {
    let dir = tempfile::tempdir().unwrap();
    let (s, _w) = open(dir.path(), WindowForm::Fold, "job-a", Some(1));
    assert!(why(&s).contains("no local state file"), "{}", why(&s));
    let path = s.path().expect("on disk").to_path_buf();
    drop((s, _w));
    checkpointed(dir.path(), "job-a");
    // Garble the whole file, header included.
    let len = std::fs::metadata(&path).unwrap().len() as usize;
    std::fs::write(&path, vec![0xA5; len]).unwrap();
    let (s, mut w) = open(dir.path(), WindowForm::Retain, "job-a", Some(1));
    assert!(!s.restored_locally(), "{:?}", s.opened());
    assert_eq!(drain(&mut w), BTreeMap::new());
    // Without a restore the store opens empty and says nothing.
    drop((s, w));
    checkpointed(dir.path(), "job-a");
    let (s, mut w) = open(dir.path(), WindowForm::Retain, "job-a", None);
    assert_eq!(s.opened(), &Opened::Fresh { why: None });
    assert_eq!(drain(&mut w), BTreeMap::new());
}
