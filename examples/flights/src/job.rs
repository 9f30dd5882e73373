//! The flights dataflow, its sources and its summary.

use crate::files::PendingFile;
use crate::output::{copy_rows, CsvOutput, DepartureStats, Departures};
use crate::reader::{read_flights, Flight, FlightsInput, Malformed, Record};
use serde::Serialize;
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};
use xorflow_kafka::{
    InputCounts, KafkaSink, KafkaSource, KafkaUri, SourceConfig, SourceCounters, Watermark,
};
use xorflow_runtime::job_options;
use xorflow_runtime::operators::OperatorError;
use xorflow_runtime::ValueName;
use xorflow_runtime::{
    Dataflow, MessageKind, PartFiles, RunError, RuntimeConfig, Sink, Source, SourceOutput,
    SourcePoll, Staging, WindowResult,
};

/// Largest lateness or window accepted, seconds (100 years): far beyond any real use, and small
/// enough that time arithmetic cannot overflow.
pub const MAX_SECONDS: u64 = 100 * 365 * 86_400;

/// Most source instances: each is a vertex instance with its own share of the records.
pub const MAX_SOURCES: usize = 1024;

/// Everything the job can be told.
#[derive(Clone, Debug)]
pub struct FlightsConfig {
    /// `flights.csv`.
    pub input: PathBuf,
    /// Result CSV.
    pub output: PathBuf,
    /// Summary JSON, if wanted.
    pub summary: Option<PathBuf>,
    /// Where late rows go (verbatim, with the header), if wanted.
    pub late_output: Option<PathBuf>,
    /// Source instances N (records are split round-robin in arrival order).
    pub sources: usize,
    /// Allowed lateness L, seconds.
    pub lateness_s: u64,
    /// Window size, seconds.
    pub window_s: u64,
    /// Replay speed: event time runs this many times faster than real time; `None`: as fast as
    /// possible.
    pub speed: Option<f64>,
    /// Draw a progress bar on stderr.
    pub progress: bool,
    /// Workers, tracking, granularity (seconds per slot) and batching.
    pub runtime: RuntimeConfig,
    /// Kafka instead of files (`--input kafka://...`, `--output kafka://...`).
    pub kafka: KafkaOptions,
}

/// Where the job meets Kafka (docs/kafka.md).
#[derive(Clone, Debug)]
pub struct KafkaOptions {
    /// Read the rows from this topic instead of `input` ([`crate::kafka`] gives the layout).
    pub input: Option<KafkaUri>,
    /// Write the result rows to this topic instead of `output`: one record per row, keyed by
    /// origin, committed once per checkpoint (exactly-once with `--checkpoint-interval`).
    pub output: Option<KafkaUri>,
    /// A partition without records for this long stops holding the windows back.
    pub idle_timeout: Duration,
    /// Keep reading at the end of the partitions (default: stop there, as a bounded job).
    pub follow: bool,
}

impl KafkaOptions {
    /// The options of the input topic.
    fn input_options(&self) -> xorflow_kafka::InputOptions {
        xorflow_kafka::InputOptions {
            idle_timeout: self.idle_timeout,
            follow: self.follow,
        }
    }
}

impl Default for KafkaOptions {
    fn default() -> Self {
        KafkaOptions {
            input: None,
            output: None,
            idle_timeout: Duration::from_secs(10),
            follow: false,
        }
    }
}

impl FlightsConfig {
    /// Defaults for `input`: 2 workers, 1 source, 24 h lateness, 1 h windows, 60 s slots.
    pub fn new(input: PathBuf, output: PathBuf) -> Self {
        FlightsConfig {
            input,
            output,
            summary: None,
            late_output: None,
            sources: 1,
            lateness_s: 24 * 3600,
            window_s: 3600,
            speed: None,
            progress: false,
            runtime: RuntimeConfig {
                granularity: 60,
                ..RuntimeConfig::default()
            },
            kafka: KafkaOptions::default(),
        }
    }
}

/// Why the job failed ([`xorflow_runtime::JobError`]: exit 2 for config, input and output, 1 for
/// the engine).
pub type FlightsError = xorflow_runtime::JobError;

/// Messages and bytes of one kind.
#[derive(Clone, Debug, Serialize)]
pub struct KindTraffic {
    /// Messages.
    pub messages: u64,
    /// Bytes (wire encoding, headers included).
    pub bytes: u64,
}

