//! Per-hop durations: two channels joined by event id (the Cloudprofiler paper, sec. 3 and 7.1;
//! docs/papers.md), and the ReT baseline's durations (sec. 2.2, 6.4), each with an error bound; and
//! their summary.

use std::collections::hash_map::Entry;
use std::collections::HashMap;

use super::reader::{LogFile, Records, RetKind};

/// Converts a process's clock ticks to the reference timebase (the Cloudprofiler paper, sec. 3: one
/// reference node, every other node's ticks mapped by the MinRTT alignment).
///
/// Any `Fn(process: u32, ticks: u64) -> (ref_ns: f64, error_bound_ns: f64)` is one. A clock
/// alignment that knows better than adding the two ends' bounds (the same process: the offset
/// cancels; two non-reference processes: their pair's own map, about e instead of 2e) overrides
/// [`ToReference::duration`].
pub trait ToReference {
    /// `ticks` of process `process` as nanoseconds in the reference timebase, and the bound
    /// (ns, >= 0) on that conversion's error.
    fn to_ref(&self, process: u32, ticks: u64) -> (f64, f64);

    /// The duration (ns) from `from` to `to` (each `(process, ticks)`) and its error bound (ns).
    /// Default: the difference of the converted times, and the sum of their bounds (exact for
    /// independent errors; conservative when both ends share one).
    fn duration(&self, from: (u32, u64), to: (u32, u64)) -> (f64, f64) {
        let (a, ea) = self.to_ref(from.0, from.1);
        let (b, eb) = self.to_ref(to.0, to.1);
        (b - a, ea + eb)
    }
}

impl<F: Fn(u32, u64) -> (f64, f64)> ToReference for F {
    fn to_ref(&self, process: u32, ticks: u64) -> (f64, f64) {
        self(process, ticks)
    }
}

/// A run's clock alignment converts by the Cloudprofiler paper's four cases
/// ([`crate::clock::Alignment::duration`]): one e for two non-reference processes instead of 2e. A
/// process the alignment does not know (or has no map for) converts to NaN with an infinite bound,
/// which shows in every summary.
impl ToReference for crate::clock::Alignment {
    fn to_ref(&self, process: u32, ticks: u64) -> (f64, f64) {
        self.to_reference(process as usize, ticks)
            .map_or((f64::NAN, f64::INFINITY), |s| (s.ns, s.bound_ns))
    }

    fn duration(&self, from: (u32, u64), to: (u32, u64)) -> (f64, f64) {
        crate::clock::Alignment::duration(self, (from.0 as usize, from.1), (to.0 as usize, to.1))
            .map_or((f64::NAN, f64::INFINITY), |s| (s.ns, s.bound_ns))
    }
}

/// One event's duration over a hop (or a ReT measurement).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HopDuration {
    /// The event id.
    pub id: u64,
    /// Process of the first end.
    pub from_process: u32,
    /// Process of the second end.
    pub to_process: u32,
    /// `to - from` in the reference timebase, ns (may be negative within the error bound).
    pub duration_ns: f64,
    /// Bound on the error of `duration_ns`, ns.
    pub error_ns: f64,
}

/// The result of a join: durations (sorted by id) and what did not pair up.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Hops {
    /// One per id found at both ends.
    pub durations: Vec<HopDuration>,
    /// Ids logged at the first end only (sampled away later, or still in flight at the end).
    pub unmatched_from: usize,
    /// Ids logged at the second end only.
    pub unmatched_to: usize,
    /// Records of an id already seen at the same end (the first one is used).
    pub duplicates: usize,
}

/// Joins channel `from` and channel `to` (all of their files in `files`, any process or
/// instance) by event id: the duration of each id logged at both is `to - from`, converted by
/// `conv`. Both ends should use the same XoY `x/y` (or log every id) so the same ids survive.
/// Files of other channels, and channels whose records are not events, are ignored.
pub fn hop_durations(files: &[LogFile], from: &str, to: &str, conv: &dyn ToReference) -> Hops {
    let mut hops = Hops::default();
    let mut starts: HashMap<u64, (u32, u64, bool)> = HashMap::new();
    for (p, e) in events_of(files, from) {
        match starts.entry(e.id) {
            Entry::Occupied(_) => hops.duplicates += 1,
            Entry::Vacant(v) => {
                v.insert((p, e.ticks, false));
            }
        }
    }
    for (p, e) in events_of(files, to) {
        match starts.get_mut(&e.id) {
            None => hops.unmatched_to += 1,
            Some((_, _, true)) => hops.duplicates += 1,
            Some((sp, st, used)) => {
                *used = true;
                let (duration_ns, error_ns) = conv.duration((*sp, *st), (p, e.ticks));
                hops.durations.push(HopDuration {
                    id: e.id,
                    from_process: *sp,
                    to_process: p,
                    duration_ns,
                    error_ns,
                });
            }
        }
    }
    hops.unmatched_from = starts.values().filter(|s| !s.2).count();
    hops.durations.sort_by_key(|d| d.id);
    hops
}

