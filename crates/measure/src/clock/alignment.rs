//! The clocks of a whole run aligned to one reference process, and the conversion of timestamps
//! and cross-process durations into its time (the Cloudprofiler paper, section 3.3: the four
//! duration cases; docs/papers.md).
//!
//! Every ordered pair (i, j) of processes ran the ping-pong before and after the run with i
//! sending the pings: that gives the map from j's ticks to i's ([`LinearMap`]). The reference is
//! process 0: a timestamp of process p converts through the map (0, p); a duration between
//! processes p and q (neither the reference) goes through the pair's own map (q, p) and is then
//! scaled into reference time by q's rate, which costs about one e instead of the 2e of two
//! conversions to the reference ([`Alignment::duration_naive`] is that naive way).

use super::anchor::AnchorMap;
use super::map::{Bounded, LinearMap};
use super::sample::MinRtt;
use super::skew::Skew;
use super::source::ClockKind;
use serde::{Deserialize, Serialize};

/// One process's clock, as it reported it.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProcessClock {
    /// Process index.
    pub process: usize,
    /// Its tick source.
    pub kind: ClockKind,
    /// Its ticks per ns (calibrated against its `CLOCK_MONOTONIC_RAW`).
    pub ticks_per_ns: f64,
    /// The synthetic skew it ran with (tests only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skew: Option<Skew>,
    /// Its `CLOCK_MONOTONIC_RAW` ns tied to its ticks, one anchor per alignment phase (the
    /// runtime's stamps convert through it: [`Alignment::monotonic_duration`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub monotonic: Option<AnchorMap>,
}

/// What process `initiator` measured against `responder`: its MinRTT before and after the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PairSamples {
    /// The process that sent the pings (whose clock the midpoints are on).
    pub initiator: usize,
    /// The process that answered.
    pub responder: usize,
    /// Before the run (after every connection was up, before the workers started).
    pub before: MinRtt,
    /// After the run (after every process finished, before the connections closed).
    pub after: MinRtt,
}

/// One ordered pair's result, as reported: the round trips, the map and its bound.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PairAlignment {
    /// The samples it comes from.
    #[serde(flatten)]
    pub samples: PairSamples,
    /// MinRTT before the run, ns of the initiator.
    pub before_min_rtt_ns: Option<f64>,
    /// MinRTT after the run, ns of the initiator.
    pub after_min_rtt_ns: Option<f64>,
    /// Initiator minus responder clock at the before round trip, initiator ns.
    pub offset_ns: Option<f64>,
    /// Initiator ticks per responder tick, minus 1, in ppm (the rate difference when both
    /// count at one nominal frequency, as a TSC shared between namespaces does).
    pub rate_ppm: Option<f64>,
    /// Largest error of a converted timestamp between the two round trips (the paper's e),
    /// initiator ns.
    pub bound_ns: Option<f64>,
    /// The map from responder ticks to initiator ticks (None without both round trips).
    pub map: Option<LinearMap>,
    /// Why there is no map.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl PairAlignment {
    /// The result of one pair's samples; `tpn` is the initiator's ticks per ns.
    pub fn new(samples: PairSamples, tpn: f64) -> PairAlignment {
        let ns = |r: &MinRtt| r.best.map(|b| b.rtt() as f64 / tpn);
        let map = match (samples.before.best, samples.after.best) {
            (Some(b), Some(a)) => LinearMap::new(&b, &a),
            (None, _) => Err("no before-run round trip".to_string()),
            (_, None) => Err("no after-run round trip".to_string()),
        };
        let (map, error) = match map {
            Ok(m) => (Some(m), None),
            Err(e) => (None, Some(e)),
        };
        PairAlignment {
            samples,
            before_min_rtt_ns: ns(&samples.before),
            after_min_rtt_ns: ns(&samples.after),
            offset_ns: map.map(|m| m.offset_at(m.x1) / tpn),
            rate_ppm: map.map(|m| (m.rate() - 1.0) * 1e6),
            bound_ns: map.map(|m| m.e() / tpn),
            map,
            error,
        }
    }
}

/// Which of the paper's duration cases a conversion took (section 3.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Case {
    /// Both ends on the reference process: no error.
    Reference,
    /// Both ends on one other process: scaled by its rate, error far below e.
    SameProcess,
    /// One end on the reference process: error e of the other end's conversion.
    OneReference,
    /// Two other processes: through their own map, then scaled: about e.
    TwoProcesses,
}

