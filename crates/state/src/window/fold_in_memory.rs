//! Fold-left window state in memory, laid out per window: each open window has a small map of
//! its keys' accumulators, so an element costs one ordered-map step to its window and one hash
//! lookup of its key, as the operator's own maps did before windows kept their contents in this
//! crate (docs/state.md: one table over every (window, key) pair cost the flights job 15 %).
//! Snapshots hold the same records as [`crate::ValueTable`]'s, so restores and the checkpoint
//! files do not care which layout wrote them.

use super::version::Stash;
use super::{Closed, Fold};
use crate::codec;
use crate::delta::{Delta, Record};
use crate::error::StateError;
use crate::key_group::KeyGroup;
use crate::table::TableCtx;
use rustc_hash::FxHashMap;
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::collections::BTreeMap;
use std::hash::Hash;

/// One key's accumulator in one window.
struct Slot<Acc> {
    acc: Acc,
    /// Changed since the previous snapshot.
    changed: bool,
    /// Some snapshot holds it (so closing the window must delete it from the next one).
    snapshotted: bool,
}

/// The open windows' accumulators of one instance.
pub(crate) struct FoldInMemory<K, Acc> {
    t: TableCtx<(u64, K)>,
    windows: BTreeMap<u64, FxHashMap<K, Slot<Acc>>>,
    /// Closed (window end, key) pairs an earlier snapshot holds: the next one deletes them.
    closed: Vec<(u64, K)>,
}

