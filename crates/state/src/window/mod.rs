//! Window state in the changelog thesis's two forms (Samza's window operators; sections 3.2.1.1 and
//! 3.2.1.1.1 of the thesis, docs/papers.md):
//!
//! * **fold-left**: one accumulator per (window, key), overwritten by every element and deleted
//!   (one tombstone) when the window closes;
//! * **retain-all**: every element stored under (window, key, seq), folded when the window closes
//!   and then deleted.
//!
//! Both give the same results; they differ in what they write (retain-all writes every element,
//! fold-left one value per key per flush) and in what a snapshot holds.

use crate::delta::Delta;
mod fold_in_memory;
mod version;

use crate::error::StateError;
use crate::key_group::KeyGroup;
use crate::list::ListTable;
use crate::store::StateStore;
use crate::value::ValueTable;
use fold_in_memory::FoldInMemory;
use rustc_hash::FxHashSet;
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::collections::BTreeMap;
use std::hash::Hash;
use std::sync::Arc;
use version::Stash;

/// Which form a job's windows keep their contents in (`--window-state`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum WindowForm {
    /// One accumulator per (window, key).
    #[default]
    Fold,
    /// Every element.
    Retain,
}

/// How elements fold into an accumulator (the window operator's aggregate, seen from the state).
pub trait Fold<T>: Send + Sync {
    /// The accumulator.
    type Acc;
    /// A fresh accumulator.
    fn init(&self) -> Self::Acc;
    /// Adds one element.
    fn add(&self, acc: &mut Self::Acc, el: &T);
}

/// `elements` folded into a fresh accumulator, in order.
fn fold_all<T, F: Fold<T>>(fold: &F, elements: Vec<T>) -> F::Acc {
    let mut acc = fold.init();
    for el in &elements {
        fold.add(&mut acc, el);
    }
    acc
}

/// A closed window: its end and every key's accumulator.
pub type Closed<K, Acc> = (u64, Vec<(K, Acc)>);

enum Contents<K, T, Acc> {
    /// Fold-left on disk: a value table behind the write-back cache.
    Fold(ValueTable<(u64, K), Acc>),
    /// Fold-left in memory, laid out per window (`fold_in_memory.rs`).
    FoldInMemory(FoldInMemory<K, Acc>),
    Retain(ListTable<(u64, K), T>),
}

/// The contents of the open windows of one window operator instance: per window (identified by
/// its end, time units) and key, an accumulator or every element. Which windows hold which keys
/// is kept in memory (rebuilt on restore).
pub struct WindowState<K, T, Acc> {
    contents: Contents<K, T, Acc>,
    /// Open windows by end, with their keys.
    open: BTreeMap<u64, FxHashSet<K>>,
    /// Versioned cut: the older version of what the later epoch changed (`version.rs`).
    stash: Option<Stash<K, Acc>>,
    /// Versioned cut: the writes now belong to the later epoch.
    later: bool,
}

