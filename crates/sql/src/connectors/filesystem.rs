//! `'connector' = 'filesystem'`: a JSON-lines or CSV file, or a folder of them. Plain JSON
//! lines are read while the job runs ([`super::file_source`]); CSV and gzip files are read
//! whole first with the runtime's row reader (`crates/runtime/src/connectors/rows.rs`: folders
//! in name order, malformed rows counted and named) and typed by the table's columns.

use super::file_source::FileTable;
use super::json_format::JsonFormat;
use crate::catalog::Table;
use crate::types::{parse_timestamp, Row, SqlType, Value};
use std::path::Path;
use xorflow_runtime::connectors::line_blocks::BlockPlan;
use xorflow_runtime::connectors::rows::{
    input_files, is_gzip, read_input, read_json_input, RowFormat,
};

/// A table's rows read from its file(s): (event time ms, row) in file order, and the rows
/// skipped with (line, why).
#[derive(Debug, Default)]
pub struct FileRows {
    /// The rows, with their event time (the rowtime column's ms; 0 without one).
    pub rows: Vec<(i64, Row)>,
    /// (line, reason) of every row skipped.
    pub malformed: Vec<(u64, String)>,
}

/// The format a table's `'format'` option names.
///
/// # Errors
/// A format other than `json` and `csv`.
pub fn format_of(table: &Table) -> Result<RowFormat, String> {
    match table.option("format") {
        Some("json") => Ok(RowFormat::JsonLines),
        Some("csv") => Ok(RowFormat::Csv),
        Some(other) => Err(format!(
            "table '{}': 'format' = '{other}' is not supported ('json' or 'csv')",
            table.name
        )),
        None => Err(format!(
            "table '{}': the filesystem connector needs a 'format' ('json' or 'csv')",
            table.name
        )),
    }
}

/// Whether the table is read while the job runs ([`super::file_source`]): JSON lines, no file
/// gzip-compressed. CSV (whose quoted values may span lines) and gzip are read whole first.
///
/// # Errors
/// No `'path'`, a bad `'format'`, a folder that cannot be listed or holds no files.
pub fn streams(table: &Table) -> Result<bool, String> {
    if format_of(table)? != RowFormat::JsonLines {
        return Ok(false);
    }
    let files = input_files(Path::new(path_of(table)?))
        .map_err(|e| format!("table '{}': {e}", table.name))?;
    Ok(!files.iter().any(|f| is_gzip(f)))
}

/// The JSON table `table` as a [`FileTable`] of `instances` source instances, reading the
/// columns `keep` marks, its source vertex named `vertex`.
///
/// # Errors
/// No `'path'`, a file that cannot be opened.
pub fn file_table(
    table: &Table,
    vertex: &str,
    keep: Vec<bool>,
    bound: xorflow_runtime::Time,
    instances: usize,
) -> Result<FileTable, String> {
    let plan = BlockPlan::of(Path::new(path_of(table)?), instances)
        .map_err(|e| format!("table '{}': {e}", table.name))?;
    let json = JsonFormat::new(&table.schema, table.rowtime.map(|r| r.column), Some(keep));
    Ok(FileTable::new(
        &table.name,
        vertex,
        plan,
        json,
        bound,
        rate_of(table)?,
    ))
}

/// `'rows-per-second'` (as Flink's datagen connector names it): the table's rows are emitted
/// at this rate over all source instances, as a live feed of the file would deliver them; 0
/// without it (as fast as the job reads).
///
/// # Errors
/// A rate that is not a positive number.
pub fn rate_of(table: &Table) -> Result<f64, String> {
    match table.option("rows-per-second") {
        None => Ok(0.0),
        Some(text) => match text.trim().parse::<f64>() {
            Ok(r) if r > 0.0 && r.is_finite() => Ok(r),
            _ => Err(format!(
                "table '{}': 'rows-per-second' = '{text}' is not a positive number",
                table.name
            )),
        },
    }
}

/// A table's `'replay.*'` options: (origin ms, speed, start ms since the epoch).
pub type ReplayOptions = (i64, f64, Option<i64>);

