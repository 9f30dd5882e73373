//! The coordinator thread: writes snapshot files as reports arrive and commits a checkpoint's
//! manifest once every reporter has covered its epoch (docs/state.md, "Checkpoints").

use super::{Entry, Filed, Inbound, Resume};
use crate::net::link::RemoteTx;
use crate::progress::cut::Covered;
use crossbeam_channel::Receiver;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Instant;
use xorflow_state::checkpoint::{CheckpointStore, FileRef, Hold, Manifest};
use xorflow_tracking::INF;

/// What the coordinator did, for the run report.
#[derive(Clone, Debug, Default)]
pub struct CheckpointStats {
    /// Checkpoints committed (manifests written).
    pub completed: u64,
    /// The newest committed checkpoint.
    pub latest: Option<u64>,
    /// Snapshot files written.
    pub files: u64,
    /// Bytes of snapshot files written.
    pub bytes: u64,
    /// Per committed checkpoint: from its first report to its manifest, ms.
    pub duration_ms: Vec<f64>,
    /// Files deleted by retention.
    pub deleted: u64,
    /// The checkpoint the run resumed from (`--resume`).
    pub resumed_from: Option<u64>,
    /// Newer checkpoints the resume skipped, each with why (a corrupt or missing file).
    pub skipped: Vec<String>,
    /// Why the job was restarted from a checkpoint, per restart (`--restart-attempts`).
    pub restarts: Vec<String>,
}

/// The reports of one reporter not yet superseded.
#[derive(Default)]
struct History {
    /// Snapshot files (state reporters) with the epochs each covers and the holds as of it,
    /// oldest first, from the newest full snapshot at or before the last commit on.
    files: Vec<(Covered, FileRef, Vec<Hold>)>,
    /// Positions (source reporters) with the epochs each covers.
    positions: Vec<(Covered, String)>,
}

impl History {
    /// The newest epoch covered.
    fn reached(&self) -> Option<u64> {
        let f = self.files.last().map(|(c, _, _)| c.to);
        let p = self.positions.last().map(|(c, _)| c.to);
        f.max(p)
    }
}

/// Runs until every [`Checkpointer`] is dropped.
pub(crate) struct Coordinator {
    store: Arc<CheckpointStore>,
    job: String,
    reporters: BTreeSet<String>,
    history: BTreeMap<String, History>,
    /// When each epoch's first report came.
    first_seen: BTreeMap<u64, Instant>,
    committed: Option<u64>,
    /// Where completed checkpoints are announced: this process's sinks, and the other
    /// processes (`Kind::Checkpoint` frames).
    announce: Option<(super::Committed, Vec<RemoteTx>)>,
    stats: CheckpointStats,
    /// Live metrics (`--metrics-addr`), and the bytes already reported to them.
    live: Option<(Arc<crate::measure::live::Live>, u64)>,
}

impl Coordinator {
    /// A coordinator filing into `store` for job `job`, waiting for `reporters` on every
    /// checkpoint after the one the job resumes from (if any); returns it with the workers'
    /// handle and the receiving end to run it on.
    pub(crate) fn new(
        store: Arc<CheckpointStore>,
        job: String,
        reporters: BTreeSet<String>,
        resume: Option<&Resume>,
    ) -> Self {
        let after = resume.map(|r| r.manifest.checkpoint);
        Coordinator {
            store,
            job,
            reporters,
            history: BTreeMap::new(),
            first_seen: BTreeMap::new(),
            committed: after,
            announce: None,
            live: None,
            stats: CheckpointStats {
                resumed_from: after,
                skipped: resume.map(|r| r.skipped.clone()).unwrap_or_default(),
                ..CheckpointStats::default()
            },
        }
    }

    /// Reports every checkpoint it completes to the live metrics.
    pub(crate) fn report_to(&mut self, live: Option<Arc<crate::measure::live::Live>>) {
        self.live = live.map(|l| (l, self.stats.bytes));
    }

    /// Announces every checkpoint it completes to `local` and to `peers`.
    pub(crate) fn announce_to(&mut self, local: super::Committed, peers: Vec<RemoteTx>) {
        self.announce = Some((local, peers));
    }

