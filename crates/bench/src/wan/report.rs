//! `runs.csv` and `REPORT.md` of a `xorflow-lab bench wan` sweep: per experiment a table, and per
//! series of the mesh experiment its knee (docs/wan.md, "The knee").

use super::measured::Measured;
use super::plan::Plan;
use super::spec::Experiment;
use super::tcp_counters::TcpCounters;
use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;
use std::path::Path;
use xorflow_runtime::ValueName;

/// Slack of the knee's bound, ms: "a few ms" of the wide-area aim (docs/wan.md) (batching, the flush timeout, the
/// delay line's 1 ms timer).
pub const SLACK_MS: f64 = 5.0;

/// Least share of the asked rate a run must reach to count as keeping up.
pub const KEEPS_UP: f64 = 0.95;

/// What `plan.json` holds: the sweep and the command that asked for it.
#[derive(Serialize, Deserialize)]
pub struct PlanFile {
    /// The command line.
    pub command: String,
    /// The sweep.
    pub plan: Plan,
}

/// Writes `runs.csv` and `REPORT.md` into `dir`.
///
/// # Errors
/// A file cannot be written.
pub fn write(dir: &Path, plan: &PlanFile, runs: &[Measured]) -> Result<()> {
    crate::stand::files::write_whole(&dir.join("runs.csv"), csv(runs).as_bytes())?;
    let failures = std::fs::read_to_string(dir.join("failures.txt")).unwrap_or_default();
    let text = with_failures(markdown(plan, runs), &failures);
    crate::stand::files::write_whole(&dir.join("REPORT.md"), text.as_bytes())
}

/// `report` with the sweep's failed runs (`failures.txt`: one `id: error` line each, written by
/// `wan/mod.rs`) named under its title and listed at its end: a failed run is left out of the
/// tables, and a table without it must not read as the whole sweep.
fn with_failures(report: String, failures: &str) -> String {
    let lines: Vec<&str> = failures.lines().filter(|l| !l.trim().is_empty()).collect();
    if lines.is_empty() {
        return report;
    }
    let title_end = report.find("\n\n").map_or(report.len(), |i| i + 2);
    let mut s = report[..title_end].to_string();
    let _ = writeln!(
        s,
        "**{} run(s) failed** and are left out of the tables: \"Failed runs\" at the end.\n",
        lines.len()
    );
    s.push_str(&report[title_end..]);
    s.push_str("## Failed runs (`failures.txt`)\n\n");
    for l in lines {
        let _ = writeln!(s, "- {l}");
    }
    s
}

/// Writes a folder's `runs.csv` and `REPORT.md` again from its `plan.json` and `raw.jsonl`
/// (`bench wan --report DIR`: after a change to the tables, without running anything).
///
/// # Errors
/// A file is missing, unreadable or not what a sweep writes, naming it and the line.
pub fn rewrite(dir: &Path) -> Result<()> {
    let read = |name: &str| {
        let p = dir.join(name);
        std::fs::read_to_string(&p).with_context(|| format!("cannot read '{}'", p.display()))
    };
    let plan: PlanFile = serde_json::from_str(&read("plan.json")?).with_context(|| {
        format!(
            "'{}' is not a sweep's plan",
            dir.join("plan.json").display()
        )
    })?;
    let runs = (read("raw.jsonl")?.lines().enumerate())
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str(l).with_context(|| format!("raw.jsonl line {}: not a run", i + 1))
        })
        .collect::<Result<Vec<Measured>>>()?;
    write(dir, &plan, &runs)
}

fn f(v: Option<f64>) -> String {
    v.map_or(String::new(), |v| format!("{v:.1}"))
}

