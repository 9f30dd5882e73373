//! Channels whose two ends live in different processes, and the wiring that creates them.
//!
//! A remote channel keeps the shape of a local one (bounded, one per (edge, sender, receiver)):
//! the sender holds *credits*, one per batch the receiver can queue. Sending a batch spends one;
//! the receiver returns them in a Credit frame once it has taken a quarter of its window out of
//! its queue or emptied it. A sender without credit keeps the batch pending and takes no more
//! input, exactly like a full local queue (backpressure), so a slow receiver never blocks the
//! shared TCP connection for other channels and its inbound queue can never overflow. The window
//! starts at the channel capacity and the receiver resizes it to the link's bandwidth-delay
//! product, up to `--max-credit-window` ([`super::credit`]).

use super::credit::CreditWindow;
use super::frame::{self, ChannelId, Kind};
use super::outbox::Outbox;
use crate::batch::Msg;
use bytes::Bytes;
use crossbeam_queue::ArrayQueue;
use rustc_hash::FxHashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use xorflow_core::Data;

/// The sending half of the connection to one remote process (frames are written in order).
#[derive(Clone)]
pub struct RemoteTx {
    /// The remote process's index.
    pub process: usize,
    outbox: Arc<Outbox>,
}

impl std::fmt::Debug for RemoteTx {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RemoteTx({})", self.process)
    }
}

impl RemoteTx {
    /// A handle writing into `outbox`.
    pub fn new(process: usize, outbox: Arc<Outbox>) -> Self {
        RemoteTx { process, outbox }
    }

    /// Sends a frame to the remote process, on this thread when the socket takes it at once
    /// (`outbox.rs`). False once the connection is gone (the job is failing then; the
    /// transport reports why).
    #[inline]
    pub fn send(&self, f: Bytes) -> bool {
        self.outbox.send(f)
    }

    /// Queues a frame to be written by this thread's next `outbox::flush_queued` (workers
    /// only: they flush at the end of every iteration and before they park).
    #[inline]
    pub fn queue(&self, f: Bytes) -> bool {
        self.outbox.queue(f)
    }
}

/// Sending end of a remote channel.
#[derive(Debug)]
pub struct RemoteOut {
    /// The channel.
    pub ch: ChannelId,
    remote: RemoteTx,
    credits: Arc<AtomicUsize>,
}

impl RemoteOut {
    /// Sends `msg` if a credit is available (spending it); otherwise hands it back.
    /// Returns the frame's size in bytes (length prefix included) on success.
    #[inline]
    pub fn try_send<T: Data>(&self, msg: Msg<T>) -> Result<u64, Msg<T>> {
        // Only this thread spends credits; the network thread only adds them.
        if self.credits.load(Ordering::Acquire) == 0 {
            return Err(msg);
        }
        let last = self.credits.fetch_sub(1, Ordering::AcqRel) == 1;
        if last {
            // A sender out of credit waits a round trip for more: at 100 ms the size of the late
            // windows docs/wan.md could not explain ("What the kernels' TCP did").
            tracing::debug!(
                target: "xorflow::credit",
                edge = self.ch.edge,
                from = self.ch.from,
                to = self.ch.to,
                "spent the last credit"
            );
        }
        let f = encode(&msg, self.ch, last);
        let n = f.len() as u64 + 4;
        self.remote.queue(f);
        Ok(n)
    }

    /// The remote process.
    pub fn process(&self) -> usize {
        self.remote.process
    }
}

/// Receiving end of a remote channel.
#[derive(Debug)]
pub struct RemoteIn {
    /// The channel.
    pub ch: ChannelId,
    queue: Arc<ArrayQueue<Bytes>>,
    remote: RemoteTx,
    window: CreditWindow,
}

impl RemoteIn {
    /// Takes the next frame, returning credits when due. Returns the frame and, when credits were
    /// returned, the credit frame's size in bytes (for the traffic counters).
    #[inline]
    pub fn pop(&mut self) -> Option<(Bytes, Option<u64>)> {
        let f = self.queue.pop()?;
        let last = f[0] == Kind::DataLastCredit as u8;
        let mut credit_bytes = None;
        let n = self
            .window
            .taken(last, self.queue.len(), std::time::Instant::now);
        if n > 0 {
            let c = frame::credit(self.ch, n);
            credit_bytes = Some(c.len() as u64 + 4);
            self.remote.queue(c);
        }
        Some((f, credit_bytes))
    }

    /// The channel's credit window now, batches.
    pub fn window(&self) -> u32 {
        self.window.window()
    }
}

/// Encodes a channel message as a Data or End frame (`batch_codec.rs` gives the body); a batch
/// that spent the sender's `last_credit` goes as DataLastCredit (`credit.rs`).
pub fn encode<T: Data>(msg: &Msg<T>, ch: ChannelId, last_credit: bool) -> Bytes {
    match msg {
        Msg::Data(b) => {
            let kind = if last_credit {
                Kind::DataLastCredit
            } else {
                Kind::Data
            };
            let mut v = frame::channel_frame(kind, ch, 41 + 16 * b.data.len());
            super::batch_codec::encode_batch(b, &mut v);
            v.into()
        }
        Msg::End => frame::channel_frame(Kind::End, ch, 0).into(),
    }
}

