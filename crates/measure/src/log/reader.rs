//! Reading log files back: header check, frames (raw or zstd), trailer; every defect is an
//! error naming the file and the byte offset, never a panic.

use std::path::{Path, PathBuf};

use super::format::{
    decode_columns, Header, RecordKind, CODEC_RAW, CODEC_TRAILER, CODEC_ZSTD, FRAME_HEADER_LEN,
    MAGIC, MAX_FRAME_BYTES, VERSION,
};

/// One logged call: event `id` at `ticks` of the writing process's clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Event {
    /// The event (tuple) id given to `log`.
    pub id: u64,
    /// `crate::clock::now()` when it was logged.
    pub ticks: u64,
}

/// One sample of a counter channel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CountSample {
    /// When the sample was taken (the writer thread's `crate::clock::now()`).
    pub ticks: u64,
    /// Calls logged on the channel from its opening up to then.
    pub calls: u64,
}

/// What a ReT record says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RetKind {
    /// `ret_start(id)`: `ticks` is the start time.
    Start,
    /// `ret_end(id)`: `ticks` is when the end event came back.
    End,
    /// `ret_rtt(id, ticks)`: `ticks` is a round trip of the ReTACK path (a duration).
    RoundTrip,
}

/// One record of a `ret` channel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetRecord {
    /// Which call wrote it.
    pub kind: RetKind,
    /// The event id.
    pub id: u64,
    /// A time (start, end) or a duration (round trip), in ticks.
    pub ticks: u64,
}

/// A file's records, by the header's record kind.
#[derive(Clone, Debug, PartialEq)]
pub enum Records {
    /// id, buffered, xoy, downsample, first-last.
    Events(Vec<Event>),
    /// counter.
    Counts(Vec<CountSample>),
    /// ret.
    Ret(Vec<RetRecord>),
}

impl Records {
    /// Number of records.
    pub fn len(&self) -> usize {
        match self {
            Records::Events(v) => v.len(),
            Records::Counts(v) => v.len(),
            Records::Ret(v) => v.len(),
        }
    }

