//! A TCP proxy that delays every byte by a one-way delay in each direction: the same delay
//! [`DelayLine`] gives xorflow's own connections (`transport.rs`), for engines whose network
//! stack is not ours. `xorflow-lab bench wan` puts Flink's TaskManagers behind it
//! (`peers/flink/.../ProxiedMiniCluster.java`, docs/wan.md "Flink behind the proxy"), and
//! `xorflow-lab delay-proxy` offers it to anyone.
//!
//! Each route listens on one address and forwards every connection to one upstream address.
//! Per connection and direction, a reader task stamps each chunk it reads with its due time
//! (arrival + one-way delay, FIFO) and a writer task writes it once due, so the byte stream keeps
//! its order and its timing shifted by the delay, and a slow direction never holds up the other
//! or another connection. What is in flight per direction is bounded ([`IN_FLIGHT_CHUNKS`]
//! chunks of at most [`CHUNK`] bytes): a receiver that stops reading backpressures the sender as
//! TCP would, one window later. A closed or failed side closes the other after the delay.
//!
//! Like the delay inside xorflow, this is user-space delay: the kernel's own TCP acks between
//! the proxy and each endpoint are immediate (docs/wan.md, "What a user-space delay leaves out").

use super::DelayLine;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

/// Largest chunk read at once, bytes.
pub const CHUNK: usize = 64 * 1024;
/// Chunks in flight per direction of a connection (up to 16 MiB: more than 100 ms of any
/// stream this machine produces).
pub const IN_FLIGHT_CHUNKS: usize = 256;

/// One route: connections to `listen` are forwarded to `upstream`.
#[derive(Debug)]
pub struct Route {
    /// Where the proxy accepts connections (bound by the caller, so it knows the port).
    pub listen: std::net::TcpListener,
    /// Where it forwards them.
    pub upstream: SocketAddr,
}

/// What the proxy has done so far (shared with its tasks).
#[derive(Debug, Default)]
pub struct ProxyCounters {
    /// Connections accepted.
    pub connections: AtomicU64,
    /// Bytes forwarded, both directions.
    pub bytes: AtomicU64,
    /// Connections whose upstream could not be reached.
    pub refused: AtomicU64,
}

/// A running proxy: its routes serve on their own thread until this is dropped.
pub struct DelayProxy {
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
    /// Counters of the proxy's work.
    pub counters: Arc<ProxyCounters>,
}

