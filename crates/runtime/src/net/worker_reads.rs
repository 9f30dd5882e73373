//! Connections read by a worker instead of the network thread (`--net-reads worker`, the
//! default).
//!
//! Why: a frame read by the network thread wakes two threads in the receiving process: the
//! network thread leaves `epoll_wait`, reads and routes the frame, then wakes the parked worker
//! it is for (`futex`). On this machine a wake-up costs about 15 us of CPU, and at 1,000
//! elements/s the two network threads of a 2-process chain took more CPU than its two workers
//! (docs/distributed.md, "Session 8"). A worker that reads its connections itself waits in
//! `epoll` on its sockets and on an eventfd for everything else that wakes it
//! ([`crate::wake::PollParker`]): one wake-up per arrival.
//!
//! Who reads what: the connection from process `j` is read by local worker `j mod W`, which
//! routes every frame as the network thread would (`reading.rs`): frames for another local
//! worker, the tracker shard or the checkpoint thread go where they went before. Parked, a worker
//! waits on its sockets; busy, it polls them at most every [`BUSY_POLL_NS`], so a long step
//! delays the frames it reads for the others by as much. With an injected delay (`--rtt` and the
//! like, docs/wan.md) the network thread reads every connection: its timers hold their frames back.
//!
//! The network thread hands a connection over once it is up (after the handshake and the clock
//! alignment), through [`Handover`]. It comes back when reading it ends (Done, Abort, a failure:
//! the serving loop is told what the network thread's reader would tell it) or when the worker
//! stops, with what was read but not routed; the network thread then reads the rest (the other
//! process's Done, the clock alignment after the run).

use super::epoll::Epoll;
use super::reading::{self, Ending, ReadCtx};
use crate::wake::{PollParker, Unparkers};
use bytes::BytesMut;
use std::io::{self, Read};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};
use tokio_util::codec::{Decoder, FramedRead, LengthDelimitedCodec};

pub use crate::config::cluster::NetReads;

/// Longest a busy worker goes without polling its sockets, ns.
pub const BUSY_POLL_NS: u64 = 50_000;
/// Most bytes one read of a connection takes before the worker goes on; the rest is read at its
/// next poll (so one busy connection cannot keep a worker from its own work).
const READ_BURST: usize = 1 << 20;
/// Bytes read per system call.
const SCRATCH_BYTES: usize = 64 << 10;
/// The token of the parker's eventfd in a worker's `epoll` (sockets are numbered from 0).
const WAKER: u64 = u64::MAX;

/// A connection the network thread hands to a worker.
pub(super) struct Handed {
    /// Non-blocking.
    pub(super) stream: std::net::TcpStream,
    /// Bytes read from it but not yet routed.
    pub(super) buffered: BytesMut,
    /// The frame codec, which may be halfway through a frame (its length read, its bytes not).
    pub(super) codec: LengthDelimitedCodec,
    pub(super) cx: ReadCtx,
    /// No frame has come yet (the start-up timeout applies).
    pub(super) first: bool,
    /// When the last frame came (or the connection was handed over).
    pub(super) since: Instant,
}

/// One worker's share of the hand-over.
#[derive(Default)]
struct Slot {
    conns: Vec<Handed>,
    /// The worker stopped: connections go straight back.
    closed: bool,
}

/// Where the network thread leaves connections for the workers, and how they go back to it.
pub struct Handover {
    slots: Vec<Mutex<Slot>>,
    /// A slot has connections the worker has not taken yet (checked without the lock).
    posted: Vec<AtomicBool>,
    unparkers: Arc<Unparkers>,
    /// The network thread's runtime (set by the first hand-over), which reads what comes back.
    runtime: OnceLock<tokio::runtime::Handle>,
}

impl Handover {
    /// A hand-over to `workers` local workers (at least 1), woken through `unparkers`.
    pub fn new(workers: usize, unparkers: Arc<Unparkers>) -> Arc<Self> {
        Arc::new(Handover {
            slots: (0..workers.max(1)).map(|_| Mutex::default()).collect(),
            posted: (0..workers.max(1))
                .map(|_| AtomicBool::new(false))
                .collect(),
            unparkers,
            runtime: OnceLock::new(),
        })
    }

    /// The local worker reading the connection from `process`.
    fn reader_of(&self, process: usize) -> usize {
        process % self.slots.len()
    }

