//! The caller-side half of a channel that writes a file: its shared state (reachable from
//! [`flush_all`]), the block the caller fills, and the first/last cell.
//!
//! Protocol between a channel's thread (the owner) and `flush_all` (any thread):
//! * the owner writes record `i` into the current block through a raw pointer, then stores
//!   `published = i + 1` (Release); it never writes below `published` until it swaps blocks;
//! * swapping blocks (`ship`, on a full block) and finishing both hold `Shared::state`'s lock;
//! * `flush_all` takes the lock, reads `published` (Acquire) and copies records
//!   `flushed..published`, which the owner does not touch, then finishes the file. Records the
//!   owner logs after that are dropped (the file is complete).

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender};

use super::block::Block;
use super::writer::{FinishResult, Msg};
use super::LogError;

/// How many blocks one channel may have (one being filled, the rest queued or being written)
/// before its thread waits for the writer: bounds memory at `MAX_BLOCKS * block bytes`.
const MAX_BLOCKS: usize = 4;

/// How long closing a channel or `flush_all` waits for the writer thread to complete files.
pub(crate) const FINISH_TIMEOUT: Duration = Duration::from_secs(30);

/// What `finish` must copy out of a live channel.
pub(crate) enum Live {
    /// The current block's base (null between blocks) and record width in words.
    Block { base: *const u64, width: usize },
    /// Nothing: the writer thread holds the counter's cell and takes a last sample.
    Counter,
    /// The first/last cell.
    FirstLast(Arc<FirstLastCell>),
}

pub(crate) struct ShipState {
    live: Live,
    /// Records of the current block already handed to the writer by `flush_all`.
    flushed: usize,
    finished: bool,
}

// SAFETY: `base` is only dereferenced under the lock, for the prefix the owner has published
// and will not write again before taking the lock (see the module doc).
unsafe impl Send for ShipState {}

/// The part of a channel that outlives neither it nor the writer, shared with `flush_all`.
pub(crate) struct Shared {
    pub(crate) sink: u64,
    pub(crate) name: String,
    pub(crate) tx: Sender<Msg>,
    pub(crate) published: AtomicUsize,
    state: Mutex<ShipState>,
}

impl Shared {
    pub(crate) fn new(sink: u64, name: String, tx: Sender<Msg>, live: Live) -> Arc<Shared> {
        let shared = Arc::new(Shared {
            sink,
            name,
            tx,
            published: AtomicUsize::new(0),
            state: Mutex::new(ShipState {
                live,
                flushed: 0,
                finished: false,
            }),
        });
        let mut all = registry();
        all.retain(|w| w.strong_count() > 0);
        all.push(Arc::downgrade(&shared));
        shared
    }

    fn lock(&self) -> MutexGuard<'_, ShipState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Hands the unwritten records to the writer and asks it to complete the file; `None` if
    /// already finished. Later records of this channel are dropped.
    pub(crate) fn finish(&self) -> Option<Receiver<FinishResult>> {
        let mut st = self.lock();
        if st.finished {
            return None;
        }
        st.finished = true;
        let words = match &st.live {
            Live::Block { base, width } if !base.is_null() => {
                let upto = self.published.load(Ordering::Acquire);
                // SAFETY: records below `published` are written and stay untouched by the owner
                // until it takes this lock (module doc); `base` is the current block's.
                let all = unsafe { std::slice::from_raw_parts(*base, upto * width) };
                all[st.flushed * width..].to_vec()
            }
            Live::FirstLast(cell) => cell.snapshot(),
            _ => Vec::new(),
        };
        st.flushed = self.published.load(Ordering::Acquire);
        let (reply, done) = crossbeam_channel::bounded(1);
        let sink = self.sink;
        // A failed send means the writer thread is gone: `wait` reports it.
        let _ = self.tx.send(Msg::Words { sink, words });
        let _ = self.tx.send(Msg::Finish { sink, reply });
        Some(done)
    }

