//! The network transport: two TCP connections per pair of processes, one per direction, on a
//! tokio runtime in one thread per process.
//!
//! Start: every process connects to every other (retrying until the start-up timeout) and accepts
//! a connection from each; on each, both sides exchange a [`Hello`] (magic, protocol version, job
//! id, process index, cluster token) and check it. A process writes only on the connection it
//! made and reads only on the one it accepted, so no socket is written and read by two threads
//! at once (`outbox.rs`). A connection that fails the check, sends garbage or an oversized frame,
//! or says nothing within the handshake timeout is refused and logged; the listener keeps running
//! and refuses every later stranger the same way, so nobody can disturb a running job.
//!
//! Run: frames to a remote process go through its outbox (`outbox.rs`): written by the sending
//! thread itself when the socket takes them, otherwise by the connection's writer task, which
//! also sends a Ping every third of the peer timeout. What arrives from a remote process is read
//! by one of this process's workers (`worker_reads.rs`, the default) or by a reader task on the
//! network thread (`reading.rs`), and routed: batches into the receiving worker's inbound queue,
//! credits to the sender's counter, ack pieces to the shard hosted here, frontiers to every local
//! worker's inbox.
//!
//! Clock alignment (`clock_phase.rs`): once every connection is up, and again once every process
//! said Done, every process runs ping-pongs against every other on these connections; the
//! transport is ready only after the first, and process 0 gets everyone's results after the
//! second ([`Outcome::clock`]).
//!
//! End: when this process's workers are done it sends Done (process 0 gets the report) and waits for
//! Done from everyone. A process whose connection closes before its Done, that sends Abort, or that
//! stays silent longer than the peer timeout fails the job: the error names the process and its
//! address, and the workers are stopped.

use super::clock_phase::{self, ClockReport, ClockSource, PeerIo, AFTER, BEFORE};
use super::cluster::ClusterConfig;
use super::frame::{self, Hello, Kind, PROTOCOL_VERSION};
use super::link::Routes;
use super::outbox::Outbox;
use super::reading::{read_loop, ReadCtx};
use crate::error::ClusterError;
use crate::measure::traffic::{MessageKind, Traffic};
use crate::wake::Unparkers;
use futures_util::{SinkExt, StreamExt};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};
use tokio::time::{sleep, timeout, Instant};
use tokio_util::codec::{Framed, FramedRead, LengthDelimitedCodec};
use xorflow_measure::clock::anchor::{Anchor, AnchorMap};
use xorflow_measure::clock::sample::MinRtt;
use xorflow_measure::clock::{Alignment, PairSamples};

/// How long a new connection may take to present its handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);

/// What arriving frames are delivered to.
pub struct Delivery {
    /// Inbound queues and credit counters of remote channels.
    pub routes: Routes,
    /// Wakes this process's workers.
    pub unparkers: Arc<Unparkers>,
    /// The receivers of payload frames (acks, frontiers, checkpoint messages), registered by
    /// their users (`payload.rs`).
    pub inlets: super::payload::Inlets,
    /// Where connections go to be read by the workers (`--net-reads worker`,
    /// `worker_reads.rs`); `None`: the network thread reads them.
    pub(crate) handover: Option<Arc<super::worker_reads::Handover>>,
}

/// Identity checked in every handshake.
#[derive(Clone, Debug)]
pub struct Identity {
    /// This process.
    pub process: usize,
    /// Listening address per process.
    pub addrs: Vec<SocketAddr>,
    /// Job id (hash of graph and configuration).
    pub job_id: u64,
    /// Cluster token.
    pub token: String,
}

/// Instructions from the runtime to the transport.
pub enum Control {
    /// Local workers are done; `report` goes to process 0 in the Done frame.
    Finish(Vec<u8>),
    /// This process failed; tell the others.
    Abort(String),
}

/// What the transport hands back at the end.
#[derive(Default)]
pub struct Outcome {
    /// Reports received in Done frames, by process (process 0 only).
    pub reports: Vec<Option<Vec<u8>>>,
    /// Control frames this process sent (handshakes, keep-alives, clock alignment, Done, Abort).
    pub traffic: Traffic,
    /// Every process's clock aligned to process 0's (process 0 only; `None` when the after-run
    /// alignment failed, which is logged and does not fail the run).
    pub clock: Option<xorflow_measure::clock::Alignment>,
}

/// A running transport.
pub struct TransportHandle {
    control: UnboundedSender<Control>,
    thread: Option<std::thread::JoinHandle<Result<Outcome, String>>>,
}

