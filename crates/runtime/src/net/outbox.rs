//! The frames waiting for one connection, written either by the thread that sends them or by
//! the connection's writer task on the network thread, as [`NetWrites`] says.
//!
//! Why: handing every frame to the network thread cost a wake-up and a context switch per frame
//! on the sending side, and the one network thread of a process became the bottleneck of the
//! 2-process chain (docs/distributed.md, "Session 4"). A worker now gathers the frames of one
//! iteration ([`Outbox::queue`], [`flush_queued`]) and, when they are many bytes, writes them
//! itself with one non-blocking `writev`. Small bursts still go to the writer task: on loopback
//! the writing thread also pays the receiver's TCP processing, and a worker that wrote a single
//! element itself delayed the next one more than the hand-off did. Only when the socket is full
//! (or not connected yet) do frames wait for the writer task ([`drain`]), which writes them in
//! order as the socket becomes writable; senders append behind them meanwhile, so the
//! connection's frames stay in the order they were sent (ack pieces must never overtake the data
//! they acknowledge, `progress/process_acker.rs`).

use super::frame::Kind;
use super::gather::FrameBuf;
use bytes::{Buf, Bytes};
use std::io::{self, IoSlice};
use std::sync::{Arc, Mutex, PoisonError};
use tokio::net::TcpStream;
use tokio::sync::Notify;

pub use crate::config::cluster::NetWrites;

/// Bytes of one iteration's frames from which [`NetWrites::Adaptive`] writes on the worker.
/// Chosen by measurement (bench/results/distributed/session4-outbox.txt): 4-16 KiB kept the
/// 20,000 elements/s latency of the network thread but raised it at 100,000; 64 KiB kept both
/// and the sender's throughput.
pub const INLINE_BYTES: usize = 64 << 10;

impl NetWrites {
    /// What these writes are in a process of `local_workers` workers, given whether they read
    /// the connections themselves ([`NetWrites::Adaptive`]'s rule; the others are as given).
    pub fn in_process(self, local_workers: usize, workers_read: bool) -> NetWrites {
        match self {
            NetWrites::Adaptive if workers_read && local_workers == 1 => NetWrites::Sender,
            w => w,
        }
    }

    /// Fewest queued bytes the sending thread writes itself.
    fn inline_min(self) -> usize {
        match self {
            NetWrites::Adaptive => INLINE_BYTES,
            NetWrites::Sender => 0,
            NetWrites::NetworkThread => usize::MAX,
        }
    }
}

/// Most frame pieces (length prefixes and bodies) one `writev` carries.
const MAX_SLICES: usize = 64;

/// What the lock guards.
#[derive(Default)]
struct State {
    /// Frames not yet (completely) written, in order.
    buf: FrameBuf,
    /// The connection, once it is up.
    sock: Option<Arc<TcpStream>>,
    /// The writer task owns the socket until `buf` is empty: senders only append.
    draining: bool,
    /// Done or Abort is queued: nothing may follow it.
    ended: bool,
    /// The connection failed or a frame was refused: sends fail from now on.
    closed: bool,
}

/// The outgoing side of the connection to one remote process.
pub struct Outbox {
    /// The remote process (for error messages).
    process: usize,
    /// Largest frame the receiver accepts, bytes.
    max_frame: usize,
    /// Who writes (see [`NetWrites`]).
    writes: NetWrites,
    state: Mutex<State>,
    /// Wakes the writer task when it must take over.
    wake: Notify,
}

impl Outbox {
    /// An empty outbox for the connection to `process`, refusing frames over `max_frame` bytes,
    /// written as `writes` says.
    pub fn new(process: usize, max_frame: usize, writes: NetWrites) -> Self {
        Outbox {
            process,
            max_frame,
            writes,
            state: Mutex::new(State::default()),
            wake: Notify::new(),
        }
    }

    /// Sends `f`: written at once when nothing is queued ahead and the socket takes it, queued
    /// for the writer task otherwise. False once the connection is gone, after Done or Abort,
    /// or for a frame over the size limit (logged: the receiver would refuse it).
    pub fn send(&self, f: Bytes) -> bool {
        let mut s = self.lock();
        if !self.append(&mut s, f) {
            return false;
        }
        self.write(s);
        true
    }

    /// Appends `f` to be written by this thread's next [`flush_queued`] (a worker's, at the end
    /// of its iteration and before it parks), so the frames of one iteration leave in one
    /// `writev`; written at once past [`GATHER_BYTES`]. False as for [`Outbox::send`].
    pub fn queue(self: &Arc<Self>, f: Bytes) -> bool {
        if self.writes == NetWrites::NetworkThread {
            return self.send(f);
        }
        let mut s = self.lock();
        if !self.append(&mut s, f) {
            return false;
        }
        if s.buf.remaining() >= GATHER_BYTES {
            self.write(s);
            return true;
        }
        drop(s);
        QUEUED.with(|q| {
            let mut q = q.borrow_mut();
            if !q.iter().any(|o| Arc::ptr_eq(o, self)) {
                q.push(self.clone());
            }
        });
        true
    }

