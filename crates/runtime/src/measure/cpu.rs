//! Where a worker thread's CPU goes (issue 17, in-engine accounting; seed 003 measures the same
//! per task with a profiler).
//!
//! Reading the thread's CPU clock around every step would cost a system call each (a few hundred
//! ns here; steps run hundreds of thousands of times a second), so the worker laps a cheap
//! clock instead ([`xorflow_measure::clock::now`], the TSC: about 11 ns): every stretch of the
//! loop is charged, in wall time, to the vertex it stepped or to the runtime task it ran. The
//! thread's CPU clock is read only around parks (rare when busy) and at the ends of the run; the
//! busy wall time is then scaled to the thread's busy CPU time, so time the thread spent
//! descheduled on a shared core is spread over its tasks in proportion instead of being counted
//! as CPU.

use serde::{Deserialize, Serialize};

/// A runtime task of a worker thread (besides stepping vertices).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Task {
    /// The loop itself and reading frontier notifications from the tracker.
    Frontiers,
    /// Sending partial batches whose flush timeout expired (or all of them when idle).
    Flush,
    /// Handing acks to the process acker and flushing it to the tracker shards, which includes
    /// applying them when the shards are in this process.
    Acks,
    /// Writing queued frames to other processes (`net/outbox.rs`).
    Network,
    /// Looking for work without finding any, and spinning before a due time.
    Idle,
}

const TASKS: usize = 5;

/// Per-worker accounting: the lap clock and what it charged so far (ticks of
/// [`xorflow_measure::clock::now`]).
#[derive(Debug)]
pub struct WorkerClock {
    last: u64,
    vertex_ticks: Vec<u64>,
    task_ticks: [u64; TASKS],
    parked_ticks: u64,
    parked_cpu_ns: u64,
    thread_cpu_start_ns: u64,
}

/// What one worker thread's CPU went to, ns (summed over workers and processes by
/// [`WorkerCpu::add`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct WorkerCpu {
    /// The threads' CPU time over their run, ns (`CLOCK_THREAD_CPUTIME_ID`).
    pub thread_ns: u64,
    /// Stepping vertices (operators, sources, sinks), ns; per vertex in the run report's vertex
    /// counters ([`CPU_NS`]).
    pub operators_ns: u64,
    /// [`Task::Frontiers`], ns.
    pub frontiers_ns: u64,
    /// [`Task::Flush`], ns.
    pub flush_ns: u64,
    /// [`Task::Acks`], ns.
    pub acks_ns: u64,
    /// [`Task::Network`], ns.
    pub network_ns: u64,
    /// [`Task::Idle`] plus the CPU of parking and waking, ns.
    pub idle_ns: u64,
    /// Wall time parked (no CPU), ns.
    pub parked_wall_ns: u64,
}

/// Vertex counter: CPU time of the vertex's instances, ns ([`WorkerClock`]).
pub const CPU_NS: &str = "cpu_ns";

impl WorkerClock {
    /// A clock for a worker stepping `vertices` vertices; starts now, on the calling thread
    /// (see [`WorkerClock::start`]).
    pub fn new(vertices: usize) -> Self {
        WorkerClock {
            last: xorflow_measure::clock::now(),
            vertex_ticks: vec![0; vertices],
            task_ticks: [0; TASKS],
            parked_ticks: 0,
            parked_cpu_ns: 0,
            thread_cpu_start_ns: super::clock::thread_cpu_ns(),
        }
    }

    /// Starts (again) now, on the calling thread: the thread's CPU clock is per thread, so a
    /// clock made on another thread starts here, on the worker's, when its loop begins.
    pub fn start(&mut self) {
        self.last = xorflow_measure::clock::now();
        self.thread_cpu_start_ns = super::clock::thread_cpu_ns();
    }

    #[inline(always)]
    fn lap(&mut self) -> u64 {
        let now = xorflow_measure::clock::now();
        let d = now.saturating_sub(self.last);
        self.last = now;
        d
    }

    /// Charges the time since the last lap to vertex `i` (it was just stepped).
    #[inline(always)]
    pub fn vertex(&mut self, i: usize) {
        let d = self.lap();
        self.vertex_ticks[i] += d;
    }

    /// Charges the time since the last lap to `task`.
    #[inline(always)]
    pub fn task(&mut self, task: Task) {
        let d = self.lap();
        self.task_ticks[task as usize] += d;
    }

