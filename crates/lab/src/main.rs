//! `xorflow-lab`: the experiments beside the engine. The bench stand and its experiments
//! (`bench ...`), the peer engines (timely dataflow, Apache Flink, Apache Storm), the Yahoo
//! Streaming Benchmark (its job, `run ysb`; its generator, `ysb generate`; loading its events
//! into Kafka, `kafka produce-ysb`), the task-level CPU profiler (`profile`) and the wide-area
//! delay tools (`delay-router`, `delay-proxy`). It drives the `xorflow` binary beside it where an
//! experiment runs a job as a user would (`xorflow run ...`); users of the engine need only
//! `xorflow` (crates/cli).

/// The allocator of `xorflow` (crates/cli/src/main.rs), so the lab measures the engine as users
/// run it.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use std::path::PathBuf;
use xorflow_cli::job_file;
use xorflow_cli::logging::{init_logging, LogArgs};
use xorflow_cli::outcome::{finish, CommandError, Outcome};

use xorflow_cli::terminal::print_out;

mod bench;
mod congestion;
mod cpu;
mod delay_proxy;
mod delay_router;
mod kafka;
mod nexmark;
mod profile;
mod sustainable;
mod wan;
mod ysb;
mod ysb_job;

#[derive(Parser)]
#[command(
    name = "xorflow-lab",
    version,
    about = "The experiments beside xorflow: bench stand, peers, profiler, wide-area delay"
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
    /// Run a benchmark.
    Bench {
        #[command(subcommand)]
        bench: bench::Bench,
    },
    /// Run a job: the Yahoo Streaming Benchmark's (docs/ysb.md).
    Run {
        /// A job file (TOML): `job = "ysb"` and an [options] table holding any option of the
        /// job by its long name; options on the command line override it (docs/jobs.md).
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
        #[command(subcommand)]
        job: Job,
    },
    /// Yahoo Streaming Benchmark tools (docs/ysb.md).
    Ysb {
        #[command(subcommand)]
        cmd: ysb::YsbCmd,
    },
    /// Kafka tools of the lab (docs/ysb.md, "Kafka input"); the engine's are `xorflow kafka`.
    Kafka {
        #[command(subcommand)]
        cmd: kafka::KafkaCmd,
    },
    /// Task-level CPU profile of a command or running processes (the CPU-efficiency paper,
    /// docs/papers.md; docs/profile.md).
    Profile(profile::ProfileArgs),
    /// A TCP proxy that adds a round-trip time to every connection through it: `--rtt` for
    /// engines other than xorflow (docs/wan.md).
    DelayProxy(delay_proxy::DelayProxyArgs),
    /// Network namespaces joined by a router that delays every IP packet by its pair's RTT:
    /// wide-area delay for whole processes of any engine, kernel TCP included (docs/wan.md).
    DelayRouter(delay_router::DelayRouterArgs),
}

// An option given twice takes its last value, so the command line overrides a job file
// (crates/cli/src/job_file.rs), as in `xorflow run`.
#[derive(Subcommand)]
enum Job {
    /// The Yahoo Streaming Benchmark in catch-up mode: views per ad campaign in 10 s windows
    /// from a file of JSON ad events (docs/ysb.md).
    #[command(args_override_self = true)]
    Ysb(ysb_job::YsbArgs),
}

/// Runs the command; its [`Outcome`] is the exit status (`crates/cli/src/outcome.rs`). The
/// delay tools print their own failures (their lines are read by scripts).
fn main() -> Outcome {
    // `--help` short, `--help-all` every option, as the engine's (`xorflow_cli::help`).
    let command = || xorflow_cli::help::short_and_all(Cli::command());
    let argv = match job_file::expand(std::env::args_os().collect(), &command()) {
        Ok(v) => v,
        Err(e) => return finish(Err(CommandError::Config(e))),
    };
    let matches = command().get_matches_from(argv);
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    init_logging(cli.log.log_format);
    match cli.command {
        Command::Bench { bench } => finish(bench::run(bench)),
        Command::Run {
            job: Job::Ysb(a), ..
        } => finish(ysb_job::run(a)),
        Command::Ysb { cmd } => finish(ysb::tool(cmd)),
        Command::Kafka { cmd } => finish(kafka::run(cmd)),
        Command::Profile(a) => finish(profile::run(a)),
        Command::DelayProxy(a) => delay_proxy::run(a),
        Command::DelayRouter(a) => delay_router::run(a),
    }
}

/// This binary, which the stand runs as `xorflow` (with the real `xorflow` beside it).
///
/// # Errors
/// It cannot be found (the lab's failure).
fn own_exe() -> Result<PathBuf, CommandError> {
    std::env::current_exe()
        .map_err(|e| CommandError::Engine(format!("cannot find own executable: {e}")))
}