fn events_of<'a>(
    files: &'a [LogFile],
    channel: &'a str,
) -> impl Iterator<Item = (u32, &'a super::reader::Event)> + 'a {
    files
        .iter()
        .filter(move |f| f.header.channel == channel)
        .filter_map(|f| match &f.records {
            Records::Events(v) => Some(v.iter().map(move |e| (f.header.process, e))),
            _ => None,
        })
        .flatten()
}

/// The ReT baseline's durations from the `ret` files of `channel`: per id, `end - start` (both
/// on the start node, so one clock). Error bound: the round trip logged with `ret_rtt` for the
/// same id; else the latest round trip logged before the end; else the duration itself (the
/// one-way time lies somewhere in `[0, end - start]`). Unmatched starts/ends are counted.
pub fn ret_durations(files: &[LogFile], channel: &str, conv: &dyn ToReference) -> Hops {
    let mut hops = Hops::default();
    for f in files.iter().filter(|f| f.header.channel == channel) {
        let Records::Ret(recs) = &f.records else {
            continue;
        };
        let p = f.header.process;
        let own_rtt: HashMap<u64, u64> = recs
            .iter()
            .filter(|r| r.kind == RetKind::RoundTrip)
            .map(|r| (r.id, r.ticks))
            .collect();
        let mut starts: HashMap<u64, (u64, bool)> = HashMap::new();
        let mut latest_rtt: Option<u64> = None;
        for r in recs {
            match r.kind {
                RetKind::RoundTrip => latest_rtt = Some(r.ticks),
                RetKind::Start => {
                    if starts.insert(r.id, (r.ticks, false)).is_some() {
                        hops.duplicates += 1;
                    }
                }
                RetKind::End => match starts.get_mut(&r.id) {
                    None => hops.unmatched_to += 1,
                    Some((_, true)) => hops.duplicates += 1,
                    Some((start, used)) => {
                        *used = true;
                        let (duration_ns, _) = conv.duration((p, *start), (p, r.ticks));
                        let error_ns = match own_rtt.get(&r.id).copied().or(latest_rtt) {
                            Some(rtt) => {
                                conv.duration((p, r.ticks.saturating_sub(rtt)), (p, r.ticks))
                                    .0
                            }
                            None => duration_ns.abs(),
                        };
                        hops.durations.push(HopDuration {
                            id: r.id,
                            from_process: p,
                            to_process: p,
                            duration_ns,
                            error_ns,
                        });
                    }
                },
            }
        }
        hops.unmatched_from += starts.values().filter(|s| !s.1).count();
    }
    hops.durations.sort_by_key(|d| d.id);
    hops
}

/// Summary of a set of durations, ns. Percentiles are exact (nearest rank over the sorted
/// durations), computed in f64 because durations may be negative within their error bound,
/// which hdrhistogram's unsigned values could not hold.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Summary {
    /// How many durations.
    pub count: usize,
    /// Smallest duration.
    pub min_ns: f64,
    /// Median.
    pub p50_ns: f64,
    /// 90th percentile.
    pub p90_ns: f64,
    /// 99th percentile.
    pub p99_ns: f64,
    /// Largest duration.
    pub max_ns: f64,
    /// Mean of the error bounds.
    pub mean_error_ns: f64,
    /// Largest error bound.
    pub max_error_ns: f64,
}

/// Summarises `durations`; `None` when empty (or when a duration is NaN).
pub fn summarize(durations: &[HopDuration]) -> Option<Summary> {
    if durations.is_empty() || durations.iter().any(|d| d.duration_ns.is_nan()) {
        return None;
    }
    let mut d: Vec<f64> = durations.iter().map(|h| h.duration_ns).collect();
    d.sort_by(f64::total_cmp);
    let rank = |q: f64| d[((q * d.len() as f64).ceil() as usize).clamp(1, d.len()) - 1];
    let errors = durations.iter().map(|h| h.error_ns);
    Some(Summary {
        count: d.len(),
        min_ns: d[0],
        p50_ns: rank(0.5),
        p90_ns: rank(0.9),
        p99_ns: rank(0.99),
        max_ns: d[d.len() - 1],
        mean_error_ns: errors.clone().sum::<f64>() / d.len() as f64,
        max_error_ns: errors.fold(0.0, f64::max),
    })
}
