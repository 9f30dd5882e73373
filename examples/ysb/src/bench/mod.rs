//! `xorflow-lab bench ysb`: YSB with the generator inside the job at a fixed rate (the Cloudprofiler
//! paper's ingestion), measured as the Cloudprofiler, CPU-efficiency and wide-area papers measure
//! it (docs/papers.md): throughput, window latency p50/p90/p99 in both definitions, pre-window
//! latency, and the generator's lag behind its schedule.
//!
//! ```text
//! generator (RateSource) -> parse -> view -> project -> join -> prewindow (latency)
//!   -> 10 s tumbling (views, last event time) per campaign -> emitted (latency) -> gather -> rows
//! ```
//!
//! The emitted events are known in advance (`schedule.rs`), so a run's counts are checked
//! against [`crate::oracle::scheduled`]. The peers run the same contract
//! (`peers/ysb-contract.md`) and print the same [`BenchResult`] JSON.

pub mod generator;
pub mod latency;
pub mod schedule;
pub mod schedule_clock;

use crate::campaigns::Campaigns;
use crate::generate::{self, Ids};
use crate::{job, WINDOW_MS};
use latency::{CountAndLast, Latency};
use rand::{rngs::SmallRng, SeedableRng};
use schedule::{Schedule, Templates};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use xorflow_core::{Element, WindowResult};
use xorflow_runtime::connectors::output_file::PendingFile;
use xorflow_runtime::net::cluster::Launch;
use xorflow_runtime::operators::OperatorError;
use xorflow_runtime::{Dataflow, JobError, RunError, RuntimeConfig, Sink};

/// Environment variable carrying the agreed start time to the processes of a local launch.
pub const START_ENV: &str = "XORFLOW_YSB_START_MS";

/// Template events generated when no `--events` file is given (seed 1, the original's shape).
pub const GENERATED_TEMPLATES: u64 = 100_000;

/// What `xorflow-lab bench ysb` is told.
#[derive(Clone, Debug)]
pub struct BenchConfig {
    /// Template events (`xorflow-lab ysb generate` writes them); `None`: generated in memory.
    pub events: Option<PathBuf>,
    /// The ad -> campaign table; required with `events`, generated with it otherwise.
    pub ad_campaigns: Option<PathBuf>,
    /// Rate (events/s, all sources together) and duration; the start is filled in by [`run`].
    pub rate: u64,
    /// Seconds of generation.
    pub duration_s: u64,
    /// Due time of the first event, ms since the epoch; `None`: the next whole second 2 s from
    /// now (process 0 decides and tells a local launch's other processes).
    pub start_ms: Option<u64>,
    /// Source instances (default: one per worker of every process).
    pub sources: Option<usize>,
    /// The counts CSV (`campaign_id,window_start_ms,views`), if wanted.
    pub output: Option<PathBuf>,
    /// Workers, processes, tracking, granularity.
    pub runtime: RuntimeConfig,
}

