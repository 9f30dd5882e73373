//! Latency: notification latency p50/p95/p99 at a fixed rate by graph size, processes and
//! granularity, the tracker (in a dedicated process) next to markers.

use super::super::report::{num, rate_text, ratio, sweep_label, Doc, Medians};
use super::super::runner::{Outcome, Point};
use super::super::Profile;
use super::{sweeps, traffic, SweepSet};
use crate::chain::ChainResult;
use anyhow::Result;
use std::fmt::Write as _;

const CONFIGS: &[&str] = &["tracker-process", "markers"];

/// 10,000 elements/s: at 30 stages × 4 processes on 2 cores, 50,000 el/s put element latency
/// at 13-25 ms (queueing everywhere), which hides the tracking mechanisms behind load.
fn profile(p: Profile) -> SweepSet {
    SweepSet {
        rate: 10_000.0,
        elements: match p {
            Profile::Smoke => 4_000,
            Profile::Quick => 25_000,
            Profile::Full => 60_000,
        },
        warmup: match p {
            Profile::Smoke => 1_000,
            Profile::Quick => 5_000,
            Profile::Full => 10_000,
        },
        ..traffic::profile(p)
    }
}

/// The points of a profile.
pub fn points(p: Profile) -> Vec<Point> {
    sweeps(CONFIGS, profile(p))
}

/// The latency section of REPORT.md.
pub(super) fn report(
    doc: &mut Doc<'_>,
    m: &Medians<ChainResult>,
    outcomes: &[Outcome<ChainResult>],
) -> Result<()> {
    let _ = write!(
        doc.md,
        "Notification latency at the sink (receiving a substream's last element to the \
         notification that it is complete) at {} elements/s; one sweep at a time around \
         30 stages, 4 processes, granularity 10. Tracker in a dedicated process.\n\n",
        rate_text(outcomes),
    );
    for sweep in ["stages", "processes", "granularity"] {
        if !m.values.contains_key(sweep) {
            continue;
        }
        for (col, q) in [
            ("notification_p50_us", "p50"),
            ("notification_p95_us", "p95"),
            ("notification_p99_us", "p99"),
        ] {
            let _ = writeln!(
                doc.md,
                "## {q} by {}, us\n\n{}",
                sweep_label(sweep),
                m.table(sweep, col, 0)
            );
        }
        for q in ["p50", "p99"] {
            let chart = m.chart(
                sweep,
                &format!("notification_{q}_us"),
                &format!("Notification latency {q} by {}", sweep_label(sweep)),
                &format!("notification latency {q}, us"),
                true,
            );
            doc.figure(chart, &format!("latency_{q}_by_{sweep}"))?;
        }
    }
    let at = |c: &str, col: &str| m.get("stages", "30", c, col);
    let (t50, t99) = (
        at("tracker-process", "notification_p50_us"),
        at("tracker-process", "notification_p99_us"),
    );
    let (k50, k99) = (
        at("markers", "notification_p50_us"),
        at("markers", "notification_p99_us"),
    );
    let _ = writeln!(
        doc.md,
        "## Paper's claim and this run\n\n\
         - Paper: figures of notification latency by graph size, machines and granularity \
         for both techniques (no number in the text).\n\
         - This run at 30 stages: tracker p50 {} us, p99 {} us; markers p50 {} us, p99 {} us \
         (tracker/markers p50 {}, p99 {}).\n",
        num(t50, 0),
        num(t99, 0),
        num(k50, 0),
        num(k99, 0),
        ratio(t50, k50),
        ratio(t99, k99),
    );
    ahead_counts(doc, m);
    Ok(())
}

/// Over every sweep point: where is each technique ahead?
fn ahead_counts(doc: &mut Doc<'_>, m: &Medians<ChainResult>) {
    for (col, q) in [
        ("notification_p50_us", "p50"),
        ("notification_p99_us", "p99"),
    ] {
        let (mut ahead, mut points, mut behind) = (0, 0, Vec::new());
        for (sweep, values) in &m.values {
            for v in values {
                let t = m.get(sweep, v, "tracker-process", col);
                let k = m.get(sweep, v, "markers", col);
                if let (Some(t), Some(k)) = (t, k) {
                    points += 1;
                    if t < k {
                        ahead += 1;
                    } else {
                        behind.push(format!("{} {v}", sweep_label(sweep)));
                    }
                }
            }
        }
        let _ = writeln!(
            doc.md,
            "- {q}: the tracker is lower at {ahead} of {points} sweep points{}.",
            if behind.is_empty() {
                String::new()
            } else {
                format!("; markers are lower or equal at {}", behind.join(", "))
            }
        );
    }
}