    /// The connection's socket once the writer task is done with it: the end frame (Done) is
    /// out and nothing is left to write. The clock alignment after the run writes there
    /// directly (`clock_phase.rs`). `None` while frames wait or when the connection failed.
    pub fn finished_socket(&self) -> Option<Arc<TcpStream>> {
        let s = self.lock();
        (s.ended && s.closed && !s.buf.has_remaining())
            .then(|| s.sock.clone())
            .flatten()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Appends `f` unless the outbox is closed; false if it is (or becomes so: a frame over the
    /// size limit).
    fn append(&self, s: &mut State, f: Bytes) -> bool {
        if s.closed || s.ended {
            return false;
        }
        let end = f[0] == Kind::Done as u8 || f[0] == Kind::Abort as u8;
        if let Err(e) = s.buf.push(f, self.max_frame) {
            tracing::error!("connection to process {}: {e}", self.process);
            s.closed = true;
            self.wake.notify_one();
            return false;
        }
        s.ended |= end;
        true
    }

    /// Writes what is queued on this thread unless the writer task owns the socket; hands the
    /// rest to the writer task when the socket is full (or the end frame went out).
    fn write(&self, mut s: std::sync::MutexGuard<'_, State>) {
        if s.draining || !s.buf.has_remaining() {
            return;
        }
        let Some(sock) = s.sock.clone() else {
            return;
        };
        if s.buf.remaining() < self.writes.inline_min() {
            s.draining = true;
            drop(s);
            self.wake.notify_one();
            return;
        }
        match write_now(&mut s.buf, &sock) {
            Ok(true) if !s.ended => {}
            Ok(_) => {
                s.draining = true;
                drop(s);
                self.wake.notify_one();
            }
            Err(e) => {
                tracing::debug!("connection to process {} failed: {e}", self.process);
                s.closed = true;
                drop(s);
                // The writer task ends on a closed outbox: the transport waits for it at the end.
                self.wake.notify_one();
            }
        }
    }
}

/// Bytes queued on one outbox past which [`Outbox::queue`] writes at once.
pub const GATHER_BYTES: usize = 256 << 10;

thread_local! {
    /// Outboxes this thread queued frames on since its last [`flush_queued`].
    static QUEUED: std::cell::RefCell<Vec<Arc<Outbox>>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Writes the frames this thread queued ([`Outbox::queue`]). Workers call it at the end of
/// every iteration and before they park.
pub fn flush_queued() {
    QUEUED.with(|q| {
        let mut q = q.borrow_mut();
        for o in q.drain(..) {
            let s = o.lock();
            o.write(s);
        }
    });
}

/// Writes from `buf` until it is empty (true) or the socket is full (false).
fn write_now(buf: &mut FrameBuf, sock: &TcpStream) -> io::Result<bool> {
    while buf.has_remaining() {
        let mut slices = [IoSlice::new(&[]); MAX_SLICES];
        let n = buf.chunks_vectored(&mut slices);
        match sock.try_write_vectored(&slices[..n]) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(k) => buf.advance(k),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}

/// The connection's writer task: attaches the socket, then writes whatever senders could not
/// (a full socket, frames queued before the connection was up) until Done or Abort is out or
/// the connection fails. Sends a Ping every `ping_every` so the peer knows this process lives.
pub async fn drain(
    outbox: Arc<Outbox>,
    sock: TcpStream,
    ping_every: std::time::Duration,
    ping: Bytes,
) {
    let sock = Arc::new(sock);
    {
        let mut s = outbox.state.lock().unwrap_or_else(PoisonError::into_inner);
        s.sock = Some(sock.clone());
        s.draining = true;
    }
    loop {
        // Write until the queue is empty, waiting for room when the socket is full.
        loop {
            {
                let mut s = outbox.state.lock().unwrap_or_else(PoisonError::into_inner);
                if s.closed {
                    return;
                }
                match write_now(&mut s.buf, &sock) {
                    Ok(true) => {
                        if s.ended {
                            s.closed = true;
                            return;
                        }
                        s.draining = false;
                        break;
                    }
                    Ok(false) => {}
                    Err(e) => {
                        tracing::debug!(
                            "connection to process {} closed while writing: {e}",
                            outbox.process
                        );
                        s.closed = true;
                        return;
                    }
                }
            }
            if sock.writable().await.is_err() {
                return;
            }
        }
        tokio::select! {
            _ = outbox.wake.notified() => {}
            _ = tokio::time::sleep(ping_every) => {
                outbox.send(ping.clone());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use tokio::io::AsyncReadExt;

    /// Every write mode: each test runs in all of them.
    const MODES: [NetWrites; 3] = [
        NetWrites::Adaptive,
        NetWrites::Sender,
        NetWrites::NetworkThread,
    ];

    /// A connected pair on loopback: (the writing end, the reading end), non-blocking.
    fn pair() -> (std::net::TcpStream, std::net::TcpStream) {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let a = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (b, _) = l.accept().unwrap();
        a.set_nonblocking(true).unwrap();
        b.set_nonblocking(true).unwrap();
        (a, b)
    }

    fn rt() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    /// The writer task of `outbox` on `sock`, on its own thread (as on the network thread).
    fn spawn_writer(outbox: Arc<Outbox>, sock: std::net::TcpStream) -> std::thread::JoinHandle<()> {
        std::thread::spawn(move || {
            rt().block_on(async move {
                let sock = TcpStream::from_std(sock).unwrap();
                let ping = Bytes::from_static(&[Kind::Ping as u8]);
                drain(outbox, sock, Duration::from_secs(60), ping).await;
            })
        })
    }

    /// Waits up to `limit` for `h` to end.
    fn ends_within(h: &std::thread::JoinHandle<()>, limit: Duration) -> bool {
        let t0 = std::time::Instant::now();
        while !h.is_finished() {
            if t0.elapsed() > limit {
                return false;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        true
    }

    fn frame(thread: u8, seq: u32, len: usize) -> Bytes {
        let mut v = vec![Kind::Data as u8, thread];
        v.extend_from_slice(&seq.to_be_bytes());
        v.resize(len.max(6), 0xAB);
        Bytes::from(v)
    }

    /// Two threads send (one frame at a time, and queued then flushed) while the reader does
    /// not read at first, so the socket fills and the writer task takes over; frames queued
    /// before the connection is up go first. Every frame arrives whole, each thread's in order.
    #[test]
    fn frames_arrive_whole_and_in_order_through_a_full_socket() {
        MODES.into_iter().for_each(frames_arrive_in_order);
    }

    fn frames_arrive_in_order(writes: NetWrites) {
        let (a, b) = pair();
        let outbox = Arc::new(Outbox::new(1, 1 << 20, writes));
        assert!(outbox.send(frame(9, 0, 10)));
        let writer = spawn_writer(outbox.clone(), a);
        const N: u32 = 3000;
        let senders: Vec<_> = (0..2u8)
            .map(|t| {
                let o = outbox.clone();
                std::thread::spawn(move || {
                    for seq in 0..N {
                        let f = frame(t, seq, 100 + (seq as usize * 7919) % 3000);
                        assert!(if t == 0 { o.send(f) } else { o.queue(f) });
                        if t == 1 && seq % 5 == 4 {
                            flush_queued();
                        }
                    }
                    flush_queued();
                })
            })
            .collect();
        std::thread::sleep(Duration::from_millis(200));
        let wire = rt().block_on(async {
            let mut b = TcpStream::from_std(b).unwrap();
            let mut wire = Vec::new();
            let mut next = [0u32; 2];
            let mut buf = Vec::new();
            while next != [N, N] {
                let mut chunk = [0u8; 65536];
                let n = tokio::time::timeout(Duration::from_secs(10), b.read(&mut chunk))
                    .await
                    .expect("frames stopped arriving")
                    .unwrap();
                assert!(n > 0, "connection closed early");
                buf.extend_from_slice(&chunk[..n]);
                while buf.len() >= 4 {
                    let len = u32::from_be_bytes(buf[..4].try_into().unwrap()) as usize;
                    if buf.len() < 4 + len {
                        break;
                    }
                    let f: Vec<u8> = buf.drain(..4 + len).skip(4).collect();
                    let (t, seq) = (f[1], u32::from_be_bytes(f[2..6].try_into().unwrap()));
                    if t == 9 {
                        assert!(
                            wire.is_empty(),
                            "the frame queued before the connection came later"
                        );
                    } else {
                        assert_eq!(seq, next[t as usize], "thread {t}'s frames out of order");
                        assert_eq!(
                            f,
                            frame(t, seq, f.len()),
                            "frame {seq} of thread {t} damaged"
                        );
                        next[t as usize] += 1;
                    }
                    wire.push((t, seq));
                }
            }
            wire
        });
        for s in senders {
            s.join().unwrap();
        }
        assert_eq!(wire.len(), 2 * N as usize + 1);
        // Done ends the writer; nothing is accepted after it.
        assert!(outbox.send(Bytes::from_static(&[Kind::Done as u8])));
        assert!(!outbox.send(frame(0, 0, 10)));
        assert!(
            ends_within(&writer, Duration::from_secs(5)),
            "the writer task outlived Done"
        );
    }

    /// A write that fails on a sending thread (the peer is gone) ends the writer task at once:
    /// the transport waits for its writers when a job fails, and a process whose peer was
    /// killed must exit promptly (`crates/cli/tests/recovery.rs`).
    #[test]
    fn a_failed_write_ends_the_writer_task() {
        MODES.into_iter().for_each(failed_write_ends_writer);
    }

    fn failed_write_ends_writer(writes: NetWrites) {
        let (a, b) = pair();
        let outbox = Arc::new(Outbox::new(1, 1 << 20, writes));
        let writer = spawn_writer(outbox.clone(), a);
        drop(b);
        let t0 = std::time::Instant::now();
        // The first writes may still be taken by the kernel; the peer's reset fails a later one.
        while outbox.send(frame(0, 0, 1000)) {
            assert!(
                t0.elapsed() < Duration::from_secs(5),
                "writes to a closed peer kept succeeding"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
        assert!(
            ends_within(&writer, Duration::from_secs(1)),
            "the writer task kept waiting after the connection failed"
        );
    }
}