/// Notification latency quantiles, microseconds.
#[derive(Clone, Debug, Serialize)]
pub struct Latency {
    /// Median.
    pub p50_us: f64,
    /// 99th percentile.
    pub p99_us: f64,
    /// Samples (windows closed by a notification).
    pub samples: u64,
}

/// What the job reports (also written as the `--summary` JSON).
#[derive(Clone, Debug, Serialize)]
pub struct Summary {
    /// Input file.
    pub input: String,
    /// Worker threads per process.
    pub workers: usize,
    /// Processes (each with `workers` worker threads, except the dedicated tracker processes).
    pub processes: usize,
    /// Dedicated tracker processes (no workers; they host the tracker shards).
    pub tracker_processes: usize,
    /// This process (only process 0's summary covers the whole job).
    pub process: usize,
    /// Tracker shards (tracking `tracker`).
    pub tracker_shards: usize,
    /// Source instances N.
    pub sources: usize,
    /// "tracker" or "none".
    pub tracking: String,
    /// Lateness L, seconds.
    pub lateness_s: u64,
    /// Window size, seconds.
    pub window_s: u64,
    /// Tracking granularity, seconds per slot.
    pub granularity_s: u64,
    /// Data rows in the input.
    pub records_read: u64,
    /// Rows skipped as malformed.
    pub records_malformed: u64,
    /// Rows not emitted because they were late.
    pub records_late: u64,
    /// Rows emitted into the dataflow by this run (a resumed run starts at its checkpoint's
    /// positions).
    pub records_emitted: u64,
    /// Result rows written ((window, origin) pairs).
    pub windows_emitted: u64,
    /// Reading and sorting the input, seconds.
    pub load_s: f64,
    /// The dataflow's run time, seconds.
    pub elapsed_s: f64,
    /// Emitted records per second of `elapsed_s`.
    pub elements_per_s: f64,
    /// From the window operator receiving a window's last element to its notification (trAcker).
    pub notification_latency: Option<Latency>,
    /// Elements that reached a window after it was closed (must be 0).
    pub elements_below_frontier: u64,
    /// Messages and bytes by kind, plus `service` (everything but data).
    pub traffic: std::collections::BTreeMap<String, KindTraffic>,
    /// The same per process, in process order (process 0 first).
    pub traffic_per_process: Vec<std::collections::BTreeMap<String, KindTraffic>>,
    /// The first malformed rows.
    pub malformed_examples: Vec<Malformed>,
    /// With a Kafka input: the first malformed or late records, by partition and offset.
    pub skipped_records: Vec<SkippedRecord>,
    /// Checkpoints written (with `--checkpoint-interval`).
    pub checkpoints: Option<CheckpointSummary>,
    /// CPU by operator and by task (in-engine accounting).
    pub cpu: xorflow_runtime::measure::cpu_report::CpuReport,
}

/// A record a Kafka source skipped: `{partition, offset, reason}`.
pub use xorflow_kafka::SkippedRecord;

/// What checkpointing did in a run.
#[derive(Clone, Debug, Serialize)]
pub struct CheckpointSummary {
    /// Checkpoints committed (manifests written).
    pub completed: u64,
    /// The newest one.
    pub latest: Option<u64>,
    /// Snapshot files written, and their bytes.
    pub files: u64,
    /// Bytes of snapshot files written.
    pub bytes: u64,
    /// From a checkpoint's first report to its manifest, ms: median and 99th percentile.
    pub duration_p50_ms: f64,
    /// See `duration_p50_ms`.
    pub duration_p99_ms: f64,
    /// Elements that waited at a window for their epoch (the cut's cost).
    pub buffered_elements: u64,
    /// Window instances the last restore rolled back to their local store (local recovery),
    /// and those it rebuilt from the checkpoint store.
    pub restored_locally: u64,
    /// See `restored_locally`.
    pub restored_from_store: u64,
    /// Changelog state: records and bytes the window's stores appended to their changelogs,
    /// and records replayed by restores.
    pub changelog_records: u64,
    /// See `changelog_records`.
    pub changelog_bytes: u64,
    /// See `changelog_records`.
    pub changelog_replayed: u64,
    /// Changelog state: bytes the window's local stores were given (puts and deletes).
    pub store_bytes: u64,
    /// The checkpoint the run resumed from (`--resume`).
    pub resumed_from: Option<u64>,
    /// Newer checkpoints the resume skipped, each with why.
    pub skipped: Vec<String>,
    /// Why the job was restarted from a checkpoint, per restart.
    pub restarts: Vec<String>,
}

