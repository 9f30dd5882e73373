//! The chain ladder's curve.csv and REPORT.md.

use super::{ChainLadderConfig, ChainStep, Engine, MIN_ACHIEVED};
use crate::chain::ChainMeasures;
use crate::sustainable::{best_table, thirds, GROWTH_FACTOR, GROWTH_SLACK_MS};
use std::fmt::Write as _;
use xorflow_runtime::ValueName;

type Step = crate::sustainable::Step<Engine, ChainStep>;

/// How a step was judged: by its per-second series, or by the achieved rate.
fn judged_by(m: &ChainMeasures) -> &'static str {
    if m.element_p99_ms_by_second.is_empty() {
        "achieved rate"
    } else {
        "latency series"
    }
}

/// The columns of a step's row: curve.csv's names and REPORT.md's.
const COLUMNS: [(&str, &str); 11] = [
    ("engine", "engine"),
    ("rate", "rate"),
    ("achieved_elements_per_s", "achieved, elements/s"),
    ("element_p50_ms", "element p50, ms"),
    ("element_p99_ms", "element p99, ms"),
    (
        "middle_third_p99_ms",
        "per-second p99, middle third (median), ms",
    ),
    ("last_third_p99_ms", "last third, ms"),
    ("notification_p99_ms", "notification p99, ms"),
    ("elapsed_s", "run, s"),
    ("load_before", "load"),
    ("judged_by", "judged by"),
];

/// A step's row in [`COLUMNS`] order; `empty` for what a failed run or an engine lacks.
fn cells(s: &Step, empty: &str) -> Vec<String> {
    let num =
        |v: Option<f64>, digits: usize| v.map_or(empty.to_string(), |v| format!("{v:.digits$}"));
    let mut row = vec![s.engine.name().to_string(), s.rate.to_string()];
    let Some(r) = &s.result else {
        row.resize(COLUMNS.len(), empty.to_string());
        row[COLUMNS.len() - 2] = num(s.load_before, 2);
        return row;
    };
    let m = &r.measures;
    let ms = |us: Option<f64>| us.map(|u| u / 1e3);
    let t = thirds(&m.element_p99_ms_by_second);
    row.extend([
        num(m.achieved_rate, 0),
        num(ms(m.element_latency.p50_us), 3),
        num(ms(m.element_latency.p99_us), 3),
        num(t.map(|t| t.0), 3),
        num(t.map(|t| t.1), 3),
        num(
            ms(m.notification_latency_any.p99_us.or(m.latency_p99_us)),
            3,
        ),
        num(Some(m.elapsed_s), 2),
        num(s.load_before, 2),
        judged_by(m).to_string(),
    ]);
    row
}

/// curve.csv: one row per step.
pub fn curve(steps: &[Step]) -> String {
    let mut t = COLUMNS.map(|c| c.0).join(",") + ",sustainable\n";
    for s in steps {
        let _ = writeln!(t, "{},{}", cells(s, "").join(","), s.verdict.ok);
    }
    t
}

/// REPORT.md: the settings, each engine's highest sustainable rate and its ratio to xorflow's,
/// every step with its verdict, and how each engine was judged.
pub fn report(
    cfg: &ChainLadderConfig,
    steps: &[Step],
    (load_start, load_end): (Option<f64>, Option<f64>),
    java: Option<&str>,
) -> String {
    let mut t = String::from("# Sustainable throughput, chain\n\n");
    let _ = writeln!(t, "Command: `{}`\n", crate::ysb::command_line());
    let g = cfg.granularity();
    let _ = writeln!(
        t,
        "The trAcker paper's chain, K = {} stages, {} workers in one process per engine, {}; steps of {} s \
         at {} elements/s (the first third of each step's elements is warm-up), engines \
         alternating within a step, each leaving after its first unsustainable step. Machine \
         load (1-minute average) {} at the start, {} at the end; per step in curve.csv.{}\n",
        cfg.stages,
        super::WORKERS,
        if g == 0 {
            "no completeness tracking".to_string()
        } else {
            format!(
                "completeness at granularity {g} (xorflow: --tracking {}; timely: a timestamp per \
                 substream; Flink: a punctuated watermark per substream, buffer timeout {} ms; \
                 Storm: its acker)",
                cfg.tracking.name(),
                cfg.flink_buffer_timeout_ms
            )
        },
        cfg.duration_s,
        cfg.rates
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(", "),
        load_start.map_or("unknown".into(), |l| format!("{l:.2}")),
        load_end.map_or("unknown".into(), |l| format!("{l:.2}")),
        java.map_or(String::new(), |j| format!(" Java: {j}."))
    );
    let _ = writeln!(
        t,
        "A step is sustainable when every element the schedule emitted is received within the \
         step (a run still going {} s after its schedule ended is stopped, or for Flink and \
         Storm, whose process also starts a JVM and runs warm-up jobs, a measured run longer \
         than that: unsustainable) and the end-to-end element latency (due time at the source \
         to the sink) does not grow: per second of the schedule (the elements due in it), every \
         engine's p99; the median over the last third stays within {GROWTH_FACTOR}x that of \
         the middle third + {GROWTH_SLACK_MS} ms (the Cloudprofiler paper, section 4.4). A step whose output \
         has no per-second series (a Flink or Storm peer from before it printed one; \
         \"judged by\" says so) is judged by the rate its sources achieved over the measured \
         elements instead: at least {MIN_ACHIEVED} of the rate (both hold their sources back \
         when their bounded buffers fill, so a backlog lowers it; a growth slower than {:.0} % \
         of the rate goes unseen).\n",
        cfg.grace_s(),
        (1.0 - MIN_ACHIEVED) * 100.0
    );
    t.push_str(&best_table(steps, &cfg.engines, Engine::name, "elements/s"));
    let _ = writeln!(
        t,
        "\n| {} | verdict |\n|---|{}---|---|",
        COLUMNS.map(|c| c.1).join(" | "),
        // Right-aligned numbers between the engine and "judged by".
        "---:|".repeat(COLUMNS.len() - 2)
    );
    for s in steps {
        let _ = writeln!(
            t,
            "| {} | {} |",
            cells(s, "-").join(" | "),
            s.verdict.why.replace('|', "/")
        );
    }
    t
}
