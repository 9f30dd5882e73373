//! Running a built job: resolve the cluster and this process's place in it, wire the channels,
//! create the vertex instances, set up trAcker, start the transport, run the worker threads, then
//! rank errors or merge the reports.
//!
//! One concept per file: [`placement`] (who runs what), [`plumbing`] (queues to remote processes and frontier
//! inboxes), [`tracking`] (shards and the process acker), [`threads`] (worker threads),
//! [`outcome`] (root cause or merged report), [`job_id`] (what the handshake compares).

mod job_id;
mod outcome;
pub(crate) mod placement;
mod plumbing;
mod restart;
mod threads;
mod tracking;

pub(crate) use restart::run_built;

// `Dataflow::run` lives here, in the execution layer, so that the builder API (`dataflow/`)
// does not use the layer that runs it (docs/design.md, "Layers").
impl crate::dataflow::Dataflow {
    /// Runs the dataflow to completion on `config.workers` threads (plus one tracker thread with
    /// trAcker) and reports counters, traffic and latency.
    ///
    /// # Errors
    /// [`RunError::Vertex`] naming the vertex/worker that failed (e.g. a sink's I/O error),
    /// [`RunError::Panic`] if user code panicked, [`RunError::Tracker`] on a malformed flush.
    pub fn run(self) -> Result<RunReport, RunError> {
        run_built(self.take_built())
    }
}

use crate::config::RuntimeConfig;
use crate::dataflow::Builder;
use crate::error::{ClusterError, RunError};
use crate::net::cluster::Resolved;
use crate::net::frame::Kind;
use crate::net::link::Wiring;
use crate::net::transport::{self, Delivery, Failure, Identity, TransportHandle};
use crate::net::worker_reads::{Handover, NetReads, WorkerSockets};
use crate::operators::Vertex;
use crate::progress::inlets::{AckInlet, FrontierInlet};
use crate::progress::mode::runs_tracker;
use crate::report::RunReport;
use crate::wake::Unparkers;
use crate::worker::ctx::WorkerCtx;
use crate::worker::Worker;
use placement::Placement;
use plumbing::RemoteQueues;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tracking::{ProgressSetup, ShardContext};
use xorflow_core::GraphDesc;
use xorflow_tracking::Topology;

/// Runs the job `b` describes in this process once, to completion or failure; also says whether
/// a local worker finished its loop (its sinks may then have handed their output over).
///
/// # Errors
/// See [`crate::Dataflow::run`].
fn run_attempt(b: &mut Builder) -> (Result<RunReport, RunError>, bool) {
    let mut finished = false;
    let r = attempt(b, &mut finished);
    (r, finished)
}

