//! The trAcker paper's experiments as sweeps of chain runs, one file each: what it runs per profile and
//! its section of REPORT.md. `peers` (xorflow next to other engines) has its own command and
//! results folder.
//!
//! Deployments (processes stand in for the paper's single-CPU virtual machines, one worker each):
//! * `traffic` and `scalability` run the tracker as the paper did, in dedicated processes (one for
//!   the centralized tracker, two for 2 shards); "batched" flushes the local acker every 5 ms only
//!   (FlameStream's setting, `--ack-flush-on-idle false`), "unbatched" sends every ack at once.
//! * `latency` runs the centralized tracker in a dedicated process with the engine's default
//!   flushing (at once when a worker goes idle: latency first).
//! * `throughput` and `snapshots` use the engine's defaults (shards inside the worker processes).

pub mod latency;
pub mod peers;
pub mod scalability;
pub mod snapshots;
pub mod throughput;
pub mod traffic;

use super::report::{Doc, Medians};
use super::runner::{Outcome, Point, Run, Runner};
use super::{Meta, Profile};
use crate::chain::{ChainConfig, ChainMeasures, ChainResult};
use anyhow::Result;
use std::time::Duration;
use xorflow_runtime::args::EngineArgs;
use xorflow_runtime::TrackingMode;

/// One experiment of the stand (its command and folder name: `ValueName::name`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Experiment {
    /// Service messages and bytes per element by graph size, processes and granularity.
    Traffic,
    /// Maximum sustainable throughput, none / tracker / markers at granularity 1 and 100.
    Throughput,
    /// Notification latency p50/p95/p99 at a fixed rate, tracker vs markers.
    Latency,
    /// Centralized vs 2-shard tracker under 1x/5x/9x/17x ack load.
    Scalability,
    /// Snapshot buffering at 100/500/1000 ms pauses, tracker vs markers.
    Snapshots,
}

/// All experiments, in the paper's order.
pub const ALL: [Experiment; 5] = [
    Experiment::Traffic,
    Experiment::Throughput,
    Experiment::Latency,
    Experiment::Scalability,
    Experiment::Snapshots,
];

/// Sustainable: the sources achieved at least this share of the requested rate...
pub const SUSTAINED_SHARE: f64 = 0.95;
/// ...and the 99th percentile of end-to-end element latency stayed below this (a growing backlog
/// shows as latency growing with the run), ms.
pub const BACKLOG_P99_MS: f64 = 250.0;

/// True when a run kept up with its requested rate (see [`SUSTAINED_SHARE`], [`BACKLOG_P99_MS`]).
pub fn sustained(m: &ChainMeasures) -> bool {
    let achieved = m.achieved_rate.unwrap_or(0.0);
    let p99_ms = m.element_latency.p99_us.unwrap_or(f64::INFINITY) / 1e3;
    achieved >= SUSTAINED_SHARE * m.rate && p99_ms <= BACKLOG_P99_MS
}

impl Experiment {
    /// The points to run (throughput adds its search steps while running).
    pub fn points(self, profile: Profile) -> Vec<Point> {
        match self {
            Experiment::Traffic => traffic::points(profile),
            Experiment::Latency => latency::points(profile),
            Experiment::Scalability => scalability::points(profile),
            Experiment::Snapshots => snapshots::points(profile),
            Experiment::Throughput => throughput::starts(profile),
        }
    }

    /// Runs the points (the throughput search adds points as it goes).
    pub fn run(
        self,
        runner: &mut Runner,
        points: Vec<Point>,
        profile: Profile,
    ) -> Vec<Outcome<ChainResult>> {
        match self {
            Experiment::Throughput => throughput::search(runner, points, profile),
            _ => points.iter().map(|p| runner.run(p)).collect(),
        }
    }

    /// Writes the experiment's section of REPORT.md (and its own files).
    pub(super) fn report(
        self,
        doc: &mut Doc<'_>,
        m: &Medians<ChainResult>,
        outcomes: &[Outcome<ChainResult>],
        meta: &Meta,
    ) -> Result<()> {
        match self {
            Experiment::Traffic => traffic::report(doc, m),
            Experiment::Latency => latency::report(doc, m, outcomes),
            Experiment::Throughput => throughput::report(doc, m, outcomes, meta),
            Experiment::Scalability => scalability::report(doc, m, outcomes, meta),
            Experiment::Snapshots => snapshots::report(doc, m, outcomes),
        }
    }
}