impl TransportHandle {
    /// Tells the transport the workers finished and waits for every other process's Done.
    ///
    /// # Errors
    /// Another process failed or died first ([`ClusterError::Lost`]).
    pub fn finish(mut self, report: Vec<u8>) -> Result<Outcome, ClusterError> {
        let _ = self.control.send(Control::Finish(report));
        self.join().map_err(ClusterError::Lost)
    }

    /// Tells the other processes this one failed, then stops.
    pub fn abort(mut self, reason: String) {
        let _ = self.control.send(Control::Abort(reason));
        let _ = self.join();
    }

    fn join(&mut self) -> Result<Outcome, String> {
        match self.thread.take().map(std::thread::JoinHandle::join) {
            Some(Ok(r)) => r,
            Some(Err(_)) => Err("network thread panicked".into()),
            None => Err("transport already stopped".into()),
        }
    }
}

/// Shared failure state: the first error, the abort flag the workers watch.
#[derive(Clone)]
pub struct Failure {
    /// First error seen by the transport.
    pub message: Arc<Mutex<Option<String>>>,
    /// Set to stop the workers.
    pub abort: Arc<AtomicBool>,
    /// Wakes the workers so they notice.
    pub unparkers: Arc<Unparkers>,
}

impl Failure {
    /// Records the first error and stops the workers, then logs it. In that order: logging can
    /// fail (a closed stderr made it panic, which used to leave the workers running forever in
    /// an orphaned child process).
    fn fail(&self, msg: String) {
        // The first error is kept; a message already recorded is not logged twice.
        let repeated = {
            let mut m = self.message.lock().unwrap_or_else(PoisonError::into_inner);
            match &*m {
                Some(first) => *first == msg,
                None => {
                    *m = Some(msg.clone());
                    false
                }
            }
        };
        self.abort.store(true, Ordering::Relaxed);
        for w in 0..self.unparkers.0.len() {
            self.unparkers.unpark(w);
        }
        // A warning, not an error: the run may yet recover (a restart from a checkpoint), or
        // have been stopped on purpose; a run that fails says so once, in its exit message.
        if !repeated {
            tracing::warn!("{msg}");
        }
    }
}

/// Fails the run if the network thread ends before its work is done, a panic included: a
/// process whose transport is gone must not keep its workers waiting for it.
struct FailOnExit(Option<Failure>);

impl FailOnExit {
    /// The thread ends normally: nothing to do on exit.
    fn disarm(mut self) -> Failure {
        self.0.take().expect("armed until disarmed")
    }
}

impl Drop for FailOnExit {
    fn drop(&mut self) {
        if let Some(f) = self.0.take() {
            f.fail("the network thread stopped unexpectedly (it panicked)".into());
        }
    }
}

/// Connects to every other process and starts serving; returns once all connections are up.
///
/// `outboxes[j]` holds the frames for the connection to process `j` (`None` for this process).
///
/// # Errors
/// Processes missing at the start-up timeout or refusing this one ([`ClusterError::Connect`]),
/// or a network thread or runtime that cannot start ([`ClusterError::Start`]), naming the
/// processes.
pub fn start(
    id: Identity,
    listener: std::net::TcpListener,
    cfg: &ClusterConfig,
    outboxes: Vec<Option<Arc<Outbox>>>,
    delivery: Delivery,
    failure: Failure,
) -> Result<TransportHandle, ClusterError> {
    let cfg = cfg.clone();
    let (control_tx, control_rx) = unbounded_channel();
    let (ready_tx, ready_rx) = std::sync::mpsc::channel::<Result<(), String>>();
    let thread = std::thread::Builder::new()
        .name(format!("xorflow-net-{}", id.process))
        .spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| format!("cannot start the network runtime: {e}"))?;
            let on_exit = FailOnExit(Some(failure.clone()));
            let r = rt.block_on(async move {
                listener
                    .set_nonblocking(true)
                    .map_err(|e| format!("listener: {e}"))?;
                let listener =
                    TcpListener::from_std(listener).map_err(|e| format!("listener: {e}"))?;
                let mut traffic = Traffic::default();
                let clock = cfg.clock.clone().unwrap_or_else(ClockSource::process);
                let connected = connect_all(&id, &listener, &cfg, &mut traffic).await;
                let aligned = match connected {
                    Ok(mut links) => align_before(&id, &cfg, &clock, &mut links, &mut traffic)
                        .await
                        .map(|before| (links, before)),
                    Err(e) => Err(e),
                };
                let (links, before) = match aligned {
                    Ok(c) => {
                        let _ = ready_tx.send(Ok(()));
                        c
                    }
                    Err(e) => {
                        let _ = ready_tx.send(Err(e.clone()));
                        return Err(e);
                    }
                };
                let served = serve(
                    id,
                    listener,
                    cfg,
                    links,
                    outboxes,
                    delivery,
                    failure.clone(),
                    control_rx,
                    traffic,
                    (clock, before),
                )
                .await;
                if let Err(e) = &served {
                    // Whatever stopped serving stops the workers too.
                    failure.fail(e.clone());
                }
                served
            });
            on_exit.disarm();
            r
        })
        .map_err(|e| ClusterError::Start(format!("cannot start the network thread: {e}")))?;
    match ready_rx.recv() {
        Ok(Ok(())) => Ok(TransportHandle {
            control: control_tx,
            thread: Some(thread),
        }),
        Ok(Err(e)) => {
            let _ = thread.join();
            Err(ClusterError::Connect(e))
        }
        // The thread ended before connecting: its runtime or listener could not start.
        Err(_) => Err(ClusterError::Start(match thread.join() {
            Ok(Err(e)) => e,
            _ => "network thread failed at start".into(),
        })),
    }
}

