//! `'connector' = 'upsert-kafka'`, a sink: a query's changelog written as Flink's upsert-kafka
//! writes it, so that a compacted topic (or any reader keeping the last record per key) holds the
//! query's result table. The table declares `PRIMARY KEY (...) NOT ENFORCED`; each record's key
//! is a JSON object of the key columns (`'key.format' = 'json'`), its value a JSON object of every
//! column (`'value.format' = 'json'`, `'value.fields-include' = 'ALL'`):
//!
//! - an insert (`+I`) or an update's new row (`+U`): a record with the row as its value;
//! - a deletion (`-D`): a tombstone (the key with a null value);
//! - an update's old row (`-U`): nothing when the next row of the same batch is its `+U` with
//!   the same key (an aggregate emits the two together), else a tombstone, so a key that an
//!   update moved away from does not keep a stale row.
//!
//! Records go through the transactional Kafka sink (crates/kafka/src/sink.rs: one transaction per
//! checkpoint, exactly once for `read_committed` readers). Rows reach the sink instances by a hash
//! of the key, so every change of a key is written by one instance, in order, into one partition
//! (the key's hash picks it).

use super::kafka::to_json;
use crate::catalog::Table;
use crate::changelog::RowKind;
use crate::types::{Row, Value};
use xorflow_kafka::sink::Emit;
use xorflow_kafka::{Encoder, KafkaUri};
use xorflow_runtime::Element;

/// The options an upsert-kafka table takes.
const OPTIONS: &str = "'topic', 'properties.bootstrap.servers', 'key.format' = 'json', \
                       'value.format' = 'json', 'value.fields-include' = 'ALL'";

/// The topic an upsert-kafka table names, and its key columns.
///
/// # Errors
/// No `PRIMARY KEY`, a missing topic, broker or format, a format other than JSON, an option not
/// listed in [`OPTIONS`].
pub fn uri_of(table: &Table) -> Result<KafkaUri, String> {
    let name = |e: String| format!("table '{}': {e}", table.name);
    for k in table.options.keys() {
        let known = matches!(
            k.as_str(),
            "connector"
                | "topic"
                | "properties.bootstrap.servers"
                | "key.format"
                | "value.format"
                | "value.fields-include"
        );
        if !known {
            return Err(name(format!(
                "unknown option '{k}' of the upsert-kafka connector ({OPTIONS})"
            )));
        }
    }
    if table.primary_key.is_empty() {
        return Err(name(
            "the upsert-kafka connector needs PRIMARY KEY (...) NOT ENFORCED: its columns are \
             each record's key"
                .into(),
        ));
    }
    let need = |k: &str| {
        table.option(k).ok_or_else(|| {
            name(format!(
                "the upsert-kafka connector needs '{k}' ({OPTIONS})"
            ))
        })
    };
    let (topic, servers) = (need("topic")?, need("properties.bootstrap.servers")?);
    for k in ["key.format", "value.format"] {
        match need(k)? {
            "json" => {}
            other => return Err(name(format!("'{k}' = '{other}': only 'json'"))),
        }
    }
    match table.option("value.fields-include") {
        None | Some("ALL") => {}
        Some(other) => {
            return Err(name(format!(
                "'value.fields-include' = '{other}': only 'ALL' (the value holds every column)"
            )))
        }
    }
    KafkaUri::parse(&format!("kafka://{servers}/{topic}")).map_err(name)
}

/// Encodes a changelog (or append-only rows) as upsert records (see the module doc).
pub struct UpsertRecords {
    columns: Vec<String>,
    key: Vec<usize>,
    changelog: bool,
    /// The key of an update's old row (`-U`) not yet known to be followed by its new row.
    held: Option<Vec<u8>>,
}

impl UpsertRecords {
    /// The encoder of rows with `columns`, keyed by the columns `key`; `changelog`: the rows
    /// carry their kind as a last value (crates/sql/src/changelog.rs).
    pub fn new(columns: Vec<String>, key: Vec<usize>, changelog: bool) -> Self {
        UpsertRecords {
            columns,
            key,
            changelog,
            held: None,
        }
    }

    fn write_key(&self, row: &[Value], out: &mut Vec<u8>) {
        let fields = self.key.iter().map(|&c| (&self.columns[c], &row[c]));
        write_object(fields, out);
    }
}

/// `{"name":value,...}` in the order given, as Flink's JSON format writes a row: the same key
/// always makes the same bytes, which compaction and partitioning go by.
fn write_object<'a>(fields: impl Iterator<Item = (&'a String, &'a Value)>, out: &mut Vec<u8>) {
    out.clear();
    out.push(b'{');
    for (i, (name, v)) in fields.enumerate() {
        if i > 0 {
            out.push(b',');
        }
        let _ = serde_json::to_writer(&mut *out, name);
        out.push(b':');
        let _ = serde_json::to_writer(&mut *out, &to_json(v));
    }
    out.push(b'}');
}

