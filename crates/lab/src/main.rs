//! `xorflow-lab`: the experiments beside the engine. The bench stand and its experiments
//! (`bench ...`), the peer engines (timely dataflow, Apache Flink, Apache Storm), the YSB
//! generator (`ysb generate`), the task-level CPU profiler (`profile`) and the wide-area delay
//! tools (`delay-router`, `delay-proxy`). It drives the `xorflow` binary beside it where an
//! experiment runs a job as a user would (`xorflow run ...`); users of the engine need only
//! `xorflow` (crates/cli).

use clap::{Parser, Subcommand};
use std::process::ExitCode;
use xorflow_cli::logging::{init_logging, LogArgs};

#[macro_use]
extern crate xorflow_cli;

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

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_logging(cli.log.log_format);
    match cli.command {
        Command::Bench { bench } => bench::run(bench),
        Command::Ysb { cmd } => ysb::tool(cmd),
        Command::Profile(a) => profile::run(a),
        Command::DelayProxy(a) => delay_proxy::run(a),
        Command::DelayRouter(a) => delay_router::run(a),
    }
}
