//! A table of one value per key, behind a write-back cache.

use crate::backend::{lock, Write};
use crate::codec;
use crate::delta::{Delta, Record};
use crate::error::StateError;
use crate::key_group::KeyGroup;
use hashbrown::HashTable;
use rustc_hash::{FxBuildHasher, FxHashSet};
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::hash::BuildHasher;
use std::hash::Hash;

use crate::table::TableCtx;
struct Entry<V> {
    /// `None`: deleted (a tombstone until flushed) or known absent.
    value: Option<V>,
    /// The backend holds a value for the key (read from it, or flushed): a deletion must be
    /// written. A key created and deleted between flushes costs the backend nothing.
    stored: bool,
    /// Written since the last flush.
    dirty: bool,
    /// Written since the last snapshot.
    changed: bool,
    used: u64,
}

/// Value state: one `V` per key `K`. Reads miss into the backend; writes stay in the cache until
/// a flush ([`CacheConfig`]). Every key changed since the last [`ValueTable::snapshot`] is
/// remembered, so snapshots are incremental.
pub struct ValueTable<K, V> {
    t: TableCtx<K>,
    /// The cache: a raw table hashed once per operation (a hit costs one hash and one probe;
    /// the key is cloned only when inserted).
    cache: HashTable<(K, Entry<V>)>,
    hasher: FxBuildHasher,
    dirty: usize,
    /// Keys changed since the last snapshot whose entries were evicted (the others carry
    /// [`Entry::changed`]): one hash lookup per write instead of two.
    changed_evicted: FxHashSet<K>,
    tick: u64,
    /// Whether the backend may hold records of this table: once flushed to, restored into, or
    /// rolled back under the cache. Until then a key not in the cache is absent, and a miss
    /// (every new key of a join or a deduplication) costs no key encoding and no backend lock.
    backend_used: bool,
    /// A snapshot was taken or restored from: a key deleted since must be stated in the next
    /// increment. Before the first snapshot (always full) a deleted key needs no record.
    snapshotted: bool,
}

