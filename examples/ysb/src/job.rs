//! The YSB job in catch-up mode: the events file (or a Kafka topic) replayed as fast as the
//! engine takes it.
//!
//! ```text
//! events (JSON lines) -> parse -> filter view -> project (ad_id, event_time)
//!   -> join ad -> campaign (in-memory table) -> 10 s tumbling count per campaign -> sink
//! ```
//!
//! The windows close when trAcker's frontier passes their end (`--lateness` behind the largest
//! event time read, see [`crate::input`]; per partition with Kafka, see [`crate::kafka`]).
//! Output rows `campaign_id,window_start_ms,views`, sorted, written to a temporary file renamed
//! to `--output` only when the run succeeded; with `--redis` also each window as it closes, in
//! the original's Redis layout ([`crate::redis_sink`]).

use crate::campaigns::Campaigns;
use crate::input::{self, Malformed, Record};
use crate::kafka::KafkaFeed;
use crate::redis_sink::RedisWindows;
use crate::{event, WINDOW_MS};
use serde::Serialize;
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use xorflow_core::WindowResult;
use xorflow_kafka::{InputOptions, KafkaUri, SkippedRecord};
use xorflow_runtime::connectors::output_file::PendingFile;
use xorflow_runtime::job_options;
use xorflow_runtime::operators::OperatorError;
use xorflow_runtime::{
    Aggregate, Dataflow, Element, RunError, RuntimeConfig, Sink, Source, SourceOutput, SourcePoll,
    Stream,
};

/// Header of the output CSV.
pub const HEADER: &str = "campaign_id,window_start_ms,views";

/// Most source instances.
pub const MAX_SOURCES: usize = 1024;

/// Everything the job can be told.
#[derive(Clone, Debug)]
pub struct YsbConfig {
    /// The events file (`kafka-json.txt`).
    pub input: PathBuf,
    /// The ad -> campaign table (`ad-to-campaign-ids.txt`).
    pub ad_campaigns: PathBuf,
    /// Result CSV.
    pub output: PathBuf,
    /// Summary JSON, if wanted.
    pub summary: Option<PathBuf>,
    /// Source instances (the file's lines are split round-robin over them).
    pub sources: usize,
    /// Allowed lateness, ms.
    pub lateness_ms: u64,
    /// Replay speed: event time runs this many times faster than real time (1: the original's
    /// real-time feed); `None`: as fast as the engine takes it (the catch-up mode).
    pub speed: Option<f64>,
    /// Workers, tracking, granularity (ms per slot), cluster.
    pub runtime: RuntimeConfig,
    /// Read the events from this topic instead of `input` ([`crate::kafka`]).
    pub kafka: Option<KafkaUri>,
    /// How the topic is read (`--kafka-idle-timeout`, `--kafka-follow`).
    pub kafka_options: InputOptions,
    /// Also write every window to the Redis at this address, `redis://HOST:PORT`
    /// ([`crate::redis_sink`]).
    pub redis: Option<String>,
}

impl YsbConfig {
    /// Defaults: 1 source, 100 ms lateness (covers the generator's +-50 ms skew), 1 s slots.
    pub fn new(input: PathBuf, ad_campaigns: PathBuf, output: PathBuf) -> Self {
        YsbConfig {
            input,
            ad_campaigns,
            output,
            summary: None,
            sources: 1,
            lateness_ms: 100,
            speed: None,
            runtime: RuntimeConfig {
                granularity: 1000,
                ..RuntimeConfig::default()
            },
            kafka: None,
            kafka_options: InputOptions::default(),
            redis: None,
        }
    }
}

/// Why the job failed ([`xorflow_runtime::JobError`]: exit 2 for config, input and output, 1 for
/// the engine).
pub type YsbError = xorflow_runtime::JobError;

