//! The on-disk store candidates of the state layer (docs/state.md, "The on-disk store: redb") under
//! the workload the write-back cache gives them (as in the changelog thesis, docs/papers.md: the
//! cache flushes at N dirty keys and at a checkpoint): `FLUSHES` batches of `DIRTY` updates (8-byte
//! keys spread over `KEYS`, 24-byte values), a durable sync every `FLUSHES_PER_CHECKPOINT` batches,
//! then 200,000 point reads, then every key deleted in batches (windows closing). A `BTreeMap` runs
//! the same operations as the in-memory reference.
//!
//! `cargo run --release -- [ROUNDS]` (from this folder): each round runs every store once, in
//! turn; one line per store and round. Results and the reading of them: docs/state.md.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Instant;

const FLUSHES: u64 = 200;
const DIRTY: u64 = 10_000;
const KEYS: u64 = 200_000;
const FLUSHES_PER_CHECKPOINT: u64 = 50;
const READS: u64 = 200_000;

/// Key `i` of the sequence, scattered over the key space (a multiplicative hash).
fn key(i: u64) -> [u8; 8] {
    (i.wrapping_mul(0x9E37_79B9_7F4A_7C15) % KEYS).to_be_bytes()
}

/// The operations a backend offers the write-back cache.
trait Store {
    fn name(&self) -> &'static str;
    fn write_batch(&mut self, puts: &[([u8; 8], [u8; 24])]);
    fn delete_batch(&mut self, keys: &[[u8; 8]]);
    fn get(&self, k: &[u8; 8]) -> bool;
    /// Makes everything written so far durable (a checkpoint).
    fn sync(&mut self);
}

struct Mem(BTreeMap<[u8; 8], [u8; 24]>);

impl Store for Mem {
    fn name(&self) -> &'static str {
        "btreemap"
    }
    fn write_batch(&mut self, puts: &[([u8; 8], [u8; 24])]) {
        self.0.extend(puts.iter().copied());
    }
    fn delete_batch(&mut self, keys: &[[u8; 8]]) {
        keys.iter().for_each(|k| {
            self.0.remove(k);
        });
    }
    fn get(&self, k: &[u8; 8]) -> bool {
        self.0.contains_key(k)
    }
    fn sync(&mut self) {}
}

struct Fjall(fjall::Database, fjall::Keyspace);

impl Store for Fjall {
    fn name(&self) -> &'static str {
        "fjall"
    }
    fn write_batch(&mut self, puts: &[([u8; 8], [u8; 24])]) {
        let mut b = self.0.batch();
        for (k, v) in puts {
            b.insert(&self.1, *k, *v);
        }
        b.commit().unwrap();
    }
    fn delete_batch(&mut self, keys: &[[u8; 8]]) {
        let mut b = self.0.batch();
        for k in keys {
            b.remove(&self.1, *k);
        }
        b.commit().unwrap();
    }
    fn get(&self, k: &[u8; 8]) -> bool {
        self.1.get(k).unwrap().is_some()
    }
    fn sync(&mut self) {
        self.0.persist(fjall::PersistMode::SyncAll).unwrap();
    }
}

const TABLE: redb::TableDefinition<&[u8], &[u8]> = redb::TableDefinition::new("state");

struct Redb(redb::Database);

impl Redb {
    fn commit(&mut self, durable: bool, f: impl FnOnce(&mut redb::Table<&[u8], &[u8]>)) {
        let mut tx = self.0.begin_write().unwrap();
        let d = if durable { redb::Durability::Immediate } else { redb::Durability::None };
        tx.set_durability(d).unwrap();
        f(&mut tx.open_table(TABLE).unwrap());
        tx.commit().unwrap();
    }
}

impl Store for Redb {
    fn name(&self) -> &'static str {
        "redb"
    }
    fn write_batch(&mut self, puts: &[([u8; 8], [u8; 24])]) {
        self.commit(false, |t| {
            for (k, v) in puts {
                t.insert(&k[..], &v[..]).unwrap();
            }
        });
    }
    fn delete_batch(&mut self, keys: &[[u8; 8]]) {
        self.commit(false, |t| {
            for k in keys {
                t.remove(&k[..]).unwrap();
            }
        });
    }
    fn get(&self, k: &[u8; 8]) -> bool {
        use redb::{ReadableDatabase, ReadableTable};
        let rx = self.0.begin_read().unwrap();
        let t = rx.open_table(TABLE).unwrap();
        t.get(&k[..]).unwrap().is_some()
    }
    fn sync(&mut self) {
        self.commit(true, |_| {});
    }
}

/// Bytes of the files below `p`.
fn dir_bytes(p: &Path) -> u64 {
    std::fs::read_dir(p)
        .unwrap()
        .flatten()
        .map(|e| {
            let m = e.metadata().unwrap();
            if m.is_dir() { dir_bytes(&e.path()) } else { m.len() }
        })
        .sum()
}

fn run(s: &mut dyn Store, dir: &Path) {
    let t = Instant::now();
    for f in 0..FLUSHES {
        let puts: Vec<_> = (0..DIRTY).map(|i| (key(f * DIRTY + i), [f as u8; 24])).collect();
        s.write_batch(&puts);
        if (f + 1) % FLUSHES_PER_CHECKPOINT == 0 {
            s.sync();
        }
    }
    let upd = t.elapsed().as_secs_f64();
    let size = dir_bytes(dir);
    let t = Instant::now();
    let hits = (0..READS).filter(|i| s.get(&key(i * 7))).count();
    let reads = t.elapsed().as_secs_f64();
    assert_eq!(hits as u64, READS, "{}: every key was written", s.name());
    let t = Instant::now();
    for c in 0..KEYS / DIRTY {
        let keys: Vec<_> = (c * DIRTY..(c + 1) * DIRTY).map(u64::to_be_bytes).collect();
        s.delete_batch(&keys);
    }
    s.sync();
    let del = t.elapsed().as_secs_f64();
    println!(
        "{:<9} updates {:>6.2} M/s ({:.2} s)  reads {:>6.2} M/s  deletes {:>6.2} M/s  on disk after updates {:>6.1} MB, at the end {:>6.1} MB",
        s.name(),
        (FLUSHES * DIRTY) as f64 / upd / 1e6,
        upd,
        READS as f64 / reads / 1e6,
        KEYS as f64 / del / 1e6,
        size as f64 / 1e6,
        dir_bytes(dir) as f64 / 1e6
    );
}

fn main() {
    let rounds: usize = std::env::args().nth(1).map_or(3, |a| a.parse().expect("ROUNDS"));
    for _ in 0..rounds {
        for which in ["btreemap", "fjall", "redb"] {
            let dir = tempfile::tempdir_in(".").unwrap();
            let mut s: Box<dyn Store> = match which {
                "btreemap" => Box::new(Mem(BTreeMap::new())),
                "fjall" => {
                    let db = fjall::Database::builder(dir.path())
                        .manual_journal_persist(true)
                        .open()
                        .unwrap();
                    let ks = db.keyspace("state", fjall::KeyspaceCreateOptions::default).unwrap();
                    Box::new(Fjall(db, ks))
                }
                _ => Box::new(Redb(redb::Database::create(dir.path().join("state.redb")).unwrap())),
            };
            run(s.as_mut(), dir.path());
        }
    }
}
