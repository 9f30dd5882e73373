//! Reading a CSV or JSON-lines file as rows of named fields (`xorflow run file`: the built-in
//! operators on a user's own files).
//!
//! The reader keeps, per row, the fields a job asks for, in the order it asks for them, as text
//! (numbers as written; JSON `null`, a missing CSV value and a JSON object without an optional
//! field as empty). A row that cannot be read (a CSV row with another number of fields than the
//! header, a line that is not valid UTF-8 or not a JSON object, a JSON object without a required
//! field) is skipped and reported with its line number, in every format; a byte-order mark at the
//! start of a file is not part of its first row. A missing column in the CSV header is an error
//! naming it and the file.

use std::path::Path;

/// The format of a rows file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum RowFormat {
    /// Comma-separated values with a header row (RFC 4180 quoting).
    Csv,
    /// One JSON object per line.
    #[value(name = "jsonl", aliases = ["ndjson", "json"])]
    JsonLines,
    /// Apache Parquet (an output format: [`super::parquet_rows`]).
    Parquet,
}

impl RowFormat {
    /// The format a file name's extension says (`.csv`; `.jsonl`, `.ndjson`, `.json`;
    /// `.parquet`), after a `.gz` ([`is_gzip`]: `events.jsonl.gz` is JSON lines).
    pub fn of_path(p: &Path) -> Option<RowFormat> {
        let p = match is_gzip(p) {
            true => Path::new(p.file_stem()?),
            false => p,
        };
        match p.extension()?.to_str()? {
            "csv" => Some(RowFormat::Csv),
            "jsonl" | "ndjson" | "json" => Some(RowFormat::JsonLines),
            "parquet" => Some(RowFormat::Parquet),
            _ => None,
        }
    }
}

/// True for a gzip-compressed file, by its name (`.gz`): read through a decoder.
pub fn is_gzip(p: &Path) -> bool {
    p.extension().is_some_and(|e| e == "gz")
}

/// One row: its 1-based line number and the asked-for fields (as text, or what a caller's
/// parser made of the line: [`read_json_input`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Row<F = Vec<String>> {
    /// Line of the file (the CSV header is line 1).
    pub line: u64,
    /// The fields, in the order asked for.
    pub fields: F,
}

/// A file read: its rows in file order, and the skipped ones with why.
#[derive(Debug)]
pub struct Rows<F = Vec<String>> {
    /// Rows read.
    pub rows: Vec<Row<F>>,
    /// (line, reason) of every skipped row.
    pub malformed: Vec<(u64, String)>,
}

impl<F> Default for Rows<F> {
    fn default() -> Self {
        Rows {
            rows: Vec::new(),
            malformed: Vec::new(),
        }
    }
}

/// The UTF-8 byte-order mark some editors put at the start of a text file.
pub(crate) const BOM: &[u8] = b"\xEF\xBB\xBF";

/// The longest piece of a file's content an error message quotes, in bytes (a 2 MB header line
/// is not an error message).
pub const QUOTE_MAX: usize = 200;

/// `text` cut to at most [`QUOTE_MAX`] bytes (at a character boundary), saying how much was
/// left out.
pub fn quote(text: &str) -> String {
    if text.len() <= QUOTE_MAX {
        return text.to_string();
    }
    let mut end = QUOTE_MAX;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}... ({} bytes in all)", &text[..end], text.len())
}

/// The input a job names: a file or a folder of files, each file in the format `format` names
/// or, without it, its extension says ([`RowFormat::of_path`]).
///
/// # Errors
/// A file whose format neither names, an empty folder, or what [`read_rows`] refuses.
pub fn read_input(
    path: &Path,
    format: Option<RowFormat>,
    columns: &[String],
    required: usize,
) -> Result<Rows, String> {
    let format_of = |f: &Path| {
        format.or_else(|| RowFormat::of_path(f)).ok_or_else(|| {
            format!(
                "--format: cannot tell the format of '{}' from its name (.csv, .jsonl, .ndjson, \
                 .json, each maybe .gz)",
                f.display()
            )
        })
    };
    read_files(path, |f| read_rows(f, format_of(f)?, columns, required))
}