/// What a run did.
#[derive(Default, Clone, Debug, Serialize)]
pub struct YsbSummary {
    /// The events file, or the topic (`kafka://HOST:PORT/TOPIC`).
    pub input: String,
    /// What `lines`, `malformed`, `late` and `unknown_ad_views` cover: "the whole input" (a
    /// file, which every process checks whole; a Kafka input on process 0, which sums every
    /// process's counts) or, on another process of a Kafka run, the records its sources read.
    pub input_counts_cover: String,
    /// Lines of the events file (Kafka: records read).
    pub lines: u64,
    /// Lines (records) skipped as malformed, and the first few lines of them (a file).
    pub malformed: u64,
    /// See `malformed`.
    pub malformed_examples: Vec<Malformed>,
    /// Events skipped as late (beyond `--lateness`).
    pub late: u64,
    /// With a Kafka input: the first malformed or late records, by partition and offset.
    pub skipped_records: Vec<SkippedRecord>,
    /// Views whose ad the table does not have (dropped by the join).
    pub unknown_ad_views: u64,
    /// Events emitted into the dataflow (by every process).
    pub events: u64,
    /// Views counted (the sum of the output).
    pub views: u64,
    /// Rows written: (campaign, window) pairs with at least one view.
    pub windows: u64,
    /// The dataflow's run time, s.
    pub elapsed_s: f64,
    /// Events per second of `elapsed_s`.
    pub events_per_s: f64,
    /// Elements that reached the window below its frontier (must be 0).
    pub elements_below_frontier: u64,
    /// CPU by operator and by task (in-engine accounting).
    pub cpu: Option<xorflow_runtime::measure::cpu_report::CpuReport>,
    /// Lines the dataflow's parse stage could not parse, in this process (0: the file was
    /// checked before the run).
    pub parse_errors_in_dataflow: u64,
    /// Checkpoints completed (with `--checkpoint-interval`).
    pub checkpoints_completed: Option<u64>,
    /// The checkpoint the run resumed from (`--resume`).
    pub resumed_from: Option<u64>,
    /// Why the job was restarted from a checkpoint, per restart.
    pub restarts: Vec<String>,
    /// Windows written to Redis (`--redis`).
    pub redis_windows: Option<u64>,
}

/// One source instance: its share of the file's lines.
struct LinesSource {
    records: Arc<Vec<Record>>,
    next: usize,
    /// (first event time of the file, speed) when paced; the instances of a process share the
    /// start of the replay, taken at the first poll.
    speed: Option<(u64, f64)>,
    start_ns: Arc<OnceLock<u64>>,
}

impl Source<String> for LinesSource {
    fn poll(&mut self, out: &mut SourceOutput<'_, String>) -> SourcePoll {
        for _ in 0..out.budget() {
            let Some(r) = self.records.get(self.next) else {
                break;
            };
            if let Some((t0, speed)) = self.speed {
                let start = *self.start_ns.get_or_init(|| out.now_ns());
                let due =
                    start.saturating_add((r.time.saturating_sub(t0) as f64 * 1e6 / speed) as u64);
                if due > out.now_ns() {
                    return SourcePoll::WaitUntil(due);
                }
            }
            self.next += 1;
            out.emit(r.time, r.line.to_string());
            out.heartbeat(r.heartbeat);
        }
        if self.next >= self.records.len() {
            SourcePoll::Done
        } else {
            SourcePoll::Ready
        }
    }

    fn position(&self) -> Option<String> {
        Some(self.next.to_string())
    }

    fn seek(&mut self, position: &str) -> Result<(), OperatorError> {
        self.next = (position.parse().ok())
            .filter(|&n| n <= self.records.len())
            .ok_or_else(|| format!("position '{position}' is not a line of this share"))?;
        if let (Some((t0, _)), Some(r)) = (&mut self.speed, self.records.get(self.next)) {
            // A resumed replay starts its clock at its first line, not the failed attempt's.
            *t0 = r.time;
            self.start_ns = Arc::new(OnceLock::new());
        }
        Ok(())
    }
}

/// The window aggregate: views per (campaign, window).
pub struct CountViews;

impl Aggregate<(u32, u64)> for CountViews {
    type Acc = u64;
    type Out = u64;
    fn init(&self) -> u64 {
        0
    }
    fn add(&self, acc: &mut u64, _: &(u32, u64)) {
        *acc += 1;
    }
    fn finish(&self, acc: u64) -> u64 {
        acc
    }
}

/// (campaign index, window start, views), on process 0.
type Rows = Vec<(u32, u64, u64)>;

