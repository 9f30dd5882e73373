//! Which runs each experiment of `xorflow-lab bench cpu` makes (the CPU-efficiency paper, scaled to 2 cores).

use super::spec::{Experiment, Pin, RunSpec};
use crate::ysb::{Engine, Point};

/// The sweep's settings (the CLI's flags; docs/cpu.md).
#[derive(Clone, Debug)]
pub struct Plan {
    /// Experiments to run, in [`Experiment::ALL`] order.
    pub experiments: Vec<Experiment>,
    /// Engines, xorflow first.
    pub engines: Vec<Engine>,
    /// Events/s of the overhead, consistency, scale, state and tracking runs.
    pub rate: u64,
    /// Seconds of generation per run (at least 20: two 10 s windows wholly inside).
    pub duration_s: u64,
    /// Repetitions of the overhead pairs.
    pub reps: usize,
    /// Profiled runs of the consistency experiment (paper: 5).
    pub consistency_runs: usize,
    /// The load sweep's rates per engine, ascending (each up to its sustainable maximum).
    pub load_rates: Vec<(Engine, Vec<u64>)>,
    /// Campaigns of the state-size experiment (paper: 1k to 16k).
    pub campaigns: Vec<usize>,
    /// Tracking granularities in ms of the tracking experiment (paper 000: 1, 100, 1000).
    pub granularities_ms: Vec<u64>,
    /// The tracking experiment's variants, in [`TrackingVariant::ALL`] order.
    pub tracking_variants: Vec<TrackingVariant>,
}

/// A variant of the tracking experiment (`--tracking-variants`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, clap::ValueEnum)]
pub enum TrackingVariant {
    /// trAcker with its latency defaults.
    Tracker,
    /// trAcker flushing acks on every idle moment (the defaults before
    /// `crates/runtime/src/progress/idle_gate.rs`).
    IdleAlways,
    /// trAcker batched as FlameStream batched its acks ([`BATCHED`]).
    Batched,
    /// The markers baseline.
    Markers,
}

impl TrackingVariant {
    /// Every variant, in the order the experiment runs them.
    pub const ALL: [TrackingVariant; 4] = [
        TrackingVariant::Tracker,
        TrackingVariant::IdleAlways,
        TrackingVariant::Batched,
        TrackingVariant::Markers,
    ];

    /// The run label's stem, `--tracking` and the extra options of this variant.
    fn run(self) -> (&'static str, &'static str, &'static [&'static str]) {
        match self {
            TrackingVariant::Tracker => ("tracker", "tracker", &[]),
            TrackingVariant::IdleAlways => (
                "tracker idle-always",
                "tracker",
                &["--ack-flush-on-idle", "always"],
            ),
            TrackingVariant::Batched => ("tracker batched", "tracker", BATCHED),
            TrackingVariant::Markers => ("markers", "markers", &[]),
        }
    }
}

/// Partial batches and acks left to their timeouts instead of sent when a worker goes idle
/// (as Flink's buffer timeout leaves its network buffers), with Linux's usual 50 us timer slack
/// instead of xorflow's 1 us (docs/cpu.md, "Batching at low load").
const BATCHED: &[&str] = &[
    "--timer-slack",
    "50us",
    "--batch-flush-on-idle",
    "false",
    "--ack-flush-on-idle",
    "false",
];

/// A latency budget of `ms`: timed waits may wake that late, and partial batches and acks wait
/// up to that long, so a worker wakes about once per budget instead of once per due event.
macro_rules! budget {
    ($ms:literal) => {
        &[
            "--timer-slack",
            $ms,
            "--flush-timeout",
            $ms,
            "--batch-flush-on-idle",
            "false",
            "--ack-flush-on-idle",
            "false",
        ]
    };
}

/// xorflow's modes in the load experiment besides its defaults (label suffix, options): the 50 us
/// slack alone; [`BATCHED`]; latency budgets of 2 and 5 ms; and every paced element at its due
/// time (`--source-delay 0s`, the defaults before issue 51's third item: docs/cpu.md, "A paced
/// source waits for company"). The budgets' pre-window latency
/// (1.5 and 3 ms since batches for the same worker stop waiting for the budget at every stage;
/// 11 and 26 ms before) stays well under Flink's with its 100 ms buffer timeout (45 ms at
/// 10,000 events/s, 18 ms at 100,000), so their CPU is compared with Flink's at no worse
/// latency (docs/cpu.md, "A latency budget" and "Batches for the same worker").
pub const XORFLOW_MODES: [(&str, &[&str]); 5] = [
    ("slack 50us", &["--timer-slack", "50us"]),
    ("batched", BATCHED),
    ("budget 2ms", budget!("2ms")),
    ("budget 5ms", budget!("5ms")),
    ("sources precise", &["--source-delay", "0s"]),
];

