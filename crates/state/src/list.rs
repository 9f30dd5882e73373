//! A table of one append-only list per key (seed 001's retain-all window state: every element
//! stored under `(key, seq)`, all of a key's elements deleted when its window closes).

use crate::backend::{lock, Write};
use crate::codec;
use crate::delta::{Delta, Record};
use crate::error::StateError;
use crate::key_group::KeyGroup;
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
/// writes them as one backend entry per element (`[key][seq: u64 BE]`); a snapshot holds the
/// elements appended since the previous one.
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

    fn element_key(prefix: &[u8], seq: u64) -> Vec<u8> {
        let mut key = Vec::with_capacity(prefix.len() + 8);
        key.extend_from_slice(prefix);
        key.extend_from_slice(&seq.to_be_bytes());
        key
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
            let start = Self::element_key(&prefix, from);
            lock(&self.t.backend).scan_prefix(&prefix, &mut |kb, vb| {
                if kb >= start.as_slice() && out.len() < (m.tail_start - from) as usize {
                    out.push(codec::decode(name, vb)?);
                }
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
            for seq in m.flushed..m.len {
                let v = &m.tail[(seq - m.tail_start) as usize];
                let value = codec::encode(&self.t.name, v)?;
                batch.push((Self::element_key(&prefix, seq), Some(value)));
            }
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
            for (i, v) in self.read(&k, from)?.iter().enumerate() {
                d.records.push(Record::Put {
                    key: Self::element_key(&prefix, from + i as u64),
                    value: codec::encode(&self.t.name, v)?,
                });
            }
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
                    let v: V = codec::decode(&self.t.name, value)?;
                    let m = next_element(&self.t.name, key, &mut by_prefix, &mut self.lists)?;
                    m.tail.push(v);
                    m.len += 1;
                    m.snapshotted = m.len;
                    self.held += 1;
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
        lock(&self.t.backend).scan_prefix(&[self.t.id], &mut |key, _| {
            next_element(&name, key, &mut by_prefix, lists)?.len += 1;
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

/// The list a stored element key (`[key prefix][seq: u64 BE]`) belongs to, created if new; the
/// element must be the list's next one. `keys` caches each prefix's decoded key, so a list's
/// key is decoded once.
///
/// # Errors
/// A key too short for an element, a prefix that does not decode, or an element out of
/// sequence (the table `name` is named).
fn next_element<'a, K, V>(
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
    if key.len() < codec::HEADER + 8 {
        return Err(err(format!("a list element's key has {} bytes", key.len())));
    }
    let (prefix, seq) = key.split_at(key.len() - 8);
    let seq = u64::from_be_bytes(seq.try_into().expect("8 bytes"));
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
            "list element {seq} follows {} elements",
            m.len
        )));
    }
    Ok(m)
}