/// The frame codec: a 4-byte big-endian length, then the frame; longer than `max` bytes is an
/// error.
fn codec(max: usize) -> LengthDelimitedCodec {
    LengthDelimitedCodec::builder()
        .max_frame_length(max)
        .new_codec()
}

type Conn = Framed<TcpStream, LengthDelimitedCodec>;

fn hello_of(id: &Identity) -> Hello {
    Hello {
        version: PROTOCOL_VERSION,
        job_id: id.job_id,
        process: id.process as u32,
        processes: id.addrs.len() as u32,
        token: id.token.clone(),
    }
}

/// Checks another process's handshake; returns its index.
fn check_hello(id: &Identity, h: &Hello) -> Result<usize, String> {
    if h.version != PROTOCOL_VERSION {
        return Err(format!(
            "protocol version {} (this process speaks {PROTOCOL_VERSION})",
            h.version
        ));
    }
    if h.token != id.token {
        return Err("wrong cluster token".into());
    }
    if h.job_id != id.job_id {
        return Err(format!(
            "different job (id {:016x}, this job is {:016x}): every process must run the same \
             dataflow and configuration",
            h.job_id, id.job_id
        ));
    }
    if h.processes as usize != id.addrs.len() {
        return Err(format!(
            "expects {} processes, this job has {}",
            h.processes,
            id.addrs.len()
        ));
    }
    let p = h.process as usize;
    if p >= id.addrs.len() || p == id.process {
        return Err(format!("claims to be process {p}"));
    }
    Ok(p)
}

async fn read_hello(conn: &mut Conn) -> Result<Hello, String> {
    match timeout(HANDSHAKE_TIMEOUT, conn.next()).await {
        Err(_) => Err("no handshake within 5 s".into()),
        Ok(None) => Err("closed before its handshake".into()),
        Ok(Some(Err(e))) => Err(format!("unreadable handshake: {e}")),
        Ok(Some(Ok(f))) if f.first() == Some(&(Kind::Abort as u8)) => {
            Err(String::from_utf8_lossy(&f[1..]).into_owned())
        }
        Ok(Some(Ok(f))) => Hello::decode(&f),
    }
}

/// Why an accepted connection was refused.
enum Refusal {
    /// Not one of ours: log and go on.
    Stranger(String),
    /// One of ours, configured differently: the job cannot run.
    Fatal(String),
}

/// Handshake of an accepted connection: the other process's index and the connection.
async fn accept_handshake(
    stream: TcpStream,
    id: &Identity,
    max: usize,
) -> Result<(usize, Conn), Refusal> {
    let _ = stream.set_nodelay(true);
    // Small frames only until the other side has proven itself.
    let mut conn = Framed::new(stream, codec(max.min(64 << 10)));
    let h = read_hello(&mut conn).await.map_err(Refusal::Stranger)?;
    let p = match check_hello(id, &h) {
        Ok(p) => p,
        Err(e) => {
            // A process with the right token but a different job is a misconfigured cluster, not
            // a stranger: tell it why, so it fails at once with the reason, and fail too.
            // Strangers get no answer.
            if h.token == id.token {
                let _ = timeout(
                    Duration::from_secs(1),
                    conn.send(frame::simple(
                        Kind::Abort,
                        format!("refused: {e}").as_bytes(),
                    )),
                )
                .await;
            }
            return Err(if h.token == id.token {
                Refusal::Fatal(format!("process {} is not in this job: {e}", h.process))
            } else {
                Refusal::Stranger(e)
            });
        }
    };
    conn.send(hello_of(id).encode())
        .await
        .map_err(|e| Refusal::Stranger(e.to_string()))?;
    Ok((p, conn))
}

