//! # The flights-weather job: a stream-stream join (the changelog thesis's application 2)
//!
//! Each flight of `flights.csv` is joined with the weather row of its origin and scheduled hour
//! from `weather.csv` (the first in file order if several share them). Both files are replayed as
//! event-time streams ([`input`]: event time is the local scheduled hour), split over
//! `--sources` instances each. The join is a keyed one-hour tumbling window on the union of both
//! streams, keyed by origin: its state holds the hour's weather row and flights, and is expired
//! when trAcker's frontier passes the hour (the join's TTL), in either window form. Output: one
//! row per flight, in `flights.csv` order, columns [`HEADER`]; the weather fields are empty when
//! no weather row matches.

pub mod input;
pub mod oracle;

use crate::files::PendingFile;
use crate::job::{checkpoint_summary, CheckpointSummary, FlightsError};
use input::{JoinRecord, Side};
use serde::Serialize;
use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};
use xorflow_runtime::job_options;
use xorflow_runtime::operators::OperatorError;
use xorflow_runtime::{
    Aggregate, Dataflow, Element, RunError, RuntimeConfig, Sink, Source, SourceOutput, SourcePoll,
    WindowResult,
};

/// Header of the output CSV.
pub const HEADER: &str =
    "year,month,day,hour,origin,carrier,flight,dep_delay,temp,wind_speed,precip,visib";

/// Everything the job can be told.
#[derive(Clone, Debug)]
pub struct JoinConfig {
    /// `flights.csv`.
    pub input: PathBuf,
    /// `weather.csv`.
    pub weather: PathBuf,
    /// Result CSV.
    pub output: PathBuf,
    /// Summary JSON, if wanted.
    pub summary: Option<PathBuf>,
    /// Source instances per file.
    pub sources: usize,
    /// Replay speed: event time runs this many times faster than real time; `None`: as fast as
    /// possible.
    pub speed: Option<f64>,
    /// Workers, tracking, granularity (seconds per slot), state and checkpoints.
    pub runtime: RuntimeConfig,
}

impl JoinConfig {
    /// Defaults: 1 source per file, 1 h slots, the engine's defaults.
    pub fn new(input: PathBuf, weather: PathBuf, output: PathBuf) -> Self {
        JoinConfig {
            input,
            weather,
            output,
            summary: None,
            sources: 1,
            speed: None,
            runtime: RuntimeConfig {
                granularity: 3600,
                ..RuntimeConfig::default()
            },
        }
    }
}

/// What a run did.
#[derive(Clone, Debug, Serialize)]
pub struct JoinSummary {
    /// Data rows of `flights.csv`, and how many were skipped as malformed.
    pub flights_read: u64,
    /// See `flights_read`.
    pub flights_malformed: u64,
    /// Data rows of `weather.csv`, and how many were skipped as malformed.
    pub weather_read: u64,
    /// See `weather_read`.
    pub weather_malformed: u64,
    /// The first few skipped rows of each file: (file, line, reason).
    pub malformed_examples: Vec<(String, u64, String)>,
    /// Rows written (one per valid flight).
    pub rows_written: u64,
    /// Rows with a matching weather row.
    pub rows_matched: u64,
    /// The dataflow's run time, seconds.
    pub elapsed_s: f64,
    /// Records (flights and weather rows) emitted per second of `elapsed_s`.
    pub elements_per_s: f64,
    /// Elements that reached the join after their window had closed (must be 0).
    pub elements_below_frontier: u64,
    /// Checkpoints written (with `--checkpoint-interval`).
    pub checkpoints: Option<CheckpointSummary>,
}

/// The join state of one (origin, hour): the first weather row in file order and the flights.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct HourState {
    weather: Option<(u64, Vec<String>)>,
    flights: Vec<(u64, Vec<String>)>,
}

/// The join as a window aggregate: folds both sides of one (origin, hour), and emits a row per
/// flight, tagged with the flight's row index.
pub struct JoinHour;

impl Aggregate<JoinRecord> for JoinHour {
    type Acc = HourState;
    type Out = Vec<(u64, Vec<String>)>;

    fn init(&self) -> HourState {
        HourState::default()
    }

    fn add(&self, acc: &mut HourState, r: &JoinRecord) {
        match &r.side {
            Side::Flight(i, f) => acc.flights.push((*i, f.clone())),
            // Sources replay each file in event-time order, split round-robin: rows of one hour
            // may come from different instances in any order, so keep the smallest index.
            Side::Weather(i, w) => {
                if acc.weather.as_ref().is_none_or(|(j, _)| i < j) {
                    acc.weather = Some((*i, w.clone()));
                }
            }
        }
    }