/// The original YSB's campaigns, used wherever the state size does not vary.
pub const BASE_CAMPAIGNS: usize = xorflow_ysb::generate::CAMPAIGNS;

impl Plan {
    /// Every run, experiments in order; engines alternate within each experiment's step.
    pub fn specs(&self) -> Vec<RunSpec> {
        let mut v = Vec::new();
        for &e in &self.experiments {
            match e {
                Experiment::Overhead => self.overhead(&mut v),
                Experiment::Consistency => self.consistency(&mut v),
                Experiment::Load => self.load(&mut v),
                Experiment::Scale => self.scale(&mut v),
                Experiment::State => self.state(&mut v),
                Experiment::Tracking => self.tracking(&mut v),
            }
        }
        v
    }

    /// One process of 2 workers at `rate` (the paper's single node, scaled).
    fn point(&self, rate: u64) -> Point {
        Point {
            rate,
            duration_s: self.duration_s,
            processes: 1,
            workers: 2,
            sources: 2,
        }
    }

    fn spec(&self, x: Experiment, engine: Engine, point: Point, label: String) -> RunSpec {
        RunSpec {
            experiment: x,
            engine,
            point,
            label,
            xorflow_args: Vec::new(),
            pin: Pin::Free,
            campaigns: BASE_CAMPAIGNS,
            profiled: true,
            rep: 0,
        }
    }

    /// Plain and profiled runs in turn, every engine, `reps` times.
    fn overhead(&self, v: &mut Vec<RunSpec>) {
        for rep in 0..self.reps {
            for &e in &self.engines {
                for profiled in [false, true] {
                    let label = format!("{}/s", self.rate);
                    let mut s = self.spec(Experiment::Overhead, e, self.point(self.rate), label);
                    s.profiled = profiled;
                    s.rep = rep;
                    v.push(s);
                }
            }
        }
    }

    /// `consistency_runs` profiled runs of xorflow and Flink (the JVM peer the paper tested).
    fn consistency(&self, v: &mut Vec<RunSpec>) {
        for rep in 0..self.consistency_runs {
            for &e in self.engines.iter().filter(|&&e| e != Engine::Storm) {
                let label = format!("{}/s", self.rate);
                let mut s = self.spec(Experiment::Consistency, e, self.point(self.rate), label);
                s.rep = rep;
                v.push(s);
            }
        }
    }

    /// Each engine at its rates; xorflow also in each of [`XORFLOW_MODES`].
    fn load(&self, v: &mut Vec<RunSpec>) {
        for &e in &self.engines {
            let rates = self.load_rates.iter().find(|(x, _)| *x == e);
            for &r in rates.map_or(&[][..], |(_, r)| r.as_slice()) {
                v.push(self.spec(Experiment::Load, e, self.point(r), format!("{r}/s")));
                if e != Engine::Xorflow {
                    continue;
                }
                for (mode, args) in XORFLOW_MODES {
                    let label = format!("{r}/s {mode}");
                    let mut b = self.spec(Experiment::Load, e, self.point(r), label);
                    b.xorflow_args = args.iter().map(|a| a.to_string()).collect();
                    v.push(b);
                }
            }
        }
    }

    /// One process x 2 workers against 2 processes x 1 worker pinned to a core each
    /// (xorflow); Flink: one TaskManager of 2 slots against 2 of 1 (one JVM: not pinned).
    fn scale(&self, v: &mut Vec<RunSpec>) {
        for &e in self.engines.iter().filter(|&&e| e != Engine::Storm) {
            let up = self.spec(Experiment::Scale, e, self.point(self.rate), "1x2".into());
            let mut out = self.spec(
                Experiment::Scale,
                e,
                Point {
                    processes: 2,
                    workers: 1,
                    ..self.point(self.rate)
                },
                "2x1".into(),
            );
            if e == Engine::Xorflow {
                out.pin = Pin::CorePerProcess;
                out.label = "2x1 pinned".into();
            }
            v.extend([up, out]);
        }
    }

    fn state(&self, v: &mut Vec<RunSpec>) {
        for &c in &self.campaigns {
            for &e in self.engines.iter().filter(|&&e| e != Engine::Storm) {
                let label = format!("{c} campaigns");
                let mut s = self.spec(Experiment::State, e, self.point(self.rate), label);
                s.campaigns = c;
                v.push(s);
            }
        }
    }

    /// xorflow with trAcker and with the markers baseline at each granularity.
    fn tracking(&self, v: &mut Vec<RunSpec>) {
        for &g in &self.granularities_ms {
            for (name, mode, extra) in self.tracking_variants.iter().map(|v| v.run()) {
                let p = self.point(self.rate);
                let label = format!("{name} g={g}ms");
                let mut s = self.spec(Experiment::Tracking, Engine::Xorflow, p, label);
                s.xorflow_args = vec![
                    "--tracking".into(),
                    mode.into(),
                    "--granularity".into(),
                    format!("{g}ms"),
                ];
                s.xorflow_args.extend(extra.iter().map(|a| a.to_string()));
                v.push(s);
            }
        }
    }

