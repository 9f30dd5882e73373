//! Task CPU: each task's share of a process's samples times the process's CPU time, and CPU
//! per processed event (the CPU-efficiency paper, Algorithm 1, lines 21-24, with CPU time for PMC cycles).

use std::collections::BTreeMap;
use std::fmt::Write as _;

/// One task's line of `summary.csv`.
#[derive(Clone, Debug, PartialEq)]
pub struct TaskRow {
    /// The task's name.
    pub task: String,
    /// Samples mapped to it.
    pub samples: u64,
    /// Its share of all samples, 0-1 (0 when there are no samples).
    pub share: f64,
    /// CPU time attributed to it, s.
    pub cpu_s: f64,
    /// CPU per event, ns (with `--events`).
    pub cpu_ns_per_event: Option<f64>,
}

/// The rows of one process: `samples` per task (in `order`, then any other task of `samples`
/// in name order), `cpu_ns` the process's CPU time over the profile, `events` the events
/// processed (by the whole run).
///
/// share = samples / all samples; cpu_s = share x cpu_ns / 1e9; ns/event = cpu_s x 1e9 / events.
pub fn attribute(
    order: &[String],
    samples: &BTreeMap<String, u64>,
    cpu_ns: u64,
    events: Option<u64>,
) -> Vec<TaskRow> {
    let total: u64 = samples.values().sum();
    ordered(order, samples)
        .into_iter()
        .map(|(task, n)| {
            let share = if total == 0 {
                0.0
            } else {
                n as f64 / total as f64
            };
            let cpu_s = share * cpu_ns as f64 / 1e9;
            TaskRow {
                task,
                samples: n,
                share,
                cpu_s,
                cpu_ns_per_event: per_event(cpu_s, events),
            }
        })
        .collect()
}

/// The whole run's rows from its processes' rows: samples and CPU summed per task, share
/// recomputed over all samples (so the shares of the run weigh each process by its samples,
/// the CPU by its CPU time).
pub fn combine(order: &[String], processes: &[Vec<TaskRow>], events: Option<u64>) -> Vec<TaskRow> {
    let mut samples: BTreeMap<String, u64> = BTreeMap::new();
    let mut cpu: BTreeMap<String, f64> = BTreeMap::new();
    for rows in processes {
        for r in rows {
            *samples.entry(r.task.clone()).or_insert(0) += r.samples;
            *cpu.entry(r.task.clone()).or_insert(0.0) += r.cpu_s;
        }
    }
    let total: u64 = samples.values().sum();
    ordered(order, &samples)
        .into_iter()
        .map(|(task, n)| {
            let cpu_s = cpu.get(&task).copied().unwrap_or(0.0);
            TaskRow {
                share: if total == 0 {
                    0.0
                } else {
                    n as f64 / total as f64
                },
                cpu_ns_per_event: per_event(cpu_s, events),
                task,
                samples: n,
                cpu_s,
            }
        })
        .collect()
}

fn per_event(cpu_s: f64, events: Option<u64>) -> Option<f64> {
    events.filter(|&e| e > 0).map(|e| cpu_s * 1e9 / e as f64)
}

fn ordered(order: &[String], samples: &BTreeMap<String, u64>) -> Vec<(String, u64)> {
    let mut out: Vec<(String, u64)> = order
        .iter()
        .map(|t| (t.clone(), samples.get(t).copied().unwrap_or(0)))
        .collect();
    for (t, &n) in samples {
        if !order.contains(t) {
            out.push((t.clone(), n));
        }
    }
    out
}

/// `summary.csv`: `task,samples,share,cpu_s,cpu_ns_per_event` (the last empty without events).
pub fn csv(rows: &[TaskRow]) -> String {
    let mut s = String::from("task,samples,share,cpu_s,cpu_ns_per_event\n");
    for r in rows {
        let per = r
            .cpu_ns_per_event
            .map_or(String::new(), |v| format!("{v:.3}"));
        let _ = writeln!(
            s,
            "{},{},{:.6},{:.6},{}",
            csv_field(&r.task),
            r.samples,
            r.share,
            r.cpu_s,
            per
        );
    }
    s
}

/// Quotes a CSV field holding a comma, quote or line break.
pub fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests;