impl<K, Acc> FoldInMemory<K, Acc>
where
    K: Hash + Eq + Clone + Serialize + DeserializeOwned,
    Acc: Serialize + DeserializeOwned,
{
    pub(crate) fn new(t: TableCtx<(u64, K)>) -> Self {
        FoldInMemory {
            t,
            windows: BTreeMap::new(),
            closed: Vec::new(),
        }
    }

    #[inline]
    pub(crate) fn add<T, F: Fold<T, Acc = Acc>>(&mut self, end: u64, key: K, el: &T, fold: &F) {
        self.add_run(end, std::iter::once((key, el)), fold);
    }

    /// Adds a run of elements of one window: one window lookup, a key lookup per element.
    #[inline]
    pub(crate) fn add_run<'a, T: 'a, F: Fold<T, Acc = Acc>>(
        &mut self,
        end: u64,
        run: impl Iterator<Item = (K, &'a T)>,
        fold: &F,
    ) {
        let w = self.windows.entry(end).or_default();
        for (key, el) in run {
            fold_into(w, key, el, fold);
        }
    }

    /// The table it snapshots as.
    pub(crate) fn table(&self) -> &TableCtx<(u64, K)> {
        &self.t
    }

    /// The accumulator of `key` in window `end`.
    pub(crate) fn get(&self, end: u64, key: &K) -> Option<&Acc> {
        self.windows.get(&end)?.get(key).map(|s| &s.acc)
    }

    /// Every key of window `end` with a copy of its accumulator.
    pub(crate) fn peek(&self, end: u64) -> Vec<(K, Acc)>
    where
        Acc: Clone,
    {
        let Some(w) = self.windows.get(&end) else {
            return Vec::new();
        };
        w.iter().map(|(k, s)| (k.clone(), s.acc.clone())).collect()
    }

    /// After a snapshot stated an older version of `(end, key)` (versioned cut): the next
    /// snapshot states the live one, or deletes the pair if it is gone.
    pub(crate) fn restate(&mut self, end: u64, key: K) {
        match self.windows.get_mut(&end).and_then(|w| w.get_mut(&key)) {
            Some(s) => {
                s.changed = true;
                s.snapshotted = true;
            }
            None => self.closed.push((end, key)),
        }
    }

    /// As [`FoldInMemory::add_run`] while a version is kept (versioned cut): a write of the
    /// `later` epoch first keeps the pair's older accumulator in `stash`; a write of the older
    /// epoch also reaches a kept one. One window lookup per run, two key lookups per element.
    pub(crate) fn add_run_versioned<'a, T: 'a, F: Fold<T, Acc = Acc>>(
        &mut self,
        end: u64,
        run: impl Iterator<Item = (K, &'a T)>,
        fold: &F,
        stash: &mut Stash<K, Acc>,
        later: bool,
    ) where
        Acc: Clone,
    {
        let w = self.windows.entry(end).or_default();
        let mut kept = match later {
            true => Some(stash.window(end)),
            false => stash.window_if_any(end),
        };
        for (key, el) in run {
            if let Some(kept) = kept.as_deref_mut() {
                match later {
                    // The live accumulator is read only on the pair's first later write.
                    true if !kept.contains_key(&key) => {
                        let live = w.get(&key).map(|s| s.acc.clone());
                        kept.insert(key.clone(), live);
                    }
                    true => {}
                    false => {
                        if let Some(older) = kept.get_mut(&key) {
                            fold.add(older.get_or_insert_with(|| fold.init()), el);
                        }
                    }
                }
            }
            fold_into(w, key, el, fold);
        }
    }

    pub(crate) fn first_end(&self) -> Option<u64> {
        self.windows.keys().next().copied()
    }

    pub(crate) fn windows(&self) -> usize {
        self.windows.len()
    }

    pub(crate) fn close_next(&mut self, frontier: u64) -> Option<Closed<K, Acc>> {
        let entry = self.windows.first_entry()?;
        let end = *entry.key();
        if end > frontier {
            return None;
        }
        let mut out = Vec::with_capacity(entry.get().len());
        for (k, s) in entry.remove() {
            if s.snapshotted {
                self.closed.push((end, k.clone()));
            }
            out.push((k, s.acc));
        }
        Some((end, out))
    }

    pub(crate) fn snapshot(&mut self, d: &mut Delta) -> Result<(), StateError> {
        if d.full {
            self.closed.clear();
        }
        for (end, k) in self.closed.drain(..) {
            d.records.push(Record::Delete {
                key: self.t.key_bytes(&(end, k))?,
            });
        }
        for (&end, w) in &mut self.windows {
            for (k, s) in w.iter_mut().filter(|(_, s)| d.full || s.changed) {
                d.records.push(Record::Put {
                    key: self.t.key_bytes(&(end, k.clone()))?,
                    value: codec::encode(&self.t.name, &s.acc)?,
                });
                s.changed = false;
                s.snapshotted = true;
            }
        }
        Ok(())
    }

    pub(crate) fn restore(
        &mut self,
        deltas: &[Delta],
        keep: &dyn Fn(KeyGroup) -> bool,
    ) -> Result<(), StateError> {
        self.windows.clear();
        self.closed.clear();
        let records = deltas.iter().flat_map(|d| &d.records);
        let mine = records.filter(|r| r.table() == Some(self.t.id));
        for r in mine.filter(|r| codec::group_of(r.key()).is_some_and(keep)) {
            match r {
                Record::Put { key, value } => {
                    let (_, (end, k)): (KeyGroup, (u64, K)) = codec::decode_key(&self.t.name, key)?;
                    let slot = Slot {
                        acc: codec::decode(&self.t.name, value)?,
                        changed: false,
                        snapshotted: true,
                    };
                    self.windows.entry(end).or_default().insert(k, slot);
                }
                Record::Delete { key } => {
                    let (_, (end, k)): (KeyGroup, (u64, K)) = codec::decode_key(&self.t.name, key)?;
                    if let Some(w) = self.windows.get_mut(&end) {
                        w.remove(&k);
                        if w.is_empty() {
                            self.windows.remove(&end);
                        }
                    }
                }
                Record::DeletePrefix { .. } => {
                    return Err(StateError::Codec {
                        table: self.t.name.clone(),
                        detail: "fold-left window state got a prefix delete".into(),
                    })
                }
            }
        }
        Ok(())
    }
}

/// Folds `el` into `key`'s accumulator in window `w`, creating it if needed.
#[inline]
fn fold_into<K: Hash + Eq, T, Acc, F: Fold<T, Acc = Acc>>(
    w: &mut FxHashMap<K, Slot<Acc>>,
    key: K,
    el: &T,
    fold: &F,
) {
    match w.get_mut(&key) {
        Some(s) => {
            fold.add(&mut s.acc, el);
            s.changed = true;
        }
        None => {
            let mut acc = fold.init();
            fold.add(&mut acc, el);
            let slot = Slot {
                acc,
                changed: true,
                snapshotted: false,
            };
            w.insert(key, slot);
        }
    }
}
