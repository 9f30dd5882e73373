//! `xorflow-lab bench ...`: the bench stand's experiments, each a subcommand (docs/bench-stand.md).
//! Each runs the engine in this process (the chain, the YSB with its generator inside) or drives
//! this binary and the `xorflow` binary beside it as subprocesses, and writes a results folder
//! or prints its results.

use crate::{cpu, nexmark, sustainable, wan, ysb};
use clap::{Args, Subcommand};
use std::path::PathBuf;
use xorflow_bench::chain::ChainConfig;
use xorflow_cli::outcome::{quiet, CommandError};
use xorflow_cli::say;
use xorflow_cli::terminal::print_out;
use xorflow_runtime::net::cluster::is_local_child;

#[allow(clippy::large_enum_variant)]
#[derive(Subcommand)]
pub(crate) enum Bench {
    /// The trAcker paper's chain: K pass-through stages, each after a round-robin re-partition.
    Chain(ChainArgs),
    /// The floor of a hop: elements written into batches, handed to another thread through a
    /// queue and read there, with nothing of the engine in between (ns per element, wall and
    /// CPU; docs/benchmarks.md, "Where the limit is").
    Floor(FloorArgs),
    /// Service traffic per element by graph size, processes and granularity (the trAcker paper).
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
    /// The highest rate each engine sustains (the Cloudprofiler paper, section 4.4), on the YSB or the chain:
    /// the rate rises in steps; a step is sustainable when everything emitted arrives (YSB: is
    /// counted as the oracle counts) and latency does not grow over it.
    Sustainable(sustainable::SustainableArgs),
    /// The Yahoo Streaming Benchmark with its generator inside the job at a fixed rate:
    /// throughput, window latency p50/p90/p99, pre-window latency, counts checked (docs/ysb.md).
    Ysb(ysb::BenchYsbArgs),
    /// xorflow next to timely dataflow, Apache Flink and Apache Storm on the chain (builds the
    /// peer engines in peers/).
    Peers(PeersArgs),
    /// The Nexmark queries (examples/nexmark/queries) on xorflow and on Flink SQL over the same
    /// generated files, alternating: events/s, events/s per core and the ratios; and xorflow with
    /// the in-process generator against issue 50's aims (builds peers/flink-sql).
    Nexmark(nexmark::NexmarkArgs),
    /// The CPU-efficiency paper's CPU efficiency per task on the YSB (xorflow, Flink, Storm), every run sampled
    /// by `xorflow profile`: profiler overhead, consistency, load, scale-up vs scale-out, state
    /// size, trAcker's share next to markers (docs/cpu.md).
    Cpu(cpu::CpuArgs),
    /// The wide-area paper's wide-area experiments with delay injected between processes: the YSB under
    /// full-mesh RTTs 0-100 ms and the EU/US/global city sets (window latency p50-p99,
    /// throughput, each series' knee), a jitter run, notification latency on the chain under
    /// RTT, tuning at the largest RTT (docs/wan.md).
    Wan(wan::WanArgs),
    /// The changelog thesis's restore time: one key, a window that never closes, N updates, fold-left vs
    /// retain-all, restored from the last incremental checkpoint.
    Restore(RestoreArgs),
    /// The changelog thesis's store I/O: bytes the on-disk store writes for 3M tuples per producer, 10 keys,
    /// 1 s windows, fold-left vs retain-all, with CPU time.
    StoreIo(StoreIoArgs),
    /// The changelog thesis's evaluation with changelog state in Kafka: store and changelog I/O, restore
    /// from the changelog vs state size, compaction policies (starts its own broker).
    Changelog(ChangelogArgs),
    /// What checkpoints cost: throughput of the chain with a keyed stateful stage and of the
    /// flights job with checkpoints every 1 s and 100 ms against none, checkpoint duration
    /// p50/p99 and bytes per checkpoint, runs alternating.
    Checkpoints(CheckpointsArgs),
    /// The trAcker paper's snapshot experiment with real state: elements held back and time held,
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

/// Options of `bench floor`.
#[derive(Args)]
pub(crate) struct FloorArgs {
    #[command(flatten)]
    cfg: xorflow_bench::floor::FloorConfig,
    /// Print JSON lines instead of text.
    #[arg(long)]
    json: bool,
}

/// Options of `bench peers`.
#[derive(Args)]
pub(crate) struct PeersArgs {
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
    /// The workload: the trAcker paper's chain, or the Yahoo Streaming Benchmark (xorflow, Flink and
    /// Storm under peers/ysb-contract.md; writes <out>/ysb-peers-<UTC>/).
    #[arg(long, default_value = "chain", value_parser = ["chain", "ysb"])]
    workload: String,
    #[command(flatten)]
    ysb: ysb::YsbStandArgs,
}

/// Options of a bench-stand experiment.
#[derive(Args)]
pub(crate) struct StandArgs {
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

#[derive(Args)]
pub(crate) struct RestoreArgs {
    #[command(flatten)]
    cfg: xorflow_bench::restore::RestoreConfig,
    /// Print JSON lines instead of text.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
pub(crate) struct AlignmentArgs {
    #[command(flatten)]
    cfg: xorflow_bench::alignment::AlignmentConfig,
    /// Print JSON lines (one per run) instead of the table.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
pub(crate) struct CheckpointsArgs {
    #[command(flatten)]
    cfg: xorflow_bench::checkpoint_cost::CheckpointCostConfig,
    /// Print JSON lines (one per run) instead of the table.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
pub(crate) struct ChangelogArgs {
    #[command(flatten)]
    cfg: xorflow_bench::changelog::ChangelogConfig,
    /// Also write every result as JSON to this file.
    #[arg(long)]
    json: Option<PathBuf>,
}

/// `bench changelog`: each result as a line when it comes, the JSON file at the end.
fn run_changelog(a: &ChangelogArgs) -> Result<(), CommandError> {
    let mut say_line = |l: String| {
        let _ = print_out(&format!("{l}\n"));
    };
    let r = xorflow_bench::changelog::run(&a.cfg, &mut say_line)?;
    if let Some(p) = &a.json {
        let json = serde_json::to_string_pretty(&r).expect("results serialize");
        std::fs::write(p, json + "\n")
            .map_err(|e| CommandError::Output(format!("cannot write '{}': {e}", p.display())))?;
    }
    Ok(())
}

#[derive(Args)]
pub(crate) struct StoreIoArgs {
    #[command(flatten)]
    cfg: xorflow_bench::store_io::StoreIoConfig,
    /// Print JSON lines instead of text.
    #[arg(long)]
    json: bool,
}

/// `bench checkpoints`: the runs as they go (stderr), then the table (or JSON lines).
fn run_checkpoint_cost(a: &CheckpointsArgs) -> Result<(), CommandError> {
    use xorflow_bench::checkpoint_cost as cc;
    run_table(cc::run(&a.cfg), a.json, cc::table)
}

/// Prints a table of `runs` (JSON lines with `json`), or the error.
fn run_table<R: serde::Serialize>(
    runs: anyhow::Result<Vec<R>>,
    json: bool,
    table: fn(&[R]) -> String,
) -> Result<(), CommandError> {
    let runs = runs?;
    if json {
        for r in &runs {
            println!("{}", serde_json::to_string(r).expect("results serialize"));
        }
    } else {
        print!("{}", table(&runs));
    }
    Ok(())
}

/// Prints an experiment's results, one line each (JSON with `json`).
fn print_results<R: serde::Serialize>(
    results: anyhow::Result<Vec<R>>,
    json: bool,
    describe: fn(&R) -> String,
) -> Result<(), CommandError> {
    let results = results?;
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
    print_out(&text)
}

/// Options of `bench chain`: the chain's and the engine's (one declaration, shared with the bench
/// stand), and how to print.
#[derive(Args)]
pub(crate) struct ChainArgs {
    #[command(flatten)]
    chain: ChainConfig,
    /// Runs; the median by elements/s is reported (all runs are printed).
    #[arg(long, default_value_t = 1)]
    repeat: usize,
    /// Print JSON lines instead of text.
    #[arg(long)]
    json: bool,
}

/// Runs `xorflow-lab bench <experiment>`.
pub fn run(bench: Bench) -> Result<(), CommandError> {
    match bench {
        Bench::Chain(a) => run_chain(a),
        Bench::Peers(a) => run_peers(a),
        Bench::Nexmark(a) => nexmark::run(a),
        Bench::Ysb(a) => ysb::bench(a),
        Bench::Cpu(a) => cpu::run(a),
        Bench::Wan(a) => wan::run(a),
        Bench::Sustainable(a) => sustainable::sustainable(a),
        Bench::Restore(a) => print_results(
            xorflow_bench::restore::run(&a.cfg),
            a.json,
            xorflow_bench::restore::describe,
        ),
        Bench::Checkpoints(a) => run_checkpoint_cost(&a),
        Bench::Floor(a) => {
            let r = xorflow_bench::floor::run(&a.cfg).map_err(CommandError::Config)?;
            print_results(Ok(r), a.json, xorflow_bench::floor::describe)
        }
        Bench::Alignment(a) => run_table(
            xorflow_bench::alignment::run(&a.cfg),
            a.json,
            xorflow_bench::alignment::table,
        ),
        Bench::Changelog(a) => run_changelog(&a),
        Bench::StoreIo(a) => print_results(
            xorflow_bench::store_io::run(&a.cfg),
            a.json,
            xorflow_bench::store_io::describe,
        ),
        Bench::Report { dirs } => {
            for d in &dirs {
                xorflow_bench::stand::rewrite_report(d)?;
                say!("{}", d.join("REPORT.md").display());
            }
            Ok(())
        }
        stand => run_stand(stand),
    }
}

fn run_chain(a: ChainArgs) -> Result<(), CommandError> {
    if a.repeat == 0 {
        return Err(CommandError::Config("--repeat must be at least 1".into()));
    }
    a.chain.engine.validate().map_err(CommandError::Config)?;
    // Every run of a local launch starts its own children, which run once.
    let repeat = if is_local_child() { 1 } else { a.repeat };
    let quiet = quiet(&a.chain.engine);
    let params = a.chain.params();
    let mut results = Vec::new();
    for _ in 0..repeat {
        let r = xorflow_bench::chain::run(&params)?;
        if quiet {
            continue;
        }
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
        print_out(&format!("{line}\n"))?;
        results.push(r);
    }
    if repeat > 1 && !a.json && !quiet {
        results.sort_by(|x, y| {
            x.measures
                .elements_per_s
                .total_cmp(&y.measures.elements_per_s)
        });
        let median = xorflow_bench::chain::describe(&results[results.len() / 2]);
        print_out(&format!("median: {median}\n"))?;
    }
    Ok(())
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

fn run_peers(a: PeersArgs) -> Result<(), CommandError> {
    let exe = crate::own_exe()?;
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
    xorflow_bench::stand::peers::run(
        profile,
        &a.stand.out,
        &exe,
        &a.peers_dir,
        xorflow_bench::stand::peers::JvmPeers {
            flink: !a.no_flink,
            storm: !a.no_storm,
        },
        &a.sweeps,
    )?;
    Ok(())
}

fn run_stand(b: Bench) -> Result<(), CommandError> {
    use xorflow_bench::stand::{experiments, StandOptions};
    let (experiments, a) = match b {
        Bench::Chain(_) => unreachable!("handled by run"),
        Bench::Traffic(a) => (vec![experiments::Experiment::Traffic], a),
        Bench::Throughput(a) => (vec![experiments::Experiment::Throughput], a),
        Bench::Latency(a) => (vec![experiments::Experiment::Latency], a),
        Bench::Scalability(a) => (vec![experiments::Experiment::Scalability], a),
        Bench::Snapshots(a) => (vec![experiments::Experiment::Snapshots], a),
        Bench::All(a) => (experiments::ALL.to_vec(), a),
        Bench::Peers(_)
        | Bench::Floor(_)
        | Bench::Nexmark(_)
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
            unreachable!("handled by run")
        }
    };
    let profile = profile_of(&a);
    let exe = crate::own_exe()?;
    let opts = StandOptions {
        experiments,
        profile,
        out_root: a.out,
        exe,
    };
    xorflow_bench::stand::run(&opts)?;
    Ok(())
}
