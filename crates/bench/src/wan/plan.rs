//! The runs of each `xorflow-lab bench wan` experiment (docs/wan.md).

use super::spec::{Delay, Experiment, RunSpec, Workload};
use crate::ysb::Engine;
use serde::{Deserialize, Serialize};

/// A sweep: the experiments and the points they cover (written to `plan.json` with the command,
/// so `bench wan --report DIR` can rewrite a folder's tables).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Plan {
    /// Experiments to run, in [`Experiment::ALL`] order.
    pub experiments: Vec<Experiment>,
    /// Engines of the mesh and jitter experiments: xorflow, Flink (behind delay proxies on
    /// loopback, a standalone cluster in namespaces) and Storm (a cluster, in namespaces only);
    /// the peers join the topology experiment in namespaces, the other experiments vary
    /// xorflow's own knobs. Results written before the peers ran have none.
    #[serde(default = "xorflow_only")]
    pub engines: Vec<Engine>,
    /// YSB rates, events/s (the wide-area paper: 22,000 and 55,000).
    pub rates: Vec<u64>,
    /// Worker processes (the wide-area paper: 2, 4 and 8 workers).
    pub processes: Vec<usize>,
    /// Full-mesh RTTs of the mesh experiment, ms, ascending (0 first: the baseline).
    pub rtts_ms: Vec<u64>,
    /// City sets of the topology experiment.
    pub topologies: Vec<String>,
    /// Seconds of generation per YSB run.
    pub duration_s: u64,
    /// Elements/s of the notification experiment's chain runs.
    pub chain_rate: u64,
    /// Seconds of each chain run.
    pub chain_duration_s: u64,
    /// RTTs of the notification experiment, ms.
    pub chain_rtts_ms: Vec<u64>,
    /// Fewer variants (notification: replicated and markers; tuning: two knobs).
    pub quick: bool,
    /// Runs per point: the sweep runs this many rounds of every point (`--repeat`). Plans
    /// written before repeats existed ran once.
    #[serde(default = "one")]
    pub repeat: usize,
    /// Where the processes talk: on loopback (Flink's TaskManagers behind delay proxies, full mesh
    /// only) or in namespaces (Flink as a standalone cluster there, city sets too). Results
    /// written before namespaces existed ran on loopback.
    #[serde(default)]
    pub network: super::Network,
    /// In namespaces: the TCP congestion control of every namespace (`xorflow-lab delay-router
    /// --tcp-congestion`). Plans written before it was set inherited the host's.
    #[serde(default = "inherit")]
    pub tcp_congestion: String,
}

fn inherit() -> String {
    "inherit".into()
}

/// The notification experiment's variants: (name, options, a dedicated tracker process).
const NOTIFICATION: [(&str, &[&str], bool); 7] = [
    ("replicated", &[], false),
    (
        "vertex-frontiers",
        &["--instance-frontiers", "false"],
        false,
    ),
    ("central", &["--tracker-layout", "central"], false),
    ("batched", &["--ack-flush-on-idle", "false"], false),
    (
        "sharded",
        &["--tracker-shards", "2", "--tracker-layout", "central"],
        false,
    ),
    ("tracker-midway", &["--tracker-processes", "1"], true),
    ("markers", &["--tracking", "markers"], false),
];

/// The tuning experiment's variants: (name, options).
const TUNING: [(&str, &[&str]); 7] = [
    ("default", &[]),
    ("vertex-frontiers", &["--instance-frontiers", "false"]),
    ("fixed-window", &["--max-credit-window", "64"]),
    ("capacity-1024", &["--channel-capacity", "1024"]),
    ("flush-10ms", &["--flush-timeout", "10ms"]),
    (
        "batched",
        &[
            "--batch-flush-on-idle",
            "false",
            "--ack-flush-on-idle",
            "false",
        ],
    ),
    (
        "ack-10ms",
        &[
            "--ack-flush-interval",
            "10ms",
            "--ack-flush-on-idle",
            "false",
        ],
    ),
];

/// The regions experiment's variants on the global city set's 8 cities (Frankfurt, New York,
/// San Francisco, Tokyo, Seattle, London, Amsterdam, Atlanta; `net/delay/topology.rs`):
/// (name, options).
const REGIONS: [(&str, &[&str]); 4] = [
    ("replicated", &[]),
    // Europe (Frankfurt, London, Amsterdam), U.S. east (New York, Atlanta), U.S. west (San
    // Francisco, Seattle), Tokyo; each region's replica in its first city. Hops inside a
    // region: 4-15 ms one way.
    ("regions-4", &["--tracker-regions", "0,5,6/1,7/2,4/3"]),
    // America as one region: New York's replica is 35-38 ms from San Francisco and Seattle.
    ("regions-3", &["--tracker-regions", "0,5,6/1,2,4,7/3"]),
    ("central", &["--tracker-layout", "central"]),
];