/// Collects the windows on process 0 (results are gathered there), and writes each to Redis as
/// it arrives with `--redis`.
#[derive(Clone)]
struct Collected {
    rows: Option<Arc<Mutex<Rows>>>,
    redis: Option<Arc<Mutex<RedisWindows>>>,
    table: Arc<Campaigns>,
}

impl Sink<WindowResult<u32, u64>> for Collected {
    fn write(&mut self, batch: Vec<Element<WindowResult<u32, u64>>>) -> Result<(), OperatorError> {
        let Some(rows) = &self.rows else {
            return Err("results reached a process without the output file".into());
        };
        if let Some(redis) = &self.redis {
            let mut redis = redis.lock().map_err(|_| "redis lock poisoned")?;
            for w in batch.iter().map(|e| &e.data) {
                let now = crate::redis_sink::now_ms();
                redis.write(&self.table.ids[w.key as usize], w.start, w.value, now)?;
            }
        }
        let mut rows = rows.lock().map_err(|_| "output lock poisoned")?;
        rows.extend(
            batch
                .into_iter()
                .map(|e| (e.data.key, e.data.start, e.data.value)),
        );
        Ok(())
    }
}

fn check(cfg: &YsbConfig) -> Result<(), YsbError> {
    job_options::check_sources(cfg.sources, MAX_SOURCES)?;
    job_options::check_speed(cfg.speed)?;
    (cfg.kafka_options.check(cfg.kafka.as_ref())).map_err(YsbError::Config)?;
    if cfg.kafka_options.follow && cfg.redis.is_none() {
        return Err(YsbError::Config(
            "--kafka-follow never ends, so --output would never be written: add --redis \
             redis://HOST:PORT to get each window as it closes"
                .into(),
        ));
    }
    let mut paths = vec![
        ("--ad-campaigns", cfg.ad_campaigns.as_path()),
        ("--output", cfg.output.as_path()),
    ];
    if cfg.kafka.is_none() {
        paths.push(("--input", cfg.input.as_path()));
    }
    if let Some(p) = &cfg.summary {
        paths.push(("--summary", p));
    }
    job_options::check_engine_and_paths(&cfg.runtime, &paths)
}

/// Where the events come from.
enum Feed {
    /// The file, checked (its records are moved to the sources when the dataflow is built).
    File(input::Events),
    /// A topic.
    Kafka(KafkaFeed),
}

impl Feed {
    /// Reads the file, or asks the broker for the topic's partitions (so that a missing topic
    /// or broker is an input error before the job starts).
    fn open(cfg: &YsbConfig, table: &Campaigns) -> Result<Self, YsbError> {
        let feed = match &cfg.kafka {
            None => input::read(&cfg.input, cfg.lateness_ms, table).map(Feed::File),
            Some(uri) => KafkaFeed::open(
                uri,
                &cfg.kafka_options,
                cfg.sources,
                cfg.lateness_ms,
                cfg.speed,
            )
            .map(Feed::Kafka),
        };
        feed.map_err(YsbError::Input)
    }

    /// What identifies the input in the job id (a resumed run must read the same).
    fn key(&self) -> String {
        match self {
            Feed::File(e) => format!("lines={} on-time={}", e.lines, e.records.len()),
            Feed::Kafka(k) => k.key(),
        }
    }

    /// The source vertex over this input, `sources` instances; takes a file's records.
    fn source(
        &mut self,
        df: &Dataflow,
        sources: usize,
        speed: Option<f64>,
        table: &Arc<Campaigns>,
    ) -> Stream<String> {
        let events = match self {
            Feed::Kafka(k) => return k.add_source(df, table.clone()),
            Feed::File(events) => events,
        };
        let t0 = events.records.iter().map(|r| r.time).min().unwrap_or(0);
        let speed = speed.map(|s| (t0, s));
        let shares = shares(sources, std::mem::take(&mut events.records));
        let start_ns = Arc::new(OnceLock::new());
        df.source("events", sources, move |k| LinesSource {
            records: shares[k].clone(),
            next: 0,
            speed,
            start_ns: start_ns.clone(),
        })
    }
}