/// Every line of a JSON-lines input (a file or a folder of them, each maybe gzip) as `parse`
/// makes it of the line's text, or the line skipped with why (`parse`'s reason, or a line that
/// is not UTF-8); blank lines are no rows, lines are numbered as [`read_input`] numbers them.
/// A file is read whole and its lines parsed on up to `threads` threads, each a contiguous
/// share of the lines, so a large file is parsed on every core a job has (`xorflow sql`'s file
/// tables: `crates/sql/src/connectors/filesystem.rs`).
///
/// # Errors
/// A file that cannot be opened or read, or an empty folder, naming it.
pub fn read_json_input<F: Send>(
    path: &Path,
    threads: usize,
    parse: &(dyn Fn(&str) -> Result<F, String> + Sync),
) -> Result<Rows<F>, String> {
    read_files(path, |f| {
        let err = |e: &dyn std::fmt::Display| format!("cannot read '{}': {e}", f.display());
        let file = std::fs::File::open(f).map_err(|e| err(&e))?;
        // Sized once (a plain file's length; a gzip stream grows it): no copies while reading.
        let len = file.metadata().map_or(0, |m| m.len() as usize);
        let mut bytes = Vec::with_capacity(len + 1);
        let read = match is_gzip(f) {
            true => std::io::Read::read_to_end(
                &mut flate2::read::MultiGzDecoder::new(std::io::BufReader::new(file)),
                &mut bytes,
            ),
            false => std::io::Read::read_to_end(&mut { file }, &mut bytes),
        };
        read.map_err(|e| err(&e))?;
        let text = bytes.strip_prefix(BOM).unwrap_or(&bytes);
        let lines: Vec<&[u8]> = text.split(|&b| b == b'\n').collect();
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let share = lines.len().div_ceil(threads.clamp(1, cores)).max(1);
        let parts: Vec<Rows<F>> = std::thread::scope(|scope| {
            let handles: Vec<_> = (lines.chunks(share).enumerate())
                .map(|(k, chunk)| scope.spawn(move || json_lines(chunk, k * share, parse)))
                .collect();
            (handles.into_iter())
                .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                .collect()
        });
        let mut out = Rows::default();
        for p in parts {
            out.rows.extend(p.rows);
            out.malformed.extend(p.malformed);
        }
        Ok(out)
    })
}

/// `lines` (the line before the first is line `before`) parsed by `parse`.
fn json_lines<F>(
    lines: &[&[u8]],
    before: usize,
    parse: &(dyn Fn(&str) -> Result<F, String> + Sync),
) -> Rows<F> {
    let mut out = Rows::default();
    for (i, bytes) in lines.iter().enumerate() {
        let line = (before + i + 1) as u64;
        let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
        match std::str::from_utf8(bytes) {
            Ok(text) if text.trim().is_empty() => {}
            Ok(text) => match parse(text) {
                Ok(fields) => out.rows.push(Row { line, fields }),
                Err(why) => out.malformed.push((line, why)),
            },
            Err(e) => {
                let at = e.valid_up_to() + 1;
                out.malformed
                    .push((line, format!("not UTF-8 (at byte {at} of the line)")));
            }
        }
    }
    out
}

/// The files an input names: `path` itself, or the files of the folder `path` in name order
/// (hidden files, an editor's or a sync tool's, are not input).
///
/// # Errors
/// A folder that cannot be listed or holds no files, naming it.
pub fn input_files(path: &Path) -> Result<Vec<std::path::PathBuf>, String> {
    if !path.is_dir() {
        return Ok(vec![path.to_path_buf()]);
    }
    let err = |e: std::io::Error| format!("cannot read folder '{}': {e}", path.display());
    let mut files = Vec::new();
    for e in std::fs::read_dir(path).map_err(err)? {
        let e = e.map_err(err)?;
        if !e.file_name().to_string_lossy().starts_with('.') && e.path().is_file() {
            files.push(e.path());
        }
    }
    files.sort();
    if files.is_empty() {
        return Err(format!("folder '{}' holds no files", path.display()));
    }
    Ok(files)
}