/// One run's figures; the same JSON shape as the peers' (`peers/ysb-contract.md`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct BenchResult {
    /// `xorflow`, `flink`, `storm`.
    pub engine: String,
    /// Events per second asked for.
    pub rate: u64,
    /// Seconds of generation.
    pub duration_s: u64,
    /// Source instances.
    pub sources: usize,
    /// Workers per process.
    pub workers: usize,
    /// Processes (Flink: TaskManagers, `task_managers` in its JSON; Storm: 1).
    #[serde(default = "one", alias = "task_managers")]
    pub processes: usize,
    /// Due time of event 0, ms since the epoch.
    pub start_ms: u64,
    /// Events the schedule holds: `rate * duration_s`.
    #[serde(default)]
    pub events_expected: u64,
    /// Events the generator emitted.
    pub events_emitted: u64,
    /// Views counted over all windows.
    pub views_counted: u64,
    /// (campaign, window) results.
    pub windows: u64,
    /// The generator's largest lag behind its schedule, ms.
    pub generator_lag_ms_max: f64,
    /// Emitted events over the span from the first to the last emission, events/s.
    pub throughput_events_per_s: f64,
    /// From a window's last event's event time to its emission (the CPU-efficiency and wide-area
    /// papers).
    pub window_latency_ms: Latency,
    /// The original's `time_updated - window_start` (includes the 10 s window).
    pub updated_latency_ms: Latency,
    /// From event time to the vertex before the window (the CPU-efficiency paper's Enrich).
    pub prewindow_latency_ms: Latency,
    /// The pre-window latency's p99 per second of the generation (by event time), ms; 0 for a
    /// second without views.
    #[serde(default)]
    pub prewindow_p99_ms_by_second: Vec<f64>,
    /// Whether the counts equal [`crate::oracle::scheduled`]'s (xorflow checks every run).
    #[serde(default)]
    pub counts_match_oracle: Option<bool>,
    /// Across processes: the window latency p99 of the windows each process emitted, ms, by
    /// process (empty in one process and in the peers' results). Late windows confined to one
    /// process point at what reaches that process late.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub window_p99_ms_by_process: Vec<f64>,
    /// trAcker's notification latency at the window (last arrival to notification), ms.
    #[serde(default)]
    pub notification_latency_ms: Option<Latency>,
    /// Elements that reached the window below its frontier (must be 0).
    #[serde(default)]
    pub elements_below_frontier: u64,
    /// Across processes: how far apart the processes' generators ran the schedule, through the
    /// clock alignment; the latencies above are exact to within its spread plus its bound
    /// ([`schedule_clock`]). `None` in one process and in the peers' results.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule_spread: Option<schedule_clock::ScheduleSpread>,
    /// CPU by operator and by task (xorflow's in-engine accounting; `None` for the peers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<xorflow_runtime::measure::cpu_report::CpuReport>,
    /// What trAcker did: pieces applied, frontier computations, hand-offs deferred
    /// (`None` without trAcker and for the peers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tracker: Option<xorflow_runtime::progress::tracker_agent::TrackerStats>,
}

fn one() -> usize {
    1
}

/// The templates' and the table's text.
fn inputs(cfg: &BenchConfig) -> Result<(String, String), JobError> {
    let read = |p: &PathBuf, flag: &str| {
        std::fs::read_to_string(p)
            .map_err(|e| JobError::Input(format!("cannot read {flag} '{}': {e}", p.display())))
    };
    match (&cfg.events, &cfg.ad_campaigns) {
        (Some(e), Some(a)) => Ok((read(e, "--events")?, read(a, "--ad-campaigns")?)),
        (None, None) => Ok(generated(GENERATED_TEMPLATES, 1)),
        _ => Err(JobError::Config(
            "--events and --ad-campaigns go together (neither: both are generated)".into(),
        )),
    }
}

/// `n` template events and the table, as `xorflow-lab ysb generate --seed SEED` draws them.
pub fn generated(n: u64, seed: u64) -> (String, String) {
    generated_with(n, seed, generate::CAMPAIGNS)
}

/// [`generated`] with `campaigns` campaigns (`xorflow-lab ysb generate --campaigns`).
pub fn generated_with(n: u64, seed: u64, campaigns: usize) -> (String, String) {
    let mut rng = SmallRng::seed_from_u64(seed);
    let ids = Ids::with_campaigns(&mut rng, campaigns);
    let mut text = String::new();
    for k in 0..n {
        let e = generate::event_at(&mut rng, &ids, 1_000_000_000_000 + k, false);
        text.push_str(&e.to_json());
        text.push('\n');
    }
    (text, ids.ad_campaigns())
}

/// The start: given, told by process 0 (local launch), or decided here.
fn start_ms(cfg: &BenchConfig) -> Result<u64, JobError> {
    if let Some(s) = cfg.start_ms {
        return Ok(s);
    }
    if let Ok(v) = std::env::var(START_ENV) {
        return v
            .parse()
            .map_err(|_| JobError::Config(format!("{START_ENV}='{v}' is not a number of ms")));
    }
    if matches!(cfg.runtime.cluster.launch, Launch::Hosts { .. }) {
        return Err(JobError::Config(
            "with --hostfile every process needs the same --start-ms".into(),
        ));
    }
    Ok((latency::epoch_us() / 1_000_000 + 3) * 1000)
}

/// (campaign index, window start, views).
type Rows = Vec<(u32, u64, u64)>;

/// Collects the windows on process 0.
#[derive(Clone)]
struct Collect(Option<Arc<Mutex<Rows>>>);