    /// Runs `park` (the thread sleeps) and charges it as parked: its wall time apart, its CPU
    /// (entering and leaving the park) to idle.
    pub fn park(&mut self, park: impl FnOnce()) {
        self.task(Task::Idle);
        let cpu = super::clock::thread_cpu_ns();
        park();
        self.parked_cpu_ns += super::clock::thread_cpu_ns().saturating_sub(cpu);
        let d = self.lap();
        self.parked_ticks += d;
    }

    /// The accounting of the run so far: per vertex CPU ns, and the thread's totals.
    pub fn finish(&mut self) -> (Vec<u64>, WorkerCpu) {
        self.task(Task::Frontiers);
        let thread_ns = super::clock::thread_cpu_ns().saturating_sub(self.thread_cpu_start_ns);
        let tpn = xorflow_measure::clock::ticks_per_ns();
        let busy_ticks: u64 =
            self.vertex_ticks.iter().sum::<u64>() + self.task_ticks.iter().sum::<u64>();
        let busy_cpu = thread_ns.saturating_sub(self.parked_cpu_ns) as f64;
        // ns of CPU per tick of busy wall time: below 1 / tpn when the thread was descheduled.
        let scale = if busy_ticks == 0 {
            0.0
        } else {
            busy_cpu / busy_ticks as f64
        };
        let cpu = |ticks: u64| (ticks as f64 * scale).round() as u64;
        let vertices: Vec<u64> = self.vertex_ticks.iter().map(|&t| cpu(t)).collect();
        let t = |k: Task| cpu(self.task_ticks[k as usize]);
        let w = WorkerCpu {
            thread_ns,
            operators_ns: vertices.iter().sum(),
            frontiers_ns: t(Task::Frontiers),
            flush_ns: t(Task::Flush),
            acks_ns: t(Task::Acks),
            network_ns: t(Task::Network),
            idle_ns: t(Task::Idle) + self.parked_cpu_ns,
            parked_wall_ns: (self.parked_ticks as f64 / tpn).round() as u64,
        };
        (vertices, w)
    }
}

impl WorkerCpu {
    /// Adds another worker's (or process's) accounting.
    pub fn add(&mut self, o: &WorkerCpu) {
        self.thread_ns += o.thread_ns;
        self.operators_ns += o.operators_ns;
        self.frontiers_ns += o.frontiers_ns;
        self.flush_ns += o.flush_ns;
        self.acks_ns += o.acks_ns;
        self.network_ns += o.network_ns;
        self.idle_ns += o.idle_ns;
        self.parked_wall_ns += o.parked_wall_ns;
    }

    /// The tasks and their CPU, ns, in a fixed order: `operators`, `frontiers`, `flush`,
    /// `acks`, `network`, `idle`.
    pub fn tasks(&self) -> [(&'static str, u64); 6] {
        [
            ("operators", self.operators_ns),
            ("frontiers", self.frontiers_ns),
            ("flush", self.flush_ns),
            ("acks", self.acks_ns),
            ("network", self.network_ns),
            ("idle", self.idle_ns),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Burns CPU for about `ns`.
    fn burn(ns: u64) {
        let until = std::time::Instant::now() + std::time::Duration::from_nanos(ns);
        let mut x = 0u64;
        while std::time::Instant::now() < until {
            x = std::hint::black_box(x.wrapping_add(1));
        }
    }

    #[test]
    fn busy_time_goes_to_what_ran_and_a_park_costs_no_cpu() {
        let mut c = WorkerClock::new(2);
        burn(30_000_000);
        c.vertex(0);
        burn(10_000_000);
        c.vertex(1);
        burn(10_000_000);
        c.task(Task::Acks);
        c.park(|| std::thread::sleep(std::time::Duration::from_millis(40)));
        let (v, w) = c.finish();
        // Everything attributed adds up to the thread's CPU.
        let attributed: u64 = w.tasks().iter().map(|t| t.1).sum();
        let diff = attributed.abs_diff(w.thread_ns);
        assert!(
            diff < 2_000_000,
            "attributed {attributed} of {} ns",
            w.thread_ns
        );
        // Vertex 0 burnt three times vertex 1's (loosely: the machine is shared).
        let ratio = v[0] as f64 / v[1].max(1) as f64;
        assert!((2.0..4.5).contains(&ratio), "{v:?}");
        assert!(w.acks_ns > 5_000_000, "{w:?}");
        // The 40 ms sleep is parked wall time, not CPU.
        assert!(w.parked_wall_ns >= 40_000_000, "{w:?}");
        assert!(w.idle_ns < 5_000_000, "{w:?}");
        assert!(w.thread_ns < 60_000_000, "{w:?}");
    }
}
