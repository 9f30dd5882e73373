//! Scalability: the centralized tracker next to 2 shards under 1x/5x/9x/17x ack load
//! (self-cancelling acks), each in dedicated tracker processes.

use super::super::report::{num, rate_text, Doc, Medians};
use super::super::runner::{Outcome, Point};
use super::super::{Meta, Profile};
use super::{chain, point};
use crate::chain::ChainResult;
use anyhow::Result;
use std::fmt::Write as _;

/// The points of a profile.
pub fn points(p: Profile) -> Vec<Point> {
    let (mults, rate, elements, warmup, repeat): (&[usize], f64, u64, u64, usize) = match p {
        Profile::Smoke => (&[0, 8], 20_000.0, 6_000, 2_000, 1),
        // 20,000 el/s: the workers keep up at every multiplier while a single tracker process
        // does not at 17x (at 50,000 el/s the workers themselves were saturated at 1x).
        Profile::Quick => (&[0, 2, 4, 8], 20_000.0, 50_000, 10_000, 1),
        Profile::Full => (&[0, 2, 4, 8], 20_000.0, 100_000, 20_000, 3),
    };
    let mut pts = Vec::new();
    for rep in 1..=repeat {
        for &m in mults {
            for c in ["tracker", "tracker-2-shards"] {
                let mut run = chain(30, 4, 1, rate, elements, warmup);
                run.engine.ack_multiplier = m;
                pts.push(point("multiplier", format!("{}x", 2 * m + 1), c, rep, run));
            }
        }
    }
    pts
}

/// The scalability section of REPORT.md.
pub(super) fn report(
    doc: &mut Doc<'_>,
    m: &Medians<ChainResult>,
    outcomes: &[Outcome<ChainResult>],
    meta: &Meta,
) -> Result<()> {
    let _ = write!(
        doc.md,
        "Tracker load multiplied by self-cancelling acks (2m per real ack: 1x/5x/9x/17x), \
         30 stages, 4 processes, granularity 1, {} elements/s; centralized tracker in \
         one dedicated process vs 2 shards in two. Per second of run, summed over the \
         tracker processes: their CPU time (receiving, decoding and applying acks), the \
         time their threads were runnable but waiting for a CPU, and the busy time inside \
         the tracker proper. Each tracker process has one thread doing the work, so CPU \
         plus wait near 1.0 per process means it never ran dry: it is saturated at the \
         CPU share the machine gives it.\n\n",
        rate_text(outcomes),
    );
    for (col, what, d) in [
        ("notification_p50_us", "Notification latency p50, us", 0),
        ("notification_p99_us", "Notification latency p99, us", 0),
        (
            "tracker_cpu_per_s",
            "Tracker processes' CPU time per second",
            3,
        ),
        (
            "tracker_wait_per_s",
            "Tracker processes' run-queue wait per second",
            3,
        ),
        (
            "tracker_busy_per_s",
            "Busy time inside the tracker per second",
            3,
        ),
        ("cpu_per_s", "CPU time of all processes per second", 2),
    ] {
        let _ = writeln!(doc.md, "## {what}\n\n{}", m.table("multiplier", col, d));
    }
    for (col, title, y, log, file) in [
        (
            "notification_p99_us",
            "Notification latency p99 under ack load",
            "notification latency p99, us",
            true,
            "scalability_p99",
        ),
        (
            "notification_p50_us",
            "Notification latency p50 under ack load",
            "notification latency p50, us",
            true,
            "scalability_p50",
        ),
        (
            "tracker_cpu_per_s",
            "Tracker processes' CPU time under ack load",
            "CPU seconds per second (summed over tracker processes)",
            false,
            "scalability_tracker_cpu",
        ),
        (
            "tracker_wait_per_s",
            "Tracker processes' run-queue wait under ack load",
            "seconds runnable but not running, per second",
            false,
            "scalability_tracker_wait",
        ),
    ] {
        doc.figure(m.chart("multiplier", col, title, y, log), file)?;
    }
    claim(doc, m, meta);
    Ok(())
}

/// The paper's claim next to this run's figures at 17x.
fn claim(doc: &mut Doc<'_>, m: &Medians<ChainResult>, meta: &Meta) {
    let at = |v: &str, c: &str, col: &str| m.get("multiplier", v, c, col);
    let one = |col: &str| at("17x", "tracker", col);
    let two = |col: &str| at("17x", "tracker-2-shards", col);
    let _ = writeln!(
        doc.md,
        "## Paper's claim and this run\n\n\
         - Paper: with multiplied acks the centralized tracker stopped holding the load \
         while the distributed one kept working.\n\
         - This run at 17x: centralized p50/p99 {}/{} us; its process got {} s of CPU and \
         waited {} s for a CPU per second (runnable {} s of each second). 2 shards: p50/p99 \
         {}/{} us with {} s of CPU and {} s waiting per second over both processes. At 1x \
         the p99s were {} us and {} us.\n\
         - Reading: all processes together used {} CPU seconds per second at 17x on this \
         {}-CPU machine, so the tracker competes with the workers for the same cores. A \
         single tracker thread that is runnable nearly all the time is getting less CPU \
         than its load needs; its backlog, and the notification latency, grow through the \
         run. Two shards run on two threads, which the scheduler serves side by side: \
         together they got {} s of CPU per second against the single tracker's {} s. The \
         limit shown here is the CPU share of one thread on a shared machine, not the \
         tracker's speed per ack; on the paper's cluster each tracker had a machine of its \
         own.\n",
        num(one("notification_p50_us"), 0),
        num(one("notification_p99_us"), 0),
        num(one("tracker_cpu_per_s"), 2),
        num(one("tracker_wait_per_s"), 2),
        num(
            one("tracker_wait_per_s")
                .zip(one("tracker_cpu_per_s"))
                .map(|(w, c)| w + c),
            2
        ),
        num(two("notification_p50_us"), 0),
        num(two("notification_p99_us"), 0),
        num(two("tracker_cpu_per_s"), 2),
        num(two("tracker_wait_per_s"), 2),
        num(at("1x", "tracker", "notification_p99_us"), 0),
        num(at("1x", "tracker-2-shards", "notification_p99_us"), 0),
        num(one("cpu_per_s"), 2),
        meta.cpus,
        num(two("tracker_cpu_per_s"), 2),
        num(one("tracker_cpu_per_s"), 2),
    );
}