fn attempt(b: &mut Builder, finished: &mut bool) -> Result<RunReport, RunError> {
    let mut config = b.config.clone();
    crate::progress::mode::check_cycles(&b.graph, config.tracking).map_err(RunError::Config)?;
    let topology = Topology::new(b.graph.component_upstream()).map_err(RunError::Config)?;
    let job = job_id::job_id(&b.graph, &config, config.cluster.total_processes());
    // Before any other process starts: process 0 claims the checkpoint directory and chooses
    // the checkpoint every process resumes from.
    let identity = job_id::identity(&b.graph, &config, config.cluster.total_processes());
    let prepared = crate::checkpoint::prepare(&mut config, job, &identity)?;
    let mut cluster = crate::net::cluster::resolve(&config.cluster).map_err(RunError::Cluster)?;
    // Served for this attempt; dropped (stopped) when it ends.
    let _live = start_live(b, &config, &cluster)?;
    let place = Placement::new(&config, &cluster);
    let unparkers = Arc::new(Unparkers::new(place.local_workers));
    let abort = Arc::new(AtomicBool::new(false));
    let workers_read = workers_read(&config, &place, &cluster);
    let remotes = RemoteQueues::new(
        place.processes,
        place.me,
        config.cluster.max_frame_bytes,
        (config.cluster.net_writes).in_process(place.local_workers, workers_read),
    );
    let wiring = Wiring::new(
        place.me,
        place.worker_processes,
        config.workers,
        remotes.handles.clone(),
        config.channel_capacity,
        config.max_credit_window(),
    );
    let (inbox_txs, inbox_rxs) = plumbing::inboxes(place.local_workers);
    let instances = instantiate(b, &wiring);
    let (epochs, interest) = epoch_domain(b, &config, &topology, &place);
    let progress = tracking::setup(
        &config,
        &place,
        ShardContext {
            topology: &topology,
            sources: b.sources,
            interest: &interest,
            epochs,
            inboxes: &inbox_txs,
            unparkers: &unparkers,
            remotes: &remotes.handles,
            worker_remotes: &remotes.worker_remotes(place.worker_processes),
        },
    );
    let failure = Failure {
        message: Arc::default(),
        abort: abort.clone(),
        unparkers: unparkers.clone(),
    };
    let total_workers = place.worker_processes * config.workers;
    debug_assert_eq!(job, job_id::job_id(&b.graph, &config, cluster.processes()));
    let to_leader = (place.me != 0)
        .then(|| remotes.handles[0].clone())
        .flatten();
    let checkpoints = match &prepared {
        Some(p) => {
            let peers = remotes.handles[1..].iter().flatten().cloned().collect();
            let stateful = (b.stateful.iter().enumerate())
                .filter(|(_, s)| **s)
                .map(|(v, _)| b.graph.vertices[v].name.as_str());
            let parts = crate::checkpoint::Participants {
                reporters: crate::checkpoint::Participants::reporters(
                    stateful,
                    total_workers,
                    b.sources,
                ),
                live: b.live.clone(),
                local_recovery: config.local_recovery,
            };
            let started = crate::checkpoint::start(parts, p, job, to_leader, peers);
            if let Ok(r) = &started {
                // A completed checkpoint wakes the workers: their sinks commit on it.
                r.wake_on_commit(unparkers.clone());
            }
            Some(started.inspect_err(|_| {
                outcome::reap(&mut cluster.children, true);
            })?)
        }
        None => None,
    };
    let resume = prepared.as_ref().and_then(|p| p.resume.clone());
    if let Some(r) = &resume {
        tracking::restore_holds(&config, &progress, r.holds()).map_err(RunError::Checkpoint)?;
    }
    let (handover, sockets) = worker_sockets(workers_read, &place, &mut cluster, &unparkers)?;
    let mut inlets = crate::net::payload::Inlets::default();
    inlets.register(
        Kind::Acks,
        Arc::new(AckInlet {
            shards: progress.agents.clone(),
        }),
    );
    inlets.register(
        Kind::Frontier,
        Arc::new(FrontierInlet {
            inboxes: inbox_txs,
            unparkers: unparkers.clone(),
        }),
    );
    if let Some(c) = &checkpoints {
        inlets.register(Kind::Checkpoint, Arc::new(c.inlet()));
    }
    let delivery = Delivery {
        routes: wiring.take_routes(),
        unparkers: unparkers.clone(),
        inlets,
        handover,
    };
    let transport = start_transport(&b.graph, &config, &mut cluster, remotes, delivery, &failure)?;
    let mut workers = make_workers(
        &config,
        &place,
        b,
        (instances, inbox_rxs, sockets),
        &progress,
        &abort,
        &unparkers,
    );
    if let Some(c) = &checkpoints {
        for w in &mut workers {
            w.ctx.checkpointer = Some(c.handle.clone());
            w.ctx.resume = resume.clone();
        }
    }
    drop(wiring);
    let run = threads::run(workers, &abort);
    *finished = run.results.iter().any(Result::is_ok);
    // A writer's frames must leave before this process's end-of-run report; process 0's
    // coordinator takes the other processes' reports until theirs have arrived.
    let (writer, coordinator) = match checkpoints {
        Some(c) if place.me != 0 => (Some(c), None),
        c => (None, c),
    };
    let written = writer.map(crate::checkpoint::Running::finish).transpose();
    if place.is_tracker_process() {
        // No workers here: the process is finished once every shard it hosts has seen the end
        // of every component (nothing more will arrive or need notifying), or the job failed.
        while !abort.load(Ordering::Relaxed)
            && !progress.agents.iter().flatten().all(|a| a.is_done())
        {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    let report = finish(
        b.graph.clone(),
        &config,
        place,
        cluster,
        transport,
        progress,
        run,
        &failure,
    );
    let stats = coordinator
        .map(crate::checkpoint::Running::finish)
        .transpose();
    let mut report = report?;
    written?;
    report.checkpoints = stats?.flatten();
    // The run finished: its checkpoints are marked so, so that the same command starts afresh
    // instead of being refused, and `--resume` says there is nothing to continue.
    if let (Some(p), 0) = (&prepared, report.process) {
        (p.store.mark_finished()).map_err(|e| RunError::Checkpoint(e.to_string()))?;
    }
    Ok(report)
}

/// The checkpoint epochs trAcker tracks (with trAcker and a checkpoint interval), and the
/// components notified (epoch components are notified where their event-time ones are). Emitters
/// are the instances of vertices with deferred output (windows): per such vertex in creation
/// order, one per worker of the job in worker order (`operators/window.rs` derives its id the
/// same way).
fn epoch_domain(
    b: &Builder,
    config: &RuntimeConfig,
    topology: &Topology,
    place: &Placement,
) -> (Option<xorflow_tracking::EpochDomain>, Vec<bool>) {
    if !runs_tracker(config.tracking) || config.checkpoint_interval.is_none() {
        return (None, b.interest.clone());
    }
    let workers = place.worker_processes * config.workers;
    let mut emitters = Vec::new();
    for (v, _) in b.deferred.iter().enumerate().filter(|(_, d)| **d) {
        // Instance `w` of a window with a component per instance emits in its own.
        let d = &b.graph.vertices[v];
        let per_instance = d.instance_components > 0;
        emitters
            .extend((0..workers).map(|w| d.component + if per_instance { w as u32 } else { 0 }));
    }
    let domain = xorflow_tracking::EpochDomain {
        components: topology.len(),
        sources: b.sources,
        emitters,
    };
    let interest = b.interest.iter().chain(&b.interest).copied().collect();
    (Some(domain), interest)
}

/// Starts the live metrics and their server (`--metrics-addr`; process `p` listens on the port
/// plus `p`, so processes can share a host, and process 0, which shows the whole job, knows where
/// each other process serves: on its cluster address's host, `measure/live/job.rs`), and puts
/// them on `b`.
///
/// # Errors
/// The address cannot be bound.
fn start_live(
    b: &mut Builder,
    config: &RuntimeConfig,
    cluster: &Resolved,
) -> Result<Option<crate::measure::live::LiveSetup>, RunError> {
    b.live = None;
    let Some(mut addr) = config.metrics_addr else {
        return Ok(None);
    };
    let base = addr.port();
    if base != 0 {
        addr.set_port(base.saturating_add(cluster.process as u16));
    }
    // Port 0 (any free port) leaves process 0 nowhere to ask.
    let peers = match (cluster.process, base) {
        (0, 1..) => (1..cluster.processes())
            .map(|p| {
                let ip = match cluster.addrs[p].ip() {
                    ip if ip.is_unspecified() => std::net::Ipv4Addr::LOCALHOST.into(),
                    ip => ip,
                };
                (
                    p,
                    std::net::SocketAddr::new(ip, base.saturating_add(p as u16)),
                )
            })
            .collect(),
        _ => Vec::new(),
    };
    let (graph, tps) = (b.graph.clone(), config.time_per_second);
    let setup = crate::measure::live::LiveSetup::start(addr, graph, cluster.process, peers, tps)?;
    for cause in &b.restart_causes {
        setup.live.restarted(cause);
    }
    b.live = Some(setup.live.clone());
    Ok(Some(setup))
}

/// Every vertex's instance for every local worker, `[local worker][vertex]`.
fn instantiate(b: &mut Builder, wiring: &Wiring) -> Vec<Vec<Box<dyn Vertex>>> {
    let instances: Vec<Vec<Box<dyn Vertex>>> = wiring
        .local_workers()
        .map(|w| b.factories.iter_mut().map(|f| f(w, wiring)).collect())
        .collect();
    debug_assert!(instances.iter().flatten().all(|v| v
        .notified_component()
        .is_none_or(|c| b.interest[c as usize])));
    instances
}

/// Starts the transport when the job spans processes (none in a single process).
fn start_transport(
    graph: &GraphDesc,
    config: &RuntimeConfig,
    cluster: &mut Resolved,
    remotes: RemoteQueues,
    delivery: Delivery,
    failure: &Failure,
) -> Result<Option<TransportHandle>, RunError> {
    let Some(listener) = cluster.listener.take() else {
        return Ok(None);
    };
    let id = Identity {
        process: cluster.process,
        addrs: cluster.addrs.clone(),
        job_id: job_id::job_id(graph, config, cluster.processes()),
        token: cluster.token.clone(),
    };
    let cfg = &config.cluster;
    match transport::start(
        id,
        listener,
        cfg,
        remotes.outboxes,
        delivery,
        failure.clone(),
    ) {
        Ok(t) => Ok(Some(t)),
        Err(e) => {
            outcome::reap(&mut cluster.children, true);
            Err(RunError::Cluster(e))
        }
    }
}

/// Whether this process's workers read its connections: `--net-reads worker`, in a job across
/// processes, in a process with workers, and without an injected delay (the network thread's
/// timers hold delayed frames back; `net/worker_reads.rs`).
fn workers_read(config: &RuntimeConfig, place: &Placement, cluster: &Resolved) -> bool {
    config.cluster.net_reads == NetReads::Worker
        && config.cluster.delay.is_none()
        && cluster.listener.is_some()
        && place.local_workers > 0
}

/// When `workers_read`: the hand-over of connections to the local workers and each worker's
/// sockets (`net/worker_reads.rs`); otherwise none.
///
/// # Errors
/// A worker's `epoll` cannot be created.
#[allow(clippy::type_complexity)]
fn worker_sockets(
    workers_read: bool,
    place: &Placement,
    cluster: &mut Resolved,
    unparkers: &Arc<Unparkers>,
) -> Result<(Option<Arc<Handover>>, Vec<Option<WorkerSockets>>), RunError> {
    if !workers_read {
        return Ok((None, (0..place.local_workers).map(|_| None).collect()));
    }
    let handover = Handover::new(place.local_workers, unparkers.clone());
    let sockets = (0..place.local_workers)
        .map(|w| WorkerSockets::new(handover.clone(), w).map(Some))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| {
            outcome::reap(&mut cluster.children, true);
            let why = format!("cannot wait on connections in a worker (epoll): {e}");
            RunError::Cluster(ClusterError::Start(why))
        })?;
    Ok((Some(handover), sockets))
}

/// What each local worker gets: its vertex instances, its frontier inbox and (with
/// `--net-reads worker`) the sockets it reads, `[local worker]` each.
type PerWorker = (
    Vec<Vec<Box<dyn Vertex>>>,
    Vec<std::sync::Arc<crate::progress::frontier_inbox::FrontierInbox>>,
    Vec<Option<WorkerSockets>>,
);

/// The local workers, each with its vertex instances, frontier inbox, ack hand-off and sockets.
fn make_workers(
    config: &RuntimeConfig,
    place: &Placement,
    b: &Builder,
    (instances, inboxes, sockets): PerWorker,
    progress: &ProgressSetup,
    abort: &Arc<AtomicBool>,
    unparkers: &Arc<Unparkers>,
) -> Vec<Worker> {
    let total_workers = place.worker_processes * config.workers;
    let tracking = runs_tracker(config.tracking);
    let components = b.graph.components();
    // One writer thread per process for every channel its workers open.
    let logs =
        (config.event_log.clone()).map(|c| xorflow_measure::log::Logs::new(c, place.me as u32));
    instances
        .into_iter()
        .zip(inboxes.into_iter().zip(sockets))
        .enumerate()
        .map(|(wl, (vertices, (inbox, sockets)))| {
            let w = place.me * place.local_workers + wl;
            let mut ctx = WorkerCtx::new(
                w,
                wl,
                total_workers,
                config,
                components,
                b.sources,
                unparkers.clone(),
            );
            ctx.logs = logs.clone();
            let now = crate::measure::clock::now_ns();
            let cpu = crate::measure::cpu::WorkerClock::new(vertices.len());
            Worker {
                live: b.live.as_ref().map(|l| l.worker(w)),
                ctx,
                vertices,
                handoff: progress
                    .acker
                    .clone()
                    .map(|a| crate::progress::handoff::Handoff::new(a, now)),
                inbox: tracking.then_some(inbox),
                abort: abort.clone(),
                cpu,
                sockets,
                pass_on: false,
            }
        })
        .collect()
}

/// Ranks errors or merges the reports; ends the transport and reaps local children either way.
#[allow(clippy::too_many_arguments)]
fn finish(
    graph: GraphDesc,
    config: &RuntimeConfig,
    place: Placement,
    mut cluster: Resolved,
    transport: Option<TransportHandle>,
    progress: ProgressSetup,
    mut run: ThreadsRunArg,
    failure: &Failure,
) -> Result<RunReport, RunError> {
    let results = std::mem::take(&mut run.results);
    let ok = match outcome::rank_errors(results, failure) {
        Ok(ok) => ok,
        Err(e) => {
            if let Some(t) = transport {
                t.abort(format!("process {}: {e}", place.me));
            }
            outcome::reap(&mut cluster.children, true);
            return Err(e);
        }
    };
    let acker = progress.acker.as_deref();
    let mut m = outcome::merge_local(&graph, ok, &progress.agents, acker);
    let mut per_process = Vec::new();
    let mut elapsed = run.elapsed;
    if let Some(t) = transport {
        let local = outcome::process_report(place.me, &run, &m);
        let gathered = outcome::gather(t, local, &mut m, elapsed);
        let (pp, e) = gathered.inspect_err(|_| {
            outcome::reap(&mut cluster.children, true);
        })?;
        (per_process, elapsed) = (pp, e);
        if let Some(e) = outcome::reap(&mut cluster.children, false) {
            return Err(RunError::Cluster(ClusterError::Lost(e)));
        }
    }
    outcome::settle(&mut m);
    let cpu = outcome::process_cpu(place.me, &run, &m, &per_process);
    if let (Some(log), Some(clock), 0) = (&config.event_log, &m.clock, place.me) {
        // The event logs' reader converts their ticks with it (`xorflow log hops`).
        write_clock(log.dir(), clock)?;
    }
    Ok(RunReport {
        elapsed,
        workers: place.local_workers,
        processes: place.processes,
        process: place.me,
        tracking: config.tracking,
        granularity: config.granularity,
        tracker_shards: config.tracker_shards,
        tracker_processes: place.tracker_processes,
        traffic: m.traffic,
        per_process,
        vertices: m.vertices,
        tracker: m.tracker,
        checkpoints: None,
        graph,
        clock: m.clock,
        cpu,
    })
}

type ThreadsRunArg = threads::ThreadsRun;

/// Writes the run's clock alignment to `DIR/clock.json` (through a temporary file).
///
/// # Errors
/// The file cannot be written, naming it.
fn write_clock(
    dir: &std::path::Path,
    clock: &xorflow_measure::clock::Alignment,
) -> Result<(), RunError> {
    let path = dir.join(CLOCK_FILE);
    let tmp = dir.join(format!("{CLOCK_FILE}.partial"));
    let json = serde_json::to_vec_pretty(clock).expect("an alignment serializes");
    std::fs::create_dir_all(dir)
        .and_then(|()| std::fs::write(&tmp, json))
        .and_then(|()| std::fs::rename(&tmp, &path))
        .map_err(|e| RunError::Config(format!("cannot write '{}': {e}", path.display())))
}

/// The clock alignment's file in the event-log folder.
pub const CLOCK_FILE: &str = "clock.json";