/// A chain run of the stand: `stages` stages on `processes` processes of one worker each, at
/// granularity `g`, `elements` elements at `rate` elements/s, the first `warmup` not measured.
fn chain(
    stages: usize,
    processes: usize,
    g: u64,
    rate: f64,
    elements: u64,
    warmup: u64,
) -> ChainConfig {
    ChainConfig {
        stages,
        elements,
        rate,
        granularity: g,
        warmup,
        engine: EngineArgs {
            workers: 1,
            processes,
            ..EngineArgs::default()
        },
        ..ChainConfig::default()
    }
}

/// Sets the tracking options a configuration name stands for.
fn tracking(config: &str, e: &mut EngineArgs) {
    e.tracking = match config {
        "none" => TrackingMode::None,
        "markers" => TrackingMode::Markers,
        _ => TrackingMode::Tracker,
    };
    match config {
        // Engine defaults: shards inside the worker processes, flush when idle.
        "none" | "markers" | "tracker-default" => {}
        "tracker-process" => e.tracker_processes = 1,
        c => {
            if c.contains("2-shards") {
                e.tracker_shards = 2;
                e.tracker_processes = 2;
            } else {
                e.tracker_processes = 1;
            }
            if c.ends_with("unbatched") {
                e.ack_flush_count = 0;
            } else {
                e.ack_flush_on_idle = xorflow_runtime::config::AckOnIdle::Never;
                e.ack_flush_interval = Duration::from_millis(5);
            }
        }
    }
}

/// A point running `chain` with the tracking options of `config`.
fn point(sweep: &str, value: String, config: &str, rep: usize, mut chain: ChainConfig) -> Point {
    tracking(config, &mut chain.engine);
    Point {
        sweep: sweep.into(),
        value,
        config: config.into(),
        rep,
        run: Run::Chain(Box::new(chain)),
    }
}

/// A fixed-rate sweep set: defaults and the values of each sweep.
struct SweepSet {
    stages: (usize, &'static [usize]),
    processes: (usize, &'static [usize]),
    granularity: (u64, &'static [u64]),
    rate: f64,
    elements: u64,
    warmup: u64,
    repeat: usize,
}

/// One-at-a-time sweeps around the defaults (as the paper's figures), configurations interleaved.
fn sweeps(configs: &[&str], set: SweepSet) -> Vec<Point> {
    let mut pts = Vec::new();
    let (k0, p0, g0) = (set.stages.0, set.processes.0, set.granularity.0);
    let mut coords: Vec<(&str, String, usize, usize, u64)> = Vec::new();
    for &k in set.stages.1 {
        coords.push(("stages", k.to_string(), k, p0, g0));
    }
    for &n in set.processes.1 {
        coords.push(("processes", n.to_string(), k0, n, g0));
    }
    for &g in set.granularity.1 {
        coords.push(("granularity", g.to_string(), k0, p0, g));
    }
    for rep in 1..=set.repeat {
        for (sweep, value, k, n, g) in &coords {
            for &c in configs {
                let run = chain(*k, *n, *g, set.rate, set.elements, set.warmup);
                pts.push(point(sweep, value.clone(), c, rep, run));
            }
        }
    }
    pts
}

#[cfg(test)]
mod tests {
    use super::*;
    use xorflow_runtime::ValueName;

    /// The configurations' options, as the stand passed them as flags before they were typed.
    #[test]
    fn configurations_set_the_documented_options() {
        let argv = |config: &str| {
            let mut e = EngineArgs::default();
            tracking(config, &mut e);
            e.to_argv().join(" ")
        };
        assert_eq!(argv("none"), "--tracking none");
        assert_eq!(argv("markers"), "--tracking markers");
        assert_eq!(argv("tracker-default"), "");
        assert_eq!(argv("tracker-process"), "--tracker-processes 1");
        assert_eq!(
            argv("tracker"),
            "--tracker-processes 1 --ack-flush-interval 5ms --ack-flush-on-idle false"
        );
        assert_eq!(
            argv("tracker-unbatched"),
            "--tracker-processes 1 --ack-flush-count 0"
        );
        assert_eq!(
            argv("tracker-2-shards"),
            "--tracker-shards 2 --tracker-processes 2 --ack-flush-interval 5ms \
             --ack-flush-on-idle false"
        );
        assert_eq!(
            argv("tracker-2-shards-unbatched"),
            "--tracker-shards 2 --tracker-processes 2 --ack-flush-count 0"
        );
    }

    /// Every point of every profile renders to arguments that `bench chain` parses back to it.
    #[test]
    fn every_point_round_trips_through_its_arguments() {
        for p in [Profile::Smoke, Profile::Quick, Profile::Full] {
            for e in ALL {
                for pt in e.points(p) {
                    let Run::Chain(c) = &pt.run else {
                        panic!("{}: not a chain point", e.name())
                    };
                    assert_eq!(&ChainConfig::parse_argv(&c.to_argv()).unwrap(), &**c);
                }
            }
        }
    }
}
