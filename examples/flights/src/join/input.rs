//! Reading `flights.csv` and `weather.csv` for the flights-weather join: each row becomes a
//! [`JoinRecord`] keyed by origin, at the event time of its local scheduled hour.
//!
//! Event time is the local `year, month, day, hour` read as if it were UTC (seconds since the
//! epoch): both files give those columns, so a flight and the weather of its origin and scheduled
//! hour fall into the same one-hour window, even on the repeated hour of the autumn clock change
//! (where two weather rows share a local hour; the first in file order is the match).

use crate::reader::{Malformed, MALFORMED_EXAMPLES};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// Output columns taken from a flight, in output order.
pub const FLIGHT_COLUMNS: [&str; 8] = [
    "year",
    "month",
    "day",
    "hour",
    "origin",
    "carrier",
    "flight",
    "dep_delay",
];
/// Output columns taken from the matching weather row, in output order.
pub const WEATHER_COLUMNS: [&str; 4] = ["temp", "wind_speed", "precip", "visib"];
/// Columns of the weather file the join needs: its key and [`WEATHER_COLUMNS`].
const WEATHER_KEY: [&str; 5] = ["origin", "year", "month", "day", "hour"];

/// One side of the join.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Side {
    /// A flight: its row index in `flights.csv` (0-based, data rows) and the
    /// [`FLIGHT_COLUMNS`] fields, verbatim.
    Flight(u64, Vec<String>),
    /// A weather row: its index in `weather.csv` and the [`WEATHER_COLUMNS`] fields, verbatim.
    Weather(u64, Vec<String>),
}

/// A row of either file as the dataflow carries it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct JoinRecord {
    /// Origin airport: the join key.
    pub origin: String,
    /// Which file, and the fields.
    pub side: Side,
}

/// One file's valid rows, sorted by event time (stable on file order), and what was skipped.
#[derive(Debug, Default)]
pub struct Rows {
    /// (event time s, record).
    pub records: Vec<(u64, JoinRecord)>,
    /// Data rows in the file.
    pub rows: u64,
    /// Rows skipped as malformed.
    pub malformed: u64,
    /// The first few skipped rows.
    pub malformed_examples: Vec<Malformed>,
}

/// Reads `path` (`what` names it in messages: "input", "weather"), keeping the `key` columns
/// (origin, year, month, day, hour) and then the `take` columns of each row.
///
/// # Errors
/// The file cannot be read, is empty, or lacks a column (naming it).
fn read(
    path: &Path,
    what: &str,
    take: &[&str],
    side: fn(u64, Vec<String>) -> Side,
) -> Result<Rows, String> {
    let mut rdr = csv::ReaderBuilder::new()
        .flexible(true)
        .from_path(path)
        .map_err(|e| format!("cannot open {what} '{}': {e}", path.display()))?;
    let header = rdr
        .headers()
        .map_err(|e| format!("cannot read {what} '{}': {e}", path.display()))?
        .clone();
    if header.is_empty() {
        return Err(format!(
            "{what} '{}' is empty: expected a CSV header",
            path.display()
        ));
    }
    let col = |name: &str| {
        header.iter().position(|h| h == name).ok_or_else(|| {
            format!(
                "{what} '{}' has no column '{name}' (header: {})",
                path.display(),
                header.iter().collect::<Vec<_>>().join(",")
            )
        })
    };
    let key: Vec<usize> = WEATHER_KEY
        .iter()
        .map(|c| col(c))
        .collect::<Result<_, _>>()?;
    let fields: Vec<usize> = take.iter().map(|c| col(c)).collect::<Result<_, _>>()?;
    let mut out = Rows::default();
    for (i, row) in rdr.records().enumerate() {
        out.rows += 1;
        let line = i as u64 + 2;
        let parsed = row
            .map_err(|e| e.to_string())
            .and_then(|r| parse(&r, header.len(), &key, &fields));
        match parsed {
            Ok((t, origin, values)) => {
                let side = side(i as u64, values);
                out.records.push((t, JoinRecord { origin, side }));
            }
            Err(reason) => {
                out.malformed += 1;
                if out.malformed_examples.len() < MALFORMED_EXAMPLES {
                    out.malformed_examples.push(Malformed { line, reason });
                }
            }
        }
    }
    out.records.sort_by_key(|(t, _)| *t);
    Ok(out)
}

/// The event time, origin and wanted fields of one row.
fn parse(
    r: &csv::StringRecord,
    width: usize,
    key: &[usize],
    fields: &[usize],
) -> Result<(u64, String, Vec<String>), String> {
    if r.len() != width {
        return Err(format!("{} fields, the header has {width}", r.len()));
    }
    let origin = &r[key[0]];
    if origin.is_empty() {
        return Err("empty origin".into());
    }
    let num = |k: usize, name: &str| {
        r[key[k]]
            .parse::<u32>()
            .map_err(|_| format!("{name} '{}' is not a number", &r[key[k]]))
    };
    let (y, m, d, h) = (
        num(1, "year")?,
        num(2, "month")?,
        num(3, "day")?,
        num(4, "hour")?,
    );
    let date = chrono::NaiveDate::from_ymd_opt(y as i32, m, d)
        .ok_or_else(|| format!("no such date {y}-{m}-{d}"))?;
    let time = date
        .and_hms_opt(h, 0, 0)
        .ok_or_else(|| format!("hour {h} is not 0-23"))?;
    let t = u64::try_from(time.and_utc().timestamp())
        .map_err(|_| format!("{y}-{m}-{d} is before 1970"))?;
    let values = fields.iter().map(|&i| r[i].to_string()).collect();
    Ok((t, origin.to_string(), values))
}

/// Reads `flights.csv`.
///
/// # Errors
/// As [`read`].
pub fn read_flights(path: &Path) -> Result<Rows, String> {
    read(path, "input", &FLIGHT_COLUMNS, Side::Flight)
}

/// Reads `weather.csv`.
///
/// # Errors
/// As [`read`].
pub fn read_weather(path: &Path) -> Result<Rows, String> {
    read(path, "weather", &WEATHER_COLUMNS, Side::Weather)
}
