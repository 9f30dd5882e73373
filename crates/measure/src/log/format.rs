//! The log file format: a self-describing header, then frames of records, then a trailer.
//!
//! All integers little-endian.
//!
//! ```text
//! header:  magic "XFLOG\0\r\n" (8 B) | version u16 | record kind u8 | 0 u8 | process u32 |
//!          instance u32 | ticks_per_ns f64 | clock, channel, spec: each u16 length + UTF-8 |
//!          crc32 u32 of all header bytes before it
//! frame:   codec u8 | 0 0 0 | records u32 | stored length u32 | crc32 u32 of the stored bytes |
//!          stored bytes
//! trailer: a frame with codec 0xFF, records 0, stored length 8, stored bytes = total records u64
//! ```
//!
//! A frame's records are stored column by column (all first words, then all second words, ...),
//! each column delta-encoded (`v[i] - v[i-1]`, wrapping, from 0) and split into byte planes
//! (the lowest byte of every delta, then the second byte, ...). Ids and ticks grow slowly, so
//! the high planes are zeros: zstd level 1 takes about 3 ns per record on such planes against
//! 48 on plain u64 deltas (measured on a 64 Ki-record block of sequential ids and 12-52 tick
//! gaps; 24x smaller). Codec 0 stores those bytes as they are, codec 1 zstd-compresses them. A file is complete only with its trailer, and it gets its final
//! name only after the trailer is written (see `sink.rs`).

use std::io::Write;

/// The first 8 bytes of every log file; `\r\n` catches text-mode mangling.
pub const MAGIC: [u8; 8] = *b"XFLOG\0\r\n";
/// The format version this crate writes and reads.
pub const VERSION: u16 = 1;

pub(crate) const CODEC_RAW: u8 = 0;
pub(crate) const CODEC_ZSTD: u8 = 1;
pub(crate) const CODEC_TRAILER: u8 = 0xFF;
pub(crate) const FRAME_HEADER_LEN: usize = 16;
/// Frames larger than this are taken as corruption (the largest block is 64 Ki records of 3
/// words, 1.5 MiB, and zstd's worst case adds little).
pub(crate) const MAX_FRAME_BYTES: u32 = 16 << 20;

/// What the records of a file are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecordKind {
    /// `(event id, ticks)` per logged call: id, buffered, xoy, downsample, first-last.
    Events = 1,
    /// `(ticks, calls so far)` per period: counter.
    Counts = 2,
    /// `(kind, event id, ticks)`: ret (kind 0 start, 1 end, 2 round trip in ticks).
    Ret = 3,
}

impl RecordKind {
    /// Words (u64) per record.
    pub fn width(self) -> usize {
        match self {
            RecordKind::Events | RecordKind::Counts => 2,
            RecordKind::Ret => 3,
        }
    }

    pub(crate) fn from_u8(b: u8) -> Option<RecordKind> {
        match b {
            1 => Some(RecordKind::Events),
            2 => Some(RecordKind::Counts),
            3 => Some(RecordKind::Ret),
            _ => None,
        }
    }
}

/// The header of a log file: who wrote it, with which handler and clock.
#[derive(Clone, Debug, PartialEq)]
pub struct Header {
    /// Format version ([`VERSION`]).
    pub version: u16,
    /// What the records are.
    pub record_kind: RecordKind,
    /// The writing process's index in the job (the caller's numbering, 0-based).
    pub process: u32,
    /// Which opening of this channel name in this process (0, 1, ...: one per thread that
    /// opened it).
    pub instance: u32,
    /// Clock ticks per nanosecond as the writer calibrated it (`crate::clock::ticks_per_ns`).
    pub ticks_per_ns: f64,
    /// The clock that made the ticks: `tsc` or `monotonic-raw` (`crate::clock::ClockKind`).
    pub clock: String,
    /// The channel's name.
    pub channel: String,
    /// The handler spec, in [`super::HandlerSpec`]'s canonical form.
    pub spec: String,
}

impl Header {
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(64 + self.channel.len() + self.spec.len());
        b.extend_from_slice(&MAGIC);
        b.extend_from_slice(&self.version.to_le_bytes());
        b.push(self.record_kind as u8);
        b.push(0);
        b.extend_from_slice(&self.process.to_le_bytes());
        b.extend_from_slice(&self.instance.to_le_bytes());
        b.extend_from_slice(&self.ticks_per_ns.to_le_bytes());
        for s in [&self.clock, &self.channel, &self.spec] {
            // Names are checked short at open; truncation cannot happen in practice.
            let len = s.len().min(u16::MAX as usize);
            b.extend_from_slice(&(len as u16).to_le_bytes());
            b.extend_from_slice(&s.as_bytes()[..len]);
        }
        let crc = crc32fast::hash(&b);
        b.extend_from_slice(&crc.to_le_bytes());
        b
    }
}

