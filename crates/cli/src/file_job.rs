//! `xorflow run file`: the built-in event-time operators on a user's own CSV or JSON-lines file,
//! without writing Rust. Rows are read with `connectors/rows.rs`, replayed in file order as a
//! live feed with bounded disorder (`connectors/replay.rs`), keyed, windowed (tumbling, sliding
//! or session windows, with allowed lateness and a late output: docs/operators.md) and
//! aggregated; the final result per (window, key) is written, sorted, as CSV, JSON lines or
//! Parquet (docs/jobs.md, "Your own files").

use clap::Args;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use xorflow_cli::checkpoint_summary::say_checkpoints;
use xorflow_runtime::args::EngineArgs;
use xorflow_runtime::connectors::live_rows::LiveRows;
use xorflow_runtime::connectors::output_file::{check_distinct, commit_all, PendingFile};
use xorflow_runtime::connectors::parquet_rows::{self, ColumnType};
use xorflow_runtime::connectors::print_rows::{PrintFormat, PrintRows, Render};
use xorflow_runtime::connectors::replay::Replay;
use xorflow_runtime::connectors::rows::{read_input, RowFormat, RowRead, RowReader};
use xorflow_runtime::{
    Aggregate, Dataflow, JobError, SessionWindows, SharedVec, Time, VecSink, WindowResult,
    WindowSpec, Windowed,
};

/// A result as the sink receives it: `Some` values per (window, key), `None` withdrawing a
/// session a late row merged into another (`crates/core/src/session.rs`).
type FileResult = WindowResult<u32, Option<Vec<Option<f64>>>>;

#[derive(Args)]
pub struct FileArgs {
    /// The field holding each row's event time.
    #[arg(help_heading = "Job", long)]
    time_field: String,
    /// How the time is written: unix-s, unix-ms, rfc3339, or a strftime format read as UTC
    /// (e.g. "%Y-%m-%d %H:%M:%S"). Time units are seconds, milliseconds for unix-ms.
    #[arg(help_heading = "Job", long, default_value = "unix-s")]
    time_format: String,
    /// Fields the rows are grouped by, comma-separated (none: one group; spaces around the
    /// names are not part of them).
    #[arg(help_heading = "Job", long, value_delimiter = ',', value_parser = field_name)]
    key: Vec<String>,
    /// The windows: tumbling:SIZE, sliding:SIZE/SLIDE or session:GAP (durations like 1h, 30m).
    #[arg(help_heading = "Job", long)]
    window: String,
    /// What to compute per window and key, comma-separated: count, sum:FIELD, mean:FIELD,
    /// min:FIELD, max:FIELD. Empty and missing values, and values that are not finite numbers
    /// (text, NaN, infinities), are left out of sum, mean, min and max; the summary counts
    /// those that are not.
    #[arg(
        help_heading = "Job",
        long,
        value_delimiter = ',',
        default_value = "count"
    )]
    aggregate: Vec<String>,
    /// How far out of order the input may be (the source's watermark trails the newest time
    /// read by this much): rows are replayed in file order, and a row whose time is more than
    /// this below the newest one read is late. Formerly --lateness.
    #[arg(help_heading = "Job", long = "out-of-orderness", alias = "lateness", value_name = "DURATION",
          default_value = "0s",
          value_parser = humantime::parse_duration)]
    lateness: Duration,
    /// How long a window keeps taking late rows after it closed (each updates its result);
    /// rows later than that go to --late-output.
    #[arg(help_heading = "Job", long, default_value = "0s", value_parser = humantime::parse_duration)]
    allowed_lateness: Duration,
    /// Source instances (the rows are dealt round-robin over them).
    #[arg(help_heading = "Job", long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    sources: u32,
    /// The input: CSV with a header row, or JSON lines (one object per line); gzip-compressed
    /// if its name ends in .gz; a folder of such files, read in name order; or - for standard
    /// input, read as it arrives (CSV unless --format says otherwise; one process, one source,
    /// no checkpoints; keys are numbered as they appear).
    #[arg(help_heading = "Input and output", long)]
    input: PathBuf,
    /// The input's format (default: from its extension: .csv, .jsonl/.ndjson/.json).
    #[arg(help_heading = "Input and output", long, hide_possible_values = true)]
    format: Option<RowFormat>,
    /// The result: one row per window and key (its final value), sorted by window and key; or
    /// - to print each window's rows to standard output as the window closes.
    #[arg(help_heading = "Input and output", long)]
    output: PathBuf,
    /// The result's format: csv, jsonl or parquet (default: from its extension; CSV otherwise).
    /// Parquet columns are typed: times as UTC timestamps (ms), keys as text, counts as
    /// integers, other aggregates as doubles.
    #[arg(help_heading = "Input and output", long, hide_possible_values = true)]
    output_format: Option<RowFormat>,
    /// Rows too late for every window (line, event time, key), in the format of its own
    /// extension (the result's otherwise).
    #[arg(help_heading = "Input and output", long)]
    late_output: Option<PathBuf>,
    /// Replay the rows at this many per second over all sources, as a live feed of the file
    /// would deliver them (0: as fast as the job takes them).
    #[arg(help_heading = "Input and output", long, default_value_t = 0.0)]
    rate: f64,
    #[command(flatten)]
    engine: EngineArgs,
}