/// What `read` makes of `path`, or of every file of the folder `path` in name order, as if
/// they were one: lines numbered on from one file to the next, so that a row's line stays one
/// number (the late output's `line`); a malformed row also names its file and the line in it.
/// Hidden files (an editor's, a sync tool's) are not input.
fn read_files<F>(
    path: &Path,
    mut read: impl FnMut(&Path) -> Result<Rows<F>, String>,
) -> Result<Rows<F>, String> {
    if !path.is_dir() {
        return read(path);
    }
    let files = input_files(path)?;
    let mut out = Rows::default();
    let mut offset = 0;
    for f in &files {
        let r = read(f)?;
        let name = f
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
        let last = (r.rows.iter().map(|r| r.line))
            .chain(r.malformed.iter().map(|m| m.0))
            .max()
            .unwrap_or(0);
        out.rows.extend(r.rows.into_iter().map(|mut row| {
            row.line += offset;
            row
        }));
        (out.malformed).extend(
            (r.malformed.into_iter())
                .map(|(line, why)| (line + offset, format!("{name} line {line}: {why}"))),
        );
        offset += last;
    }
    Ok(out)
}

/// Reads `columns` of every row of `path`; the first `required` of them must be in every row
/// (a JSON object without one of the others reads it as empty, like a blank CSV value).
///
/// # Errors
/// The file cannot be opened or read, or (CSV) its header lacks a column, naming both; Parquet,
/// which is an output format only.
pub fn read_rows(
    path: &Path,
    format: RowFormat,
    columns: &[String],
    required: usize,
) -> Result<Rows, String> {
    let err = |e: &dyn std::fmt::Display| format!("cannot read '{}': {e}", path.display());
    let f = std::fs::File::open(path).map_err(|e| err(&e))?;
    let input: Box<dyn std::io::Read + Send> = match is_gzip(path) {
        // A corrupt stream fails where it is corrupt, naming the file (an I/O error).
        true => Box::new(flate2::read::MultiGzDecoder::new(std::io::BufReader::new(
            f,
        ))),
        false => Box::new(f),
    };
    let name = path.display().to_string();
    let mut reader = RowReader::new(&name, input, format, columns, required)?;
    let mut out = Rows::default();
    while let Some(next) = reader.next_row()? {
        match next {
            Ok(row) => out.rows.push(row),
            Err(bad) => out.malformed.push(bad),
        }
    }
    Ok(out)
}

/// One read of a [`RowReader`]: a row, or a skipped one (its line and why).
pub type RowRead = Result<Row, (u64, String)>;

/// Rows of one stream, read one at a time as they arrive: a file (through [`read_rows`]) or
/// standard input (`xorflow run file --input -`, `connectors/live_rows.rs`).
pub struct RowReader {
    name: String,
    kind: ReaderKind,
    columns: Vec<String>,
    required: usize,
}

enum ReaderKind {
    Csv {
        reader: csv::Reader<Box<dyn std::io::Read + Send>>,
        /// Where each asked-for column is in a record.
        at: Vec<usize>,
        width: usize,
        record: csv::StringRecord,
    },
    JsonLines {
        reader: std::io::BufReader<Box<dyn std::io::Read + Send>>,
        line: u64,
        buf: Vec<u8>,
    },
}