async fn connect_to(j: usize, id: Identity, deadline: Instant) -> Result<(usize, Conn), String> {
    let addr = id.addrs[j];
    let stream = loop {
        match TcpStream::connect(addr).await {
            Ok(s) => break s,
            Err(e) if Instant::now() >= deadline => {
                return Err(format!("cannot connect to process {j} at {addr}: {e}"))
            }
            Err(_) => sleep(Duration::from_millis(50)).await,
        }
    };
    let _ = stream.set_nodelay(true);
    let mut conn = Framed::new(stream, codec(64 << 10));
    conn.send(hello_of(&id).encode())
        .await
        .map_err(|e| format!("process {j} at {addr}: {e}"))?;
    let h = read_hello(&mut conn)
        .await
        .map_err(|e| format!("process {j} at {addr}: {e}"))?;
    match check_hello(&id, &h) {
        Ok(p) if p == j => Ok((j, conn)),
        Ok(p) => Err(format!("{addr} answered as process {p}, expected {j}")),
        Err(e) => Err(format!("process {j} at {addr} refused: {e}")),
    }
}

/// The two connections to every other process (`None` at this process's index).
struct Links {
    /// Connections this process made: it writes to process `j` on `outgoing[j]` only.
    outgoing: Vec<Option<Conn>>,
    /// Connections process `j` made: it reads what `j` sends on `incoming[j]` only.
    incoming: Vec<Option<Conn>>,
}

impl Links {
    /// Processes one of whose connections is not up yet.
    fn missing(&self, me: usize) -> Vec<usize> {
        (0..self.outgoing.len())
            .filter(|&j| j != me && (self.outgoing[j].is_none() || self.incoming[j].is_none()))
            .collect()
    }
}

/// Connects to every other process and accepts a connection from each, so every pair has one
/// connection per direction: a socket is then written by one side and read by the other only,
/// and the threads sending on it (`outbox.rs`) never wait for the socket lock held by the
/// thread reading it (docs/distributed.md, "Session 4").
async fn connect_all(
    id: &Identity,
    listener: &TcpListener,
    cfg: &ClusterConfig,
    traffic: &mut Traffic,
) -> Result<Links, String> {
    let n = id.addrs.len();
    let deadline = Instant::now() + cfg.startup_timeout;
    let mut links = Links {
        outgoing: (0..n).map(|_| None).collect(),
        incoming: (0..n).map(|_| None).collect(),
    };
    let mut connects = tokio::task::JoinSet::new();
    for j in (0..n).filter(|&j| j != id.process) {
        connects.spawn(connect_to(j, id.clone(), deadline));
    }
    let mut handshakes = tokio::task::JoinSet::new();
    let mut pacer = AcceptPacer::default();
    while !links.missing(id.process).is_empty() {
        tokio::select! {
            (stream, from) = pacer.accept(listener) => {
                let id = id.clone();
                let max = cfg.max_frame_bytes;
                handshakes.spawn(async move {
                    (from, accept_handshake(stream, &id, max).await)
                });
            }
            Some(r) = handshakes.join_next() => {
                if let Ok((from, r)) = r {
                    match r {
                        Ok((p, conn)) if links.incoming[p].is_none() => {
                            traffic.record_frame(MessageKind::Control, 4 + 25 + id.token.len() as u64);
                            links.incoming[p] = Some(conn);
                        }
                        Ok((p, _)) => tracing::warn!("refused connection from {from}: process {p} is already connected"),
                        Err(Refusal::Stranger(e)) => tracing::warn!("refused connection from {from}: {e}"),
                        Err(Refusal::Fatal(e)) => return Err(format!("process {}: {e}", id.process)),
                    }
                }
            }
            Some(r) = connects.join_next() => {
                let (j, conn) = r.map_err(|e| e.to_string())??;
                traffic.record_frame(MessageKind::Control, 4 + 25 + id.token.len() as u64);
                links.outgoing[j] = Some(conn);
            }
            _ = tokio::time::sleep_until(deadline) => {
                let m = links.missing(id.process);
                return Err(format!(
                    "process {}: processes {m:?} did not connect within {:?} (addresses {:?})",
                    id.process,
                    cfg.startup_timeout,
                    m.iter().map(|&j| id.addrs[j]).collect::<Vec<_>>()
                ));
            }
        }
    }
    Ok(links)
}