    /// Every campaigns count the runs need inputs for.
    pub fn campaign_counts(&self) -> Vec<usize> {
        let mut c: Vec<usize> = self.specs().iter().map(|s| s.campaigns).collect();
        c.sort_unstable();
        c.dedup();
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(experiments: Vec<Experiment>) -> Plan {
        Plan {
            experiments,
            engines: vec![Engine::Xorflow, Engine::Flink, Engine::Storm],
            rate: 1000,
            duration_s: 20,
            reps: 2,
            consistency_runs: 5,
            load_rates: vec![(Engine::Xorflow, vec![10, 20]), (Engine::Storm, vec![5])],
            campaigns: vec![1000, 16000],
            granularities_ms: vec![1, 100, 1000],
            tracking_variants: TrackingVariant::ALL.to_vec(),
        }
    }

    #[test]
    fn every_experiment_makes_the_runs_it_names() {
        let s = plan(vec![Experiment::Overhead]).specs();
        assert_eq!(s.len(), 2 * 3 * 2);
        assert_eq!(s.iter().filter(|s| s.profiled).count(), 6);
        let s = plan(vec![Experiment::Consistency]).specs();
        assert_eq!(s.len(), 10, "xorflow and Flink, 5 each");
        assert!(s.iter().all(|s| s.profiled && s.engine != Engine::Storm));
        let s = plan(vec![Experiment::Load]).specs();
        let rates: Vec<_> = s.iter().map(|s| (s.engine, s.point.rate)).collect();
        assert_eq!(
            rates,
            [
                (Engine::Xorflow, 10),
                (Engine::Xorflow, 10),
                (Engine::Xorflow, 10),
                (Engine::Xorflow, 10),
                (Engine::Xorflow, 10),
                (Engine::Xorflow, 10),
                (Engine::Xorflow, 20),
                (Engine::Xorflow, 20),
                (Engine::Xorflow, 20),
                (Engine::Xorflow, 20),
                (Engine::Xorflow, 20),
                (Engine::Xorflow, 20),
                (Engine::Storm, 5)
            ]
        );
        assert_eq!(s[5].label, "10/s sources precise");
        assert_eq!(s[5].xorflow_args, ["--source-delay", "0s"]);
        assert_eq!(s[1].label, "10/s slack 50us");
        assert_eq!(s[2].label, "10/s batched");
        assert_eq!(s[2].xorflow_args, XORFLOW_MODES[1].1);
        assert_eq!(s[3].label, "10/s budget 2ms");
        assert!(s[3]
            .xorflow_args
            .windows(2)
            .any(|w| w == ["--flush-timeout", "2ms"]));
        assert!(s[0].xorflow_args.is_empty());
        let s = plan(vec![Experiment::Scale]).specs();
        assert_eq!(s.len(), 4);
        let pinned: Vec<_> = s.iter().filter(|s| s.pin == Pin::CorePerProcess).collect();
        assert_eq!(pinned.len(), 1);
        assert_eq!((pinned[0].point.processes, pinned[0].point.workers), (2, 1));
        let s = plan(vec![Experiment::State]).specs();
        assert_eq!(
            s.iter().map(|s| s.campaigns).collect::<Vec<_>>(),
            [1000, 1000, 16000, 16000]
        );
        let s = plan(vec![Experiment::Tracking]).specs();
        assert_eq!(s.len(), 12);
        assert!(s.iter().all(|s| s.engine == Engine::Xorflow));
        assert_eq!(s[9].label, "tracker idle-always g=1000ms");
        assert_eq!(s[10].label, "tracker batched g=1000ms");
        assert_eq!(s[10].xorflow_args[4..], *BATCHED);
        assert_eq!(
            s[11].xorflow_args,
            ["--tracking", "markers", "--granularity", "1000ms"]
        );
        // `--tracking-variants` keeps the chosen ones, in the experiment's order.
        let mut p = plan(vec![Experiment::Tracking]);
        p.tracking_variants = vec![TrackingVariant::Tracker, TrackingVariant::Markers];
        let labels: Vec<String> = p.specs().into_iter().map(|s| s.label).collect();
        assert_eq!(labels[..2], ["tracker g=1ms", "markers g=1ms"]);
        assert_eq!(labels.len(), 6);
    }

    #[test]
    fn inputs_are_made_for_every_table_size_used() {
        let p = plan(vec![Experiment::Load, Experiment::State]);
        assert_eq!(p.campaign_counts(), [100, 1000, 16000]);
        assert_eq!(
            plan(vec![Experiment::Load]).campaign_counts(),
            [BASE_CAMPAIGNS]
        );
    }
}