/// A field name of `--key`, without the spaces around it (`--key "carrier, origin"`).
fn field_name(s: &str) -> Result<String, String> {
    match s.trim() {
        "" => Err("an empty field name".into()),
        name => Ok(name.to_string()),
    }
}

/// A row as the dataflow carries it: its event time, key, numeric values and line.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct FileRecord {
    t: Time,
    /// The row's key fields, as an index into the run's [`Keys`] (no allocation per row where
    /// the operators key and hash it).
    key: u32,
    values: Vec<Option<f64>>,
    line: u64,
}

/// The distinct keys of the input, in order of first appearance: every process reads the same
/// file, so every process numbers them alike (and a resumed run as the checkpointed one did).
#[derive(Default)]
struct Keys {
    list: Vec<Vec<String>>,
    index: std::collections::HashMap<Vec<String>, u32>,
}

impl Keys {
    fn id(&mut self, key: &[String]) -> u32 {
        if let Some(&id) = self.index.get(key) {
            return id;
        }
        let id = self.list.len() as u32;
        self.list.push(key.to_vec());
        self.index.insert(key.to_vec(), id);
        id
    }
}

/// Values of one aggregated field left out of the aggregates: not numbers (text), and numbers
/// that are not finite (NaN, infinities: one would make every sum, mean, minimum or maximum of
/// its window NaN or infinite).
#[derive(Clone, Debug, Default, PartialEq)]
struct LeftOut {
    not_numbers: u64,
    not_finite: u64,
    /// The first such value's line.
    first_line: Option<u64>,
}

/// A value field's text as a number: `Ok(None)` when empty, `Err` (counted) when it is not a
/// finite number.
fn value(text: &str, line: u64, left_out: &mut LeftOut) -> Option<f64> {
    let text = text.trim();
    if text.is_empty() {
        return None;
    }
    match text.parse::<f64>() {
        Ok(v) if v.is_finite() => return Some(v),
        Ok(_) => left_out.not_finite += 1,
        Err(_) => left_out.not_numbers += 1,
    }
    left_out.first_line.get_or_insert(line);
    None
}

/// Turns rows into the dataflow's records, counting what it skips: rows whose time does not
/// parse (`malformed`), and per value field the values that are not finite numbers
/// (`left_out`). Numbers the keys as they appear (`keys`).
struct Convert {
    time: TimeFormat,
    time_field: String,
    /// How many key fields follow the time in a row.
    k: usize,
    keys: Arc<Mutex<Keys>>,
    malformed: Vec<(u64, String)>,
    left_out: Vec<LeftOut>,
    /// Rows turned into records.
    rows: usize,
}

impl Convert {
    /// The record of `row` (or of a row the reader skipped: counted), by event time.
    fn record(&mut self, row: RowRead) -> Option<(Time, FileRecord)> {
        let row = match row {
            Ok(row) => row,
            Err(bad) => {
                self.malformed.push(bad);
                return None;
            }
        };
        let t = match self.time.read(&row.fields[0]) {
            Ok(t) => t,
            Err(e) => {
                let why = format!("field '{}': {e}", self.time_field);
                self.malformed.push((row.line, why));
                return None;
            }
        };
        let k = self.k;
        let values = (row.fields[1 + k..].iter())
            .zip(self.left_out.iter_mut())
            .map(|(v, l)| value(v, row.line, l))
            .collect();
        let key = lock(&self.keys).id(&row.fields[1..1 + k]);
        self.rows += 1;
        let line = row.line;
        Some((
            t,
            FileRecord {
                t,
                key,
                values,
                line,
            },
        ))
    }
}

