//! `xorflow-lab bench wan`: the wide-area paper's wide-area experiments with the delay injected in user space
//! (crates/bench/src/wan/, docs/wan.md).

use crate::ysb::{chosen, finish_stand, run_sweep, sweep_duration};
use clap::Args;
use std::path::PathBuf;
use std::time::Duration;
use xorflow_bench::wan::{Experiment, Network, Plan};
use xorflow_bench::ysb::Engine;
use xorflow_cli::outcome::CommandError;

/// Options of `xorflow-lab bench wan`.
#[derive(Args)]
#[command(
    after_help = "Examples:\n  xorflow-lab bench wan --experiments mesh --processes 2 --rtts 0,40,100\n  \
                  xorflow-lab bench wan --quick\n\n\
                  Writes <out>/wan-<UTC>/: REPORT.md (with each series' knee), runs.csv, \
                  raw.jsonl and every run's command and output under runs/ (docs/wan.md)."
)]
pub struct WanArgs {
    /// Experiments to run, comma-separated: mesh, topology, jitter, notification, tuning,
    /// regions (the last only when --processes has 8) (default: all).
    #[arg(long, value_delimiter = ',')]
    experiments: Vec<String>,
    /// YSB rates, events/s (default 22000,55000: the wide-area paper's).
    #[arg(long, value_delimiter = ',')]
    rates: Vec<u64>,
    /// Worker processes, one worker each (default 2,4,8: the wide-area paper's workers).
    #[arg(long, value_delimiter = ',')]
    processes: Vec<usize>,
    /// Full-mesh RTTs of the mesh experiment, ms (default 0,10,20,30,40,60,80,100; 0 is added
    /// when missing: it is the baseline of the knee).
    #[arg(long, value_delimiter = ',')]
    rtts: Vec<u64>,
    /// City sets of the topology experiment (default eu,us,global).
    #[arg(long, value_delimiter = ',')]
    topologies: Vec<String>,
    /// Seconds of generation per YSB run, whole seconds, at least 20 (windows are 10 s; only
    /// those wholly inside the generation count).
    #[arg(long, default_value = "30s", value_parser = humantime::parse_duration)]
    duration: Duration,
    /// Elements/s of the notification experiment's chain runs.
    #[arg(long, default_value_t = 20_000)]
    chain_rate: u64,
    /// RTTs of the notification experiment, ms (default 0,10,40,100).
    #[arg(long, value_delimiter = ',')]
    chain_rtts: Vec<u64>,
    /// A short sweep: 22000 events/s, 2 processes, RTT 0/40/100 ms, the EU set, 20 s runs,
    /// two notification variants at 0 and 40 ms, two tuning variants.
    #[arg(long)]
    quick: bool,
    /// Leave Apache Flink out (by default it runs in the mesh and jitter experiments, each
    /// TaskManager behind a delay proxy, and with --network netns as a standalone cluster in the
    /// namespaces, in the topology experiment too; built with Maven from --peers-dir).
    #[arg(long)]
    no_flink: bool,
    /// Leave Apache Storm out (by default, with --network netns only, it runs in the mesh,
    /// topology and jitter experiments as a Storm cluster: ZooKeeper and Nimbus with the first
    /// process, a supervisor and its worker JVM in each namespace; in the mesh also with its
    /// event-time windowed bolt, `--window bolt`; built with Maven from --peers-dir).
    #[arg(long)]
    no_storm: bool,
    /// Where xorflow's processes talk: loopback (the delay inside xorflow) or netns (each
    /// process in its own network namespace behind `xorflow-lab delay-router`, every packet delayed,
    /// kernel TCP included; needs root). Flink then runs as a standalone cluster, a JVM per
    /// TaskManager in each namespace, Storm as a cluster with a supervisor and its worker in each
    /// namespace, and both join the topology experiment.
    #[arg(long, default_value = "loopback", value_parser = ["loopback", "netns"])]
    network: String,
    /// With --network netns: TCP congestion control in every namespace, for every engine
    /// (`xorflow-lab delay-router --tcp-congestion`): cubic, Linux's default, unless asked or not
    /// allowed in namespaces here (then the host's); inherit keeps the host's (docs/wan.md,
    /// "Congestion control"). An algorithm namespaces may not use here is refused before any
    /// run.
    #[arg(long, value_name = "ALGORITHM")]
    tcp_congestion: Option<String>,
    /// Runs per point (1-100): the sweep runs this many rounds, every point once per round (so
    /// a drift of the machine spreads over every point); each table row is the run with its
    /// point's median p99, and a table gives every point's spread.
    #[arg(long, default_value_t = 1)]
    repeat: usize,
    /// Where the JVM peers' Maven projects are.
    #[arg(long, default_value = "peers")]
    peers_dir: PathBuf,
    /// Results root: writes <out>/wan-<UTC time>/.
    #[arg(long, default_value = "bench/results")]
    out: PathBuf,
    /// Run nothing: write DIR's runs.csv and REPORT.md again from its plan.json and raw.jsonl.
    #[arg(long, value_name = "DIR")]
    report: Option<PathBuf>,
}

