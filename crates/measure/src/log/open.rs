//! Opening channels: [`Logs`] looks up the handler by name, creates the file and the writer.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use crossbeam_channel::Sender;

use super::channel::{Channel, Handler};
use super::config::{is_name_char, LogConfig};
use super::format::{Header, RecordKind, CODEC_RAW, CODEC_ZSTD, VERSION};
use super::sink::{BlockSink, FirstLastCell, Live, Shared};
use super::spec::HandlerSpec;
use super::writer::{self, CounterSampler, Msg, OpenFile};
use super::LogError;

/// Records per block of `id` and `buffered` (64 Ki records, 1 MiB): big enough that handing a
/// block over costs well under 1 ns per record.
pub const EVERY_BLOCK_RECORDS: usize = 64 * 1024;
/// Records per block of the sampling handlers (xoy, downsample, ret): 4 Ki, so a sparse channel
/// holds less memory.
pub const SAMPLED_BLOCK_RECORDS: usize = 4 * 1024;
/// The longest channel name accepted (it is part of a file name).
pub const MAX_NAME_LEN: usize = 200;

/// The clock named in file headers and its ticks per nanosecond: `crate::clock`'s kind (`tsc`
/// or `monotonic-raw`) and calibrated rate. The first call may wait up to 10 ms for the
/// calibration (at the first open, not on the hot path). The rate is informative: readers
/// convert ticks with the [`super::ToReference`] they are given.
pub fn clock_identity() -> (&'static str, f64) {
    (crate::clock::kind().name(), crate::clock::ticks_per_ns())
}

/// The channels of one process: the configuration, the process's index, and one writer thread
/// (started by the first channel that writes a file). Cheap to clone and `Send + Sync`, so
/// every thread can open its own channels.
#[derive(Clone)]
pub struct Logs {
    inner: Arc<Inner>,
}

struct Inner {
    config: LogConfig,
    process: u32,
    writer: Mutex<Option<Sender<Msg>>>,
    instances: Mutex<HashMap<String, u32>>,
}

static NEXT_SINK: AtomicU64 = AtomicU64::new(0);