/// Longest pause between accept attempts after an error.
const ACCEPT_PAUSE_MAX: Duration = Duration::from_millis(100);

/// Accepts connections, pausing after a failed accept: when file descriptors run out (EMFILE,
/// ENFILE) the listener stays readable and every attempt fails at once, so retrying at once
/// would spin. The pause doubles from 1 ms to [`ACCEPT_PAUSE_MAX`] while accepting fails; the
/// first failure of a run of failures is logged, and the recovery.
#[derive(Default)]
struct AcceptPacer {
    /// Failed attempts since the last accepted connection.
    failures: u64,
    /// Pause before the next attempt.
    pause: Duration,
}

impl AcceptPacer {
    /// The next accepted connection (cancel-safe: the pacing state lives in `self`).
    async fn accept(&mut self, listener: &TcpListener) -> (TcpStream, SocketAddr) {
        loop {
            match listener.accept().await {
                Ok(c) => {
                    if self.failures > 0 {
                        tracing::info!(
                            "accepting connections again after {} failed attempts",
                            self.failures
                        );
                    }
                    *self = AcceptPacer::default();
                    return c;
                }
                Err(e) => {
                    if self.failures == 0 {
                        let out_of_fds =
                            matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENFILE));
                        tracing::warn!(
                            "cannot accept connections: {e}{}; retrying every {ACCEPT_PAUSE_MAX:?} \
                             at most",
                            if out_of_fds { " (out of file descriptors)" } else { "" }
                        );
                    }
                    self.failures += 1;
                    self.pause = (self.pause * 2).clamp(Duration::from_millis(1), ACCEPT_PAUSE_MAX);
                    sleep(self.pause).await;
                }
            }
        }
    }
}

/// The frames arriving from one process (on the connection it made).
pub(super) type Reader = FramedRead<TcpStream, LengthDelimitedCodec>;

/// The readers handed back with each Done, by process.
type Readers = Vec<Option<Box<Reader>>>;

/// What reader and writer tasks tell the serving loop.
pub(super) enum Event {
    /// Process `j` said Done (with its report); its reader comes back for the clock alignment
    /// after the run.
    Done(usize, Vec<u8>, Box<Reader>),
    Failed(usize, String),
    Aborted(usize, String),
}

/// Serves a started job: refuses late strangers, runs a reader and a writer per connection, and
/// follows the end protocol ([`run_to_end`]); then lets the writers put out what is queued.
#[allow(clippy::too_many_arguments)]
async fn serve(
    id: Identity,
    listener: TcpListener,
    cfg: ClusterConfig,
    links: Links,
    outboxes: Vec<Option<Arc<Outbox>>>,
    delivery: Delivery,
    failure: Failure,
    mut control: UnboundedReceiver<Control>,
    traffic: Traffic,
    (clock, before): (ClockSource, Before),
) -> Result<Outcome, String> {
    let refuser = spawn_refuser(listener, id.clone());
    let (events_tx, mut events) = unbounded_channel::<Event>();
    // Checked by ClusterConfig::validate before the launch; read again here (a matrix file).
    let delays = cfg.delay.resolve(id.addrs.len())?;
    let writers = spawn_links(
        (&id, &cfg, delays.as_ref()),
        links,
        &outboxes,
        Arc::new(delivery),
        &events_tx,
    );
    let mut broadcast = Broadcast { outboxes, traffic };
    let mut reports = vec![None; id.addrs.len()];
    let mut readers = (0..id.addrs.len()).map(|_| None).collect();
    let result = run_to_end(
        &id,
        &failure,
        &mut control,
        &mut events,
        &mut broadcast,
        (&mut reports, &mut readers),
    )
    .await;
    drop(events_tx);
    // Let the writers put out what is queued (Done or Abort), briefly.
    let Broadcast {
        outboxes,
        mut traffic,
    } = broadcast;
    for w in writers {
        let _ = timeout(Duration::from_secs(2), w).await;
    }
    let clock = match result {
        Ok(()) => {
            let after = AfterRun {
                outboxes: &outboxes,
                readers,
                before,
            };
            align_after(&id, &cfg, &clock, after, &mut traffic).await
        }
        Err(_) => None,
    };
    refuser.abort();
    result.map(|()| Outcome {
        reports,
        traffic,
        clock,
    })
}

