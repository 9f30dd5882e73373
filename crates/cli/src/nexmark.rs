//! `xorflow nexmark ...`: Nexmark benchmark data (the generator is crates/nexmark,
//! `xorflow-nexmark`; its crate doc says what it follows and how it differs from Flink's).

use clap::{Args, Subcommand};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;
use xorflow_cli::outcome::CommandError;
use xorflow_kafka::admin;
use xorflow_kafka::producer::Loader;
use xorflow_kafka::KafkaUri;
use xorflow_nexmark::{
    write_json, EventKind, Generator, NexmarkConfig, DEFAULT_BASE_TIME_MS, MAX_BASE_TIME_MS,
    MIN_BASE_TIME_MS,
};
use xorflow_runtime::connectors::output_file::{commit_all, PendingFile};

/// Nexmark tools.
#[derive(Subcommand)]
pub enum NexmarkCmd {
    /// Generate Nexmark events (people, auctions, bids) as JSON lines, one file or topic per
    /// kind. Deterministic: the same --events, --seed, --base-time and --rate give the same
    /// bytes. Flink Nexmark's default proportions (1:3:46), sizes and hot ratios.
    #[command(after_help = GENERATE_EXAMPLES)]
    Generate(GenerateArgs),
}

/// Examples in `xorflow nexmark generate --help`.
const GENERATE_EXAMPLES: &str = "Examples:
  xorflow nexmark generate --events 1000000 --out data/nexmark
  xorflow nexmark generate --events 1000000 --seed 7 --rate 1000 --out data/nexmark
  xorflow nexmark generate --events 1000000 --kafka 127.0.0.1:9092";

#[derive(Args)]
pub struct GenerateArgs {
    /// Number of events, at least 1: event numbers 0 to N-1 (of 50 events, 1 person, 3
    /// auctions and 46 bids).
    #[arg(long, value_name = "N")]
    events: u64,
    /// An existing directory to write person.json, auction.json and bid.json to (JSON lines
    /// with the Nexmark DDL's fields, in event order); each replaces its file only once all
    /// are written.
    #[arg(long, value_name = "DIR", required_unless_present = "kafka")]
    out: Option<PathBuf>,
    /// The seed of every random choice.
    #[arg(long, value_name = "S", default_value_t = 0)]
    seed: u64,
    /// The timestamp of event 0, in ms since the Unix epoch (UTC); default 2015-07-15T00:00:00Z.
    #[arg(long, value_name = "MS", default_value_t = DEFAULT_BASE_TIME_MS, allow_negative_numbers = true)]
    base_time: i64,
    /// Events per second of event time (Nexmark's first-event.rate): event n is at
    /// base-time + n * 1000 / rate ms. It spaces the timestamps only: events are generated as
    /// fast as they can be.
    #[arg(long, value_name = "EVENTS_PER_S", default_value_t = 10_000)]
    rate: u64,
    /// Instead of files, write to the topics person, auction and bid of this broker (created with
    /// one partition and no time-based retention if they do not exist, appended to if they do),
    /// one JSON value per event, stamped with its event time.
    #[arg(long, value_name = "HOST:PORT", conflicts_with = "out")]
    kafka: Option<String>,
}

/// Runs a `nexmark` subcommand; prints one summary line on stdout, errors on stderr (exit 2).
pub fn run(cmd: NexmarkCmd) -> Result<(), CommandError> {
    match cmd {
        NexmarkCmd::Generate(a) => generate(&a),
    }
}

/// What was generated: events and bytes per kind (person, auction, bid).
#[derive(Default)]
struct Written {
    events: [u64; 3],
    bytes: [u64; 3],
}

impl Written {
    fn add(&mut self, kind: EventKind, bytes: usize) {
        let k = usize::from(kind.event_type());
        self.events[k] += 1;
        self.bytes[k] += bytes as u64;
    }
}

fn generate(a: &GenerateArgs) -> Result<(), CommandError> {
    let config = config_of(a)?;
    let start = Instant::now();
    let (written, target) = match (&a.kafka, &a.out) {
        (Some(bootstrap), _) => to_kafka(&config, bootstrap)?,
        (None, Some(dir)) => to_files(&config, dir)?,
        (None, None) => return Err(CommandError::Config("give --out DIR or --kafka".into())),
    };
    let [p, au, b] = written.events;
    let line = format!(
        "nexmark: {} events ({p} person, {au} auction, {b} bid), {} bytes -> {target} in {:.2} s\n",
        p + au + b,
        written.bytes.iter().sum::<u64>(),
        start.elapsed().as_secs_f64()
    );
    crate::print_out(&line)
}

