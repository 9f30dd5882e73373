//! `'connector' = 'filesystem'`: a JSON-lines or CSV file, or a folder of them, read with the
//! runtime's row reader (`crates/runtime/src/connectors/rows.rs`: gzip, folders in name
//! order, malformed rows counted and named) and typed by the table's columns.

use super::json_format::JsonFormat;
use crate::catalog::Table;
use crate::types::{parse_timestamp, Row, SqlType, Value};
use std::path::Path;
use xorflow_runtime::connectors::rows::{read_input, read_json_input, RowFormat};

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

/// Reads the table's `'path'`: the columns `keep` marks (the others are NULL, never parsed), a
/// JSON-lines file's lines parsed on up to `threads` threads
/// ([`super::json_format::JsonFormat`]).
///
/// # Errors
/// No `'path'`, a file that cannot be read, a CSV header without a column.
pub fn read(table: &Table, keep: &[bool], threads: usize) -> Result<FileRows, String> {
    let path = table.option("path").ok_or_else(|| {
        format!(
            "table '{}': the filesystem connector needs a 'path'",
            table.name
        )
    })?;
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
        SqlType::Decimal(_, s) => Value::Decimal(crate::expr::functions::parse_decimal(t, s)?, s),
        SqlType::Boolean => match t.to_ascii_lowercase().as_str() {
            "true" => Value::Bool(true),
            "false" => Value::Bool(false),
            _ => return None,
        },
        SqlType::Timestamp => Value::Timestamp(parse_timestamp(t)?),
        SqlType::Interval | SqlType::Null => return None,
    })
}
