//! Clock alignment against simulated clocks whose truth is known: each process's clock is
//! `offset + rate * t` (t in true ns; rates of 0.5-4 ticks/ns, 10-100 ppm apart), round trips have
//! random, asymmetric one-way delays, and every converted timestamp and duration must lie within
//! its bound of the truth.

use proptest::prelude::*;
use xorflow_measure::clock::sample::{MinRtt, RoundTrip};
use xorflow_measure::clock::{Alignment, Case, ClockKind, PairSamples, ProcessClock};

/// Quantization of the test's own readings of the truth, ticks (one floor per reading).
const READ_TOLERANCE_TICKS: f64 = 2.0;

#[derive(Clone, Debug)]
struct SimClock {
    offset: f64,
    rate: f64,
}

impl SimClock {
    fn read(&self, t: f64) -> u64 {
        (self.offset + self.rate * t).floor() as u64
    }
}

/// 100 round trips from `a` to `b` starting at true time `t0`, one-way delays from `delays`.
fn ping_pong(a: &SimClock, b: &SimClock, t0: f64, delays: &[(f64, f64)]) -> MinRtt {
    let mut m = MinRtt::default();
    let mut t = t0;
    for &(out, back) in delays {
        let sent = a.read(t);
        let remote = b.read(t + out);
        let received = a.read(t + out + back);
        m.push(RoundTrip::new(sent, remote, received).unwrap());
        t += out + back + 1000.0;
    }
    m
}

fn clocks() -> impl Strategy<Value = Vec<SimClock>> {
    // Base rate 0.5-4 ticks/ns, per-process rate error -100..100 ppm, offsets up to 10^12 ticks.
    (
        0.5f64..4.0,
        prop::collection::vec((0f64..1e12, -100f64..100.0), 3),
    )
        .prop_map(|(base, ps)| {
            ps.into_iter()
                .map(|(offset, ppm)| SimClock {
                    offset: offset + 1e9,
                    rate: base * (1.0 + ppm * 1e-6),
                })
                .collect()
        })
}

/// One-way delays, ns: a floor of 2-20 us plus up to 200 us of queueing in either direction.
fn delays() -> impl Strategy<Value = Vec<(f64, f64)>> {
    (2000f64..20_000.0).prop_flat_map(|floor| {
        prop::collection::vec((0f64..200_000.0, 0f64..200_000.0), 100).prop_map(move |v| {
            v.into_iter()
                .map(|(a, b)| (floor + a * a / 200_000.0, floor + b * b / 200_000.0))
                .collect()
        })
    })
}

/// Every ordered pair's samples: before at true time `span` / 4, after `span` ns later.
fn align(cs: &[SimClock], before: &[(f64, f64)], after: &[(f64, f64)], span: f64) -> Alignment {
    let mut samples = Vec::new();
    for i in 0..cs.len() {
        for j in (0..cs.len()).filter(|&j| j != i) {
            samples.push(PairSamples {
                initiator: i,
                responder: j,
                before: ping_pong(&cs[i], &cs[j], span / 4.0, before),
                after: ping_pong(&cs[i], &cs[j], span * 1.25, after),
            });
        }
    }
    let clocks = cs
        .iter()
        .enumerate()
        .map(|(p, c)| ProcessClock {
            process: p,
            kind: ClockKind::Tsc,
            ticks_per_ns: c.rate,
            skew: None,
            monotonic: None,
        })
        .collect();
    Alignment::new(0, 100, clocks, samples).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn converted_timestamps_lie_within_their_bound(
        cs in clocks(),
        before in delays(),
        after in delays(),
        span in 1e8f64..1e11,
        events in prop::collection::vec((0usize..3, -0.2f64..1.2), 1..50),
    ) {
        let a = align(&cs, &before, &after, span);
        let tpn = cs[0].rate;
        for (p, at) in events {
            // Up to 20 % of the span before the before-run round trips or after the after-run.
            let t = span / 4.0 + at * span;
            let got = a.to_reference(p, cs[p].read(t)).unwrap();
            let truth = cs[0].offset + cs[0].rate * t;
            let err = (got.ticks - truth).abs();
            prop_assert!(
                err <= got.bound_ns * tpn + READ_TOLERANCE_TICKS * cs[0].rate.max(1.0),
                "process {p} at {at}: error {err} ticks, bound {} ticks", got.bound_ns * tpn
            );
            if p == 0 {
                prop_assert_eq!(got.bound_ns, 0.0);
            }
        }
    }

    #[test]
    fn durations_lie_within_their_bound_in_all_four_cases(
        cs in clocks(),
        before in delays(),
        after in delays(),
        // From 1 s: the alignment's round trips (up to 40 ms each side) are short against the
        // run, as in every real run. Against a 100 ms span the two-process path's rate term
        // (`|d| * rate_bound`) could exceed the naive sum, which the last check rules out.
        span in 1e9f64..1e11,
        events in prop::collection::vec((0usize..3, 0usize..3, 0.0f64..1.0, 0f64..5e7), 1..50),
    ) {
        let a = align(&cs, &before, &after, span);
        for (p, q, at, len) in events {
            let ts = span / 4.0 + 1e6 + at * span;
            let te = ts + len;
            let (s, e) = ((p, cs[p].read(ts)), (q, cs[q].read(te)));
            let d = a.duration(s, e).unwrap();
            let naive = a.duration_naive(s, e).unwrap();
            // True duration in reference ns: the reference counts rate ticks per true ns and
            // its ns are its ticks over its rate, so true ns.
            let err = (d.ns - len).abs();
            let slack = READ_TOLERANCE_TICKS * 2.0 / cs[0].rate.min(cs[p].rate).min(cs[q].rate);
            prop_assert!(err <= d.bound_ns + slack, "{p}->{q}: error {err} ns, bound {}", d.bound_ns);
            prop_assert!((naive.ns - len).abs() <= naive.bound_ns + slack);
            let want = match (p, q) {
                (0, 0) => Case::Reference,
                _ if p == q => Case::SameProcess,
                (0, _) | (_, 0) => Case::OneReference,
                _ => Case::TwoProcesses,
            };
            prop_assert_eq!(d.case, want);
            match d.case {
                Case::Reference => prop_assert_eq!(d.bound_ns, 0.0),
                // Scaling only: the bound is e1 + e2 times the duration's share of the time
                // between the two round trips the map was drawn through (far below e for
                // durations far shorter than the run). That time is the span less how far into
                // the before-run its fastest round trip came: at most the whole before-run, 40 ms
                // of a 100 ms span at worst, which a bound on `span` alone missed (a 1.44x larger
                // bound, correct, at rate 0.5 with the fastest round trip late in the run).
                Case::SameProcess => {
                    let e = a.max_bound_ns().unwrap();
                    let before_run: f64 = before.iter().map(|(o, b)| o + b + 1000.0).sum();
                    let between = span - before_run;
                    prop_assert!(d.bound_ns <= 2.0 * e * len / between * 1.01 + 1.0, "{d:?}");
                }
                // One map each, not two: never the naive sum of two.
                Case::TwoProcesses => prop_assert!(d.bound_ns < 1.01 * naive.bound_ns.max(1.0)),
                Case::OneReference => {}
            }
        }
    }
}

