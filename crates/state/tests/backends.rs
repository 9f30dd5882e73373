//! The state backends against each other and against a plain map, on random operation
//! sequences: every read agrees with the oracle, and a restore from the chain of snapshots taken
//! along the way (a full one, then increments) gives back exactly the oracle's state, whatever the
//! backend and however small the write-back cache.

use proptest::prelude::*;
use std::collections::HashMap;
use xorflow_state::backend::{DiskBackend, MemoryBackend};
use xorflow_state::delta::Delta;
use xorflow_state::{Backend, CacheConfig, KeyGroups, StateStore};

#[derive(Clone, Debug)]
enum Op {
    /// Value table: add to key.
    Add(u8, u32),
    /// Value table: delete key.
    Remove(u8),
    /// Value table, changed in place ([`update_rule`]).
    Update(u8, u32),
    /// List table: append to key.
    Append(u8, u32),
    /// List table: take key's list.
    Take(u8),
    /// Flush both tables on demand.
    Flush,
    /// Snapshot (full if true), then restore a fresh store from every snapshot so far.
    Snapshot(bool),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0u8..12, any::<u32>()).prop_map(|(k, v)| Op::Add(k, v)),
        1 => (0u8..12).prop_map(Op::Remove),
        4 => (0u8..12, any::<u32>()).prop_map(|(k, v)| Op::Update(k, v)),
        6 => (0u8..12, any::<u32>()).prop_map(|(k, v)| Op::Append(k, v)),
        1 => (0u8..12).prop_map(Op::Take),
        1 => Just(Op::Flush),
        1 => any::<bool>().prop_map(Op::Snapshot),
    ]
}

/// What `Op::Update(_, v)` does to a value in place: `v mod 3 == 0` deletes it; otherwise a
/// present value grows by `v`, and an absent one is created when `v mod 3 == 1` and left absent
/// when it is 2 (an absent key that stays absent must cost no write).
fn update_rule(slot: &mut Option<u64>, v: u32) {
    *slot = match (v % 3, *slot) {
        (0, _) => None,
        (_, Some(x)) => Some(x + u64::from(v)),
        (1, None) => Some(u64::from(v)),
        (_, None) => None,
    };
}

fn group(k: &u8) -> u16 {
    KeyGroups::DEFAULT.of_hash(u64::from(*k).wrapping_mul(0x9E37_79B9_7F4A_7C15))
}

struct Tables {
    store: StateStore,
    values: xorflow_state::ValueTable<u8, u64>,
    lists: xorflow_state::ListTable<u8, u32>,
}

fn tables(backend: Box<dyn Backend>, cache: CacheConfig) -> Tables {
    let mut store = StateStore::with_backend(backend, cache);
    let values = store.value_table("values", group).unwrap();
    let lists = store.list_table("lists", group).unwrap();
    Tables {
        store,
        values,
        lists,
    }
}

/// The backends and cache policies under test, fresh.
fn all(dir: &std::path::Path, n: &mut u32) -> Vec<(&'static str, Tables)> {
    *n += 1;
    let small = CacheConfig {
        dirty_limit: 3,
        capacity: 4,
    };
    let disk = DiskBackend::open(&dir.join(format!("s{n}.redb"))).unwrap();
    vec![
        (
            "memory",
            tables(Box::new(MemoryBackend::new()), CacheConfig::MEMORY),
        ),
        (
            "memory, small cache",
            tables(Box::new(MemoryBackend::new()), small),
        ),
        ("disk, small cache", tables(Box::new(disk), small)),
    ]
}