    fn finish(&self, acc: HourState) -> Self::Out {
        let empty = vec![String::new(); input::WEATHER_COLUMNS.len()];
        let weather = acc.weather.map_or(empty, |(_, w)| w);
        (acc.flights.into_iter())
            .map(|(i, mut f)| {
                f.extend(weather.iter().cloned());
                (i, f)
            })
            .collect()
    }
}

/// One source instance: its share of one file, in event-time order.
struct RowsSource {
    records: Arc<Vec<(u64, JoinRecord)>>,
    next: usize,
    /// (first event time of the job, speed) when paced.
    speed: Option<(u64, f64)>,
    start_ns: Arc<OnceLock<u64>>,
}

impl Source<JoinRecord> for RowsSource {
    fn poll(&mut self, out: &mut SourceOutput<'_, JoinRecord>) -> SourcePoll {
        let budget = out.budget();
        for _ in 0..budget {
            let Some((t, r)) = self.records.get(self.next) else {
                break;
            };
            if let Some((t0, speed)) = self.speed {
                let start = *self.start_ns.get_or_init(|| out.now_ns());
                let due = start.saturating_add((t.saturating_sub(t0) as f64 * 1e9 / speed) as u64);
                if due > out.now_ns() {
                    return SourcePoll::WaitUntil(due);
                }
            }
            self.next += 1;
            out.emit(*t, r.clone());
            out.heartbeat(*t);
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
        let next: usize = (position.parse().ok())
            .filter(|&n| n <= self.records.len())
            .ok_or_else(|| format!("position '{position}' is not a record of this share"))?;
        self.next = next;
        if let (Some((t0, _)), Some((t, _))) = (&mut self.speed, self.records.get(next)) {
            *t0 = *t;
            self.start_ns = Arc::new(OnceLock::new());
        }
        Ok(())
    }
}

/// Output rows, each with its flight's row index (to write them in input order).
type Rows = Vec<(u64, Vec<String>)>;

/// The joined rows, on process 0 (elsewhere none may arrive: results are gathered there).
#[derive(Clone)]
struct Collected(Option<Arc<Mutex<Rows>>>);

impl Sink<WindowResult<String, Vec<(u64, Vec<String>)>>> for Collected {
    fn write(
        &mut self,
        batch: Vec<Element<WindowResult<String, Vec<(u64, Vec<String>)>>>>,
    ) -> Result<(), OperatorError> {
        let Some(rows) = &self.0 else {
            return Err("results reached a process without the output file".into());
        };
        let mut rows = rows.lock().map_err(|_| "output lock poisoned")?;
        for e in batch {
            rows.extend(e.data.value);
        }
        Ok(())
    }
}

/// Splits each file's records round-robin over `n` instances: flights shares first.
fn shares(
    n: usize,
    flights: &input::Rows,
    weather: &input::Rows,
) -> Vec<Arc<Vec<(u64, JoinRecord)>>> {
    let split = |rows: &input::Rows| {
        let mut parts = vec![Vec::new(); n];
        for (i, r) in rows.records.iter().enumerate() {
            parts[i % n].push(r.clone());
        }
        parts.into_iter().map(Arc::new).collect::<Vec<_>>()
    };
    let mut all = split(flights);
    all.extend(split(weather));
    all
}

fn check(cfg: &JoinConfig) -> Result<(), FlightsError> {
    job_options::check_sources(cfg.sources, crate::job::MAX_SOURCES)?;
    job_options::check_speed(cfg.speed)?;
    let mut paths = vec![
        ("--input", cfg.input.as_path()),
        ("--weather", cfg.weather.as_path()),
        ("--output", cfg.output.as_path()),
    ];
    if let Some(p) = &cfg.summary {
        paths.push(("--summary", p));
    }
    job_options::check_engine_and_paths(&cfg.runtime, &paths)
}

/// Runs the job: reads both files, joins them in the dataflow, and writes the rows (and the
/// summary if asked) to temporary files renamed to their paths only when everything succeeded.
///
/// # Errors
/// [`FlightsError`]: bad configuration, unreadable input, unwritable output, or an engine failure.
pub fn run(cfg: &JoinConfig) -> Result<JoinSummary, FlightsError> {
    check(cfg)?;
    let flights = input::read_flights(&cfg.input).map_err(FlightsError::Input)?;
    let weather = input::read_weather(&cfg.weather).map_err(FlightsError::Input)?;
    let leader = cfg.runtime.cluster.is_process_zero();
    let output = leader
        .then(|| PendingFile::create(&cfg.output, "output"))
        .transpose()
        .map_err(FlightsError::Output)?;
    let summary_file = (cfg.summary.as_deref())
        .filter(|_| leader)
        .map(|p| PendingFile::create(p, "summary"))
        .transpose()
        .map_err(FlightsError::Output)?;
    let rows = leader.then(|| Arc::new(Mutex::new(Vec::new())));
    let t0 = flights
        .records
        .iter()
        .chain(&weather.records)
        .map(|(t, _)| *t)
        .min()
        .unwrap_or(0);
    let mut runtime = cfg.runtime.clone();
    runtime.time_per_second = Some(1);
    runtime.job_key = format!(
        "flights-weather rows={}+{} --sources={}",
        flights.rows, weather.rows, cfg.sources
    );
    let df = Dataflow::new(runtime)?;
    let parts = shares(cfg.sources, &flights, &weather);
    let start_ns = Arc::new(OnceLock::new());
    let speed = cfg.speed.map(|s| (t0, s));
    let sink = Collected(rows.clone());
    df.source("inputs", parts.len(), move |k| RowsSource {
        records: parts[k].clone(),
        next: 0,
        speed,
        start_ns: start_ns.clone(),
    })
    .tumbling_window("join", 3600, |r: &JoinRecord| r.origin.clone(), JoinHour)
    .gather()
    .sink("csv", move |_| sink.clone());
    let report = df.run().map_err(|e| match e {
        RunError::Config(m) => FlightsError::Config(m),
        e => FlightsError::Run(e),
    })?;
    let elapsed_s = report.elapsed.as_secs_f64();
    let mut rows = rows.map(|r| std::mem::take(&mut *r.lock().expect("no worker left")));
    let mut examples = Vec::new();
    for (what, r) in [("input", &flights), ("weather", &weather)] {
        for m in &r.malformed_examples {
            examples.push((what.to_string(), m.line, m.reason.clone()));
        }
    }
    let window = report.vertex("join").expect("the join vertex");
    let emitted = report.source_elements();
    let mut summary = JoinSummary {
        flights_read: flights.rows,
        flights_malformed: flights.malformed,
        weather_read: weather.rows,
        weather_malformed: weather.malformed,
        malformed_examples: examples,
        rows_written: 0,
        rows_matched: 0,
        elapsed_s,
        elements_per_s: emitted as f64 / elapsed_s.max(1e-9),
        elements_below_frontier: report.below_frontier(),
        checkpoints: checkpoint_summary(&report, window),
    };
    if let (Some(out), Some(rows)) = (output, rows.as_mut()) {
        rows.sort_unstable_by_key(|(i, _)| *i);
        summary.rows_written = rows.len() as u64;
        summary.rows_matched = rows.iter().filter(|(_, r)| !r[8].is_empty()).count() as u64;
        write_rows(&out, rows)?;
        if let Some(s) = &summary_file {
            let json = serde_json::to_string_pretty(&summary).expect("summary serializes");
            let mut f = s.file().map_err(FlightsError::Output)?;
            f.write_all(json.as_bytes())
                .and_then(|()| f.write_all(b"\n"))
                .map_err(|e| FlightsError::Output(format!("cannot write summary: {e}")))?;
        }
        let all = std::iter::once(out).chain(summary_file);
        crate::files::commit_all(all).map_err(FlightsError::Output)?;
    }
    Ok(summary)
}

/// Writes the header and `rows` to `out`'s temporary file.
fn write_rows(out: &PendingFile, rows: &[(u64, Vec<String>)]) -> Result<(), FlightsError> {
    let err = |e: &dyn std::fmt::Display| {
        FlightsError::Output(format!(
            "cannot write output '{}': {e}",
            out.target().display()
        ))
    };
    let file = out.file().map_err(FlightsError::Output)?;
    let mut w = csv::Writer::from_writer(std::io::BufWriter::new(file));
    w.write_record(HEADER.split(',')).map_err(|e| err(&e))?;
    for (_, r) in rows {
        w.write_record(r).map_err(|e| err(&e))?;
    }
    w.flush().map_err(|e| err(&e))
}