/// Decodes a Data or End frame.
///
/// # Errors
/// An undecodable payload (a remote process running different code), naming the channel.
pub fn decode<T: Data>(f: &[u8]) -> Result<Msg<T>, String> {
    let (ch, body) = frame::read_channel(f)?;
    match Kind::of(f[0])? {
        Kind::End => Ok(Msg::End),
        Kind::Data | Kind::DataLastCredit => super::batch_codec::decode_batch(body)
            .map(Msg::Data)
            .map_err(|e| {
                format!(
                    "undecodable batch on edge {} from worker {}: {e}",
                    ch.edge, ch.from
                )
            }),
        k => Err(format!("{k:?} frame routed as data")),
    }
}

/// Where the transport delivers what arrives: inbound queues of remote channels (with the local
/// worker to wake) and the credit counters of outgoing ones (with the local sender to wake).
#[derive(Default)]
pub struct Routes {
    /// Inbound queue and local receiving worker, per channel.
    pub inbound: FxHashMap<ChannelId, (Arc<ArrayQueue<Bytes>>, usize)>,
    /// Credit counter and local sending worker, per channel.
    pub credits: FxHashMap<ChannelId, (Arc<AtomicUsize>, usize)>,
}

/// How this process's workers are placed in the cluster and how channels between them are made.
/// Processes `0..processes` run `workers` threads each; a process with a higher index is a
/// dedicated tracker process and runs none.
pub struct Wiring {
    /// Distinct for every wiring made in this process (each run of a job, each restart): what
    /// the in-process queues of an edge are made for (`dataflow/edges.rs`).
    pub id: u64,
    /// This process's index.
    pub process: usize,
    /// Worker processes (dedicated tracker processes come after them).
    pub processes: usize,
    /// Worker threads per process.
    pub workers: usize,
    /// Connection to each remote process (`None` for this one).
    pub remotes: Vec<Option<RemoteTx>>,
    /// Channel capacity in batches (the first credit window of a remote channel).
    pub capacity: usize,
    /// Largest credit window of a remote channel, batches (at least `capacity`).
    pub max_window: usize,
    routes: Mutex<Routes>,
}

impl Wiring {
    /// Wiring of process `process` of `processes`, `workers` threads each.
    pub fn new(
        process: usize,
        processes: usize,
        workers: usize,
        remotes: Vec<Option<RemoteTx>>,
        capacity: usize,
        max_window: usize,
    ) -> Self {
        static NEXT_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        Wiring {
            id: NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            process,
            processes,
            workers,
            remotes,
            capacity,
            max_window: max_window.max(capacity),
            routes: Mutex::new(Routes::default()),
        }
    }

    /// Workers in the whole job.
    pub fn total_workers(&self) -> usize {
        self.processes * self.workers
    }

    /// The local index of global worker `w`, if it runs in this process.
    #[inline]
    pub fn local(&self, w: usize) -> Option<usize> {
        self.local_workers().contains(&w).then(|| w % self.workers)
    }

    /// Global indices of this process's workers (empty in a tracker process).
    pub fn local_workers(&self) -> std::ops::Range<usize> {
        if self.process >= self.processes {
            return 0..0;
        }
        self.process * self.workers..(self.process + 1) * self.workers
    }

    /// The sending end of channel `ch` (its receiver is in another process).
    pub fn remote_out(&self, ch: ChannelId) -> RemoteOut {
        let credits = Arc::new(AtomicUsize::new(self.capacity));
        let sender = self.local(ch.from as usize).expect("sender is local");
        self.routes
            .lock()
            .expect("routes lock")
            .credits
            .insert(ch, (credits.clone(), sender));
        RemoteOut {
            ch,
            remote: self.remote_of(ch.to as usize),
            credits,
        }
    }

    /// The receiving end of channel `ch` (its sender is in another process).
    pub fn remote_in(&self, ch: ChannelId) -> RemoteIn {
        // Sized for the largest window: what is in circulation never exceeds it (`credit.rs`).
        let queue = Arc::new(ArrayQueue::new(self.max_window.max(1)));
        let receiver = self.local(ch.to as usize).expect("receiver is local");
        self.routes
            .lock()
            .expect("routes lock")
            .inbound
            .insert(ch, (queue.clone(), receiver));
        RemoteIn {
            ch,
            queue,
            remote: self.remote_of(ch.from as usize),
            window: CreditWindow::new(self.capacity, self.max_window),
        }
    }

    fn remote_of(&self, worker: usize) -> RemoteTx {
        self.remotes[worker / self.workers]
            .clone()
            .expect("a remote worker's process has a connection")
    }

    /// The routes registered so far (taken once, when the transport starts).
    pub fn take_routes(&self) -> Routes {
        std::mem::take(&mut *self.routes.lock().expect("routes lock"))
    }
}