fn check(
    name: &str,
    t: &mut Tables,
    values: &HashMap<u8, u64>,
    lists: &HashMap<u8, Vec<u32>>,
) -> Result<(), TestCaseError> {
    for k in 0..12u8 {
        prop_assert_eq!(
            t.values.get(&k).unwrap().copied(),
            values.get(&k).copied(),
            "{} value {}",
            name,
            k
        );
        let want = lists.get(&k).cloned().unwrap_or_default();
        prop_assert_eq!(t.lists.get(&k).unwrap(), want, "{} list {}", name, k);
    }
    let mut keys = t.values.keys().unwrap();
    keys.sort_unstable();
    let mut want: Vec<u8> = values.keys().copied().collect();
    want.sort_unstable();
    prop_assert_eq!(keys, want, "{} keys", name);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn backends_agree_with_a_plain_map_across_snapshots_and_restores(
        ops in proptest::collection::vec(op(), 1..120)
    ) {
        let dir = tempfile::tempdir().unwrap();
        let mut n = 0;
        let mut under_test = all(dir.path(), &mut n);
        let mut values: HashMap<u8, u64> = HashMap::new();
        let mut lists: HashMap<u8, Vec<u32>> = HashMap::new();
        // Per backend: the snapshots since (and including) the last full one.
        let mut chains: Vec<Vec<Delta>> = vec![Vec::new(); under_test.len()];
        for op in ops {
            match op {
                Op::Add(k, v) => *values.entry(k).or_default() += u64::from(v),
                Op::Remove(k) => { values.remove(&k); }
                Op::Update(k, v) => {
                    let mut slot = values.remove(&k);
                    update_rule(&mut slot, v);
                    if let Some(x) = slot { values.insert(k, x); }
                }
                Op::Append(k, v) => lists.entry(k).or_default().push(v),
                Op::Take(k) => { lists.remove(&k); }
                _ => {}
            }
            for (i, (name, t)) in under_test.iter_mut().enumerate() {
                match op {
                    Op::Add(k, v) => *t.values.upsert(&k, || 0).unwrap() += u64::from(v),
                    Op::Remove(k) => { t.values.remove(&k).unwrap(); }
                    Op::Update(k, v) => t.values.update(&k, |slot| update_rule(slot, v)).unwrap(),
                    Op::Append(k, v) => t.lists.append(&k, v).unwrap(),
                    Op::Take(k) => { t.lists.take(&k).unwrap(); }
                    Op::Flush => { t.values.flush().unwrap(); t.lists.flush().unwrap(); }
                    Op::Snapshot(full) => {
                        // The first snapshot must be full: a chain starts from one.
                        let full = full || chains[i].is_empty();
                        let mut d = Delta::new(full);
                        t.values.snapshot(&mut d).unwrap();
                        t.lists.snapshot(&mut d).unwrap();
                        // Through the bytes, as a checkpoint file holds it.
                        let bytes = xorflow_state::encode_snapshot(&d);
                        let d = xorflow_state::decode_snapshot(&bytes).unwrap();
                        if full { chains[i].clear(); }
                        chains[i].push(d);
                        t.store.sync().unwrap();
                    }
                }
                check(name, t, &values, &lists)?;
            }
            if matches!(op, Op::Snapshot(_)) {
                // A fresh set of stores restored from each chain holds exactly the state.
                let fresh = all(dir.path(), &mut n);
                for (i, (name, mut t)) in fresh.into_iter().enumerate() {
                    t.values.restore(&chains[i], &|_| true).unwrap();
                    t.lists.restore(&chains[i], &|_| true).unwrap();
                    check(name, &mut t, &values, &lists)?;
                    // And carries on from there: the restored store replaces the old one.
                    under_test[i].1 = t;
                }
            }
        }
    }
}

#[test]
fn a_restore_keeps_only_the_key_groups_asked_for() {
    let mut t = tables(Box::new(MemoryBackend::new()), CacheConfig::MEMORY);
    for k in 0..12u8 {
        t.values.insert(&k, u64::from(k)).unwrap();
        t.lists.append(&k, u32::from(k)).unwrap();
    }
    let mut d = Delta::new(true);
    t.values.snapshot(&mut d).unwrap();
    t.lists.snapshot(&mut d).unwrap();
    let groups = KeyGroups::DEFAULT;
    for instance in 0..3 {
        let owned = groups.owned(instance, 3);
        let mut r = tables(Box::new(MemoryBackend::new()), CacheConfig::MEMORY);
        r.values
            .restore(std::slice::from_ref(&d), &|g| owned.contains(&g))
            .unwrap();
        r.lists
            .restore(std::slice::from_ref(&d), &|g| owned.contains(&g))
            .unwrap();
        for k in 0..12u8 {
            let mine = owned.contains(&group(&k));
            assert_eq!(r.values.get(&k).unwrap().is_some(), mine, "key {k}");
            assert_eq!(r.lists.len(&k) == 1, mine, "key {k}");
        }
    }
}

