//! The credit window over a real delayed link (`credit.rs`): two transports in this process on
//! loopback with a 40 ms round trip between them, one remote channel of capacity 4 from process 0
//! to process 1, and a sender with more batches than 4 per round trip. With a fixed window the
//! channel moves 4 batches per round trip; with a growing one the window reaches the round trip's
//! worth and the same batches arrive in far fewer round trips, in order, none lost.

use super::cluster::ClusterConfig;
use super::delay::{DelayConfig, DelaySpec};
use super::frame::ChannelId;
use super::link::{self, RemoteTx, Wiring};
use super::outbox::flush_queued;
use crate::batch::{Batch, Msg};
use std::time::{Duration, Instant};
use xorflow_core::Element;

/// Batches the sender sends.
const BATCHES: u64 = 200;
const CH: ChannelId = ChannelId {
    edge: 0,
    from: 0,
    to: 1,
};

fn batch(k: u64) -> Msg<u64> {
    Msg::Data(Batch::untracked(vec![Element::new(k, k)]))
}

/// Process `me` of two; returns (batches received in order, elapsed, final window) at process 1.
fn process(
    me: usize,
    listener: std::net::TcpListener,
    addrs: Vec<std::net::SocketAddr>,
    max_window: usize,
) -> Option<(Vec<u64>, Duration, u32)> {
    let cfg = ClusterConfig {
        delay: DelayConfig {
            spec: DelaySpec::Mesh(Duration::from_millis(40)),
            jitter: Duration::ZERO,
        },
        clock_rounds: 0,
        ..ClusterConfig::default()
    };
    let outboxes = super::test_transport::outboxes(me, 2);
    let remotes = outboxes
        .iter()
        .enumerate()
        .map(|(p, o)| o.clone().map(|o| RemoteTx::new(p, o)))
        .collect();
    let wiring = Wiring::new(me, 2, 1, remotes, 4, max_window);
    let (tx, mut rx) = match me {
        0 => (Some(wiring.remote_out(CH)), None),
        _ => (None, Some(wiring.remote_in(CH))),
    };
    let inbox = std::sync::Arc::new(crate::progress::frontier_inbox::FrontierInbox::new());
    let t = super::test_transport::start_with(
        me,
        listener,
        addrs,
        &cfg,
        vec![inbox],
        &outboxes,
        wiring.take_routes(),
    );
    let t0 = Instant::now();
    let mut got = Vec::new();
    if let Some(tx) = tx {
        let mut k = 0;
        while k < BATCHES {
            match tx.try_send(batch(k)) {
                Ok(_) => k += 1,
                Err(_) => std::thread::sleep(Duration::from_micros(200)),
            }
            flush_queued();
        }
    } else {
        let rx = rx.as_mut().unwrap();
        while got.len() < BATCHES as usize {
            assert!(
                t0.elapsed() < Duration::from_secs(30),
                "stalled at {}",
                got.len()
            );
            match rx.pop() {
                Some((f, _)) => match link::decode::<u64>(&f).unwrap() {
                    Msg::Data(b) => got.push(b.data[0].data),
                    Msg::End => panic!("end of stream"),
                },
                None => std::thread::sleep(Duration::from_micros(200)),
            }
            flush_queued();
        }
    }
    let elapsed = t0.elapsed();
    t.finish(Vec::new()).unwrap();
    rx.map(|rx| (got, elapsed, rx.window()))
}

/// Runs both processes; process 1's (batches, elapsed, window).
fn run(max_window: usize) -> (Vec<u64>, Duration, u32) {
    let mut out = super::test_transport::run_processes(2, move |me, l, addrs| {
        process(me, l, addrs, max_window)
    });
    out.pop().flatten().expect("process 1 reports")
}

#[test]
fn the_window_grows_to_the_round_trip_and_keeps_batches_in_order() {
    let (fixed, t_fixed, w_fixed) = run(4);
    let (grown, t_grown, w_grown) = run(1024);
    let want: Vec<u64> = (0..BATCHES).collect();
    assert_eq!(fixed, want);
    assert_eq!(grown, want);
    assert_eq!(w_fixed, 4);
    // With --nocapture: the figures docs/wan.md quotes.
    eprintln!(
        "200 batches over 40 ms RTT: window 4: {t_fixed:?}; growing: {t_grown:?}, window {w_grown}"
    );
    // 200 batches at 4 per round trip take 50 round trips (2 s); doubling from 4 takes about 6.
    assert!(w_grown >= 64, "window {w_grown}");
    assert!(t_fixed >= Duration::from_millis(1900), "{t_fixed:?}");
    assert!(t_grown * 3 < t_fixed, "{t_grown:?} against {t_fixed:?}");
}
