//! Clock reading and alignment across processes (seed 002, sections 5-6).

/// This process's clock, in ticks (placeholder: `CLOCK_MONOTONIC_RAW` ns; the TSC replaces it).
#[inline]
pub fn now() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec into the valid, exclusively borrowed `ts`.
    unsafe {
        libc::clock_gettime(libc::CLOCK_MONOTONIC_RAW, &mut ts);
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}