/// Builds the YSB pipeline from `lines` to `sink`.
fn build(
    lines: &Stream<String>,
    table: Arc<Campaigns>,
    sink: Collected,
    parse_errors: Arc<AtomicU64>,
) {
    stateless(lines, table, parse_errors)
        .tumbling_window("count", WINDOW_MS, |&(c, _): &(u32, u64)| c, CountViews)
        .gather()
        .sink("counts", move |_| sink.clone());
}

/// The pipeline's stateless part, as the original's: parse the JSON line, keep the views,
/// project (ad id, event time), join the ad to its campaign (an index into `table.ids`). Lines
/// that do not parse are counted in `parse_errors`; views of unknown ads are dropped (the input
/// reader counts them, `input.rs`).
pub fn stateless(
    lines: &Stream<String>,
    table: Arc<Campaigns>,
    parse_errors: Arc<AtomicU64>,
) -> Stream<(u32, u64)> {
    lines
        .flat_map("parse", move |line: String| {
            // Every field is read and checked; only the ones the job reads are copied out.
            let e = event::parse_ref(&line).ok().map(|e| event::Parsed {
                ad_id: crate::ad_id::AdId::new(&e.ad_id),
                event_type: e.event_type,
                event_time: e.event_time,
            });
            if e.is_none() {
                parse_errors.fetch_add(1, Ordering::Relaxed);
            }
            e
        })
        .filter("view", |e| e.event_type == event::EventType::View)
        .map("project", |e| (e.ad_id, e.event_time))
        .flat_map("join", move |(ad, t): (crate::ad_id::AdId, u64)| {
            table.of_id(&ad).map(|c| (c, t))
        })
}

/// Runs the job: reads the table and the events (file or topic), counts in the dataflow, writes
/// the rows (and the summary if asked) to temporary files renamed to their paths only when
/// everything succeeded; with `--redis`, each window to Redis as it closes.
///
/// # Errors
/// [`YsbError`]: bad configuration; unreadable input, a missing topic or unreachable broker;
/// unwritable output, an unreachable Redis or a Redis write that failed (the output files are
/// then left as they were); an engine failure.
pub fn run(cfg: &YsbConfig) -> Result<YsbSummary, YsbError> {
    check(cfg)?;
    let table = Arc::new(Campaigns::read(&cfg.ad_campaigns).map_err(YsbError::Input)?);
    let mut feed = Feed::open(cfg, &table)?;
    let leader = cfg.runtime.cluster.is_process_zero();
    let redis = (cfg.redis.as_deref())
        .filter(|_| leader)
        .map(|url| RedisWindows::connect(url).map(|r| Arc::new(Mutex::new(r))))
        .transpose()
        .map_err(YsbError::Output)?;
    let create = |p: &std::path::Path, what| PendingFile::create(p, what).map_err(YsbError::Output);
    let output = leader.then(|| create(&cfg.output, "output")).transpose()?;
    let summary_file = (cfg.summary.as_deref())
        .filter(|_| leader)
        .map(|p| create(p, "summary"))
        .transpose()?;
    let rows = leader.then(|| Arc::new(Mutex::new(Vec::new())));
    let mut runtime = cfg.runtime.clone();
    runtime.job_key = format!(
        "ysb {} --sources={} --lateness={} ads={}",
        feed.key(),
        cfg.sources,
        cfg.lateness_ms,
        table.ads()
    );
    let df = Dataflow::new(runtime)?;
    let parse_errors = Arc::new(AtomicU64::new(0));
    let lines = feed.source(&df, cfg.sources, cfg.speed, &table);
    let sink = Collected {
        rows: rows.clone(),
        redis: redis.clone(),
        table: table.clone(),
    };
    build(&lines, table.clone(), sink, parse_errors.clone());
    let report = df.run().map_err(|e| match (redis_failure(&redis), e) {
        (Some(m), _) => YsbError::Output(m),
        (None, RunError::Config(m)) => YsbError::Config(m),
        (None, e) => YsbError::Run(e),
    })?;
    let mut summary = summarize(cfg, &feed, &report, parse_errors.load(Ordering::Relaxed));
    summary.redis_windows = (redis.as_ref()).map(|r| r.lock().map_or(0, |r| r.written()));
    let (Some(out), Some(rows)) = (output, rows) else {
        return Ok(summary);
    };
    let mut rows = std::mem::take(
        &mut *rows
            .lock()
            .map_err(|_| YsbError::Output("output lock poisoned".into()))?,
    );
    rows.sort_unstable_by(|a, b| {
        (&table.ids[a.0 as usize], a.1).cmp(&(&table.ids[b.0 as usize], b.1))
    });
    summary.windows = rows.len() as u64;
    summary.views = rows.iter().map(|r| r.2).sum();
    write_rows(&out, &rows, &table)?;
    if let Some(s) = &summary_file {
        let json = serde_json::to_string_pretty(&summary).expect("summary serializes");
        let mut f = s.file().map_err(YsbError::Output)?;
        f.write_all(json.as_bytes())
            .and_then(|()| f.write_all(b"\n"))
            .map_err(|e| YsbError::Output(format!("cannot write summary: {e}")))?;
    }
    out.commit().map_err(YsbError::Output)?;
    if let Some(s) = summary_file {
        s.commit().map_err(YsbError::Output)?;
    }
    Ok(summary)
}