/// Counters the sources share with the progress bar and the summary.
#[derive(Default)]
struct Progress {
    emitted: AtomicU64,
}

struct FlightsSource {
    /// This instance's share of the arrival sequence.
    records: Arc<Vec<Record>>,
    next: usize,
    lateness: i64,
    /// (first arrival, speed) when replaying in real time.
    speed: Option<(i64, f64)>,
    start_ns: Arc<OnceLock<u64>>,
    progress: Arc<Progress>,
}

impl Source<Flight> for FlightsSource {
    fn poll(&mut self, out: &mut SourceOutput<'_, Flight>) -> SourcePoll {
        let budget = out.budget();
        let mut n = 0;
        while n < budget {
            let Some(r) = self.records.get(self.next) else {
                break;
            };
            if let Some((a0, speed)) = self.speed {
                let start = *self.start_ns.get_or_init(|| out.now_ns());
                // Saturating: `run` refuses speeds whose replay overflows, this is a last guard
                // against wrapping around to "due long ago".
                let due = start.saturating_add(((r.arrival_time - a0) as f64 * 1e9 / speed) as u64);
                if due > out.now_ns() {
                    self.publish(out.emitted());
                    return SourcePoll::WaitUntil(due);
                }
            }
            self.next += 1;
            out.emit(r.event_time as u64, r.flight.clone());
            out.heartbeat((r.arrival_time - self.lateness).max(0) as u64);
            n += 1;
        }
        self.publish(n);
        if self.next >= self.records.len() {
            SourcePoll::Done
        } else {
            SourcePoll::Ready
        }
    }

    fn position(&self) -> Option<String> {
        Some(self.next_record())
    }

    /// Resumes at record `position` of this instance's share; a paced replay restarts its clock
    /// there (the resumed run does not wait out the time before it).
    fn seek(&mut self, position: &str) -> Result<(), OperatorError> {
        let next: usize = position
            .parse()
            .map_err(|_| format!("position '{position}' is not a record index"))?;
        if next > self.records.len() {
            return Err(format!(
                "position {next} is past this instance's {} records: the checkpoint is not of \
                 this input",
                self.records.len()
            )
            .into());
        }
        self.next = next;
        if let (Some((a0, _)), Some(r)) = (&mut self.speed, self.records.get(next)) {
            *a0 = r.arrival_time;
            // Its own clock: a restart in this process must not pace from the failed attempt's.
            self.start_ns = Arc::new(OnceLock::new());
        }
        self.publish(next);
        Ok(())
    }
}

impl FlightsSource {
    /// The index of the next record of this instance's share (`Source::position`).
    fn next_record(&self) -> String {
        self.next.to_string()
    }

    fn publish(&mut self, emitted: usize) {
        self.progress
            .emitted
            .fetch_add(emitted as u64, Ordering::Relaxed);
    }
}

fn progress_bar(
    total: u64,
    progress: Arc<Progress>,
    done: Arc<AtomicBool>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let bar = indicatif::ProgressBar::new(total);
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "{spinner} [{elapsed_precise}] {bar:40} {pos}/{len} records {msg}",
            )
            .expect("valid progress template"),
        );
        let start = Instant::now();
        while !done.load(Ordering::Relaxed) {
            let n = progress.emitted.load(Ordering::Relaxed);
            bar.set_position(n);
            let rate = n as f64 / start.elapsed().as_secs_f64().max(1e-3);
            bar.set_message(format!("{rate:.0}/s"));
            std::thread::sleep(Duration::from_millis(100));
        }
        bar.finish_and_clear();
    })
}

/// `kind -> {messages, bytes}` for every kind, plus `service` (all but data).
fn traffic_map(t: &xorflow_runtime::Traffic) -> std::collections::BTreeMap<String, KindTraffic> {
    let mut m = std::collections::BTreeMap::new();
    for k in MessageKind::ALL {
        let c = t.get(k);
        m.insert(
            k.name().to_string(),
            KindTraffic {
                messages: c.messages,
                bytes: c.bytes,
            },
        );
    }
    let s = t.service();
    m.insert(
        "service".into(),
        KindTraffic {
            messages: s.messages,
            bytes: s.bytes,
        },
    );
    m
}

