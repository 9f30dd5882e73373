//! Reading the connection from one other process on the network thread: frames are taken as
//! they arrive ([`read_loop`]) or held back by an injected delay first ([`read_delayed`], the
//! wide-area paper's experiments, docs/papers.md), and each is routed ([`route`]): batches into the
//! receiving worker's inbound queue, credits to the sender's counter, ack pieces to the tracker
//! shard hosted here, frontiers to every local worker's inbox. How reading ended goes to the
//! serving loop of `transport.rs`.

use super::frame::{self, ChannelId, Kind};
use super::transport::{Delivery, Event, Reader};
use bytes::{Buf, Bytes};
use futures_util::StreamExt;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc::{unbounded_channel, UnboundedSender};
use tokio::time::{timeout, Instant};

/// How reading one connection ended.
pub(super) enum Ending {
    /// Done, with its report.
    Done(Vec<u8>),
    /// The other process aborted, saying why.
    Aborted(String),
    /// The connection failed, why.
    Failed(String),
}

/// The next frame from process `process`, or why there is none.
async fn next_frame(r: &mut Reader, peer_timeout: Duration) -> Result<Bytes, String> {
    match timeout(peer_timeout, r.next()).await {
        Err(_) => Err(silent(peer_timeout)),
        Ok(None) => Err(CLOSED.into()),
        Ok(Some(Err(e))) => Err(read_failure(&e)),
        Ok(Some(Ok(f))) if f.is_empty() => Err(EMPTY_FRAME.into()),
        Ok(Some(Ok(f))) => Ok(f.freeze()),
    }
}

/// Why reading stopped when the other process closed its connection.
pub(super) const CLOSED: &str = "closed its connection before finishing: it died or was killed";
/// Why reading stopped at an empty frame.
pub(super) const EMPTY_FRAME: &str = "sent an empty frame";

/// Why reading stopped after `allowed` without a frame.
pub(super) fn silent(allowed: Duration) -> String {
    format!("sent nothing for {allowed:?}: presumed dead")
}

/// Why reading stopped at `e` (a reset connection, or a frame the codec refused).
pub(super) fn read_failure(e: &std::io::Error) -> String {
    use std::io::ErrorKind::{BrokenPipe, ConnectionAborted, ConnectionReset};
    if matches!(e.kind(), ConnectionReset | ConnectionAborted | BrokenPipe) {
        format!("closed its connection before finishing ({e}): it died or was killed")
    } else {
        format!("sent a bad frame: {e}")
    }
}

/// What reading the connection from one process needs: whose it is, where its frames go and
/// whom to tell how it ended.
pub(super) struct ReadCtx {
    /// The sending process.
    pub(super) process: usize,
    /// Its address (for errors).
    pub(super) addr: SocketAddr,
    pub(super) delivery: Arc<Delivery>,
    pub(super) events: UnboundedSender<Event>,
    /// Silence for this long fails the job.
    pub(super) peer_timeout: Duration,
    /// How long the first frame may take: the start-up timeout. The other process may still be
    /// aligning clocks with a farther peer (100 round trips of that pair's RTT) and sends
    /// nothing here until it is done; at 221 ms that is 22 s (docs/wan.md, "A standalone Flink
    /// cluster in namespaces", the failed run).
    pub(super) first_timeout: Duration,
}

impl ReadCtx {
    /// The silence allowed before the next frame, the first one's if `first`.
    pub(super) fn silence(&self, first: bool) -> Duration {
        if first {
            self.first_timeout.max(self.peer_timeout)
        } else {
            self.peer_timeout
        }
    }

    /// Routes one frame; `Some` when it ends the connection's reading.
    pub(super) fn take(&self, f: Bytes) -> Option<Ending> {
        match route(&self.delivery, f) {
            Ok(Routed::More) => None,
            Ok(Routed::Done(report)) => Some(Ending::Done(report)),
            Ok(Routed::Abort(why)) => Some(Ending::Aborted(why)),
            Err(e) => Some(Ending::Failed(format!(
                "({}) protocol error: {e} (from process {})",
                self.addr, self.process
            ))),
        }
    }

    /// Tells the serving loop how reading ended; Done hands the reader back (the clock
    /// alignment after the run reads on it), so it comes with `r`.
    pub(super) fn end(&self, end: Ending, r: Option<Box<Reader>>) {
        let p = self.process;
        let _ = self.events.send(match (end, r) {
            (Ending::Done(report), Some(r)) => Event::Done(p, report, r),
            (Ending::Done(_), None) => Event::Failed(p, "said Done, its reader is gone".into()),
            (Ending::Aborted(why), _) => Event::Aborted(p, why),
            (Ending::Failed(why), _) => Event::Failed(p, why),
        });
    }
}

/// Reads what `cx.process` sends and routes it: at once, or through `delay`'s line.
pub(super) async fn read_loop(cx: ReadCtx, r: Reader, delay: Option<super::delay::DelayLine>) {
    match delay {
        Some(line) => read_delayed(cx, r, line).await,
        None => read_plain(cx, r, true).await,
    }
}