    /// Waits (up to `deadline`) for a `finish` reply.
    pub(crate) fn wait(
        &self,
        done: Receiver<FinishResult>,
        deadline: Instant,
    ) -> Result<(), LogError> {
        let left = deadline.saturating_duration_since(Instant::now());
        match done.recv_timeout(left) {
            Ok(Ok(())) => Ok(()),
            Ok(Err(message)) => Err(LogError::Write {
                channel: self.name.clone(),
                message,
            }),
            Err(_) => Err(LogError::Write {
                channel: self.name.clone(),
                message: format!(
                    "the writer thread did not complete the file within {FINISH_TIMEOUT:?}"
                ),
            }),
        }
    }
}

fn registry() -> MutexGuard<'static, Vec<Weak<Shared>>> {
    static ALL: Mutex<Vec<Weak<Shared>>> = Mutex::new(Vec::new());
    ALL.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Completes the file of every open channel of this process: the records logged so far are
/// written, then the trailer, then the file is renamed to its final name. For SIGTERM and
/// exit paths that do not drop the channels (a signal thread that ends the process): call it
/// from any thread before `exit`. Waits at most 30 s in all. It is final: records logged on a
/// channel afterwards are dropped, and closing it then is a no-op. Returns the first error
/// (every file is still attempted).
pub fn flush_all() -> Result<(), LogError> {
    let live: Vec<Arc<Shared>> = registry().iter().filter_map(Weak::upgrade).collect();
    let pending: Vec<_> = live
        .iter()
        .filter_map(|s| s.finish().map(|d| (s, d)))
        .collect();
    let deadline = Instant::now() + FINISH_TIMEOUT;
    let mut first = Ok(());
    for (s, done) in pending {
        let r = s.wait(done, deadline);
        if first.is_ok() {
            first = r;
        }
    }
    first
}

/// The owner's side of a block-writing channel (id, buffered, xoy, downsample, ret).
pub(crate) struct BlockSink {
    /// Base of the current block: written through without bounds checks.
    ptr: *mut u64,
    len: usize,
    cap: usize,
    block: Option<Block>,
    spare: Receiver<Block>,
    back: Sender<Block>,
    allocated: usize,
    width: usize,
    pub(crate) shared: Arc<Shared>,
}

// SAFETY: `ptr` points into `block`, which the sink owns; the shared prefix protocol is in the
// module doc. The sink is used by one thread at a time (`&mut self` methods).
unsafe impl Send for BlockSink {}

impl BlockSink {
    /// A sink of `cap` (>= 1) records of `width` words, its first block allocated.
    pub(crate) fn new(shared: Arc<Shared>, cap: usize, width: usize) -> BlockSink {
        let block = Block::new(cap * width);
        let (back, spare) = crossbeam_channel::bounded(MAX_BLOCKS);
        let ptr = block.as_ptr();
        shared.lock().live = Live::Block { base: ptr, width };
        BlockSink {
            ptr,
            len: 0,
            cap,
            block: Some(block),
            spare,
            back,
            allocated: 1,
            width,
            shared,
        }
    }

    /// Appends the record `(a, b)` (width 2).
    #[inline(always)]
    pub(crate) fn push2(&mut self, a: u64, b: u64) {
        debug_assert_eq!(self.width, 2);
        if self.len == self.cap {
            self.ship();
        }
        // SAFETY: len < cap after `ship`, and the block holds cap * 2 words.
        unsafe {
            let at = self.ptr.add(self.len * 2);
            at.write(a);
            at.add(1).write(b);
        }
        self.len += 1;
        self.shared.published.store(self.len, Ordering::Release);
    }

    /// Appends the record `(a, b, c)` (width 3).
    #[inline(always)]
    pub(crate) fn push3(&mut self, a: u64, b: u64, c: u64) {
        debug_assert_eq!(self.width, 3);
        if self.len == self.cap {
            self.ship();
        }
        // SAFETY: len < cap after `ship`, and the block holds cap * 3 words.
        unsafe {
            let at = self.ptr.add(self.len * 3);
            at.write(a);
            at.add(1).write(b);
            at.add(2).write(c);
        }
        self.len += 1;
        self.shared.published.store(self.len, Ordering::Release);
    }