/// Refuses a replay speed at which replaying `input` would take more than [`MAX_SECONDS`]: its
/// nanoseconds would overflow (and it is certainly a typo).
fn check_replay(speed: Option<f64>, input: &FlightsInput) -> Result<(), FlightsError> {
    let (Some(speed), Some(first), Some(last)) =
        (speed, input.records.first(), input.records.last())
    else {
        return Ok(());
    };
    let replay_s = (last.arrival_time - first.arrival_time) as f64 / speed;
    if replay_s > MAX_SECONDS as f64 {
        return Err(FlightsError::Config(format!(
            "--speed {speed:e} would replay the input's {} s of arrivals in {:.3e} years, more \
             than {} years",
            last.arrival_time - first.arrival_time,
            replay_s / (365.0 * 86_400.0),
            MAX_SECONDS / (365 * 86_400)
        )));
    }
    Ok(())
}

/// Refuses an input and outputs of which two are the same file (any spelling, link or hard
/// link): writing one would destroy the other, with exit 0. Refuses `--late-output` with an input
/// that is not a regular file (stdin, a pipe): the late rows are copied from the input again
/// after the run, which a pipe cannot give (it used to fail at the end, or write an empty file).
fn check_paths(cfg: &FlightsConfig) -> Result<(), FlightsError> {
    if cfg.late_output.is_some() && cfg.kafka.input.is_none() {
        if let Ok(m) = std::fs::metadata(&cfg.input) {
            if !m.is_file() {
                return Err(FlightsError::Config(format!(
                    "--late-output copies the late rows from --input again after the run, so \
                     --input must be a regular file, and '{}' is not (save it to a file first, \
                     or leave out --late-output)",
                    cfg.input.display()
                )));
            }
        }
    }
    let mut paths = Vec::new();
    if cfg.kafka.input.is_none() {
        paths.push(("--input", cfg.input.as_path()));
    }
    if cfg.kafka.output.is_none() {
        paths.push(("--output", cfg.output.as_path()));
    }
    if let Some(p) = &cfg.late_output {
        paths.push(("--late-output", p));
    }
    if let Some(p) = &cfg.summary {
        paths.push(("--summary", p));
    }
    crate::files::check_distinct(&paths).map_err(FlightsError::Config)
}

/// True for the process that writes the output (process 0; the only one without a cluster).
fn is_leader(rt: &RuntimeConfig) -> bool {
    rt.cluster.is_process_zero()
}

/// The CSV sink on the process that owns the output; elsewhere it must never see a result (all
/// results are gathered to worker 0, which runs in process 0). With checkpoints it commits its
/// rows as part files, one per completed checkpoint ([`Staging::PerCheckpoint`]), which are
/// appended to the output when the job has finished.
struct LeaderSink {
    csv: Option<CsvOutput>,
    parts: Option<PartFiles>,
}

impl LeaderSink {
    fn no_output() -> String {
        "results reached a process without the output file".into()
    }
}

impl Sink<WindowResult<String, DepartureStats>> for LeaderSink {
    fn write(
        &mut self,
        batch: Vec<xorflow_runtime::Element<WindowResult<String, DepartureStats>>>,
    ) -> Result<(), OperatorError> {
        match (&mut self.csv, &mut self.parts) {
            (Some(c), Some(p)) => Ok(c.format(&batch, p.pending())?),
            (Some(c), None) => c.write(batch),
            (None, _) => Err(Self::no_output().into()),
        }
    }

    fn staging(&self) -> Staging {
        match self.parts {
            Some(_) => Staging::PerCheckpoint,
            None => Staging::AtEnd,
        }
    }

    fn commit(&mut self, checkpoint: u64) -> Result<(), OperatorError> {
        self.parts
            .as_mut()
            .map_or(Ok(()), |p| Ok(p.commit(checkpoint)?))
    }

    fn rollback(&mut self, committed: Option<u64>) -> Result<(), OperatorError> {
        self.parts
            .as_mut()
            .map_or(Ok(()), |p| Ok(p.rollback(committed)?))
    }

    fn finish(&mut self) -> Result<(), OperatorError> {
        if let Some(p) = &mut self.parts {
            p.finish()?;
        }
        self.csv.as_mut().map_or(Ok(()), Sink::finish)
    }
}

