//! `xorflow-lab`: the experiments beside the engine. The bench stand and its experiments
//! (`bench ...`), the peer engines (timely dataflow, Apache Flink, Apache Storm), the YSB
//! generator (`ysb generate`), the task-level CPU profiler (`profile`) and the wide-area delay
//! tools (`delay-router`, `delay-proxy`). It drives the `xorflow` binary beside it where an
//! experiment runs a job as a user would (`xorflow run ...`); users of the engine need only
//! `xorflow` (crates/cli).

use clap::{Parser, Subcommand};
use std::path::PathBuf;
use xorflow_cli::logging::{init_logging, LogArgs};
use xorflow_cli::outcome::{finish, CommandError, Outcome};

use xorflow_cli::terminal::print_out;

mod bench;
mod congestion;
mod cpu;
mod delay_proxy;
mod delay_router;
mod profile;
mod sustainable;
mod wan;
mod ysb;

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
    /// Yahoo Streaming Benchmark tools (docs/ysb.md).
    Ysb {
        #[command(subcommand)]
        cmd: ysb::YsbCmd,
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

/// Runs the command; its [`Outcome`] is the exit status (`crates/cli/src/outcome.rs`). The
/// delay tools print their own failures (their lines are read by scripts).
fn main() -> Outcome {
    let cli = Cli::parse();
    init_logging(cli.log.log_format);
    match cli.command {
        Command::Bench { bench } => finish(bench::run(bench)),
        Command::Ysb { cmd } => finish(ysb::tool(cmd)),
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