impl<K, V> ValueTable<K, V>
where
    K: Hash + Eq + Clone + Serialize + DeserializeOwned + Send,
    V: Clone + Serialize + DeserializeOwned + Send,
{
    pub(crate) fn new(t: TableCtx<K>) -> Self {
        ValueTable {
            t,
            cache: HashTable::new(),
            hasher: FxBuildHasher,
            dirty: 0,
            changed_evicted: FxHashSet::default(),
            tick: 0,
            backend_used: false,
            snapshotted: false,
        }
    }

    /// The table's name.
    pub fn name(&self) -> &str {
        &self.t.name
    }

    /// The table's identity and surroundings.
    pub(crate) fn table(&self) -> &TableCtx<K> {
        &self.t
    }

    /// Makes sure `k` is in the cache (reading the backend on a miss); `write`: marks it dirty
    /// and changed.
    fn load(&mut self, k: &K, write: bool) -> Result<&mut Entry<V>, StateError> {
        self.tick += 1;
        let hash = self.hasher.hash_one(k);
        let hasher = self.hasher;
        let e = match self
            .cache
            .entry(hash, |(x, _)| x == k, |(x, _)| hasher.hash_one(x))
        {
            hashbrown::hash_table::Entry::Occupied(o) => o.into_mut(),
            hashbrown::hash_table::Entry::Vacant(v) => {
                let value = match self.backend_used {
                    false => None,
                    true => {
                        let key = codec::key_bytes(&self.t.name, self.t.id, (self.t.group)(k), k)?;
                        let bytes = crate::backend::lock(&self.t.backend).get(&key)?;
                        bytes.map(|b| codec::decode(&self.t.name, &b)).transpose()?
                    }
                };
                let e = Entry {
                    stored: value.is_some(),
                    value,
                    dirty: false,
                    changed: self.changed_evicted.remove(k),
                    used: 0,
                };
                v.insert((k.clone(), e)).into_mut()
            }
        };
        e.1.used = self.tick;
        if write {
            e.1.changed = true;
            if !e.1.dirty {
                e.1.dirty = true;
                self.dirty += 1;
            }
        }
        Ok(&mut e.1)
    }

    /// The value of `k`.
    ///
    /// # Errors
    /// The backend failed or holds a value that does not decode.
    pub fn get(&mut self, k: &K) -> Result<Option<&V>, StateError> {
        if self.t.in_memory() {
            // The cache is the state: a miss is an absent key, not worth an empty entry.
            let hash = self.hasher.hash_one(k);
            let hit = self.cache.find(hash, |(x, _)| x == k);
            return Ok(hit.and_then(|(_, e)| e.value.as_ref()));
        }
        Ok(self.load(k, false)?.value.as_ref())
    }

    /// The value of `k` for update, inserted with `init` if absent; marks `k` dirty.
    ///
    /// # Errors
    /// As [`ValueTable::get`], or a flush that failed.
    pub fn upsert(&mut self, k: &K, init: impl FnOnce() -> V) -> Result<&mut V, StateError> {
        Ok(self.mark_dirty(k)?.value.get_or_insert_with(init))
    }

    /// As [`ValueTable::upsert`], and whether the value was absent (`init` was called).
    ///
    /// # Errors
    /// As [`ValueTable::upsert`].
    pub fn upsert_new(
        &mut self,
        k: &K,
        init: impl FnOnce() -> V,
    ) -> Result<(&mut V, bool), StateError> {
        let e = self.mark_dirty(k)?;
        let new = e.value.is_none();
        Ok((e.value.get_or_insert_with(init), new))
    }

    /// Loads `k`, marks it dirty and changed (flushing first if the cache is due).
    fn mark_dirty(&mut self, k: &K) -> Result<&mut Entry<V>, StateError> {
        if self.dirty >= self.t.config.dirty_limit {
            self.flush()?;
        }
        self.load(k, true)
    }

    /// Sets `k` to `v`.
    ///
    /// # Errors
    /// As [`ValueTable::upsert`].
    pub fn insert(&mut self, k: &K, v: V) -> Result<(), StateError> {
        self.mark_dirty(k)?.value = Some(v);
        Ok(())
    }

    /// Lets `f` change `k`'s value in place (`None`: absent; leaving `None` deletes it) and
    /// returns what `f` returns. Marks `k` dirty and changed when it was or is present, as
    /// [`ValueTable::remove`] then [`ValueTable::insert`] would, so an absent key that stays
    /// absent costs no write. One lookup where get, remove and insert take three (a keyed
    /// process function per element, `operators/process.rs` in the runtime).
    ///
    /// # Errors
    /// As [`ValueTable::upsert`]; `f` is not called then.
    pub fn update<R>(
        &mut self,
        k: &K,
        f: impl FnOnce(&mut Option<V>) -> R,
    ) -> Result<R, StateError> {
        if self.dirty >= self.t.config.dirty_limit {
            self.flush()?;
        }
        let e = self.load(k, false)?;
        let was = e.value.is_some();
        let r = f(&mut e.value);
        let mut newly_dirty = false;
        if was || e.value.is_some() {
            e.changed = true;
            newly_dirty = !std::mem::replace(&mut e.dirty, true);
        }
        let absent = e.value.is_none();
        self.dirty += usize::from(newly_dirty);
        if absent {
            self.drop_absent(k);
        }
        Ok(r)
    }

    /// In memory, a key without a value leaves the cache at once: there is no backend to write
    /// its deletion to, and an empty entry kept for it would stay for good (an interval join or
    /// a deduplication that sees ever new keys grew by an entry per key it had seen). A
    /// deletion since the last snapshot is remembered in `changed_evicted`, so the next
    /// increment states it. On disk the entry stays until its deletion is flushed.
    fn drop_absent(&mut self, k: &K) {
        if !self.t.in_memory() {
            return;
        }
        let hash = self.hasher.hash_one(k);
        if let Ok(o) = self.cache.find_entry(hash, |(x, _)| x == k) {
            let ((_, e), _) = o.remove();
            self.dirty -= usize::from(e.dirty);
            if e.changed && self.snapshotted {
                self.changed_evicted.insert(k.clone());
            }
        }
    }

    /// Deletes `k`; returns its value.
    ///
    /// # Errors
    /// As [`ValueTable::upsert`].
    pub fn remove(&mut self, k: &K) -> Result<Option<V>, StateError> {
        let v = self.mark_dirty(k)?.value.take();
        self.drop_absent(k);
        Ok(v)
    }

    /// Writes every dirty key to the backend, then drops the least recently used clean keys
    /// beyond the cache's capacity.
    ///
    /// # Errors
    /// The backend failed, or a value does not encode.
    pub fn flush(&mut self) -> Result<(), StateError> {
        if self.t.in_memory() {
            return Ok(());
        }
        let mut batch: Vec<Write> = Vec::with_capacity(self.dirty);
        for (k, e) in self.cache.iter_mut().filter(|(_, e)| e.dirty) {
            e.dirty = false;
            if e.value.is_none() && !e.stored {
                continue;
            }
            let key = codec::key_bytes(&self.t.name, self.t.id, (self.t.group)(k), k)?;
            let value = e
                .value
                .as_ref()
                .map(|v| codec::encode(&self.t.name, v))
                .transpose()?;
            e.stored = value.is_some();
            batch.push((key, value));
        }
        self.backend_used |= !batch.is_empty();
        lock(&self.t.backend).write(&batch)?;
        self.dirty = 0;
        self.evict();
        Ok(())
    }

    fn evict(&mut self) {
        if self.cache.len() <= self.t.config.capacity {
            return;
        }
        let keep = self.t.config.keep_after_evict();
        let mut ages: Vec<u64> = self.cache.iter().map(|(_, e)| e.used).collect();
        let cut = ages.len() - keep;
        let (_, &mut oldest_kept, _) = ages.select_nth_unstable(cut);
        let changed_evicted = &mut self.changed_evicted;
        self.cache.retain(|(k, e)| {
            let keep = e.dirty || e.used >= oldest_kept;
            if !keep && e.changed {
                changed_evicted.insert(k.clone());
            }
            keep
        });
    }

    /// Adds to `d` a record for every key changed since the previous snapshot (`d.full`: for
    /// every key), and starts a new increment.
    ///
    /// # Errors
    /// As [`ValueTable::get`].
    pub fn snapshot(&mut self, d: &mut Delta) -> Result<(), StateError> {
        self.snapshotted = true;
        let keys: Vec<K> = if d.full {
            self.changed_evicted.clear();
            self.cache.iter_mut().for_each(|(_, e)| e.changed = false);
            if !self.t.in_memory() {
                // The backend holds everything once flushed: copy its records as they are.
                self.flush()?;
                return lock(&self.t.backend).scan_prefix(&[self.t.id], &mut |k, v| {
                    d.records.push(Record::Put {
                        key: k.to_vec(),
                        value: v.to_vec(),
                    });
                    Ok(())
                });
            }
            self.cache.iter().map(|(k, _)| k.clone()).collect()
        } else {
            let mut keys: Vec<K> = self.changed_evicted.drain().collect();
            for (k, e) in self.cache.iter_mut().filter(|(_, e)| e.changed) {
                e.changed = false;
                keys.push(k.clone());
            }
            keys
        };
        let name = self.t.name.clone();
        for k in keys {
            let key = self.t.key_bytes(&k)?;
            d.records.push(match self.get(&k)? {
                Some(v) => Record::Put {
                    key,
                    value: codec::encode(&name, v)?,
                },
                None if d.full => continue,
                None => Record::Delete { key },
            });
        }
        Ok(())
    }

    /// Forgets which keys changed since the previous snapshot, as a snapshot would, without
    /// stating them (changelog state: the changelog holds the changes: `backend/changelog.rs`).
    pub fn forget_changes(&mut self) {
        self.changed_evicted.clear();
        self.cache.iter_mut().for_each(|(_, e)| e.changed = false);
    }

    /// Every key with a value, in no particular order.
    ///
    /// # Errors
    /// As [`ValueTable::flush`], or a stored key that does not decode.
    pub fn keys(&mut self) -> Result<Vec<K>, StateError> {
        if self.t.in_memory() {
            let live = self.cache.iter().filter(|(_, e)| e.value.is_some());
            return Ok(live.map(|(k, _)| k.clone()).collect());
        }
        self.flush()?;
        let mut keys = Vec::new();
        let name = self.t.name.clone();
        lock(&self.t.backend).scan_prefix(&[self.t.id], &mut |kb, _| {
            let (_, k): (KeyGroup, K) = codec::decode_key(&name, kb)?;
            keys.push(k);
            Ok(())
        })?;
        Ok(keys)
    }

    /// Replaces the table's content with what `deltas` (a full delta, then the increments
    /// after it) say, keeping only keys whose group `keep` accepts. The next snapshot's
    /// increment starts from the restored state.
    ///
    /// # Errors
    /// A record that does not decode, or the backend failed.
    pub fn restore(
        &mut self,
        deltas: &[Delta],
        keep: &dyn Fn(KeyGroup) -> bool,
    ) -> Result<(), StateError> {
        self.cache.clear();
        self.changed_evicted.clear();
        self.dirty = 0;
        self.snapshotted = true;
        if !self.t.in_memory() {
            lock(&self.t.backend).delete_prefix(&[self.t.id])?;
            self.backend_used = true;
        }
        let records = deltas.iter().flat_map(|d| &d.records);
        let mine = records.filter(|r| r.table() == Some(self.t.id));
        let mut batch = Vec::new();
        for r in mine.filter(|r| codec::group_of(r.key()).is_some_and(keep)) {
            match r {
                Record::Put { key, value } => batch.push((key.clone(), Some(value.clone()))),
                Record::Delete { key } => batch.push((key.clone(), None)),
                Record::DeletePrefix { .. } => {
                    return Err(StateError::Codec {
                        table: self.t.name.clone(),
                        detail: "a value table got a prefix delete".into(),
                    })
                }
            }
        }
        if self.t.in_memory() {
            // In memory the cache is the state: decode straight into it.
            for (kb, v) in batch {
                let (_, k): (KeyGroup, K) = codec::decode_key(&self.t.name, &kb)?;
                match v {
                    Some(v) => {
                        let value = Some(codec::decode(&self.t.name, &v)?);
                        let e = Entry {
                            value,
                            // In memory there is no backend to write to.
                            stored: false,
                            dirty: false,
                            changed: false,
                            used: 0,
                        };
                        let hasher = self.hasher;
                        let hash = hasher.hash_one(&k);
                        match self
                            .cache
                            .entry(hash, |(x, _)| *x == k, |(x, _)| hasher.hash_one(x))
                        {
                            hashbrown::hash_table::Entry::Occupied(mut o) => o.get_mut().1 = e,
                            hashbrown::hash_table::Entry::Vacant(v) => {
                                v.insert((k, e));
                            }
                        }
                    }
                    None => {
                        let hash = self.hasher.hash_one(&k);
                        if let Ok(o) = self.cache.find_entry(hash, |(x, _)| *x == k) {
                            o.remove();
                        }
                    }
                }
            }
            return Ok(());
        }
        lock(&self.t.backend).write(&batch)
    }

    /// Marks `k` changed, so the next snapshot states its value (or its absence): after a
    /// snapshot of an older version of it (versioned cut: `crate::window`).
    ///
    /// # Errors
    /// As [`ValueTable::get`].
    pub fn mark_changed(&mut self, k: &K) -> Result<(), StateError> {
        let e = self.load(k, false)?;
        e.changed = true;
        let absent = e.value.is_none();
        if absent && self.t.in_memory() {
            // No empty entry kept for an absent key (`drop_absent`): the next snapshot states
            // its absence from `changed_evicted`.
            let hash = self.hasher.hash_one(k);
            if let Ok(o) = self.cache.find_entry(hash, |(x, _)| x == k) {
                o.remove();
            }
            self.changed_evicted.insert(k.clone());
        }
        Ok(())
    }

    /// After the store was rolled back to a savepoint (`local.rs`): forgets what the cache
    /// holds, so every read goes to the restored backend; the next snapshot's increment starts
    /// from the restored state.
    pub fn reopen(&mut self) {
        self.cache.clear();
        self.changed_evicted.clear();
        self.dirty = 0;
        self.backend_used = true;
        self.snapshotted = true;
    }

    /// Keys in the cache, and of them dirty.
    pub fn cached(&self) -> (usize, usize) {
        (self.cache.len(), self.dirty)
    }
}
