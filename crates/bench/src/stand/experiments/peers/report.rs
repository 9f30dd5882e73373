//! The peers experiment's report: results.csv, the ratio tables and figures, and REPORT.md.

use super::super::super::report::{
    fmt_num, meta_lines, num, point_cells, ratio, sweep_label, write_csv_file, Align, Doc, Medians,
    Table,
};
use super::super::super::runner::{Outcome, RunResult};
use super::super::super::Meta;
use super::{
    PeerResult, CLUSTER_LATENCY_SWEEP, CLUSTER_PROCESSES, CLUSTER_THROUGHPUT_SWEEP, LATENCY_RATE,
    STORM_LATENCY_RATE, STORM_LATENCY_SWEEP, WORKERS,
};
use anyhow::Result;
use std::fmt::Write as _;
use std::path::Path;

/// Columns of the peers' results.csv.
pub const PEER_COLUMNS: &[&str] = &[
    "sweep",
    "value",
    "config",
    "rep",
    "ok",
    "error",
    "wall_s",
    "engine",
    "version",
    "stages",
    "workers",
    "granularity",
    "rate",
    "elements",
    "achieved_rate",
    "elements_per_s",
    "notification_p50_us",
    "notification_p95_us",
    "notification_p99_us",
    "notification_any_p50_us",
    "notification_any_p99_us",
    "element_latency_p50_us",
    "element_latency_p99_us",
    "buffer_timeout_ms",
    "command",
];

/// The engine and version that produced an outcome (xorflow's: this checkout's commit).
fn engine(o: &Outcome<PeerResult>, meta: &Meta) -> (String, String) {
    match &o.result {
        Some(PeerResult {
            engine: Some(e),
            version,
            ..
        }) => (e.clone(), version.clone().unwrap_or_default()),
        Some(_) => ("xorflow".into(), format!("git {}", meta.git)),
        None => (String::new(), String::new()),
    }
}

fn write_csv(dir: &Path, meta: &Meta, outcomes: &[Outcome<PeerResult>]) -> Result<()> {
    let rows = outcomes.iter().map(|o| {
        let mut row = point_cells(o);
        let (eng, ver) = engine(o, meta);
        row.extend([eng, ver]);
        for col in &PEER_COLUMNS[row.len()..PEER_COLUMNS.len() - 2] {
            row.push(fmt_num(o.result.as_ref().and_then(|r| r.metric(col))));
        }
        row.push(fmt_num(o.result.as_ref().and_then(|r| r.buffer_timeout_ms)));
        row.push(o.point.command_line());
        row
    });
    write_csv_file(&dir.join("results.csv"), PEER_COLUMNS, rows)
}

/// The medians and which systems ran in each sweep.
struct Sweeps<'a> {
    m: Medians<PeerResult>,
    outcomes: &'a [Outcome<PeerResult>],
}

impl Sweeps<'_> {
    /// The systems that ran in a sweep, in first-seen order.
    fn configs_in(&self, sweep: &str) -> Vec<String> {
        self.m
            .configs
            .iter()
            .filter(|c| {
                self.outcomes
                    .iter()
                    .any(|o| o.point.sweep == sweep && &o.point.config == *c)
            })
            .cloned()
            .collect()
    }

    /// The peers that ran in a sweep (their columns and ratios), in first-seen order.
    fn peers_in(&self, sweep: &str) -> Vec<String> {
        self.configs_in(sweep)
            .into_iter()
            .filter(|c| c != "xorflow")
            .collect()
    }

    /// Medians of `col` per system, then xorflow's ratio to each peer.
    fn ratio_table(&self, md: &mut String, sweep: &str, col: &str) {
        let Some(values) = self.m.values.get(sweep) else {
            return;
        };
        let (configs, peers) = (self.configs_in(sweep), self.peers_in(sweep));
        let mut head = vec![(sweep_label(sweep).to_string(), Align::Left)];
        head.extend(configs.iter().map(|c| (c.clone(), Align::Right)));
        head.extend(
            peers
                .iter()
                .map(|p| (format!("xorflow / {p}"), Align::Right)),
        );
        let mut t = Table::new(head);
        for v in values {
            let mut row = vec![v.clone()];
            row.extend(configs.iter().map(|c| num(self.m.get(sweep, v, c, col), 0)));
            row.extend(peers.iter().map(|p| {
                let x = self.m.get(sweep, v, "xorflow", col);
                ratio(x, self.m.get(sweep, v, p, col))
            }));
            t.row(row);
        }
        let _ = writeln!(md, "{}", t.render());
    }

    /// Achieved rate and element latency per system of a fixed-rate sweep.
    fn element_table(&self, md: &mut String, sweep: &str) {
        let Some(values) = self.m.values.get(sweep) else {
            return;
        };
        md.push_str("### Achieved rate and element latency (end to end, p50/p99, us)\n\n");
        let mut t = Table::with(&[
            ("granularity", Align::Left),
            ("system", Align::Left),
            ("achieved elements/s", Align::Right),
            ("element p50", Align::Right),
            ("element p99", Align::Right),
        ]);
        for v in values {
            for c in &self.configs_in(sweep) {
                let g = |col| num(self.m.get(sweep, v, c, col), 0);
                t.row(vec![
                    v.clone(),
                    c.clone(),
                    g("achieved_rate"),
                    g("element_latency_p50_us"),
                    g("element_latency_p99_us"),
                ]);
            }
        }
        let _ = writeln!(md, "{}", t.render());
    }
}