/// A lock that a panic elsewhere does not poison (the run fails with that panic anyway).
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// How rows' times are read and results' times written.
#[derive(Clone, Debug)]
enum TimeFormat {
    UnixSeconds,
    UnixMillis,
    Rfc3339,
    Strftime(String),
}

impl TimeFormat {
    fn parse(s: &str) -> Result<Self, String> {
        Ok(match s {
            "unix-s" => TimeFormat::UnixSeconds,
            "unix-ms" => TimeFormat::UnixMillis,
            "rfc3339" => TimeFormat::Rfc3339,
            f if f.contains('%') => TimeFormat::Strftime(f.to_string()),
            other => {
                return Err(format!(
                    "--time-format '{other}': expected unix-s, unix-ms, rfc3339 or a strftime \
                     format such as '%Y-%m-%d %H:%M:%S'"
                ))
            }
        })
    }

    /// Time units per second.
    fn per_second(&self) -> u64 {
        match self {
            TimeFormat::UnixMillis => 1000,
            _ => 1,
        }
    }

    fn read(&self, s: &str) -> Result<Time, String> {
        let s = s.trim();
        let secs = match self {
            TimeFormat::UnixSeconds | TimeFormat::UnixMillis => {
                return s
                    .parse::<u64>()
                    .map_err(|_| format!("time '{s}' is not a whole number"));
            }
            TimeFormat::Rfc3339 => chrono::DateTime::parse_from_rfc3339(s)
                .map_err(|e| format!("time '{s}': {e}"))?
                .timestamp(),
            TimeFormat::Strftime(f) => chrono::NaiveDateTime::parse_from_str(s, f)
                .map_err(|e| format!("time '{s}' does not match '{f}': {e}"))?
                .and_utc()
                .timestamp(),
        };
        u64::try_from(secs).map_err(|_| format!("time '{s}' is before 1970"))
    }

    fn write(&self, t: Time) -> serde_json::Value {
        match self {
            TimeFormat::UnixSeconds | TimeFormat::UnixMillis => t.into(),
            _ => chrono::DateTime::from_timestamp(t as i64, 0).map_or_else(
                || t.into(),
                |d| d.format("%Y-%m-%dT%H:%M:%SZ").to_string().into(),
            ),
        }
    }
}

/// The windows asked for, in time units.
enum Windows {
    Fixed(Time, Time),
    Session(Time),
}

fn parse_windows(s: &str, per_second: u64) -> Result<Windows, String> {
    let err =
        |why: &str| format!("--window '{s}': {why} (tumbling:1h, sliding:3h/1h, session:30m)");
    let units = |d: &str| -> Result<Time, String> {
        let d = humantime::parse_duration(d.trim()).map_err(|e| err(&e.to_string()))?;
        let t = (d.as_millis() * per_second as u128 / 1000) as Time;
        if t == 0 || !(d.as_millis() * per_second as u128).is_multiple_of(1000) {
            return Err(err("durations must be whole time units, at least one"));
        }
        Ok(t)
    };
    let (kind, spec) = s.split_once(':').ok_or_else(|| err("no kind"))?;
    match kind {
        "tumbling" => units(spec).map(|t| Windows::Fixed(t, t)),
        "sliding" => {
            let (size, slide) = spec.split_once('/').ok_or_else(|| err("no /SLIDE"))?;
            let (size, slide) = (units(size)?, units(slide)?);
            if slide > size {
                return Err(err("the slide is longer than the window"));
            }
            Ok(Windows::Fixed(size, slide))
        }
        "session" => units(spec).map(Windows::Session),
        other => Err(err(&format!("unknown kind '{other}'"))),
    }
}

/// One aggregate column: its function and the value it reads (an index into `values`).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Func {
    Count,
    Sum(usize),
    Mean(usize),
    Min(usize),
    Max(usize),
}

/// The aggregates of a window: the row count, and per value field (count, sum, min, max).
struct RowAgg {
    funcs: Vec<Func>,
    fields: usize,
}

type Moments = (u64, f64, f64, f64);

