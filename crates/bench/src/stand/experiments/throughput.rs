//! Throughput: the maximum sustainable rate of none / tracker / markers at granularity 1 and
//! 100, found by a search per (configuration, granularity).

use super::super::plot::{BarChart, Series};
use super::super::report::{num, ratio, Align, Doc, Medians, Table};
use super::super::runner::{Outcome, Point, Run, Runner};
use super::super::{Meta, Profile};
use super::{chain, point, sustained, BACKLOG_P99_MS, SUSTAINED_SHARE};
use crate::chain::ChainResult;
use anyhow::Result;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Where each (configuration, granularity) search starts.
pub fn starts(p: Profile) -> Vec<Point> {
    let (configs, gs): (&[&str], &[u64]) = match p {
        Profile::Smoke => (&["none", "tracker-default"], &[100]),
        _ => (&["none", "tracker-default", "markers"], &[1, 100]),
    };
    // Near saturation one run's verdict is noisy (p99 swings by 5x between neighbouring rates),
    // so the full profile repeats the whole search and the report takes the median.
    let reps = if p == Profile::Full { 3 } else { 1 };
    let mut pts = Vec::new();
    for rep in 1..=reps {
        for &g in gs {
            for &c in configs {
                pts.push(search_point(p, c, g, 250_000.0, rep));
            }
        }
    }
    pts
}

fn search_point(p: Profile, config: &str, g: u64, rate: f64, rep: usize) -> Point {
    // Long enough to see a backlog grow: 1.5 s (quick) or 3 s (full) of measured input.
    let secs = match p {
        Profile::Smoke => 0.5,
        Profile::Quick => 1.5,
        Profile::Full => 3.0,
    };
    let warmup = (rate * 0.5) as u64;
    let elements = warmup + (rate * secs) as u64;
    let mut run = chain(10, 2, g, rate, elements, warmup);
    run.engine.no_latency_probe = true;
    point("granularity", g.to_string(), config, rep, run)
}

/// Doubles the rate from each start until a run does not keep up, then bisects between the last
/// rate that kept up and the first that did not (2 steps quick, 3 full). The smoke profile runs
/// the starts only.
pub(super) fn search(
    runner: &mut Runner,
    starts: Vec<Point>,
    profile: Profile,
) -> Vec<Outcome<ChainResult>> {
    let mut out = Vec::new();
    let bisections = match profile {
        Profile::Smoke => 0,
        Profile::Quick => 2,
        Profile::Full => 3,
    };
    let max_rate = 64e6;
    for start in starts {
        let g: u64 = start.value.parse().unwrap_or(1);
        let (config, rep) = (start.config.clone(), start.rep);
        let mut point = start;
        let (mut good, mut bad): (Option<f64>, Option<f64>) = (None, None);
        loop {
            let Run::Chain(c) = &point.run else {
                unreachable!("throughput points are chain runs")
            };
            let rate = c.rate;
            let o: Outcome<ChainResult> = runner.run(&point);
            let ok = o.result.as_ref().is_some_and(|r| sustained(&r.measures));
            out.push(o);
            if ok {
                good = Some(rate);
            } else {
                bad = Some(rate);
            }
            if profile == Profile::Smoke {
                break;
            }
            let next = match (good, bad) {
                (Some(gd), None) if gd * 2.0 <= max_rate => gd * 2.0,
                (Some(_), None) => break,
                (None, Some(b)) if b > 10_000.0 => b / 4.0,
                (None, Some(_)) => break,
                (Some(gd), Some(b)) => {
                    if bisections == 0 || b / gd < 1.0 + 0.5f64.powi(bisections) {
                        break;
                    }
                    (gd * b).sqrt()
                }
                (None, None) => break,
            };
            runner.add_point();
            point = search_point(profile, &config, g, next.round(), rep);
        }
    }
    out
}

