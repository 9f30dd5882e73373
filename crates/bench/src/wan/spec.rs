//! What one run of `xorflow-lab bench wan` is: an experiment of the wide-area paper's, a workload (the YSB or
//! the trAcker paper's chain), the delay between the processes and the variant the experiment varies.

use anyhow::Result;
use serde::{Deserialize, Serialize};
use xorflow_runtime::ValueName;

/// The wide-area paper's experiments, scaled to this machine (docs/wan.md).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, clap::ValueEnum,
)]
#[serde(rename_all = "lowercase")]
pub enum Experiment {
    /// The YSB at each rate and process count, the same RTT between every pair, 0-100 ms.
    Mesh,
    /// The YSB on the paper's EU, US and global city sets (Table I).
    Topology,
    /// The YSB at 74-76 ms RTT (the wide-area paper's jitter run) next to a steady 75 ms.
    Jitter,
    /// Notification latency on the chain under RTT: trAcker replicated, central, batched,
    /// sharded, in a dedicated process midway, and markers.
    Notification,
    /// The YSB at the largest RTT with the knobs the wide-area paper tunes: channel capacity (credits
    /// against the bandwidth-delay product), flush timeout, batching of acks and batches.
    Tuning,
    /// Tracker replicas by region: the chain on the global city set's 8 processes with a
    /// replica per process, one per region (Europe, America, Tokyo) and one central tracker.
    Regions,
}

impl Experiment {
    /// All of them, in the order they run.
    pub const ALL: [Experiment; 6] = [
        Experiment::Mesh,
        Experiment::Topology,
        Experiment::Jitter,
        Experiment::Notification,
        Experiment::Tuning,
        Experiment::Regions,
    ];
}

/// Where a run's xorflow processes talk to each other.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Network {
    /// On loopback, the delay injected inside xorflow (`--rtt` and friends on the job).
    #[default]
    Loopback,
    /// Each process in its own network namespace behind `xorflow-lab delay-router`, which delays
    /// every packet (`super::netns`).
    Netns,
}

impl Network {
    /// `loopback` or `netns`.
    pub fn name(self) -> &'static str {
        match self {
            Network::Loopback => "loopback",
            Network::Netns => "netns",
        }
    }
}

/// The delay between the processes of a run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Delay {
    /// The same RTT between every pair, ms (`--rtt`), with jitter, ms (`--rtt-jitter`).
    Mesh {
        /// Round-trip time, ms.
        rtt_ms: u64,
        /// Jitter on it, ms.
        jitter_ms: u64,
    },
    /// A the wide-area paper city set (`--rtt-topology`).
    Topology(String),
    /// A matrix written for the run (`--delay-matrix`): row per process, ms.
    Matrix(Vec<Vec<f64>>),
}

impl Delay {
    /// A steady full mesh of `rtt_ms`.
    pub fn mesh(rtt_ms: u64) -> Self {
        Delay::Mesh {
            rtt_ms,
            jitter_ms: 0,
        }
    }

    /// Its engine options; a matrix is written to `matrix_file` first.
    ///
    /// # Errors
    /// The matrix file cannot be written.
    pub fn args(&self, matrix_file: &std::path::Path) -> Result<Vec<String>> {
        Ok(match self {
            Delay::Mesh { rtt_ms: 0, .. } => Vec::new(),
            Delay::Mesh { rtt_ms, jitter_ms } => {
                let mut a = vec!["--rtt".into(), format!("{rtt_ms}ms")];
                if *jitter_ms > 0 {
                    a.extend(["--rtt-jitter".into(), format!("{jitter_ms}ms")]);
                }
                a
            }
            Delay::Topology(t) => vec!["--rtt-topology".into(), t.clone()],
            Delay::Matrix(rows) => {
                let text: String = rows
                    .iter()
                    .map(|r| r.iter().map(|v| format!("{v} ")).collect::<String>() + "\n")
                    .collect();
                crate::stand::files::write_whole(matrix_file, text.as_bytes())?;
                vec!["--delay-matrix".into(), matrix_file.display().to_string()]
            }
        })
    }

    /// Mean and largest RTT over the pairs of `processes` processes, ms.
    pub fn rtt_ms(&self, processes: usize) -> (f64, f64) {
        use xorflow_runtime::net::delay::{DelayMatrix, Topology};
        let m = match self {
            Delay::Mesh { rtt_ms, .. } => {
                DelayMatrix::from_fn(processes, |i, j| if i == j { 0.0 } else { *rtt_ms as f64 })
            }
            Delay::Topology(t) => {
                match xorflow_runtime::config::parse_value::<Topology>("topology", t) {
                    Ok(t) => DelayMatrix::from_fn(processes.min(8), |i, j| t.rtt_ms(i, j)),
                    Err(_) => return (0.0, 0.0),
                }
            }
            Delay::Matrix(rows) => DelayMatrix::from_fn(rows.len(), |i, j| rows[i][j]),
        };
        m.mean_and_max_ms()
    }

