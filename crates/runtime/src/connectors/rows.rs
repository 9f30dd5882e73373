//! Reading a CSV or JSON-lines file as rows of named fields (`xorflow run file`: the built-in
//! operators on a user's own files).
//!
//! The reader keeps, per row, the fields a job asks for, in the order it asks for them, as text
//! (numbers as written, JSON `null` and missing CSV values as empty). A row that cannot be read
//! (a CSV row with another number of fields than the header, a line that is not a JSON object, a
//! JSON object without an asked-for field) is skipped and reported with its line number; a
//! missing column in the CSV header is an error naming it and the file.

use std::path::Path;

/// The format of a rows file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum RowFormat {
    /// Comma-separated values with a header row (RFC 4180 quoting).
    Csv,
    /// One JSON object per line.
    #[value(name = "jsonl", alias = "ndjson")]
    JsonLines,
    /// Apache Parquet (an output format: [`super::parquet_rows`]).
    Parquet,
}

impl RowFormat {
    /// The format a file name's extension says (`.csv`; `.jsonl`, `.ndjson`, `.json`;
    /// `.parquet`).
    pub fn of_path(p: &Path) -> Option<RowFormat> {
        match p.extension()?.to_str()? {
            "csv" => Some(RowFormat::Csv),
            "jsonl" | "ndjson" | "json" => Some(RowFormat::JsonLines),
            "parquet" => Some(RowFormat::Parquet),
            _ => None,
        }
    }
}

/// One row: its 1-based line number and the asked-for fields.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Row {
    /// Line of the file (the CSV header is line 1).
    pub line: u64,
    /// The fields, in the order asked for.
    pub fields: Vec<String>,
}

/// A file read: its rows in file order, and the skipped ones with why.
#[derive(Debug, Default)]
pub struct Rows {
    /// Rows read.
    pub rows: Vec<Row>,
    /// (line, reason) of every skipped row.
    pub malformed: Vec<(u64, String)>,
}

/// Reads `columns` of every row of `path`.
///
/// # Errors
/// The file cannot be opened or read, or (CSV) its header lacks a column, naming both; Parquet,
/// which is an output format only.
pub fn read_rows(path: &Path, format: RowFormat, columns: &[String]) -> Result<Rows, String> {
    let err = |e: &dyn std::fmt::Display| format!("cannot read '{}': {e}", path.display());
    let open = || std::fs::File::open(path).map_err(|e| err(&e));
    match format {
        RowFormat::Csv => read_csv(path, open()?, columns),
        RowFormat::JsonLines => {
            read_json_lines(std::io::BufReader::new(open()?), columns).map_err(|e| err(&e))
        }
        RowFormat::Parquet => Err(err(
            &"Parquet is an output format here; the input must be CSV or JSON lines",
        )),
    }
}

fn read_csv(path: &Path, file: std::fs::File, columns: &[String]) -> Result<Rows, String> {
    let err = |e: &dyn std::fmt::Display| format!("cannot read '{}': {e}", path.display());
    let mut r = csv::ReaderBuilder::new().flexible(true).from_reader(file);
    let header = r.headers().map_err(|e| err(&e))?.clone();
    let mut at = Vec::with_capacity(columns.len());
    for c in columns {
        match header.iter().position(|h| h == c) {
            Some(i) => at.push(i),
            None => {
                let have: Vec<&str> = header.iter().collect();
                return Err(format!(
                    "'{}' has no column '{c}' (its header: {})",
                    path.display(),
                    have.join(",")
                ));
            }
        }
    }
    let mut out = Rows::default();
    let mut record = csv::StringRecord::new();
    loop {
        let line = r.position().line();
        match r.read_record(&mut record) {
            Ok(false) => break,
            Ok(true) if record.len() != header.len() => out.malformed.push((
                line,
                format!("{} fields, the header has {}", record.len(), header.len()),
            )),
            Ok(true) => out.rows.push(Row {
                line,
                fields: at.iter().map(|&i| record[i].to_string()).collect(),
            }),
            // A row that is not valid UTF-8, say: skipped, the rest is read.
            Err(e) if !e.is_io_error() => out.malformed.push((line, e.to_string())),
            Err(e) => return Err(err(&e)),
        }
    }
    Ok(out)
}

fn read_json_lines(file: impl std::io::BufRead, columns: &[String]) -> std::io::Result<Rows> {
    let mut out = Rows::default();
    for (i, line) in file.lines().enumerate() {
        let (n, line) = (i as u64 + 1, line?);
        if line.trim().is_empty() {
            continue;
        }
        let obj = match serde_json::from_str::<serde_json::Value>(&line) {
            Ok(serde_json::Value::Object(o)) => o,
            Ok(_) => {
                out.malformed.push((n, "not a JSON object".into()));
                continue;
            }
            Err(e) => {
                out.malformed.push((n, format!("not JSON: {e}")));
                continue;
            }
        };
        let mut fields = Vec::with_capacity(columns.len());
        for c in columns {
            match obj.get(c) {
                Some(serde_json::Value::String(s)) => fields.push(s.clone()),
                Some(serde_json::Value::Null) => fields.push(String::new()),
                Some(v) => fields.push(v.to_string()),
                None => break,
            }
        }
        if fields.len() < columns.len() {
            let missing = &columns[fields.len()];
            out.malformed.push((n, format!("no field '{missing}'")));
            continue;
        }
        out.rows.push(Row { line: n, fields });
    }
    Ok(out)
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
        let r = read_rows(f.path(), RowFormat::Csv, &cols(&["v", "t"])).unwrap();
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
        let e = read_rows(f.path(), RowFormat::Csv, &cols(&["nope"])).unwrap_err();
        assert!(e.contains("no column 'nope'") && e.contains("t,k,v"), "{e}");
    }

    #[test]
    fn json_lines_take_strings_numbers_and_nulls_and_skip_the_rest() {
        let text =
            "{\"t\":1,\"k\":\"a\",\"v\":null}\n\n[1]\n{\"t\":2}\nnot json\n{\"t\":3,\"k\":true}\n";
        let f = file(text, ".jsonl");
        let r = read_rows(f.path(), RowFormat::JsonLines, &cols(&["t", "k"])).unwrap();
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
        let e = read_rows(Path::new("/no/such.csv"), RowFormat::Csv, &[]).unwrap_err();
        assert!(e.contains("/no/such.csv"), "{e}");
    }
}