/// Where the CSV sink of a run with checkpoints commits its part files: beside the output, so
/// that a run resumed after process 0 died finds them (`--resume`); removed once the output is
/// complete.
fn parts_dir(cfg: &FlightsConfig, output: &std::path::Path) -> Option<PathBuf> {
    let rt = &cfg.runtime;
    if rt.checkpoint_dir.is_none() || rt.checkpoint_interval.is_none() {
        return None;
    }
    let name = output.file_name()?.to_string_lossy();
    Some(output.with_file_name(format!(".{name}.xorflow-parts")))
}

/// Checks what the configuration says on its own, before anything is read or written.
fn check_config(cfg: &FlightsConfig) -> Result<(), FlightsError> {
    job_options::check_sources(cfg.sources, MAX_SOURCES)?;
    if cfg.window_s == 0 {
        return Err(FlightsError::Config("--window must be at least 1s".into()));
    }
    job_options::check_speed(cfg.speed)?;
    if cfg.lateness_s > MAX_SECONDS || cfg.window_s > MAX_SECONDS {
        return Err(FlightsError::Config(format!(
            "--out-of-orderness and --window must be at most {MAX_SECONDS} s (100 years)"
        )));
    }
    check_kafka(cfg)?;
    cfg.runtime.validate().map_err(FlightsError::Config)?;
    // A bad hostfile is a configuration error: say so before reading the input or touching the
    // outputs.
    cfg.runtime
        .cluster
        .check_hostfile()
        .map_err(FlightsError::Config)?;
    Ok(())
}

/// Refuses what a Kafka input cannot do.
fn check_kafka(cfg: &FlightsConfig) -> Result<(), FlightsError> {
    let k = &cfg.kafka;
    let refuse = |what: &str| Err(FlightsError::Config(what.to_string()));
    if k.input.is_some() && cfg.late_output.is_some() {
        return refuse(
            "--late-output copies late rows from the input file; with a Kafka input the late \
             records are counted and named by partition and offset in the report instead",
        );
    }
    k.input_options()
        .check(k.input.as_ref())
        .map_err(FlightsError::Config)
}

/// The files process 0 writes, each pending (a temporary file beside its final path) until the
/// whole run has succeeded.
struct Outputs {
    /// `None` when the results go to Kafka.
    csv: Option<PendingFile>,
    late: Option<PendingFile>,
    summary: Option<PendingFile>,
}

impl Outputs {
    /// Creates every output's temporary file, and the missing directories: an output that cannot
    /// be written is found before the job starts.
    fn create(cfg: &FlightsConfig) -> Result<Self, FlightsError> {
        let make = |p: &std::path::Path, what| PendingFile::create(p, what);
        Ok(Outputs {
            csv: (cfg.kafka.output.is_none())
                .then(|| make(&cfg.output, "output"))
                .transpose()
                .map_err(FlightsError::Output)?,
            late: (cfg.late_output.as_deref())
                .map(|p| make(p, "late output"))
                .transpose()
                .map_err(FlightsError::Output)?,
            summary: (cfg.summary.as_deref())
                .map(|p| make(p, "summary"))
                .transpose()
                .map_err(FlightsError::Output)?,
        })
    }

    /// Writes the late rows and the summary, then renames every file to its final path (the
    /// results first, the summary last). Nothing is renamed unless everything was written.
    fn finish(
        self,
        cfg: &FlightsConfig,
        late: &mut [u64],
        summary: &Summary,
    ) -> Result<(), FlightsError> {
        if let Some(p) = &self.late {
            let file = p.file().map_err(FlightsError::Output)?;
            copy_rows(&cfg.input, late, file, p.target()).map_err(FlightsError::Output)?;
        }
        if let Some(p) = &self.summary {
            let json = serde_json::to_string_pretty(summary).expect("summary serializes");
            let werr = |e: std::io::Error| {
                FlightsError::Output(format!(
                    "cannot write summary '{}': {e}",
                    p.target().display()
                ))
            };
            let mut f = p.file().map_err(FlightsError::Output)?;
            f.write_all(json.as_bytes())
                .and_then(|()| f.write_all(b"\n"))
                .map_err(werr)?;
        }
        if let Some(p) = &self.csv {
            // The sinks of all workers wrote rows as windows closed: sorted (by window start,
            // then origin: the rows' first fields), every run of this input writes one file.
            p.sort_lines(1).map_err(FlightsError::Output)?;
        }
        let all = [self.csv, self.late, self.summary].into_iter().flatten();
        crate::files::commit_all(all).map_err(FlightsError::Output)
    }
}