fn or<T: Clone>(v: &[T], full: &[T], quick: &[T], q: bool) -> Vec<T> {
    match (v.is_empty(), q) {
        (false, _) => v.to_vec(),
        (true, false) => full.to_vec(),
        (true, true) => quick.to_vec(),
    }
}

impl WanArgs {
    /// The plan these options ask for.
    ///
    /// # Errors
    /// An unknown experiment or city set, a duration under 20 s or not whole, a rate or
    /// process count out of range, the regions experiment named without 8 processes, an RTT
    /// over 60 s.
    pub fn plan(&self) -> Result<Plan, String> {
        let experiments = chosen(
            &self.experiments,
            &Experiment::ALL,
            xorflow_bench::named::by_name,
        )?;
        let duration_s = sweep_duration(self.duration)?;
        let q = self.quick;
        let rates = or(&self.rates, &[22_000, 55_000], &[22_000], q);
        let processes = or(&self.processes, &[2, 4, 8], &[2], q);
        let mut rtts = or(
            &self.rtts,
            &[0, 10, 20, 30, 40, 60, 80, 100],
            &[0, 40, 100],
            q,
        );
        rtts.push(0);
        rtts.sort_unstable();
        rtts.dedup();
        let chain_rtts = or(&self.chain_rtts, &[0, 10, 40, 100], &[0, 40], q);
        let topologies = or(
            &self.topologies,
            &["eu".to_string(), "us".into(), "global".into()],
            &["eu".to_string()],
            q,
        );
        for t in &topologies {
            xorflow_runtime::config::parse_value::<xorflow_runtime::net::delay::Topology>(
                "topology", t,
            )?;
        }
        if rates.contains(&0) || self.chain_rate == 0 {
            return Err("rates must be at least 1 event/s".into());
        }
        if processes.iter().any(|&p| !(2..=8).contains(&p)) {
            return Err(format!(
                "--processes must be between 2 and 8 (a delay acts between processes; the city \
                 sets have 8 cities), got {processes:?}"
            ));
        }
        // Asked for by name, the regions experiment must not silently run nothing.
        let named_regions = self.experiments.iter().any(|e| e == "regions");
        if named_regions && !processes.contains(&8) {
            return Err(format!(
                "the regions experiment runs on the global city set's 8 processes: add 8 to \
                 --processes (got {processes:?})"
            ));
        }
        if !(1..=100).contains(&self.repeat) {
            return Err(format!(
                "--repeat must be between 1 and 100, got {}",
                self.repeat
            ));
        }
        let netns = self.network == "netns";
        let tcp_congestion = congestion(self.tcp_congestion.as_deref(), netns)?;
        if rtts.iter().chain(&chain_rtts).any(|&r| r > 60_000) {
            return Err("RTTs must be at most 60000 ms".into());
        }
        let mut engines = vec![Engine::Xorflow];
        // The experiments the peers join (the city sets in namespaces only: `wan/plan.rs`).
        let peers = [Experiment::Mesh, Experiment::Topology, Experiment::Jitter]
            .iter()
            .any(|e| experiments.contains(e));
        if !self.no_flink && peers {
            engines.push(Engine::Flink);
        }
        // Storm's LocalCluster is one JVM: only its cluster, in namespaces, has links to delay.
        if !self.no_storm && netns && peers {
            engines.push(Engine::Storm);
        }
        Ok(Plan {
            experiments,
            engines,
            rates,
            processes,
            rtts_ms: rtts,
            topologies,
            duration_s: if q { 20 } else { duration_s },
            chain_rate: self.chain_rate,
            chain_duration_s: 10,
            chain_rtts_ms: chain_rtts,
            quick: q,
            repeat: self.repeat,
            network: if self.network == "netns" {
                Network::Netns
            } else {
                Network::Loopback
            },
            tcp_congestion,
        })
    }
}

/// `--tcp-congestion`: `auto` unless asked (cubic where namespaces may use it, else the host's:
/// resolved here so the plan and REPORT.md name the one used); only with `--network netns` (on
/// loopback there is no namespace to set it in); `inherit` or an algorithm namespaces may use
/// here, so a bad name fails here rather than in every run's router.
fn congestion(asked: Option<&str>, netns: bool) -> Result<String, String> {
    let Some(a) = asked else {
        return Ok(crate::congestion::to_set(crate::congestion::AUTO)
            .unwrap_or_else(|| crate::congestion::INHERIT.into()));
    };
    if !netns {
        return Err(format!(
            "--tcp-congestion {a} applies to --network netns only (on loopback the host's is used)"
        ));
    }
    crate::congestion::check(a)?;
    Ok(crate::congestion::to_set(a).unwrap_or_else(|| crate::congestion::INHERIT.into()))
}

/// Runs `xorflow-lab bench wan` (exit 2: bad options; 1: the results folder failed).
pub fn run(a: WanArgs) -> Result<(), CommandError> {
    if let Some(dir) = &a.report {
        return finish_stand(xorflow_bench::wan::report::rewrite(dir).map(|()| dir.clone()));
    }
    run_sweep(
        a.plan(),
        |p| p.engines.clone(),
        (&a.out, &a.peers_dir),
        xorflow_bench::wan::run,
    )
}