/// The report's title, run facts, versions and failed runs.
fn header(meta: &Meta, java_version: Option<&str>, outcomes: &[Outcome<PeerResult>]) -> String {
    let failed: Vec<&Outcome<PeerResult>> =
        outcomes.iter().filter(|o| o.result.is_none()).collect();
    // The engines that ran, by name, in the order the issue introduces them.
    let names: Vec<&str> = [
        ("timely", "timely dataflow"),
        ("flink", "Apache Flink"),
        ("storm", "Apache Storm"),
    ]
    .into_iter()
    .filter(|(e, _)| outcomes.iter().any(|o| engine(o, meta).0 == *e))
    .map(|(_, n)| n)
    .collect();
    let mut md = format!(
        "# Peers: xorflow next to {} on the trAcker paper's chain ({} profile)\n\n\
         {}- runs: {} ({} failed; see results.csv and runs.log), medians over repetitions\n\
         - every system: {WORKERS} worker threads in one process, and in the cluster runs \
         {CLUSTER_PROCESSES} processes of {} each; systems alternate within each point\n",
        names.join(", "),
        meta.profile,
        meta_lines(meta),
        outcomes.len(),
        failed.len(),
        WORKERS / CLUSTER_PROCESSES,
    );
    let versions: std::collections::BTreeMap<String, String> = outcomes
        .iter()
        .filter(|o| o.result.is_some())
        .map(|o| engine(o, meta))
        .collect();
    for (e, v) in &versions {
        let _ = writeln!(md, "- {e}: {v}");
    }
    if let Some(j) = java_version {
        let _ = writeln!(md, "- java: {j}");
    }
    for o in &failed {
        let _ = writeln!(
            md,
            "- FAILED {}={} {} rep {}: {}",
            o.point.sweep,
            o.point.value,
            o.point.config,
            o.point.rep,
            o.error.as_deref().unwrap_or("")
        );
    }
    md.push('\n');
    md
}

/// Maximum throughput without and with completeness tracking.
fn throughput_sections(doc: &mut Doc<'_>, s: &Sweeps<'_>) -> Result<()> {
    doc.md.push_str(
        "## Maximum throughput without completeness tracking, elements/s\n\n\
         K pass-through stages, each behind a re-partition (xorflow `--tracking none`; timely: all \
         elements at one timestamp; Flink: no watermarks, `rebalance().map(identity)` per stage, \
         buffer timeout 100 ms; Storm: acking off, a shuffle grouping per stage). Ratio above 1: \
         xorflow is faster.\n\n",
    );
    s.ratio_table(&mut doc.md, "stages", "elements_per_s");
    let chart = s.m.chart(
        "stages",
        "elements_per_s",
        "Throughput without tracking",
        "elements/s",
        true,
    );
    doc.figure(chart, "peers_throughput_by_stages")?;
    doc.md.push_str(
        "## Maximum throughput with completeness tracking, K = 10, elements/s\n\n\
         Each system's own mechanism at granularity W (elements per substream): xorflow's trAcker; \
         timely's pointstamp frontiers (timestamp = id / W); Flink's watermarks, one punctuated \
         watermark per substream per source subtask, and a tumbling event-time window of W at the \
         end; Storm's acker, which XORs the tuple ids of every spout tuple's tree, so it tracks \
         each element whatever W is (W only groups the spout's acks into substreams).\n\n",
    );
    s.ratio_table(&mut doc.md, "granularity", "elements_per_s");
    let chart = s.m.chart(
        "granularity",
        "elements_per_s",
        "Throughput with completeness tracking (K = 10)",
        "elements/s",
        true,
    );
    doc.figure(chart, "peers_throughput_by_granularity")
}