impl Logs {
    /// Channels of process `process` (its index in the job), configured by `config`.
    pub fn new(config: LogConfig, process: u32) -> Logs {
        Logs {
            inner: Arc::new(Inner {
                config,
                process,
                writer: Mutex::new(None),
                instances: Mutex::new(HashMap::new()),
            }),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &LogConfig {
        &self.inner.config
    }

    /// Opens channel `name` (A-Z a-z 0-9 . _ -, at most 200 characters) with the handler the
    /// configuration gives it. Every handler but `null` creates
    /// `DIR/NAME.pPROCESS.iINSTANCE.xflog.partial` (the directory too if missing), where
    /// INSTANCE counts the openings of `name` in this `Logs` (0, 1, ...: one file per thread).
    /// Errors: [`LogError::BadName`], [`LogError::Io`] (with the path), [`LogError::Spawn`].
    pub fn open(&self, name: &str) -> Result<Channel, LogError> {
        check_name(name)?;
        let spec = self.inner.config.handler_for(name).clone();
        if spec == HandlerSpec::Null {
            return Ok(Channel::new(name.to_string(), spec, Handler::Null));
        }
        let instance = self.next_instance(name);
        let kind = match spec {
            HandlerSpec::Counter { .. } => RecordKind::Counts,
            HandlerSpec::Ret => RecordKind::Ret,
            _ => RecordKind::Events,
        };
        let (clock, ticks_per_ns) = clock_identity();
        let header = Header {
            version: VERSION,
            record_kind: kind,
            process: self.inner.process,
            instance,
            ticks_per_ns,
            clock: clock.to_string(),
            channel: name.to_string(),
            spec: spec.to_string(),
        };
        let mut file = self.create_file(&header)?;
        let tx = self.writer()?;
        let sink = NEXT_SINK.fetch_add(1, Ordering::Relaxed);
        let sink_of = |live| Shared::new(sink, name.to_string(), tx.clone(), live);
        let block = |cap| {
            BlockSink::new(
                sink_of(Live::Block {
                    base: std::ptr::null(),
                    width: kind.width(),
                }),
                cap,
                kind.width(),
            )
        };
        let handler = match spec {
            HandlerSpec::Null => unreachable!("returned above"),
            HandlerSpec::Id | HandlerSpec::Buffered => Handler::Every(block(EVERY_BLOCK_RECORDS)),
            HandlerSpec::XoY { x, y } => Handler::XoY {
                sink: block(SAMPLED_BLOCK_RECORDS),
                x,
                y,
                mask: y.is_power_of_two().then(|| y - 1),
            },
            HandlerSpec::Downsample { n } => Handler::Downsample {
                sink: block(SAMPLED_BLOCK_RECORDS),
                n,
                k: 0,
            },
            HandlerSpec::Ret => Handler::Ret(block(SAMPLED_BLOCK_RECORDS)),
            HandlerSpec::FirstLast => {
                let cell = Arc::new(FirstLastCell::default());
                let shared = sink_of(Live::FirstLast(cell.clone()));
                Handler::FirstLast {
                    cell,
                    calls: 0,
                    shared,
                }
            }
            HandlerSpec::Counter { period } => {
                let cell = Arc::new(AtomicU64::new(0));
                let mut sampler = CounterSampler {
                    period,
                    next: Instant::now() + period,
                    calls: cell.clone(),
                    pending: Vec::new(),
                };
                writer::take_sample(&mut sampler);
                file.counter = Some(sampler);
                let shared = sink_of(Live::Counter);
                Handler::Counter {
                    calls: 0,
                    cell,
                    shared,
                }
            }
        };
        file.codec = if spec == HandlerSpec::Buffered {
            CODEC_ZSTD
        } else {
            CODEC_RAW
        };
        // Sent after the sink exists but before the channel can log: the writer gets `Open`
        // before any block of this sink (one FIFO channel).
        tx.send(Msg::Open { sink, file })
            .map_err(|_| LogError::Write {
                channel: name.to_string(),
                message: "the writer thread has stopped".into(),
            })?;
        Ok(Channel::new(name.to_string(), spec, handler))
    }

    fn next_instance(&self, name: &str) -> u32 {
        let mut m = self
            .inner
            .instances
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let n = m.entry(name.to_string()).or_insert(0);
        *n += 1;
        *n - 1
    }

    fn create_file(&self, header: &Header) -> Result<OpenFile, LogError> {
        let dir = self.inner.config.dir();
        let io = |path: &PathBuf| {
            let path = path.clone();
            move |source| LogError::Io { path, source }
        };
        std::fs::create_dir_all(dir).map_err(io(&dir.to_path_buf()))?;
        let path = dir.join(format!(
            "{}.p{}.i{}.xflog",
            header.channel, header.process, header.instance
        ));
        let temp = PathBuf::from(format!("{}.partial", path.display()));
        let f = File::create(&temp).map_err(io(&temp))?;
        let mut out = BufWriter::with_capacity(256 * 1024, f);
        out.write_all(&header.encode()).map_err(io(&temp))?;
        Ok(OpenFile {
            out,
            temp,
            path,
            width: header.record_kind.width(),
            codec: CODEC_RAW,
            counter: None,
            total: 0,
            error: None,
        })
    }

    fn writer(&self) -> Result<Sender<Msg>, LogError> {
        let mut w = self
            .inner
            .writer
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(tx) = w.as_ref() {
            return Ok(tx.clone());
        }
        let (tx, rx) = crossbeam_channel::unbounded();
        std::thread::Builder::new()
            .name(format!("log-writer-p{}", self.inner.process))
            .spawn(move || writer::run(rx))
            .map_err(LogError::Spawn)?;
        *w = Some(tx.clone());
        Ok(tx)
    }
}

fn check_name(name: &str) -> Result<(), LogError> {
    let bad = |reason: &str| LogError::BadName {
        name: name.to_string(),
        reason: reason.to_string(),
    };
    if name.is_empty() || name.len() > MAX_NAME_LEN {
        return Err(bad("a channel name has 1 to 200 characters"));
    }
    if !name.chars().all(is_name_char) {
        return Err(bad("allowed characters: A-Z a-z 0-9 . _ -"));
    }
    if name.starts_with('.') {
        return Err(bad("a channel name may not start with '.'"));
    }
    Ok(())
}