fn csv(runs: &[Measured]) -> String {
    let mut s = String::from(
        "id,experiment,engine,workload,processes,rate,delay,variant,rtt_mean_ms,rtt_max_ms,\
         throughput_per_s,correct,window_p50_ms,window_p90_ms,window_p95_ms,window_p99_ms,\
         window_max_ms,notification_p50_ms,notification_p99_ms,notification_any_p50_ms,\
         notification_any_p99_ms,notification_frontier_p50_ms,notification_frontier_p99_ms,\
         element_p50_ms,element_p99_ms,below_frontier,\
         proxied_bytes,tcp_retransmitted,tcp_timeouts,tcp_tx_drops,tcp_rx_drops\n",
    );
    for m in runs {
        let w = |i: usize| f(m.window_ms.map(|w| w[i]));
        let two = |v: Option<[f64; 2]>, i: usize| f(v.map(|x| x[i]));
        let _ = writeln!(
            s,
            "{},{},{},{:?},{},{},{},{},{:.2},{:.2},{:.0},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
            m.id,
            m.spec.experiment.name(),
            m.spec.engine.name(),
            m.spec.workload,
            m.spec.processes,
            m.spec.rate,
            m.spec.delay.label(),
            m.spec.variant,
            m.rtt_mean_ms,
            m.rtt_max_ms,
            m.throughput_per_s,
            m.correct,
            w(0),
            w(1),
            w(2),
            w(3),
            w(4),
            two(m.notification_ms, 0),
            two(m.notification_ms, 1),
            two(m.notification_any_ms, 0),
            two(m.notification_any_ms, 1),
            two(m.notification_frontier_ms, 0),
            two(m.notification_frontier_ms, 1),
            two(m.element_ms, 0),
            two(m.element_ms, 1),
            m.below_frontier,
            m.proxied_bytes.map_or(String::new(), |b| b.to_string()),
            tcp(m, |c| c.retransmitted),
            tcp(m, |c| c.timeouts),
            tcp(m, |c| c.tx_drops),
            tcp(m, |c| c.rx_drops)
        );
    }
    s
}

/// A TCP counter of a namespaced run (empty on loopback).
fn tcp(m: &Measured, c: impl Fn(&TcpCounters) -> u64) -> String {
    m.tcp.as_ref().map_or(String::new(), |t| c(t).to_string())
}

/// Whether run `m` misses its bound against `baseline` (RTT 0): window latency p99 over the
/// baseline's plus the longest one-way path (half the largest RTT) plus [`SLACK_MS`], or
/// throughput under [`KEEPS_UP`] of the rate, or wrong counts.
pub fn misses(baseline: &Measured, m: &Measured) -> bool {
    let base = baseline.window_ms.map_or(0.0, |w| w[3]);
    let bound = base + m.rtt_max_ms / 2.0 + SLACK_MS;
    let p99 = m.window_ms.map_or(f64::INFINITY, |w| w[3]);
    p99 > bound || m.throughput_per_s < KEEPS_UP * m.spec.rate as f64 || !m.correct
}

/// A series' knee: the smallest RTT from which on every run (`series` in ascending RTT) misses
/// its bound ([`misses`]). A single run over its bound with runs within theirs after it is an
/// outlier, not a knee: the p99 of one 30 s run rests on its two largest of 200 samples.
/// `None`: no knee in the runs.
pub fn knee<'a>(baseline: &Measured, series: &[&'a Measured]) -> Option<&'a Measured> {
    let from = series
        .iter()
        .rposition(|m| !misses(baseline, m))
        .map_or(0, |i| i + 1);
    series.get(from).copied()
}