/// Notification latency at [`LATENCY_RATE`], both measures.
fn latency_section(doc: &mut Doc<'_>, s: &Sweeps<'_>) -> Result<()> {
    let _ = writeln!(
        doc.md,
        "## Notification latency at {} elements/s, K = 10\n\n\
         From a substream's last element arriving where completeness is observed (xorflow and \
         timely: the sink; Flink: the window operator) to the notification (xorflow: the tracker's \
         frontier; timely: the input frontier; Flink: the window firing; Storm: the spout's ack \
         callback completing the spout task's part of the substream). Flink ran with \
         punctuated watermarks at a 1 ms and at its default 100 ms buffer timeout, and with \
         periodic monotonous watermarks every 1 ms at a 1 ms buffer timeout. Ratio below 1: \
         xorflow notifies sooner.\n\n\
         Two measures. *Per instance*: from the substream's last element at the same instance \
         (sink or window subtask) that is notified. *From the last arrival anywhere* (the trAcker paper's \
         definition): from the substream's last element at any instance. A substream is complete \
         only when its last element has arrived everywhere, so the per-instance figure also holds \
         the skew between partitions, i.e. the data path's jitter; the second isolates the \
         completeness mechanism. Storm notifies the spout, which receives nothing, so it has only \
         the second.\n",
        LATENCY_RATE
    );
    latency_tables(doc, s, "latency", "")
}

/// The four notification latency tables and figures of a fixed-rate sweep (figure names
/// `peers_latency{prefix}[_any]_{q}`), then its element latency.
fn latency_tables(doc: &mut Doc<'_>, s: &Sweeps<'_>, sweep: &str, prefix: &str) -> Result<()> {
    for (any, what) in [
        (false, "per instance"),
        (true, "from the last arrival anywhere"),
    ] {
        for q in ["p50", "p99"] {
            let (col, tag) = if any {
                (format!("notification_any_{q}_us"), "_any")
            } else {
                (format!("notification_{q}_us"), "")
            };
            let _ = writeln!(doc.md, "### {q} {what}, us\n");
            s.ratio_table(&mut doc.md, sweep, &col);
            let chart = s.m.chart(
                sweep,
                &col,
                &format!("Notification latency {q}, {what}"),
                &format!("notification latency {q}, us"),
                true,
            );
            doc.figure(chart, &format!("peers_latency{prefix}{tag}_{q}"))?;
        }
    }
    s.element_table(&mut doc.md, sweep);
    Ok(())
}

