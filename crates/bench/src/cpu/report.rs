//! `bench cpu`'s tables: `runs.csv` (a row per run), `tasks.csv` (a row per run and task) and
//! `REPORT.md`, one section per experiment with the CPU-efficiency paper's figures next to ours.
//!
//! CPU per event is the steady CPU (every task but start-up: [`STARTUP_TASKS`]) over the events
//! the generator emitted; shares are of the steady CPU.

use super::measured::{Measured, STARTUP_TASKS};
use super::plan::Plan;
use super::spec::Experiment;
use crate::subprocess::median;
use crate::ysb::{command_line, Engine};
use anyhow::Result;
use std::fmt::Write as _;
use std::path::Path;
use xorflow_runtime::ValueName;

/// The share of steady CPU under which a task gets no column of its own in the load tables.
const MIN_COLUMN_SHARE: f64 = 0.02;
/// The CPU-efficiency paper's consistency criterion: standard deviation of every task's share, percentage points.
pub const CONSISTENCY_PP: f64 = 3.0;
/// The aim: xorflow's CPU per YSB event at least this many times lower than Flink's.
pub const AIM_VS_FLINK: f64 = 10.0;

/// Writes `runs.csv`, `tasks.csv` and `REPORT.md` into `dir`.
///
/// # Errors
/// A file cannot be written.
pub fn write(dir: &Path, plan: &Plan, runs: &[Measured]) -> Result<()> {
    let files = [
        ("runs.csv", runs_csv(runs)),
        ("tasks.csv", tasks_csv(runs)),
        ("REPORT.md", report(dir, plan, runs)),
    ];
    for (name, text) in files {
        crate::stand::files::write_whole(&dir.join(name), text.as_bytes())?;
    }
    Ok(())
}

/// One row per run: the point, the engine's figures and the steady CPU per event.
pub fn runs_csv(runs: &[Measured]) -> String {
    let mut s = String::from(
        "id,experiment,engine,label,profiled,rep,rate,processes,workers,campaigns,\
         events_emitted,events_per_s,window_p50_ms,window_p99_ms,counts_match_oracle,\
         cpu_s,steady_cpu_s,steady_ns_per_event\n",
    );
    for m in runs {
        let (sp, r) = (&m.spec, &m.result);
        let _ = writeln!(
            s,
            "{},{},{},{},{},{},{},{},{},{},{},{:.1},{:.3},{:.3},{},{:.4},{:.4},{:.1}",
            m.id,
            sp.experiment.name(),
            sp.engine.name(),
            sp.label,
            sp.profiled,
            sp.rep,
            sp.point.rate,
            sp.point.processes,
            sp.point.workers,
            sp.campaigns,
            r.events_emitted,
            r.throughput_events_per_s,
            r.window_latency_ms.p50,
            r.window_latency_ms.p99,
            r.counts_match_oracle
                .map_or("", |b| if b { "true" } else { "false" }),
            m.tasks.iter().map(|t| t.cpu_s).sum::<f64>(),
            m.steady_cpu_s(),
            m.steady_ns_per_event()
        );
    }
    s
}

/// One row per profiled run and task.
pub fn tasks_csv(runs: &[Measured]) -> String {
    let mut s =
        String::from("id,experiment,engine,label,rep,rate,task,samples,share,cpu_s,ns_per_event\n");
    for m in runs {
        for t in &m.tasks {
            let _ = writeln!(
                s,
                "{},{},{},{},{},{},{},{},{:.6},{:.6},{:.2}",
                m.id,
                m.spec.experiment.name(),
                m.spec.engine.name(),
                m.spec.label,
                m.spec.rep,
                m.spec.point.rate,
                xorflow_csv_field(&t.task),
                t.samples,
                t.share,
                t.cpu_s,
                m.ns_per_event(&t.task)
            );
        }
    }
    s
}

fn xorflow_csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn of(runs: &[Measured], x: Experiment) -> impl Iterator<Item = &Measured> {
    runs.iter().filter(move |m| m.spec.experiment == x)
}