    /// Sends the full block to the writer and continues in a returned (or new) one.
    #[cold]
    #[inline(never)]
    fn ship(&mut self) {
        let mut st = self.shared.lock();
        if st.finished {
            // flush_all completed the file: keep overwriting this block, nothing is written.
            self.len = 0;
            self.shared.published.store(0, Ordering::Release);
            return;
        }
        if let Some(block) = self.block.take() {
            let _ = self.shared.tx.send(Msg::Block {
                sink: self.shared.sink,
                block,
                from: st.flushed,
                to: self.len,
                back: Some(self.back.clone()),
            });
        }
        st.flushed = 0;
        st.live = Live::Block {
            base: std::ptr::null(),
            width: self.width,
        };
        self.shared.published.store(0, Ordering::Release);
        self.len = 0;
        drop(st);
        let next = self.next_block();
        self.ptr = next.as_ptr();
        self.shared.lock().live = Live::Block {
            base: self.ptr,
            width: self.width,
        };
        self.block = Some(next);
    }

    /// A returned block, else a new one while under `MAX_BLOCKS`, else waits for the writer.
    fn next_block(&mut self) -> Block {
        if let Ok(b) = self.spare.try_recv() {
            return b;
        }
        if self.allocated < MAX_BLOCKS {
            self.allocated += 1;
            return Block::new(self.cap * self.width);
        }
        // The writer returns every block it gets; if it is gone, go on in a new one (the
        // records are then lost, and closing reports the writer's absence).
        self.spare
            .recv_timeout(FINISH_TIMEOUT)
            .unwrap_or_else(|_| Block::new(self.cap * self.width))
    }
}

/// The first and last `(id, ticks)` of a first-last channel, readable by `flush_all` while the
/// owner updates the last one (a sequence lock: the owner never waits).
#[derive(Default)]
pub(crate) struct FirstLastCell {
    calls: AtomicU64,
    first: [AtomicU64; 2],
    seq: AtomicU64,
    last: [AtomicU64; 2],
}

impl FirstLastCell {
    /// Records call number `calls` (0-based) of the owner.
    #[inline(always)]
    pub(crate) fn record(&self, calls: u64, id: u64, ticks: u64) {
        if calls == 0 {
            self.first[0].store(id, Ordering::Relaxed);
            self.first[1].store(ticks, Ordering::Relaxed);
        }
        let s = self.seq.load(Ordering::Relaxed);
        self.seq.store(s + 1, Ordering::Relaxed);
        std::sync::atomic::fence(Ordering::Release);
        self.last[0].store(id, Ordering::Relaxed);
        self.last[1].store(ticks, Ordering::Relaxed);
        self.seq.store(s + 2, Ordering::Release);
        self.calls.store(calls + 1, Ordering::Release);
    }

    /// The records to write: none, the first, or the first and the last.
    pub(crate) fn snapshot(&self) -> Vec<u64> {
        let calls = self.calls.load(Ordering::Acquire);
        let mut out = Vec::with_capacity(4);
        if calls == 0 {
            return out;
        }
        out.push(self.first[0].load(Ordering::Relaxed));
        out.push(self.first[1].load(Ordering::Relaxed));
        if calls == 1 {
            return out;
        }
        // The owner may be mid-update; a consistent pair comes within a few tries, and after
        // 1000 (an owner logging without pause) the pair last read is taken.
        let mut pair = [0; 2];
        for _ in 0..1000 {
            let s1 = self.seq.load(Ordering::Acquire);
            pair = [
                self.last[0].load(Ordering::Relaxed),
                self.last[1].load(Ordering::Relaxed),
            ];
            std::sync::atomic::fence(Ordering::Acquire);
            if s1.is_multiple_of(2) && self.seq.load(Ordering::Relaxed) == s1 {
                break;
            }
        }
        out.extend_from_slice(&pair);
        out
    }
}
