//! The injected delay end to end (`delay/mod.rs`): three transports in this process on loopback,
//! process 0 sending stamped frontier frames to processes 1 (delayed) and 2 (not), and each
//! receiver timing what it routes. The frames cross real TCP connections and the real reader
//! tasks, so this measures the delay the data path sees.

use super::cluster::ClusterConfig;
use super::delay::{DelayConfig, DelaySpec};
use crate::measure::clock::now_ns;
use std::time::Duration;
use xorflow_tracking::tracker::FrontierUpdate;

/// Frames process 0 sends to each of the others, 500 us apart.
const FRAMES: u64 = 200;

/// Process `me` of three with delays `delay`: process 0 sends [`FRAMES`] stamped frontier frames
/// to 1 and to 2 (alternating), the others return each frame's one-way time in ns, in the order
/// routed (the stamp is the sender's runtime clock, shared by the three "processes" here).
fn process(
    me: usize,
    listener: std::net::TcpListener,
    addrs: Vec<std::net::SocketAddr>,
    delay: DelayConfig,
) -> Vec<(u64, u64)> {
    let cfg = ClusterConfig {
        delay,
        clock_rounds: 0,
        ..ClusterConfig::default()
    };
    let received = std::sync::Arc::new(crate::progress::frontier_inbox::FrontierInbox::new());
    let (t, outboxes) =
        super::test_transport::start(me, listener, addrs, &cfg, vec![received.clone()]);
    let mut seen = Vec::new();
    if me == 0 {
        for k in 0..FRAMES {
            let stamp = [FrontierUpdate {
                component: k as u32,
                frontier: now_ns(),
            }];
            let to = if k % 2 == 0 { 1 } else { 2 };
            assert!(outboxes[to]
                .as_ref()
                .unwrap()
                .send(super::frame::frontier(0, &stamp)));
            std::thread::sleep(Duration::from_micros(500));
        }
    } else {
        // Polled every 20 us (the delays measured are milliseconds); each frame stamps its
        // own component, so none replaces another in the inbox.
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        let mut read = Vec::new();
        while seen.len() < FRAMES as usize / 2 {
            assert!(std::time::Instant::now() < deadline, "frames missing");
            read.clear();
            received.take(&mut read);
            let now = now_ns();
            for (_, u) in &read {
                seen.push((u.component as u64, now - u.frontier));
            }
            std::thread::sleep(Duration::from_micros(20));
        }
    }
    t.finish(Vec::new()).unwrap();
    seen
}

/// Runs the three processes; per receiver, (frame number, one-way ns) in routing order.
fn run(delay: DelayConfig) -> Vec<Vec<(u64, u64)>> {
    super::test_transport::run_processes(3, move |me, l, addrs| {
        process(me, l, addrs, delay.clone())
    })
}

fn matrix_file(text: &str) -> tempfile::NamedTempFile {
    let f = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(f.path(), text).unwrap();
    f
}

const MS: u64 = 1_000_000;

#[test]
fn the_data_path_sees_the_configured_delay_on_its_pair_only_in_order() {
    // 0-1: 40 ms RTT (20 ms one way), 0-2 and 1-2: none.
    let m = matrix_file("0 40 0\n40 0 0\n0 0 0\n");
    let seen = run(DelayConfig {
        spec: DelaySpec::File(m.path().into()),
        jitter: Duration::ZERO,
    });
    let (delayed, direct) = (&seen[1], &seen[2]);
    // FIFO per connection: frames are routed in the order sent.
    assert!(delayed.windows(2).all(|w| w[0].0 < w[1].0), "{delayed:?}");
    for &(k, ns) in delayed {
        // At least the delay; at most a few ms more (tokio's timer has 1 ms granularity; the
        // rest is this shared machine's scheduling, measured 20.1-21.3 ms when quiet).
        assert!((20 * MS..30 * MS).contains(&ns), "frame {k}: {ns} ns");
    }
    // The undelayed connection from the same sender is not held up by the delayed one.
    let mut d: Vec<u64> = direct.iter().map(|x| x.1).collect();
    d.sort_unstable();
    let mut l: Vec<u64> = delayed.iter().map(|x| x.1).collect();
    l.sort_unstable();
    // With --nocapture: the figures docs/wan.md quotes.
    eprintln!(
        "one way, configured 20 ms: min {} p50 {} max {} ns; undelayed: min {} p50 {} max {} ns",
        l[0],
        l[l.len() / 2],
        l[l.len() - 1],
        d[0],
        d[d.len() / 2],
        d[d.len() - 1]
    );
    assert!(
        d[d.len() / 2] < 2 * MS,
        "undelayed median {} ns",
        d[d.len() / 2]
    );
}

#[test]
fn jitter_spreads_the_delay_in_its_range_without_reordering() {
    // 75 +- 3 ms RTT on every pair: one way 36-39 ms.
    let seen = run(DelayConfig {
        spec: DelaySpec::Mesh(Duration::from_millis(75)),
        jitter: Duration::from_millis(3),
    });
    for rx in &seen[1..] {
        assert!(rx.windows(2).all(|w| w[0].0 < w[1].0), "{rx:?}");
        let ns: Vec<u64> = rx.iter().map(|x| x.1).collect();
        let (lo, hi) = (*ns.iter().min().unwrap(), *ns.iter().max().unwrap());
        assert!(lo >= 36 * MS && hi < 48 * MS, "{lo} - {hi} ns");
        // Spread: +-1.5 ms one way over 100 frames 1 ms apart.
        assert!(hi - lo > MS, "{lo} - {hi} ns: no jitter seen");
    }
}
