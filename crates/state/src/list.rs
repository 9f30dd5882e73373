//! A table of one append-only list per key (the changelog thesis's retain-all window state,
//! docs/papers.md: every element stored, all of a key's elements deleted when its window closes).
//! Elements are stored in runs (`run.rs`): one backend entry per list per flush, not one per
//! element.

use crate::backend::{lock, Write};
use crate::codec;
use crate::delta::{Delta, Record};
use crate::error::StateError;
use crate::key_group::KeyGroup;
use crate::run;
use crate::table::TableCtx;
use rustc_hash::FxHashMap;
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::hash::Hash;

/// What the table knows of one key's list, always in memory (a few words per key).
struct Meta<V> {
    /// Elements in the list.
    len: u64,
    /// Elements `0..flushed` are in the backend.
    flushed: u64,
    /// Elements `0..snapshotted` are in the previous snapshot (after a clear: 0).
    snapshotted: u64,
    /// The list was cleared since the previous snapshot.
    cleared: bool,
    /// Elements or a clear not yet flushed.
    dirty: bool,
    /// Changed since the previous snapshot.
    changed: bool,
    /// Elements `tail_start..len`, in memory (all of them in memory mode).
    tail: Vec<V>,
    tail_start: u64,
    used: u64,
}

impl<V> Meta<V> {
    /// An empty list (`cleared`: a snapshot must first delete what earlier ones hold).
    fn empty(cleared: bool) -> Self {
        Meta {
            len: 0,
            flushed: 0,
            snapshotted: 0,
            cleared,
            dirty: false,
            changed: cleared,
            tail: Vec::new(),
            tail_start: 0,
            used: 0,
        }
    }
}

/// List state: an append-only list of `V` per key `K`. Appends stay in memory until a flush
/// writes each list's new elements as runs (`run.rs`: `[key][first seq: u64 BE]` -> elements);
/// a snapshot holds the elements appended since the previous one, as runs too.
pub struct ListTable<K, V> {
    t: TableCtx<K>,
    lists: FxHashMap<K, Meta<V>>,
    /// Keys cleared with elements in the backend: their prefix is deleted at the next flush.
    cleared: Vec<Vec<u8>>,
    /// Elements held in memory.
    held: usize,
    /// Elements appended since the last flush.
    unflushed: usize,
    tick: u64,
}