impl RowReader {
    /// A reader of `columns` (the first `required` in every row) from `input`, named `name` in
    /// messages. A CSV header is read here, so this blocks until it arrives.
    ///
    /// # Errors
    /// The header cannot be read or lacks a column (naming both); Parquet, an output format.
    pub fn new(
        name: &str,
        input: Box<dyn std::io::Read + Send>,
        format: RowFormat,
        columns: &[String],
        required: usize,
    ) -> Result<Self, String> {
        let err = |e: &dyn std::fmt::Display| format!("cannot read '{name}': {e}");
        let kind = match format {
            RowFormat::Csv => {
                let mut reader = csv::ReaderBuilder::new().flexible(true).from_reader(input);
                let header = reader.headers().map_err(|e| err(&e))?.clone();
                let mut at = Vec::with_capacity(columns.len());
                for c in columns {
                    match header.iter().position(|h| h == c) {
                        Some(i) => at.push(i),
                        None => {
                            let have: Vec<&str> = header.iter().collect();
                            return Err(format!(
                                "'{name}' has no column '{}' (its header: {})",
                                quote(c),
                                quote(&have.join(","))
                            ));
                        }
                    }
                }
                ReaderKind::Csv {
                    reader,
                    at,
                    width: header.len(),
                    record: csv::StringRecord::new(),
                }
            }
            RowFormat::JsonLines => ReaderKind::JsonLines {
                reader: std::io::BufReader::new(input),
                line: 0,
                buf: Vec::new(),
            },
            RowFormat::Parquet => {
                return Err(err(
                    &"Parquet is an output format here; the input must be CSV or JSON lines",
                ))
            }
        };
        Ok(RowReader {
            name: name.to_string(),
            kind,
            columns: columns.to_vec(),
            required,
        })
    }

    /// The next row (`Ok`), or a skipped one (`Err`: line and why); `None` at the end.
    ///
    /// # Errors
    /// The stream cannot be read (an I/O error, a corrupt gzip stream), naming it.
    pub fn next_row(&mut self) -> Result<Option<RowRead>, String> {
        let err = |e: &dyn std::fmt::Display| format!("cannot read '{}': {e}", self.name);
        match &mut self.kind {
            ReaderKind::Csv {
                reader,
                at,
                width,
                record,
            } => {
                let line = reader.position().line();
                match reader.read_record(record) {
                    Ok(false) => Ok(None),
                    Ok(true) if record.len() != *width => Ok(Some(Err((
                        line,
                        format!("{} fields, the header has {width}", record.len()),
                    )))),
                    Ok(true) => Ok(Some(Ok(Row {
                        line,
                        fields: at.iter().map(|&i| record[i].to_string()).collect(),
                    }))),
                    // A row that is not valid UTF-8, say: skipped, the rest is read.
                    Err(e) if !e.is_io_error() => Ok(Some(Err((line, e.to_string())))),
                    Err(e) => Err(err(&e)),
                }
            }
            ReaderKind::JsonLines { reader, line, buf } => loop {
                // Bytes, not `lines()`: one line that is not UTF-8 is a malformed row, not the
                // end of the file.
                buf.clear();
                if std::io::BufRead::read_until(reader, b'\n', buf).map_err(|e| err(&e))? == 0 {
                    return Ok(None);
                }
                *line += 1;
                let n = *line;
                let bytes = match n {
                    1 => buf.strip_prefix(BOM).unwrap_or(buf),
                    _ => buf,
                };
                let text = match std::str::from_utf8(bytes) {
                    Ok(l) => l,
                    Err(e) => {
                        let at = e.valid_up_to() + 1;
                        let why = format!("not UTF-8 (at byte {at} of the line)");
                        return Ok(Some(Err((n, why))));
                    }
                };
                if text.trim().is_empty() {
                    continue;
                }
                return Ok(Some(match json_row(text, &self.columns, self.required) {
                    Ok(fields) => Ok(Row { line: n, fields }),
                    Err(why) => Err((n, why)),
                }));
            },
        }
    }
}