impl Encoder<Row> for UpsertRecords {
    fn encode(&mut self, element: &Element<Row>, key: &mut Vec<u8>, value: &mut Vec<u8>) {
        let row = &element.data;
        let n = row.len() - usize::from(self.changelog);
        self.write_key(&row[..n], key);
        write_object(self.columns.iter().zip(&row[..n]), value);
    }

    fn encode_records(
        &mut self,
        element: &Element<Row>,
        key: &mut Vec<u8>,
        value: &mut Vec<u8>,
        emit: &mut Emit<'_>,
    ) -> Result<(), String> {
        let row = &element.data;
        let kind = match self.changelog {
            true => RowKind::of(row),
            false => RowKind::Insert,
        };
        let n = row.len() - usize::from(self.changelog);
        self.write_key(&row[..n], key);
        if let Some(old) = self.held.take() {
            let replaced = kind == RowKind::UpdateAfter && old == *key;
            if !replaced {
                emit(&old, None)?;
            }
        }
        match kind {
            RowKind::Insert | RowKind::UpdateAfter => {
                self.encode(element, key, value);
                emit(key, Some(value))
            }
            RowKind::UpdateBefore => {
                self.held = Some(key.clone());
                Ok(())
            }
            RowKind::Delete => emit(key, None),
        }
    }

    fn end_batch(&mut self, emit: &mut Emit<'_>) -> Result<(), String> {
        match self.held.take() {
            Some(old) => emit(&old, None),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn el(values: Vec<Value>) -> Element<Row> {
        Element::new(0, values)
    }

    /// The records `rows` make in one batch: (key, value or None for a tombstone), as text.
    fn records(enc: &mut UpsertRecords, rows: Vec<Row>) -> Vec<(String, Option<String>)> {
        let mut out = Vec::new();
        let (mut k, mut v) = (Vec::new(), Vec::new());
        let mut emit = |k: &[u8], v: Option<&[u8]>| {
            let text = |b: &[u8]| String::from_utf8(b.to_vec()).unwrap();
            out.push((text(k), v.map(text)));
            Ok(())
        };
        for r in rows {
            enc.encode_records(&el(r), &mut k, &mut v, &mut emit)
                .unwrap();
        }
        enc.end_batch(&mut emit).unwrap();
        out
    }

    fn row(id: i64, n: i64, kind: RowKind) -> Row {
        kind.push(vec![Value::Int(id), Value::Int(n)])
    }

    #[test]
    fn an_update_is_one_record_a_delete_a_tombstone() {
        let mut enc = UpsertRecords::new(vec!["id".into(), "n".into()], vec![0], true);
        let got = records(
            &mut enc,
            vec![
                row(1, 1, RowKind::Insert),
                row(1, 1, RowKind::UpdateBefore),
                row(1, 2, RowKind::UpdateAfter),
                row(2, 5, RowKind::Insert),
                row(2, 5, RowKind::Delete),
            ],
        );
        let k1 = r#"{"id":1}"#.to_string();
        let k2 = r#"{"id":2}"#.to_string();
        assert_eq!(
            got,
            vec![
                (k1.clone(), Some(r#"{"id":1,"n":1}"#.into())),
                (k1, Some(r#"{"id":1,"n":2}"#.into())),
                (k2.clone(), Some(r#"{"id":2,"n":5}"#.into())),
                (k2, None),
            ]
        );
    }

    #[test]
    fn an_old_row_not_replaced_under_its_key_is_deleted() {
        // -U under key 1 followed by +U under key 2 (the key moved), and a -U ending a batch.
        let mut enc = UpsertRecords::new(vec!["id".into(), "n".into()], vec![0], true);
        let got = records(
            &mut enc,
            vec![
                row(1, 1, RowKind::UpdateBefore),
                row(2, 1, RowKind::UpdateAfter),
                row(3, 1, RowKind::UpdateBefore),
            ],
        );
        let k = |i: i64| format!(r#"{{"id":{i}}}"#);
        assert_eq!(
            got,
            vec![
                (k(1), None),
                (k(2), Some(r#"{"id":2,"n":1}"#.into())),
                (k(3), None),
            ]
        );
    }

    #[test]
    fn append_only_rows_are_upserts() {
        let mut enc = UpsertRecords::new(vec!["a".into(), "b".into()], vec![1, 0], false);
        let got = records(&mut enc, vec![vec![Value::Int(7), Value::Int(8)]]);
        assert_eq!(
            got,
            vec![(r#"{"b":8,"a":7}"#.into(), Some(r#"{"a":7,"b":8}"#.into()))]
        );
    }
}
