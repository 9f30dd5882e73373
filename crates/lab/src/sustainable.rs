//! `xorflow-lab bench sustainable`: the highest rate each engine sustains, on the YSB
//! (crates/bench/src/ysb/sustainable.rs) or the trAcker paper's chain
//! (crates/bench/src/sustainable/chain.rs), on the ladder both share
//! (crates/bench/src/sustainable/mod.rs).

use crate::ysb::{engines, finish_stand, YsbStandArgs};
use clap::Args;
use std::path::PathBuf;
use std::time::Duration;
use xorflow_bench::sustainable::chain::{ChainLadderConfig, Engine};
use xorflow_cli::outcome::CommandError;
use xorflow_runtime::TrackingMode;

/// The YSB's steps without --rate, events/s.
const YSB_RATES: [u64; 6] = [25_000, 50_000, 100_000, 200_000, 400_000, 800_000];
/// The chain's steps without --rate, elements/s: 1-2-5 from below Storm's knee (about 18,000
/// elements/s at K = 10 with acking on this 2-core machine) to above xorflow's (20 M elements/s
/// sustained on a quiet machine, about 32 M without tracking or a rate limit).
const CHAIN_RATES: [u64; 12] = [
    10_000, 20_000, 50_000, 100_000, 200_000, 500_000, 1_000_000, 2_000_000, 5_000_000, 10_000_000,
    20_000_000, 50_000_000,
];

/// `xorflow-lab bench sustainable`.
#[derive(Args)]
pub struct SustainableArgs {
    /// The workload: the YSB (xorflow, Flink, Storm) or the trAcker paper's chain (xorflow, timely,
    /// Flink, Storm).
    #[arg(long, default_value = "ysb", value_parser = ["ysb", "chain"])]
    workload: String,
    /// The steps, events or elements/s, ascending, comma-separated (default: ysb 25000 to
    /// 800000; chain 10000, 20000, 50000, ... 50000000).
    #[arg(long = "rate", value_delimiter = ',')]
    rate: Vec<u64>,
    /// Seconds of schedule per step, at least 3 (default: ysb 60s, chain 10s).
    #[arg(long, value_parser = humantime::parse_duration)]
    duration: Option<Duration>,
    /// ysb: processes of xorflow, TaskManagers of Flink (Storm: always one process).
    #[arg(long = "ysb-processes")]
    ysb_processes: Option<usize>,
    /// ysb: workers per process.
    #[arg(long = "ysb-workers")]
    ysb_workers: Option<usize>,
    /// chain: pass-through stages K.
    #[arg(long)]
    stages: Option<usize>,
    /// chain: elements per substream, every engine's completeness unit (default 1000: at the
    /// million-elements/s steps a substream completes every millisecond or less, while each
    /// engine's per-substream cost stays small next to its per-element work).
    #[arg(long)]
    granularity: Option<u64>,
    /// chain: xorflow's completeness tracking (tracker, markers; none runs every engine
    /// without tracking).
    #[arg(long)]
    tracking: Option<TrackingMode>,
    /// chain: Flink's buffer timeout, ms (default 100, Flink's own).
    #[arg(long)]
    flink_buffer_timeout_ms: Option<u64>,
    /// chain: leave timely out.
    #[arg(long)]
    no_timely: bool,
    /// Leave Apache Flink out.
    #[arg(long)]
    no_flink: bool,
    /// Leave Apache Storm out.
    #[arg(long)]
    no_storm: bool,
    /// Where the peer engines' projects are.
    #[arg(long, default_value = "peers")]
    peers_dir: PathBuf,
    /// Results root: writes <out>/<workload>-sustainable-<UTC>/.
    #[arg(long, default_value = "bench/results")]
    out: PathBuf,
}