/// Sets the late rows aside (lateness is a property of each row: event time below its own
/// arrival minus the allowed lateness; they are counted and never enter the dataflow) and splits
/// the others round-robin over the source instances: instance k gets records k, k+n, k+2n, ...
/// Returns the instances' shares and the late rows' byte offsets.
fn split_records(cfg: &FlightsConfig, input: &FlightsInput) -> (Vec<Arc<Vec<Record>>>, Vec<u64>) {
    let lateness = cfg.lateness_s as i64;
    let (on_time, late): (Vec<&Record>, Vec<&Record>) = input
        .records
        .iter()
        .partition(|r| r.event_time >= r.arrival_time - lateness);
    let mut parts: Vec<Vec<Record>> = vec![Vec::new(); cfg.sources];
    for (i, r) in on_time.iter().enumerate() {
        parts[i % cfg.sources].push((*r).clone());
    }
    (
        parts.into_iter().map(Arc::new).collect(),
        late.iter().map(|r| r.byte).collect(),
    )
}

/// Where the rows come from.
enum Feed {
    /// The file, read and split over the source instances, and its late rows' byte offsets.
    File {
        input: FlightsInput,
        shares: Vec<Arc<Vec<Record>>>,
        late: Vec<u64>,
    },
    /// A topic.
    Kafka {
        source: Arc<SourceConfig>,
        counters: Arc<SourceCounters>,
    },
}

impl Feed {
    /// Reads the file, or asks the broker for the topic's partitions (so that a missing topic
    /// or broker is an input error before the job starts).
    fn open(cfg: &FlightsConfig) -> Result<Self, FlightsError> {
        let Some(uri) = &cfg.kafka.input else {
            let input = read_flights(&cfg.input).map_err(FlightsError::Input)?;
            check_replay(cfg.speed, &input)?;
            let (shares, late) = split_records(cfg, &input);
            return Ok(Feed::File {
                input,
                shares,
                late,
            });
        };
        let watermark = Watermark::RecordTimestamp {
            ms_per_unit: 1000,
            lateness: cfg.lateness_s,
        };
        // Paced by the record timestamps (the rows' arrival times).
        let source = (cfg.kafka.input_options())
            .source(uri, cfg.sources, watermark, cfg.speed)
            .map_err(FlightsError::Input)?;
        Ok(Feed::Kafka {
            source: Arc::new(source),
            counters: Arc::default(),
        })
    }

    /// What identifies the input in the job id (a resumed run must read the same).
    fn key(&self) -> String {
        match self {
            Feed::File { input, .. } => format!("rows={}", input.rows),
            Feed::Kafka { source, .. } => {
                format!("kafka={} partitions={}", source.uri, source.partitions)
            }
        }
    }
}

