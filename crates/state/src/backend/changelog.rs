//! Changelog state (the changelog thesis, Samza; docs/papers.md): every write a store's tables
//! flush into its backend is mirrored to the store's partition of a changelog (a compacted Kafka
//! topic: `crates/kafka/src/changelog.rs`); deletes become tombstones. A checkpoint then records
//! where the store's records are in the changelog ([`LogRange`]) instead of copying the state, and
//! a restore replays that range when the local store cannot be reused.
//!
//! After a failure the changelog holds records written after the restored checkpoint by the
//! attempt that failed. A replay stops at the checkpoint's end, but compaction keeps only the
//! newest record per key, which may be such a stale one; so a store restored while stale records
//! exist *rebases*: it writes its whole state after them and its range starts there
//! ([`ChangelogBackend::resume`]).

use super::{Backend, BackendKind, BackendStats, ScanFn, Write};
use crate::error::StateError;

/// Where a store's state is in its changelog partition: replaying offsets `start..end` in order
/// gives it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LogRange {
    /// The first offset that belongs to the state.
    pub start: i64,
    /// The offset after the last one that belongs to it.
    pub end: i64,
}

impl LogRange {
    /// `start end`, as checkpoints and savepoints record it.
    pub fn encode(self) -> Vec<u8> {
        format!("{} {}", self.start, self.end).into_bytes()
    }

    /// Parses [`LogRange::encode`]'s bytes.
    ///
    /// # Errors
    /// Bytes that are not two offsets with `start <= end`.
    pub fn decode(b: &[u8]) -> Result<Self, String> {
        let text = String::from_utf8_lossy(b);
        let mut it = text.split(' ').map(str::parse::<i64>);
        match (it.next(), it.next(), it.next()) {
            (Some(Ok(start)), Some(Ok(end)), None) if 0 <= start && start <= end => {
                Ok(LogRange { start, end })
            }
            _ => Err(format!("'{text}' is not a changelog range 'START END'")),
        }
    }
}

/// What a changelog has done.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ChangelogStats {
    /// Records appended (puts and tombstones).
    pub records: u64,
    /// Key and value bytes appended.
    pub bytes: u64,
    /// Records replayed by restores.
    pub replayed: u64,
}

/// A replayed record: a put, or a tombstone (`None`).
pub type ReplayFn<'a> = dyn FnMut(&[u8], Option<&[u8]>) -> Result<(), StateError> + 'a;

/// One store's partition of a changelog.
pub trait Changelog: Send {
    /// Appends `batch` (puts and tombstones) in order; durable after [`Changelog::flush`].
    ///
    /// # Errors
    /// The changelog refused a record; the message names it.
    fn append(&mut self, batch: &[Write]) -> Result<(), StateError>;

    /// Waits until everything appended is durable; returns the offset after the last record
    /// this store appended (or the partition's end when it appended nothing yet).
    ///
    /// # Errors
    /// A record was not delivered.
    fn flush(&mut self) -> Result<i64, StateError>;

    /// The offset after the partition's last record, whoever wrote it.
    ///
    /// # Errors
    /// The changelog cannot be reached.
    fn end(&mut self) -> Result<i64, StateError>;

    /// Calls `f` with the records of `range`, in offset order (some may be gone: compacted
    /// away); returns how many.
    ///
    /// # Errors
    /// The changelog cannot be read, or `f` failed.
    fn replay(&mut self, range: LogRange, f: &mut ReplayFn<'_>) -> Result<u64, StateError>;

    /// Counters since it was opened.
    fn stats(&self) -> ChangelogStats;
}

/// Opens the changelog partition of a store (one per stateful operator instance).
pub trait ChangelogFactory: Send + Sync + std::fmt::Debug {
    /// The changelog of instance `instance` of vertex `vertex`.
    ///
    /// # Errors
    /// The changelog cannot be created or reached.
    fn open(&self, vertex: &str, instance: usize) -> Result<Box<dyn Changelog>, StateError>;
}

/// Records written to the store per transaction during a replay, at most.
const REPLAY_BATCH: usize = 65_536;

/// Bytes (keys and values) per replay transaction, at most: list runs are up to 64 KiB each
/// (`run.rs`), so a count alone could hold gigabytes.
const REPLAY_BATCH_BYTES: usize = 32 << 20;

/// The key under which a store keeps its current [`LogRange`] in its own backend (so a local
/// savepoint carries it): outside every table's key space (table ids stop at 254:
/// `store.rs`), and never mirrored.
pub(crate) const RANGE_KEY: &[u8] = b"\xff\xffxorflow-changelog-range";

/// A backend whose writes are mirrored to a changelog.
pub struct ChangelogBackend {
    inner: Box<dyn Backend>,
    log: Box<dyn Changelog>,
    /// Where the state's records start in the log.
    start: i64,
}

impl ChangelogBackend {
    /// Mirrors `inner`'s writes to `log`; the state starts at the log's current end.
    ///
    /// # Errors
    /// The log cannot be reached.
    pub fn new(inner: Box<dyn Backend>, mut log: Box<dyn Changelog>) -> Result<Self, StateError> {
        let start = log.end()?;
        Ok(ChangelogBackend { inner, log, start })
    }

