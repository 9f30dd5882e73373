//! The wire format between processes: one length-delimited frame per message (the length prefix
//! is tokio-util's `LengthDelimitedCodec`, 4 bytes big-endian), whose first byte is the [`Kind`].
//! Fixed-width little-endian header fields follow; element payloads are postcard-encoded.
//!
//! | kind | fields after the kind byte |
//! |---|---|
//! | Hello | magic `XFLW`, version u16, job id u64, process u32, processes u32, token len u16, token |
//! | Data | edge u32, from worker u32, to worker u32, postcard (tag, lo, hi, epoch, markers, elements) |
//! | DataLastCredit | as Data: the batch that spent the sender's last credit (`credit.rs`) |
//! | End | edge u32, from worker u32, to worker u32 (end of stream, tracking `none`) |
//! | Credit | edge u32, from worker u32, to worker u32, credits u32 (receiver to sender) |
//! | Acks | shard u32, postcard `Flush` (one process's piece for that shard) |
//! | Frontier | shard u32, count u32, count × (component u32, frontier u64) |
//! | Ping | (nothing: liveness while idle) |
//! | Done | JSON of the process's report (to process 0; empty to the others) |
//! | Abort | UTF-8 reason: the sender failed and the job must stop |
//! | Checkpoint | postcard `checkpoint::Message` |
//! | ClockPing | phase u8, seq u32 (clock alignment, `clock_phase.rs`) |
//! | ClockPong | phase u8, seq u32, the answering side's clock u64 (ticks) |
//! | ClockDone | phase u8: the sender's pings of this phase are all answered |
//! | ClockReport | JSON of the sender's clock and MinRTT samples (to process 0, after the run) |

use bytes::{Buf, BufMut, Bytes, BytesMut};
use xorflow_tracking::FrontierUpdate;

/// First bytes of every handshake.
pub const MAGIC: [u8; 4] = *b"XFLW";
/// Bumped on every incompatible change of this format.
pub const PROTOCOL_VERSION: u16 = 3;

/// Message kinds on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    /// Handshake.
    Hello = 1,
    /// A batch for a vertex instance.
    Data = 2,
    /// End of stream on one channel.
    End = 3,
    /// Credits returned by a receiver.
    Credit = 4,
    /// A local acker's flush piece for a tracker shard.
    Acks = 5,
    /// Frontier notifications from a tracker shard.
    Frontier = 6,
    /// Keep-alive.
    Ping = 7,
    /// The sender's workers finished.
    Done = 8,
    /// The sender failed.
    Abort = 9,
    /// A checkpoint report the sender filed, for process 0's coordinator (`checkpoint/`).
    Checkpoint = 10,
    /// A clock-alignment ping (the Cloudprofiler paper's MinRTT, docs/papers.md).
    ClockPing = 11,
    /// The answer to a clock-alignment ping, stamped.
    ClockPong = 12,
    /// The sender's clock pings of a phase are all answered.
    ClockDone = 13,
    /// The sender's clock and samples, for process 0.
    ClockReport = 14,
    /// A batch for a vertex instance that spent the sender's last credit (`credit.rs`).
    DataLastCredit = 15,
}

impl Kind {
    /// The kind of a frame's first byte.
    ///
    /// # Errors
    /// An unknown kind byte, naming it.
    pub fn of(b: u8) -> Result<Kind, String> {
        Ok(match b {
            1 => Kind::Hello,
            2 => Kind::Data,
            3 => Kind::End,
            4 => Kind::Credit,
            5 => Kind::Acks,
            6 => Kind::Frontier,
            7 => Kind::Ping,
            8 => Kind::Done,
            9 => Kind::Abort,
            10 => Kind::Checkpoint,
            11 => Kind::ClockPing,
            12 => Kind::ClockPong,
            13 => Kind::ClockDone,
            14 => Kind::ClockReport,
            15 => Kind::DataLastCredit,
            other => return Err(format!("unknown frame kind {other}")),
        })
    }
}

/// The handshake each side sends first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hello {
    /// Wire format version ([`PROTOCOL_VERSION`]).
    pub version: u16,
    /// Hash of the job's graph and configuration: every process must run the same job.
    pub job_id: u64,
    /// The sender's process index.
    pub process: u32,
    /// Number of processes the sender expects.
    pub processes: u32,
    /// Shared cluster token.
    pub token: String,
}

impl Hello {
    /// Encodes the handshake frame.
    pub fn encode(&self) -> Bytes {
        let mut b = BytesMut::with_capacity(32 + self.token.len());
        b.put_u8(Kind::Hello as u8);
        b.put_slice(&MAGIC);
        b.put_u16_le(self.version);
        b.put_u64_le(self.job_id);
        b.put_u32_le(self.process);
        b.put_u32_le(self.processes);
        b.put_u16_le(self.token.len() as u16);
        b.put_slice(self.token.as_bytes());
        b.freeze()
    }