    fn slot(&self, w: usize) -> std::sync::MutexGuard<'_, Slot> {
        self.slots[w].lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Hands `h` to the worker that reads its process's connection (on the network thread).
    pub(super) fn post(&self, h: Handed) {
        let _ = self.runtime.set(tokio::runtime::Handle::current());
        let w = self.reader_of(h.cx.process);
        let mut slot = self.slot(w);
        if slot.closed {
            drop(slot);
            return self.give_back(h, None);
        }
        slot.conns.push(h);
        drop(slot);
        self.posted[w].store(true, Ordering::Release);
        self.unparkers.unpark(w);
    }

    /// Connections posted to worker `w` since it last took them.
    fn take(&self, w: usize) -> Vec<Handed> {
        if !self.posted[w].swap(false, Ordering::AcqRel) {
            return Vec::new();
        }
        std::mem::take(&mut self.slot(w).conns)
    }

    /// Worker `w` stops reading: later hand-overs go straight back; returns what it never took.
    fn close(&self, w: usize) -> Vec<Handed> {
        let mut slot = self.slot(w);
        slot.closed = true;
        std::mem::take(&mut slot.conns)
    }

    /// Hands `h` back to the network thread: to the serving loop with `end` (Done's reader with
    /// it, for the clock alignment after the run), or to a reader task that reads on.
    fn give_back(&self, h: Handed, end: Option<Ending>) {
        let Some(rt) = self.runtime.get() else {
            return; // never posted, so nothing to hand back
        };
        let _in_runtime = rt.enter();
        let reader = tokio::net::TcpStream::from_std(h.stream).map(|io| {
            let mut r = FramedRead::new(io, h.codec);
            r.read_buffer_mut().extend_from_slice(&h.buffered);
            Box::new(r)
        });
        match (end, reader) {
            (Some(end), r) => h.cx.end(end, r.ok()),
            (None, Ok(r)) => {
                rt.spawn(reading::read_plain(h.cx, *r, h.first));
            }
            (None, Err(e)) => {
                let why = format!("could not be read on after its worker stopped: {e}");
                h.cx.end(Ending::Failed(why), None);
            }
        }
    }
}

/// A connection a worker reads.
struct Conn {
    /// Non-blocking.
    stream: std::net::TcpStream,
    buf: BytesMut,
    codec: LengthDelimitedCodec,
    cx: ReadCtx,
    first: bool,
    since: Instant,
    /// Readable: `epoll` said so (edge-triggered) and a read has not met `WouldBlock` since.
    ready: bool,
}

impl Conn {
    /// Routes the frames buffered and reads on until the socket is empty or [`READ_BURST`]
    /// bytes came; `Some` when reading this connection ends.
    fn read(&mut self, scratch: &mut [u8], now: Instant) -> Option<Ending> {
        let mut taken = 0;
        loop {
            loop {
                match self.codec.decode(&mut self.buf) {
                    Ok(Some(f)) if f.is_empty() => {
                        return Some(Ending::Failed(reading::EMPTY_FRAME.into()))
                    }
                    Ok(Some(f)) => {
                        self.first = false;
                        self.since = now;
                        if let Some(end) = self.cx.take(f.freeze()) {
                            return Some(end);
                        }
                    }
                    Ok(None) => break,
                    Err(e) => return Some(Ending::Failed(reading::read_failure(&e))),
                }
            }
            if taken >= READ_BURST {
                return None;
            }
            match self.stream.read(scratch) {
                Ok(0) => return Some(Ending::Failed(reading::CLOSED.into())),
                Ok(n) => {
                    self.buf.extend_from_slice(&scratch[..n]);
                    taken += n;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.ready = false;
                    return None;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Some(Ending::Failed(reading::read_failure(&e))),
            }
        }
    }

    /// `Some` when the other process has been silent longer than allowed.
    fn silent(&self, now: Instant) -> Option<Ending> {
        let allowed = self.cx.silence(self.first);
        (now.saturating_duration_since(self.since) > allowed)
            .then(|| Ending::Failed(reading::silent(allowed)))
    }

    fn into_handed(self) -> Handed {
        Handed {
            stream: self.stream,
            buffered: self.buf,
            codec: self.codec,
            cx: self.cx,
            first: self.first,
            since: self.since,
        }
    }
}

/// The connections one worker reads, and the `epoll` it waits in.
pub(crate) struct WorkerSockets {
    handover: Arc<Handover>,
    /// This worker's local index.
    me: usize,
    epoll: Epoll,
    parker: Arc<PollParker>,
    /// By token; `None` once handed back.
    conns: Vec<Option<Conn>>,
    /// When the sockets were last polled, ns ([`crate::measure::clock::now_ns`]).
    last_poll_ns: u64,
    scratch: Box<[u8]>,
}

impl WorkerSockets {
    /// The sockets of local worker `me`, taken from `handover` as they come.
    ///
    /// # Errors
    /// The `epoll` instance or its eventfd cannot be created.
    pub(crate) fn new(handover: Arc<Handover>, me: usize) -> io::Result<Self> {
        let epoll = Epoll::new()?;
        let parker = Arc::new(PollParker::new()?);
        epoll.add(parker.fd().raw(), WAKER, false)?;
        Ok(WorkerSockets {
            handover,
            me,
            epoll,
            parker,
            conns: Vec::new(),
            last_poll_ns: 0,
            scratch: vec![0; SCRATCH_BYTES].into_boxed_slice(),
        })
    }