impl Sink<WindowResult<u32, (u64, u64)>> for Collect {
    fn write(
        &mut self,
        batch: Vec<Element<WindowResult<u32, (u64, u64)>>>,
    ) -> Result<(), OperatorError> {
        let Some(rows) = &self.0 else {
            return Err("results reached a process without the output".into());
        };
        let mut rows = rows.lock().map_err(|_| "rows lock poisoned")?;
        rows.extend(
            batch
                .iter()
                .map(|e| (e.data.key, e.data.start, e.data.value.0)),
        );
        Ok(())
    }
}

fn check(cfg: &BenchConfig) -> Result<(), JobError> {
    let bad = |m: String| Err(JobError::Config(m));
    if cfg.rate == 0 || cfg.duration_s == 0 {
        return bad("--rate and --duration must be at least 1 event/s and 1 s".into());
    }
    if cfg
        .rate
        .checked_mul(cfg.duration_s)
        .is_none_or(|n| n > 1 << 40)
    {
        return bad("--rate x --duration is too many events".into());
    }
    if let Some(s) = cfg.sources {
        xorflow_runtime::job_options::check_sources(s, job::MAX_SOURCES)?;
    }
    cfg.runtime.validate().map_err(JobError::Config)
}

/// Runs the bench: the job with its generator, then (process 0) the figures and the check of
/// the counts against the oracle. Other processes return `Ok(None)`.
///
/// # Errors
/// [`JobError`]: bad configuration or inputs, an unwritable output, an engine failure.
pub fn run(cfg: &BenchConfig) -> Result<Option<BenchResult>, JobError> {
    check(cfg)?;
    let (templates_text, table_text) = inputs(cfg)?;
    let templates = Templates::parse(&templates_text, "--events").map_err(JobError::Input)?;
    let table = Campaigns::parse(&table_text)
        .map_err(|e| JobError::Input(format!("--ad-campaigns: {e}")))?;
    let schedule = Schedule {
        rate: cfg.rate,
        duration_s: cfg.duration_s,
        start_ms: start_ms(cfg)?,
    };
    let leader = cfg.runtime.cluster.is_process_zero();
    let output = (cfg.output.as_ref())
        .filter(|_| leader)
        .map(|p| PendingFile::create(p, "output").map_err(JobError::Output))
        .transpose()?;
    let mut runtime = cfg.runtime.clone();
    let processes = runtime.cluster.launch_processes();
    let sources = cfg.sources.unwrap_or(runtime.workers * processes);
    runtime.job_key = format!(
        "ysb-bench rate={} duration={} start={} sources={sources} templates={}",
        schedule.rate,
        schedule.duration_s,
        schedule.start_ms,
        templates.len()
    );
    (runtime.cluster.child_env).push((START_ENV.into(), schedule.start_ms.to_string()));
    let rows = leader.then(|| Arc::new(Mutex::new(Rows::new())));
    let table = Arc::new(table);
    let df = Dataflow::new(runtime)?;
    build(
        &df,
        Arc::new(templates),
        schedule,
        sources,
        table.clone(),
        rows.clone(),
    );
    let report = df.run().map_err(|e| match e {
        RunError::Config(m) => JobError::Config(m),
        e => JobError::Run(e),
    })?;
    let Some(rows) = rows else {
        return Ok(None);
    };
    let mut rows = std::mem::take(
        &mut *rows
            .lock()
            .map_err(|_| JobError::Output("rows lock poisoned".into()))?,
    );
    rows.sort_unstable_by(|a, b| {
        (&table.ids[a.0 as usize], a.1).cmp(&(&table.ids[b.0 as usize], b.1))
    });
    let expected = crate::oracle::scheduled(
        &templates_text,
        &table_text,
        schedule.rate,
        schedule.duration_s,
        schedule.start_ms,
        WINDOW_MS,
    )
    .map_err(JobError::Input)?;
    let got: crate::oracle::Counts = rows
        .iter()
        .map(|&(c, w, v)| ((table.ids[c as usize].clone(), w), v))
        .collect();
    if let Some(out) = output {
        write_rows(&out, &rows, &table)?;
        out.commit().map_err(JobError::Output)?;
    }
    Ok(Some(result(
        &report,
        schedule,
        sources,
        &rows,
        got == expected,
    )))
}