    /// Flushes the log and records the state's range in the backend; returns it (a checkpoint
    /// records it).
    ///
    /// # Errors
    /// The log or the backend failed.
    pub fn checkpoint(&mut self) -> Result<LogRange, StateError> {
        let end = self.log.flush()?;
        let r = LogRange {
            start: self.start,
            end,
        };
        self.inner
            .write(&[(RANGE_KEY.to_vec(), Some(r.encode()))])?;
        Ok(r)
    }

    /// Replaces the backend's content with the replay of `range`; returns the records
    /// replayed. Then [`ChangelogBackend::resume`].
    ///
    /// # Errors
    /// The log or the backend failed.
    pub fn replay(&mut self, range: LogRange) -> Result<u64, StateError> {
        self.inner.delete_prefix(&[])?;
        let t0 = std::time::Instant::now();
        // Reading the log and writing the store overlap: a thread writes each batch while
        // the next is read (two bounded slots, so memory stays at about three batches).
        let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<Write>>(2);
        let (inner, log) = (&mut self.inner, &mut self.log);
        let n = std::thread::scope(|s| {
            let writer = s.spawn(move || -> Result<(), StateError> {
                for batch in rx {
                    inner.write(&batch)?;
                }
                Ok(())
            });
            let (mut batch, mut bytes): (Vec<Write>, usize) = (Vec::new(), 0);
            let read = log.replay(range, &mut |k, v| {
                bytes += k.len() + v.map_or(0, <[u8]>::len);
                batch.push((k.to_vec(), v.map(<[u8]>::to_vec)));
                // Large batches: each is one transaction of the disk store.
                if batch.len() >= REPLAY_BATCH || bytes >= REPLAY_BATCH_BYTES {
                    bytes = 0;
                    let full = std::mem::take(&mut batch);
                    // A closed channel means the writer failed: its error is returned below.
                    let _ = tx.send(full);
                }
                Ok(())
            });
            let _ = tx.send(batch);
            drop(tx);
            let wrote = writer
                .join()
                .unwrap_or_else(|_| Err(StateError::Other("the replay's writer panicked".into())));
            wrote.and(read)
        })?;
        tracing::debug!("changelog replay: {n} records in {:?}", t0.elapsed());
        self.inner
            .write(&[(RANGE_KEY.to_vec(), Some(range.encode()))])?;
        Ok(n)
    }

    /// After a restore (a replay, or a local store rolled back to a savepoint): goes on from
    /// the restored state's range. If the log holds records after it (written by the attempt
    /// that failed), rebases: writes the whole state at the log's end and starts there.
    ///
    /// # Errors
    /// No range is recorded in the backend, or the log or the backend failed.
    pub fn resume(&mut self) -> Result<(), StateError> {
        let range = self
            .inner
            .get(RANGE_KEY)?
            .ok_or_else(|| {
                StateError::Other("the restored store records no changelog range".into())
            })
            .and_then(|b| LogRange::decode(&b).map_err(StateError::Other))?;
        let end = self.log.end()?;
        if end == range.end {
            self.start = range.start;
            return Ok(());
        }
        tracing::info!(
            "changelog: {} records after the restored range {}..{}: rebasing the state at {end}",
            end - range.end,
            range.start,
            range.end
        );
        self.start = end;
        let mut batch: Vec<Write> = Vec::new();
        self.inner.scan_prefix(&[], &mut |k, v| {
            if k != RANGE_KEY {
                batch.push((k.to_vec(), Some(v.to_vec())));
            }
            Ok(())
        })?;
        self.log.append(&batch)
    }

    /// The log's counters.
    pub fn log_stats(&self) -> ChangelogStats {
        self.log.stats()
    }
}

impl Backend for ChangelogBackend {
    fn kind(&self) -> BackendKind {
        self.inner.kind()
    }

    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, StateError> {
        self.inner.get(key)
    }

    fn write(&mut self, batch: &[Write]) -> Result<(), StateError> {
        self.inner.write(batch)?;
        self.log.append(batch)
    }

