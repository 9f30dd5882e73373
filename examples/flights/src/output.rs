//! The departure-statistics aggregate and the CSV files the job writes.

use crate::reader::Flight;
use chrono::DateTime;
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use xorflow_runtime::operators::OperatorError;
use xorflow_runtime::{Aggregate, Element, Sink, WindowResult};

/// Header of the output CSV (one row per (window, origin) with at least one flight).
pub const HEADER: &str =
    "window_start,origin,flights,cancelled,avg_dep_delay_min,max_dep_delay_min";

/// Per (window, origin) statistics.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DepartureStats {
    /// Flights in the window.
    pub flights: u64,
    /// Flights whose `dep_time` is NA.
    pub cancelled: u64,
    /// Sum of the non-NA `dep_delay` values, minutes.
    pub delay_sum: i64,
    /// Number of non-NA `dep_delay` values.
    pub delay_count: u64,
    /// Largest non-NA `dep_delay`, minutes.
    pub delay_max: Option<i32>,
}

/// The aggregate function computing [`DepartureStats`].
pub struct Departures;

impl Aggregate<Flight> for Departures {
    type Acc = DepartureStats;
    type Out = DepartureStats;

    fn init(&self) -> DepartureStats {
        DepartureStats::default()
    }

    fn add(&self, acc: &mut DepartureStats, f: &Flight) {
        acc.flights += 1;
        acc.cancelled += u64::from(f.cancelled);
        if let Some(d) = f.dep_delay {
            acc.delay_sum += i64::from(d);
            acc.delay_count += 1;
            acc.delay_max = Some(acc.delay_max.map_or(d, |m| m.max(d)));
        }
    }

    fn finish(&self, acc: DepartureStats) -> DepartureStats {
        acc
    }
}

/// ISO 8601 UTC form of a time in seconds since the epoch, e.g. `2013-01-01T10:00:00Z`.
pub fn iso_utc(secs: u64) -> String {
    DateTime::from_timestamp(secs as i64, 0)
        .map(|t| t.format("%Y-%m-%dT%H:%M:%SZ").to_string())
        .unwrap_or_else(|| format!("@{secs}"))
}

/// The CSV fields of one result row.
pub fn row_fields(r: &WindowResult<String, DepartureStats>) -> [String; 6] {
    let s = &r.value;
    let (avg, max) = match s.delay_max {
        Some(m) => (
            format!("{:.2}", s.delay_sum as f64 / s.delay_count as f64),
            m.to_string(),
        ),
        None => (String::new(), String::new()),
    };
    [
        iso_utc(r.start),
        r.key.clone(),
        s.flights.to_string(),
        s.cancelled.to_string(),
        avg,
        max,
    ]
}

/// The output file shared by the sink instances of all workers.
#[derive(Clone)]
pub struct CsvOutput {
    path: PathBuf,
    writer: Arc<Mutex<csv::Writer<BufWriter<File>>>>,
    /// The first write error, if any.
    failure: Arc<OnceLock<String>>,
    /// Result rows written.
    rows: Arc<AtomicU64>,
}

impl CsvOutput {
    /// Writes the header to `file`, the output named `path` in messages, and flushes it, so that
    /// an output that takes nothing (`/dev/full`) is found before the job starts.
    ///
    /// # Errors
    /// A message naming the path when the header cannot be written.
    pub fn create(file: File, path: &Path) -> Result<Self, String> {
        let mut w = csv::Writer::from_writer(BufWriter::new(file));
        w.write_record(HEADER.split(','))
            .and_then(|()| Ok(w.flush()?))
            .map_err(|e| format!("cannot write output '{}': {e}", path.display()))?;
        Ok(CsvOutput {
            path: path.to_path_buf(),
            writer: Arc::new(Mutex::new(w)),
            failure: Arc::default(),
            rows: Arc::default(),
        })
    }

    /// Result rows written so far (by every sink instance).
    pub fn rows(&self) -> u64 {
        self.rows.load(Ordering::Relaxed)
    }

    /// The first write error's message, if writing failed.
    pub fn failure(&self) -> Option<String> {
        self.failure.get().cloned()
    }

    fn err(&self, e: impl std::fmt::Display) -> String {
        let msg = format!("cannot write output '{}': {e}", self.path.display());
        self.failure.get_or_init(|| msg.clone());
        msg
    }
}