    /// Files local reports and takes other processes' filed ones until told to stop; returns
    /// what it did.
    ///
    /// # Errors
    /// A snapshot file or manifest that could not be written, naming it; a report from an
    /// instance the job does not have.
    pub(crate) fn run(mut self, rx: Receiver<Inbound>) -> Result<CheckpointStats, String> {
        while let Ok(m) = rx.recv() {
            let f = match m {
                Inbound::Report(r) => super::writer::file(&self.store, r)?,
                Inbound::Filed(f) => f,
                Inbound::Stop => break,
            };
            self.take(f)?;
            self.commit_ready()?;
        }
        Ok(self.stats)
    }

    fn take(&mut self, r: Filed) -> Result<(), String> {
        if !self.reporters.contains(&r.reporter) {
            return Err(format!(
                "checkpoint report from unknown instance '{}'",
                r.reporter
            ));
        }
        self.first_seen
            .entry(r.covered.from)
            .or_insert_with(Instant::now);
        let h = self.history.entry(r.reporter.clone()).or_default();
        match r.entry {
            Entry::State { file, holds } => {
                self.stats.files += 1;
                self.stats.bytes += file.bytes;
                h.files.push((r.covered, file, holds));
            }
            Entry::Position(p) => h.positions.push((r.covered, p)),
        }
        Ok(())
    }

    /// The newest epoch every reporter has covered.
    fn ready(&self) -> Option<u64> {
        let mut min = INF;
        for r in &self.reporters {
            min = min.min(self.history.get(r)?.reached()?);
        }
        // A source that ended covers every later epoch: the end of the job is not a checkpoint.
        (min < INF - 1).then_some(min)
    }

    fn commit_ready(&mut self) -> Result<(), String> {
        let Some(e) = self.ready() else {
            return Ok(());
        };
        if self.committed.is_some_and(|c| c >= e) {
            return Ok(());
        }
        let mut m = Manifest {
            checkpoint: e,
            job: self.job.clone(),
            completed_ms: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as u64),
            state: BTreeMap::new(),
            positions: BTreeMap::new(),
            holds: BTreeMap::new(),
        };
        for (r, h) in &mut self.history {
            if !h.files.is_empty() {
                // The chain: from the newest full snapshot at or before `e` to the file covering
                // `e`; older files are no longer needed by later checkpoints either.
                let upto = h
                    .files
                    .iter()
                    .position(|(c, _, _)| c.to >= e)
                    .expect("covers e");
                let base = h.files[..=upto]
                    .iter()
                    .rposition(|(_, f, _)| f.full)
                    .ok_or_else(|| format!("no full snapshot of '{r}' before checkpoint {e}"))?;
                h.files.drain(..base);
                let chain = h.files[..=upto - base]
                    .iter()
                    .map(|(_, f, _)| f.clone())
                    .collect();
                m.state.insert(r.clone(), chain);
                let holds = &h.files[upto - base].2;
                if !holds.is_empty() {
                    m.holds.insert(r.clone(), holds.clone());
                }
            }
            if !h.positions.is_empty() {
                let at = h
                    .positions
                    .iter()
                    .position(|(c, _)| c.to >= e)
                    .expect("covers e");
                h.positions.drain(..at);
                m.positions.insert(r.clone(), h.positions[0].1.clone());
            }
        }
        let deleted = self.store.commit(&m).map_err(|e| e.to_string())?;
        self.stats.deleted += deleted.len() as u64;
        self.stats.completed += 1;
        self.stats.latest = Some(e);
        let started = self.first_seen.range(..=e).next().map(|(_, t)| *t);
        if let Some(t) = started {
            self.stats.duration_ms.push(t.elapsed().as_secs_f64() * 1e3);
        }
        if let Some((live, reported)) = &mut self.live {
            let s = started.map_or(0.0, |t| t.elapsed().as_secs_f64());
            live.checkpoint_completed(s, self.stats.bytes - *reported);
            *reported = self.stats.bytes;
        }
        self.first_seen = self.first_seen.split_off(&(e + 1));
        self.committed = Some(e);
        if let Some((local, peers)) = &self.announce {
            local.set(e);
            let f = crate::net::payload::encode(
                crate::net::frame::Kind::Checkpoint,
                &super::Message::Committed(e),
            );
            for p in peers {
                // A closed connection fails the run on its own.
                p.send(f.clone());
            }
        }
        Ok(())
    }
}