impl DelayProxy {
    /// Starts serving `routes`, delaying each direction by `one_way` (± `jitter`, FIFO).
    ///
    /// # Errors
    /// A listener cannot be handed to tokio, or the runtime cannot start.
    pub fn start(routes: Vec<Route>, one_way: Duration, jitter: Duration) -> std::io::Result<Self> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let counters = Arc::new(ProxyCounters::default());
        let mut listeners = Vec::new();
        for r in routes {
            r.listen.set_nonblocking(true)?;
            listeners.push((r.listen, r.upstream));
        }
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let c = counters.clone();
        let thread = std::thread::Builder::new()
            .name("delay-proxy".into())
            .spawn(move || {
                rt.block_on(async move {
                    for (l, up) in listeners {
                        match TcpListener::from_std(l) {
                            Ok(l) => {
                                tokio::spawn(accept_loop(l, up, one_way, jitter, c.clone()));
                            }
                            Err(e) => eprintln!("delay-proxy: cannot serve a listener: {e}"),
                        }
                    }
                    let _ = stopped.await;
                });
            })?;
        Ok(DelayProxy {
            stop: Some(stop),
            thread: Some(thread),
            counters,
        })
    }

    /// Serves until the process ends (the `xorflow-lab delay-proxy` command).
    pub fn wait(mut self) {
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for DelayProxy {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

async fn accept_loop(
    l: TcpListener,
    upstream: SocketAddr,
    one_way: Duration,
    jitter: Duration,
    c: Arc<ProxyCounters>,
) {
    let mut seed = 0u64;
    loop {
        let (client, _) = match l.accept().await {
            Ok(x) => x,
            Err(e) => {
                eprintln!("delay-proxy: accept on {:?} failed: {e}", l.local_addr());
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        c.connections.fetch_add(1, Ordering::Relaxed);
        seed += 2;
        let c = c.clone();
        tokio::spawn(async move {
            let server = match TcpStream::connect(upstream).await {
                Ok(s) => s,
                Err(e) => {
                    c.refused.fetch_add(1, Ordering::Relaxed);
                    eprintln!("delay-proxy: cannot reach upstream {upstream}: {e}");
                    return;
                }
            };
            let _ = client.set_nodelay(true);
            let _ = server.set_nodelay(true);
            let (cr, cw) = client.into_split();
            let (sr, sw) = server.into_split();
            let line = |s| DelayLine::new(one_way, jitter, s);
            tokio::spawn(direction(cr, sw, line(seed), c.clone()));
            tokio::spawn(direction(sr, cw, line(seed + 1), c));
        });
    }
}

/// Forwards one direction: read, stamp, hold until due, write. `None` as the line: no delay.
async fn direction(
    mut from: OwnedReadHalf,
    mut to: OwnedWriteHalf,
    line: Option<DelayLine>,
    c: Arc<ProxyCounters>,
) {
    let (tx, mut rx) = mpsc::channel::<(Instant, Option<bytes::Bytes>)>(IN_FLIGHT_CHUNKS);
    let reader = async move {
        let mut line = line;
        let mut buf = bytes::BytesMut::with_capacity(CHUNK);
        loop {
            buf.reserve(CHUNK);
            let n = from.read_buf(&mut buf).await.unwrap_or(0);
            let now = Instant::now();
            let due = line.as_mut().map_or(now, |l| l.due(now));
            // End of stream (or a failed read) travels with the delay too: the other side sees
            // the close when it would have seen the next byte.
            let chunk = (n > 0).then(|| buf.split().freeze());
            let end = chunk.is_none();
            if tx.send((due, chunk)).await.is_err() || end {
                return;
            }
        }
    };
    let writer = async move {
        while let Some((due, chunk)) = rx.recv().await {
            tokio::time::sleep_until(due.into()).await;
            let Some(chunk) = chunk else { break };
            if to.write_all(&chunk).await.is_err() {
                break;
            }
            c.bytes.fetch_add(chunk.len() as u64, Ordering::Relaxed);
        }
        let _ = to.shutdown().await;
    };
    tokio::join!(reader, writer);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::TcpListener as StdListener;

    /// An echo server: returns what it reads, stamped by nothing; closes when the client does.
    fn echo() -> SocketAddr {
        let l = StdListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        std::thread::spawn(move || {
            for s in l.incoming() {
                let mut s = s.unwrap();
                std::thread::spawn(move || {
                    let mut b = [0u8; 4096];
                    loop {
                        match s.read(&mut b) {
                            Ok(0) | Err(_) => return,
                            Ok(n) => s.write_all(&b[..n]).unwrap(),
                        }
                    }
                });
            }
        });
        addr
    }

    fn proxy(upstream: SocketAddr, rtt_ms: u64) -> (DelayProxy, SocketAddr) {
        let listen = StdListener::bind("127.0.0.1:0").unwrap();
        let addr = listen.local_addr().unwrap();
        let p = DelayProxy::start(
            vec![Route { listen, upstream }],
            Duration::from_millis(rtt_ms / 2),
            Duration::ZERO,
        )
        .unwrap();
        (p, addr)
    }

    #[test]
    fn a_round_trip_through_the_proxy_takes_the_rtt_and_keeps_the_bytes() {
        let (p, addr) = proxy(echo(), 40);
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        s.set_nodelay(true).unwrap();
        let mut rtts = Vec::new();
        for k in 0..10u8 {
            let msg: Vec<u8> = (0..1000).map(|i| (i as u8).wrapping_mul(k)).collect();
            let t0 = Instant::now();
            s.write_all(&msg).unwrap();
            let mut back = vec![0u8; msg.len()];
            s.read_exact(&mut back).unwrap();
            rtts.push(t0.elapsed());
            assert_eq!(back, msg, "round {k}");
        }
        eprintln!("40 ms RTT through the proxy: {rtts:?}");
        for r in &rtts {
            // Both directions delayed 20 ms; a few ms over for tokio's timer and scheduling.
            assert!(
                *r >= Duration::from_millis(40) && *r < Duration::from_millis(60),
                "{r:?}"
            );
        }
        assert_eq!(p.counters.connections.load(Ordering::Relaxed), 1);
        // The writer counts a chunk after writing it, so the client can read the last echo
        // before the count includes it: wait for the count (never more than a second).
        let t0 = Instant::now();
        while p.counters.bytes.load(Ordering::Relaxed) < 2 * 10 * 1000
            && t0.elapsed() < Duration::from_secs(1)
        {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(p.counters.bytes.load(Ordering::Relaxed), 2 * 10 * 1000);
    }

    #[test]
    fn a_stream_keeps_its_order_and_its_rate_and_the_close_arrives() {
        let (_p, addr) = proxy(echo(), 20);
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        let mut r = s.try_clone().unwrap();
        // 4 MB each way: the bound on what is in flight must not deadlock a full-duplex stream.
        let reader = std::thread::spawn(move || {
            let mut all = Vec::new();
            r.read_to_end(&mut all).unwrap();
            all
        });
        let data: Vec<u8> = (0..4_000_000u32).map(|i| (i % 251) as u8).collect();
        s.write_all(&data).unwrap();
        s.shutdown(std::net::Shutdown::Write).unwrap();
        assert_eq!(reader.join().unwrap(), data);
    }

    #[test]
    fn an_unreachable_upstream_closes_the_client_and_is_counted() {
        let gone = StdListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        let (p, addr) = proxy(gone, 0);
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut b = [0u8; 1];
        assert_eq!(s.read(&mut b).unwrap(), 0, "closed, not hanging");
        assert_eq!(p.counters.refused.load(Ordering::Relaxed), 1);
    }
}
