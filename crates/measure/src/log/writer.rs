//! The writer thread: encodes (and for `buffered` zstd-compresses) blocks, writes the files,
//! samples counters, and completes files (trailer, then rename) when their channel finishes.
//!
//! One per [`super::Logs`]; it ends when every sender (the `Logs` and its channels) is gone.
//! The Cloudprofiler paper's buffered handler uses several compression threads and one I/O thread;
//! on this project's 2-core machines one thread does both (measured in
//! `bench/results/measure/handlers.md`).

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};

use super::block::Block;
use super::format::{write_raw_frame, FrameEncoder, CODEC_TRAILER};

/// The outcome of finishing one file: `Err` carries a message naming the file.
pub(crate) type FinishResult = Result<(), String>;

/// A message to the writer thread. Messages of one sink arrive in the order sent.
pub(crate) enum Msg {
    /// A new file (header already written into `out`).
    Open { sink: u64, file: OpenFile },
    /// Records `from..to` (in records) of a block; the block goes back through `back`.
    Block {
        sink: u64,
        block: Block,
        from: usize,
        to: usize,
        back: Option<Sender<Block>>,
    },
    /// Records copied out of a live block (flush) or a first/last cell.
    Words { sink: u64, words: Vec<u64> },
    /// Write the trailer, rename to the final name, and reply.
    Finish {
        sink: u64,
        reply: Sender<FinishResult>,
    },
}

/// A file being written, owned by the writer thread from `Open` to `Finish`.
pub(crate) struct OpenFile {
    pub(crate) out: BufWriter<File>,
    pub(crate) temp: PathBuf,
    pub(crate) path: PathBuf,
    pub(crate) width: usize,
    pub(crate) codec: u8,
    pub(crate) counter: Option<CounterSampler>,
    pub(crate) total: u64,
    pub(crate) error: Option<String>,
}

/// A counter channel's sampling: `(ticks, calls so far)` every `period`, on a fixed schedule.
pub(crate) struct CounterSampler {
    pub(crate) period: Duration,
    pub(crate) next: Instant,
    pub(crate) calls: Arc<AtomicU64>,
    pub(crate) pending: Vec<u64>,
}

/// Samples buffered before a counter file gets a frame (about 8 KiB).
const COUNTER_FRAME_SAMPLES: usize = 512;

pub(crate) fn run(rx: Receiver<Msg>) {
    let mut files: HashMap<u64, OpenFile> = HashMap::new();
    let mut enc = FrameEncoder::new();
    loop {
        let next_due = files
            .values()
            .filter_map(|f| f.counter.as_ref().map(|c| c.next))
            .min();
        let msg = match next_due {
            Some(due) => rx.recv_timeout(due.saturating_duration_since(Instant::now())),
            None => rx.recv().map_err(|_| RecvTimeoutError::Disconnected),
        };
        match msg {
            Ok(m) => handle(&mut files, &mut enc, m),
            Err(RecvTimeoutError::Timeout) => sample_due(&mut files, &mut enc),
            // Every sender is gone, so every channel has finished: nothing left to write.
            Err(RecvTimeoutError::Disconnected) => return,
        }
    }
}

fn handle(files: &mut HashMap<u64, OpenFile>, enc: &mut FrameEncoder, msg: Msg) {
    match msg {
        Msg::Open { sink, file } => {
            files.insert(sink, file);
        }
        Msg::Block {
            sink,
            block,
            from,
            to,
            back,
        } => {
            if let Some(f) = files.get_mut(&sink) {
                let w = f.width;
                let words = &block.prefix(to * w)[from * w..];
                write_records(f, enc, words);
            }
            if let Some(back) = back {
                // The channel may be gone; then the block is simply freed.
                let _ = back.send(block);
            }
        }
        Msg::Words { sink, words } => {
            if let Some(f) = files.get_mut(&sink) {
                write_records(f, enc, &words);
            }
        }
        Msg::Finish { sink, reply } => {
            let result = match files.remove(&sink) {
                Some(f) => finish(f, enc),
                None => Err(format!("log sink {sink} finished twice or never opened")),
            };
            let _ = reply.send(result);
        }
    }
}

fn write_records(f: &mut OpenFile, enc: &mut FrameEncoder, words: &[u64]) {
    if words.is_empty() || f.error.is_some() {
        return;
    }
    match enc.write_frame(&mut f.out, words, f.width, f.codec) {
        Ok(()) => f.total += (words.len() / f.width) as u64,
        Err(e) => f.error = Some(format!("writing {}: {e}", f.temp.display())),
    }
}

fn sample_due(files: &mut HashMap<u64, OpenFile>, enc: &mut FrameEncoder) {
    let now = Instant::now();
    for f in files.values_mut() {
        let Some(c) = f.counter.as_mut() else {
            continue;
        };
        if c.next > now {
            continue;
        }
        take_sample(c);
        // Fixed schedule (no drift); a writer that fell behind skips the missed periods.
        c.next += c.period;
        if c.next <= now {
            c.next = now + c.period;
        }
        if c.pending.len() >= COUNTER_FRAME_SAMPLES * 2 {
            // Moved out and back so that the file can be borrowed for writing.
            let mut words = std::mem::take(&mut c.pending);
            write_records(f, enc, &words);
            words.clear();
            if let Some(c) = f.counter.as_mut() {
                c.pending = words;
            }
        }
    }
}

pub(crate) fn take_sample(c: &mut CounterSampler) {
    c.pending.push(crate::clock::now());
    c.pending.push(c.calls.load(Ordering::Acquire));
}

fn finish(mut f: OpenFile, enc: &mut FrameEncoder) -> FinishResult {
    if let Some(mut c) = f.counter.take() {
        take_sample(&mut c);
        write_records(&mut f, enc, &c.pending);
    }
    if let Some(e) = f.error {
        return Err(e);
    }
    let total = f.total.to_le_bytes();
    let done = write_raw_frame(&mut f.out, CODEC_TRAILER, 0, &total)
        .and_then(|()| f.out.flush())
        .and_then(|()| std::fs::rename(&f.temp, &f.path));
    done.map_err(|e| format!("completing {}: {e}", f.path.display()))
}