/// How far Storm's sources may drift apart, ms, on top of the one-way delay, before its
/// windowed bolt loses views: its spouts fell 50-100 ms behind their schedule on 2 supervisors
/// here (docs/wan.md, "A Storm cluster in namespaces").
pub(crate) const STORM_DRIFT_MS: u64 = 200;

fn one() -> usize {
    1
}

fn xorflow_only() -> Vec<Engine> {
    vec![Engine::Xorflow]
}

fn strings(a: &[&str]) -> Vec<String> {
    a.iter().map(|s| s.to_string()).collect()
}

impl Plan {
    /// Every run, in order: [`Plan::repeat`] rounds of every point.
    pub fn specs(&self) -> Vec<RunSpec> {
        let mut v = Vec::new();
        for &e in &self.experiments {
            match e {
                Experiment::Mesh => self.mesh(&mut v),
                Experiment::Topology => self.topology(&mut v),
                Experiment::Jitter => self.jitter(&mut v),
                Experiment::Notification => self.notification(&mut v),
                Experiment::Tuning => self.tuning(&mut v),
                Experiment::Regions => self.regions(&mut v),
            }
        }
        let points = v.len();
        v.into_iter()
            .cycle()
            .take(points * self.repeat.max(1))
            .collect()
    }

    fn ysb(&self, e: Experiment, rate: u64, processes: usize, delay: Delay) -> RunSpec {
        RunSpec {
            experiment: e,
            engine: Engine::Xorflow,
            workload: Workload::Ysb,
            rate,
            processes,
            delay,
            variant: "default".into(),
            args: Vec::new(),
        }
    }

    /// Every rate, process count, engine and RTT; the first rate and process count also with one
    /// tracking component per vertex (`--instance-frontiers false`: how it was before), and
    /// the last rate at every process count with credit windows fixed at the channel capacity
    /// (`--max-credit-window 64`: how it was before `net/credit.rs`).
    fn mesh(&self, v: &mut Vec<RunSpec>) {
        for &rate in &self.rates {
            for &p in &self.processes {
                for &engine in &self.engines {
                    for &rtt in &self.rtts_ms {
                        v.push(RunSpec {
                            engine,
                            ..self.ysb(Experiment::Mesh, rate, p, Delay::mesh(rtt))
                        });
                    }
                }
            }
        }
        if self.quick {
            return;
        }
        for &rtt in &self.rtts_ms {
            let (rate, p) = (self.rates[0], self.processes[0]);
            v.push(RunSpec {
                variant: "vertex-frontiers".into(),
                args: strings(&["--instance-frontiers", "false"]),
                ..self.ysb(Experiment::Mesh, rate, p, Delay::mesh(rtt))
            });
        }
        if self.engines.contains(&Engine::Storm) {
            self.storm_window_bolt(v);
        }
        let rate = *self.rates.last().expect("a rate");
        for &p in &self.processes {
            for &rtt in &self.rtts_ms {
                v.push(RunSpec {
                    variant: "fixed-window".into(),
                    args: strings(&["--max-credit-window", "64"]),
                    ..self.ysb(Experiment::Mesh, rate, p, Delay::mesh(rtt))
                });
            }
        }
    }

    /// Storm with its event-time windowed bolt as the window (`--window bolt`) instead of the
    /// CampaignProcessor's 1 s tick, at the first rate and process count, every RTT. Storm's
    /// window scan stops at the first view (in arrival order) more than its lag past the
    /// window's end, and a remote source's views arrive one one-way delay after the local
    /// source's, so the lag must cover that delay or views are lost (the run then fails,
    /// `peers/storm/.../YsbTopology.java`). The lag is fixed for the series, half the largest
    /// RTT plus [`STORM_DRIFT_MS`], so the series' latency grows by the data path alone.
    fn storm_window_bolt(&self, v: &mut Vec<RunSpec>) {
        let (rate, p) = (self.rates[0], self.processes[0]);
        let largest = self.rtts_ms.iter().copied().max().unwrap_or(0);
        let lateness = (largest / 2 + STORM_DRIFT_MS).to_string();
        for &rtt in &self.rtts_ms {
            v.push(RunSpec {
                engine: Engine::Storm,
                variant: "window-bolt".into(),
                args: strings(&["--window", "bolt", "--lateness-ms", &lateness]),
                ..self.ysb(Experiment::Mesh, rate, p, Delay::mesh(rtt))
            });
        }
    }

