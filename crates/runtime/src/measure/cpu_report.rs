//! A finished run's CPU by operator and by task (the in-engine accounting, docs/measurement.md):
//! what every command's `--json` and text report show.

use super::cpu::CPU_NS;
use crate::report::RunReport;
use serde::{Deserialize, Serialize};

/// CPU by operator and by task, over every process the run report covers.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuReport {
    /// Per vertex (all instances, all processes), in graph order.
    pub operators: Vec<OperatorCpu>,
    /// Per process.
    pub processes: Vec<ProcessTasks>,
    /// CPU of everything, s (the processes' sum).
    pub total_s: f64,
}

/// One vertex's CPU.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct OperatorCpu {
    /// Vertex name.
    pub vertex: String,
    /// CPU time of its instances, s.
    pub cpu_s: f64,
    /// Elements received.
    pub elements_in: u64,
    /// Elements emitted.
    pub elements_out: u64,
    /// CPU per element, ns: per element received, or emitted for a source (none: `None`).
    pub ns_per_element: Option<f64>,
    /// The vertex ran chained into this one (operator chaining, `port/chained.rs`): its CPU is
    /// counted there, at the head of its chain, and its own `cpu_s` is about 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chained_into: Option<String>,
}

/// One process's CPU by task, s.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ProcessTasks {
    /// Process index.
    pub process: usize,
    /// All its threads, s.
    pub cpu_s: f64,
    /// Its worker threads: `operators` (the vertices above), `frontiers` (the loop and frontier
    /// notifications), `flush` (partial batches), `acks` (hand-off to the acker and the tracker
    /// shards it flushes to in this process), `network` (queued frames written to other
    /// processes), `idle`, in this order; then `other threads`: the process's CPU outside its
    /// worker threads (the network thread: receiving, decoding, sending; dedicated trackers).
    pub tasks: Vec<TaskCpu>,
}

/// One task's CPU.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TaskCpu {
    /// Task name.
    pub task: String,
    /// CPU time, s.
    pub cpu_s: f64,
}

/// The head of the chain vertex `name` ran in, if it ran chained (its instances count
/// [`crate::operators::chain::CHAINED`]): its producer's, walking up while that one is chained.
fn chain_head(report: &RunReport, name: &str) -> Option<String> {
    let chained = |name: &str| {
        report
            .vertex(name)
            .is_some_and(|v| v.counter(crate::operators::chain::CHAINED) > 0)
    };
    if !chained(name) {
        return None;
    }
    let g = &report.graph;
    let mut at = g.vertices.iter().position(|v| v.name == name)?;
    // A chained vertex comes after its producer, so the walk ends; bounded all the same.
    for _ in 0..g.vertices.len() {
        at = g.edges.iter().find(|e| e.to == at)?.from;
        if !chained(&g.vertices[at].name) {
            return Some(g.vertices[at].name.clone());
        }
    }
    None
}

impl CpuReport {
    /// The CPU of `report`'s processes and vertices.
    pub fn of(report: &RunReport) -> Self {
        let s = |ns: u64| ns as f64 * 1e-9;
        let operators = report
            .vertices
            .iter()
            .zip(&report.graph.vertices)
            .map(|(v, d)| {
                let ns = v.counter(CPU_NS);
                let per = if d.is_source {
                    v.elements_out
                } else {
                    v.elements_in
                };
                let chained_into = chain_head(report, v.name.as_str());
                OperatorCpu {
                    vertex: v.name.clone(),
                    cpu_s: s(ns),
                    elements_in: v.elements_in,
                    elements_out: v.elements_out,
                    ns_per_element: (per > 0 && chained_into.is_none())
                        .then(|| ns as f64 / per as f64),
                    chained_into,
                }
            })
            .collect();
        let processes: Vec<ProcessTasks> = (report.cpu.iter())
            .map(|p| {
                let task = |name: &str, ns: u64| TaskCpu {
                    task: name.to_string(),
                    cpu_s: s(ns),
                };
                let mut tasks: Vec<TaskCpu> = (p.workers.tasks().iter())
                    .map(|&(name, ns)| task(name, ns))
                    .collect();
                let outside = p.cpu_ns.saturating_sub(p.workers.thread_ns);
                tasks.push(task("other threads", outside));
                ProcessTasks {
                    process: p.process,
                    cpu_s: s(p.cpu_ns),
                    tasks,
                }
            })
            .collect();
        CpuReport {
            operators,
            total_s: processes.iter().map(|p| p.cpu_s).sum(),
            processes,
        }
    }

    /// A few lines of text: each operator's CPU per element, and each task's share of the CPU.
    pub fn describe(&self) -> String {
        let mut t = String::from("cpu by operator:");
        for o in &self.operators {
            if let Some(head) = &o.chained_into {
                t += &format!(" {} (chained into {head});", o.vertex);
                continue;
            }
            t += &format!(" {} {:.2} s", o.vertex, o.cpu_s);
            if let Some(n) = o.ns_per_element {
                t += &format!(" ({n:.1} ns/element)");
            }
            t += ";";
        }
        t.pop();
        t += "\ncpu by task:";
        let total = self.total_s.max(1e-12);
        let mut sum: Vec<(String, f64)> = Vec::new();
        for p in &self.processes {
            for x in &p.tasks {
                match sum.iter_mut().find(|y| y.0 == x.task) {
                    Some(y) => y.1 += x.cpu_s,
                    None => sum.push((x.task.clone(), x.cpu_s)),
                }
            }
        }
        for (name, v) in sum {
            t += &format!(" {name} {:.1} %;", 100.0 * v / total);
        }
        t.pop();
        t + &format!(" (of {:.2} CPU s)", self.total_s)
    }
}