fn ysb_table(s: &mut String, runs: &[&Measured], baseline: impl Fn(&Measured) -> Option<f64>) {
    s.push_str(
        "| processes | rate | delay | engine, variant | RTT mean / max ms | events/s | generator lag \
         max ms | window p50 / p90 / p95 / p99 ms | bound ms | counts | TCP retransmitted / \
         timeouts |\n\
         |---:|---:|---|---|---:|---:|---:|---:|---:|---|---:|\n",
    );
    for m in runs {
        let w = m.window_ms.unwrap_or_default();
        let bound = baseline(m).map(|b| b + m.rtt_max_ms / 2.0 + SLACK_MS);
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {:.1} / {:.1} | {:.0} | {} | {:.1} / {:.1} / {:.1} / {:.1} | {} | {} | {} |",
            m.spec.processes,
            m.spec.rate,
            m.spec.delay.label(),
            format_args!("{} {}", m.spec.engine.name(), m.spec.variant),
            m.rtt_mean_ms,
            m.rtt_max_ms,
            m.throughput_per_s,
            f(m.generator_lag_ms),
            w[0],
            w[1],
            w[2],
            w[3],
            f(bound),
            if m.correct { "oracle" } else { "WRONG" },
            m.tcp.map_or(String::new(), |t| format!("{} / {}", t.retransmitted, t.timeouts))
        );
    }
}

/// The mesh baseline (RTT 0) of `m`'s rate and process count: of its variant if the mesh ran
/// it, else the default's.
fn baseline_of<'a>(runs: &'a [Measured], m: &Measured) -> Option<&'a Measured> {
    let at_zero = |variant: &str| {
        runs.iter().find(|b| {
            b.spec.experiment == Experiment::Mesh
                && b.rtt_max_ms == 0.0
                && (b.spec.rate, b.spec.processes) == (m.spec.rate, m.spec.processes)
                && b.spec.engine == m.spec.engine
                && b.spec.variant == variant
        })
    };
    at_zero(&m.spec.variant).or_else(|| at_zero("default"))
}

/// A mesh series' knee, and which runs missed their bounds.
fn verdict(baseline: &Measured, series: &[&Measured]) -> String {
    let over: Vec<String> = (series.iter())
        .filter(|m| misses(baseline, m))
        .map(|m| format!("{} ms", m.rtt_max_ms))
        .collect();
    let over = if over.is_empty() {
        String::new()
    } else {
        format!(" (over its bound: {})", over.join(", "))
    };
    match knee(baseline, series) {
        Some(k) => format!("**knee at {} ms**{over}", k.rtt_max_ms),
        None => format!(
            "no knee up to {} ms{over}",
            series.iter().map(|m| m.rtt_max_ms).fold(0.0, f64::max)
        ),
    }
}

/// A run's headline latency, ms: its window p99 (YSB) or its notification p99 from the last
/// arrival anywhere (chain); infinite when it measured none.
fn headline_p99(m: &Measured) -> f64 {
    (m.window_ms.map(|w| w[3]))
        .or(m.notification_any_ms.map(|n| n[1]))
        .unwrap_or(f64::INFINITY)
}

/// The runs of each point (equal specs), in the order points first ran.
fn points(runs: &[Measured]) -> Vec<Vec<&Measured>> {
    let mut groups: Vec<Vec<&Measured>> = Vec::new();
    for m in runs {
        match groups.iter_mut().find(|g| g[0].spec == m.spec) {
            Some(g) => g.push(m),
            None => groups.push(vec![m]),
        }
    }
    groups
}

/// The run standing for a point in the tables: the one with the median [`headline_p99`] (the
/// upper middle one of an even count: of two runs, the worse), so that a row is one real run,
/// not a mix of several.
fn median_run<'a>(runs: &[&'a Measured]) -> &'a Measured {
    let mut sorted = runs.to_vec();
    sorted.sort_by(|a, b| headline_p99(a).total_cmp(&headline_p99(b)));
    sorted[sorted.len() / 2]
}

