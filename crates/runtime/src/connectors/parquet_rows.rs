//! Rows written as a Parquet file (the `parquet` feature): the output format `parquet` of
//! `xorflow run file` (docs/jobs.md). Every column is optional (nulls allowed) and typed by the
//! caller ([`ColumnType`]); rows are written in row groups of [`ROW_GROUP`] rows, compressed
//! with Snappy. The `parquet` crate is used without its Arrow layer, whose build costs about
//! 90 s more on 2 cores (docs/jobs.md, "Parquet").

use std::fs::File;

/// Rows per row group.
pub const ROW_GROUP: usize = 65_536;

/// The type of a column in the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ColumnType {
    /// 64-bit signed integers (from whole JSON numbers).
    Int64,
    /// 64-bit floats (from JSON numbers).
    Double,
    /// UTF-8 text (JSON strings; other values as their JSON text).
    Text,
    /// A UTC timestamp in milliseconds (`TIMESTAMP(MILLIS, true)`), from whole JSON numbers in
    /// time units of which `per_second` make a second.
    Timestamp {
        /// Time units per second (1: seconds, 1000: milliseconds).
        per_second: u64,
    },
}

/// Writes `rows` (one JSON value per column, `null` for none) under `columns` (name, type) to
/// `file` as Parquet; returns how many rows.
///
/// # Errors
/// A value that does not fit its column's type (naming the column and row), an I/O error, or,
/// in a build without the `parquet` feature, that Parquet is not built in.
pub fn write(
    file: File,
    columns: &[(String, ColumnType)],
    rows: impl Iterator<Item = Vec<serde_json::Value>>,
) -> Result<usize, String> {
    #[cfg(feature = "parquet")]
    {
        imp::write(file, columns, rows)
    }
    #[cfg(not(feature = "parquet"))]
    {
        let _ = (file, columns, rows.count());
        Err(
            "this xorflow was built without Parquet output: build it with `cargo build \
             --release -p xorflow-cli --features parquet` (on by default)"
                .into(),
        )
    }
}

#[cfg(feature = "parquet")]
mod imp {
    use super::{ColumnType, ROW_GROUP};
    use parquet::basic::{Compression, LogicalType, Repetition, TimeUnit, Type as Physical};
    use parquet::data_type::{ByteArray, ByteArrayType, DoubleType, Int64Type};
    use parquet::file::properties::WriterProperties;
    use parquet::file::writer::SerializedFileWriter;
    use parquet::schema::types::Type;
    use serde_json::Value;
    use std::fs::File;
    use std::sync::Arc;

    /// One column of a row group: its non-null values and a definition level per row.
    enum Values {
        Int64(Vec<i64>),
        Double(Vec<f64>),
        Text(Vec<ByteArray>),
    }

    fn schema(columns: &[(String, ColumnType)]) -> Result<Type, String> {
        let fields = columns.iter().map(|(name, t)| {
            let (physical, logical) = match t {
                ColumnType::Int64 => (Physical::INT64, None),
                ColumnType::Double => (Physical::DOUBLE, None),
                ColumnType::Text => (Physical::BYTE_ARRAY, Some(LogicalType::String)),
                ColumnType::Timestamp { .. } => (
                    Physical::INT64,
                    Some(LogicalType::timestamp(true, TimeUnit::MILLIS)),
                ),
            };
            Type::primitive_type_builder(name, physical)
                .with_repetition(Repetition::OPTIONAL)
                .with_logical_type(logical)
                .build()
                .map(Arc::new)
        });
        let fields = fields.collect::<Result<Vec<_>, _>>();
        let fields = fields.map_err(|e| format!("Parquet schema: {e}"))?;
        Type::group_type_builder("row")
            .with_fields(fields)
            .build()
            .map_err(|e| format!("Parquet schema: {e}"))
    }

    /// Column `c` of `rows` as values and definition levels.
    fn column(
        rows: &[Vec<Value>],
        c: usize,
        (name, t): &(String, ColumnType),
        first_row: usize,
    ) -> Result<(Values, Vec<i16>), String> {
        let bad = |i: usize, v: &Value| {
            format!(
                "row {}: column '{name}' holds {v}, not {t:?}",
                first_row + i + 1
            )
        };
        let whole = |v: &Value| {
            v.as_i64()
                .or_else(|| v.as_f64().filter(|x| x.fract() == 0.0).map(|x| x as i64))
        };
        let mut levels = Vec::with_capacity(rows.len());
        let mut values = match t {
            ColumnType::Int64 | ColumnType::Timestamp { .. } => Values::Int64(Vec::new()),
            ColumnType::Double => Values::Double(Vec::new()),
            ColumnType::Text => Values::Text(Vec::new()),
        };
        for (i, row) in rows.iter().enumerate() {
            let v = row.get(c).unwrap_or(&Value::Null);
            if v.is_null() {
                levels.push(0);
                continue;
            }
            levels.push(1);
            match (&mut values, t) {
                (Values::Int64(out), ColumnType::Timestamp { per_second }) => {
                    let units = whole(v).ok_or_else(|| bad(i, v))?;
                    out.push(units.saturating_mul(1000) / (*per_second).max(1) as i64);
                }
                (Values::Int64(out), _) => out.push(whole(v).ok_or_else(|| bad(i, v))?),
                (Values::Double(out), _) => out.push(v.as_f64().ok_or_else(|| bad(i, v))?),
                (Values::Text(out), _) => out.push(match v {
                    Value::String(s) => s.as_str().into(),
                    v => v.to_string().as_str().into(),
                }),
            }
        }
        Ok((values, levels))
    }

    pub(super) fn write(
        file: File,
        columns: &[(String, ColumnType)],
        rows: impl Iterator<Item = Vec<Value>>,
    ) -> Result<usize, String> {
        let err = |e: parquet::errors::ParquetError| format!("Parquet: {e}");
        let props = WriterProperties::builder()
            .set_compression(Compression::SNAPPY)
            .build();
        let schema = Arc::new(schema(columns)?);
        let mut w = SerializedFileWriter::new(file, schema, Arc::new(props)).map_err(err)?;
        let mut rows = rows.peekable();
        let mut n = 0;
        while rows.peek().is_some() {
            let group: Vec<Vec<Value>> = rows.by_ref().take(ROW_GROUP).collect();
            let mut rg = w.next_row_group().map_err(err)?;
            for (c, col) in columns.iter().enumerate() {
                let (values, levels) = column(&group, c, col, n)?;
                let mut cw = rg
                    .next_column()
                    .map_err(err)?
                    .ok_or("Parquet: fewer columns than the schema")?;
                let levels = Some(levels.as_slice());
                match values {
                    Values::Int64(v) => cw.typed::<Int64Type>().write_batch(&v, levels, None),
                    Values::Double(v) => cw.typed::<DoubleType>().write_batch(&v, levels, None),
                    Values::Text(v) => cw.typed::<ByteArrayType>().write_batch(&v, levels, None),
                }
                .map_err(err)?;
                cw.close().map_err(err)?;
            }
            rg.close().map_err(err)?;
            n += group.len();
        }
        w.close().map_err(err)?;
        Ok(n)
    }
}