/// (granularity, config) -> repetition -> the highest rate that kept up.
type PerSearch = BTreeMap<(String, String), BTreeMap<usize, f64>>;

/// Per search the highest rate that kept up, and their median over repetitions.
fn best_rates(outcomes: &[Outcome<ChainResult>]) -> (PerSearch, BTreeMap<(String, String), f64>) {
    let mut per_rep = PerSearch::new();
    for o in outcomes {
        let k = (o.point.value.clone(), o.point.config.clone());
        let b = per_rep
            .entry(k)
            .or_default()
            .entry(o.point.rep)
            .or_insert(0.0);
        if let Some(r) = o.result.as_ref().filter(|r| sustained(&r.measures)) {
            *b = b.max(r.measures.rate);
        }
    }
    let best = per_rep
        .iter()
        .map(|(k, reps)| {
            let mut v: Vec<f64> = reps.values().copied().collect();
            v.sort_by(f64::total_cmp);
            (k.clone(), v[v.len() / 2])
        })
        .collect();
    (per_rep, best)
}

/// The throughput section of REPORT.md.
pub(super) fn report(
    doc: &mut Doc<'_>,
    m: &Medians<ChainResult>,
    outcomes: &[Outcome<ChainResult>],
    meta: &Meta,
) -> Result<()> {
    let _ = writeln!(
        doc.md,
        "Maximum sustainable throughput, chain of 10 stages on 2 processes x 1 worker: the \
         rate doubles until a run does not keep up (sources achieve under {:.0}% of the \
         rate, or end-to-end p99 latency over {} ms), then is bisected. Every attempt is in \
         results.csv (column `sustained`).\n",
        SUSTAINED_SHARE * 100.0,
        BACKLOG_P99_MS
    );
    let (per_rep, best) = best_rates(outcomes);
    let b = |g: &str, c: &str| best.get(&(g.to_string(), c.to_string())).copied();
    let gs = m.values.get("granularity").cloned().unwrap_or_default();
    let chart = BarChart {
        title: "Maximum sustainable throughput".into(),
        x_label: "granularity (elements per substream)".into(),
        y_label: "elements/s".into(),
        series: m
            .configs
            .iter()
            .map(|c| Series {
                name: c.clone(),
                values: gs.iter().map(|g| b(g, c)).collect(),
            })
            .collect(),
        categories: gs.clone(),
        log_y: false,
    };
    let mut t = Table::with(&[
        ("granularity", Align::Right),
        ("config", Align::Left),
        ("max sustainable elements/s (median)", Align::Right),
        ("vs none", Align::Right),
        ("each search", Align::Left),
    ]);
    for g in &gs {
        for c in &m.configs {
            let each: Vec<String> = per_rep
                .get(&(g.clone(), c.clone()))
                .map(|r| r.values().map(|x| num(Some(*x), 0)).collect())
                .unwrap_or_default();
            t.row(vec![
                g.clone(),
                c.clone(),
                num(b(g, c), 0),
                ratio(b(g, c), b(g, "none")),
                each.join(" / "),
            ]);
        }
    }
    let _ = writeln!(doc.md, "{}", t.render());
    doc.figure(chart, "throughput")?;
    let _ = writeln!(
        doc.md,
        "## Paper's claim and this run\n\n\
         - Paper: trAcker's overhead on maximum throughput is not substantial and does not \
         depend on the granularity; markers' overhead is huge when tracking every element.\n\
         - This run: tracker/none {} at granularity 1 and {} at 100; markers/none {} at 1 \
         and {} at 100. The search resolves rates to about {}, so smaller differences are \
         noise.\n",
        ratio(b("1", "tracker-default"), b("1", "none")),
        ratio(b("100", "tracker-default"), b("100", "none")),
        ratio(b("1", "markers"), b("1", "none")),
        ratio(b("100", "markers"), b("100", "none")),
        if meta.profile == "full" { "9%" } else { "19%" },
    );
    Ok(())
}
