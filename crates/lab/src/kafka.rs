//! `xorflow-lab kafka produce-ysb`: loading a YSB events file into a topic for `xorflow-lab run
//! ysb --input kafka://...`. It was `xorflow kafka produce-ysb`; it moved with the YSB job
//! (crates/lab/src/ysb_job.rs) so that the engine's binary does not link examples/ysb. The
//! engine's other Kafka tools (`xorflow kafka produce-flights`, `consume`) stay in
//! crates/cli/src/kafka.rs.

use clap::{Args, Subcommand};
use std::path::PathBuf;
use xorflow_cli::outcome::CommandError;
use xorflow_cli::say;
use xorflow_cli::terminal::print_out;
use xorflow_kafka::KafkaUri;

/// Kafka tools of the lab.
#[derive(Subcommand)]
pub enum KafkaCmd {
    /// Load a YSB events file (`xorflow-lab ysb generate`'s kafka-json.txt) into a topic: one record
    /// per valid event, its JSON text verbatim, no key, stamped with its event time,
    /// round-robin over the partitions in file order (docs/ysb.md, "Kafka input").
    ProduceYsb(ProduceYsbArgs),
}

#[derive(Args)]
pub struct ProduceYsbArgs {
    /// The events file, one JSON event per line.
    #[arg(long, default_value = "data/ysb/kafka-json.txt")]
    input: PathBuf,
    /// The broker(s), HOST:PORT[,HOST:PORT...] (`scripts/kafka.sh start` prints it).
    #[arg(long, default_value = "127.0.0.1:9092")]
    bootstrap: String,
    /// The topic; created with --partitions partitions if it does not exist (the original's
    /// is "ad-events").
    #[arg(long, default_value = "ad-events")]
    topic: String,
    /// Partitions of a new topic (an existing one must have as many).
    #[arg(long, default_value_t = 1)]
    partitions: usize,
}

/// Runs a `kafka` subcommand; prints what it did on stdout, errors on stderr (exit 2).
pub fn run(cmd: KafkaCmd) -> Result<(), CommandError> {
    match cmd {
        KafkaCmd::ProduceYsb(a) => produce_ysb(&a),
    }
}

fn produce_ysb(a: &ProduceYsbArgs) -> Result<(), CommandError> {
    let uri = KafkaUri::parse(&format!("kafka://{}/{}", a.bootstrap, a.topic));
    let done = uri
        .and_then(|u| xorflow_ysb::kafka::produce_ysb(&a.input, &u, a.partitions).map(|p| (u, p)));
    let (uri, p) = done.map_err(CommandError::Input)?;
    for (line, why) in &p.malformed_examples {
        say!("warning: skipped {} line {line}: {why}", a.input.display());
    }
    let line = format!(
        "produce-ysb: {} events ({} malformed lines skipped) -> {uri} ({} partitions, {})\n",
        p.events,
        p.malformed,
        p.partitions,
        if p.created {
            "created"
        } else {
            "appended to an existing topic"
        }
    );
    print_out(&line)
}