/// The asked-for fields of one JSON-lines row, or why it is malformed.
fn json_row(line: &str, columns: &[String], required: usize) -> Result<Vec<String>, String> {
    let obj = match serde_json::from_str::<serde_json::Value>(line) {
        Ok(serde_json::Value::Object(o)) => o,
        Ok(_) => return Err("not a JSON object".into()),
        Err(e) => return Err(format!("not JSON: {e}")),
    };
    let mut fields = Vec::with_capacity(columns.len());
    for (i, c) in columns.iter().enumerate() {
        match obj.get(c) {
            Some(serde_json::Value::String(s)) => fields.push(s.clone()),
            Some(serde_json::Value::Null) => fields.push(String::new()),
            Some(v) => fields.push(v.to_string()),
            None if i >= required => fields.push(String::new()),
            None => return Err(format!("no field '{}'", quote(c))),
        }
    }
    Ok(fields)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn file(text: &str, ext: &str) -> tempfile::NamedTempFile {
        let mut f = tempfile::Builder::new().suffix(ext).tempfile().unwrap();
        f.write_all(text.as_bytes()).unwrap();
        f
    }

    fn cols(c: &[&str]) -> Vec<String> {
        c.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn csv_rows_keep_the_asked_columns_and_skip_bad_rows_by_line() {
        let f = file("t,k,v\n1,a,2.5\n2,\"b,c\",3\n3,x\n4,d,\n", ".csv");
        let r = read_rows(f.path(), RowFormat::Csv, &cols(&["v", "t"]), 2).unwrap();
        let rows: Vec<(u64, Vec<String>)> =
            r.rows.into_iter().map(|r| (r.line, r.fields)).collect();
        assert_eq!(
            rows,
            vec![
                (2, cols(&["2.5", "1"])),
                (3, cols(&["3", "2"])),
                (5, cols(&["", "4"]))
            ]
        );
        assert_eq!(
            r.malformed,
            vec![(4, "2 fields, the header has 3".to_string())]
        );
        let e = read_rows(f.path(), RowFormat::Csv, &cols(&["nope"]), 1).unwrap_err();
        assert!(e.contains("no column 'nope'") && e.contains("t,k,v"), "{e}");
    }

    #[test]
    fn json_lines_take_strings_numbers_and_nulls_and_skip_the_rest() {
        let text =
            "{\"t\":1,\"k\":\"a\",\"v\":null}\n\n[1]\n{\"t\":2}\nnot json\n{\"t\":3,\"k\":true}\n";
        let f = file(text, ".jsonl");
        let r = read_rows(f.path(), RowFormat::JsonLines, &cols(&["t", "k"]), 2).unwrap();
        let rows: Vec<(u64, Vec<String>)> =
            r.rows.into_iter().map(|r| (r.line, r.fields)).collect();
        assert_eq!(
            rows,
            vec![(1, cols(&["1", "a"])), (6, cols(&["3", "true"]))]
        );
        let lines: Vec<u64> = r.malformed.iter().map(|m| m.0).collect();
        assert_eq!(lines, vec![3, 4, 5]);
        assert!(r.malformed[1].1.contains("no field 'k'"));
        assert_eq!(
            RowFormat::of_path(Path::new("a.ndjson")),
            Some(RowFormat::JsonLines)
        );
    }

    #[test]
    fn a_missing_file_is_named() {
        let e = read_rows(Path::new("/no/such.csv"), RowFormat::Csv, &[], 0).unwrap_err();
        assert!(e.contains("/no/such.csv"), "{e}");
    }

    fn bytes_file(bytes: &[u8], ext: &str) -> tempfile::NamedTempFile {
        let mut f = tempfile::Builder::new().suffix(ext).tempfile().unwrap();
        f.write_all(bytes).unwrap();
        f
    }

    /// Catches: one invalid UTF-8 byte in a JSON-lines file ending the run without a line
    /// number (the CSV reader skipped the same row), and a byte-order mark costing the first
    /// row of a JSON-lines file or the first column of a CSV header.
    #[test]
    fn bad_bytes_and_byte_order_marks_are_rows_not_errors() {
        let mut text = b"\xEF\xBB\xBF{\"t\":1,\"k\":\"a\"}\n{\"t\":2,\"k\":\"".to_vec();
        text.extend_from_slice(b"\xFF\"}\n{\"t\":3,\"k\":\"c\"}\n");
        let f = bytes_file(&text, ".jsonl");
        let r = read_rows(f.path(), RowFormat::JsonLines, &cols(&["t", "k"]), 2).unwrap();
        let lines: Vec<u64> = r.rows.iter().map(|r| r.line).collect();
        assert_eq!(lines, vec![1, 3]);
        assert_eq!(r.malformed.len(), 1);
        assert_eq!(r.malformed[0].0, 2);
        assert!(r.malformed[0].1.contains("not UTF-8"), "{:?}", r.malformed);
        let csv = bytes_file(b"\xEF\xBB\xBFt,k\n1,a\n2,\xFF\n3,c\n", ".csv");
        let r = read_rows(csv.path(), RowFormat::Csv, &cols(&["t", "k"]), 2).unwrap();
        let lines: Vec<u64> = r.rows.iter().map(|r| r.line).collect();
        assert_eq!(lines, vec![2, 4]);
        assert_eq!(r.malformed.len(), 1, "{:?}", r.malformed);
        assert_eq!(r.malformed[0].0, 3);
    }

    /// Catches: a JSON row without a value field vanishing (from every count) where the same
    /// row in a CSV, with the value blank, is counted.
    #[test]
    fn a_missing_optional_json_field_reads_as_empty() {
        let f = file("{\"t\":1,\"k\":\"a\"}\n{\"k\":\"b\",\"v\":2}\n", ".jsonl");
        let r = read_rows(f.path(), RowFormat::JsonLines, &cols(&["k", "v", "t"]), 1).unwrap();
        let rows: Vec<Vec<String>> = r.rows.into_iter().map(|r| r.fields).collect();
        assert_eq!(rows, vec![cols(&["a", "", "1"]), cols(&["b", "2", ""])]);
        let r = read_rows(f.path(), RowFormat::JsonLines, &cols(&["t"]), 1).unwrap();
        assert_eq!(r.malformed, vec![(2, "no field 't'".to_string())]);
    }

    /// Catches: a `.gz` input read as text (garbage rows) or refused for its name.
    #[test]
    fn gzip_files_are_read_through_a_decoder() {
        use flate2::{write::GzEncoder, Compression};
        for (ext, text) in [
            (".csv.gz", "t,k\n1,a\n2,b\n"),
            (
                ".jsonl.gz",
                "{\"t\":1,\"k\":\"a\"}\n{\"t\":2,\"k\":\"b\"}\n",
            ),
        ] {
            let mut z = GzEncoder::new(Vec::new(), Compression::fast());
            z.write_all(text.as_bytes()).unwrap();
            let f = bytes_file(&z.finish().unwrap(), ext);
            let format = RowFormat::of_path(f.path()).unwrap();
            let r = read_rows(f.path(), format, &cols(&["k", "t"]), 2).unwrap();
            let rows: Vec<Vec<String>> = r.rows.into_iter().map(|r| r.fields).collect();
            assert_eq!(rows, vec![cols(&["a", "1"]), cols(&["b", "2"])], "{ext}");
        }
        let bad = bytes_file(b"not gzip at all", ".csv.gz");
        let e = read_rows(bad.path(), RowFormat::Csv, &cols(&["t"]), 1).unwrap_err();
        assert!(e.contains("cannot read") && e.contains(".csv.gz"), "{e}");
    }

    /// Catches: a folder refused as input, its files read out of name order or with their own
    /// line numbers (two rows with line 2), and a file of no known format read anyway.
    #[test]
    fn a_folder_is_its_files_in_name_order() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("b.csv"), "t,k\n3,c\nbad\n").unwrap();
        std::fs::write(
            dir.path().join("a.jsonl"),
            "{\"t\":1,\"k\":\"a\"}\n{\"t\":2,\"k\":\"b\"}\n",
        )
        .unwrap();
        std::fs::write(dir.path().join(".hidden"), "x").unwrap();
        let r = read_input(dir.path(), None, &cols(&["k", "t"]), 2).unwrap();
        let rows: Vec<(u64, Vec<String>)> =
            r.rows.into_iter().map(|r| (r.line, r.fields)).collect();
        assert_eq!(
            rows,
            vec![
                (1, cols(&["a", "1"])),
                (2, cols(&["b", "2"])),
                (4, cols(&["c", "3"]))
            ]
        );
        assert_eq!(r.malformed.len(), 1);
        assert_eq!(r.malformed[0].0, 5);
        assert!(
            r.malformed[0].1.starts_with("b.csv line 3: "),
            "{:?}",
            r.malformed
        );
        std::fs::write(dir.path().join("notes.txt"), "x").unwrap();
        let e = read_input(dir.path(), None, &cols(&["t"]), 1).unwrap_err();
        assert!(e.contains("notes.txt"), "{e}");
        let empty = tempfile::tempdir().unwrap();
        let e = read_input(empty.path(), None, &cols(&["t"]), 1).unwrap_err();
        assert!(e.contains("holds no files"), "{e}");
    }

    /// The parallel JSON reader numbers, keeps and skips lines as the row reader does, on any
    /// number of threads: a folder of a plain and a gzip file, with a byte-order mark, blank
    /// lines, a CRLF, a line that is not UTF-8 and one the parser refuses.
    #[test]
    fn json_lines_read_in_parallel_are_the_rows_the_row_reader_reads() {
        let dir = tempfile::tempdir().unwrap();
        let a = b"\xEF\xBB\xBF{\"k\":\"a\"}\n\n{\"k\":\"b\"}\r\n{\"k\":\"\xFF\"}\n{\"x\":1}\n{\"k\":\"c\"}";
        std::fs::write(dir.path().join("a.jsonl"), a).unwrap();
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(b"{\"k\":\"d\"}\n{\"k\":\"e\"}\n").unwrap();
        std::fs::write(dir.path().join("b.jsonl.gz"), gz.finish().unwrap()).unwrap();
        let want = read_input(dir.path(), None, &cols(&["k"]), 1).unwrap();
        let parse = |line: &str| match serde_json::from_str::<serde_json::Value>(line) {
            Ok(v) => match v.get("k") {
                Some(serde_json::Value::String(k)) => Ok(vec![k.clone()]),
                _ => Err("no field 'k'".to_string()),
            },
            Err(e) => Err(format!("not JSON: {e}")),
        };
        for threads in [1, 2, 3, 8] {
            let got = read_json_input(dir.path(), threads, &parse).unwrap();
            assert_eq!(got.rows, want.rows, "{threads} threads");
            assert_eq!(got.malformed, want.malformed, "{threads} threads");
        }
        assert_eq!(want.rows.len(), 5);
        assert_eq!(want.malformed.len(), 2, "{:?}", want.malformed);
    }

    /// Catches: an error message quoting a whole 2 MB header line.
    #[test]
    fn messages_quote_at_most_200_bytes_of_the_file() {
        let header = "x".repeat(2_000_000);
        let f = file(&format!("{header}\n1\n"), ".csv");
        let e = read_rows(f.path(), RowFormat::Csv, &cols(&["ts"]), 1).unwrap_err();
        assert!(e.len() < 600, "{} bytes: {}", e.len(), &e[..300]);
        assert!(e.contains("(2000000 bytes in all)"), "{e}");
        let q = quote(&"é".repeat(150));
        assert_eq!(q, format!("{}... (300 bytes in all)", "é".repeat(100)));
    }
}