/// Counts a clock phase's frames to one peer in `traffic` (as control frames).
fn count_clock_frames(traffic: &mut Traffic, r: &clock_phase::PeerResult) {
    traffic.record_n(MessageKind::Control, r.frames, r.bytes);
}

/// What the clock alignment after the run works with.
struct AfterRun<'a> {
    /// The outboxes, whose sockets are free once their writers wrote Done.
    outboxes: &'a [Option<Arc<Outbox>>],
    /// The readers handed back with each Done, by process.
    readers: Readers,
    /// What the alignment before the run gave.
    before: Before,
}

/// What the clock alignment before the run gave this process.
struct Before {
    /// Its MinRTT per peer, by process (empty at its own index).
    min: Vec<MinRtt>,
    /// Its runtime clock (`measure/clock.rs`) tied to its ticks as the phase began.
    anchor: Anchor,
}

/// The runtime clock's ns tied to `clock`'s ticks now.
fn anchor(clock: &ClockSource) -> Anchor {
    Anchor::read(|| (clock.ticks)(), crate::measure::clock::now_ns)
}

/// The clock alignment before the run: every peer, until the start-up timeout.
///
/// # Errors
/// A peer failed or stayed silent, naming it.
async fn align_before(
    id: &Identity,
    cfg: &ClusterConfig,
    clock: &ClockSource,
    links: &mut Links,
    traffic: &mut Traffic,
) -> Result<Before, String> {
    let anchor = anchor(clock);
    let deadline = Instant::now() + cfg.startup_timeout;
    let peers = (links.outgoing.iter())
        .zip(links.incoming.iter_mut())
        .enumerate()
        .filter_map(|(j, (o, i))| {
            Some(PeerIo {
                process: j,
                sock: o.as_ref()?.get_ref(),
                reader: i.as_mut()?,
            })
        })
        .collect();
    let rounds = cfg.clock_rounds;
    let results = clock_phase::run(BEFORE, rounds, &clock.ticks, peers, false, deadline).await;
    let mut before = vec![MinRtt::default(); id.addrs.len()];
    for r in results {
        count_clock_frames(traffic, &r);
        before[r.process] = r.min.map_err(|e| {
            format!(
                "process {}: clock alignment before the run failed: {e}",
                id.process
            )
        })?;
    }
    Ok(Before {
        min: before,
        anchor,
    })
}

/// The clock alignment after the run, until the peer timeout: the others send their samples to
/// process 0, which aligns every clock to its own. A failure is logged and leaves no
/// alignment: the run itself succeeded.
async fn align_after(
    id: &Identity,
    cfg: &ClusterConfig,
    clock: &ClockSource,
    mut after: AfterRun<'_>,
    traffic: &mut Traffic,
) -> Option<Alignment> {
    let (me, n) = (id.process, id.addrs.len());
    let deadline = Instant::now() + cfg.peer_timeout;
    let socks: Vec<Option<Arc<TcpStream>>> = (after.outboxes.iter())
        .map(|o| o.as_ref().and_then(|o| o.finished_socket()))
        .collect();
    let peers: Vec<_> = (socks.iter())
        .zip(after.readers.iter_mut())
        .enumerate()
        .filter_map(|(j, (s, r))| {
            Some(PeerIo {
                process: j,
                sock: s.as_deref()?,
                reader: r.as_deref_mut()?,
            })
        })
        .collect();
    if peers.len() + 1 < n {
        tracing::warn!("process {me}: no clock alignment after the run: a connection is gone");
        return None;
    }
    let rounds = cfg.clock_rounds;
    let results = clock_phase::run(AFTER, rounds, &clock.ticks, peers, me == 0, deadline).await;
    let mut mine = ClockReport {
        clock: clock.describe(me),
        samples: Vec::new(),
    };
    mine.clock.monotonic = AnchorMap::new(after.before.anchor, anchor(clock))
        .inspect_err(|e| tracing::warn!("process {me}: {e}"))
        .ok();
    let mut reports = Vec::new();
    for r in results {
        count_clock_frames(traffic, &r);
        let after_min = r.min.unwrap_or_else(|e| {
            tracing::warn!("process {me}: clock alignment after the run: {e}");
            MinRtt::default()
        });
        mine.samples.push(PairSamples {
            initiator: me,
            responder: r.process,
            before: after.before.min[r.process],
            after: after_min,
        });
        reports.extend(r.report);
    }
    if me != 0 {
        let f = clock_phase::report_frame(&mine);
        traffic.record_frame(MessageKind::Control, 4 + f.len() as u64);
        let sent = match &socks[0] {
            Some(s) => tokio::time::timeout_at(deadline, clock_phase::write_frame(s, &f)).await,
            None => Ok(Ok(())),
        };
        if !matches!(sent, Ok(Ok(()))) {
            tracing::warn!("process {me}: could not send the clock report to process 0");
        }
        return None;
    }
    align_at_zero(n, rounds, mine, reports)
}