/// `'replay.origin'` (a timestamp, as the table's JSON writes them), `'replay.speed'` (event
/// time per wall-clock time, default 1) and `'replay.start-ms'` (ms since the Unix epoch;
/// default: when the job's first source polls): the table's rows are emitted each when its
/// event time is due, `(t - origin) / speed` after the start, as the live feed the file was
/// recorded from would deliver them ([`xorflow_runtime::connectors::pace`]). `None` without
/// `'replay.origin'`.
///
/// # Errors
/// A replay option without `'replay.origin'`, a value that does not parse, a table without a
/// `WATERMARK` (no event time to pace by), one that also sets `'rows-per-second'`, or one that
/// is not streamed (CSV, gzip: read whole before the job runs).
pub fn replay_of(table: &Table) -> Result<Option<ReplayOptions>, String> {
    let name = &table.name;
    let Some(origin) = table.option("replay.origin") else {
        for k in ["replay.speed", "replay.start-ms"] {
            if table.option(k).is_some() {
                return Err(format!("table '{name}': '{k}' needs 'replay.origin'"));
            }
        }
        return Ok(None);
    };
    let origin_ms = crate::types::parse_timestamp(origin.trim()).ok_or_else(|| {
        format!(
            "table '{name}': 'replay.origin' = '{origin}' is not a timestamp              ('yyyy-MM-dd HH:mm:ss[.SSS]')"
        )
    })?;
    let speed = match table.option("replay.speed") {
        None => 1.0,
        Some(text) => match text.trim().parse::<f64>() {
            Ok(s) if s > 0.0 && s.is_finite() => s,
            _ => {
                return Err(format!(
                    "table '{name}': 'replay.speed' = '{text}' is not a positive number"
                ))
            }
        },
    };
    let start = match table.option("replay.start-ms") {
        None => None,
        Some(text) => Some(text.trim().parse::<i64>().map_err(|_| {
            format!("table '{name}': 'replay.start-ms' = '{text}' is not ms since the epoch")
        })?),
    };
    if table.rowtime.is_none() {
        return Err(format!(
            "table '{name}': a replay needs the table's event time (a WATERMARK FOR column)"
        ));
    }
    if table.option("rows-per-second").is_some() {
        return Err(format!(
            "table '{name}': 'rows-per-second' and 'replay.origin' pace the same rows; set one"
        ));
    }
    if !streams(table)? {
        return Err(format!(
            "table '{name}': a replay needs 'format' = 'json' over plain (not gzip) files,              which are read while the job runs"
        ));
    }
    Ok(Some((origin_ms, speed, start)))
}

fn path_of(table: &Table) -> Result<&str, String> {
    table.option("path").ok_or_else(|| {
        format!(
            "table '{}': the filesystem connector needs a 'path'",
            table.name
        )
    })
}

/// Reads the table's `'path'`: the columns `keep` marks (the others are NULL, never parsed), a
/// JSON-lines file's lines parsed on up to `threads` threads
/// ([`super::json_format::JsonFormat`]).
///
/// # Errors
/// No `'path'`, a file that cannot be read, a CSV header without a column.
pub fn read(table: &Table, keep: &[bool], threads: usize) -> Result<FileRows, String> {
    let path = path_of(table)?;
    let format = format_of(table)?;
    let columns = table.schema.names();
    if format == RowFormat::JsonLines {
        let json = JsonFormat::new(
            &table.schema,
            table.rowtime.map(|r| r.column),
            Some(keep.to_vec()),
        );
        let read = read_json_input(Path::new(path), threads, &|line| {
            json.decode(line.as_bytes())
        })
        .map_err(|e| format!("table '{}': {e}", table.name))?;
        return Ok(FileRows {
            rows: read.rows.into_iter().map(|r| r.fields).collect(),
            malformed: read.malformed,
        });
    }
    let read = read_input(Path::new(path), Some(format), &columns, 0)
        .map_err(|e| format!("table '{}': {e}", table.name))?;
    let mut out = FileRows {
        rows: Vec::with_capacity(read.rows.len()),
        malformed: read.malformed,
    };
    let rowtime = table.rowtime.map(|r| r.column);
    // Flink's csv.null-literal: the text that stands for NULL (R's NA, say).
    let null = table.option("csv.null-literal");
    'rows: for r in read.rows {
        let mut row = Vec::with_capacity(columns.len());
        for (i, text) in r.fields.iter().enumerate() {
            let ty = table.schema.fields[i].ty;
            if null == Some(text.as_str()) || !(keep[i] || rowtime == Some(i)) {
                row.push(Value::Null);
                continue;
            }
            match parse_field(text, ty) {
                Some(v) => row.push(v),
                None => {
                    let why = format!(
                        "column {}: '{}' is not a {ty}",
                        columns[i],
                        xorflow_runtime::connectors::rows::quote(text)
                    );
                    out.malformed.push((r.line, why));
                    continue 'rows;
                }
            }
        }
        let t = match rowtime {
            Some(c) => match row[c] {
                Value::Timestamp(ms) => ms,
                _ => {
                    let why = format!("column {}: no event time (NULL)", columns[c]);
                    out.malformed.push((r.line, why));
                    continue;
                }
            },
            None => 0,
        };
        out.rows.push((t, row));
    }
    Ok(out)
}

/// A field's text as a value of `ty`: empty text is NULL (except for VARCHAR, where it is the
/// empty string); `None` when the text is not of the type.
pub fn parse_field(text: &str, ty: SqlType) -> Option<Value> {
    if text.is_empty() && ty != SqlType::Varchar {
        return Some(Value::Null);
    }
    let t = text.trim();
    Some(match ty {
        SqlType::Varchar => Value::str(text),
        SqlType::Int | SqlType::Bigint => Value::Int(t.parse().ok()?),
        SqlType::Double => Value::Double(t.parse().ok()?),
        SqlType::Decimal(_, s) => Value::decimal(crate::expr::functions::parse_decimal(t, s)?, s),
        SqlType::Boolean => match t.to_ascii_lowercase().as_str() {
            "true" => Value::Bool(true),
            "false" => Value::Bool(false),
            _ => return None,
        },
        SqlType::Timestamp => Value::Timestamp(parse_timestamp(t)?),
        SqlType::Interval | SqlType::Null => return None,
    })
}
