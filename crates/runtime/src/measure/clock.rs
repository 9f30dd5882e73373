//! The machine's monotonic clock in nanoseconds, so arrival times fit in plain u64 arrays.

/// Nanoseconds on the machine-wide raw monotonic clock (`CLOCK_MONOTONIC_RAW`, read through the
/// vDSO in about 27 ns here, as `CLOCK_MONOTONIC`). Unlike an [`std::time::Instant`] it is a
/// plain number every process of one machine agrees on, so an element stamped in one process can
/// be timed in another (the bench stand's end-to-end latency). Hosts do not share it: the run
/// report's clock alignment converts stamps of different processes
/// ([`xorflow_measure::clock::Alignment::monotonic_duration`]). Raw rather than `CLOCK_MONOTONIC`
/// because NTP does not slew it: it stays a fixed linear function of the TSC, so two anchors per
/// run map it onto the alignment's ticks exactly (`crates/measure/src/clock/anchor.rs`).
#[inline]
pub fn now_ns() -> u64 {
    read_ns(libc::CLOCK_MONOTONIC_RAW)
}

#[inline]
fn read_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec into the valid, exclusively borrowed `ts`.
    unsafe {
        libc::clock_gettime(clock, &mut ts);
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// CPU time (user + system) consumed so far by all threads of this process, ns
/// (`CLOCK_PROCESS_CPUTIME_ID`). A system call (~0.5 us here): read it per run, not per element.
pub fn process_cpu_ns() -> u64 {
    read_ns(libc::CLOCK_PROCESS_CPUTIME_ID)
}

/// CPU time (user + system) consumed so far by the calling thread, ns
/// (`CLOCK_THREAD_CPUTIME_ID`). A system call (a few hundred ns here): read it around parks and
/// at the ends of a run, not per step (`crates/runtime/src/measure/cpu.rs`).
pub fn thread_cpu_ns() -> u64 {
    read_ns(libc::CLOCK_THREAD_CPUTIME_ID)
}

/// Time the live threads of this process have spent runnable but waiting for a CPU, ns: the sum
/// of the second field of `/proc/self/task/*/schedstat` (Linux; 0 elsewhere or when schedstats
/// are off). Threads that have exited no longer count, so a difference of two readings is only
/// meaningful for threads that live through the span (a tracker process's transport thread does).
pub fn run_queue_wait_ns() -> u64 {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return 0;
    };
    tasks
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        .sum()
}

/// Sets how late past its deadline a timed wait of this thread (`std::thread::park_timeout`) may
/// wake, ns (`--timer-slack`; Linux's default is 50 us). Small slack gives rate-controlled sources
/// and flush timeouts precise wake-ups, at a timer interrupt per wait; a larger one lets the
/// kernel wake the thread once for several deadlines, which in this VM cut a YSB job's CPU at
/// 50,000 events/s by 42 % (docs/cpu.md, "Batching at low load"). 0 is taken as 1 ns (0 would
/// mean "the process default" to the kernel).
pub fn set_timer_slack(ns: u64) {
    #[cfg(target_os = "linux")]
    // SAFETY: PR_SET_TIMERSLACK only changes this thread's timer slack; no memory is passed.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, ns.max(1) as libc::c_ulong, 0, 0, 0);
    }
}