fn config_of(a: &GenerateArgs) -> Result<NexmarkConfig, CommandError> {
    if a.events == 0 {
        return Err(CommandError::Config(
            "--events 0: nothing to generate; give at least 1".into(),
        ));
    }
    if a.rate == 0 {
        return Err(CommandError::Config(
            "--rate 0: the rate is in events per second, at least 1".into(),
        ));
    }
    if !(MIN_BASE_TIME_MS..=MAX_BASE_TIME_MS).contains(&a.base_time) {
        return Err(CommandError::Config(format!(
            "--base-time {}: outside years 1 to 9998 ({MIN_BASE_TIME_MS} to {MAX_BASE_TIME_MS} \
             ms since the epoch)",
            a.base_time
        )));
    }
    let config = NexmarkConfig {
        events: a.events,
        seed: a.seed,
        base_time_ms: a.base_time,
        first_event_rate: a.rate,
        next_event_rate: a.rate,
        ..NexmarkConfig::default()
    };
    config
        .validate()
        .map_err(|e| CommandError::Config(e.to_string()))?;
    Ok(config)
}

/// Writes DIR/person.json, DIR/auction.json and DIR/bid.json, each to a temporary file beside
/// it, renamed into place once all three are written.
fn to_files(config: &NexmarkConfig, dir: &Path) -> Result<(Written, String), CommandError> {
    let out = |m: String| CommandError::Output(m);
    match std::fs::metadata(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(out(format!("--out '{}': no such directory", dir.display())))
        }
        Err(e) => return Err(out(format!("--out '{}': {e}", dir.display()))),
        Ok(m) if !m.is_dir() => {
            return Err(out(format!("--out '{}' is not a directory", dir.display())))
        }
        Ok(_) => {}
    }
    let files = EventKind::ALL
        .iter()
        .map(|k| PendingFile::create(&dir.join(format!("{}.json", k.name())), "output"))
        .collect::<Result<Vec<_>, _>>()
        .map_err(out)?;
    let mut writers = files
        .iter()
        .map(|f| f.file().map(|h| BufWriter::with_capacity(1 << 20, h)))
        .collect::<Result<Vec<BufWriter<File>>, _>>()
        .map_err(out)?;
    let cannot = |f: &PendingFile, e: &dyn std::fmt::Display| {
        out(format!(
            "cannot write {} '{}': {e}",
            f.what(),
            f.target().display()
        ))
    };
    let mut written = Written::default();
    let mut line = Vec::with_capacity(1024);
    for (_, e) in Generator::new(config.clone()) {
        let k = usize::from(e.kind().event_type());
        line.clear();
        // Writing to a Vec cannot fail.
        let _ = write_json(&e, &mut line);
        line.push(b'\n');
        writers[k]
            .write_all(&line)
            .map_err(|err| cannot(&files[k], &err))?;
        written.add(e.kind(), line.len());
    }
    for (w, f) in writers.into_iter().zip(&files) {
        w.into_inner().map_err(|e| cannot(f, e.error()))?;
    }
    commit_all(files).map_err(out)?;
    let target = dir.join("{person,auction,bid}.json");
    Ok((written, target.display().to_string()))
}

/// Writes the topics person, auction and bid of `bootstrap`.
fn to_kafka(config: &NexmarkConfig, bootstrap: &str) -> Result<(Written, String), CommandError> {
    let mut loaders = Vec::with_capacity(3);
    let mut created = Vec::new();
    for k in EventKind::ALL {
        let uri = KafkaUri::parse(&format!("kafka://{bootstrap}/{}", k.name()))
            .map_err(|e| CommandError::Config(format!("--kafka: {e}")))?;
        // The events are stamped with their event times (2015 by default): time-based retention
        // (7 days by default) would delete them at the broker's next check.
        if admin::topic_for_loading(&uri, 1, &[("retention.ms", "-1")])
            .map_err(CommandError::Output)?
            == admin::Created::Created
        {
            created.push(k.name());
        }
        loaders.push(Loader::new(&uri).map_err(CommandError::Output)?);
    }
    let mut written = Written::default();
    let mut value = Vec::with_capacity(1024);
    for (_, e) in Generator::new(config.clone()) {
        let k = usize::from(e.kind().event_type());
        value.clear();
        // Writing to a Vec cannot fail.
        let _ = write_json(&e, &mut value);
        loaders[k]
            .send(0, e.date_time_ms(), None, &value)
            .map_err(CommandError::Output)?;
        written.add(e.kind(), value.len());
    }
    for l in loaders {
        l.finish().map_err(CommandError::Output)?;
    }
    let created = if created.is_empty() {
        "appended to existing topics".to_string()
    } else {
        format!("created {}", created.join(", "))
    };
    Ok((
        written,
        format!("kafka://{bootstrap}/{{person,auction,bid}} ({created})"),
    ))
}
