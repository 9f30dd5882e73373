//! The transport's clock alignment end to end: three transports in this process on loopback,
//! each stamping with its own simulated clock (the machine's counter plus a known offset and
//! rate error), must give process 0 maps that convert every process's readings to process 0's
//! within their bounds.

use super::clock_phase::ClockSource;
use super::cluster::ClusterConfig;
use super::transport::Outcome;
use std::sync::Arc;
use std::time::Duration;
use xorflow_measure::clock::skew::Skew;
use xorflow_measure::clock::{self as mclock, Case};

/// Offsets (ns) and rate errors (ppm) of the three simulated clocks.
const SKEWS: [(&str, f64); 3] = [("0:0", 0.0), ("-3000000:17", 17.0), ("25000000:-28", -28.0)];

fn source(skew: Skew, raw_tpn: f64) -> ClockSource {
    ClockSource {
        ticks: Arc::new(move || skew.apply(mclock::now_raw())),
        ticks_per_ns: Some(raw_tpn * (1.0 + skew.ppm() * 1e-6)),
        skew: Some(skew),
    }
}

/// Runs process `me` of three: start (with the before-run alignment), a short "run" in which
/// it records raw counter readings, then the end protocol (with the after-run alignment).
fn process(
    me: usize,
    listener: std::net::TcpListener,
    addrs: Vec<std::net::SocketAddr>,
    clock: ClockSource,
) -> (Outcome, Vec<u64>, Vec<u64>) {
    let cfg = ClusterConfig {
        clock: Some(clock),
        ..ClusterConfig::default()
    };
    let t0 = std::time::Instant::now();
    let (t, _) = super::test_transport::start(me, listener, addrs, &cfg, Vec::new());
    let started = t0.elapsed();
    let (mut raw, mut mono) = (Vec::new(), Vec::new());
    for _ in 0..20 {
        raw.push(mclock::now_raw());
        mono.push(crate::measure::clock::now_ns());
        std::thread::sleep(Duration::from_millis(5));
    }
    let t1 = std::time::Instant::now();
    let outcome = t.finish(Vec::new()).unwrap();
    // With --nocapture: what the two phases cost (start = connecting + the first phase).
    eprintln!(
        "process {me}: start {started:?}, finish (Done + second phase) {:?}",
        t1.elapsed()
    );
    (outcome, raw, mono)
}

#[test]
fn three_transports_align_within_their_bounds() {
    let raw_tpn = {
        // The raw counter's rate: the process clock has no skew in this test binary.
        assert!(mclock::skew().is_none(), "run without XORFLOW_CLOCK_SKEW");
        mclock::ticks_per_ns()
    };
    let skews: Vec<Skew> = SKEWS
        .iter()
        .map(|(s, _)| Skew::parse(s, raw_tpn).unwrap())
        .collect();
    let listeners: Vec<_> = (0..3)
        .map(|_| std::net::TcpListener::bind("127.0.0.1:0").unwrap())
        .collect();
    let addrs: Vec<_> = listeners.iter().map(|l| l.local_addr().unwrap()).collect();
    let started = std::time::Instant::now();
    let threads: Vec<_> = listeners
        .into_iter()
        .enumerate()
        .map(|(p, l)| {
            let (addrs, clock) = (addrs.clone(), source(skews[p], raw_tpn));
            std::thread::spawn(move || process(p, l, addrs, clock))
        })
        .collect();
    let results: Vec<_> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    // 20 x 5 ms of "run": the two alignments cost milliseconds, not more.
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    assert!(results[1].0.clock.is_none(), "only process 0 aligns");
    let a = results[0]
        .0
        .clock
        .clone()
        .expect("process 0 aligned the clocks");
    assert_eq!(a.pairs.len(), 6);
    for p in &a.pairs {
        assert!(p.error.is_none(), "{p:?}");
        assert_eq!(p.samples.before.rounds, 100);
        let want_ppm = SKEWS[p.samples.initiator].1 - SKEWS[p.samples.responder].1;
        // A synthetic rate difference of 17-45 ppm is found within the rate bound.
        let got = p.rate_ppm.unwrap();
        let bound_ppm = p.map.unwrap().rate_bound() * 1e6;
        assert!((got - want_ppm).abs() <= bound_ppm + 0.5, "{p:?}");
        assert!(p.bound_ns.unwrap() < 1e6, "loopback round trips: {p:?}");
    }
    let truth = |t: u64| skews[0].apply(t) as f64;
    let tpn0 = a.clocks[0].ticks_per_ns;
    for (q, (_, raw, _)) in results.iter().enumerate() {
        for &t in raw {
            let got = a.to_reference(q, skews[q].apply(t)).unwrap();
            let err = (got.ticks - truth(t)).abs() / tpn0;
            assert!(
                err <= got.bound_ns + 2.0,
                "process {q}: error {err} ns > {got:?}"
            );
        }
    }
    // Durations between two processes' readings, all four cases.
    let (r1, r2) = (&results[1].1, &results[2].1);
    for (s, e) in [(0, 0), (1, 1), (0, 2), (1, 2), (2, 1)] {
        let (ts, te) = (results[s].1[3], results[e].1[15]);
        let d = a
            .duration((s, skews[s].apply(ts)), (e, skews[e].apply(te)))
            .unwrap();
        let want = (truth(te) - truth(ts)) / tpn0;
        assert!(
            (d.ns - want).abs() <= d.bound_ns + 2.0,
            "{s}->{e}: {d:?} vs {want}"
        );
        if (s, e) == (1, 2) {
            assert_eq!(d.case, Case::TwoProcesses);
        }
    }
    assert!(r1.len() == 20 && r2.len() == 20);
    // The runtime's stamps (CLOCK_MONOTONIC_RAW ns, shared by the three "processes" here, so
    // their plain difference is the truth) convert through each process's anchors.
    for (s, e) in [(0, 0), (1, 1), (0, 2), (1, 2), (2, 1), (2, 0)] {
        let (ns_s, ns_e) = (results[s].2[2], results[e].2[17]);
        let d = a.monotonic_duration((s, ns_s), (e, ns_e)).unwrap();
        let want = ns_e as f64 - ns_s as f64;
        // Slack: the calibration of process 0's ticks per ns, a few ppm of the duration.
        assert!(
            (d.ns - want).abs() <= d.bound_ns + 2.0 + want.abs() * 1e-5,
            "monotonic {s}->{e}: {d:?} vs {want}"
        );
        assert!(d.bound_ns < 1e6, "{d:?}");
        let st = a.monotonic_stamp(s, ns_s).unwrap();
        assert!(st.bound_ns >= 0.0 && st.bound_ns < 1e6, "{st:?}");
    }
    assert!(a.clocks.iter().all(|c| c.monotonic.is_some()));
}