/// Builds the dataflow over `feed` and runs it (with a progress bar if asked), the results going
/// to Kafka or to `csv` on process 0 (through part files in `parts` with checkpoints).
fn run_dataflow(
    cfg: &FlightsConfig,
    feed: &Feed,
    csv: Option<CsvOutput>,
    parts: Option<PathBuf>,
) -> Result<xorflow_runtime::RunReport, FlightsError> {
    let progress = Arc::new(Progress::default());
    let mut runtime = cfg.runtime.clone();
    // Times are Unix seconds (the status page shows them as times).
    runtime.time_per_second = Some(1);
    // What a resumed run must keep (not the pacing, --speed: it changes when rows are read,
    // not which or what they make); named so that a refused resume says what differs.
    runtime.job_key = format!(
        "flights {} --window={} --out-of-orderness={} --sources={} output={:?}",
        feed.key(),
        cfg.window_s,
        cfg.lateness_s,
        cfg.sources,
        cfg.kafka.output.as_ref().map(ToString::to_string)
    );
    let df = Dataflow::new(runtime)?;
    let departures = match feed {
        Feed::File { input, shares, .. } => {
            let a0 = input.records.first().map_or(0, |r| r.arrival_time);
            let (speed, lateness) = (cfg.speed.map(|s| (a0, s)), cfg.lateness_s as i64);
            let (p2, s2, shares) = (progress.clone(), Arc::new(OnceLock::new()), shares.clone());
            df.source("departures", cfg.sources, move |k| FlightsSource {
                records: shares[k].clone(),
                next: 0,
                lateness,
                speed,
                start_ns: s2.clone(),
                progress: p2.clone(),
            })
        }
        Feed::Kafka { source, counters } => {
            let (s2, c2) = (source.clone(), counters.clone());
            df.source("departures", cfg.sources, move |k| {
                KafkaSource::new(
                    s2.clone(),
                    k,
                    crate::kafka::FlightsDecoder::default(),
                    c2.clone(),
                )
            })
        }
    };
    let windows = departures.tumbling_window(
        "hourly",
        cfg.window_s,
        |f: &Flight| f.origin.clone(),
        Departures,
    );
    match &cfg.kafka.output {
        // Every window instance writes its own results, in its own transactions.
        Some(uri) => {
            let uri = uri.clone();
            windows.sink("kafka", move |i| {
                KafkaSink::new(uri.clone(), i, crate::kafka::FlightsEncoder)
            });
        }
        None => {
            let sink = csv.clone();
            windows.gather().sink("csv", move |i| LeaderSink {
                csv: sink.clone(),
                parts: sink
                    .as_ref()
                    .and(parts.as_deref())
                    .map(|d| PartFiles::new(d, i)),
            });
        }
    }
    let done = Arc::new(AtomicBool::new(false));
    let bar = match feed {
        Feed::File { input, .. } if cfg.progress => Some(progress_bar(
            input.records.len() as u64,
            progress.clone(),
            done.clone(),
        )),
        _ => None,
    };
    let report = df.run();
    done.store(true, Ordering::Relaxed);
    if let Some(b) = bar {
        let _ = b.join();
    }
    // A result that could not be written is an output error, whatever the engine made of it.
    report.map_err(|e| match (csv.and_then(|c| c.failure()), e) {
        (Some(msg), _) => FlightsError::Output(msg),
        // Refused before anything ran (a checkpoint directory of another run, say): exit 2.
        (None, RunError::Config(msg)) => FlightsError::Config(msg),
        (None, e) => FlightsError::Run(e),
    })
}

/// The input's counts: rows read, malformed, late; the first malformed rows (file) or skipped
/// records (Kafka: on process 0 every process's counts, with process 0's examples).
fn input_counts(
    feed: &Feed,
    report: &xorflow_runtime::RunReport,
) -> (u64, u64, u64, Vec<Malformed>, Vec<SkippedRecord>) {
    match feed {
        Feed::File { input, late, .. } => (
            input.rows,
            input.malformed,
            late.len() as u64,
            input.malformed_examples.clone(),
            Vec::new(),
        ),
        Feed::Kafka { counters, .. } => {
            let c = InputCounts::of_run(report, "departures", counters.snapshot());
            (c.read, c.malformed, c.late, Vec::new(), c.examples)
        }
    }
}

/// What the run did, from the input and the engine's report.
fn summarize(
    cfg: &FlightsConfig,
    feed: &Feed,
    report: &xorflow_runtime::RunReport,
    load_s: f64,
) -> Summary {
    let window = report.vertex("hourly").expect("window vertex");
    let elapsed_s = report.elapsed.as_secs_f64();
    let emitted = report.source_elements();
    let (read, malformed, late, malformed_examples, skipped_records) = input_counts(feed, report);
    Summary {
        input: match &cfg.kafka.input {
            Some(u) => u.to_string(),
            None => cfg.input.display().to_string(),
        },
        workers: cfg.runtime.workers,
        sources: cfg.sources,
        processes: report.processes,
        tracker_processes: report.tracker_processes,
        process: report.process,
        tracker_shards: report.tracker_shards,
        tracking: cfg.runtime.tracking.name().into(),
        lateness_s: cfg.lateness_s,
        window_s: cfg.window_s,
        granularity_s: cfg.runtime.granularity,
        records_read: read,
        records_malformed: malformed,
        records_late: late,
        records_emitted: emitted,
        windows_emitted: window.elements_out,
        load_s,
        elapsed_s,
        elements_per_s: emitted as f64 / elapsed_s.max(1e-9),
        notification_latency: window.latency_us(0.5).map(|p50| Latency {
            p50_us: p50,
            p99_us: window.latency_us(0.99).unwrap_or(p50),
            samples: window.notification_latency_ns.len(),
        }),
        elements_below_frontier: report.below_frontier(),
        traffic: traffic_map(&report.traffic),
        traffic_per_process: report
            .traffic_per_process()
            .iter()
            .map(traffic_map)
            .collect(),
        malformed_examples,
        skipped_records,
        checkpoints: checkpoint_summary(report, window),
        cpu: xorflow_runtime::measure::cpu_report::CpuReport::of(report),
    }
}