/// With repeats, each point's spread: how far its runs' p99 and throughput lie apart.
fn spread_table(s: &mut String, groups: &[Vec<&Measured>]) {
    if groups.iter().all(|g| g.len() < 2) {
        return;
    }
    s.push_str(
        "## Spread over repeats

Each row of the tables above is the run with its point's \
         median p99 (YSB: window; chain: notification from the last arrival anywhere). Every \
         point's runs:\n\n| experiment | point | runs | p99 min / median / max ms | events/s \
         min / max | counts |\n|---|---|---:|---:|---:|---|\n",
    );
    for g in groups {
        let mut p99: Vec<f64> = g.iter().map(|m| headline_p99(m)).collect();
        p99.sort_by(f64::total_cmp);
        let tput = g.iter().map(|m| m.throughput_per_s);
        let (lo, hi) = (
            tput.clone().fold(f64::INFINITY, f64::min),
            tput.fold(0.0, f64::max),
        );
        let m = g[0];
        let _ = writeln!(
            s,
            "| {} | {} p={} {}/s {} {} | {} | {:.1} / {:.1} / {:.1} | {lo:.0} / {hi:.0} | {} |",
            m.spec.experiment.name(),
            m.spec.engine.name(),
            m.spec.processes,
            m.spec.rate,
            m.spec.delay.label(),
            m.spec.variant,
            g.len(),
            p99[0],
            p99[p99.len() / 2],
            p99[p99.len() - 1],
            if g.iter().all(|m| m.correct) {
                "oracle".to_string()
            } else {
                format!("{} WRONG", g.iter().filter(|m| !m.correct).count())
            }
        );
    }
    s.push('\n');
}