impl Aggregate<FileRecord> for RowAgg {
    type Acc = (u64, Vec<Moments>);
    type Out = Vec<Option<f64>>;
    fn init(&self) -> Self::Acc {
        (
            0,
            vec![(0, 0.0, f64::INFINITY, f64::NEG_INFINITY); self.fields],
        )
    }
    fn add(&self, acc: &mut Self::Acc, r: &FileRecord) {
        acc.0 += 1;
        for (m, v) in acc.1.iter_mut().zip(&r.values) {
            if let Some(v) = *v {
                *m = (m.0 + 1, m.1 + v, m.2.min(v), m.3.max(v));
            }
        }
    }
    fn finish(&self, (n, m): Self::Acc) -> Vec<Option<f64>> {
        let of = |i: usize, f: fn(&Moments) -> f64| (m[i].0 > 0).then(|| f(&m[i]));
        let mut out = vec![Some(n as f64)];
        out.extend(self.funcs.iter().map(|f| match *f {
            Func::Count => Some(n as f64),
            Func::Sum(i) => Some(m[i].1),
            Func::Mean(i) => of(i, |m| m.1 / m.0 as f64),
            Func::Min(i) => of(i, |m| m.2),
            Func::Max(i) => of(i, |m| m.3),
        }));
        out
    }
}

/// The aggregate list parsed: the functions, the value fields they read, the column names.
type Aggregates = (Vec<Func>, Vec<String>, Vec<String>);

/// Parses the aggregate list.
fn parse_aggregates(specs: &[String]) -> Result<Aggregates, String> {
    let (mut funcs, mut fields, mut names) = (Vec::new(), Vec::<String>::new(), Vec::new());
    for s in specs {
        let (f, field) = match s.split_once(':') {
            Some((f, field)) => (f, Some(field.to_string())),
            None => (s.as_str(), None),
        };
        let mut at = || -> Result<usize, String> {
            let field = field
                .clone()
                .ok_or_else(|| format!("--aggregate '{s}' needs :FIELD"))?;
            Ok(fields.iter().position(|x| *x == field).unwrap_or_else(|| {
                fields.push(field);
                fields.len() - 1
            }))
        };
        funcs.push(match f {
            "count" if field.is_none() => Func::Count,
            "sum" => Func::Sum(at()?),
            "mean" => Func::Mean(at()?),
            "min" => Func::Min(at()?),
            "max" => Func::Max(at()?),
            _ => {
                return Err(format!(
                    "--aggregate '{s}': expected count, sum:F, mean:F, min:F or max:F"
                ))
            }
        });
        names.push(s.replace(':', "_"));
    }
    Ok((funcs, fields, names))
}

/// `-` as a path: standard input (`--input`) or standard output (`--output`).
fn is_std(p: &std::path::Path) -> bool {
    p == std::path::Path::new("-")
}

/// What standard input and standard output allow (`--input -`, `--output -`): the options that
/// need a file there are refused, saying why.
fn check_streams(a: &FileArgs, out_format: RowFormat) -> Result<(), String> {
    let e = &a.engine;
    if is_std(&a.input) {
        let why = "standard input is read once, as it arrives";
        if e.processes > 1 || e.hostfile.is_some() || e.process.is_some() {
            return Err(format!(
                "--input -: {why}, by one process (not --processes or --hostfile)"
            ));
        }
        if a.sources > 1 {
            return Err(format!(
                "--input -: {why}, by one source (not --sources {})",
                a.sources
            ));
        }
        if a.rate > 0.0 {
            return Err("--input -: it arrives at its own pace (--rate paces a file)".into());
        }
        if e.checkpoint_interval.is_some() || e.resume {
            return Err(format!(
                "--input -: {why}, so a restart or --resume could not read it again; checkpoints need a file input"
            ));
        }
    }
    if is_std(&a.output) {
        if out_format == RowFormat::Parquet {
            return Err(
                "--output -: prints CSV or JSON lines (--output-format), not Parquet".into(),
            );
        }
        if !a.allowed_lateness.is_zero() {
            return Err(
                "--output -: prints each window's rows once, when it closes; with \
                        --allowed-lateness late rows would change printed rows: write to a file"
                    .into(),
            );
        }
        if e.checkpoint_interval.is_some() || e.resume {
            return Err(
                "--output -: printed rows cannot be taken back after a restart; \
                        checkpoints need an output file"
                    .into(),
            );
        }
    }
    if a.late_output.as_deref().is_some_and(is_std) {
        return Err(
            "--late-output -: the late rows go to a file (standard output is --output's)".into(),
        );
    }
    Ok(())
}