    /// One tombstone per deleted key: compaction can then drop every record of them.
    fn delete_prefix(&mut self, prefix: &[u8]) -> Result<u64, StateError> {
        let mut tombstones: Vec<Write> = Vec::new();
        self.inner.scan_prefix(prefix, &mut |k, _| {
            if k != RANGE_KEY {
                tombstones.push((k.to_vec(), None));
            }
            Ok(())
        })?;
        let n = self.inner.delete_prefix(prefix)?;
        self.log.append(&tombstones)?;
        Ok(n)
    }

    fn scan_prefix(&self, prefix: &[u8], f: &mut ScanFn<'_>) -> Result<(), StateError> {
        self.inner.scan_prefix(prefix, f)
    }

    fn sync(&mut self) -> Result<(), StateError> {
        self.inner.sync()
    }

    fn stats(&self) -> BackendStats {
        self.inner.stats()
    }

    fn as_disk(&mut self) -> Option<&mut super::DiskBackend> {
        self.inner.as_disk()
    }

    fn as_changelog(&mut self) -> Option<&mut ChangelogBackend> {
        Some(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::MemoryBackend;
    use std::sync::{Arc, Mutex};

    /// A changelog in memory: offsets are indices.
    #[derive(Clone, Default)]
    struct VecLog(Arc<Mutex<Vec<Write>>>);

    impl Changelog for VecLog {
        fn append(&mut self, batch: &[Write]) -> Result<(), StateError> {
            self.0.lock().unwrap().extend_from_slice(batch);
            Ok(())
        }
        fn flush(&mut self) -> Result<i64, StateError> {
            self.end()
        }
        fn end(&mut self) -> Result<i64, StateError> {
            Ok(self.0.lock().unwrap().len() as i64)
        }
        fn replay(&mut self, r: LogRange, f: &mut ReplayFn<'_>) -> Result<u64, StateError> {
            let log = self.0.lock().unwrap().clone();
            for (k, v) in &log[r.start as usize..r.end as usize] {
                f(k, v.as_deref())?;
            }
            Ok((r.end - r.start) as u64)
        }
        fn stats(&self) -> ChangelogStats {
            ChangelogStats::default()
        }
    }

    fn put(k: &[u8], v: &[u8]) -> Write {
        (k.to_vec(), Some(v.to_vec()))
    }

    fn content(b: &dyn Backend) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut out = Vec::new();
        b.scan_prefix(&[0], &mut |k, v| {
            out.push((k.to_vec(), v.to_vec()));
            Ok(())
        })
        .unwrap();
        out
    }

    #[test]
    fn writes_are_mirrored_a_replay_restores_and_stale_records_force_a_rebase() {
        let log = VecLog::default();
        let mut b =
            ChangelogBackend::new(Box::new(MemoryBackend::new()), Box::new(log.clone())).unwrap();
        b.write(&[put(b"\0a", b"1"), put(b"\0b", b"2"), put(b"\0c1", b"x")])
            .unwrap();
        b.delete_prefix(b"\0c").unwrap();
        let r = b.checkpoint().unwrap();
        assert_eq!(r, LogRange { start: 0, end: 4 });
        assert_eq!(
            log.0.lock().unwrap()[3],
            (b"\0c1".to_vec(), None),
            "a tombstone"
        );
        // The failed attempt writes on after the checkpoint.
        b.write(&[put(b"\0a", b"stale")]).unwrap();
        let mut again =
            ChangelogBackend::new(Box::new(MemoryBackend::new()), Box::new(log.clone())).unwrap();
        assert_eq!(again.replay(r).unwrap(), 4);
        again.resume().unwrap();
        let want = vec![
            (b"\0a".to_vec(), b"1".to_vec()),
            (b"\0b".to_vec(), b"2".to_vec()),
        ];
        assert_eq!(content(&again), want);
        // Rebased after the stale record: a replay of the new range alone gives the state.
        let r2 = again.checkpoint().unwrap();
        assert_eq!(r2, LogRange { start: 5, end: 7 });
        let mut third =
            ChangelogBackend::new(Box::new(MemoryBackend::new()), Box::new(log)).unwrap();
        third.replay(r2).unwrap();
        assert_eq!(content(&third), want);
        // Nothing stale: no rebase.
        third.resume().unwrap();
        assert_eq!(third.checkpoint().unwrap(), r2);
    }

    #[test]
    fn ranges_round_trip_and_garbage_is_refused() {
        let r = LogRange { start: 3, end: 9 };
        assert_eq!(LogRange::decode(&r.encode()).unwrap(), r);
        for bad in ["", "3", "9 3", "a b", "1 2 3", "-1 2"] {
            assert!(LogRange::decode(bad.as_bytes()).is_err(), "{bad}");
        }
    }
}