/// Throughput and latency with every system over [`CLUSTER_PROCESSES`] processes (when the
/// cluster sweeps ran).
fn cluster_section(doc: &mut Doc<'_>, s: &Sweeps<'_>) -> Result<()> {
    if s.configs_in(CLUSTER_THROUGHPUT_SWEEP).is_empty()
        && s.configs_in(CLUSTER_LATENCY_SWEEP).is_empty()
    {
        return Ok(());
    }
    let _ = writeln!(
        doc.md,
        "## Across {CLUSTER_PROCESSES} processes, K = 10\n\n\
         Every system spread over {CLUSTER_PROCESSES} processes of {} worker each on this \
         machine, so about half of every re-partition's elements cross between processes over \
         loopback TCP: xorflow's processes (`--processes {CLUSTER_PROCESSES}`) and its own \
         transport; timely in its TCP cluster mode (`peers/timely --processes \
         {CLUSTER_PROCESSES}`); Flink's MiniCluster with {CLUSTER_PROCESSES} TaskManagers of one \
         slot each (`--task-managers {CLUSTER_PROCESSES}`), whose shuffles between TaskManagers \
         go through its Netty network stack (one JVM; Flink's TaskManagers of a standalone \
         cluster use the same stack). Storm has no cluster runs (its LocalCluster is one \
         process).\n\n\
         ### Maximum throughput, elements/s\n\n\
         Without tracking (none) and with each system's completeness mechanism at granularity W, \
         as in the single-process sweeps. Ratio above 1: xorflow is faster.\n",
        WORKERS / CLUSTER_PROCESSES
    );
    s.ratio_table(&mut doc.md, CLUSTER_THROUGHPUT_SWEEP, "elements_per_s");
    let chart = s.m.chart(
        CLUSTER_THROUGHPUT_SWEEP,
        "elements_per_s",
        &format!("Throughput across {CLUSTER_PROCESSES} processes (K = 10)"),
        "elements/s",
        true,
    );
    doc.figure(chart, "peers_cluster_throughput")?;
    let _ = writeln!(
        doc.md,
        "### Notification latency at {LATENCY_RATE} elements/s across {CLUSTER_PROCESSES} \
         processes\n\nMeasured as in the single-process latency sweep. Ratio below 1: xorflow \
         notifies sooner.\n"
    );
    latency_tables(doc, s, CLUSTER_LATENCY_SWEEP, "_cluster")
}

/// Notification latency next to Storm's acker at [`STORM_LATENCY_RATE`] (when Storm ran).
fn storm_section(doc: &mut Doc<'_>, s: &Sweeps<'_>) -> Result<()> {
    if s.peers_in(STORM_LATENCY_SWEEP).is_empty() {
        return Ok(());
    }
    let _ = writeln!(
        doc.md,
        "## Notification latency next to Storm's acker, {} elements/s, K = 10\n\n\
         Storm with acking moves about 18,000 elements/s on this machine, so it is compared \
         with xorflow at a rate both sustain. Storm's acker XORs the ids of each spout tuple's \
         tree and tells the spout when it is complete; a spout task's part of a substream is \
         complete when all its trees are. From the last arrival anywhere (at a sink), us; \
         ratio below 1: xorflow notifies sooner.\n",
        STORM_LATENCY_RATE
    );
    for q in ["p50", "p99"] {
        let col = format!("notification_any_{q}_us");
        let _ = writeln!(doc.md, "### {q} from the last arrival anywhere, us\n");
        s.ratio_table(&mut doc.md, STORM_LATENCY_SWEEP, &col);
        let chart = s.m.chart(
            STORM_LATENCY_SWEEP,
            &col,
            &format!("Notification latency {q} next to Storm, from the last arrival anywhere"),
            &format!("notification latency {q}, us"),
            true,
        );
        doc.figure(chart, &format!("peers_latency_storm_{q}"))?;
    }
    s.element_table(&mut doc.md, STORM_LATENCY_SWEEP);
    Ok(())
}