/// Runs the job.
pub fn run(a: FileArgs) -> Result<(), JobError> {
    let cfg = |e: String| JobError::Config(e);
    a.engine.validate().map_err(cfg)?;
    if !(a.rate.is_finite() && a.rate >= 0.0) {
        return Err(cfg(format!(
            "--rate {}: expected rows per second, 0 or more",
            a.rate
        )));
    }
    let (stdin, stdout) = (is_std(&a.input), is_std(&a.output));
    let out_format = a
        .output_format
        .or_else(|| RowFormat::of_path(&a.output))
        .unwrap_or(RowFormat::Csv);
    check_streams(&a, out_format).map_err(cfg)?;
    let time = TimeFormat::parse(&a.time_format).map_err(cfg)?;
    let time_type = ColumnType::Timestamp {
        per_second: time.per_second(),
    };
    let windows = parse_windows(&a.window, time.per_second()).map_err(cfg)?;
    let (funcs, fields, names) = parse_aggregates(&a.aggregate).map_err(cfg)?;
    let value_types = funcs.iter().map(|f| match f {
        Func::Count => ColumnType::Int64,
        _ => ColumnType::Double,
    });
    let value_columns: Vec<(String, ColumnType)> = names.into_iter().zip(value_types).collect();
    let mut paths = Vec::new();
    for (flag, p) in [("--input", &a.input), ("--output", &a.output)] {
        if !is_std(p) {
            paths.push((flag, p.as_path()));
        }
    }
    if let Some(l) = &a.late_output {
        paths.push(("--late-output", l.as_path()));
    }
    check_distinct(&paths).map_err(cfg)?;
    // Every output before the job starts: one that cannot be written (a directory, a folder
    // that cannot be written) is refused now, not after the run; they are renamed into place
    // together at the end (`commit_all`).
    let out = |e: String| JobError::Output(e);
    let out_file = (!stdout)
        .then(|| PendingFile::create(&a.output, "output"))
        .transpose()
        .map_err(out)?;
    let late_file = (a.late_output.as_deref())
        .map(|p| PendingFile::create(p, "late output"))
        .transpose()
        .map_err(out)?;
    let units = |d: Duration| (d.as_millis() * time.per_second() as u128 / 1000) as Time;
    let (bound, allowed) = (units(a.lateness), units(a.allowed_lateness));

    let start = Instant::now();
    let mut columns = vec![a.time_field.clone()];
    columns.extend(a.key.iter().cloned());
    columns.extend(fields.iter().cloned());
    // The time and the key fields must be in every row; a value field may be missing.
    let required = 1 + a.key.len();
    let keys = Arc::new(Mutex::new(Keys::default()));
    let convert = Arc::new(Mutex::new(Convert {
        time: time.clone(),
        time_field: a.time_field.clone(),
        k: a.key.len(),
        keys: keys.clone(),
        malformed: Vec::new(),
        left_out: vec![LeftOut::default(); fields.len()],
        rows: 0,
    }));
    // A file is read whole before the run (every process reads it alike); standard input is
    // read as it arrives (`connectors/live_rows.rs`), its CSV header before the run starts.
    let input = match stdin {
        true => {
            let format = a.format.unwrap_or(RowFormat::Csv);
            let stream = Box::new(std::io::stdin());
            let reader = RowReader::new("standard input", stream, format, &columns, required)
                .map_err(JobError::Input)?;
            Input::Stream(Box::new(reader))
        }
        false => {
            let read =
                read_input(&a.input, a.format, &columns, required).map_err(JobError::Input)?;
            let mut c = lock(&convert);
            c.malformed = read.malformed;
            let records: Vec<(Time, FileRecord)> = read
                .rows
                .into_iter()
                .filter_map(|r| c.record(Ok(r)))
                .collect();
            if records.is_empty() {
                return Err(JobError::Input(no_rows(&a.input, &mut c.malformed)));
            }
            Input::Records(Arc::new(records))
        }
    };

    let results = VecSink::<FileResult>::shared();
    let late = VecSink::<FileRecord>::shared();
    // Slots as long as the windows allow: a window's end is a slot boundary, a session's
    // timer fires at most one gap late (in event time; the results are the same).
    let granularity = match windows {
        Windows::Fixed(size, slide) => gcd(size, slide),
        Windows::Session(gap) => gap,
    };
    let mut runtime = a.engine.runtime(granularity);
    // This process ends with the run: its state goes with the exit (`RuntimeConfig`).
    runtime.leave_state_to_exit = true;
    // What a resumed run must keep (not the pacing, --rate, nor the outputs' names): named, so
    // that a refused resume says what differs (crates/runtime/src/execute/job_id.rs).
    let word = |v: &str| v.replace(' ', "\\s");
    let rows = match &input {
        Input::Records(r) => r.len().to_string(),
        Input::Stream(_) => "stdin".to_string(),
    };
    runtime.job_key = format!(
        "file rows={rows} --time-field={} --time-format={} --key={} --window={} --aggregate={} \
         --out-of-orderness={:?} --allowed-lateness={:?} --sources={sources}",
        word(&a.time_field),
        word(&a.time_format),
        word(&a.key.join(",")),
        word(&a.window),
        word(&a.aggregate.join(",")),
        a.lateness,
        a.allowed_lateness,
        sources = a.sources,
    );
    runtime.time_per_second = Some(time.per_second());
    let df = Dataflow::new(runtime).map_err(JobError::Run)?;
    let src = match input {
        Input::Records(records) => {
            let sources = a.sources as usize;
            let per_source = a.rate / sources as f64;
            // With checkpoints, results and late rows are staged in the sinks' state until the
            // job ends (`Staging::AtEnd`, crates/runtime/src/operators/sink.rs), and the sources
            // resume from their record index: a restarted or resumed run writes what a run
            // without the failure would.
            df.source("rows", sources, move |i| {
                Replay::new(records.clone(), i, sources, bound).paced(per_source)
            })
        }
        Input::Stream(reader) => {
            let c = convert.clone();
            let mut live = Some(LiveRows::spawn(*reader, bound, move |row| {
                lock(&c).record(row)
            }));
            // One process, one source instance (`check_streams`), no restarts: built once.
            df.source("rows", 1, move |_| {
                live.take().expect("one instance of the input")
            })
        }
    };
    let agg = RowAgg {
        funcs,
        fields: fields.len(),
    };
    let key = |r: &FileRecord| r.key;
    let w = match windows {
        Windows::Fixed(size, slide) => {
            let spec = WindowSpec::sliding(size, slide)
                .allowed_lateness(allowed)
                .event_time(|r: &FileRecord| r.t);
            let w = src.window("windows", spec, key, agg);
            // The same changelog as sessions', without tombstones.
            let results = (w.results).map("windows.changelog", |r| WindowResult {
                start: r.start,
                end: r.end,
                key: r.key,
                value: Some(r.value),
            });
            Windowed {
                results,
                late: w.late,
            }
        }
        Windows::Session(gap) => {
            let s = SessionWindows::new(gap, agg)
                .allowed_lateness(allowed)
                .event_time(|r: &FileRecord| r.t);
            src.session_window("sessions", s, key)
        }
    };
    // Parquet has a timestamp type: times go there as numbers, whatever their input format.
    let time_in = |f: RowFormat| match f {
        RowFormat::Parquet => TimeFormat::UnixSeconds,
        _ => time.clone(),
    };
    let key_columns = a.key.iter().map(|k| (k.clone(), ColumnType::Text));
    let mut columns = vec![
        ("window_start".to_string(), time_type),
        ("window_end".to_string(), time_type),
    ];
    columns.extend(key_columns.clone());
    columns.extend(value_columns);
    let time_out = time_in(out_format);
    let printed = Arc::new(AtomicUsize::new(0));
    match stdout {
        true => {
            let names: Vec<String> = columns.iter().map(|c| c.0.clone()).collect();
            let format = match out_format {
                RowFormat::JsonLines => PrintFormat::JsonLines,
                _ => PrintFormat::Csv,
            };
            let (keys, time, printed) = (keys.clone(), time_out.clone(), printed.clone());
            // A printer per instance of the sink (one per worker; the gathered results reach
            // one of them).
            w.results.gather().sink("results", move |_| {
                let (keys, time, printed) = (keys.clone(), time.clone(), printed.clone());
                let render: Render<FileResult, _> = Box::new(move |r: &FileResult| {
                    let value = r.value.as_ref()?;
                    let key = lock(&keys).list[r.key as usize].clone();
                    printed.fetch_add(1, Ordering::Relaxed);
                    let row = result_row(&time, (r.start, r.end), &key, value);
                    Some(((r.end, r.start, key), row))
                });
                PrintRows::stdout(format, names.clone(), render)
            });
        }
        false => w.results.gather().sink("results", results.factory()),
    }
    w.late.gather().sink("late", late.factory());
    let report = df.run().map_err(JobError::Run)?;
    if report.process != 0 {
        return Ok(());
    }
    let keys = lock(&keys);
    let c = lock(&convert);
    if c.rows == 0 {
        // Standard input (a file without rows was refused before the run).
        return Err(JobError::Input(no_rows(&a.input, &mut c.malformed.clone())));
    }
    let n = match &out_file {
        Some(f) => write_results(f, out_format, &columns, &time_out, results, &keys)?,
        None => printed.load(Ordering::Relaxed),
    };
    let late_rows = late.take();
    if let Some(p) = &late_file {
        let mut columns = vec![
            ("line".to_string(), ColumnType::Int64),
            ("event_time".to_string(), time_type),
        ];
        columns.extend(key_columns);
        // Its own extension first, as the output's: `--output s.parquet --late-output late.csv`.
        let late_format = RowFormat::of_path(p.target()).unwrap_or(out_format);
        let time = time_in(late_format);
        write_late(p, late_format, &columns, &time, &late_rows, &keys)?;
    }
    commit_all(out_file.into_iter().chain(late_file)).map_err(out)?;
    say_summary(
        &a,
        c.rows,
        &c.malformed,
        late_rows.len(),
        n,
        start.elapsed(),
    );
    say_left_out(&fields, &c.left_out);
    if let Some(c) = &report.checkpoints {
        say_checkpoints(c);
    }
    Ok(())
}