#[test]
fn a_small_disk_cache_spills_and_reads_back() {
    let dir = tempfile::tempdir().unwrap();
    let disk = DiskBackend::open(&dir.path().join("s.redb")).unwrap();
    let cache = CacheConfig {
        dirty_limit: 100,
        capacity: 1000,
    };
    let mut store = StateStore::with_backend(Box::new(disk), cache);
    let mut v = store
        .value_table::<u32, u64>("v", |k| (*k % 128) as u16)
        .unwrap();
    for i in 0..20_000u32 {
        *v.upsert(&(i % 5000), || 0).unwrap() += 1;
    }
    let (cached, dirty) = v.cached();
    assert!(cached <= 1000 + 100, "cache holds {cached}");
    assert!(dirty <= 100, "{dirty} dirty");
    for i in 0..5000u32 {
        assert_eq!(v.get(&i).unwrap(), Some(&4), "key {i}");
    }
    let s = store.stats();
    assert!(s.puts >= 5000 && s.bytes_written > 5000 * 4, "{s:?}");
}

/// A key created and deleted between flushes costs the store nothing; one that was flushed
/// gets its tombstone, and reads back as gone.
#[test]
fn only_stored_keys_cost_a_tombstone() {
    let dir = tempfile::tempdir().unwrap();
    let disk = DiskBackend::open(&dir.path().join("s.redb")).unwrap();
    let mut store = StateStore::with_backend(Box::new(disk), CacheConfig::DISK);
    let mut v = store.value_table::<u32, u64>("v", |_| 0).unwrap();
    v.insert(&1, 10).unwrap();
    v.remove(&1).unwrap();
    v.flush().unwrap();
    let s = store.stats();
    assert_eq!((s.puts, s.deletes, s.bytes_written), (0, 0, 0), "{s:?}");
    v.insert(&2, 20).unwrap();
    v.flush().unwrap();
    v.remove(&2).unwrap();
    v.flush().unwrap();
    let s = store.stats();
    assert_eq!((s.puts, s.deletes), (1, 1), "{s:?}");
    assert_eq!(v.get(&2).unwrap(), None);
    // Read back from the store after the cache forgets it: still gone, and then set again.
    v.insert(&2, 21).unwrap();
    v.flush().unwrap();
    assert_eq!(v.get(&2).unwrap(), Some(&21));
}

/// Catches: deleted keys kept as empty entries in memory (an interval join or a deduplication
/// over ever new keys grew by an entry per key it had seen, for good).
#[test]
fn a_memory_table_holds_only_its_live_keys() {
    let mut store = StateStore::with_backend(Box::new(MemoryBackend::new()), CacheConfig::MEMORY);
    let mut t: xorflow_state::ValueTable<u32, u64> = store
        .value_table("values", |k: &u32| {
            KeyGroups::DEFAULT.of_hash(u64::from(*k).wrapping_mul(0x9E37_79B9_7F4A_7C15))
        })
        .unwrap();
    for k in 0..10_000u32 {
        t.insert(&k, 1).unwrap();
        match k % 3 {
            0 => drop(t.remove(&k).unwrap()),
            1 => t.update(&k, |v| *v = None).unwrap(),
            _ => {}
        }
        // Reads and updates of absent keys leave nothing behind either.
        assert_eq!(t.get(&(k + 1_000_000)).unwrap(), None);
        t.update(&(k + 2_000_000), |v| assert!(v.is_none()))
            .unwrap();
    }
    assert_eq!(t.cached().0, 3_333, "one entry per live key");
    // After a snapshot, a deletion is stated in the next increment.
    t.snapshot(&mut Delta::new(true)).unwrap();
    t.remove(&2).unwrap();
    assert_eq!(t.cached().0, 3_332);
    let mut d = Delta::new(false);
    t.snapshot(&mut d).unwrap();
    assert_eq!(d.records.len(), 1, "{:?}", d.records);
    assert!(matches!(
        d.records[0],
        xorflow_state::delta::Record::Delete { .. }
    ));
    // A key marked changed while absent (a versioned cut's window) is stated, not kept.
    t.mark_changed(&3).unwrap();
    assert_eq!(t.cached().0, 3_332);
    let mut d = Delta::new(false);
    t.snapshot(&mut d).unwrap();
    assert_eq!(d.records.len(), 1, "{:?}", d.records);
    assert!(matches!(
        d.records[0],
        xorflow_state::delta::Record::Delete { .. }
    ));
}