/// Why the Redis sink failed, if it did (the run's error then names Redis, not the engine).
fn redis_failure(redis: &Option<Arc<Mutex<RedisWindows>>>) -> Option<String> {
    let r = redis.as_ref()?.lock().ok()?;
    r.failure().map(str::to_string)
}

/// What the run did, from the input's counts and the engine's report (views and windows are
/// filled in from the rows on process 0).
fn summarize(
    cfg: &YsbConfig,
    feed: &Feed,
    report: &xorflow_runtime::RunReport,
    parse_errors: u64,
) -> YsbSummary {
    let elapsed_s = report.elapsed.as_secs_f64();
    let (input, mut summary) = match feed {
        Feed::File(e) => (
            cfg.input.display().to_string(),
            YsbSummary {
                lines: e.lines,
                malformed: e.malformed,
                malformed_examples: e.malformed_examples.clone(),
                late: e.late,
                unknown_ad_views: e.unknown_ad_views,
                // Every process checked the whole file; the records left it for the sources.
                events: e.lines - e.malformed - e.late,
                ..YsbSummary::empty("the whole input")
            },
        ),
        Feed::Kafka(k) => (k.uri().to_string(), k.summary(report)),
    };
    summary.input = input;
    summary.elapsed_s = elapsed_s;
    summary.events_per_s = summary.events as f64 / elapsed_s.max(1e-9);
    summary.elements_below_frontier = report.below_frontier();
    summary.cpu = Some(xorflow_runtime::measure::cpu_report::CpuReport::of(report));
    summary.parse_errors_in_dataflow = parse_errors;
    if let Some(c) = &report.checkpoints {
        summary.checkpoints_completed = Some(c.completed);
        summary.resumed_from = c.resumed_from;
        summary.restarts = c.restarts.clone();
    }
    summary
}

impl YsbSummary {
    /// Zero counts, covering `cover` ([`YsbSummary::input_counts_cover`]).
    pub(crate) fn empty(cover: &str) -> Self {
        YsbSummary {
            input_counts_cover: cover.to_string(),
            ..YsbSummary::default()
        }
    }
}

/// Splits the lines round-robin over `n` instances: instance k gets lines k, k + n, ...
/// (moved, not copied: the file's lines are the job's largest allocation).
fn shares(n: usize, records: Vec<Record>) -> Vec<Arc<Vec<Record>>> {
    let mut parts = vec![Vec::new(); n];
    for (i, r) in records.into_iter().enumerate() {
        parts[i % n].push(r);
    }
    parts.into_iter().map(Arc::new).collect()
}

/// Writes the header and `rows` to `out`'s temporary file.
fn write_rows(out: &PendingFile, rows: &Rows, table: &Campaigns) -> Result<(), YsbError> {
    let err = |e: std::io::Error| {
        YsbError::Output(format!(
            "cannot write output '{}': {e}",
            out.target().display()
        ))
    };
    let mut w = std::io::BufWriter::new(out.file().map_err(YsbError::Output)?);
    writeln!(w, "{HEADER}").map_err(err)?;
    for (c, start, views) in rows {
        writeln!(w, "{},{start},{views}", table.ids[*c as usize]).map_err(err)?;
    }
    w.flush().map_err(err)
}