fn markdown(file: &PlanFile, all: &[Measured]) -> String {
    let groups = points(all);
    let medians: Vec<Measured> = groups.iter().map(|g| median_run(g).clone()).collect();
    let runs = medians.as_slice();
    let plan = &file.plan;
    let mut s = String::from("# xorflow-lab bench wan: the wide-area paper's experiments\n\n");
    let _ = writeln!(
        s,
        "Command: `{}`\n\nYSB runs: {} s of generation, one worker per process, one source per \
         process, 10 s windows; chain runs: {} s, 2 processes x 1 worker, granularity 100. \
         {} The \
         knee: the first RTT whose window p99 exceeds the bound (the RTT-0 p99 + half the \
         largest RTT + {SLACK_MS} ms), or whose throughput falls under {:.0} % of the rate, \
         or whose counts are wrong.\n",
        file.command,
        plan.duration_s,
        plan.chain_duration_s,
        match plan.network {
            super::Network::Loopback => "Processes on loopback, the delay injected in user \
                                         space on every frame between them (docs/wan.md)."
                .to_string(),
            super::Network::Netns => format!(
                "xorflow's processes each in a network namespace behind `xorflow-lab delay-router`, \
                 which delays every IP packet between them, kernel TCP included; TCP congestion \
                 control in every namespace: {} (docs/wan.md, \"Processes in network \
                 namespaces\", \"Congestion control\").",
                match plan.tcp_congestion.as_str() {
                    "inherit" => "the host's",
                    c => c,
                }
            ),
        },
        KEEPS_UP * 100.0
    );
    if plan.repeat > 1 {
        let _ = writeln!(
            s,
            "{} runs per point, in rounds (every point once per round); each table row is the \
             run with its point's median p99, and \"Spread over repeats\" gives every point's \
             range.\n",
            plan.repeat
        );
    }
    if plan.engines.contains(&crate::ysb::Engine::Flink) {
        s.push_str(match plan.network {
            super::Network::Loopback => {
                "Flink 1.20 runs (mesh and jitter): a MiniCluster with one TaskManager of one slot per \
                 process, buffer timeout 100 ms (Flink's default); each TaskManager's data port \
                 sits behind a delay proxy of ours that holds every byte half the RTT in each \
                 direction, so all traffic between TaskManagers crosses the RTT (docs/wan.md, \
                 \"Flink behind the proxy\"); the RPC between JobManager and TaskManagers is not \
                 delayed.\n\n"
            }
            super::Network::Netns => {
                "Flink 1.20 runs (mesh, city sets and jitter): a standalone cluster, one TaskManager JVM \
                 of one slot in each process's namespace, the JobManager and the client in \
                 namespace 0, buffer timeout 100 ms (Flink's default); every packet between \
                 them crosses the router's per-pair delay, JobManager RPC included (docs/wan.md, \
                 \"A standalone Flink cluster in namespaces\").\n\n"
            }
        });
    }
    if plan.engines.contains(&crate::ysb::Engine::Storm) {
        s.push_str(&format!(
            "Storm 2.8 runs (mesh, city sets and jitter, namespaces only): a Storm cluster, ZooKeeper, \
             Nimbus and the client in namespace 0, a supervisor and its one worker JVM in each \
             process's namespace, N sources and N window tasks (each source's chain in one \
             worker), no ackers, the original YSB's CampaignProcessor as the window: it flushes \
             its counts on a 1 s tick, so its window latency is that tick's phase against the \
             window ends more than the delay; the window-bolt series has Storm's event-time \
             windowed bolt instead (`--window bolt`), its lag half the sweep's largest RTT plus \
             {} ms so no view is lost (docs/wan.md, \"A Storm cluster in namespaces\").\n\n",
            super::plan::STORM_DRIFT_MS
        ));
    }
    let of = |e: Experiment| -> Vec<&Measured> {
        runs.iter().filter(|m| m.spec.experiment == e).collect()
    };
    let base = |m: &Measured| baseline_of(runs, m).and_then(|b| b.window_ms).map(|w| w[3]);
    let mesh = of(Experiment::Mesh);
    if !mesh.is_empty() {
        s.push_str("## Full mesh (the wide-area paper, Fig. 4 and 17)\n\n");
        let mut series: Vec<String> = mesh.iter().map(|m| m.spec.series()).collect();
        series.dedup();
        for name in &series {
            let runs_of: Vec<&Measured> = mesh
                .iter()
                .copied()
                .filter(|m| &m.spec.series() == name)
                .collect();
            let verdict = match runs_of.iter().find(|m| m.rtt_max_ms == 0.0) {
                None => "no RTT-0 baseline in this sweep".to_string(),
                Some(b) => verdict(b, &runs_of),
            };
            let _ = writeln!(s, "- {name}: {verdict}");
        }
        s.push('\n');
        ysb_table(&mut s, &mesh, base);
        s.push('\n');
    }
    for (e, title) in [
        (
            Experiment::Topology,
            "City sets (the wide-area paper, Table I and Fig. 6)",
        ),
        (
            Experiment::Jitter,
            "Jitter: 74-76 ms against a steady 75 ms",
        ),
        (Experiment::Tuning, "Tuning at the largest RTT"),
    ] {
        let rs = of(e);
        if !rs.is_empty() {
            let _ = writeln!(s, "## {title}\n");
            ysb_table(&mut s, &rs, base);
            s.push('\n');
        }
    }
    for (e, title) in [
        (
            Experiment::Notification,
            "Notification latency under RTT (chain)",
        ),
        (
            Experiment::Regions,
            "Tracker replicas by region (chain, global city set, 8 processes)",
        ),
    ] {
        let rs = of(e);
        if !rs.is_empty() {
            chain_table(&mut s, title, &rs);
        }
    }
    spread_table(&mut s, &groups);
    s
}

