//! Where a worker thread's CPU goes (in-engine accounting, docs/measurement.md; the CPU-efficiency
//! paper, docs/papers.md, measures the same per task with a profiler).
//!
//! Reading the thread's CPU clock around every step would cost a system call each (a few hundred
//! ns here; steps run hundreds of thousands of times a second), so the worker laps a cheap
//! clock instead ([`xorflow_measure::clock::now`], the TSC: about 11 ns): every stretch of the
//! loop is charged, in wall time, to the vertex it stepped or to the runtime task it ran. The
//! thread's CPU clock is read only around parks (rare when busy) and at the ends of the run; the
//! busy wall time is then scaled to the thread's busy CPU time, so time the thread spent
//! descheduled on a shared core is spread over its tasks in proportion instead of being counted
//! as CPU.
//!
//! Even the TSC laps add up: amid work a lap costs 4-8 ns, so the 16 laps of an iteration of a
//! 10-stage chain cost about 100 ns, 2.7 % of a 3.7 us iteration (`benches/cpu_laps.rs`; docs/cpu.md,
//! "The accounting's own cost"). So iterations are sampled ([`Sampling`]):
//! - one in [`SAMPLE_EVERY`], drawn at random, is lapped step by step; the others take a single
//!   lap each, and their time is shared out at the end in the proportions of the drawn ones of
//!   the same length class, short or long ([`LONG_NS`]): a stratified estimate, so the totals
//!   stay exact and only the split of the skipped time is estimated, from a random sample of
//!   the same iterations. A rare heavy step (a window firing) is a long iteration, shared out in
//!   the proportions of the long iterations drawn, not of the many short ones;
//! - the [`SAMPLE_EVERY`] iterations after a long one are lapped exactly (a heavy operator's
//!   steps come in runs, and they are what a user asks about), and so is everything outside
//!   iterations (idle, parks).

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

/// One iteration in this many is lapped step by step at random; a power of two. Also the
/// number of iterations lapped after a long one.
pub const SAMPLE_EVERY: u64 = 16;

/// An iteration at least this long, ns, is long: its single lap is shared out in the proportions
/// of the lapped long iterations, and the next [`SAMPLE_EVERY`] iterations are lapped.
pub const LONG_NS: u64 = 20_000;

/// How the current stretch of the loop is lapped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Sampling {
    /// Every step, into the exact ticks: outside iterations, and after a long iteration.
    Exact,
    /// Every step, into the current iteration's ticks, which then stand for the skipped
    /// iterations of its length class.
    Drawn,
    /// One lap for the whole iteration, shared out at the end.
    Skipped,
}

/// Ticks charged to each vertex and task.
#[derive(Debug)]
struct Ticks {
    vertex: Vec<u64>,
    task: [u64; TASKS],
}

impl Ticks {
    fn new(vertices: usize) -> Self {
        Ticks {
            vertex: vec![0; vertices],
            task: [0; TASKS],
        }
    }

    fn total(&self) -> u64 {
        self.vertex.iter().sum::<u64>() + self.task.iter().sum::<u64>()
    }

    /// Moves `from`'s ticks into `self`, leaving `from` at zero.
    fn take(&mut self, from: &mut Ticks) {
        for (a, b) in self.vertex.iter_mut().zip(&mut from.vertex) {
            *a += std::mem::take(b);
        }
        for (a, b) in self.task.iter_mut().zip(&mut from.task) {
            *a += std::mem::take(b);
        }
    }

    /// Adds `ticks` in `by`'s proportions to `vertex` and `task`.
    fn share(ticks: u64, by: &Ticks, vertex: &mut [f64], task: &mut [f64; TASKS]) {
        let total = by.total() as f64;
        for (v, &t) in vertex.iter_mut().zip(&by.vertex) {
            *v += ticks as f64 * t as f64 / total;
        }
        for (k, &t) in task.iter_mut().zip(&by.task) {
            *k += ticks as f64 * t as f64 / total;
        }
    }
}

/// The iterations of one length class outside the windows after a long one: the drawn ones'
/// ticks per vertex and task, the skipped ones' as a sum.
#[derive(Debug)]
struct Stratum {
    drawn: Ticks,
    skipped: u64,
}

impl Stratum {
    /// The drawn ticks, if any iteration was drawn.
    fn drawn_ticks(&self) -> Option<&Ticks> {
        (self.drawn.total() > 0).then_some(&self.drawn)
    }
}