/// Process 0 puts its own and the others' clock reports together.
fn align_at_zero(
    n: usize,
    rounds: u32,
    mine: ClockReport,
    reports: Vec<ClockReport>,
) -> Option<Alignment> {
    let mut clocks = vec![None; n];
    let mut samples = Vec::new();
    for r in std::iter::once(mine).chain(reports) {
        if let Some(c) = clocks.get_mut(r.clock.process) {
            *c = Some(r.clock);
        }
        samples.extend(r.samples);
    }
    let missing: Vec<usize> = (0..n).filter(|&p| clocks[p].is_none()).collect();
    if !missing.is_empty() {
        tracing::warn!("no clock alignment: no clock report from processes {missing:?}");
        return None;
    }
    let clocks = clocks.into_iter().flatten().collect();
    match Alignment::new(0, rounds, clocks, samples) {
        Ok(a) => {
            for p in &a.pairs {
                tracing::debug!(
                    "clock {} -> {}: MinRTT {:?} / {:?} ns, offset {:?} ns, rate {:?} ppm, bound {:?} ns",
                    p.samples.responder,
                    p.samples.initiator,
                    p.before_min_rtt_ns,
                    p.after_min_rtt_ns,
                    p.offset_ns,
                    p.rate_ppm,
                    p.bound_ns
                );
            }
            Some(a)
        }
        Err(e) => {
            tracing::warn!("no clock alignment: {e}");
            None
        }
    }
}

/// Strangers after the start are refused for the whole run: the task accepting them.
fn spawn_refuser(listener: TcpListener, id: Identity) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut pacer = AcceptPacer::default();
        loop {
            let (stream, from) = pacer.accept(&listener).await;
            let id = id.clone();
            tokio::spawn(async move {
                let why = match accept_handshake_check(stream, &id).await {
                    Ok(p) => format!("process {p} is already connected"),
                    Err(e) => e,
                };
                // Strangers get no answer after the start; the reason is only logged.
                tracing::warn!("refused connection from {from}: {why}");
            });
        }
    })
}

/// Splits each connection into a reader task (routing frames to `delivery`, after the pair's
/// injected delay if `delays` has one, telling `events` how it ended) and a writer task (writing what the senders could not, `outbox.rs`); returns
/// the writers.
fn spawn_links(
    (id, cfg, delays): (
        &Identity,
        &ClusterConfig,
        Option<&super::delay::DelayMatrix>,
    ),
    links: Links,
    outboxes: &[Option<Arc<Outbox>>],
    delivery: Arc<Delivery>,
    events: &UnboundedSender<Event>,
) -> Vec<tokio::task::JoinHandle<()>> {
    let mut writers = Vec::new();
    let conns = links.outgoing.into_iter().zip(links.incoming);
    for (j, ((out, inc), outbox)) in conns.zip(outboxes).enumerate() {
        let (Some(out), Some(inc), Some(outbox)) = (out, inc, outbox) else {
            continue;
        };
        let parts = inc.into_parts();
        let mut reader = FramedRead::new(parts.io, codec(cfg.max_frame_bytes));
        reader.read_buffer_mut().extend_from_slice(&parts.read_buf);
        writers.push(tokio::spawn(super::outbox::drain(
            outbox.clone(),
            out.into_inner(),
            cfg.peer_timeout / 3,
            frame::simple(Kind::Ping, &[]),
        )));
        // Frames from j are held back by j's one-way delay to this process (`delay/mod.rs`).
        let line = delays.and_then(|m| {
            let (base, jitter) = m.one_way(j, id.process);
            super::delay::DelayLine::new(base, jitter, (j * id.addrs.len() + id.process) as u64)
        });
        let cx = ReadCtx {
            process: j,
            addr: id.addrs[j],
            delivery: delivery.clone(),
            events: events.clone(),
            peer_timeout: cfg.peer_timeout,
            first_timeout: cfg.startup_timeout,
        };
        match (&delivery.handover, line) {
            (Some(handover), None) => hand_over(handover, cx, reader),
            (_, line) => {
                tokio::spawn(read_loop(cx, reader, line));
            }
        }
    }
    writers
}

