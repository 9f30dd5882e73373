//! Event-log channels and their handlers (the Cloudprofiler paper, sec. 5.1 and Table III;
//! docs/papers.md).
//!
//! Operators and the runtime open named channels and call [`Channel::log`] with an event
//! (tuple) id; the handler of each channel is chosen by name at run time from a
//! [`LogConfig`] (`--log "window.*=xoy:1/64,default=null" --log-dir DIR`), no rebuild needed.
//!
//! ```no_run
//! use xorflow_measure::log::{LogConfig, Logs};
//! let config = LogConfig::parse("window.*=xoy:1/64,source.*=buffered,default=null")?
//!     .with_dir("logs");
//! let logs = Logs::new(config, 0); // process index 0
//! let mut ch = logs.open("window.emit")?; // one per thread
//! for id in 0..1_000u64 {
//!     ch.log(id); // (id, clock::now()) if id % 64 < 1
//! }
//! ch.close()?; // or drop it; xorflow_measure::log::flush_all() on SIGTERM
//! let dir = xorflow_measure::log::read_dir("logs".as_ref())?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Handlers ([`HandlerSpec`] has the syntax): `null`, `id` (every call, uncompressed blocks),
//! `buffered` (every call, zstd-compressed blocks), `counter[:PERIOD]`, `xoy:X/Y`,
//! `downsample:N`, `first-last`, `ret` (the ReT baseline: [`Channel::ret_start`],
//! [`Channel::ret_end`], [`Channel::ret_rtt`]).
//!
//! How records reach the disk: the caller's thread fills fixed-size blocks (64 Ki records for
//! `id`/`buffered`, 4 Ki for the sampling handlers) without locks or allocation; a full block
//! goes over a channel to the `Logs`' writer thread, which encodes it (columns, deltas, zstd for
//! `buffered`), writes it and returns the block for reuse (at most 4 per channel; a channel
//! whose writer is 3 blocks behind waits). Counters are sampled by the writer thread.
//!
//! Files: `DIR/CHANNEL.pPROCESS.iINSTANCE.xflog`, one per channel opening (INSTANCE counts the
//! openings of a name, one per thread), format in `format.rs`: a header (magic, version,
//! record kind, process, instance, clock name and ticks/ns, channel, handler spec), frames of
//! records with checksums, and a trailer with the record count. A file is written as
//! `….xflog.partial` and renamed when complete ([`Channel::close`], drop, or [`flush_all`]),
//! so a crashed run leaves only `.partial` files, which [`read_dir`] lists apart.
//!
//! Reading: [`read_file`] / [`read_dir`] verify everything and name the file and byte offset of
//! any defect; [`hop_durations`] joins two channels by event id into per-hop durations with
//! error bounds, given a [`ToReference`] clock conversion; [`ret_durations`] does the same for
//! ReT; [`summarize`] gives count and percentiles.

mod block;
mod channel;
mod config;
mod format;
mod join;
mod open;
mod reader;
mod sink;
mod spec;
mod writer;

pub use channel::Channel;
pub use config::LogConfig;
pub use format::{Header, RecordKind, MAGIC, VERSION};
pub use join::{hop_durations, ret_durations, summarize, HopDuration, Hops, Summary, ToReference};
pub use open::{clock_identity, Logs, EVERY_BLOCK_RECORDS, MAX_NAME_LEN, SAMPLED_BLOCK_RECORDS};
pub use reader::{
    read_dir, read_file, CountSample, Event, LogDir, LogFile, ReadError, Records, RetKind,
    RetRecord,
};
pub use sink::flush_all;
pub use spec::{HandlerSpec, SpecError};

use std::path::PathBuf;

/// Errors of opening, writing and completing log files.
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    /// A channel name that cannot be used (it becomes part of a file name).
    #[error("bad log channel name {name:?}: {reason}")]
    BadName {
        /// The name given.
        name: String,
        /// What is wrong with it.
        reason: String,
    },
    /// Creating the directory or the file, or writing its header.
    #[error("{}: {source}", path.display())]
    Io {
        /// The directory or file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The writer thread could not write or complete the channel's file.
    #[error("log channel {channel}: {message}")]
    Write {
        /// The channel's name.
        channel: String,
        /// What failed, with the file's path.
        message: String,
    },
    /// The writer thread could not be started.
    #[error("cannot start the log writer thread: {0}")]
    Spawn(std::io::Error),
}
