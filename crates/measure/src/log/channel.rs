//! A named log channel and its handler: the hot `log(id)` call (the Cloudprofiler paper, sec. 5.1;
//! docs/papers.md).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use super::sink::{BlockSink, FirstLastCell, Shared, FINISH_TIMEOUT};
use super::spec::HandlerSpec;
use super::LogError;

/// ReT record kinds (first word of a `ret` file's records).
pub(crate) const RET_START: u64 = 0;
pub(crate) const RET_END: u64 = 1;
pub(crate) const RET_RTT: u64 = 2;

/// One handler's per-channel state: an enum, so a call is one predictable branch, no virtual
/// call and no lock.
pub(crate) enum Handler {
    Null,
    /// `id` and `buffered`: every call.
    Every(BlockSink),
    XoY {
        sink: BlockSink,
        x: u64,
        y: u64,
        /// `y - 1` when `y` is a power of two (a mask instead of a division), else `None`.
        mask: Option<u64>,
    },
    Downsample {
        sink: BlockSink,
        n: u64,
        /// Calls since the last kept one.
        k: u64,
    },
    FirstLast {
        cell: Arc<FirstLastCell>,
        calls: u64,
        shared: Arc<Shared>,
    },
    Counter {
        calls: u64,
        cell: Arc<AtomicU64>,
        shared: Arc<Shared>,
    },
    Ret(BlockSink),
}

/// A named event-log channel of one thread. Opened by [`super::Logs::open`], which picks the
/// handler from the channel's name. `Send` (it may move to another thread) but used through
/// `&mut self`, so one thread at a time; open the name again on each thread that logs.
///
/// Dropping it completes its file (see [`Channel::close`]), blocking until the writer thread
/// has written it.
pub struct Channel {
    name: String,
    spec: HandlerSpec,
    handler: Handler,
}

impl Channel {
    pub(crate) fn new(name: String, spec: HandlerSpec, handler: Handler) -> Channel {
        Channel {
            name,
            spec,
            handler,
        }
    }

    /// The channel's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The handler it was opened with.
    pub fn spec(&self) -> &HandlerSpec {
        &self.spec
    }

    /// Logs event `id` now (timestamp `crate::clock::now()`, read only if the handler keeps the
    /// call). What is kept depends on the handler ([`HandlerSpec`]); a `ret` channel ignores
    /// it. No lock, no allocation; a full block (every 4 Ki or 64 Ki kept calls) is handed to
    /// the writer thread, and waits only if the writer is 3 blocks behind.
    #[inline]
    pub fn log(&mut self, id: u64) {
        self.log_with(id, crate::clock::now)
    }

    /// Logs event `id` with a timestamp the caller read (`ticks` of `crate::clock::now()`),
    /// e.g. one clock read shared by a batch of events. Otherwise as [`Channel::log`].
    #[inline]
    pub fn log_at(&mut self, id: u64, ticks: u64) {
        self.log_with(id, || ticks)
    }

    #[inline(always)]
    fn log_with(&mut self, id: u64, now: impl FnOnce() -> u64) {
        match &mut self.handler {
            Handler::Null | Handler::Ret(_) => {}
            Handler::Every(sink) => sink.push2(id, now()),
            Handler::XoY { sink, x, y, mask } => {
                let r = match mask {
                    Some(m) => id & *m,
                    None => id % *y,
                };
                if r < *x {
                    sink.push2(id, now());
                }
            }
            Handler::Downsample { sink, n, k } => {
                if *k == 0 {
                    sink.push2(id, now());
                }
                *k += 1;
                if *k == *n {
                    *k = 0;
                }
            }
            Handler::FirstLast { cell, calls, .. } => {
                cell.record(*calls, id, now());
                *calls += 1;
            }
            Handler::Counter { calls, cell, .. } => {
                // One writer per cell: a plain store, no atomic add.
                *calls += 1;
                cell.store(*calls, Ordering::Relaxed);
            }
        }
    }

    /// ReT: the start event of `id` (on the node where the measured path starts). Only a `ret`
    /// channel records it; other handlers ignore it.
    #[inline]
    pub fn ret_start(&mut self, id: u64) {
        if let Handler::Ret(sink) = &mut self.handler {
            sink.push3(RET_START, id, crate::clock::now());
        }
    }

    /// ReT: the end event of `id` came back to the start node (its "ReTACK" arrived). Only a
    /// `ret` channel records it. The reader's duration is `end - start`, an over-estimate by
    /// the ReTACK's transfer time.
    #[inline]
    pub fn ret_end(&mut self, id: u64) {
        if let Handler::Ret(sink) = &mut self.handler {
            sink.push3(RET_END, id, crate::clock::now());
        }
    }

    /// ReT: a measured round trip of the ReTACK path, `rtt_ticks` in this process's clock ticks
    /// (e.g. a ping answered by the end node). The reader takes it as the error bound of `id`'s
    /// duration, or of later ids without their own. Only a `ret` channel records it.
    #[inline]
    pub fn ret_rtt(&mut self, id: u64, rtt_ticks: u64) {
        if let Handler::Ret(sink) = &mut self.handler {
            sink.push3(RET_RTT, id, rtt_ticks);
        }
    }

    /// Completes the file: the records so far, a trailer, then the rename from
    /// `NAME.pP.iI.xflog.partial` to `NAME.pP.iI.xflog`. Waits for the writer thread (at most
    /// 30 s). Errors: [`LogError::Write`] naming the file and the I/O error. Closing after
    /// [`super::flush_all`] does nothing.
    pub fn close(mut self) -> Result<(), LogError> {
        self.finish()
    }

    fn finish(&mut self) -> Result<(), LogError> {
        let shared = match &self.handler {
            Handler::Null => return Ok(()),
            Handler::Every(s)
            | Handler::XoY { sink: s, .. }
            | Handler::Downsample { sink: s, .. }
            | Handler::Ret(s) => s.shared.clone(),
            Handler::FirstLast { shared, .. } | Handler::Counter { shared, .. } => shared.clone(),
        };
        // `finish` copies the current block's records, so the block is freed only after it.
        let done = shared.finish();
        self.handler = Handler::Null;
        match done {
            Some(done) => shared.wait(done, Instant::now() + FINISH_TIMEOUT),
            None => Ok(()),
        }
    }
}

impl Drop for Channel {
    fn drop(&mut self) {
        if let Err(e) = self.finish() {
            // Drop cannot return it; `close` does.
            eprintln!("xorflow-measure: {e}");
        }
    }
}