/// `xorflow-lab bench sustainable`.
pub fn sustainable(a: SustainableArgs) -> Result<(), CommandError> {
    let exe = crate::own_exe()?;
    let checked = if a.workload == "chain" {
        chain_config(&a, exe).map(|c| xorflow_bench::sustainable::chain::run(&c))
    } else {
        ysb_config(&a, exe).map(|c| xorflow_bench::ysb::sustainable::run(&c))
    };
    finish_stand(checked.map_err(CommandError::Config)?)
}

/// The options given that `workload` does not take, by flag.
fn foreign(a: &SustainableArgs) -> Vec<&'static str> {
    let ysb = [
        ("--ysb-processes", a.ysb_processes.is_some()),
        ("--ysb-workers", a.ysb_workers.is_some()),
    ];
    let chain = [
        ("--stages", a.stages.is_some()),
        ("--granularity", a.granularity.is_some()),
        ("--tracking", a.tracking.is_some()),
        (
            "--flink-buffer-timeout-ms",
            a.flink_buffer_timeout_ms.is_some(),
        ),
        ("--no-timely", a.no_timely),
    ];
    let other: &[(&str, bool)] = if a.workload == "chain" { &ysb } else { &chain };
    other.iter().filter(|o| o.1).map(|o| o.0).collect()
}

/// Checks the options every workload shares: no option of the other workload, ascending rates
/// and at least 3 s per step.
fn check(a: &SustainableArgs, duration: Duration) -> Result<(), String> {
    let bad = foreign(a);
    if !bad.is_empty() {
        return Err(format!(
            "{} not with --workload {}",
            bad.join(", "),
            a.workload
        ));
    }
    if !a.rate.is_sorted() || a.rate.contains(&0) {
        return Err("--rate must list rates above 0 in ascending order".into());
    }
    if duration.as_secs() < 3 {
        return Err("--duration must be at least 3s".into());
    }
    Ok(())
}

fn ysb_config(
    a: &SustainableArgs,
    exe: PathBuf,
) -> Result<xorflow_bench::ysb::sustainable::SustainableConfig, String> {
    let duration = a.duration.unwrap_or(Duration::from_secs(60));
    check(a, duration)?;
    let stand = YsbStandArgs {
        rate: a.rate.clone(),
        duration,
        reps: 1,
        processes: a.ysb_processes.unwrap_or(1),
        workers: a.ysb_workers.unwrap_or(2),
    };
    Ok(xorflow_bench::ysb::sustainable::SustainableConfig {
        rates: if a.rate.is_empty() {
            YSB_RATES.to_vec()
        } else {
            a.rate.clone()
        },
        point: stand.point(0),
        stand: xorflow_bench::ysb::StandConfig {
            engines: engines(!a.no_flink, !a.no_storm),
            out: a.out.clone(),
            peers_dir: a.peers_dir.clone(),
            xorflow: exe,
        },
    })
}

fn chain_config(a: &SustainableArgs, exe: PathBuf) -> Result<ChainLadderConfig, String> {
    let duration = a.duration.unwrap_or(Duration::from_secs(10));
    check(a, duration)?;
    let left_out = [
        (Engine::Timely, a.no_timely),
        (Engine::Flink, a.no_flink),
        (Engine::Storm, a.no_storm),
    ];
    let c = ChainLadderConfig {
        rates: if a.rate.is_empty() {
            CHAIN_RATES.to_vec()
        } else {
            a.rate.clone()
        },
        duration_s: duration.as_secs(),
        stages: a.stages.unwrap_or(10),
        granularity: a.granularity.unwrap_or(1000),
        tracking: a.tracking.unwrap_or(TrackingMode::Tracker),
        flink_buffer_timeout_ms: a.flink_buffer_timeout_ms.unwrap_or(100),
        engines: Engine::ALL
            .into_iter()
            .filter(|e| !left_out.iter().any(|(o, out)| o == e && *out))
            .collect(),
        out: a.out.clone(),
        peers_dir: a.peers_dir.clone(),
        xorflow: exe,
    };
    c.validate().map_err(|e| e.to_string())?;
    Ok(c)
}
