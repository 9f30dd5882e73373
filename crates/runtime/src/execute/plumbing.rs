//! The queues a process sets up before it starts: one frame queue per remote process (drained by
//! the transport's writer) and one frontier inbox per local worker.

use crate::net::link::RemoteTx;
use crate::progress::frontiers::Notification;
use bytes::Bytes;
use crossbeam_channel::{Receiver, Sender};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};

/// The frame queues to every other process (`None` at this process's own index).
pub(crate) struct RemoteQueues {
    /// Sending ends, for the transport (it also answers handshakes through them).
    pub txs: Vec<Option<UnboundedSender<Bytes>>>,
    /// Receiving ends, drained by the transport's writers.
    pub rxs: Vec<Option<UnboundedReceiver<Bytes>>>,
    /// The sending ends as the runtime uses them.
    pub handles: Vec<Option<RemoteTx>>,
}

impl RemoteQueues {
    /// Queues from process `me` to each of `processes` processes.
    pub fn new(processes: usize, me: usize) -> Self {
        let (mut txs, mut rxs) = (Vec::new(), Vec::new());
        for j in 0..processes {
            if j == me {
                txs.push(None);
                rxs.push(None);
            } else {
                let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
                txs.push(Some(tx));
                rxs.push(Some(rx));
            }
        }
        let handles = txs
            .iter()
            .enumerate()
            .map(|(j, t)| t.clone().map(|t| RemoteTx::new(j, t)))
            .collect();
        RemoteQueues { txs, rxs, handles }
    }

    /// The other processes running workers (frontier frames go to them; tracker processes have
    /// no workers to notify).
    pub fn worker_remotes(&self, worker_processes: usize) -> Vec<RemoteTx> {
        self.handles
            .iter()
            .flatten()
            .filter(|p| p.process < worker_processes)
            .cloned()
            .collect()
    }
}

/// One frontier inbox per local worker.
pub(crate) fn inboxes(workers: usize) -> (Vec<Sender<Notification>>, Vec<Receiver<Notification>>) {
    (0..workers).map(|_| crossbeam_channel::unbounded()).unzip()
}
