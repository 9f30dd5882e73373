//! Reading a whole topic to its end, committed records only (`xorflow kafka consume`, the
//! sink's commit markers, tests).

use crate::context::Quiet;
use crate::settings::{self, BROKER_TIMEOUT};
use crate::uri::KafkaUri;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::message::Message;
use rdkafka::{Offset, TopicPartitionList};
use std::time::{Duration, Instant};

/// A record read back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredRecord {
    /// Its partition.
    pub partition: i32,
    /// Its offset.
    pub offset: i64,
    /// Its key, if any.
    pub key: Option<Vec<u8>>,
    /// Its value (empty for a null value).
    pub value: Vec<u8>,
}

/// Every committed record of `uri`'s topic (`read_committed`: records of aborted or open
/// transactions are left out), from each partition's start to its end as of the read,
/// partition by partition in offset order.
///
/// A partition's "end" for a `read_committed` reader is its last stable offset: the read stops
/// before the first record of a transaction still open (librdkafka reports the partition's end
/// there), and leaves out any record after it, committed or not, until that transaction ends.
///
/// # Errors
/// The broker is unreachable, the topic missing, or the read does not end within the broker
/// timeout.
pub fn read_topic(uri: &KafkaUri) -> Result<Vec<StoredRecord>, String> {
    let partitions = crate::admin::partitions(uri, BROKER_TIMEOUT)?;
    read_partitions(uri, &(0..partitions as i32).collect::<Vec<_>>())
}

/// [`read_topic`] of `partitions` of `uri`'s topic only (a sink instance's own partition of its
/// commit markers: `sink.rs`).
///
/// # Errors
/// As [`read_topic`].
pub fn read_partitions(uri: &KafkaUri, partitions: &[i32]) -> Result<Vec<StoredRecord>, String> {
    let c: BaseConsumer<Quiet> = settings::consumer(uri, "xorflow-reader")
        .create_with_context(Quiet::default())
        .map_err(|e| format!("{uri}: cannot create a consumer: {e}"))?;
    let mut tpl = TopicPartitionList::new();
    for &p in partitions {
        tpl.add_partition_offset(&uri.topic, p, Offset::Beginning)
            .map_err(|e| format!("{uri}: {e}"))?;
    }
    c.assign(&tpl).map_err(|e| format!("{uri}: {e}"))?;
    let mut out = Vec::new();
    let mut ended: std::collections::HashMap<i32, bool> =
        partitions.iter().map(|&p| (p, false)).collect();
    let start = Instant::now();
    while ended.values().any(|e| !e) {
        if start.elapsed() > BROKER_TIMEOUT {
            return Err(format!(
                "{uri}: the topic was not read to its end within {} s",
                BROKER_TIMEOUT.as_secs()
            ));
        }
        match c.poll(Duration::from_millis(100)) {
            Some(Ok(m)) => out.push(StoredRecord {
                partition: m.partition(),
                offset: m.offset(),
                key: m.key().map(<[u8]>::to_vec),
                value: m.payload().unwrap_or_default().to_vec(),
            }),
            Some(Err(KafkaError::PartitionEOF(p))) => {
                if let Some(e) = ended.get_mut(&p) {
                    *e = true;
                }
            }
            Some(Err(e)) => return Err(format!("{uri}: {e}")),
            None => {}
        }
    }
    out.sort_by_key(|r| (r.partition, r.offset));
    Ok(out)
}
