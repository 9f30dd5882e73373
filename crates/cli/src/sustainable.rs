//! `xorflow bench sustainable`: the highest rate each engine sustains (crates/bench/src/ysb/sustainable.rs).

use crate::ysb::{engines, finish_stand, YsbStandArgs};
use clap::Args;
use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

/// `xorflow bench sustainable`.
#[derive(Args)]
pub struct SustainableArgs {
    /// The workload (only ysb so far).
    #[arg(long, default_value = "ysb", value_parser = ["ysb"])]
    workload: String,
    #[command(flatten)]
    ysb: YsbStandArgs,
    /// Leave Apache Flink out.
    #[arg(long)]
    no_flink: bool,
    /// Leave Apache Storm out.
    #[arg(long)]
    no_storm: bool,
    /// Where the peer engines' projects are.
    #[arg(long, default_value = "peers")]
    peers_dir: PathBuf,
    /// Results root: writes <out>/ysb-sustainable-<UTC>/.
    #[arg(long, default_value = "bench/results")]
    out: PathBuf,
}

/// `xorflow bench sustainable`.
pub fn sustainable(a: SustainableArgs) -> ExitCode {
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => {
            say!("error: cannot find own executable: {e}");
            return ExitCode::from(1);
        }
    };
    let mut rates = a.ysb.rate.clone();
    if rates.is_empty() {
        rates = vec![25_000, 50_000, 100_000, 200_000, 400_000, 800_000];
    }
    if !rates.is_sorted() || a.ysb.duration.as_secs() < 3 {
        say!("error: --rate must be ascending and --duration at least 3s");
        return ExitCode::from(2);
    }
    let cfg = xorflow_bench::ysb::sustainable::SustainableConfig {
        rates,
        point: a.ysb.point(0),
        stand: xorflow_bench::ysb::StandConfig {
            engines: engines(!a.no_flink, !a.no_storm),
            out: a.out.clone(),
            peers_dir: a.peers_dir.clone(),
            xorflow: exe,
        },
    };
    finish_stand(xorflow_bench::ysb::sustainable::run(&cfg))
}