/// The checkpoint part of a summary: the coordinator's statistics, and what waited at the
/// stateful vertex `window` for its epoch.
pub(crate) fn checkpoint_summary(
    report: &xorflow_runtime::RunReport,
    window: &xorflow_runtime::VertexStats,
) -> Option<CheckpointSummary> {
    report.checkpoints.as_ref().map(|c| {
        let mut d = c.duration_ms.clone();
        d.sort_by(f64::total_cmp);
        let q = |p: f64| {
            d.get(((d.len() as f64 - 1.0) * p).round() as usize)
                .copied()
        };
        CheckpointSummary {
            completed: c.completed,
            latest: c.latest,
            files: c.files,
            bytes: c.bytes,
            duration_p50_ms: q(0.5).unwrap_or(0.0),
            duration_p99_ms: q(0.99).unwrap_or(0.0),
            buffered_elements: window
                .counter(xorflow_runtime::progress::cut::CHECKPOINT_BUFFERED_ELEMENTS),
            restored_locally: window.counter(xorflow_runtime::progress::cut::RESTORED_LOCALLY),
            restored_from_store: window
                .counter(xorflow_runtime::progress::cut::RESTORED_FROM_STORE),
            changelog_records: window
                .counter(xorflow_runtime::operators::window::CHANGELOG_RECORDS),
            changelog_bytes: window.counter(xorflow_runtime::operators::window::CHANGELOG_BYTES),
            changelog_replayed: window
                .counter(xorflow_runtime::operators::window::CHANGELOG_REPLAYED),
            store_bytes: window.counter(xorflow_runtime::operators::window::STORE_BYTES),
            resumed_from: c.resumed_from,
            skipped: c.skipped.clone(),
            restarts: c.restarts.clone(),
        }
    })
}

/// Runs the job: reads the input, replays it through the dataflow, writes the CSV (and the late
/// rows and summary if asked for) and returns the summary. The outputs are written to temporary
/// files and renamed to their paths only when everything succeeded: a failed run leaves them as
/// they were.
///
/// # Errors
/// [`FlightsError`]: bad configuration, unreadable input, unwritable output, or an engine failure.
pub fn run(cfg: &FlightsConfig) -> Result<Summary, FlightsError> {
    check_config(cfg)?;
    let leader = is_leader(&cfg.runtime);
    if leader {
        check_paths(cfg)?;
    }
    let t0 = Instant::now();
    let mut feed = Feed::open(cfg)?;
    let load_s = t0.elapsed().as_secs_f64();
    if let (true, Some(uri)) = (leader, &cfg.kafka.output) {
        crate::kafka::prepare_output(uri).map_err(FlightsError::Output)?;
    }
    // In a multi-process run every process reads the input and emits its sources' share; the
    // results are gathered to worker 0, and process 0 alone writes the output files.
    let outputs = leader.then(|| Outputs::create(cfg)).transpose()?;
    let csv = match outputs.as_ref().and_then(|o| o.csv.as_ref()) {
        Some(p) => {
            let file = p.file().map_err(FlightsError::Output)?;
            Some(CsvOutput::create(file, p.target()).map_err(FlightsError::Output)?)
        }
        None => None,
    };
    let csv_file = outputs.as_ref().and_then(|o| o.csv.as_ref());
    let parts = csv_file.and_then(|p| parts_dir(cfg, p.target()));
    let report = run_dataflow(cfg, &feed, csv.clone(), parts.clone())?;
    if let (Some(c), Some(d), Some(p)) = (&csv, &parts, csv_file) {
        let file = p.file().map_err(FlightsError::Output)?;
        c.append_parts(d, file).map_err(FlightsError::Output)?;
    }
    let mut summary = summarize(cfg, &feed, &report, load_s);
    if let Some(c) = &csv {
        // What the file holds: with --resume also the rows committed before the failure.
        summary.windows_emitted = c.rows();
    }
    if let Some(o) = outputs {
        let mut none = Vec::new();
        let late = match &mut feed {
            Feed::File { late, .. } => late,
            Feed::Kafka { .. } => &mut none,
        };
        o.finish(cfg, late, &summary)?;
    }
    if let Some(d) = &parts {
        PartFiles::remove(d).map_err(FlightsError::Output)?;
    }
    Ok(summary)
}
