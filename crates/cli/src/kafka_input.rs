//! The options of a job's input topic (`--input kafka://...`), in the library so that both
//! binaries' jobs read a topic with one set of flags (`xorflow run flights`,
//! crates/cli/src/main.rs; `xorflow-lab run ysb`, crates/lab/src/ysb_job.rs).

use clap::Args;
use std::path::Path;
use std::time::Duration;
use xorflow_kafka::KafkaUri;

/// The options of a job that reads a topic (`--input kafka://...`).
#[derive(Args)]
pub struct KafkaInputArgs {
    /// With a Kafka input: a partition without records for this long stops holding the
    /// windows back (Flink's idleness).
    #[arg(help_heading = "Input and output", hide_short_help = true, long, default_value = "10s",
          value_parser = humantime::parse_duration)]
    kafka_idle_timeout: Duration,
    /// With a Kafka input: keep reading at the end of the partitions (default: end there).
    #[arg(help_heading = "Input and output", hide_short_help = true, long)]
    kafka_follow: bool,
}

impl KafkaInputArgs {
    /// The job's input options.
    pub fn options(&self) -> xorflow_kafka::InputOptions {
        xorflow_kafka::InputOptions {
            idle_timeout: self.kafka_idle_timeout,
            follow: self.kafka_follow,
        }
    }
}

/// The topic `path` names (`kafka://HOST:PORT/TOPIC`), or `None` for a file.
///
/// # Errors
/// A malformed Kafka address, prefixed with `flag`.
pub fn topic_of(flag: &str, path: &Path) -> Result<Option<KafkaUri>, String> {
    let text = path.to_string_lossy();
    (KafkaUri::is_kafka(&text).then(|| KafkaUri::parse(&text)))
        .transpose()
        .map_err(|e| format!("{flag}: {e}"))
}