/// REPORT.md.
pub fn report(dir: &Path, plan: &Plan, runs: &[Measured]) -> String {
    let mut t = String::new();
    let _ = writeln!(
        t,
        "# CPU efficiency per task (the CPU-efficiency paper): xorflow, Flink, Storm on the YSB\n"
    );
    let _ = writeln!(t, "- command: `{}`", command_line());
    let _ = writeln!(
        t,
        "- machine: {}, {} cores",
        crate::machine::cpu_model(),
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    let _ = writeln!(
        t,
        "- every run: {} s of generation, 2 sources, 1 process x 2 workers unless said; {} \
         campaigns unless said; sampled by `xorflow-lab profile` at 99 Hz (xorflow: dwarf, \
         inlined frames; JVMs: frame pointers and a perf map)",
        plan.duration_s,
        super::plan::BASE_CAMPAIGNS
    );
    let _ = writeln!(
        t,
        "- CPU per event = the CPU of every task but start-up ({}) over the events emitted; \
         shares are of that CPU. Start-up CPU is in tasks.csv",
        STARTUP_TASKS.join(", ")
    );
    let failures = std::fs::read_to_string(dir.join("failures.txt")).unwrap_or_default();
    let ids: Vec<&str> = runs.iter().map(|m| m.id.as_str()).collect();
    let (retried, failed) = failure_counts(&failures, &ids);
    let _ = writeln!(
        t,
        "- runs: {} finished ({retried} of them on a second attempt), {failed} failed \
         (failures.txt says why)\n",
        runs.len()
    );
    for &x in &plan.experiments {
        match x {
            Experiment::Overhead => overhead(&mut t, runs),
            Experiment::Consistency => consistency(&mut t, runs),
            Experiment::Load => load(&mut t, runs),
            Experiment::Scale => scale(&mut t, runs),
            Experiment::State => state(&mut t, runs),
            Experiment::Tracking => tracking(&mut t, runs),
        }
    }
    if plan.experiments.contains(&Experiment::Load) {
        aim(&mut t, runs);
    }
    t
}

/// Of the runs named in `failures.txt` (`ID (attempt K of N): why`): how many finished on a
/// later attempt, and how many never did.
pub fn failure_counts(failures: &str, finished: &[&str]) -> (usize, usize) {
    let mut ids: Vec<&str> = failures
        .lines()
        .filter_map(|l| l.split(" (attempt ").next())
        .filter(|id| !id.is_empty())
        .collect();
    ids.sort_unstable();
    ids.dedup();
    let retried = ids.iter().filter(|id| finished.contains(id)).count();
    (retried, ids.len() - retried)
}

fn med(v: impl Iterator<Item = f64>) -> f64 {
    median(v.collect())
}

fn overhead(t: &mut String, runs: &[Measured]) {
    let _ = writeln!(t, "## Overhead of the profiler\n");
    let _ = writeln!(
        t,
        "The same point with and without `xorflow-lab profile`, alternating; medians. Paper: eBPF \
         sampling added 3.9 % to Flink's latency and 2.4 % to Spark's; JProfiler made them \
         unsustainable.\n"
    );
    let _ = writeln!(
        t,
        "| engine | events/s plain / profiled | window latency p50 plain / profiled, ms | \
         window latency p99 plain / profiled, ms | p99 change |"
    );
    let _ = writeln!(t, "|---|---:|---:|---:|---:|");
    for e in engines_in(runs, Experiment::Overhead) {
        let pick = |profiled: bool, f: &dyn Fn(&Measured) -> f64| {
            med(of(runs, Experiment::Overhead)
                .filter(|m| m.spec.engine == e && m.spec.profiled == profiled)
                .map(f))
        };
        let tput = |p| pick(p, &|m| m.result.throughput_events_per_s);
        let p50 = |p| pick(p, &|m| m.result.window_latency_ms.p50);
        let p99 = |p| pick(p, &|m| m.result.window_latency_ms.p99);
        let _ = writeln!(
            t,
            "| {} | {:.0} / {:.0} | {:.1} / {:.1} | {:.1} / {:.1} | {:+.1} % |",
            e.name(),
            tput(false),
            tput(true),
            p50(false),
            p50(true),
            p99(false),
            p99(true),
            100.0 * (p99(true) / p99(false).max(1e-9) - 1.0)
        );
    }
    t.push('\n');
}

/// Tasks of `e`'s runs among `runs`, by their median steady share, largest first.
fn tasks_by_share<'a>(runs: impl Iterator<Item = &'a Measured> + Clone) -> Vec<(String, f64)> {
    let mut names: Vec<String> = runs
        .clone()
        .flat_map(|m| m.tasks.iter().map(|t| t.task.clone()))
        .filter(|n| !STARTUP_TASKS.contains(&n.as_str()))
        .collect();
    names.sort();
    names.dedup();
    let mut v: Vec<(String, f64)> = names
        .into_iter()
        .map(|n| {
            let s = med(runs.clone().map(|m| m.steady_share(&n)));
            (n, s)
        })
        .collect();
    v.sort_by(|a, b| b.1.total_cmp(&a.1));
    v
}