impl<K, V> ListTable<K, V>
where
    K: Hash + Eq + Clone + Serialize + DeserializeOwned + Send,
    V: Clone + Serialize + DeserializeOwned + Send,
{
    pub(crate) fn new(t: TableCtx<K>) -> Self {
        ListTable {
            t,
            lists: FxHashMap::default(),
            cleared: Vec::new(),
            held: 0,
            unflushed: 0,
            tick: 0,
        }
    }

    /// Appends `v` to the list of `k`.
    ///
    /// # Errors
    /// A flush that was due failed.
    pub fn append(&mut self, k: &K, v: V) -> Result<(), StateError> {
        self.append_new(k, v).map(|_| ())
    }

    /// As [`ListTable::append`], and whether the list was empty before.
    ///
    /// # Errors
    /// As [`ListTable::append`].
    pub fn append_new(&mut self, k: &K, v: V) -> Result<bool, StateError> {
        if self.unflushed >= self.t.config.dirty_limit {
            self.flush()?;
        }
        self.tick += 1;
        let m = match self.lists.get_mut(k) {
            Some(m) => m,
            None => self.lists.entry(k.clone()).or_insert(Meta::empty(false)),
        };
        let new = m.len == 0;
        m.tail.push(v);
        m.len += 1;
        m.used = self.tick;
        m.dirty = true;
        m.changed = true;
        self.held += 1;
        self.unflushed += 1;
        Ok(new)
    }

    /// Elements in the list of `k`.
    pub fn len(&self, k: &K) -> u64 {
        self.lists.get(k).map_or(0, |m| m.len)
    }

    /// Elements `from..` of the list of `k`, read from the backend where they are not in memory.
    fn read(&self, k: &K, from: u64) -> Result<Vec<V>, StateError> {
        let Some(m) = self.lists.get(k) else {
            return Ok(Vec::new());
        };
        let mut out = Vec::with_capacity((m.len - from) as usize);
        if from < m.tail_start {
            let prefix = self.t.key_bytes(k)?;
            let name = &self.t.name;
            lock(&self.t.backend).scan_prefix(&prefix, &mut |kb, vb| {
                let Some((_, start)) = run::split_key(kb) else {
                    return Ok(());
                };
                // Runs wholly before `from` or from the in-memory tail on are not decoded.
                if start >= m.tail_start || start + run::run_len(name, vb)? <= from {
                    return Ok(());
                }
                let elements: Vec<V> = run::decode_run(name, vb)?;
                let skip = from.saturating_sub(start) as usize;
                let take = (m.tail_start - start) as usize;
                out.extend(elements.into_iter().take(take).skip(skip));
                Ok(())
            })?;
            if out.len() as u64 != m.tail_start - from {
                return Err(StateError::Codec {
                    table: self.t.name.clone(),
                    detail: format!(
                        "list has {} stored elements from {from}, expected {}",
                        out.len(),
                        m.tail_start - from
                    ),
                });
            }
        }
        let skip = from.saturating_sub(m.tail_start) as usize;
        out.extend(m.tail[skip..].iter().cloned());
        Ok(out)
    }

    /// Every element of the list of `k`, in append order.
    ///
    /// # Errors
    /// The backend failed or holds an element that does not decode.
    pub fn get(&self, k: &K) -> Result<Vec<V>, StateError> {
        self.read(k, 0)
    }

    /// Deletes the list of `k`; returns its elements.
    ///
    /// # Errors
    /// As [`ListTable::get`].
    pub fn take(&mut self, k: &K) -> Result<Vec<V>, StateError> {
        let all = self.read(k, 0)?;
        let Some(m) = self.lists.remove(k) else {
            return Ok(all);
        };
        self.held -= m.tail.len();
        if m.flushed > 0 {
            self.cleared.push(self.t.key_bytes(k)?);
        }
        // A snapshot must delete what earlier snapshots hold of this key.
        if m.snapshotted > 0 || m.cleared {
            self.lists.insert(k.clone(), Meta::empty(true));
        }
        Ok(all)
    }

    /// Writes every unflushed element and pending clear to the backend, then drops in-memory
    /// elements (the least recently appended lists first) until at most the capacity remain.
    ///
    /// # Errors
    /// The backend failed, or an element does not encode.
    pub fn flush(&mut self) -> Result<(), StateError> {
        if self.t.in_memory() {
            return Ok(());
        }
        let mut backend = lock(&self.t.backend);
        for prefix in self.cleared.drain(..) {
            backend.delete_prefix(&prefix)?;
        }
        let mut batch: Vec<Write> = Vec::new();
        for (k, m) in self.lists.iter_mut().filter(|(_, m)| m.dirty) {
            m.dirty = false;
            let prefix = codec::key_bytes(&self.t.name, self.t.id, (self.t.group)(k), k)?;
            let new = &m.tail[(m.flushed - m.tail_start) as usize..];
            run::encode_runs(&self.t.name, &prefix, m.flushed, new, &mut |key, value| {
                batch.push((key, Some(value)));
                Ok(())
            })?;
            m.flushed = m.len;
        }
        backend.write(&batch)?;
        drop(backend);
        self.unflushed = 0;
        // Flushed elements need not stay in memory: drop the tails of the least recently
        // appended lists until three quarters of the capacity (in elements) remain.
        if self.held > self.t.config.capacity {
            let mut by_age: Vec<(u64, usize)> = self
                .lists
                .values()
                .map(|m| (m.used, m.tail.len()))
                .collect();
            by_age.sort_unstable();
            let mut excess = self.held - self.t.config.keep_after_evict();
            let mut oldest_kept = 0;
            for (used, n) in by_age {
                oldest_kept = used + 1;
                excess = excess.saturating_sub(n);
                if excess == 0 {
                    break;
                }
            }
            for m in self.lists.values_mut().filter(|m| m.used < oldest_kept) {
                self.held -= m.tail.len();
                m.tail = Vec::new();
                m.tail_start = m.len;
            }
        }
        Ok(())
    }

    /// Adds to `d` the elements appended since the previous snapshot and the clears (`d.full`:
    /// every element), and starts a new increment.
    ///
    /// # Errors
    /// As [`ListTable::get`].
    pub fn snapshot(&mut self, d: &mut Delta) -> Result<(), StateError> {
        self.snapshot_where(d, &|_| true)
    }

    /// As [`ListTable::snapshot`], for the keys `keep` accepts only: the others' changes wait
    /// for a later snapshot (a sink's lists of an epoch after the one snapshotted: versioned
    /// cut).
    ///
    /// # Errors
    /// As [`ListTable::get`].
    pub fn snapshot_where(
        &mut self,
        d: &mut Delta,
        keep: &dyn Fn(&K) -> bool,
    ) -> Result<(), StateError> {
        let keys: Vec<K> = self
            .lists
            .iter()
            .filter(|(k, m)| (d.full || m.changed) && keep(k))
            .map(|(k, _)| k.clone())
            .collect();
        for k in keys {
            let prefix = self.t.key_bytes(&k)?;
            let m = self.lists.get(&k).expect("changed keys have lists");
            let from = if d.full { 0 } else { m.snapshotted };
            if m.cleared && !d.full {
                d.records.push(Record::DeletePrefix {
                    prefix: prefix.clone(),
                });
            }
            let records = &mut d.records;
            let elements = self.read(&k, from)?;
            run::encode_runs(&self.t.name, &prefix, from, &elements, &mut |key, value| {
                records.push(Record::Put { key, value });
                Ok(())
            })?;
            let m = self.lists.get_mut(&k).expect("listed above");
            m.snapshotted = m.len;
            m.cleared = false;
            m.changed = false;
            if m.len == 0 {
                self.lists.remove(&k);
            }
        }
        Ok(())
    }

    /// Forgets what changed since the previous snapshot, as a snapshot would, without stating
    /// it (changelog state: the changelog holds the changes: `backend/changelog.rs`).
    pub fn forget_changes(&mut self) {
        self.lists.retain(|_, m| {
            m.snapshotted = m.len;
            m.cleared = false;
            m.changed = false;
            m.len > 0
        });
    }

    /// Replaces the table's content with what `deltas` (a full delta, then the increments after
    /// it) say, keeping only keys whose group `keep` accepts.
    ///
    /// # Errors
    /// A record that does not decode or breaks a list's sequence, or the backend failed.
    pub fn restore(
        &mut self,
        deltas: &[Delta],
        keep: &dyn Fn(KeyGroup) -> bool,
    ) -> Result<(), StateError> {
        self.lists.clear();
        self.cleared.clear();
        self.held = 0;
        if !self.t.in_memory() {
            lock(&self.t.backend).delete_prefix(&[self.t.id])?;
        }
        let mut by_prefix: FxHashMap<Vec<u8>, K> = FxHashMap::default();
        let records = deltas.iter().flat_map(|d| &d.records);
        let mine = records.filter(|r| r.table() == Some(self.t.id));
        for r in mine.filter(|r| codec::group_of(r.key()).is_some_and(keep)) {
            match r {
                Record::DeletePrefix { prefix } => {
                    if let Some(k) = by_prefix.get(prefix) {
                        if let Some(m) = self.lists.remove(k) {
                            self.held -= m.tail.len();
                        }
                    }
                }
                Record::Put { key, value } => {
                    let elements: Vec<V> = run::decode_run(&self.t.name, value)?;
                    let m = next_run(&self.t.name, key, &mut by_prefix, &mut self.lists)?;
                    let n = elements.len();
                    m.tail.extend(elements);
                    m.len += n as u64;
                    m.snapshotted = m.len;
                    self.held += n;
                }
                other => {
                    return Err(StateError::Codec {
                        table: self.t.name.clone(),
                        detail: format!(
                            "a list table got a record of {} key bytes",
                            other.key().len()
                        ),
                    })
                }
            }
        }
        if !self.t.in_memory() {
            // On disk the restored elements go to the backend, then leave memory.
            self.lists.values_mut().for_each(|m| m.dirty = true);
            self.flush()?;
        }
        Ok(())
    }

    /// After the store was rolled back to a savepoint (`local.rs`): rebuilds every list's
    /// length from the restored backend (one scan of the table's keys); the elements stay on
    /// disk, and the next snapshot's increment starts from the restored state.
    ///
    /// # Errors
    /// A stored key that does not decode or breaks a list's sequence, or the backend failed.
    pub fn reopen(&mut self) -> Result<(), StateError> {
        self.lists.clear();
        self.cleared.clear();
        self.held = 0;
        self.unflushed = 0;
        let name = self.t.name.clone();
        let mut by_prefix: FxHashMap<Vec<u8>, K> = FxHashMap::default();
        let lists = &mut self.lists;
        lock(&self.t.backend).scan_prefix(&[self.t.id], &mut |key, value| {
            next_run(&name, key, &mut by_prefix, lists)?.len += run::run_len(&name, value)?;
            Ok(())
        })?;
        for m in self.lists.values_mut() {
            m.flushed = m.len;
            m.snapshotted = m.len;
            m.tail_start = m.len;
        }
        Ok(())
    }

    /// Keys with a list.
    pub fn keys(&self) -> impl Iterator<Item = &K> {
        self.lists.iter().filter(|(_, m)| m.len > 0).map(|(k, _)| k)
    }

    /// Elements held in memory.
    pub fn held(&self) -> usize {
        self.held
    }
}