impl CsvOutput {
    /// Appends the CSV rows of `batch` to `buf` (a part file's pending bytes).
    ///
    /// # Errors
    /// A row that cannot be encoded.
    pub fn format(
        &self,
        batch: &[Element<WindowResult<String, DepartureStats>>],
        buf: &mut Vec<u8>,
    ) -> Result<(), String> {
        let mut w = csv::Writer::from_writer(buf);
        for el in batch {
            w.write_record(row_fields(&el.data))
                .map_err(|e| self.err(e))?;
        }
        w.flush().map_err(|e| self.err(e))
    }

    /// Appends the committed part files in `dir` (rows formatted by [`CsvOutput::format`]) to the
    /// output through `file` (a handle on the output sharing its offset), in output order, and
    /// counts their rows. Nothing may be written through the sink afterwards.
    ///
    /// # Errors
    /// A part that cannot be read or the output written, naming it.
    pub fn append_parts(&self, dir: &Path, file: File) -> Result<(), String> {
        let mut w = self.writer.lock().map_err(|_| self.err("lock poisoned"))?;
        w.flush().map_err(|e| self.err(e))?;
        let mut lines = CountLines(BufWriter::new(file), 0);
        xorflow_runtime::PartFiles::assemble(dir, &mut lines)?;
        lines.flush().map_err(|e| self.err(e))?;
        let n = lines.1;
        self.rows.fetch_add(n, Ordering::Relaxed);
        Ok(())
    }
}

/// A writer counting the lines that pass through it (one per CSV row: no field of this output
/// holds a line break).
struct CountLines<W>(W, u64);

impl<W: Write> Write for CountLines<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.0.write(buf)?;
        self.1 += buf[..n].iter().filter(|&&b| b == b'\n').count() as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

impl Sink<WindowResult<String, DepartureStats>> for CsvOutput {
    fn write(
        &mut self,
        batch: Vec<Element<WindowResult<String, DepartureStats>>>,
    ) -> Result<(), OperatorError> {
        let mut w = self.writer.lock().map_err(|_| self.err("lock poisoned"))?;
        for el in &batch {
            w.write_record(row_fields(&el.data))
                .map_err(|e| self.err(e))?;
        }
        self.rows.fetch_add(batch.len() as u64, Ordering::Relaxed);
        Ok(())
    }

    fn finish(&mut self) -> Result<(), OperatorError> {
        let mut w = self.writer.lock().map_err(|_| self.err("lock poisoned"))?;
        Ok(w.flush().map_err(|e| self.err(e))?)
    }
}

/// Copies the header and the rows starting at `offsets` (byte offsets, any order) of `input` to
/// `file`, verbatim, in file order; `output` names the file in messages.
///
/// # Errors
/// A message naming the file that could not be read or written.
pub fn copy_rows(
    input: &Path,
    offsets: &mut [u64],
    file: File,
    output: &Path,
) -> Result<(), String> {
    let rerr = |e: std::io::Error| format!("cannot re-read input '{}': {e}", input.display());
    let werr = |e: std::io::Error| format!("cannot write late output '{}': {e}", output.display());
    let mut inp = BufReader::new(File::open(input).map_err(rerr)?);
    let mut out = BufWriter::new(file);
    let mut line = String::new();
    inp.read_line(&mut line).map_err(rerr)?;
    out.write_all(line.as_bytes()).map_err(werr)?;
    offsets.sort_unstable();
    for &off in offsets.iter() {
        inp.seek(SeekFrom::Start(off)).map_err(rerr)?;
        line.clear();
        inp.read_line(&mut line).map_err(rerr)?;
        let row = line.trim_end_matches(['\r', '\n']);
        line = format!("{row}\n");
        out.write_all(line.as_bytes()).map_err(werr)?;
    }
    out.flush().map_err(werr)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_format_times_means_and_empty_delays() {
        let r = WindowResult {
            start: 1357034400,
            end: 1357038000,
            key: "JFK".to_string(),
            value: DepartureStats {
                flights: 3,
                cancelled: 1,
                delay_sum: 7,
                delay_count: 3,
                delay_max: Some(9),
            },
        };
        assert_eq!(
            row_fields(&r),
            ["2013-01-01T10:00:00Z", "JFK", "3", "1", "2.33", "9"].map(String::from)
        );
        let mut r2 = r.clone();
        r2.value = DepartureStats {
            flights: 2,
            cancelled: 2,
            ..Default::default()
        };
        assert_eq!(row_fields(&r2)[4..], [String::new(), String::new()]);
    }
}