fn consistency(t: &mut String, runs: &[Measured]) {
    let _ = writeln!(t, "## Consistency over repeated runs\n");
    let _ = writeln!(
        t,
        "Profiled runs of one point. Paper's criterion: the standard deviation of every \
         task's share under {CONSISTENCY_PP} percentage points over 5 runs.\n"
    );
    let _ = writeln!(t, "| engine | runs | task | mean share | std dev, points |");
    let _ = writeln!(t, "|---|---:|---|---:|---:|");
    let mut verdicts = Vec::new();
    for e in engines_in(runs, Experiment::Consistency) {
        let rs: Vec<&Measured> = of(runs, Experiment::Consistency)
            .filter(|m| m.spec.engine == e)
            .collect();
        let mut worst: f64 = 0.0;
        for (task, _) in tasks_by_share(rs.iter().copied()) {
            let v: Vec<f64> = rs.iter().map(|m| 100.0 * m.steady_share(&task)).collect();
            let (mean, sd) = mean_sd(&v);
            worst = worst.max(sd);
            if mean >= 1.0 {
                let _ = writeln!(
                    t,
                    "| {} | {} | {task} | {mean:.1} % | {sd:.2} |",
                    e.name(),
                    rs.len()
                );
            }
        }
        verdicts.push(format!(
            "{}: largest standard deviation {worst:.2} points ({})",
            e.name(),
            if worst < CONSISTENCY_PP {
                "met"
            } else {
                "NOT met"
            }
        ));
    }
    let _ = writeln!(
        t,
        "\nTasks under 1 % are left out of the table but not of the verdict:"
    );
    for v in verdicts {
        let _ = writeln!(t, "- {v}");
    }
    t.push('\n');
}

/// Mean and sample standard deviation.
pub fn mean_sd(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    if v.is_empty() {
        return (0.0, 0.0);
    }
    let mean = v.iter().sum::<f64>() / n;
    if v.len() < 2 {
        return (mean, 0.0);
    }
    let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (mean, var.sqrt())
}

fn load(t: &mut String, runs: &[Measured]) {
    let _ = writeln!(t, "## CPU per event by load\n");
    let _ = writeln!(
        t,
        "CPU ns per event, per task, from low load up to each engine's sustainable maximum. \
         Paper: Flink is most efficient between 10k and 100k events/s per node; every engine's \
         CPU per event falls as load rises while fixed costs (waiting, timers) spread over \
         more events.\n"
    );
    for e in engines_in(runs, Experiment::Load) {
        let rs: Vec<&Measured> = of(runs, Experiment::Load)
            .filter(|m| m.spec.engine == e)
            .collect();
        let cols: Vec<String> = tasks_by_share(rs.iter().copied())
            .into_iter()
            .filter(|(_, s)| *s >= MIN_COLUMN_SHARE)
            .map(|(n, _)| n)
            .collect();
        let _ = writeln!(t, "### {}\n", e.name());
        let _ = write!(
            t,
            "| run | achieved events/s | pre-window p50, ms | window p99, ms | all, ns/event |"
        );
        for c in &cols {
            let _ = write!(t, " {c} |");
        }
        let _ = write!(t, "\n|---|---:|---:|---:|---:|");
        t.push_str(&"---:|".repeat(cols.len()));
        t.push('\n');
        for m in rs {
            let _ = write!(
                t,
                "| {} | {:.0} | {:.1} | {:.1} | {:.0} |",
                m.spec.label,
                m.result.throughput_events_per_s,
                m.result.prewindow_latency_ms.p50,
                m.result.window_latency_ms.p99,
                m.steady_ns_per_event()
            );
            for c in &cols {
                let _ = write!(t, " {:.0} |", m.ns_per_event(c));
            }
            t.push('\n');
        }
        t.push('\n');
    }
}