    /// The city sets at the first rate (the wide-area paper's default load, 22,000 events/s); Flink too
    /// in namespaces (its proxies on loopback cannot delay per pair).
    fn topology(&self, v: &mut Vec<RunSpec>) {
        let rate = self.rates[0];
        let engines = (self.engines.iter())
            .filter(|&&e| e == Engine::Xorflow || self.network == super::Network::Netns);
        for t in &self.topologies {
            for &p in self.processes.iter().filter(|&&p| p <= 8) {
                for &engine in engines.clone() {
                    v.push(RunSpec {
                        engine,
                        ..self.ysb(Experiment::Topology, rate, p, Delay::Topology(t.clone()))
                    });
                }
            }
        }
    }

    /// 75 ms steady and 74-76 ms, at the first rate, every engine (Flink behind its proxies on
    /// loopback, which jitter each direction as the transport does; both peers as clusters in
    /// namespaces).
    fn jitter(&self, v: &mut Vec<RunSpec>) {
        let rate = self.rates[0];
        for &p in &self.processes {
            for &engine in &self.engines {
                for jitter_ms in [0, 1] {
                    let delay = Delay::Mesh {
                        rtt_ms: 75,
                        jitter_ms,
                    };
                    v.push(RunSpec {
                        engine,
                        ..self.ysb(Experiment::Jitter, rate, p, delay)
                    });
                }
            }
        }
    }

    /// The chain on 2 processes, each variant at each RTT.
    fn notification(&self, v: &mut Vec<RunSpec>) {
        for (name, args, tracker_process) in NOTIFICATION {
            if self.quick && !matches!(name, "replicated" | "markers") {
                continue;
            }
            for &rtt in &self.chain_rtts_ms {
                let delay = if tracker_process {
                    // Workers `rtt` apart, the tracker process half-way (rtt / 2 from each).
                    let (r, h) = (rtt as f64, rtt as f64 / 2.0);
                    Delay::Matrix(vec![vec![0.0, r, h], vec![r, 0.0, h], vec![h, h, 0.0]])
                } else {
                    Delay::mesh(rtt)
                };
                v.push(RunSpec {
                    experiment: Experiment::Notification,
                    engine: Engine::Xorflow,
                    workload: Workload::Chain,
                    rate: self.chain_rate,
                    processes: 2,
                    delay,
                    variant: name.into(),
                    args: strings(args),
                });
            }
        }
    }

    /// The chain on the global city set's 8 processes, each tracker layout once; only when the
    /// sweep has 8 processes (the three regions need all 8 cities).
    fn regions(&self, v: &mut Vec<RunSpec>) {
        if !self.processes.contains(&8) {
            return;
        }
        for (name, args) in REGIONS {
            v.push(RunSpec {
                experiment: Experiment::Regions,
                engine: Engine::Xorflow,
                workload: Workload::Chain,
                rate: self.chain_rate,
                processes: 8,
                delay: Delay::Topology("global".into()),
                variant: name.into(),
                args: strings(args),
            });
        }
    }

