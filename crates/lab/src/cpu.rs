//! `xorflow-lab bench cpu`: the CPU-efficiency paper's CPU-efficiency experiments on the YSB, each run sampled by
//! `xorflow-lab profile` (crates/bench/src/cpu/, docs/cpu.md).

use crate::ysb::{chosen, engines, run_sweep, sweep_duration};
use clap::Args;
use std::path::PathBuf;
use std::time::Duration;
use xorflow_bench::cpu::plan::TrackingVariant;
use xorflow_bench::cpu::{Experiment, Plan};
use xorflow_bench::ysb::Engine;
use xorflow_cli::outcome::CommandError;

/// Options of `xorflow-lab bench cpu`.
#[derive(Args)]
#[command(
    after_help = "Examples:\n  xorflow-lab bench cpu --experiments load --no-storm\n  \
                  xorflow-lab bench cpu --quick --no-flink --no-storm\n\n\
                  Writes <out>/cpu-<UTC>/: REPORT.md, runs.csv, tasks.csv, raw.jsonl and every \
                  run's profile under runs/ (docs/cpu.md)."
)]
pub struct CpuArgs {
    /// Experiments to run, comma-separated: overhead, consistency, load, scale, state,
    /// tracking (default: all).
    #[arg(long, value_delimiter = ',')]
    experiments: Vec<String>,
    /// Events/s of every experiment but load.
    #[arg(long, default_value_t = 100_000)]
    rate: u64,
    /// Seconds of generation per run, whole seconds, at least 20 (two 10 s windows inside).
    #[arg(long, default_value = "20s", value_parser = humantime::parse_duration)]
    duration: Duration,
    /// Plain/profiled pairs of the overhead experiment per engine.
    #[arg(long, default_value_t = 2)]
    reps: usize,
    /// Profiled runs per engine of the consistency experiment (the paper's: 5).
    #[arg(long, default_value_t = 5)]
    consistency_runs: usize,
    /// Rates of the load experiment for xorflow, ascending (default 10000, 100000, 1000000,
    /// 2000000: up to its sustainable maximum on this machine, bench/results/ysb-sustainable-*).
    #[arg(long, value_delimiter = ',')]
    xorflow_rates: Vec<u64>,
    /// Rates of the load experiment for Flink (default 10000, 100000, 1000000).
    #[arg(long, value_delimiter = ',')]
    flink_rates: Vec<u64>,
    /// Rates of the load experiment for Storm (default 10000, 50000, 100000).
    #[arg(long, value_delimiter = ',')]
    storm_rates: Vec<u64>,
    /// Campaigns of the state-size experiment (default 1000, 4000, 16000: the paper's range).
    #[arg(long, value_delimiter = ',')]
    campaigns: Vec<usize>,
    /// Tracking granularities of the tracking experiment, ms (default 1, 100, 1000).
    #[arg(long, value_delimiter = ',')]
    granularities: Vec<u64>,
    /// Variants of the tracking experiment, comma-separated (default: all): tracker (its
    /// latency defaults), idle-always (acks flushed on every idle moment), batched (acks and
    /// batches left to their timeouts), markers (the baseline).
    #[arg(long, value_enum, value_delimiter = ',')]
    tracking_variants: Vec<TrackingVariant>,
    /// Fewer, shorter runs: 20 s, 1 overhead pair, 3 consistency runs, two load rates, two
    /// table sizes, two granularities.
    #[arg(long)]
    quick: bool,
    /// Leave Apache Flink out.
    #[arg(long)]
    no_flink: bool,
    /// Leave Apache Storm out.
    #[arg(long)]
    no_storm: bool,
    /// Where the JVM peers' Maven projects are.
    #[arg(long, default_value = "peers")]
    peers_dir: PathBuf,
    /// Results root: writes <out>/cpu-<UTC time>/.
    #[arg(long, default_value = "bench/results")]
    out: PathBuf,
}

fn or(v: &[u64], default: &[u64]) -> Vec<u64> {
    if v.is_empty() {
        default.to_vec()
    } else {
        v.to_vec()
    }
}

impl CpuArgs {
    /// The plan these options ask for.
    ///
    /// # Errors
    /// An unknown experiment, a duration under 20 s or not whole, a rate or campaign count of 0.
    pub fn plan(&self) -> Result<Plan, String> {
        let experiments = chosen(
            &self.experiments,
            &Experiment::ALL,
            xorflow_bench::named::by_name,
        )?;
        let duration_s = sweep_duration(self.duration)?;
        let q = self.quick;
        let rates = |v: &[u64], full: &[u64], quick: &[u64]| or(v, if q { quick } else { full });
        let load_rates = vec![
            (
                Engine::Xorflow,
                rates(
                    &self.xorflow_rates,
                    &[10_000, 100_000, 1_000_000, 2_000_000],
                    &[10_000, 1_000_000],
                ),
            ),
            (
                Engine::Flink,
                rates(
                    &self.flink_rates,
                    &[10_000, 100_000, 1_000_000],
                    &[10_000, 1_000_000],
                ),
            ),
            (
                Engine::Storm,
                rates(
                    &self.storm_rates,
                    &[10_000, 50_000, 100_000],
                    &[10_000, 50_000],
                ),
            ),
        ];
        let campaigns: Vec<usize> = match (self.campaigns.is_empty(), q) {
            (false, _) => self.campaigns.clone(),
            (true, false) => vec![1000, 4000, 16000],
            (true, true) => vec![1000, 16000],
        };
        let granularities_ms = rates(&self.granularities, &[1, 100, 1000], &[1, 1000]);
        let zero_rate = load_rates.iter().any(|(_, r)| r.contains(&0)) || self.rate == 0;
        if zero_rate || campaigns.contains(&0) || granularities_ms.contains(&0) {
            return Err("rates, campaigns and granularities must be at least 1".into());
        }
        Ok(Plan {
            experiments,
            engines: engines(!self.no_flink, !self.no_storm),
            rate: self.rate,
            duration_s,
            reps: if q { 1 } else { self.reps },
            consistency_runs: if q { 3 } else { self.consistency_runs },
            load_rates,
            campaigns,
            granularities_ms,
            tracking_variants: if self.tracking_variants.is_empty() {
                TrackingVariant::ALL.to_vec()
            } else {
                let mut v = self.tracking_variants.clone();
                v.sort_unstable();
                v.dedup();
                v
            },
        })
    }
}

/// Runs `xorflow-lab bench cpu` (exit 2: bad options; 1: a build or the results folder failed).
pub fn run(a: CpuArgs) -> Result<(), CommandError> {
    run_sweep(
        a.plan(),
        |p| p.engines.clone(),
        (&a.out, &a.peers_dir),
        xorflow_bench::cpu::run,
    )
}