fn scale(t: &mut String, runs: &[Measured]) {
    let _ = writeln!(t, "## Scale-up against scale-out at equal cores\n");
    let _ = writeln!(
        t,
        "One process of 2 workers against 2 processes of 1 worker (xorflow's pinned to a core \
         each with taskset: two one-core nodes; Flink's 2 TaskManagers share one JVM and are \
         not pinned). Paper: a single node over 36 % cheaper in CPU; Flink's cluster \
         communication cost linear in the number of nodes.\n"
    );
    let _ = writeln!(
        t,
        "| engine | deployment | all, ns/event | cluster communication, ns/event (share) | \
         serialization, ns/event | window p99, ms |"
    );
    let _ = writeln!(t, "|---|---|---:|---:|---:|---:|");
    for e in engines_in(runs, Experiment::Scale) {
        let rs: Vec<&Measured> = of(runs, Experiment::Scale)
            .filter(|m| m.spec.engine == e)
            .collect();
        for m in &rs {
            let _ = writeln!(
                t,
                "| {} | {} | {:.0} | {:.0} ({:.1} %) | {:.0} | {:.1} |",
                e.name(),
                m.spec.label,
                m.steady_ns_per_event(),
                m.ns_per_event("cluster communication"),
                100.0 * m.steady_share("cluster communication"),
                m.ns_per_event("serialization"),
                m.result.window_latency_ms.p99
            );
        }
        if let [up, out] = rs.as_slice() {
            let _ = writeln!(
                t,
                "| {} | scale-out / scale-up | {:.2}x | | | |",
                e.name(),
                out.steady_ns_per_event() / up.steady_ns_per_event().max(1e-9)
            );
        }
    }
    t.push('\n');
}

fn state(t: &mut String, runs: &[Measured]) {
    let _ = writeln!(t, "## State size\n");
    let _ = writeln!(
        t,
        "Campaigns in the ad table (10 ads each): the join's table and the window's keys grow. \
         Paper: Flink's join cost rose by 16.3 % from 1k to 16k campaigns.\n"
    );
    let _ = writeln!(
        t,
        "| engine | campaigns | all, ns/event | join, ns/event | window, ns/event | join vs the smallest |"
    );
    let _ = writeln!(t, "|---|---:|---:|---:|---:|---:|");
    for e in engines_in(runs, Experiment::State) {
        let rs: Vec<&Measured> = of(runs, Experiment::State)
            .filter(|m| m.spec.engine == e)
            .collect();
        let base = rs.first().map_or(0.0, |m| m.ns_per_event("join"));
        for m in &rs {
            let _ = writeln!(
                t,
                "| {} | {} | {:.0} | {:.1} | {:.1} | {:+.1} % |",
                e.name(),
                m.spec.campaigns,
                m.steady_ns_per_event(),
                m.ns_per_event("join"),
                m.ns_per_event("window"),
                100.0 * (m.ns_per_event("join") / base.max(1e-9) - 1.0)
            );
        }
    }
    t.push('\n');
}