/// Per-worker accounting: the lap clock and what it charged so far (ticks of
/// [`xorflow_measure::clock::now`]).
#[derive(Debug)]
pub struct WorkerClock {
    last: u64,
    sampling: Sampling,
    /// `last` when the current iteration began.
    iteration_start: u64,
    /// Iterations still to lap exactly after a long one.
    after_long: u64,
    long_ticks: u64,
    /// xorshift64 state for the draw.
    rng: u64,
    exact: Ticks,
    /// The current iteration's laps, when it was drawn.
    current: Ticks,
    short: Stratum,
    long: Stratum,
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
        // Before the first lap: the first call may wait for the clock's calibration.
        let long_ticks = (LONG_NS as f64 * xorflow_measure::clock::ticks_per_ns()) as u64;
        let now = xorflow_measure::clock::now();
        let stratum = || Stratum {
            drawn: Ticks::new(vertices),
            skipped: 0,
        };
        WorkerClock {
            last: now,
            sampling: Sampling::Exact,
            iteration_start: now,
            after_long: 0,
            long_ticks,
            // Any odd seed: the draw only has to be independent of what the loop does.
            rng: now | 1,
            exact: Ticks::new(vertices),
            current: Ticks::new(vertices),
            short: stratum(),
            long: stratum(),
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

    /// The ticks the current stretch is lapped into, if it is lapped step by step.
    #[inline(always)]
    fn lapped(&mut self) -> Option<&mut Ticks> {
        match self.sampling {
            Sampling::Exact => Some(&mut self.exact),
            Sampling::Drawn => Some(&mut self.current),
            Sampling::Skipped => None,
        }
    }

    /// An iteration of the loop begins: decides how it is lapped.
    #[inline(always)]
    pub fn begin_iteration(&mut self) {
        self.iteration_start = self.last;
        self.sampling = if self.after_long > 0 {
            self.after_long -= 1;
            Sampling::Exact
        } else {
            let mut x = self.rng;
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            self.rng = x;
            if x & (SAMPLE_EVERY - 1) == 0 {
                Sampling::Drawn
            } else {
                Sampling::Skipped
            }
        };
    }

    /// The iteration ends: a skipped one takes its single lap, a drawn or skipped one goes to
    /// its length class, and a long one opens a window of exactly lapped iterations. What
    /// follows is lapped exactly until the next [`WorkerClock::begin_iteration`].
    #[inline(always)]
    pub fn end_iteration(&mut self) {
        if self.sampling == Sampling::Skipped {
            self.lap();
        }
        let ticks = self.last.saturating_sub(self.iteration_start);
        let long = ticks >= self.long_ticks;
        let stratum = if long {
            &mut self.long
        } else {
            &mut self.short
        };
        match self.sampling {
            Sampling::Exact => {}
            Sampling::Drawn => stratum.drawn.take(&mut self.current),
            Sampling::Skipped => stratum.skipped += ticks,
        }
        if long {
            self.after_long = SAMPLE_EVERY;
        }
        self.sampling = Sampling::Exact;
    }

    /// Charges the time since the last lap to vertex `i` (it was just stepped).
    #[inline(always)]
    pub fn vertex(&mut self, i: usize) {
        if self.sampling != Sampling::Skipped {
            let d = self.lap();
            if let Some(t) = self.lapped() {
                t.vertex[i] += d;
            }
        }
    }

    /// Charges the time since the last lap to `task`.
    #[inline(always)]
    pub fn task(&mut self, task: Task) {
        if self.sampling != Sampling::Skipped {
            let d = self.lap();
            if let Some(t) = self.lapped() {
                t.task[task as usize] += d;
            }
        }
    }

    /// Runs `park` (the thread sleeps) and charges it as parked: its wall time apart, its CPU
    /// (entering and leaving the park) to idle. Outside an iteration.
    pub fn park<R>(&mut self, park: impl FnOnce() -> R) -> R {
        self.task(Task::Idle);
        let cpu = super::clock::thread_cpu_ns();
        let r = park();
        self.parked_cpu_ns += super::clock::thread_cpu_ns().saturating_sub(cpu);
        let d = self.lap();
        self.parked_ticks += d;
        r
    }

    /// Busy ticks per vertex and per task: the exact and drawn ones, plus each length class's
    /// skipped ones shared out in its drawn proportions (in the other class's when none of its
    /// own was drawn; to the loop when none was drawn at all). Sums to every busy tick lapped.
    fn estimate(&self) -> (Vec<f64>, [f64; TASKS]) {
        let mut vertex: Vec<f64> = self.exact.vertex.iter().map(|&t| t as f64).collect();
        let mut task = self.exact.task.map(|t| t as f64);
        for s in [&self.short, &self.long] {
            for (v, &t) in vertex.iter_mut().zip(&s.drawn.vertex) {
                *v += t as f64;
            }
            for (k, &t) in task.iter_mut().zip(&s.drawn.task) {
                *k += t as f64;
            }
        }
        for (own, other) in [(&self.short, &self.long), (&self.long, &self.short)] {
            match own.drawn_ticks().or(other.drawn_ticks()) {
                Some(by) => Ticks::share(own.skipped, by, &mut vertex, &mut task),
                None => task[Task::Frontiers as usize] += own.skipped as f64,
            }
        }
        (vertex, task)
    }

    /// The accounting of the run so far: per vertex CPU ns, and the thread's totals.
    pub fn finish(&mut self) -> (Vec<u64>, WorkerCpu) {
        self.task(Task::Frontiers);
        let thread_ns = super::clock::thread_cpu_ns().saturating_sub(self.thread_cpu_start_ns);
        let tpn = xorflow_measure::clock::ticks_per_ns();
        let (vertex_ticks, task_ticks) = self.estimate();
        let busy_ticks: f64 = vertex_ticks.iter().sum::<f64>() + task_ticks.iter().sum::<f64>();
        let busy_cpu = thread_ns.saturating_sub(self.parked_cpu_ns) as f64;
        // ns of CPU per tick of busy wall time: below 1 / tpn when the thread was descheduled.
        let scale = if busy_ticks == 0.0 {
            0.0
        } else {
            busy_cpu / busy_ticks
        };
        let cpu = |ticks: f64| (ticks * scale).round() as u64;
        let vertices: Vec<u64> = vertex_ticks.iter().map(|&t| cpu(t)).collect();
        let t = |k: Task| cpu(task_ticks[k as usize]);
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

    /// `n` iterations whose steps burn `burns[i]` ns in vertex `i`.
    fn iterations(c: &mut WorkerClock, n: usize, burns: &[u64]) {
        for _ in 0..n {
            c.begin_iteration();
            c.task(Task::Frontiers);
            for (i, &ns) in burns.iter().enumerate() {
                burn(ns);
                c.vertex(i);
            }
            c.task(Task::Flush);
            c.end_iteration();
        }
    }

    #[test]
    fn sampled_iterations_share_the_time_as_lapping_all_would() {
        // A preempted iteration charges its lost time to whatever step it was in, so on a
        // loaded machine the empty step was once charged 10.3 % of vertex 1 (a CI run with the
        // other tests on both cores): up to 3 tries. Sharing by the wrong proportions (equal
        // shares, or the drawn ones ignored) fails every try.
        let mut seen = Vec::new();
        for _ in 0..3 {
            let mut c = WorkerClock::new(3);
            iterations(&mut c, 20_000, &[2_000, 1_000, 0]);
            assert!(c.short.drawn.total() > 0 && c.short.skipped > c.short.drawn.total());
            let (v, w) = c.finish();
            let attributed: u64 = w.tasks().iter().map(|t| t.1).sum();
            assert!(
                attributed.abs_diff(w.thread_ns) < 2_000_000,
                "{attributed} vs {w:?}"
            );
            let ratio = v[0] as f64 / v[1].max(1) as f64;
            if (1.5..2.7).contains(&ratio) && v[2] * 10 < v[1] {
                return;
            }
            seen.push(format!("{ratio}: {v:?} {w:?}"));
        }
        panic!(
            "shares off, or an empty step charged, in every try:\n{}",
            seen.join("\n")
        );
    }

    #[test]
    fn long_iterations_are_lapped_exactly() {
        let mut c = WorkerClock::new(2);
        iterations(&mut c, 5_000, &[1_000, 0]);
        // 10 heavy iterations in a row, 200 us each in vertex 1: 2 ms that a 1-in-16 draw
        // would miss half the time, and that the short iterations' proportions would give to
        // vertex 0.
        iterations(&mut c, 10, &[0, 200_000]);
        iterations(&mut c, 5_000, &[1_000, 0]);
        // All but the first (which opens the window) are lapped exactly.
        let exact_ns = c.exact.vertex[1] as f64 / xorflow_measure::clock::ticks_per_ns();
        assert!(
            exact_ns >= 9.0 * 200_000.0,
            "{exact_ns} ns lapped exactly: {c:?}"
        );
        let (v, w) = c.finish();
        // 2 ms of about 13 ms busy (wide: a preempted short iteration is long too, and is
        // shared out in the long iterations' proportions).
        let share = v[1] as f64 / (v[0] + v[1]) as f64;
        assert!((0.1..0.4).contains(&share), "{share}: {v:?} {w:?}");
    }

    #[test]
    fn rare_heavy_steps_are_shared_out_as_long_iterations() {
        // Expected 0.5; the band is wide because a preempted short iteration counts as long
        // on a shared machine (0.63 seen under a parallel build). Losing the heavy steps
        // would give under 0.1 every time; heavy preemption can too, once (0.12 seen in a CI
        // run with the other tests on both cores), so up to 3 tries.
        let mut seen = Vec::new();
        for _ in 0..3 {
            let mut c = WorkerClock::new(2);
            // 100 heavy steps of 100 us (10 ms), each alone among 200 short iterations (about
            // 20 ms in vertex 0): most are skipped, and a 1-in-16 draw of all iterations would
            // find 6 +- 2.4 of them.
            for _ in 0..100 {
                iterations(&mut c, 200, &[1_000, 0]);
                iterations(&mut c, 1, &[0, 100_000]);
            }
            let (v, w) = c.finish();
            let ratio = v[1] as f64 / v[0] as f64;
            if (0.3..0.8).contains(&ratio) {
                return;
            }
            seen.push(format!("{ratio}: {v:?} {w:?}"));
        }
        panic!("heavy steps lost in every try:\n{}", seen.join("\n"));
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
