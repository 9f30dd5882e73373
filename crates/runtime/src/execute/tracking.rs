//! Setting up trAcker for a process: the tracker shards it hosts and the process acker routing
//! flushes to every shard, or to every replica of it (`progress/`, `config/mod.rs`'s `TrackerLayout`).

use super::placement::Placement;
use crate::config::{RuntimeConfig, TrackerLayout};
use crate::net::link::RemoteTx;
use crate::progress::flush_policy::FlushPolicy;
use crate::progress::frontier_inbox::FrontierInbox;
use crate::progress::process_acker::{ProcessAcker, ShardRoute};
use crate::progress::tracker_agent::TrackerAgent;
use crate::wake::Unparkers;
use std::sync::Arc;
use xorflow_tracking::{EpochDomain, Granularity, ShardMap, Topology, Tracker};

/// The shards hosted here (by shard index, `None` elsewhere) and the process acker.
pub(crate) struct ProgressSetup {
    pub agents: Vec<Option<Arc<TrackerAgent>>>,
    pub acker: Option<Arc<ProcessAcker>>,
}

/// What the shards need to know and whom they notify.
pub(crate) struct ShardContext<'a> {
    pub topology: &'a Topology,
    /// Source instances in the job.
    pub sources: usize,
    /// Per component: some vertex acts on its frontier (epoch components after the others).
    pub interest: &'a [bool],
    /// Checkpoint epochs, tracked beside event time, if the job checkpoints.
    pub epochs: Option<EpochDomain>,
    /// This process's workers' frontier inboxes.
    pub inboxes: &'a [Arc<FrontierInbox>],
    pub unparkers: &'a Arc<Unparkers>,
    /// The connection to each process (`None` for this one).
    pub remotes: &'a [Option<RemoteTx>],
    /// The other worker processes, notified by frontier frames.
    pub worker_remotes: &'a [RemoteTx],
}

/// Creates the shards `place` assigns to this process and the process acker (nothing without
/// trAcker).
pub(crate) fn setup(config: &RuntimeConfig, place: &Placement, cx: ShardContext) -> ProgressSetup {
    let shards = config.tracker_shards;
    let mut agents: Vec<Option<Arc<TrackerAgent>>> = vec![None; shards];
    if !crate::progress::mode::runs_tracker(config.tracking) {
        return ProgressSetup {
            agents,
            acker: None,
        };
    }
    let g = Granularity::new(config.granularity);
    let replicated = config.tracker_layout == TrackerLayout::Replicated;
    let regions = config.tracker_regions.as_ref();
    let replica_hosts =
        regions.map_or_else(|| (0..place.worker_processes).collect(), |r| r.hosts());
    // The worker processes a shard hosted here notifies by frontier frames: replicated, the
    // rest of this replica's region (none when every process has a replica); else all others.
    let notified: Vec<RemoteTx> = match (replicated, regions) {
        (true, None) => Vec::new(),
        (true, Some(r)) => (cx.worker_remotes.iter())
            .filter(|p| p.process != place.me && r.region_of_host(place.me).contains(&p.process))
            .cloned()
            .collect(),
        (false, _) => cx.worker_remotes.to_vec(),
    };
    let mut routes = Vec::new();
    for (k, agent) in agents.iter_mut().enumerate() {
        let hosts: Vec<usize> = if replicated {
            replica_hosts.clone()
        } else {
            vec![place.shard_host(k)]
        };
        let remotes = hosts
            .iter()
            .filter(|&&h| h != place.me)
            .map(|&h| cx.remotes[h].clone().expect("shard host has a connection"))
            .collect();
        let local = hosts.contains(&place.me).then(|| {
            let a = Arc::new(shard_agent(g, shards, k, &cx, notified.clone()));
            *agent = Some(a.clone());
            a
        });
        routes.push(ShardRoute { local, remotes });
    }
    let policy = FlushPolicy::of(config);
    let acker = ProcessAcker::new(g, cx.sources, routes, policy, config.ack_multiplier);
    ProgressSetup {
        agents,
        acker: Some(Arc::new(acker)),
    }
}

/// Shard `k`'s tracker, notifying this process's workers and the worker processes `notified`.
fn shard_agent(
    g: Granularity,
    shards: usize,
    k: usize,
    cx: &ShardContext,
    notified: Vec<RemoteTx>,
) -> TrackerAgent {
    let map = ShardMap::new(shards as u64, k as u64);
    let mut tracker = Tracker::sharded(g, cx.topology.clone(), cx.sources, map);
    if let Some(d) = &cx.epochs {
        tracker = tracker.with_epochs(d.clone());
    }
    TrackerAgent::new(
        k as u32,
        tracker,
        cx.interest.to_vec(),
        cx.inboxes.to_vec(),
        cx.unparkers.clone(),
        notified,
    )
}

/// A resumed job: XORs the holds of its checkpoint (restored windows' pending results,
/// `operators/window.rs`) into the shards before any worker runs, as the windows did when they
/// opened those windows. Heartbeats start at 0, so no frontier can pass a hold before this.
///
/// Every process reads the same checkpoint and gives each shard (or replica) it hosts that
/// shard's piece.
///
/// # Errors
/// A hold for a component the job does not have (the checkpoint is not this job's).
pub(crate) fn restore_holds<'a>(
    config: &RuntimeConfig,
    progress: &ProgressSetup,
    holds: impl Iterator<Item = &'a xorflow_state::checkpoint::Hold>,
) -> Result<(), String> {
    if progress.acker.is_none() {
        return Ok(());
    }
    let mut acker = xorflow_tracking::LocalAcker::new(Granularity::new(config.granularity));
    for h in holds {
        acker.xor_slots(h.component, h.slot, h.slot, h.tag);
    }
    let flush = acker.flush();
    if flush.is_empty() {
        return Ok(());
    }
    let pieces = xorflow_tracking::split_flush(&flush, config.tracker_shards as u64);
    for (k, piece) in pieces.iter().enumerate() {
        let Some(agent) = &progress.agents[k] else {
            continue;
        };
        agent
            .deliver(piece)
            .map_err(|e| format!("restoring the checkpoint's holds: {e}"))?;
    }
    Ok(())
}
