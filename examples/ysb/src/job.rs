//! The YSB job in catch-up mode: the events file replayed as fast as the engine takes it.
//!
//! ```text
//! events (JSON lines) -> parse -> filter view -> project (ad_id, event_time)
//!   -> join ad -> campaign (in-memory table) -> 10 s tumbling count per campaign -> sink
//! ```
//!
//! The windows close when trAcker's frontier passes their end (`--lateness` behind the largest
//! event time read, see [`crate::input`]). Output rows `campaign_id,window_start_ms,views`,
//! sorted, written to a temporary file renamed to `--output` only when the run succeeded.

use crate::campaigns::Campaigns;
use crate::input::{self, Malformed, Record};
use crate::{event, WINDOW_MS};
use serde::Serialize;
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use xorflow_core::WindowResult;
use xorflow_runtime::connectors::output_file::PendingFile;
use xorflow_runtime::job_options;
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
        }
    }
}

/// Why the job failed ([`xorflow_runtime::JobError`]: exit 2 for config, input and output, 1 for
/// the engine).
pub type YsbError = xorflow_runtime::JobError;

/// What a run did.
#[derive(Clone, Debug, Serialize)]
pub struct YsbSummary {
    /// Lines of the events file.
    pub lines: u64,
    /// Lines skipped as malformed, and the first few of them.
    pub malformed: u64,
    /// See `malformed`.
    pub malformed_examples: Vec<Malformed>,
    /// Events skipped as late (beyond `--lateness`).
    pub late: u64,
    /// Views whose ad the table does not have (dropped by the join).
    pub unknown_ad_views: u64,
    /// Events emitted into the dataflow.
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
    /// Lines the dataflow's parse stage could not parse, in this process (0: the file was
    /// checked before the run).
    pub parse_errors_in_dataflow: u64,
    /// Checkpoints completed (with `--checkpoint-interval`).
    pub checkpoints_completed: Option<u64>,
    /// The checkpoint the run resumed from (`--resume`).
    pub resumed_from: Option<u64>,
    /// Why the job was restarted from a checkpoint, per restart.
    pub restarts: Vec<String>,
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

    fn seek(&mut self, position: &str) -> Result<(), String> {
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

/// Collects the windows on process 0 (results are gathered there).
#[derive(Clone)]
struct Collected(Option<Arc<Mutex<Rows>>>);

impl Sink<WindowResult<u32, u64>> for Collected {
    fn write(&mut self, batch: Vec<Element<WindowResult<u32, u64>>>) -> Result<(), String> {
        let Some(rows) = &self.0 else {
            return Err("results reached a process without the output file".into());
        };
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
    let mut paths = vec![
        ("--input", cfg.input.as_path()),
        ("--ad-campaigns", cfg.ad_campaigns.as_path()),
        ("--output", cfg.output.as_path()),
    ];
    if let Some(p) = &cfg.summary {
        paths.push(("--summary", p));
    }
    job_options::check_engine_and_paths(&cfg.runtime, &paths)
}

/// Builds the dataflow on `df`: the YSB pipeline from `shares` to `sink`.
fn build(
    df: &Dataflow,
    shares: Vec<Arc<Vec<Record>>>,
    speed: Option<(u64, f64)>,
    table: Arc<Campaigns>,
    sink: Collected,
    parse_errors: Arc<AtomicU64>,
) {
    let start_ns = Arc::new(OnceLock::new());
    let lines = df.source("events", shares.len(), move |k| LinesSource {
        records: shares[k].clone(),
        next: 0,
        speed,
        start_ns: start_ns.clone(),
    });
    stateless(&lines, table, parse_errors)
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
            let e = event::parse(&line).ok();
            if e.is_none() {
                parse_errors.fetch_add(1, Ordering::Relaxed);
            }
            e
        })
        .filter("view", |e| e.event_type == event::EventType::View)
        .map("project", |e| (e.ad_id, e.event_time))
        .flat_map("join", move |(ad, t): (String, u64)| {
            table.of(&ad).map(|c| (c, t))
        })
}

/// Runs the job: reads both files, counts in the dataflow, writes the rows (and the summary if
/// asked) to temporary files renamed to their paths only when everything succeeded.
///
/// # Errors
/// [`YsbError`]: bad configuration, unreadable input, unwritable output, or an engine failure.
pub fn run(cfg: &YsbConfig) -> Result<YsbSummary, YsbError> {
    check(cfg)?;
    let table = Arc::new(Campaigns::read(&cfg.ad_campaigns).map_err(YsbError::Input)?);
    let mut events = input::read(&cfg.input, cfg.lateness_ms, &table).map_err(YsbError::Input)?;
    let leader = cfg.runtime.cluster.is_process_zero();
    let create = |p: &std::path::Path, what| PendingFile::create(p, what).map_err(YsbError::Output);
    let output = leader.then(|| create(&cfg.output, "output")).transpose()?;
    let summary_file = (cfg.summary.as_deref())
        .filter(|_| leader)
        .map(|p| create(p, "summary"))
        .transpose()?;
    let rows = leader.then(|| Arc::new(Mutex::new(Vec::new())));
    let mut runtime = cfg.runtime.clone();
    runtime.job_key = format!(
        "ysb lines={} on-time={} sources={} lateness={} ads={} speed={:?}",
        events.lines,
        events.records.len(),
        cfg.sources,
        cfg.lateness_ms,
        table.ads(),
        cfg.speed
    );
    let df = Dataflow::new(runtime)?;
    let parse_errors = Arc::new(AtomicU64::new(0));
    let t0 = events.records.iter().map(|r| r.time).min().unwrap_or(0);
    let emitted = events.records.len() as u64;
    build(
        &df,
        shares(cfg.sources, std::mem::take(&mut events.records)),
        cfg.speed.map(|s| (t0, s)),
        table.clone(),
        Collected(rows.clone()),
        parse_errors.clone(),
    );
    let report = df.run().map_err(|e| match e {
        RunError::Config(m) => YsbError::Config(m),
        e => YsbError::Run(e),
    })?;
    let elapsed_s = report.elapsed.as_secs_f64();
    let mut summary = YsbSummary {
        lines: events.lines,
        malformed: events.malformed,
        malformed_examples: events.malformed_examples,
        late: events.late,
        unknown_ad_views: events.unknown_ad_views,
        events: emitted,
        views: 0,
        windows: 0,
        elapsed_s,
        events_per_s: emitted as f64 / elapsed_s.max(1e-9),
        elements_below_frontier: report.below_frontier(),
        parse_errors_in_dataflow: parse_errors.load(Ordering::Relaxed),
        checkpoints_completed: report.checkpoints.as_ref().map(|c| c.completed),
        resumed_from: report.checkpoints.as_ref().and_then(|c| c.resumed_from),
        restarts: report
            .checkpoints
            .as_ref()
            .map_or_else(Vec::new, |c| c.restarts.clone()),
    };
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
