//! A cyclic dataflow (iterate to a fixpoint) completes with trAcker notifications, matches a batch
//! oracle, and is rejected with markers and without tracking.

use xorflow_runtime::{
    Aggregate, Dataflow, Iteration, RunError, RuntimeConfig, Source, SourceOutput, SourcePoll,
    TrackingMode, VecSink,
};

/// Emits 1..=n at time = value, heartbeating as it goes.
struct Numbers {
    next: u64,
    end: u64,
}

impl Source<(u64, u64)> for Numbers {
    fn poll(&mut self, out: &mut SourceOutput<'_, (u64, u64)>) -> SourcePoll {
        for _ in 0..out.budget() {
            if self.next > self.end {
                return SourcePoll::Done;
            }
            out.emit(self.next, (self.next, 0));
            self.next += 1;
            out.heartbeat(self.next);
        }
        SourcePoll::Ready
    }
}

/// One Collatz step per trip around the loop: (value, steps so far).
fn collatz(x: (u64, u64)) -> Iteration<(u64, u64), u64> {
    match x.0 {
        1 => Iteration::Done(x.1),
        v if v % 2 == 0 => Iteration::Again((v / 2, x.1 + 1)),
        v => Iteration::Again((3 * v + 1, x.1 + 1)),
    }
}

fn steps(mut v: u64) -> u64 {
    let mut n = 0;
    while v != 1 {
        v = if v.is_multiple_of(2) {
            v / 2
        } else {
            3 * v + 1
        };
        n += 1;
    }
    n
}

struct Sum;
impl Aggregate<u64> for Sum {
    type Acc = u64;
    type Out = u64;
    fn init(&self) -> u64 {
        0
    }
    fn add(&self, a: &mut u64, v: &u64) {
        *a += v;
    }
    fn finish(&self, a: u64) -> u64 {
        a
    }
}

fn build(
    tracking: TrackingMode,
    n: u64,
) -> (
    Dataflow,
    xorflow_runtime::SharedVec<xorflow_runtime::WindowResult<u8, u64>>,
) {
    let df = Dataflow::new(RuntimeConfig {
        workers: 2,
        tracking,
        granularity: 10,
        batch_size: 64,
        ..RuntimeConfig::default()
    })
    .unwrap();
    let out = VecSink::shared();
    df.source("numbers", 2, move |k| Numbers {
        next: 1 + k as u64 * (n / 2),
        end: if k == 0 { n / 2 } else { n },
    })
    .rebalance()
    .iterate("collatz", collatz)
    .tumbling_window("sum", 100, |_| 0u8, Sum)
    .sink("out", out.factory());
    (df, out)
}

#[test]
fn iterate_to_fixpoint_completes_with_notifications_and_matches_oracle() {
    let n = 2000;
    let (df, out) = build(TrackingMode::Tracker, n);
    let report = df.run().unwrap();
    let mut got: Vec<(u64, u64)> = out
        .take()
        .iter()
        .map(|e| (e.data.start, e.data.value))
        .collect();
    got.sort();
    let mut want = std::collections::BTreeMap::new();
    for v in 1..=n {
        *want.entry(v / 100 * 100).or_insert(0) += steps(v);
    }
    assert_eq!(got, want.into_iter().collect::<Vec<_>>());
    // Windows were closed by notifications while the loop ran, not all at the end: every window
    // has a latency sample, and nothing arrived after its window closed.
    assert!(report.vertex("sum").unwrap().notification_latency_ns.len() >= n / 100);
    assert_eq!(report.below_frontier(), 0);
    // Elements really went around the loop (many more inputs than sources emitted).
    assert!(report.vertex("collatz").unwrap().elements_in > 10 * n);
    assert_eq!(report.tracker.unwrap().regressions, 0);
}

#[test]
fn cycles_are_rejected_with_markers_and_without_tracking() {
    for mode in [TrackingMode::Markers, TrackingMode::None] {
        let (df, _) = build(mode, 10);
        match df.run() {
            Err(RunError::Config(m)) => {
                assert!(
                    m.contains("cyclic graph") && m.contains("collatz -> collatz"),
                    "{m}"
                )
            }
            other => panic!("{mode:?}: expected a config error, got {other:?}"),
        }
    }
}