/// The dataflow: generator, the job's stateless stages, the measured window, the rows.
fn build(
    df: &Dataflow,
    templates: Arc<Templates>,
    schedule: Schedule,
    sources: usize,
    table: Arc<Campaigns>,
    rows: Option<Arc<Mutex<Rows>>>,
) {
    let start_mono = generator::mono_of_epoch_ms(schedule.start_ms);
    let lines = df.source("events", sources, move |k| {
        generator::RateSource::new(templates.clone(), schedule, start_mono, k, sources)
    });
    job::stateless(&lines, table, Arc::new(AtomicU64::new(0)))
        .inspect("prewindow", move |b, s| {
            latency::record_prewindow(&schedule, b, s)
        })
        .tumbling_window("count", WINDOW_MS, |&(c, _): &(u32, u64)| c, CountAndLast)
        .inspect("emitted", move |b, s| {
            latency::record_emission(&schedule, b, s)
        })
        .gather()
        .sink("rows", move |_| Collect(rows.clone()));
}

/// The figures of a finished run (process 0).
fn result(
    report: &xorflow_runtime::RunReport,
    schedule: Schedule,
    sources: usize,
    rows: &Rows,
    matches: bool,
) -> BenchResult {
    let hist = |v: &str, h: &str| report.vertex(v).and_then(|s| s.histograms.get(h));
    let src = report.vertex("events");
    let lag = hist("events", generator::GENERATOR_LAG_US).map_or(0, |h| h.max());
    let window = report.vertex("count");
    BenchResult {
        engine: "xorflow".into(),
        rate: schedule.rate,
        duration_s: schedule.duration_s,
        sources,
        workers: report.workers,
        processes: report.processes,
        start_ms: schedule.start_ms,
        events_expected: schedule.events(),
        events_emitted: src.map_or(0, |s| s.elements_out),
        views_counted: rows.iter().map(|r| r.2).sum(),
        windows: rows.len() as u64,
        generator_lag_ms_max: lag as f64 / 1000.0,
        throughput_events_per_s: src.and_then(|s| s.measured.rate()).unwrap_or(0.0),
        window_latency_ms: Latency::of_us(hist("emitted", latency::WINDOW_US)),
        updated_latency_ms: Latency::of_us(hist("emitted", latency::UPDATED_US)),
        prewindow_latency_ms: Latency::of_us(hist("prewindow", latency::PREWINDOW_US)),
        prewindow_p99_ms_by_second: latency::prewindow_by_second(
            report.vertex("prewindow"),
            schedule.duration_s,
        ),
        counts_match_oracle: Some(matches),
        window_p99_ms_by_process: window_p99_by_process(report),
        notification_latency_ms: window.map(|w| Latency::of(Some(&w.notification_latency_ns), 1e6)),
        elements_below_frontier: report.below_frontier(),
        schedule_spread: schedule_clock::spread(report, "events"),
        cpu: Some(xorflow_runtime::measure::cpu_report::CpuReport::of(report)),
        tracker: report.tracker.clone(),
    }
}

/// The window latency p99 of each process's "emitted" vertex, ms (empty in one process).
fn window_p99_by_process(report: &xorflow_runtime::RunReport) -> Vec<f64> {
    if report.per_process.len() < 2 {
        return Vec::new();
    }
    (report.per_process.iter())
        .map(|p| {
            (p.vertices.iter())
                .map(xorflow_runtime::VertexStats::from_wire)
                .find(|v| v.name == "emitted")
                .and_then(|v| v.histograms.get(latency::WINDOW_US).cloned())
                .filter(|h| !h.is_empty())
                .map_or(0.0, |h| h.value_at_quantile(0.99) as f64 / 1000.0)
        })
        .collect()
}

/// Writes the header and `rows` to `out`'s temporary file.
fn write_rows(out: &PendingFile, rows: &Rows, table: &Campaigns) -> Result<(), JobError> {
    use std::io::Write;
    let err = |e: std::io::Error| {
        JobError::Output(format!(
            "cannot write output '{}': {e}",
            out.target().display()
        ))
    };
    let mut w = std::io::BufWriter::new(out.file().map_err(JobError::Output)?);
    writeln!(w, "{}", job::HEADER).map_err(err)?;
    for (c, start, views) in rows {
        writeln!(w, "{},{start},{views}", table.ids[*c as usize]).map_err(err)?;
    }
    w.flush().map_err(err)
}