/// Reusable buffers of the frame encoder (no allocation once they have grown).
pub(crate) struct FrameEncoder {
    columns: Vec<u8>,
    compressed: Vec<u8>,
    zstd: Option<zstd::bulk::Compressor<'static>>,
}

/// zstd level of the buffered handler: 1, the fastest regular level (the deltas compress well
/// at any level; the writer thread must keep up with the callers). zstd is built with the block
/// compressor of level 1's strategy (`fast`) only (`.cargo/config.toml`): a higher level needs
/// its strategy taken off that list, or it quietly compresses as `fast` does.
const ZSTD_LEVEL: i32 = 1;

impl FrameEncoder {
    pub(crate) fn new() -> FrameEncoder {
        FrameEncoder {
            columns: Vec::new(),
            compressed: Vec::new(),
            zstd: None,
        }
    }

    /// Writes one frame of `words.len() / width` records to `out`.
    pub(crate) fn write_frame(
        &mut self,
        out: &mut impl Write,
        words: &[u64],
        width: usize,
        codec: u8,
    ) -> std::io::Result<()> {
        let records = words.len() / width;
        self.columns.clear();
        self.columns.resize(records * width * 8, 0);
        for col in 0..width {
            let planes = &mut self.columns[col * records * 8..(col + 1) * records * 8];
            let mut prev = 0u64;
            let mut delta = |r: usize| {
                let v = words[r * width + col];
                let d = v.wrapping_sub(prev);
                prev = v;
                d.to_le_bytes()
            };
            // Eight records at a time: an 8x8 byte transpose, then one 8-byte write per plane
            // (byte-by-byte scattering took most of the writer thread's time).
            let groups = records / 8;
            for g in 0..groups {
                let d: [[u8; 8]; 8] = std::array::from_fn(|i| delta(g * 8 + i));
                for (b, plane) in planes.chunks_exact_mut(records).enumerate() {
                    let w: [u8; 8] = std::array::from_fn(|i| d[i][b]);
                    plane[g * 8..g * 8 + 8].copy_from_slice(&w);
                }
            }
            for r in groups * 8..records {
                for (b, byte) in delta(r).into_iter().enumerate() {
                    planes[b * records + r] = byte;
                }
            }
        }
        let stored: &[u8] = if codec == CODEC_ZSTD {
            let z = match &mut self.zstd {
                Some(z) => z,
                None => self.zstd.insert(zstd::bulk::Compressor::new(ZSTD_LEVEL)?),
            };
            self.compressed.clear();
            self.compressed
                .reserve(zstd::zstd_safe::compress_bound(self.columns.len()));
            z.compress_to_buffer(&self.columns, &mut self.compressed)?;
            &self.compressed
        } else {
            &self.columns
        };
        write_raw_frame(out, codec, records as u32, stored)
    }
}

pub(crate) fn write_raw_frame(
    out: &mut impl Write,
    codec: u8,
    records: u32,
    stored: &[u8],
) -> std::io::Result<()> {
    let mut h = [0u8; FRAME_HEADER_LEN];
    h[0] = codec;
    h[4..8].copy_from_slice(&records.to_le_bytes());
    h[8..12].copy_from_slice(&(stored.len() as u32).to_le_bytes());
    h[12..16].copy_from_slice(&crc32fast::hash(stored).to_le_bytes());
    out.write_all(&h)?;
    out.write_all(stored)
}

/// Undoes the column/delta/byte-plane transform; `bytes.len()` is `records * width * 8`.
pub(crate) fn decode_columns(bytes: &[u8], records: usize, width: usize, out: &mut Vec<u64>) {
    let base = out.len();
    out.resize(base + records * width, 0);
    for col in 0..width {
        let planes = &bytes[col * records * 8..(col + 1) * records * 8];
        let mut prev = 0u64;
        for r in 0..records {
            let mut d = [0u8; 8];
            for (b, byte) in d.iter_mut().enumerate() {
                *byte = planes[b * records + r];
            }
            prev = prev.wrapping_add(u64::from_le_bytes(d));
            out[base + r * width + col] = prev;
        }
    }
}