    /// What wakes this worker (its [`crate::wake::Wake::Poll`]).
    pub(crate) fn parker(&self) -> Arc<PollParker> {
        self.parker.clone()
    }

    /// A busy worker's turn to poll: [`BUSY_POLL_NS`] passed since the last poll.
    #[inline]
    pub(crate) fn due(&self, now_ns: u64) -> bool {
        now_ns.wrapping_sub(self.last_poll_ns) >= BUSY_POLL_NS
    }

    /// Waits up to `timeout` for a socket to become readable or an unpark (not at all when
    /// `timeout` is zero, an unpark came since the last wait, or data is waiting already).
    ///
    /// # Errors
    /// `epoll_wait` failed.
    pub(crate) fn wait(&mut self, timeout: Duration) -> Result<(), String> {
        let block = !timeout.is_zero() && !self.has_work() && self.parker.begin_wait();
        let polled = (self.epoll).wait(if block { timeout } else { Duration::ZERO });
        let ready =
            polled.map_err(|e| format!("worker {} waiting on its connections: {e}", self.me));
        for token in ready? {
            match self.conns.get_mut(token as usize) {
                Some(Some(c)) => c.ready = true,
                _ if token == WAKER => self.parker.fd().drain(),
                _ => {}
            }
        }
        if block {
            self.parker.end_wait();
        }
        self.last_poll_ns = crate::measure::clock::now_ns();
        Ok(())
    }

    /// Bytes or connections are waiting already: a connection is still readable, or new ones
    /// were handed over.
    fn has_work(&self) -> bool {
        self.conns.iter().flatten().any(|c| c.ready)
            || self.handover.posted[self.me].load(Ordering::Acquire)
    }

    /// Takes connections handed over since the last call, reads and routes what arrived on the
    /// readable ones, and hands back every connection whose reading ended (a failure, Abort or
    /// Done, or silence beyond the peer timeout).
    pub(crate) fn read(&mut self) {
        self.adopt();
        let now = Instant::now();
        for i in 0..self.conns.len() {
            let Some(c) = &mut self.conns[i] else {
                continue;
            };
            let end = if c.ready {
                c.read(&mut self.scratch, now)
            } else {
                None
            };
            if let Some(end) = end.or_else(|| c.silent(now)) {
                let c = self.conns[i].take().expect("checked above");
                self.release(c, Some(end));
            }
        }
    }

    fn adopt(&mut self) {
        for h in self.handover.take(self.me) {
            let token = self.conns.len() as u64;
            if let Err(e) = self.epoll.add(h.stream.as_raw_fd(), token, true) {
                let me = self.me;
                tracing::warn!(
                    "worker {me} cannot wait on a connection ({e}): the network thread reads it"
                );
                self.handover.give_back(h, None);
                continue;
            }
            // Ready: bytes may have come before it was added, or be buffered already.
            self.conns.push(Some(Conn {
                stream: h.stream,
                buf: h.buffered,
                codec: h.codec,
                cx: h.cx,
                first: h.first,
                since: h.since,
                ready: true,
            }));
        }
    }

    fn release(&mut self, c: Conn, end: Option<Ending>) {
        let _ = self.epoll.delete(c.stream.as_raw_fd());
        self.handover.give_back(c.into_handed(), end);
    }
}

impl Drop for WorkerSockets {
    /// The worker stopped (done, failed or never started): every connection goes back to the
    /// network thread, which reads on.
    fn drop(&mut self) {
        for h in self.handover.close(self.me) {
            self.handover.give_back(h, None);
        }
        for c in std::mem::take(&mut self.conns).into_iter().flatten() {
            self.release(c, None);
        }
    }
}