    /// A short label: `rtt 40ms`, `rtt 75+-1ms`, `eu`, `matrix`.
    pub fn label(&self) -> String {
        match self {
            Delay::Mesh {
                rtt_ms,
                jitter_ms: 0,
            } => format!("rtt {rtt_ms}ms"),
            Delay::Mesh { rtt_ms, jitter_ms } => format!("rtt {rtt_ms}+-{jitter_ms}ms"),
            Delay::Topology(t) => t.clone(),
            Delay::Matrix(_) => "matrix".into(),
        }
    }
}

/// The job a run measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Workload {
    /// The YSB (`xorflow-lab bench ysb`), 10 s windows: window latency and throughput.
    Ysb,
    /// The trAcker paper's chain (`xorflow-lab bench chain`): notification and element latency.
    Chain,
}

/// One run (equal specs: one point of the sweep, run once per round).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunSpec {
    /// Which experiment it belongs to.
    pub experiment: Experiment,
    /// The engine: xorflow, or Flink behind delay proxies (results written before the peers
    /// ran have none: xorflow).
    #[serde(default)]
    pub engine: crate::ysb::Engine,
    /// The job.
    pub workload: Workload,
    /// Events (YSB) or elements (chain) per second, all sources together.
    pub rate: u64,
    /// Worker processes, one worker each (dedicated tracker processes come on top).
    pub processes: usize,
    /// The delay.
    pub delay: Delay,
    /// What the experiment varies besides the delay (`default`, `batched`, `markers`, ...).
    pub variant: String,
    /// The variant's engine options.
    pub args: Vec<String>,
}

impl RunSpec {
    /// Its id in results: `NNN-experiment[-engine]-pP-rate-delay-variant` (the engine unless
    /// xorflow), file-name safe.
    pub fn id(&self, i: usize) -> String {
        let raw = format!(
            "{i:03}-{}{}-p{}-{}-{}-{}",
            self.experiment.name(),
            self.engine_tag(),
            self.processes,
            self.rate,
            self.delay.label(),
            self.variant
        );
        raw.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' {
                    c
                } else {
                    '-'
                }
            })
            .collect()
    }

    /// `-flink` for a peer's run, nothing for xorflow's.
    fn engine_tag(&self) -> String {
        match self.engine {
            crate::ysb::Engine::Xorflow => String::new(),
            e => format!("-{}", e.name()),
        }
    }

    /// The series it belongs to (the runs a knee is looked for in): everything but the delay.
    pub fn series(&self) -> String {
        format!(
            "{}{} {} p={} {}/s {}",
            self.experiment.name(),
            self.engine_tag(),
            match self.workload {
                Workload::Ysb => "ysb",
                Workload::Chain => "chain",
            },
            self.processes,
            self.rate,
            self.variant
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_render_as_engine_options_and_figures() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("m.txt");
        assert!(Delay::mesh(0).args(&f).unwrap().is_empty());
        assert_eq!(Delay::mesh(40).args(&f).unwrap(), ["--rtt", "40ms"]);
        let j = Delay::Mesh {
            rtt_ms: 75,
            jitter_ms: 1,
        };
        assert_eq!(
            j.args(&f).unwrap(),
            ["--rtt", "75ms", "--rtt-jitter", "1ms"]
        );
        assert_eq!(j.label(), "rtt 75+-1ms");
        let m = Delay::Matrix(vec![vec![0.0, 40.0], vec![40.0, 0.0]]);
        let a = m.args(&f).unwrap();
        assert_eq!(a[0], "--delay-matrix");
        let back = xorflow_runtime::net::delay::matrix::read(&f, 2).unwrap();
        assert_eq!(back.rtt_ms(0, 1), 40.0);
        assert_eq!(Delay::Topology("eu".into()).rtt_ms(2), (16.0, 16.0));
        assert_eq!(Delay::mesh(40).rtt_ms(4), (40.0, 40.0));
        for e in Experiment::ALL {
            assert_eq!(crate::named::by_name::<Experiment>(e.name()).unwrap(), e);
        }
        assert!(crate::named::by_name::<Experiment>("moon")
            .unwrap_err()
            .to_string()
            .contains("mesh"));
    }
}