/// The job's input: a file's records, read before the run, or a stream read as it arrives.
enum Input {
    Records(Arc<Vec<(Time, FileRecord)>>),
    Stream(Box<RowReader>),
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// Keeps each (window, key)'s final result (the one over the most rows: updates only add),
/// applying the results in arrival order (one key's come in order) so that a tombstone removes
/// a merged session, and writes them sorted; returns how many.
fn write_results(
    file: &PendingFile,
    format: RowFormat,
    columns: &[(String, ColumnType)],
    time: &TimeFormat,
    results: SharedVec<FileResult>,
    keys: &Keys,
) -> Result<usize, JobError> {
    // (window end, window start, key fields) -> values.
    type Id<'a> = (Time, Time, &'a [String]);
    let mut last: BTreeMap<Id<'_>, Vec<Option<f64>>> = BTreeMap::new();
    for e in results.take() {
        let r = e.data;
        let id = (r.end, r.start, keys.list[r.key as usize].as_slice());
        let Some(value) = r.value else {
            last.remove(&id);
            continue;
        };
        let slot = last.entry(id).or_default();
        if slot.first().copied().flatten() <= value.first().copied().flatten() {
            *slot = value;
        }
    }
    let rows = (last.into_iter())
        .map(|((end, start, key), value)| result_row(time, (start, end), key, &value));
    write_rows(file, format, columns, rows)
}