impl<K, T, Acc> WindowState<K, T, Acc>
where
    K: Hash + Eq + Clone + Serialize + DeserializeOwned + Send + 'static,
    T: Clone + Serialize + DeserializeOwned + Send,
    Acc: Clone + Serialize + DeserializeOwned + Send,
{
    /// Declares the window state `name` in `store`, in form `form`; `group` gives a key's key
    /// group.
    ///
    /// # Errors
    /// As [`StateStore::value_table`].
    pub fn new(
        store: &mut StateStore,
        name: &str,
        form: WindowForm,
        group: Arc<dyn Fn(&K) -> KeyGroup + Send + Sync>,
    ) -> Result<Self, StateError> {
        let g = move |k: &(u64, K)| group(&k.1);
        let contents = match form {
            WindowForm::Fold if store.in_memory() => {
                Contents::FoldInMemory(FoldInMemory::new(store.table(name, g)?))
            }
            WindowForm::Fold => Contents::Fold(store.value_table(name, g)?),
            WindowForm::Retain => Contents::Retain(store.list_table(name, g)?),
        };
        Ok(WindowState {
            contents,
            open: BTreeMap::new(),
            stash: None,
            later: false,
        })
    }

    /// True if this form keeps versions (the versioned cut: fold-left only; retain-all would
    /// have to copy whole element lists, and its instances keep the buffering cut).
    pub fn versioned(&self) -> bool {
        !matches!(self.contents, Contents::Retain(_))
    }

    /// Versioned cut: from now on, until [`WindowState::end_version`], the state as of now (the
    /// end of the epoch not yet snapshotted) is kept apart from the writes that
    /// [`WindowState::set_later`] marks as the next epoch's.
    ///
    /// # Errors
    /// The form keeps no versions ([`WindowState::versioned`]).
    pub fn begin_version(&mut self) -> Result<(), StateError> {
        if !self.versioned() {
            return Err(StateError::Other(
                "retain-all window state keeps no versions".into(),
            ));
        }
        self.stash.get_or_insert_with(Stash::new);
        Ok(())
    }

    /// Versioned cut: whether the next writes (elements, closes) belong to the later epoch.
    pub fn set_later(&mut self, later: bool) {
        self.later = later;
    }

    /// Versioned cut: the older version is no longer needed (its snapshot was taken, or the
    /// epoch after it was reached without one).
    pub fn end_version(&mut self) {
        self.stash = None;
        self.later = false;
    }

    /// Adds `el` to `(end, key)`'s accumulator with a version kept (the slow path: versioned
    /// cut, fold-left forms).
    fn add_versioned<F: Fold<T, Acc = Acc>>(
        &mut self,
        end: u64,
        key: K,
        el: &T,
        fold: &F,
    ) -> Result<(), StateError> {
        let wk = (end, key);
        let later = self.later;
        let stash = self.stash.as_mut().expect("called with a stash");
        match &mut self.contents {
            Contents::FoldInMemory(f) => {
                if later {
                    stash.before_later_write(&wk, f.get(end, &wk.1));
                }
            }
            Contents::Fold(t) => {
                if later {
                    stash.before_later_write(&wk, t.get(&wk)?);
                }
            }
            Contents::Retain(_) => unreachable!("begin_version refuses retain-all"),
        }
        if !later {
            if let Some(older) = stash.older_mut(&wk) {
                fold.add(older.get_or_insert_with(|| fold.init()), el);
            }
        }
        match &mut self.contents {
            Contents::FoldInMemory(f) => f.add(end, wk.1, el, fold),
            Contents::Fold(t) => {
                let (acc, new) = t.upsert_new(&wk, || fold.init())?;
                fold.add(acc, el);
                if new {
                    self.open.entry(end).or_default().insert(wk.1);
                }
            }
            Contents::Retain(_) => unreachable!("begin_version refuses retain-all"),
        }
        Ok(())
    }

    /// Adds `el` to the window ending at `end` under `key`.
    ///
    /// # Errors
    /// The backend failed.
    #[inline]
    pub fn add<F: Fold<T, Acc = Acc>>(
        &mut self,
        end: u64,
        key: K,
        el: &T,
        fold: &F,
    ) -> Result<(), StateError> {
        if self.stash.is_some() {
            return self.add_versioned(end, key, el, fold);
        }
        if let Contents::FoldInMemory(f) = &mut self.contents {
            f.add(end, key, el, fold);
            return Ok(());
        }
        let wk = (end, key);
        let new = match &mut self.contents {
            Contents::Fold(t) => {
                let (acc, new) = t.upsert_new(&wk, || fold.init())?;
                fold.add(acc, el);
                new
            }
            Contents::Retain(t) => t.append_new(&wk, el.clone())?,
            Contents::FoldInMemory(_) => unreachable!("handled above"),
        };
        // The index is touched once per (window, key), not per element.
        if new {
            self.open.entry(end).or_default().insert(wk.1);
        }
        Ok(())
    }

    /// Adds a run of (key, element) pairs to the window ending at `end` (one window lookup for
    /// the run in memory).
    ///
    /// # Errors
    /// The backend failed.
    #[inline]
    pub fn add_run<'a, F: Fold<T, Acc = Acc>>(
        &mut self,
        end: u64,
        run: impl Iterator<Item = (K, &'a T)>,
        fold: &F,
    ) -> Result<(), StateError>
    where
        T: 'a,
    {
        match (&mut self.contents, &mut self.stash) {
            (Contents::FoldInMemory(f), None) => {
                f.add_run(end, run, fold);
                return Ok(());
            }
            (Contents::FoldInMemory(f), Some(stash)) => {
                f.add_run_versioned(end, run, fold, stash, self.later);
                return Ok(());
            }
            _ => {}
        }
        for (key, el) in run {
            self.add(end, key, el, fold)?;
        }
        Ok(())
    }

    /// A copy of `key`'s accumulator in the window ending at `end` (retain-all: its elements
    /// folded), without closing anything: for a fired window that still takes late elements.
    ///
    /// # Errors
    /// The backend failed.
    pub fn get<F: Fold<T, Acc = Acc>>(
        &mut self,
        end: u64,
        key: &K,
        fold: &F,
    ) -> Result<Option<Acc>, StateError> {
        let wk = (end, key.clone());
        match &mut self.contents {
            Contents::FoldInMemory(f) => Ok(f.get(end, key).cloned()),
            Contents::Fold(t) => Ok(t.get(&wk)?.cloned()),
            Contents::Retain(t) => {
                let els = t.get(&wk)?;
                Ok((!els.is_empty()).then(|| fold_all(fold, els)))
            }
        }
    }

    /// Every key of the window ending at `end` with a copy of its accumulator, leaving the
    /// window open (the first firing of a window that keeps its contents for late elements).
    ///
    /// # Errors
    /// The backend failed.
    pub fn peek<F: Fold<T, Acc = Acc>>(
        &mut self,
        end: u64,
        fold: &F,
    ) -> Result<Vec<(K, Acc)>, StateError> {
        if let Contents::FoldInMemory(f) = &self.contents {
            return Ok(f.peek(end));
        }
        let keys: Vec<K> = (self.open.get(&end).into_iter().flatten().cloned()).collect();
        let mut out = Vec::with_capacity(keys.len());
        for k in keys {
            if let Some(acc) = self.get(end, &k, fold)? {
                out.push((k, acc));
            }
        }
        Ok(out)
    }

    /// The end of the earliest open window.
    pub fn first_end(&self) -> Option<u64> {
        match &self.contents {
            Contents::FoldInMemory(f) => f.first_end(),
            _ => self.open.keys().next().copied(),
        }
    }

    /// Open windows.
    pub fn windows(&self) -> usize {
        match &self.contents {
            Contents::FoldInMemory(f) => f.windows(),
            _ => self.open.len(),
        }
    }

    /// Closes the earliest open window if it ends at or below `frontier`: removes its contents
    /// and returns its end and every key's accumulator (retain-all: the elements folded in their
    /// order of arrival).
    ///
    /// # Errors
    /// The backend failed.
    pub fn close_next<F: Fold<T, Acc = Acc>>(
        &mut self,
        frontier: u64,
        fold: &F,
    ) -> Result<Option<Closed<K, Acc>>, StateError> {
        if let Contents::FoldInMemory(f) = &mut self.contents {
            let closed = f.close_next(frontier);
            if let (Some(stash), Some((end, keys))) = (&mut self.stash, &closed) {
                // A close is a write of the later epoch: the older version keeps the window.
                for (k, acc) in keys {
                    stash.before_later_write(&(*end, k.clone()), Some(acc));
                }
            }
            return Ok(closed);
        }
        let Some(entry) = self.open.first_entry() else {
            return Ok(None);
        };
        let end = *entry.key();
        if end > frontier {
            return Ok(None);
        }
        let keys = entry.remove();
        let mut out = Vec::with_capacity(keys.len());
        for key in keys {
            let wk = (end, key);
            let acc = match &mut self.contents {
                Contents::Fold(t) => {
                    let acc = t.remove(&wk)?;
                    if let Some(stash) = &mut self.stash {
                        stash.before_later_write(&wk, acc.as_ref());
                    }
                    acc.unwrap_or_else(|| fold.init())
                }
                Contents::Retain(t) => fold_all(fold, t.take(&wk)?),
                Contents::FoldInMemory(_) => unreachable!("handled above"),
            };
            out.push((wk.1, acc));
        }
        Ok(Some((end, out)))
    }

    /// Adds the changes since the previous snapshot to `d`.
    ///
    /// # Errors
    /// As the tables' `snapshot`.
    pub fn snapshot(&mut self, d: &mut Delta) -> Result<(), StateError> {
        match &mut self.contents {
            Contents::Fold(t) => t.snapshot(d),
            Contents::FoldInMemory(f) => f.snapshot(d),
            Contents::Retain(t) => t.snapshot(d),
        }
    }

    /// Changelog state: forgets the changes since the previous snapshot, which the changelog
    /// holds (on-disk tables only: the in-memory fold has no changelog).
    pub fn forget_changes(&mut self) {
        match &mut self.contents {
            Contents::Fold(t) => t.forget_changes(),
            Contents::FoldInMemory(_) => {}
            Contents::Retain(t) => t.forget_changes(),
        }
    }

    /// Versioned cut: adds to `d` the changes of the older version since the previous snapshot
    /// (what [`WindowState::snapshot`] would have given had the later epoch's writes not
    /// happened yet), and ends the version: the later epoch's changes are the next snapshot's.
    /// Without a version, [`WindowState::snapshot`].
    ///
    /// # Errors
    /// As [`WindowState::snapshot`].
    pub fn snapshot_older(&mut self, d: &mut Delta) -> Result<(), StateError> {
        let Some(stash) = self.stash.take().filter(|s| !s.is_empty()) else {
            self.end_version();
            return self.snapshot(d);
        };
        self.later = false;
        let mut live = Delta::new(d.full);
        self.snapshot(&mut live)?;
        let kept = match &self.contents {
            Contents::FoldInMemory(f) => {
                let t = f.table();
                let value = |a: &Acc| crate::codec::encode(&t.name, a);
                stash.rewrite(live, d, &|wk| t.key_bytes(wk), &value)?
            }
            Contents::Fold(v) => {
                let t = v.table();
                let value = |a: &Acc| crate::codec::encode(&t.name, a);
                stash.rewrite(live, d, &|wk| t.key_bytes(wk), &value)?
            }
            Contents::Retain(_) => unreachable!("begin_version refuses retain-all"),
        };
        for (end, k) in kept {
            match &mut self.contents {
                Contents::FoldInMemory(f) => f.restate(end, k),
                Contents::Fold(t) => t.mark_changed(&(end, k))?,
                Contents::Retain(_) => {}
            }
        }
        Ok(())
    }

    /// Restores the contents from `deltas` (keys of groups `keep` accepts) and rebuilds the
    /// index of open windows.
    ///
    /// # Errors
    /// As the tables' `restore`.
    pub fn restore(
        &mut self,
        deltas: &[Delta],
        keep: &dyn Fn(KeyGroup) -> bool,
    ) -> Result<(), StateError> {
        match &mut self.contents {
            Contents::FoldInMemory(f) => f.restore(deltas, keep)?,
            Contents::Fold(t) => t.restore(deltas, keep)?,
            Contents::Retain(t) => t.restore(deltas, keep)?,
        }
        self.reindex()
    }

    /// After the store was rolled back to a savepoint (`local.rs`): rebuilds the tables'
    /// metadata and the index of open windows from the restored backend.
    ///
    /// # Errors
    /// In memory (there is no file to roll back), or as the tables' `reopen`.
    pub fn reopen(&mut self) -> Result<(), StateError> {
        match &mut self.contents {
            Contents::FoldInMemory(_) => {
                return Err(StateError::Other(
                    "window state in memory cannot be restored from a local file".into(),
                ))
            }
            Contents::Fold(t) => t.reopen(),
            Contents::Retain(t) => t.reopen()?,
        }
        self.reindex()
    }

    /// Rebuilds the index of open windows from the restored tables (the in-memory fold keeps
    /// its own).
    fn reindex(&mut self) -> Result<(), StateError> {
        self.open.clear();
        let keys: Vec<(u64, K)> = match &mut self.contents {
            Contents::FoldInMemory(_) => return Ok(()),
            Contents::Fold(t) => t.keys()?,
            Contents::Retain(t) => t.keys().cloned().collect(),
        };
        for (end, k) in keys {
            self.open.entry(end).or_default().insert(k);
        }
        Ok(())
    }

    /// Writes the contents' dirty entries to the backend (on demand).
    ///
    /// # Errors
    /// The backend failed.
    pub fn flush(&mut self) -> Result<(), StateError> {
        match &mut self.contents {
            Contents::Fold(t) => t.flush(),
            Contents::FoldInMemory(_) => Ok(()),
            Contents::Retain(t) => t.flush(),
        }
    }
}
