//! The versioned cut's copy-on-write (docs/state.md, "Versioned state"): while an instance
//! applies elements of the epoch after the one it has yet to snapshot, the first such write to a
//! (window, key) keeps that pair's accumulator as it was, so the snapshot can still state the
//! older epoch; elements of the older epoch go to both. A snapshot then states the kept values in
//! place of the live ones, and leaves the live ones to the next snapshot.

use crate::delta::{Delta, Record};
use crate::error::StateError;
use rustc_hash::{FxHashMap, FxHashSet};
use std::hash::Hash;

/// Encodes a (window end, key) pair as a stored key.
type KeyFn<'a, K> = &'a dyn Fn(&(u64, K)) -> Result<Vec<u8>, StateError>;

/// The older version of every (window end, key) the later epoch changed: its accumulator then,
/// or `None` if it did not exist. Kept per window, so a run of one window's elements looks the
/// window up once.
pub(crate) struct Stash<K, Acc> {
    older: FxHashMap<u64, FxHashMap<K, Option<Acc>>>,
}

impl<K: Hash + Eq + Clone, Acc: Clone> Stash<K, Acc> {
    pub(crate) fn new() -> Self {
        Stash {
            older: FxHashMap::default(),
        }
    }

    /// The kept pairs of window `end`, created empty (for writes of the later epoch).
    #[inline]
    pub(crate) fn window(&mut self, end: u64) -> &mut FxHashMap<K, Option<Acc>> {
        self.older.entry(end).or_default()
    }

    /// The kept pairs of window `end`, if the later epoch changed any (for writes of the older
    /// epoch, which must reach them too).
    #[inline]
    pub(crate) fn window_if_any(&mut self, end: u64) -> Option<&mut FxHashMap<K, Option<Acc>>> {
        self.older.get_mut(&end)
    }

    /// A write of the later epoch to `wk`, whose live accumulator is `live`: keeps it as the
    /// older version unless one is kept already.
    #[inline]
    pub(crate) fn before_later_write(&mut self, wk: &(u64, K), live: Option<&Acc>) {
        keep_older(self.window(wk.0), &wk.1, live);
    }

    /// The older version of `wk` if the later epoch changed it (an element of the older epoch
    /// then applies to it too).
    #[inline]
    pub(crate) fn older_mut(&mut self, wk: &(u64, K)) -> Option<&mut Option<Acc>> {
        self.older.get_mut(&wk.0)?.get_mut(&wk.1)
    }

    /// True when nothing is kept.
    pub(crate) fn is_empty(&self) -> bool {
        self.older.values().all(FxHashMap::is_empty)
    }

    /// Rewrites `live`, a snapshot of the live state, into one of the older version: the kept
    /// pairs' records are replaced by their older accumulators (`key` encodes a pair, `value`
    /// an accumulator), appended to `d`. Returns the kept pairs (their live state is what the
    /// next snapshot must state).
    ///
    /// # Errors
    /// A key or value does not encode.
    pub(crate) fn rewrite(
        self,
        live: Delta,
        d: &mut Delta,
        key: KeyFn<'_, K>,
        value: &dyn Fn(&Acc) -> Result<Vec<u8>, StateError>,
    ) -> Result<Vec<(u64, K)>, StateError> {
        let mut kept = Vec::new();
        let mut replaced = FxHashSet::default();
        let mut older = Vec::new();
        let pairs = self.older.into_iter();
        for (wk, acc) in
            pairs.flat_map(|(end, keys)| keys.into_iter().map(move |(k, a)| ((end, k), a)))
        {
            let kb = key(&wk)?;
            replaced.insert(kb.clone());
            older.push(match acc {
                Some(a) => Some(Record::Put {
                    key: kb,
                    value: value(&a)?,
                }),
                // Absent then: a full snapshot leaves it out, an increment deletes it.
                None => (!d.full).then_some(Record::Delete { key: kb }),
            });
            kept.push(wk);
        }
        d.records.extend(
            live.records
                .into_iter()
                .filter(|r| !replaced.contains(r.key())),
        );
        d.records.extend(older.into_iter().flatten());
        Ok(kept)
    }
}

/// In a window's kept pairs: keeps `live` as the older version of `key` unless one is kept.
#[inline]
fn keep_older<K: Hash + Eq + Clone, Acc: Clone>(
    kept: &mut FxHashMap<K, Option<Acc>>,
    key: &K,
    live: Option<&Acc>,
) {
    if !kept.contains_key(key) {
        kept.insert(key.clone(), live.cloned());
    }
}