/// One result's row: window start and end, the key fields, the aggregates (not the row count
/// the final result is chosen by, the first value).
fn result_row(
    time: &TimeFormat,
    (start, end): (Time, Time),
    key: &[String],
    value: &[Option<f64>],
) -> Vec<serde_json::Value> {
    let mut row = vec![time.write(start), time.write(end)];
    row.extend(key.iter().map(|k| serde_json::Value::from(k.as_str())));
    row.extend(value.iter().skip(1).copied().map(number));
    row
}

/// `v` as JSON: whole numbers without a fraction, none as null.
fn number(v: Option<f64>) -> serde_json::Value {
    match v {
        Some(x) if x.fract() == 0.0 && x.abs() < 9.0e15 => (x as i64).into(),
        Some(x) => serde_json::Number::from_f64(x).map_or(serde_json::Value::Null, Into::into),
        None => serde_json::Value::Null,
    }
}

/// Writes the late rows under `columns` (line, event time, key fields), by line.
fn write_late(
    file: &PendingFile,
    format: RowFormat,
    columns: &[(String, ColumnType)],
    time: &TimeFormat,
    late: &[xorflow_runtime::Element<FileRecord>],
    keys: &Keys,
) -> Result<usize, JobError> {
    let mut rows: Vec<&FileRecord> = late.iter().map(|e| &e.data).collect();
    rows.sort_by_key(|r| r.line);
    let rows = rows.into_iter().map(|r| {
        let mut row = vec![r.line.into(), time.write(r.t)];
        let key = &keys.list[r.key as usize];
        row.extend(key.iter().map(|k| serde_json::Value::from(k.as_str())));
        row
    });
    write_rows(file, format, columns, rows)
}