    /// Decodes a handshake frame.
    ///
    /// # Errors
    /// Not a handshake, wrong magic (garbage) or truncated.
    pub fn decode(mut f: &[u8]) -> Result<Hello, String> {
        if f.len() < 25 || f[0] != Kind::Hello as u8 || f[1..5] != MAGIC {
            return Err("not an xorflow handshake (bad magic)".into());
        }
        f.advance(5);
        let version = f.get_u16_le();
        let job_id = f.get_u64_le();
        let process = f.get_u32_le();
        let processes = f.get_u32_le();
        let n = f.get_u16_le() as usize;
        if f.len() != n {
            return Err("truncated handshake".into());
        }
        let token = String::from_utf8(f.to_vec()).map_err(|_| "handshake token is not UTF-8")?;
        Ok(Hello {
            version,
            job_id,
            process,
            processes,
            token,
        })
    }
}

/// The (edge, sender worker, receiver worker) triple that names a channel; global worker indices.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ChannelId {
    /// Edge index in the graph.
    pub edge: u32,
    /// Sending worker.
    pub from: u32,
    /// Receiving worker.
    pub to: u32,
}

/// Bytes of a [`ChannelId`] header, kind byte included.
pub const CHANNEL_HEADER: usize = 13;

/// A buffer starting with `kind` and `ch`, with room for `extra` more bytes.
pub fn channel_frame(kind: Kind, ch: ChannelId, extra: usize) -> Vec<u8> {
    let mut v = Vec::with_capacity(CHANNEL_HEADER + extra);
    v.put_u8(kind as u8);
    v.put_u32_le(ch.edge);
    v.put_u32_le(ch.from);
    v.put_u32_le(ch.to);
    v
}

/// Reads the channel id of a Data/End/Credit frame and returns the rest.
///
/// # Errors
/// A frame shorter than the header.
pub fn read_channel(f: &[u8]) -> Result<(ChannelId, &[u8]), String> {
    if f.len() < CHANNEL_HEADER {
        return Err("truncated channel frame".into());
    }
    let mut h = &f[1..CHANNEL_HEADER];
    let ch = ChannelId {
        edge: h.get_u32_le(),
        from: h.get_u32_le(),
        to: h.get_u32_le(),
    };
    Ok((ch, &f[CHANNEL_HEADER..]))
}

/// A credit frame returning `n` credits on channel `ch`.
pub fn credit(ch: ChannelId, n: u32) -> Bytes {
    let mut v = channel_frame(Kind::Credit, ch, 4);
    v.put_u32_le(n);
    v.into()
}

/// A frame of `kind` with a `shard` field followed by a postcard-encoded `body`.
pub fn shard_frame<B: serde::Serialize>(kind: Kind, shard: u32, body: &B) -> Bytes {
    let mut v = Vec::with_capacity(64);
    v.put_u8(kind as u8);
    v.put_u32_le(shard);
    postcard::to_extend(body, v)
        .expect("encoding into a Vec cannot fail")
        .into()
}

/// Reads the shard of an Acks frame and decodes its piece.
///
/// # Errors
/// Truncated or undecodable.
pub fn read_acks(f: &[u8]) -> Result<(u32, xorflow_tracking::Flush), String> {
    if f.len() < 5 {
        return Err("truncated acks frame".into());
    }
    let shard = (&f[1..5]).get_u32_le();
    let flush = postcard::from_bytes(&f[5..]).map_err(|e| format!("bad acks frame: {e}"))?;
    Ok((shard, flush))
}

/// A frontier frame from `shard`.
pub fn frontier(shard: u32, ups: &[FrontierUpdate]) -> Bytes {
    let mut v = BytesMut::with_capacity(9 + 12 * ups.len());
    v.put_u8(Kind::Frontier as u8);
    v.put_u32_le(shard);
    v.put_u32_le(ups.len() as u32);
    for u in ups {
        v.put_u32_le(u.component);
        v.put_u64_le(u.frontier);
    }
    v.freeze()
}

/// Decodes a frontier frame.
///
/// # Errors
/// Truncated.
pub fn read_frontier(f: &[u8]) -> Result<(u32, Vec<FrontierUpdate>), String> {
    if f.len() < 9 {
        return Err("truncated frontier frame".into());
    }
    let mut b = &f[1..];
    let shard = b.get_u32_le();
    let n = b.get_u32_le() as usize;
    if b.len() != n * 12 {
        return Err("truncated frontier frame".into());
    }
    let ups = (0..n)
        .map(|_| FrontierUpdate {
            component: b.get_u32_le(),
            frontier: b.get_u64_le(),
        })
        .collect();
    Ok((shard, ups))
}

