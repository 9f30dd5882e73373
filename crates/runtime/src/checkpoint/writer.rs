//! Filing reports: a stateful instance's snapshot becomes a file in the checkpoint store, written
//! by the process that owns the state; on processes other than 0 a writer thread does this and
//! tells process 0 what it filed (`Kind::Checkpoint` frames, `net/frame.rs`).

use super::coordinator::CheckpointStats;
use super::{Entry, Filed, Inbound, Payload, Report};
use crate::net::frame;
use crate::net::link::RemoteTx;
use crossbeam_channel::Receiver;
use std::sync::Arc;
use xorflow_state::checkpoint::CheckpointStore;

/// Writes the snapshot file of `r` (if it carries state) into `store`; returns what to commit.
///
/// # Errors
/// The file could not be written, naming it.
pub(crate) fn file(store: &CheckpointStore, r: Report) -> Result<Filed, String> {
    let entry = match r.payload {
        Payload::State(delta, holds) => {
            let file = store
                .write_snapshot(&r.reporter, r.covered.to, &delta)
                .map_err(|e| e.to_string())?;
            Entry::State { file, holds }
        }
        Payload::Position(p) => Entry::Position(p),
    };
    Ok(Filed {
        reporter: r.reporter,
        covered: r.covered,
        entry,
    })
}

/// The checkpoint thread of a process other than 0.
pub(crate) struct Writer {
    store: Arc<CheckpointStore>,
    leader: RemoteTx,
}

impl Writer {
    /// A writer filing into `store` and reporting to process 0 over `leader`.
    pub(crate) fn new(store: Arc<CheckpointStore>, leader: RemoteTx) -> Self {
        Writer { store, leader }
    }

    /// Files every local report until told to stop. The frames go out on the connection to
    /// process 0 before this process's end-of-run report, so process 0 has them all when the
    /// run ends.
    ///
    /// # Errors
    /// A file that could not be written; a message only process 0 should get.
    pub(crate) fn run(self, rx: Receiver<Inbound>) -> Result<CheckpointStats, String> {
        while let Ok(m) = rx.recv() {
            match m {
                Inbound::Report(r) => {
                    let f = file(&self.store, r)?;
                    // A closed connection fails the run on its own.
                    self.leader.send(crate::net::payload::encode(
                        frame::Kind::Checkpoint,
                        &super::Message::Filed(f),
                    ));
                }
                Inbound::Filed(f) => {
                    return Err(format!(
                        "another process's checkpoint report (for '{}') reached a process other \
                         than 0",
                        f.reporter
                    ))
                }
                Inbound::Stop => break,
            }
        }
        Ok(CheckpointStats::default())
    }
}