/// Hands the connection `reader` reads to a worker (`worker_reads.rs`), with what it buffered.
fn hand_over(handover: &super::worker_reads::Handover, cx: ReadCtx, reader: Reader) {
    let parts = reader.into_parts();
    match parts.io.into_std() {
        Ok(stream) => handover.post(super::worker_reads::Handed {
            stream,
            buffered: parts.read_buf,
            codec: parts.codec,
            cx,
            first: true,
            since: std::time::Instant::now(),
        }),
        Err(e) => {
            let why = format!("could not be handed to a worker: {e}");
            cx.end(super::reading::Ending::Failed(why), None);
        }
    }
}

/// Control frames to every other process, counted in the transport's traffic.
struct Broadcast {
    /// The outbox of each other process (`None` for this one).
    outboxes: Vec<Option<Arc<Outbox>>>,
    /// Control frames this process sent.
    traffic: Traffic,
}

impl Broadcast {
    /// Queues a `kind` frame carrying `payload` for every other process; with `leader_only`,
    /// only process 0 gets the payload and the others an empty frame.
    fn send(&mut self, kind: Kind, payload: &[u8], leader_only: bool) {
        for (j, outbox) in self.outboxes.iter().enumerate() {
            if let Some(outbox) = outbox {
                let p = if leader_only && j != 0 {
                    &[][..]
                } else {
                    payload
                };
                let f = frame::simple(kind, p);
                self.traffic
                    .record_frame(MessageKind::Control, f.len() as u64 + 4);
                let _ = outbox.send(f);
            }
        }
    }

    /// Fails the job with `msg` (a failure seen here) and passes it on as an Abort, which also
    /// ends our writers at once (each stops after writing it) instead of after the grace period
    /// of [`serve`]. Returns `msg`.
    fn fail(&mut self, id: &Identity, failure: &Failure, msg: String) -> String {
        failure.fail(msg.clone());
        let abort = format!("process {} saw: {msg}", id.process);
        self.send(Kind::Abort, abort.as_bytes(), false);
        msg
    }
}

/// The end protocol: once the workers finish, Done goes to every other process (with the report
/// for process 0); the run ends when every process has said Done, or at the first failure,
/// Abort or local abort. Done reports are stored in `reports` by process.
async fn run_to_end(
    id: &Identity,
    failure: &Failure,
    control: &mut UnboundedReceiver<Control>,
    events: &mut UnboundedReceiver<Event>,
    broadcast: &mut Broadcast,
    (reports, readers): (&mut [Option<Vec<u8>>], &mut Readers),
) -> Result<(), String> {
    let mut done_from = vec![false; reports.len()];
    done_from[id.process] = true;
    let mut finished = false;
    loop {
        if finished && done_from.iter().all(|&d| d) {
            return Ok(());
        }
        tokio::select! {
            c = control.recv() => match c {
                Some(Control::Finish(report)) => {
                    broadcast.send(Kind::Done, &report, true);
                    finished = true;
                }
                Some(Control::Abort(reason)) => {
                    broadcast.send(Kind::Abort, reason.as_bytes(), false);
                    return Err(reason);
                }
                None => return Err("runtime stopped without finishing".into()),
            },
            e = events.recv() => match e {
                Some(Event::Done(j, report, reader)) => {
                    done_from[j] = true;
                    reports[j] = Some(report);
                    readers[j] = Some(reader);
                }
                Some(Event::Failed(j, why)) => {
                    let msg = format!("process {j} ({}) {why}", id.addrs[j]);
                    return Err(broadcast.fail(id, failure, msg));
                }
                Some(Event::Aborted(j, why)) => {
                    let msg = format!("process {j} ({}) failed: {why}", id.addrs[j]);
                    return Err(broadcast.fail(id, failure, msg));
                }
                None => return Err("network tasks stopped".into()),
            },
        }
    }
}

/// The refuser's check of a late connection (any outcome is a refusal).
async fn accept_handshake_check(stream: TcpStream, id: &Identity) -> Result<usize, String> {
    let mut conn = Framed::new(stream, codec(64 << 10));
    let h = read_hello(&mut conn).await?;
    check_hello(id, &h)
}