fn tracking(t: &mut String, runs: &[Measured]) {
    let _ = writeln!(t, "## trAcker's own share, next to the markers baseline\n");
    let _ = writeln!(
        t,
        "xorflow with trAcker (its latency defaults; flushing acks on every idle moment, \
         `--ack-flush-on-idle always`; and batched: 50 us timer slack, batches \
         and acks left to their 1 ms timeouts) and with in-band markers closing the windows, at \
         each tracking granularity (substream length). Tracking CPU = tracker + acker \
         (trAcker) or markers. \
         The trAcker paper: markers' cost explodes at fine granularity; trAcker's stays small and \
         independent of it.\n"
    );
    let _ = writeln!(
        t,
        "| mode | all, ns/event | tracker | acker | markers | tracking share | window p99, ms |"
    );
    let _ = writeln!(t, "|---|---:|---:|---:|---:|---:|---:|");
    for m in of(runs, Experiment::Tracking) {
        let share: f64 = ["tracker", "acker", "markers"]
            .iter()
            .map(|k| m.steady_share(k))
            .sum();
        let _ = writeln!(
            t,
            "| {} | {:.0} | {:.1} | {:.1} | {:.1} | {:.1} % | {:.1} |",
            m.spec.label,
            m.steady_ns_per_event(),
            m.ns_per_event("tracker"),
            m.ns_per_event("acker"),
            m.ns_per_event("markers"),
            100.0 * share,
            m.result.window_latency_ms.p99
        );
    }
    t.push('\n');
}

fn aim(t: &mut String, runs: &[Measured]) {
    let at = |e: Engine, rate: u64| {
        of(runs, Experiment::Load).find(|m| m.spec.engine == e && m.spec.point.rate == rate)
    };
    let mut rows = Vec::new();
    for x in of(runs, Experiment::Load).filter(|m| m.spec.engine == Engine::Xorflow) {
        if let Some(f) = at(Engine::Flink, x.spec.point.rate) {
            rows.push((x, f));
        }
    }
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(
        t,
        "## The aim: xorflow's CPU per event against Flink's at the same load\n"
    );
    let _ = writeln!(
        t,
        "Flink runs with its defaults (a 100 ms network buffer timeout). CPU is bought with \
         latency at low load, so each row also gives both engines' pre-window latency: a \
         ratio is like for like only where xorflow's is at or below Flink's.\n"
    );
    let _ = writeln!(
        t,
        "| xorflow run | xorflow, ns/event | flink, ns/event | flink / xorflow | aim ({AIM_VS_FLINK}x) \
         | pre-window p50, ms, xorflow / flink |"
    );
    let _ = writeln!(t, "|---|---:|---:|---:|---|---:|");
    for (x, f) in rows {
        let r = f.steady_ns_per_event() / x.steady_ns_per_event().max(1e-9);
        let _ = writeln!(
            t,
            "| {} | {:.0} | {:.0} | {r:.1}x | {} | {:.1} / {:.1} |",
            x.spec.label,
            x.steady_ns_per_event(),
            f.steady_ns_per_event(),
            if r >= AIM_VS_FLINK { "met" } else { "not met" },
            x.result.prewindow_latency_ms.p50,
            f.result.prewindow_latency_ms.p50
        );
    }
    t.push('\n');
}

/// The engines with runs in experiment `x`, in engine order.
fn engines_in(runs: &[Measured], x: Experiment) -> Vec<Engine> {
    let mut v: Vec<Engine> = of(runs, x).map(|m| m.spec.engine).collect();
    v.sort();
    v.dedup();
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_count_runs_not_attempts() {
        let f = "03-a (attempt 1 of 2): perf script failed\n\
                 03-a (attempt 2 of 2): perf script failed\n\
                 07-b (attempt 1 of 2): exit 1\n";
        assert_eq!(failure_counts(f, &["07-b", "01-c"]), (1, 1));
        assert_eq!(failure_counts("", &["01-c"]), (0, 0));
    }

    #[test]
    fn mean_and_sample_standard_deviation() {
        let (m, sd) = mean_sd(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]);
        assert!((m - 5.0).abs() < 1e-12);
        assert!((sd - 2.138_089_935).abs() < 1e-6);
        assert_eq!(mean_sd(&[3.0]), (3.0, 0.0));
        assert_eq!(mean_sd(&[]), (0.0, 0.0));
    }
}