    /// The knobs at the largest RTT, the highest rate, the fewest processes.
    fn tuning(&self, v: &mut Vec<RunSpec>) {
        let rate = *self.rates.iter().max().expect("a rate");
        let rtt = *self.rtts_ms.iter().max().expect("an RTT");
        let p = self.processes[0];
        for (i, (name, args)) in TUNING.iter().enumerate() {
            if self.quick && i >= 2 {
                break;
            }
            v.push(RunSpec {
                variant: name.to_string(),
                args: strings(args),
                ..self.ysb(Experiment::Tuning, rate, p, Delay::mesh(rtt))
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(experiments: Vec<Experiment>, quick: bool) -> Plan {
        Plan {
            experiments,
            engines: vec![Engine::Xorflow, Engine::Flink],
            rates: vec![22_000, 55_000],
            processes: vec![2, 4, 8],
            rtts_ms: vec![0, 10, 40, 100],
            topologies: vec!["eu".into(), "us".into(), "global".into()],
            duration_s: 30,
            chain_rate: 20_000,
            chain_duration_s: 10,
            chain_rtts_ms: vec![0, 40],
            quick,
            repeat: 1,
            network: Default::default(),
            tcp_congestion: "cubic".into(),
        }
    }

    #[test]
    fn every_experiment_has_its_runs() {
        let p = plan(Experiment::ALL.to_vec(), false);
        let specs = p.specs();
        let count = |e| specs.iter().filter(|s| s.experiment == e).count();
        assert_eq!(count(Experiment::Mesh), 2 * 3 * 4 * 2 + 4 + 3 * 4);
        // Flink on loopback: the mesh and the jitter runs, behind its proxies.
        let flink = specs.iter().filter(|s| s.engine == Engine::Flink);
        assert!(
            (flink.clone()).all(|s| matches!(s.experiment, Experiment::Mesh | Experiment::Jitter))
        );
        assert_eq!(flink.count(), 2 * 3 * 4 + 3 * 2);
        assert_eq!(count(Experiment::Topology), 3 * 3);
        assert_eq!(count(Experiment::Jitter), 3 * 2 * 2);
        assert_eq!(count(Experiment::Notification), 7 * 2);
        assert_eq!(count(Experiment::Tuning), 7);
        assert_eq!(count(Experiment::Regions), 4);
        // In namespaces Flink runs the city sets too.
        let netns = Plan {
            network: super::super::Network::Netns,
            ..plan(vec![Experiment::Topology], false)
        };
        let topo = netns.specs();
        assert_eq!(topo.len(), 2 * 3 * 3);
        assert_eq!(
            topo.iter().filter(|s| s.engine == Engine::Flink).count(),
            3 * 3
        );
        // So does Storm, which runs in namespaces only (the CLI adds it there).
        let storm = Plan {
            engines: vec![Engine::Xorflow, Engine::Storm],
            ..netns
        };
        let s = storm.specs();
        assert_eq!(
            s.iter().filter(|s| s.engine == Engine::Storm).count(),
            3 * 3
        );
        // In the mesh Storm runs with both windows; the windowed bolt's lag is one for the
        // series (half the largest RTT, 50 ms, plus the drift), at the first rate and count.
        let mesh = Plan {
            experiments: vec![Experiment::Mesh],
            ..storm
        }
        .specs();
        let bolt: Vec<&RunSpec> = mesh.iter().filter(|s| s.variant == "window-bolt").collect();
        assert_eq!(bolt.len(), 4);
        assert!(bolt.iter().all(|s| s.engine == Engine::Storm
            && (s.rate, s.processes) == (22_000, 2)
            && s.args == strings(&["--window", "bolt", "--lateness-ms", "250"])));
        assert_eq!(
            (mesh.iter())
                .filter(|s| s.engine == Engine::Storm && s.variant == "default")
                .count(),
            2 * 3 * 4
        );
        let regions = specs.iter().find(|s| s.variant == "regions-4").unwrap();
        assert_eq!((regions.processes, regions.workload), (8, Workload::Chain));
        // Without 8 processes in the sweep there is no regions run.
        let mut p4 = plan(vec![Experiment::Regions], false);
        p4.processes = vec![2, 4];
        assert!(p4.specs().is_empty());
        // Ids are unique and file-name safe.
        let ids: std::collections::BTreeSet<String> =
            specs.iter().enumerate().map(|(i, s)| s.id(i)).collect();
        assert_eq!(ids.len(), specs.len());
        assert!(ids.iter().all(|i| !i.contains(' ') && !i.contains('/')));
        // The tracker process sits half-way: a 3 x 3 matrix with rtt / 2 to each worker.
        let mid = specs
            .iter()
            .find(|s| s.variant == "tracker-midway")
            .unwrap();
        let last = specs
            .iter()
            .rev()
            .find(|s| s.variant == "tracker-midway")
            .unwrap();
        assert_eq!(mid.delay, Delay::Matrix(vec![vec![0.0; 3]; 3]));
        assert_eq!(last.delay.rtt_ms(3).1, 40.0);
        // Tuning runs at the worst point.
        let t = specs
            .iter()
            .find(|s| s.experiment == Experiment::Tuning)
            .unwrap();
        assert_eq!((t.rate, t.delay.clone()), (55_000, Delay::mesh(100)));
        let q = plan(vec![Experiment::Notification, Experiment::Tuning], true).specs();
        assert_eq!(q.len(), 2 * 2 + 2);
        // Repeats come in rounds: every point once, then again.
        let mut p = plan(vec![Experiment::Tuning], true);
        p.repeat = 3;
        let r = p.specs();
        assert_eq!(r.len(), 3 * 2);
        assert_eq!((r[0].clone(), r[1].clone()), (r[2].clone(), r[3].clone()));
        assert_ne!(r[0], r[1]);
    }
}
