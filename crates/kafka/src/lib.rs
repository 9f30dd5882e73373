//! Kafka for xorflow (docs/kafka.md): a source whose positions are partition offsets recorded
//! in xorflow's checkpoints, a transactional sink committing once per completed checkpoint, and
//! topic administration. The client is librdkafka through the `rdkafka` crate.
//!
//! * [`uri`]: `kafka://HOST:PORT/TOPIC?key=value` addresses.
//! * [`settings`]: the client settings that matter, and why.
//! * [`admin`]: partitions of a topic, creating topics with settings.
//! * [`source`]: the source, [`KafkaSource`]; [`input`]: a job's input-topic options and counts.
//! * [`sink`]: the sink, [`KafkaSink`].
//! * [`producer`]: loading records into a topic; [`dump`]: reading one back.
//! * [`changelog`]: changelog state (the changelog thesis, docs/papers.md) in compacted topics.
//! * [`broker`]: a real broker for tests (`scripts/kafka.sh` on a free port).

pub mod admin;
pub mod broker;
pub mod changelog;
pub mod context;
pub mod dump;
pub mod input;
pub mod producer;
pub mod settings;
pub mod sink;
pub mod source;
pub mod uri;

pub use input::{InputCounts, InputOptions};
pub use sink::{Encoder, KafkaSink};
pub use source::{
    Decoded, Decoder, KafkaSource, RecordView, SkippedRecord, SourceConfig, SourceCounters,
    Watermark,
};
pub use uri::KafkaUri;
