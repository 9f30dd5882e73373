//! `'connector' = 'kafka'`: a topic read by the Kafka source (crates/kafka/src/source.rs:
//! partitions over the source instances, offsets in checkpoints, per-partition watermarks as
//! Flink's) and written by the transactional sink (crates/kafka/src/sink.rs: one transaction
//! per checkpoint, exactly once). `'format' = 'json'`: one JSON object per record, the columns
//! by name, timestamps as Flink's SQL text; a changelog's records get an `"op"` field (`+I`,
//! `-U`, `+U`, `-D`).

use super::json_format::JsonFormat;
use crate::catalog::Table;
use crate::changelog::RowKind;
use crate::types::{format_timestamp, Row, Value};
use std::sync::Arc;
use std::time::Duration;
use xorflow_kafka::source::{
    Decoded, Decoder, RecordView, SourceConfig, SourceCounters, Watermark,
};
use xorflow_kafka::{Encoder, KafkaUri};
use xorflow_runtime::{Element, Time};

/// The options a Kafka table takes.
const OPTIONS: &str = "'topic', 'properties.bootstrap.servers', 'format' = 'json', \
                       'scan.startup.mode' = 'earliest-offset', 'scan.bounded.mode' = \
                       'unbounded' | 'latest-offset', 'scan.watermark.idle-timeout'";

/// The topic a Kafka table names.
///
/// # Errors
/// A missing topic or broker, a format other than JSON, a startup mode other than the
/// earliest offset, an option not listed in [`OPTIONS`].
pub fn uri_of(table: &Table) -> Result<KafkaUri, String> {
    let name = |e: String| format!("table '{}': {e}", table.name);
    for k in table.options.keys() {
        let known = matches!(
            k.as_str(),
            "connector"
                | "topic"
                | "properties.bootstrap.servers"
                | "format"
                | "scan.startup.mode"
                | "scan.bounded.mode"
                | "scan.watermark.idle-timeout"
                | "properties.group.id"
                | "sink.partitioner"
        );
        if !known {
            return Err(name(format!(
                "unknown option '{k}' of the kafka connector ({OPTIONS})"
            )));
        }
    }
    let need = |k: &str| {
        table
            .option(k)
            .ok_or_else(|| name(format!("the kafka connector needs '{k}'")))
    };
    let (topic, servers) = (need("topic")?, need("properties.bootstrap.servers")?);
    match table.option("format") {
        Some("json") => {}
        other => {
            return Err(name(format!(
                "the kafka connector reads 'format' = 'json' (not {other:?})"
            )))
        }
    }
    match table.option("scan.startup.mode") {
        None | Some("earliest-offset") => {}
        Some(other) => {
            return Err(name(format!(
                "'scan.startup.mode' = '{other}': only 'earliest-offset' (positions after that are \
                 xorflow's checkpoints, not the consumer group's)"
            )))
        }
    }
    KafkaUri::parse(&format!("kafka://{servers}/{topic}")).map_err(name)
}

/// The source over a Kafka table for `instances` instances: asks the broker for the topic's
/// partitions (a missing topic or a broker that does not answer fails here, before the job).
///
/// # Errors
/// What [`uri_of`] refuses; the broker's answer.
pub fn source_config(table: &Table, instances: usize) -> Result<SourceConfig, String> {
    let uri = uri_of(table)?;
    let bounded = match table.option("scan.bounded.mode") {
        None | Some("unbounded") => false,
        Some("latest-offset") => true,
        Some(other) => {
            return Err(format!(
                "table '{}': 'scan.bounded.mode' = '{other}': 'unbounded' or 'latest-offset'",
                table.name
            ))
        }
    };
    let idle_timeout = match table.option("scan.watermark.idle-timeout") {
        Some(t) => humantime_ms(t).ok_or_else(|| {
            format!(
                "table '{}': 'scan.watermark.idle-timeout' = '{t}': a duration like '10 s'",
                table.name
            )
        })?,
        None => Duration::from_secs(10),
    };
    let lateness = table.rowtime.map_or(0, |r| r.delay_ms.max(0) as Time);
    let partitions = xorflow_kafka::admin::partitions(&uri, xorflow_kafka::input::METADATA_TIMEOUT)
        .map_err(|e| format!("table '{}': {e}", table.name))?;
    Ok(SourceConfig {
        uri,
        partitions,
        instances,
        watermark: Watermark::EventTime { lateness },
        idle_timeout,
        bounded,
        speed: None,
    })
}

/// `10 s`, `500 ms`, `1 min` (Flink's duration text) as a duration.
fn humantime_ms(t: &str) -> Option<Duration> {
    let t = t.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (n, unit) = (t[..split].parse::<u64>().ok()?, t[split..].trim());
    Some(match unit {
        "ms" => Duration::from_millis(n),
        "" | "s" | "sec" => Duration::from_secs(n),
        "min" => Duration::from_secs(60 * n),
        _ => return None,
    })
}

/// Decodes JSON records into rows of a table's schema.
#[derive(Clone)]
pub struct JsonRows {
    format: Arc<JsonFormat>,
}

impl JsonRows {
    /// The decoder of `table`'s records.
    pub fn new(table: &Table) -> Self {
        JsonRows {
            format: Arc::new(JsonFormat::new(
                &table.schema,
                table.rowtime.map(|r| r.column),
                None,
            )),
        }
    }
}

impl Decoder<Row> for JsonRows {
    fn decode(&mut self, record: &RecordView<'_>) -> Decoded<Row> {
        match self.format.decode(record.payload) {
            Ok((t, row)) => Decoded::Element(t.max(0) as Time, row),
            Err(why) => Decoded::Malformed(why),
        }
    }
}

/// Encodes rows as JSON records (no key).
pub struct JsonRecords {
    columns: Vec<String>,
    changelog: bool,
}

impl JsonRecords {
    /// The encoder of rows with `columns` (a changelog's rows carry their kind).
    pub fn new(columns: Vec<String>, changelog: bool) -> Self {
        JsonRecords { columns, changelog }
    }
}

impl Encoder<Row> for JsonRecords {
    fn encode(&mut self, element: &Element<Row>, key: &mut Vec<u8>, value: &mut Vec<u8>) {
        key.clear();
        value.clear();
        let row = &element.data;
        let mut obj = serde_json::Map::new();
        let n = match self.changelog {
            true => {
                obj.insert("op".into(), RowKind::of(row).short().into());
                row.len() - 1
            }
            false => row.len(),
        };
        for (c, v) in self.columns.iter().zip(&row[..n]) {
            obj.insert(c.clone(), to_json(v));
        }
        let _ = serde_json::to_writer(value, &obj);
    }
}

/// A value as a JSON record holds it: timestamps as Flink's SQL text.
pub fn to_json(v: &Value) -> serde_json::Value {
    match v {
        Value::Timestamp(ms) => serde_json::Value::String(format_timestamp(*ms)),
        v => v.to_json(),
    }
}

/// The counters of a table's Kafka source instances, for the run's summary.
pub type Counters = Arc<SourceCounters>;