/// Reads and routes frames as they come until reading ends; `first` when no frame came yet
/// (the start-up timeout applies to it).
pub(super) async fn read_plain(cx: ReadCtx, mut r: Reader, mut first: bool) {
    loop {
        let end = match next_frame(&mut r, cx.silence(std::mem::take(&mut first))).await {
            Ok(f) => match cx.take(f) {
                None => continue,
                Some(end) => end,
            },
            Err(why) => Ending::Failed(why),
        };
        return cx.end(end, Some(Box::new(r)));
    }
}

/// What the reading half of a delayed connection passes to its routing half.
enum Arrival {
    Frame(Bytes),
    Failed(String),
    /// The reader, after the last frame (Done or Abort): Done hands it back for the clock
    /// alignment after the run.
    Reader(Box<Reader>),
}

/// [`read_loop`] with an injected delay (`delay/mod.rs`): a task reads frames as they come
/// (so the peer timeout and the socket see the real connection) and stamps each with its due
/// time; this task routes them in order once due. A failure is delayed like a frame: what the
/// other process sent before it dies still arrives first.
async fn read_delayed(cx: ReadCtx, mut r: Reader, mut line: super::delay::DelayLine) {
    let (tx, mut rx) = unbounded_channel::<(std::time::Instant, Arrival)>();
    let silence = [cx.silence(true), cx.silence(false)];
    tokio::spawn(async move {
        let mut first = true;
        loop {
            let allowed = silence[usize::from(!std::mem::take(&mut first))];
            let (arrival, last) = match next_frame(&mut r, allowed).await {
                Ok(f) => {
                    let last = matches!(Kind::of(f[0]), Ok(Kind::Done | Kind::Abort));
                    (Arrival::Frame(f), last)
                }
                Err(why) => (Arrival::Failed(why), true),
            };
            let due = line.due(std::time::Instant::now());
            // The routing half is gone (it met the end or a protocol error): stop reading.
            if tx.send((due, arrival)).is_err() {
                return;
            }
            if last {
                let _ = tx.send((due, Arrival::Reader(Box::new(r))));
                return;
            }
        }
    });
    let mut done = None;
    while let Some((due, arrival)) = rx.recv().await {
        // Never early; late by tokio's timer, which wakes on the millisecond tick after a
        // deadline (+1.0 ms at the median; aiming a tick early delivered up to 0.6 ms early:
        // docs/wan.md).
        tokio::time::sleep_until(Instant::from_std(due)).await;
        match arrival {
            Arrival::Frame(f) => match cx.take(f) {
                None => {}
                // Its reader comes next.
                Some(Ending::Done(report)) => done = Some(report),
                Some(end) => return cx.end(end, None),
            },
            Arrival::Failed(why) => return cx.end(Ending::Failed(why), None),
            Arrival::Reader(r) => {
                if let Some(report) = done.take() {
                    return cx.end(Ending::Done(report), Some(r));
                }
            }
        }
    }
    let why = "its delayed reader stopped (the network thread is failing)".to_string();
    cx.end(Ending::Failed(why), None);
}

enum Routed {
    More,
    Done(Vec<u8>),
    Abort(String),
}

fn route(d: &Delivery, f: Bytes) -> Result<Routed, String> {
    match Kind::of(f[0])? {
        Kind::Data | Kind::DataLastCredit | Kind::End => {
            let (ch, _) = frame::read_channel(&f)?;
            let (q, w) = d
                .routes
                .inbound
                .get(&ch)
                .ok_or_else(|| format!("batch for unknown channel {ch:?}"))?;
            let w = *w;
            q.push(f)
                .map_err(|_| format!("channel {ch:?} overflowed its credits"))?;
            d.unparkers.unpark(w);
        }
        Kind::Credit => {
            let (ch, mut rest): (ChannelId, &[u8]) = frame::read_channel(&f)?;
            if rest.len() != 4 {
                return Err("bad credit frame".into());
            }
            let n = rest.get_u32_le() as usize;
            let (c, w) = d
                .routes
                .credits
                .get(&ch)
                .ok_or_else(|| format!("credit for unknown channel {ch:?}"))?;
            // Only a sender that ran out of credit waits for it; waking one that still had
            // some costs a futex call and often a context switch per Credit frame.
            if c.fetch_add(n, Ordering::AcqRel) == 0 {
                d.unparkers.unpark(*w);
            }
        }
        k @ (Kind::Acks | Kind::Frontier | Kind::Checkpoint) => d.inlets.deliver(k, &f)?,
        Kind::Ping => {}
        Kind::Done => return Ok(Routed::Done(f[1..].to_vec())),
        Kind::Abort => {
            return Ok(Routed::Abort(String::from_utf8_lossy(&f[1..]).into_owned()));
        }
        Kind::Hello => return Err("second handshake".into()),
        // Clock frames come only before the sender's workers start and after its Done.
        k @ (Kind::ClockPing | Kind::ClockPong | Kind::ClockDone | Kind::ClockReport) => {
            return Err(format!("{k:?} frame during the run"));
        }
    }
    Ok(Routed::More)
}