/// Per sweep point and peer: is xorflow ahead or behind?
fn ahead_section(md: &mut String, s: &Sweeps<'_>) {
    md.push_str("## Where xorflow is ahead and where it is behind\n\n");
    let any = "from the last arrival anywhere";
    let storm = format!("{any} at 10,000 elements/s");
    let cluster = format!("across {CLUSTER_PROCESSES} processes");
    let rows: [(&str, &str, bool, String); 13] = [
        (
            "stages",
            "elements_per_s",
            true,
            "throughput without tracking, K".into(),
        ),
        (
            "granularity",
            "elements_per_s",
            true,
            "throughput with tracking, W".into(),
        ),
        (
            "latency",
            "notification_p50_us",
            false,
            "notification p50, W".into(),
        ),
        (
            "latency",
            "notification_p99_us",
            false,
            "notification p99, W".into(),
        ),
        (
            "latency",
            "notification_any_p50_us",
            false,
            format!("notification p50 {any}, W"),
        ),
        (
            "latency",
            "notification_any_p99_us",
            false,
            format!("notification p99 {any}, W"),
        ),
        (
            STORM_LATENCY_SWEEP,
            "notification_any_p50_us",
            false,
            format!("notification p50 {storm}, W"),
        ),
        (
            STORM_LATENCY_SWEEP,
            "notification_any_p99_us",
            false,
            format!("notification p99 {storm}, W"),
        ),
        (
            CLUSTER_THROUGHPUT_SWEEP,
            "elements_per_s",
            true,
            format!("throughput {cluster}, W"),
        ),
        (
            CLUSTER_LATENCY_SWEEP,
            "notification_p50_us",
            false,
            format!("notification p50 {cluster}, W"),
        ),
        (
            CLUSTER_LATENCY_SWEEP,
            "notification_p99_us",
            false,
            format!("notification p99 {cluster}, W"),
        ),
        (
            CLUSTER_LATENCY_SWEEP,
            "notification_any_p50_us",
            false,
            format!("notification p50 {cluster} {any}, W"),
        ),
        (
            CLUSTER_LATENCY_SWEEP,
            "notification_any_p99_us",
            false,
            format!("notification p99 {cluster} {any}, W"),
        ),
    ];
    for (sweep, col, higher_better, what) in rows {
        let Some(values) = s.m.values.get(sweep) else {
            continue;
        };
        let peers = s.peers_in(sweep);
        for v in values {
            for p in &peers {
                let (Some(x), Some(y)) =
                    (s.m.get(sweep, v, "xorflow", col), s.m.get(sweep, v, p, col))
                else {
                    continue;
                };
                let ahead = if higher_better { x > y } else { x < y };
                let _ = writeln!(
                    md,
                    "- {what} = {v}: xorflow {} {p} (xorflow {} vs {})",
                    if ahead { "ahead of" } else { "behind" },
                    num(Some(x), 0),
                    num(Some(y), 0)
                );
            }
        }
    }
}

/// xorflow across processes against itself: its cluster throughput without tracking as a share
/// of the single-process figure at K = 10, and the cost of trAcker across processes.
fn self_section(md: &mut String, s: &Sweeps<'_>) {
    let get = |sweep, v: &str| s.m.get(sweep, v, "xorflow", "elements_per_s");
    let Some(none) = get(CLUSTER_THROUGHPUT_SWEEP, "none") else {
        return;
    };
    let _ = writeln!(
        md,
        "\n## xorflow across {CLUSTER_PROCESSES} processes against itself, K = 10\n"
    );
    if let Some(one) = get("stages", "10") {
        let _ = writeln!(
            md,
            "- without tracking: {} elements/s across processes, {} in one process ({} of it)",
            num(Some(none), 0),
            num(Some(one), 0),
            ratio(Some(none), Some(one))
        );
    }
    for v in
        s.m.values
            .get(CLUSTER_THROUGHPUT_SWEEP)
            .into_iter()
            .flatten()
    {
        if v == "none" {
            continue;
        }
        if let Some(x) = get(CLUSTER_THROUGHPUT_SWEEP, v) {
            let _ = writeln!(
                md,
                "- trAcker at W = {v}: {} elements/s, {} of no tracking",
                num(Some(x), 0),
                ratio(Some(x), Some(none))
            );
        }
    }
}

/// Writes results.csv, the figures and REPORT.md into `dir`.
///
/// # Errors
/// A file cannot be written or a figure cannot be drawn.
pub fn write(
    dir: &Path,
    meta: &Meta,
    java_version: Option<&str>,
    outcomes: &[Outcome<PeerResult>],
) -> Result<()> {
    write_csv(dir, meta, outcomes)?;
    let s = Sweeps {
        m: Medians::new(outcomes),
        outcomes,
    };
    let mut doc = Doc::new(dir, header(meta, java_version, outcomes));
    throughput_sections(&mut doc, &s)?;
    latency_section(&mut doc, &s)?;
    storm_section(&mut doc, &s)?;
    cluster_section(&mut doc, &s)?;
    ahead_section(&mut doc.md, &s);
    self_section(&mut doc.md, &s);
    doc.md
        .push_str("\nThe exact command of every run is in results.csv (`command`) and runs.log.\n");
    doc.finish()
}
