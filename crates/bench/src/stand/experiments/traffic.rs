//! Traffic: service messages and bytes per element by graph size, processes and granularity,
//! markers next to the tracker (centralized and 2 shards, batched and unbatched).

use super::super::report::{num, ratio, sweep_label, Doc, Medians};
use super::super::runner::Point;
use super::super::Profile;
use super::{sweeps, SweepSet};
use crate::chain::ChainResult;
use anyhow::Result;
use std::fmt::Write as _;

const CONFIGS: &[&str] = &[
    "markers",
    "tracker",
    "tracker-unbatched",
    "tracker-2-shards",
    "tracker-2-shards-unbatched",
];

/// The sweeps per profile (the latency experiment sweeps the same).
pub(super) fn profile(p: Profile) -> SweepSet {
    match p {
        Profile::Smoke => SweepSet {
            stages: (10, &[]),
            processes: (2, &[]),
            granularity: (10, &[1, 10]),
            rate: 20_000.0,
            elements: 6_000,
            warmup: 2_000,
            repeat: 1,
        },
        Profile::Quick => SweepSet {
            stages: (30, &[10, 30, 100]),
            processes: (4, &[2, 4, 8]),
            granularity: (10, &[1, 10, 100]),
            rate: 20_000.0,
            elements: 30_000,
            warmup: 10_000,
            repeat: 1,
        },
        Profile::Full => SweepSet {
            stages: (30, &[10, 30, 100]),
            processes: (4, &[2, 4, 8]),
            granularity: (10, &[1, 10, 100]),
            rate: 20_000.0,
            elements: 80_000,
            warmup: 20_000,
            repeat: 3,
        },
    }
}

/// The points of a profile.
pub fn points(p: Profile) -> Vec<Point> {
    sweeps(CONFIGS, profile(p))
}

/// The traffic section of REPORT.md.
pub(super) fn report(doc: &mut Doc<'_>, m: &Medians<ChainResult>) -> Result<()> {
    doc.md.push_str(
        "Service messages (acks, heartbeats, frontier notifications, markers) per element, \
         over the whole run, at a fixed rate; one sweep at a time around 30 stages, 4 \
         processes, granularity 10. Tracker in dedicated processes; batched = 5 ms flushes.\n\n",
    );
    for sweep in ["stages", "processes", "granularity"] {
        if !m.values.contains_key(sweep) {
            continue;
        }
        let _ = writeln!(
            doc.md,
            "## By {}\n\nMessages per element (median):\n\n{}",
            sweep_label(sweep),
            m.table(sweep, "service_messages_per_element", 4)
        );
        let _ = writeln!(
            doc.md,
            "Bytes per element:\n\n{}",
            m.table(sweep, "service_bytes_per_element", 1)
        );
        for (col, what, y, file) in [
            (
                "service_messages_per_element",
                "traffic",
                "service messages per element",
                "traffic",
            ),
            (
                "service_bytes_per_element",
                "bytes",
                "service bytes per element",
                "traffic_bytes",
            ),
        ] {
            let title = format!("Service {what} by {}", sweep_label(sweep));
            let chart = m.chart(sweep, col, &title, y, true);
            doc.figure(chart, &format!("{file}_by_{sweep}"))?;
        }
    }
    let g = |v: &str, c: &str| m.get("granularity", v, c, "service_messages_per_element");
    let _ = writeln!(
        doc.md,
        "## Paper's claim and this run\n\n\
         - Paper: trAcker's service traffic is far below the markers' and does not depend on \
         the granularity; markers send a message per substream per channel.\n\
         - This run, messages per element at granularity 1: markers {}, tracker {} \
         (markers/tracker {}); at granularity 100: markers {}, tracker {} ({}). \
         Tracker at 1 vs 100: {} vs {}; unbatched tracker at 1 vs 100: {} vs {}.\n",
        num(g("1", "markers"), 3),
        num(g("1", "tracker"), 4),
        ratio(g("1", "markers"), g("1", "tracker")),
        num(g("100", "markers"), 3),
        num(g("100", "tracker"), 4),
        ratio(g("100", "markers"), g("100", "tracker")),
        num(g("1", "tracker"), 4),
        num(g("100", "tracker"), 4),
        num(g("1", "tracker-unbatched"), 3),
        num(g("100", "tracker-unbatched"), 3),
    );
    Ok(())
}
