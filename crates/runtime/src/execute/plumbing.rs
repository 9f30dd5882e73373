//! The queues a process sets up before it starts: one outbox per remote process (written by the
//! senders or the transport's writer, `net/outbox.rs`) and one frontier inbox per local worker.

use crate::net::link::RemoteTx;
use crate::net::outbox::{NetWrites, Outbox};
use crate::progress::frontier_inbox::FrontierInbox;
use std::sync::Arc;

/// The outboxes to every other process (`None` at this process's own index).
pub(crate) struct RemoteQueues {
    /// The outboxes, for the transport (it attaches the connections and broadcasts through them).
    pub outboxes: Vec<Option<Arc<Outbox>>>,
    /// The sending ends as the runtime uses them.
    pub handles: Vec<Option<RemoteTx>>,
}

impl RemoteQueues {
    /// Outboxes from process `me` to each of `processes` processes, refusing frames over
    /// `max_frame` bytes, written as `writes` says.
    pub fn new(processes: usize, me: usize, max_frame: usize, writes: NetWrites) -> Self {
        let outboxes: Vec<_> = (0..processes)
            .map(|j| (j != me).then(|| Arc::new(Outbox::new(j, max_frame, writes))))
            .collect();
        let handles = outboxes
            .iter()
            .enumerate()
            .map(|(j, o)| o.clone().map(|o| RemoteTx::new(j, o)))
            .collect();
        RemoteQueues { outboxes, handles }
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

/// One frontier inbox per local worker (its writers' handles and its reader's: the same).
pub(crate) fn inboxes(workers: usize) -> (Vec<Arc<FrontierInbox>>, Vec<Arc<FrontierInbox>>) {
    let all: Vec<Arc<FrontierInbox>> = (0..workers).map(|_| Arc::default()).collect();
    (all.clone(), all)
}
