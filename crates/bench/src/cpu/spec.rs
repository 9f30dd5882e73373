//! What one run of `xorflow-lab bench cpu` is: an experiment of the CPU-efficiency paper's, an engine, a YSB
//! point and the variant that the experiment varies (rate, deployment, campaigns, tracking).

use crate::ysb::{Engine, Point};
use anyhow::Result;
use serde::Serialize;
use xorflow_runtime::ValueName;

/// The CPU-efficiency paper's experiments, scaled to this machine (docs/cpu.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Experiment {
    /// Latency and throughput with and without the profiler (paper: +3.9 % latency, Flink).
    Overhead,
    /// Five profiled runs at one point: each task's share must vary by under 3 points.
    Consistency,
    /// CPU per event per task from low load to each engine's sustainable maximum.
    Load,
    /// One process of 2 workers against 2 processes of 1, each pinned to its own core.
    Scale,
    /// State size: 1k to 16k campaigns (paper: Flink's join cost +16.3 %).
    State,
    /// trAcker's own share (tracker, acker) at granularity 1, 100 and 1000 ms, next to markers.
    Tracking,
}

impl Experiment {
    /// All of them, in the order they run.
    pub const ALL: [Experiment; 6] = [
        Experiment::Overhead,
        Experiment::Consistency,
        Experiment::Load,
        Experiment::Scale,
        Experiment::State,
        Experiment::Tracking,
    ];
}

/// How a run's processes are placed on the cores.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Pin {
    /// Wherever the kernel schedules them.
    Free,
    /// Process i of the run (xorflow's, in pid order) on core i only, every thread (`taskset
    /// -a -c -p`): each process is a "node" of one core (the CPU-efficiency paper's scale-out).
    CorePerProcess,
}

/// One run of the sweep.
#[derive(Clone, Debug, Serialize)]
pub struct RunSpec {
    /// The experiment it belongs to.
    pub experiment: Experiment,
    /// The engine (its name in results).
    #[serde(serialize_with = "engine_name")]
    pub engine: Engine,
    /// Rate, duration, processes, workers, sources.
    #[serde(serialize_with = "point_fields")]
    pub point: Point,
    /// What the experiment varies, for tables (e.g. `100000/s`, `2x1 pinned`, `g=100ms`).
    pub label: String,
    /// Arguments for xorflow's `bench ysb` only (`--granularity`, `--tracking`).
    pub xorflow_args: Vec<String>,
    /// Placement on the cores.
    pub pin: Pin,
    /// Campaigns of the ad table (10 ads each; the original has 100).
    pub campaigns: usize,
    /// Whether `xorflow-lab profile` samples the run.
    pub profiled: bool,
    /// Repetition of this (experiment, engine, label), from 0.
    pub rep: usize,
}

impl RunSpec {
    /// A short name for its folder: `NN-experiment-engine-label-rep`, filename-safe.
    pub fn id(&self, index: usize) -> String {
        let label: String = self
            .label
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect();
        format!(
            "{index:02}-{}-{}-{label}-{}{}",
            self.experiment.name(),
            self.engine.name(),
            self.rep,
            if self.profiled { "" } else { "-plain" }
        )
    }
}

fn engine_name<S: serde::Serializer>(e: &Engine, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(e.name())
}

fn point_fields<S: serde::Serializer>(p: &Point, s: S) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeStruct;
    let mut st = s.serialize_struct("Point", 5)?;
    st.serialize_field("rate", &p.rate)?;
    st.serialize_field("duration_s", &p.duration_s)?;
    st.serialize_field("processes", &p.processes)?;
    st.serialize_field("workers", &p.workers)?;
    st.serialize_field("sources", &p.sources)?;
    st.end()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_names_are_refused() {
        for e in Experiment::ALL {
            assert_eq!(crate::named::by_name::<Experiment>(e.name()).unwrap(), e);
        }
        let err = (crate::named::by_name::<Experiment>("latency").unwrap_err()).to_string();
        assert!(
            err.contains("'latency'") && err.contains("overhead"),
            "{err}"
        );
    }

    #[test]
    fn ids_are_filename_safe_and_tell_plain_runs_apart() {
        let spec = RunSpec {
            experiment: Experiment::Scale,
            engine: Engine::Xorflow,
            point: Point {
                rate: 1000,
                duration_s: 20,
                processes: 2,
                workers: 1,
                sources: 2,
            },
            label: "2x1 pinned/core".into(),
            xorflow_args: vec![],
            pin: Pin::CorePerProcess,
            campaigns: 100,
            profiled: false,
            rep: 1,
        };
        assert_eq!(spec.id(3), "03-scale-xorflow-2x1_pinned_core-1-plain");
    }
}