/// A frame of just a kind byte and a byte payload (Ping, Done, Abort).
pub fn simple(kind: Kind, payload: &[u8]) -> Bytes {
    let mut v = BytesMut::with_capacity(1 + payload.len());
    v.put_u8(kind as u8);
    v.put_slice(payload);
    v.freeze()
}

/// A clock-alignment message of `phase` (0 before the run, 1 after).
pub fn clock(phase: u8, m: &xorflow_measure::clock::exchange::Message) -> Bytes {
    use xorflow_measure::clock::exchange::Message;
    let mut v = BytesMut::with_capacity(14);
    match *m {
        Message::Ping { seq } => {
            v.put_u8(Kind::ClockPing as u8);
            v.put_u8(phase);
            v.put_u32_le(seq);
        }
        Message::Pong { seq, stamp } => {
            v.put_u8(Kind::ClockPong as u8);
            v.put_u8(phase);
            v.put_u32_le(seq);
            v.put_u64_le(stamp);
        }
        Message::Done => {
            v.put_u8(Kind::ClockDone as u8);
            v.put_u8(phase);
        }
    }
    v.freeze()
}

/// Decodes a ClockPing, ClockPong or ClockDone frame: its phase and message.
///
/// # Errors
/// Another kind, or the wrong length for its kind.
pub fn read_clock(f: &[u8]) -> Result<(u8, xorflow_measure::clock::exchange::Message), String> {
    use xorflow_measure::clock::exchange::Message;
    let kind = Kind::of(*f.first().ok_or("empty frame")?)?;
    let want = match kind {
        Kind::ClockPing => 6,
        Kind::ClockPong => 14,
        Kind::ClockDone => 2,
        other => return Err(format!("{other:?} frame where a clock frame was expected")),
    };
    if f.len() != want {
        return Err(format!(
            "{kind:?} frame of {} bytes, expected {want}",
            f.len()
        ));
    }
    let mut b = &f[2..];
    let m = match kind {
        Kind::ClockPing => Message::Ping {
            seq: b.get_u32_le(),
        },
        Kind::ClockPong => Message::Pong {
            seq: b.get_u32_le(),
            stamp: b.get_u64_le(),
        },
        _ => Message::Done,
    };
    Ok((f[1], m))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hello_round_trip_and_garbage() {
        let h = Hello {
            version: PROTOCOL_VERSION,
            job_id: 0xdead_beef,
            process: 2,
            processes: 3,
            token: "s3cret".into(),
        };
        assert_eq!(Hello::decode(&h.encode()).unwrap(), h);
        assert!(Hello::decode(b"GET / HTTP/1.1\r\n\r\nxxxxxxxxxxxxxxxx").is_err());
        let mut short = h.encode().to_vec();
        short.pop();
        assert!(Hello::decode(&short).is_err());
    }

    #[test]
    fn channel_frames_and_frontiers_round_trip() {
        let ch = ChannelId {
            edge: 3,
            from: 1,
            to: 4,
        };
        let c = credit(ch, 7);
        let (got, rest) = read_channel(&c).unwrap();
        assert_eq!(got, ch);
        assert_eq!((&rest[..]).get_u32_le(), 7);
        let ups = vec![FrontierUpdate {
            component: 2,
            frontier: 99,
        }];
        assert_eq!(read_frontier(&frontier(1, &ups)).unwrap(), (1, ups));
        let mut f = xorflow_tracking::Flush::default();
        f.heartbeats
            .push(xorflow_tracking::ack::Heartbeat { source: 1, time: 5 });
        assert_eq!(read_acks(&shard_frame(Kind::Acks, 3, &f)).unwrap(), (3, f));
        assert!(Kind::of(200).is_err());
    }

    #[test]
    fn clock_frames_round_trip_and_refuse_bad_lengths() {
        use xorflow_measure::clock::exchange::Message;
        for m in [
            Message::Ping { seq: 7 },
            Message::Pong {
                seq: 99,
                stamp: u64::MAX - 3,
            },
            Message::Done,
        ] {
            let f = clock(1, &m);
            assert_eq!(read_clock(&f).unwrap(), (1, m));
            let mut long = f.to_vec();
            long.push(0);
            assert!(read_clock(&long).unwrap_err().contains("expected"));
        }
        assert!(read_clock(&simple(Kind::Ping, &[])).is_err());
        assert!(read_clock(&[]).is_err());
    }
}