/// Symmetric, quiet round trips of 10 us: the bound is half of that, and the estimate exact.
#[test]
fn quiet_symmetric_round_trips_give_half_the_rtt() {
    let cs = [
        SimClock {
            offset: 5e12,
            rate: 2.4,
        },
        SimClock {
            offset: 7e11,
            rate: 2.4 * (1.0 + 30e-6),
        },
    ];
    let d = vec![(5000.0, 5000.0); 100];
    let mut samples = Vec::new();
    for (i, j) in [(0, 1), (1, 0)] {
        samples.push(PairSamples {
            initiator: i,
            responder: j,
            before: ping_pong(&cs[i], &cs[j], 0.0, &d),
            after: ping_pong(&cs[i], &cs[j], 1e10, &d),
        });
    }
    let clocks = (0..2)
        .map(|p| ProcessClock {
            process: p,
            kind: ClockKind::Tsc,
            ticks_per_ns: cs[p].rate,
            skew: None,
            monotonic: None,
        })
        .collect();
    let a = Alignment::new(0, 100, clocks, samples).unwrap();
    let p = &a.pairs[0];
    assert!((p.bound_ns.unwrap() - 5000.0).abs() < 1.0, "{p:?}");
    assert!((p.rate_ppm.unwrap() + 30.0).abs() < 0.01, "{p:?}");
    let t = 3e9;
    let got = a.to_reference(1, cs[1].read(t)).unwrap();
    assert!((got.ticks - cs[0].read(t) as f64).abs() < 3.0, "{got:?}");
    assert!(a.to_reference(2, 0).unwrap_err().contains("process 2"));
}

/// The worst case: the before round trip's answer left at once and came back slowly, the after
/// one the other way round, so the two points err by +e and -e. Between them the error stays
/// within e; outside it grows as the bound says, and the bound is tight at both ends.
#[test]
fn opposite_asymmetries_reach_the_bound_and_never_pass_it() {
    let cs = [
        SimClock {
            offset: 1e12,
            rate: 3.0,
        },
        SimClock {
            offset: 4e12,
            rate: 3.0 * (1.0 - 20e-6),
        },
    ];
    let before = ping_pong(&cs[0], &cs[1], 1e9, &[(1.0, 9999.0)]);
    let after = ping_pong(&cs[0], &cs[1], 11e9, &[(9999.0, 1.0)]);
    let samples = vec![PairSamples {
        initiator: 0,
        responder: 1,
        before,
        after,
    }];
    let clocks = (0..2)
        .map(|p| ProcessClock {
            process: p,
            kind: ClockKind::Tsc,
            ticks_per_ns: cs[p].rate,
            skew: None,
            monotonic: None,
        })
        .collect();
    let a = Alignment::new(0, 1, clocks, samples).unwrap();
    let mut worst: f64 = 0.0;
    for k in 0..=40 {
        let t = 1e9 + (k as f64 / 20.0 - 0.5) * 10e9;
        let got = a.to_reference(1, cs[1].read(t)).unwrap();
        let err = (got.ticks - (cs[0].offset + cs[0].rate * t)).abs() / cs[0].rate;
        assert!(
            err <= got.bound_ns + 1.0,
            "t={t}: {err} ns > {} ns",
            got.bound_ns
        );
        worst = worst.max(err / got.bound_ns);
    }
    assert!(worst > 0.99, "the bound is tight at the extremes: {worst}");
}
