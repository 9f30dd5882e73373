//! The receivers of trAcker's frames as the transport delivers them (`net/payload.rs`): ack
//! pieces go to the tracker shard hosted here, frontiers to every local worker's inbox.

use super::frontier_inbox::FrontierInbox;
use super::tracker_agent::TrackerAgent;
use crate::net::frame::{read_acks, read_frontier};
use crate::net::payload::Inlet;
use crate::wake::Unparkers;
use std::sync::Arc;

/// `Kind::Acks`: a process acker's piece for a shard hosted here.
pub struct AckInlet {
    /// Tracker shards hosted here, by shard index.
    pub shards: Vec<Option<Arc<TrackerAgent>>>,
}

impl Inlet for AckInlet {
    fn take(&self, f: &[u8]) -> Result<(), String> {
        let (shard, piece) = read_acks(f)?;
        let agent = (self.shards.get(shard as usize).and_then(Option::as_ref))
            .ok_or_else(|| format!("acks for shard {shard}, not hosted here"))?;
        agent.deliver(&piece)
    }
}

/// `Kind::Frontier`: a shard's frontier updates, for every worker of this process.
pub struct FrontierInlet {
    /// Frontier inboxes of this process's workers.
    pub inboxes: Vec<Arc<FrontierInbox>>,
    /// Wakes the workers.
    pub unparkers: Arc<Unparkers>,
}

impl Inlet for FrontierInlet {
    fn take(&self, f: &[u8]) -> Result<(), String> {
        let (shard, ups) = read_frontier(f)?;
        for (w, inbox) in self.inboxes.iter().enumerate() {
            if inbox.offer(shard, &ups) {
                self.unparkers.unpark(w);
            }
        }
        Ok(())
    }
}
