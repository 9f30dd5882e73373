//! Clock alignment over the cluster's own connections (the Cloudprofiler paper, sections 3 and 5.2;
//! docs/papers.md): every process runs [`ROUNDS`] ping-pongs against every other, once after all
//! connections are up and before the workers start ([`BEFORE`]), and once after every process said
//! Done and before the connections close ([`AFTER`]): the quiet periods of the run. Each process
//! keeps the minimum round trip of its own pings per peer; after the run the others send theirs to
//! process 0 in a ClockReport frame and process 0 aligns every clock to its own
//! ([`xorflow_measure::clock::Alignment`], in the run report).
//!
//! The exchange with each peer runs concurrently on the network thread, on the two connections
//! of the pair: pings and answers to the peer are written straight to the connection this
//! process made ([`write_frame`]), those from the peer are read from the one it accepted. Both
//! sides stop reading at the point after which the peer sends nothing of the phase, so the
//! frames that follow (the run's, or the report) stay for the next reader.

use super::frame::{self, Kind};
use bytes::{BufMut, BytesMut};
use futures_util::{Stream, StreamExt};
use serde::{Deserialize, Serialize};
use std::io;
use std::sync::Arc;
use tokio::net::TcpStream;
use tokio::time::Instant;
use xorflow_measure::clock::exchange::{Exchange, TickFn};
use xorflow_measure::clock::sample::MinRtt;
use xorflow_measure::clock::{PairSamples, ProcessClock};

pub use xorflow_measure::clock::exchange::ROUNDS;

/// The phase before the workers start.
pub const BEFORE: u8 = 0;
/// The phase after every process finished.
pub const AFTER: u8 = 1;

pub use crate::config::cluster::ClockSource;

impl ClockSource {
    /// This process's clock ([`xorflow_measure::clock::now_ordered`]).
    pub fn process() -> ClockSource {
        ClockSource {
            ticks: Arc::new(xorflow_measure::clock::now_ordered),
            ticks_per_ns: None,
            skew: None,
        }
    }

    /// What process `p` reports about this clock.
    pub fn describe(&self, p: usize) -> ProcessClock {
        match self.ticks_per_ns {
            None => xorflow_measure::clock::process_clock(p),
            Some(tpn) => ProcessClock {
                process: p,
                kind: xorflow_measure::clock::ClockKind::Tsc,
                ticks_per_ns: tpn,
                skew: self.skew,
                monotonic: None,
            },
        }
    }
}

/// What a process sends process 0 after the run: its clock and its pings' samples.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ClockReport {
    /// The sender's clock.
    pub clock: ProcessClock,
    /// Its MinRTT against each peer, before and after.
    pub samples: Vec<PairSamples>,
}

/// The ClockReport frame.
pub fn report_frame(r: &ClockReport) -> Vec<u8> {
    let mut v = vec![Kind::ClockReport as u8];
    serde_json::to_writer(&mut v, r).expect("a clock report serializes");
    v
}

/// Writes one length-delimited frame (4-byte big-endian length, `LengthDelimitedCodec`'s
/// default) to `sock` directly, waiting while it is full.
///
/// # Errors
/// The socket failed.
pub async fn write_frame(sock: &TcpStream, body: &[u8]) -> io::Result<()> {
    let mut buf = BytesMut::with_capacity(4 + body.len());
    buf.put_u32(body.len() as u32);
    buf.put_slice(body);
    let mut off = 0;
    while off < buf.len() {
        sock.writable().await?;
        match sock.try_write(&buf[off..]) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => off += n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// One peer's connections for a phase: where to write, what to read.
pub struct PeerIo<'a, R> {
    /// The peer's index.
    pub process: usize,
    /// The connection this process made (it writes only there).
    pub sock: &'a TcpStream,
    /// The frames of the connection the peer made.
    pub reader: &'a mut R,
}

/// What one peer's exchange gave: its MinRTT, its ClockReport (when asked for) and the frames
/// and bytes written.
pub struct PeerResult {
    /// The peer.
    pub process: usize,
    /// The minimum round trip of this process's pings, or why the exchange failed.
    pub min: Result<MinRtt, String>,
    /// The peer's ClockReport, when one was awaited and arrived.
    pub report: Option<ClockReport>,
    /// Frames this process wrote to the peer.
    pub frames: u64,
    /// Bytes written, length prefixes included.
    pub bytes: u64,
}

/// Runs `phase` with every peer at once until `deadline`; with `want_reports`, also reads each
/// peer's ClockReport, which follows its part of the after phase.
pub async fn run<R>(
    phase: u8,
    rounds: u32,
    ticks: &TickFn,
    peers: Vec<PeerIo<'_, R>>,
    want_reports: bool,
    deadline: Instant,
) -> Vec<PeerResult>
where
    R: Stream<Item = io::Result<BytesMut>> + Unpin,
{
    let each = peers.into_iter().map(|p| async move {
        let mut out = PeerResult {
            process: p.process,
            min: Err(String::new()),
            report: None,
            frames: 0,
            bytes: 0,
        };
        let ex = Exchange::new(rounds, ticks.clone());
        let r = tokio::time::timeout_at(
            deadline,
            with_peer(phase, ex, p.sock, p.reader, want_reports, &mut out),
        )
        .await;
        out.min = match r {
            Ok(Ok(m)) => Ok(m),
            Ok(Err(e)) => Err(format!("process {}: {e}", p.process)),
            Err(_) => Err(format!(
                "process {}: clock alignment did not finish in time",
                p.process
            )),
        };
        out
    });
    futures_util::future::join_all(each).await
}

/// One peer's exchange; the frames written are counted in `out`.
async fn with_peer<R>(
    phase: u8,
    mut ex: Exchange,
    sock: &TcpStream,
    reader: &mut R,
    want_report: bool,
    out: &mut PeerResult,
) -> Result<MinRtt, String>
where
    R: Stream<Item = io::Result<BytesMut>> + Unpin,
{
    let mut send = |f: bytes::Bytes| {
        out.frames += 1;
        out.bytes += 4 + f.len() as u64;
        async move { write_frame(sock, &f).await.map_err(|e| e.to_string()) }
    };
    send(frame::clock(phase, &ex.start())).await?;
    let mut report = None;
    while !ex.finished() || (want_report && report.is_none()) {
        let f = match reader.next().await {
            Some(Ok(f)) => f,
            Some(Err(e)) => return Err(format!("bad frame: {e}")),
            None => return Err("closed its connection during clock alignment".into()),
        };
        match Kind::of(*f.first().ok_or("sent an empty frame")?)? {
            Kind::ClockPing | Kind::ClockPong | Kind::ClockDone => {
                let (p, m) = frame::read_clock(&f)?;
                if p != phase {
                    return Err(format!("clock frame of phase {p} during phase {phase}"));
                }
                if let Some(reply) = ex.on_message(m)? {
                    send(frame::clock(phase, &reply)).await?;
                }
            }
            Kind::ClockReport if want_report => {
                let r: ClockReport = serde_json::from_slice(&f[1..])
                    .map_err(|e| format!("unreadable clock report: {e}"))?;
                report = Some(r);
            }
            // A keep-alive written before the sender's Done.
            Kind::Ping => {}
            Kind::Abort => return Err(String::from_utf8_lossy(&f[1..]).into_owned()),
            other => return Err(format!("{other:?} frame during clock alignment")),
        }
    }
    out.report = report;
    Ok(ex.result())
}