/// The list a stored run key (`[key prefix][first seq: u64 BE]`) belongs to, created if new;
/// the run must start at the list's next element. `keys` caches each prefix's decoded key, so a
/// list's key is decoded once.
///
/// # Errors
/// A key too short for a run, a prefix that does not decode, or a run out of sequence (the
/// table `name` is named).
fn next_run<'a, K, V>(
    name: &str,
    key: &[u8],
    keys: &mut FxHashMap<Vec<u8>, K>,
    lists: &'a mut FxHashMap<K, Meta<V>>,
) -> Result<&'a mut Meta<V>, StateError>
where
    K: Hash + Eq + Clone + DeserializeOwned,
{
    let err = |detail| StateError::Codec {
        table: name.into(),
        detail,
    };
    let (prefix, seq) = run::split_key(key)
        .ok_or_else(|| err(format!("a list run's key has {} bytes", key.len())))?;
    let k = match keys.get(prefix) {
        Some(k) => k.clone(),
        None => {
            let (_, k): (KeyGroup, K) = codec::decode_key(name, prefix)?;
            keys.insert(prefix.to_vec(), k.clone());
            k
        }
    };
    let m = lists.entry(k).or_insert(Meta::empty(false));
    if seq != m.len {
        return Err(err(format!(
            "a list run starting at element {seq} follows {} elements",
            m.len
        )));
    }
    Ok(m)
}