/// A timestamp in reference time.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Stamp {
    /// Reference ticks.
    pub ticks: f64,
    /// Reference ns (`ticks` / the reference's ticks per ns).
    pub ns: f64,
    /// |true - estimate| is at most this, ns.
    pub bound_ns: f64,
}

/// A duration in reference time.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Span {
    /// End minus start, reference ns.
    pub ns: f64,
    /// |true - estimate| is at most this, ns.
    pub bound_ns: f64,
    /// How it was converted.
    pub case: Case,
}

/// The clocks of a run aligned to a reference process; goes into the run's report.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Alignment {
    /// The reference process (0).
    pub reference: usize,
    /// Pings per pair and phase.
    pub rounds: u32,
    /// Every process's clock, by process.
    pub clocks: Vec<ProcessClock>,
    /// Every ordered pair, by (initiator, responder).
    pub pairs: Vec<PairAlignment>,
}

impl Alignment {
    /// Aligns a run from every process's clock and every ordered pair's samples.
    ///
    /// # Errors
    /// `clocks` not one per process in order, the reference out of range, or samples naming a
    /// process out of range.
    pub fn new(
        reference: usize,
        rounds: u32,
        clocks: Vec<ProcessClock>,
        mut samples: Vec<PairSamples>,
    ) -> Result<Alignment, String> {
        let n = clocks.len();
        if let Some((i, c)) = clocks.iter().enumerate().find(|(i, c)| c.process != *i) {
            return Err(format!("clock {i} is process {}'s", c.process));
        }
        if reference >= n {
            return Err(format!("reference process {reference} of {n}"));
        }
        if let Some(s) = samples
            .iter()
            .find(|s| s.initiator >= n || s.responder >= n)
        {
            return Err(format!(
                "clock samples of processes {} -> {}, but the run has {n}",
                s.initiator, s.responder
            ));
        }
        samples.sort_by_key(|s| (s.initiator, s.responder));
        let pairs = samples
            .into_iter()
            .map(|s| PairAlignment::new(s, clocks[s.initiator].ticks_per_ns))
            .collect();
        Ok(Alignment {
            reference,
            rounds,
            clocks,
            pairs,
        })
    }

    /// The map from `responder`'s ticks to `initiator`'s.
    ///
    /// # Errors
    /// No such pair, or it has no map (a phase missing), saying which.
    pub fn map(&self, initiator: usize, responder: usize) -> Result<&LinearMap, String> {
        let p = self
            .pairs
            .iter()
            .find(|p| p.samples.initiator == initiator && p.samples.responder == responder)
            .ok_or_else(|| format!("no clock alignment of process {responder} to {initiator}"))?;
        p.map.as_ref().ok_or_else(|| {
            format!(
                "no clock map of process {responder} to {initiator}: {}",
                p.error.as_deref().unwrap_or("unknown")
            )
        })
    }

    fn tpn(&self, p: usize) -> Result<f64, String> {
        self.clocks
            .get(p)
            .map(|c| c.ticks_per_ns)
            .ok_or_else(|| format!("process {p} is not in this run ({})", self.clocks.len()))
    }

    /// Process `process`'s reading `ticks` in reference time.
    ///
    /// # Errors
    /// An unknown process, or no map from it to the reference.
    pub fn to_reference(&self, process: usize, ticks: u64) -> Result<Stamp, String> {
        let tpn = self.tpn(self.reference)?;
        self.tpn(process)?;
        let b = if process == self.reference {
            Bounded {
                value: ticks as f64,
                bound: 0.0,
            }
        } else {
            self.map(self.reference, process)?.convert(ticks)
        };
        Ok(Stamp {
            ticks: b.value,
            ns: b.value / tpn,
            bound_ns: b.bound / tpn,
        })
    }

