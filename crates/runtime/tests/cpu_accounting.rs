//! The in-engine CPU accounting (`crates/runtime/src/measure/cpu.rs`) charges CPU to the
//! operator that spent it: a pipeline whose middle operator burns a known amount of CPU per
//! element, against its neighbours that do next to nothing.

use std::time::{Duration, Instant};
use xorflow_runtime::measure::cpu_report::CpuReport;
use xorflow_runtime::{
    Dataflow, RuntimeConfig, Source, SourceOutput, SourcePoll, TrackingMode, VecSink,
};

/// Elements 0..n, each its own time.
struct Count {
    next: u64,
    n: u64,
}

impl Source<u64> for Count {
    fn poll(&mut self, out: &mut SourceOutput<'_, u64>) -> SourcePoll {
        for _ in 0..out.budget() {
            if self.next == self.n {
                return SourcePoll::Done;
            }
            out.emit(self.next, self.next);
            out.heartbeat(self.next);
            self.next += 1;
        }
        SourcePoll::Ready
    }
}

/// Spins on the thread's CPU clock until it advanced `ns`: CPU spent, not wall time waited.
fn burn_cpu(ns: u64) {
    let cpu = || {
        let mut ts = libc_timespec();
        // SAFETY: clock_gettime writes one timespec into the valid, exclusively borrowed `ts`.
        unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
        ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
    };
    let start = cpu();
    while cpu() - start < ns {
        std::hint::spin_loop();
    }
}

fn libc_timespec() -> libc::timespec {
    libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    }
}

#[test]
fn cpu_goes_to_the_operator_that_spends_it() {
    const N: u64 = 4_000;
    const BURN_NS: u64 = 50_000;
    let start = Instant::now();
    let df = Dataflow::new(RuntimeConfig {
        workers: 1,
        tracking: TrackingMode::Tracker,
        ..RuntimeConfig::default()
    })
    .unwrap();
    df.source("count", 1, |_| Count { next: 0, n: N })
        .map("light", |x| x + 1)
        .map("heavy", |x| {
            burn_cpu(BURN_NS);
            x
        })
        .map("after", |x| x)
        .sink("sink", VecSink::<u64>::shared().factory());
    let report = df.run().unwrap();
    assert!(start.elapsed() < Duration::from_secs(60));
    let cpu = CpuReport::of(&report);
    let op = |name: &str| cpu.operators.iter().find(|o| o.vertex == name).unwrap();
    let heavy = op("heavy");
    // 4,000 x 50 us = 0.2 s burnt in `heavy`; the accounting gives it within 25 %.
    let per = heavy.ns_per_element.unwrap();
    assert!(
        (BURN_NS as f64 * 0.75..BURN_NS as f64 * 1.25).contains(&per),
        "heavy: {per:.0} ns per element: {cpu:?}"
    );
    for light in ["count", "light", "after", "sink"] {
        assert!(
            op(light).cpu_s * 20.0 < heavy.cpu_s,
            "{light} is charged {} s against heavy's {} s",
            op(light).cpu_s,
            heavy.cpu_s
        );
    }
    // The tasks of the process add up to its CPU.
    let p = &cpu.processes[0];
    let tasks: f64 = p.tasks.iter().map(|t| t.cpu_s).sum();
    assert!((tasks - p.cpu_s).abs() < 0.01 + 0.01 * p.cpu_s, "{p:?}");
    assert!(cpu.describe().contains("heavy"));
}