#[cfg(test)]
mod tests {
    use crate::backend::MemoryBackend;
    use crate::{CacheConfig, StateStore};

    /// Reads that start inside a stored run (not at a run's first element), with the list's
    /// tail evicted, then with part of it back in memory.
    #[test]
    fn a_read_from_the_middle_of_a_stored_run_gives_exactly_the_elements_from_there() {
        let cache = CacheConfig {
            dirty_limit: 1000,
            capacity: 1,
        };
        let mut st = StateStore::with_backend(Box::new(MemoryBackend::new()), cache);
        let mut t = st.list_table::<u8, String>("l", |_| 0).unwrap();
        // 3,000 elements of 100 bytes: several runs of about 64 KiB.
        let all: Vec<String> = (0..3000).map(|i| format!("{i:0>100}")).collect();
        for v in &all[..2000] {
            t.append(&7, v.clone()).unwrap();
        }
        t.flush().unwrap();
        t.append(&9, "other".into()).unwrap();
        t.flush().unwrap();
        assert_eq!(t.lists[&7].tail_start, 2000, "the tail was evicted");
        for v in &all[2000..] {
            t.append(&7, v.clone()).unwrap();
        }
        for from in [0, 1, 649, 650, 651, 1999, 2000, 2500] {
            assert_eq!(
                t.read(&7, from).unwrap(),
                all[from as usize..],
                "from {from}"
            );
        }
        assert_eq!(t.get(&9).unwrap(), ["other"]);
    }
}