    /// The duration from `start` (process, ticks) to `end` (process, ticks) in reference ns,
    /// with its bound, by the paper's four cases.
    ///
    /// # Errors
    /// An unknown process or a missing map.
    pub fn duration(&self, start: (usize, u64), end: (usize, u64)) -> Result<Span, String> {
        let r = self.reference;
        let tpn = self.tpn(r)?;
        let ((p, s), (q, e)) = (start, end);
        self.tpn(p)?;
        self.tpn(q)?;
        let diff = |a: u64, b: u64| (b as i128 - a as i128) as i64;
        let (b, case) = if p == r && q == r {
            let d = diff(s, e) as f64;
            (
                Bounded {
                    value: d,
                    bound: 0.0,
                },
                Case::Reference,
            )
        } else if p == q {
            (self.map(r, p)?.scale(diff(s, e)), Case::SameProcess)
        } else if p == r || q == r {
            let (ps, pe) = (self.to_reference(p, s)?, self.to_reference(q, e)?);
            let b = Bounded {
                value: pe.ticks - ps.ticks,
                bound: (ps.bound_ns + pe.bound_ns) * tpn,
            };
            (b, Case::OneReference)
        } else {
            // Start into the end process's clock by the pair's own map, then scale.
            let start_q = self.map(q, p)?.convert(s);
            let d_q = e as f64 - start_q.value;
            let to_r = self.map(r, q)?;
            let b = Bounded {
                value: d_q * to_r.rate(),
                bound: start_q.bound * (to_r.rate() + to_r.rate_bound())
                    + d_q.abs() * to_r.rate_bound(),
            };
            (b, Case::TwoProcesses)
        };
        Ok(Span {
            ns: b.value / tpn,
            bound_ns: b.bound / tpn,
            case,
        })
    }

    /// Process `p`'s `CLOCK_MONOTONIC_RAW` reading `ns` in its own ticks through its anchors
    /// ([`ProcessClock::monotonic`]), with that conversion's error in reference ns.
    fn monotonic_ticks(&self, (p, ns): (usize, u64)) -> Result<(u64, f64), String> {
        let c = (self.clocks.get(p))
            .ok_or_else(|| format!("process {p} is not in this run ({})", self.clocks.len()))?;
        let m = (c.monotonic).ok_or_else(|| format!("process {p} reported no clock anchors"))?;
        let b = m.ticks(ns);
        // Rounding to a whole tick adds half a tick.
        Ok((
            b.value.max(0.0).round() as u64,
            (b.bound + 0.5) / c.ticks_per_ns,
        ))
    }

    /// Process `p`'s `CLOCK_MONOTONIC_RAW` reading `ns` (a runtime stamp) in reference time:
    /// through `p`'s anchors to its ticks, then as [`Alignment::to_reference`].
    ///
    /// # Errors
    /// An unknown process, a missing map, or a process without anchors.
    pub fn monotonic_stamp(&self, p: usize, ns: u64) -> Result<Stamp, String> {
        let (ticks, anchor_bound) = self.monotonic_ticks((p, ns))?;
        let mut s = self.to_reference(p, ticks)?;
        s.bound_ns += anchor_bound;
        Ok(s)
    }

    /// Like [`Alignment::duration`], for readings of the processes' `CLOCK_MONOTONIC_RAW` ns (the
    /// runtime's stamps): each end goes to its process's ticks through the process's anchors
    /// ([`ProcessClock::monotonic`]), whose error adds to the bound.
    ///
    /// # Errors
    /// An unknown process, a missing map, or a process without anchors.
    pub fn monotonic_duration(
        &self,
        start: (usize, u64),
        end: (usize, u64),
    ) -> Result<Span, String> {
        let (s, e) = (self.monotonic_ticks(start)?, self.monotonic_ticks(end)?);
        let mut span = self.duration((start.0, s.0), (end.0, e.0))?;
        span.bound_ns += s.1 + e.1;
        Ok(span)
    }

    /// The naive way, for comparison: both ends converted to the reference separately, so the
    /// bounds add (2e for two non-reference processes).
    ///
    /// # Errors
    /// As [`Alignment::duration`].
    pub fn duration_naive(&self, start: (usize, u64), end: (usize, u64)) -> Result<Span, String> {
        let (a, b) = (
            self.to_reference(start.0, start.1)?,
            self.to_reference(end.0, end.1)?,
        );
        let case = match (start.0 == self.reference, end.0 == self.reference) {
            (true, true) => Case::Reference,
            (false, false) if start.0 == end.0 => Case::SameProcess,
            (false, false) => Case::TwoProcesses,
            _ => Case::OneReference,
        };
        Ok(Span {
            ns: b.ns - a.ns,
            bound_ns: a.bound_ns + b.bound_ns,
            case,
        })
    }

    /// The largest bound (e) over the pairs to the reference, ns; None when a pair has no map.
    pub fn max_bound_ns(&self) -> Option<f64> {
        let to_ref = self
            .pairs
            .iter()
            .filter(|p| p.samples.initiator == self.reference);
        to_ref
            .map(|p| p.bound_ns)
            .try_fold(0.0f64, |m, b| Some(m.max(b?)))
    }
}