    /// True when there is none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A complete log file, read back.
#[derive(Clone, Debug, PartialEq)]
pub struct LogFile {
    /// Where it was read from.
    pub path: PathBuf,
    /// Its header.
    pub header: Header,
    /// Its records, in the order logged.
    pub records: Records,
}

/// A file that is not a complete, intact log file: `what` is wrong at byte `offset`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}: {what} at byte {offset}", path.display())]
pub struct ReadError {
    /// The file.
    pub path: PathBuf,
    /// Byte offset of the defect.
    pub offset: u64,
    /// What is wrong.
    pub what: String,
}

/// The complete files of a directory, and the ones a crashed or killed run left unfinished.
#[derive(Clone, Debug, Default)]
pub struct LogDir {
    /// Every `*.xflog` file, sorted by path.
    pub files: Vec<LogFile>,
    /// Every `*.xflog.partial` file (never completed; not read).
    pub incomplete: Vec<PathBuf>,
}

/// Reads every `*.xflog` file of `dir` (not recursive). Errors: the first file that fails to
/// read (a directory that cannot be listed has offset 0).
pub fn read_dir(dir: &Path) -> Result<LogDir, ReadError> {
    let err = |e: std::io::Error| ReadError {
        path: dir.to_path_buf(),
        offset: 0,
        what: format!("cannot list the directory: {e}"),
    };
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(err)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    paths.sort();
    let mut out = LogDir::default();
    for p in paths {
        let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name.ends_with(".xflog") {
            out.files.push(read_file(&p)?);
        } else if name.ends_with(".xflog.partial") {
            out.incomplete.push(p);
        }
    }
    Ok(out)
}

/// Reads one log file. Errors: unreadable file, wrong magic, unknown version or record kind,
/// header or frame checksum mismatch, a frame cut short or implausibly large, undecodable
/// zstd, a missing trailer (the file was cut), a record count differing from the trailer's,
/// bytes after the trailer.
pub fn read_file(path: &Path) -> Result<LogFile, ReadError> {
    let bytes = std::fs::read(path).map_err(|e| ReadError {
        path: path.to_path_buf(),
        offset: 0,
        what: format!("cannot read: {e}"),
    })?;
    let mut c = Cursor {
        path,
        bytes: &bytes,
        at: 0,
    };
    let header = read_header(&mut c)?;
    let width = header.record_kind.width();
    let mut words = Vec::new();
    loop {
        let frame_at = c.at;
        let h = c.take(
            FRAME_HEADER_LEN,
            "frame header (file cut short: no trailer)",
        )?;
        let codec = h[0];
        let records = u32_at(h, 4) as usize;
        let stored_len = u32_at(h, 8);
        let crc = u32_at(h, 12);
        if h[1..4] != [0, 0, 0] {
            return Err(c.error_at(frame_at, "frame header with non-zero padding (corrupt)"));
        }
        if stored_len > MAX_FRAME_BYTES || records * width * 8 > MAX_FRAME_BYTES as usize {
            return Err(c.error_at(frame_at, "implausible frame size (corrupt)"));
        }
        let stored = c.take(stored_len as usize, "frame body (file cut short)")?;
        if crc32fast::hash(stored) != crc {
            return Err(c.error_at(frame_at, "frame checksum mismatch (corrupt)"));
        }
        match codec {
            CODEC_TRAILER => {
                if records != 0 {
                    return Err(c.error_at(frame_at, "trailer with a record count (corrupt)"));
                }
                let total = u64::from_le_bytes(
                    stored
                        .try_into()
                        .map_err(|_| c.error_at(frame_at, "trailer of the wrong length"))?,
                );
                if total as usize * width != words.len() {
                    return Err(c.error_at(
                        frame_at,
                        &format!(
                            "trailer says {total} records, frames hold {}",
                            words.len() / width
                        ),
                    ));
                }
                if c.at != bytes.len() {
                    return Err(c.error_at(c.at, "bytes after the trailer"));
                }
                break;
            }
            CODEC_RAW => {
                if stored.len() != records * width * 8 {
                    return Err(c.error_at(frame_at, "raw frame length differs from its count"));
                }
                decode_columns(stored, records, width, &mut words);
            }
            CODEC_ZSTD => {
                let raw = zstd::bulk::decompress(stored, records * width * 8)
                    .map_err(|e| c.error_at(frame_at, &format!("zstd frame: {e}")))?;
                if raw.len() != records * width * 8 {
                    return Err(c.error_at(frame_at, "zstd frame length differs from its count"));
                }
                decode_columns(&raw, records, width, &mut words);
            }
            other => return Err(c.error_at(frame_at, &format!("unknown frame codec {other}"))),
        }
    }
    let records = to_records(header.record_kind, &words).map_err(|what| c.error_at(0, &what))?;
    Ok(LogFile {
        path: path.to_path_buf(),
        header,
        records,
    })
}

fn to_records(kind: RecordKind, w: &[u64]) -> Result<Records, String> {
    Ok(match kind {
        RecordKind::Events => Records::Events(
            w.chunks_exact(2)
                .map(|r| Event {
                    id: r[0],
                    ticks: r[1],
                })
                .collect(),
        ),
        RecordKind::Counts => Records::Counts(
            w.chunks_exact(2)
                .map(|r| CountSample {
                    ticks: r[0],
                    calls: r[1],
                })
                .collect(),
        ),
        RecordKind::Ret => {
            let mut v = Vec::with_capacity(w.len() / 3);
            for r in w.chunks_exact(3) {
                let kind = match r[0] {
                    0 => RetKind::Start,
                    1 => RetKind::End,
                    2 => RetKind::RoundTrip,
                    k => return Err(format!("unknown ReT record kind {k} (corrupt)")),
                };
                v.push(RetRecord {
                    kind,
                    id: r[1],
                    ticks: r[2],
                });
            }
            Records::Ret(v)
        }
    })
}

fn read_header(c: &mut Cursor<'_>) -> Result<Header, ReadError> {
    let magic = c.take(8, "magic (file too short)")?;
    if magic != MAGIC {
        return Err(c.error_at(0, "not an xorflow log file (wrong magic)"));
    }
    let fixed = c.take(2 + 1 + 1 + 4 + 4 + 8, "header (file cut short)")?;
    let version = u16::from_le_bytes([fixed[0], fixed[1]]);
    if version != VERSION {
        return Err(c.error_at(8, &format!("format version {version}, expected {VERSION}")));
    }
    if fixed[3] != 0 {
        return Err(c.error_at(11, "header with non-zero padding (corrupt)"));
    }
    let record_kind = RecordKind::from_u8(fixed[2])
        .ok_or_else(|| c.error_at(10, &format!("unknown record kind {}", fixed[2])))?;
    let process = u32_at(fixed, 4);
    let instance = u32_at(fixed, 8);
    let ticks_per_ns = f64::from_le_bytes(fixed[12..20].try_into().expect("8 bytes"));
    let mut strings = Vec::with_capacity(3);
    for what in ["clock name", "channel name", "handler spec"] {
        let at = c.at;
        let len = c.take(2, "header (file cut short)")?;
        let len = u16::from_le_bytes([len[0], len[1]]) as usize;
        let s = c.take(len, "header (file cut short)")?;
        let s =
            std::str::from_utf8(s).map_err(|_| c.error_at(at, &format!("{what} is not UTF-8")))?;
        strings.push(s.to_string());
    }
    let end = c.at;
    let crc = c.take(4, "header checksum (file cut short)")?;
    if crc32fast::hash(&c.bytes[..end]) != u32_at(crc, 0) {
        return Err(c.error_at(end, "header checksum mismatch (corrupt)"));
    }
    let spec = strings.pop().unwrap_or_default();
    let channel = strings.pop().unwrap_or_default();
    let clock = strings.pop().unwrap_or_default();
    Ok(Header {
        version,
        record_kind,
        process,
        instance,
        ticks_per_ns,
        clock,
        channel,
        spec,
    })
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

struct Cursor<'a> {
    path: &'a Path,
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], ReadError> {
        if self.bytes.len() - self.at < n {
            return Err(self.error_at(self.at, &format!("missing {what}")));
        }
        let s = &self.bytes[self.at..self.at + n];
        self.at += n;
        Ok(s)
    }

    fn error_at(&self, offset: usize, what: &str) -> ReadError {
        ReadError {
            path: self.path.to_path_buf(),
            offset: offset as u64,
            what: what.to_string(),
        }
    }
}