/// The chain runs of one experiment: notification latency (per instance, from the last arrival
/// anywhere, from the first moment a frontier could pass), element latency, and the tracker's
/// work (pieces applied over all shards and replicas, seconds applying them).
fn chain_table(s: &mut String, title: &str, runs: &[&Measured]) {
    let _ = write!(
        s,
        "## {title}\n\n| variant | delay | RTT max ms | elements/s | notification p50 / p99 ms \
         | from last arrival anywhere p50 / p99 ms | from the first moment a frontier could \
         pass p50 / p99 ms | element p50 / p99 ms | tracker pieces applied | tracker s | \
         complete |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|\n",
    );
    let two = |v: Option<[f64; 2]>| v.map_or("-".into(), |x| format!("{:.1} / {:.1}", x[0], x[1]));
    for m in runs {
        let _ = writeln!(
            s,
            "| {} | {} | {:.0} | {:.0} | {} | {} | {} | {} | {} | {} | {} |",
            m.spec.variant,
            m.spec.delay.label(),
            m.rtt_max_ms,
            m.throughput_per_s,
            two(m.notification_ms),
            two(m.notification_any_ms),
            two(m.notification_frontier_ms),
            two(m.element_ms),
            m.tracker_pieces.map_or("-".into(), |n| n.to_string()),
            m.tracker_busy_s.map_or("-".into(), |t| format!("{t:.2}")),
            if m.correct && m.below_frontier == 0 {
                "yes"
            } else {
                "NO"
            }
        );
    }
    s.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wan::spec::{Delay, RunSpec, Workload};

    fn run(rtt: u64, p99: f64, throughput: f64) -> Measured {
        Measured {
            id: format!("r{rtt}"),
            spec: RunSpec {
                experiment: Experiment::Mesh,
                engine: crate::ysb::Engine::Xorflow,
                workload: Workload::Ysb,
                rate: 22_000,
                processes: 2,
                delay: Delay::mesh(rtt),
                variant: "default".into(),
                args: Vec::new(),
            },
            rtt_mean_ms: rtt as f64,
            rtt_max_ms: rtt as f64,
            throughput_per_s: throughput,
            correct: true,
            window_ms: Some([1.0, 2.0, 3.0, p99, p99]),
            generator_lag_ms: None,
            notification_ms: None,
            notification_any_ms: None,
            notification_frontier_ms: None,
            tracker_pieces: None,
            tracker_busy_s: None,
            element_ms: None,
            below_frontier: 0,
            proxied_bytes: None,
            tcp: None,
        }
    }

    /// A mesh sweep at 22,000 events/s on 2 processes over `rtts_ms`, `repeat` runs per point.
    fn mesh_plan(command: &str, rtts_ms: Vec<u64>, repeat: usize) -> PlanFile {
        PlanFile {
            command: command.into(),
            plan: Plan {
                experiments: vec![Experiment::Mesh],
                engines: vec![crate::ysb::Engine::Xorflow],
                rates: vec![22_000],
                processes: vec![2],
                rtts_ms,
                topologies: Vec::new(),
                duration_s: 30,
                chain_rate: 20_000,
                chain_duration_s: 10,
                chain_rtts_ms: Vec::new(),
                quick: false,
                repeat,
                network: Default::default(),
                tcp_congestion: "cubic".into(),
            },
        }
    }

    #[test]
    fn the_knee_is_where_runs_stay_past_the_bound_or_below_the_rate() {
        let (b, r40, r80) = (
            run(0, 50.0, 22_000.0),
            run(40, 74.0, 22_000.0),
            run(80, 96.0, 22_000.0),
        );
        // 80 misses (96 > 50 + 40 + 5); 40 is within 50 + 20 + 5.
        assert_eq!(
            knee(&b, &[&b, &r40, &r80]).map(|m| m.rtt_max_ms),
            Some(80.0)
        );
        let slow = run(40, 60.0, 20_000.0);
        assert_eq!(knee(&b, &[&b, &slow]).map(|m| m.rtt_max_ms), Some(40.0));
        assert!(knee(&b, &[&b, &r40]).is_none());
        let mut wrong = run(10, 50.0, 22_000.0);
        wrong.correct = false;
        assert_eq!(knee(&b, &[&wrong]).map(|m| m.rtt_max_ms), Some(10.0));
        // A lone run over its bound, with the larger RTTs within theirs, is no knee.
        let outlier = run(20, 90.0, 22_000.0);
        assert!(misses(&b, &outlier));
        assert!(knee(&b, &[&b, &outlier, &r40]).is_none());
        assert_eq!(
            knee(&b, &[&b, &outlier, &r40, &r80]).map(|m| m.rtt_max_ms),
            Some(80.0)
        );
        let file = mesh_plan(
            "xorflow-lab bench wan --experiments mesh",
            vec![0, 20, 40, 80],
            1,
        );
        let runs = [b, outlier, r40, r80];
        let text = markdown(&file, &runs);
        assert!(
            text.contains("knee at 80 ms** (over its bound: 20 ms, 80 ms)"),
            "{text}"
        );
        assert!(text.contains("Command: `xorflow-lab bench wan --experiments mesh`"));
        assert!(csv(&[run(0, 1.0, 1.0)]).lines().count() == 2);
        // The folder's tables come back from plan.json and raw.jsonl alone.
        let dir = tempfile::tempdir().unwrap();
        let json = serde_json::to_string(&file).unwrap();
        std::fs::write(dir.path().join("plan.json"), json).unwrap();
        let raw: String = (runs.iter())
            .map(|m| serde_json::to_string(m).unwrap() + "\n")
            .collect();
        std::fs::write(dir.path().join("raw.jsonl"), raw).unwrap();
        rewrite(dir.path()).unwrap();
        let again = std::fs::read_to_string(dir.path().join("REPORT.md")).unwrap();
        assert_eq!(again, text);
        // A failed run is named under the title and listed at the end.
        let why = "009-mesh-storm-p2-22000-rtt-100ms-window-bolt: the storm client exit status: 1";
        std::fs::write(dir.path().join("failures.txt"), format!("{why}\n")).unwrap();
        rewrite(dir.path()).unwrap();
        let failed = std::fs::read_to_string(dir.path().join("REPORT.md")).unwrap();
        assert!(failed.starts_with(
            "# xorflow-lab bench wan: the wide-area paper's experiments\n\n**1 run(s) failed**"
        ));
        assert!(failed.ends_with(&format!("## Failed runs (`failures.txt`)\n\n- {why}\n")));
        assert_eq!(failed.matches("Command: `").count(), 1, "{failed}");
        std::fs::write(dir.path().join("raw.jsonl"), "{\"id\": 3}\n").unwrap();
        let e = format!("{:#}", rewrite(dir.path()).unwrap_err());
        assert!(e.contains("raw.jsonl line 1"), "{e}");
    }

    /// With repeats a table row is the run with its point's median p99, the knee is judged on
    /// those, and the spread table shows every point's range.
    #[test]
    fn repeats_are_shown_by_their_median_run_and_their_spread() {
        let mut file_runs = Vec::new();
        // Three rounds; at 40 ms one round's p99 is an outlier over the bound (50 + 20 + 5).
        for (round, p40) in [(0, 70.0), (1, 140.0), (2, 72.0)] {
            let mut b = run(0, 50.0 + round as f64, 22_000.0);
            b.id = format!("b{round}");
            let mut r = run(40, p40, 22_000.0);
            r.id = format!("r{round}");
            file_runs.extend([b, r]);
        }
        let groups = points(&file_runs);
        assert_eq!(groups.len(), 2);
        assert_eq!(median_run(&groups[0]).id, "b1");
        assert_eq!(median_run(&groups[1]).id, "r2");
        let file = mesh_plan(
            "xorflow-lab bench wan --experiments mesh --repeat 3",
            vec![0, 40],
            3,
        );
        let text = markdown(&file, &file_runs);
        assert!(text.contains("no knee up to 40 ms"), "{text}");
        assert!(text.contains("## Spread over repeats"), "{text}");
        assert!(
            text.contains(
                "| mesh | xorflow p=2 22000/s rtt 40ms default | 3 | 70.0 / 72.0 / 140.0 |"
            ),
            "{text}"
        );
        // runs.csv keeps every run.
        assert_eq!(csv(&file_runs).lines().count(), 1 + 6);
    }
}
