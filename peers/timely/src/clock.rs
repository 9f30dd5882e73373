//! One clock for every process of a run: CLOCK_MONOTONIC is system-wide, so due times stamped in
//! one process and arrival times read in another are comparable when both run on one machine
//! (the cluster runs of `xorflow-lab bench peers` do). `Instant` cannot be compared across processes.

/// Nanoseconds of CLOCK_MONOTONIC.
pub fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_MONOTONIC exists on every Linux.
    let r = unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    assert_eq!(r, 0, "clock_gettime(CLOCK_MONOTONIC) failed");
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}