/// Writes `rows` under `columns` (name, type: used by Parquet) as CSV, JSON lines or Parquet
/// into `pending` (renamed into place with the run's other outputs: `commit_all`).
fn write_rows(
    pending: &PendingFile,
    format: RowFormat,
    columns: &[(String, ColumnType)],
    rows: impl Iterator<Item = Vec<serde_json::Value>>,
) -> Result<usize, JobError> {
    let file = pending.file().map_err(JobError::Output)?;
    let werr = |e: &dyn std::fmt::Display| {
        let (what, path) = (pending.what(), pending.target().display());
        JobError::Output(format!("cannot write {what} '{path}': {e}"))
    };
    let header = columns.iter().map(|(name, _)| name);
    let mut n = 0;
    let text = |v: &serde_json::Value| match v {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Null => String::new(),
        v => v.to_string(),
    };
    match format {
        RowFormat::Csv => {
            let mut w = csv::Writer::from_writer(std::io::BufWriter::new(file));
            w.write_record(header).map_err(|e| werr(&e))?;
            for row in rows {
                w.write_record(row.iter().map(text)).map_err(|e| werr(&e))?;
                n += 1;
            }
            w.flush().map_err(|e| werr(&e))?;
        }
        RowFormat::JsonLines => {
            let mut w = std::io::BufWriter::new(file);
            for row in rows {
                let obj: serde_json::Map<String, serde_json::Value> =
                    header.clone().cloned().zip(row).collect();
                serde_json::to_writer(&mut w, &obj).map_err(|e| werr(&e))?;
                w.write_all(b"\n").map_err(|e| werr(&e))?;
                n += 1;
            }
            w.flush().map_err(|e| werr(&e))?;
        }
        RowFormat::Parquet => n = parquet_rows::write(file, columns, rows).map_err(|e| werr(&e))?,
    }
    Ok(n)
}

/// Why a run read no row of `input`: it has none, or every one is malformed (the first few
/// named).
fn no_rows(input: &std::path::Path, malformed: &mut [(u64, String)]) -> String {
    let input = match is_std(input) {
        true => "standard input".into(),
        false => input.display().to_string(),
    };
    malformed.sort();
    let first: Vec<String> = (malformed.iter().take(3))
        .map(|(line, why)| format!("line {line}: {why}"))
        .collect();
    match malformed.len() {
        0 => format!("'{input}' has no rows"),
        n => format!(
            "no row of '{input}' could be read: all {n} are malformed ({}{})",
            first.join("; "),
            if n > 3 { "; ..." } else { "" }
        ),
    }
}

/// Warns of the values left out of the aggregates, per field.
fn say_left_out(fields: &[String], left_out: &[LeftOut]) {
    for (f, l) in fields.iter().zip(left_out) {
        let (Some(line), n) = (l.first_line, l.not_numbers + l.not_finite) else {
            continue;
        };
        say!(
            "warning: {n} values of '{f}' left out of its aggregates: {} not numbers, {} not \
             finite (NaN or infinite); the first on line {line}",
            l.not_numbers,
            l.not_finite
        );
    }
}

fn say_summary(
    a: &FileArgs,
    rows: usize,
    malformed: &[(u64, String)],
    late: usize,
    results: usize,
    elapsed: Duration,
) {
    let mut malformed = malformed.to_vec();
    malformed.sort();
    for (line, why) in malformed.iter().take(5) {
        let input = match is_std(&a.input) {
            true => "standard input".into(),
            false => a.input.display().to_string(),
        };
        say!("warning: skipped {input} line {line}: {why}");
    }
    if malformed.len() > 5 {
        say!("warning: ... and {} more skipped rows", malformed.len() - 5);
    }
    say!(
        "file: {rows} rows ({} malformed, skipped; {late} too late) -> {results} results in {} \
         ({:.2} s)",
        malformed.len(),
        match is_std(&a.output) {
            true => "standard output".into(),
            false => a.output.display().to_string(),
        },
        elapsed.as_secs_f64()
    );
}
