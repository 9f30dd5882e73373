//! The per-process tick source (the Cloudprofiler paper, section 3.1, docs/papers.md: a TSC on a
//! typical cloud node gives 0.45 ns per cycle): the x86-64 time-stamp counter when the CPU says it
//! is invariant (`constant_tsc`: it counts at one rate whatever the core frequency; `nonstop_tsc`:
//! it keeps counting in deep C-states), otherwise Linux's `CLOCK_MONOTONIC_RAW` in nanoseconds. A
//! tick is a unit of this process's clock; [`ticks_per_ns`] calibrates it against
//! `CLOCK_MONOTONIC_RAW`.
//!
//! The choice is made once per process, at the first reading (or at [`init`], which reports a
//! bad setting instead of ignoring it). Two environment variables change it, both for tests:
//! [`SOURCE_ENV`] forces a source and [`super::skew::SKEW_ENV`] adds a synthetic skew.

use super::skew::{Skew, SkewError, SKEW_ENV};
use std::sync::OnceLock;
use std::time::Duration;

/// Environment variable forcing the tick source: `tsc` or `monotonic-raw` (test option; `tsc`
/// is refused where the counter is not invariant).
pub const SOURCE_ENV: &str = "XORFLOW_CLOCK_SOURCE";

/// Which counter a process's ticks come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ClockKind {
    /// The time-stamp counter (`rdtsc`; `rdtscp` for ordered reads).
    Tsc,
    /// `CLOCK_MONOTONIC_RAW`, nanoseconds (one tick per ns).
    MonotonicRaw,
}

impl ClockKind {
    /// The name used in file headers, reports and [`SOURCE_ENV`].
    pub fn name(self) -> &'static str {
        match self {
            ClockKind::Tsc => "tsc",
            ClockKind::MonotonicRaw => "monotonic-raw",
        }
    }
}

/// This process's clock: its source, its synthetic skew and when it was first read.
#[derive(Clone, Copy, Debug)]
pub struct Clock {
    /// The tick source.
    pub kind: ClockKind,
    /// Synthetic skew applied on top of the counter (tests only).
    pub skew: Option<Skew>,
    /// A reading of (ticks, `CLOCK_MONOTONIC_RAW` ns) taken at start, to calibrate against later.
    anchor: (u64, u64),
}

static CLOCK: OnceLock<Clock> = OnceLock::new();
static TICKS_PER_NS: OnceLock<f64> = OnceLock::new();

/// Sets up this process's clock from the CPU flags and the test variables, once; later calls
/// return the same clock.
///
/// # Errors
/// A malformed [`SKEW_ENV`] or [`SOURCE_ENV`] (or `tsc` forced on a CPU without an invariant
/// TSC), naming the variable. The clock is then set up without the bad setting, so [`now`]
/// still works.
pub fn init() -> Result<&'static Clock, SkewError> {
    let mut err = None;
    let c = CLOCK.get_or_init(|| {
        let (c, e) = detect();
        err = e;
        c
    });
    match err {
        Some(e) => Err(e),
        None => Ok(c),
    }
}

/// The clock set up by [`init`] (a bad setting is reported on stderr once and ignored).
#[inline]
pub fn clock() -> &'static Clock {
    CLOCK.get_or_init(|| {
        let (c, e) = detect();
        if let Some(e) = e {
            // Not eprintln!: it panics when stderr is closed.
            use std::io::Write;
            let _ = writeln!(std::io::stderr(), "xorflow clock: {e}; ignored");
        }
        c
    })
}

/// This process's clock, ticks: the cheapest reading (`rdtsc`, about 7-20 ns; or a vDSO
/// `clock_gettime`), with the synthetic skew if one is set. Not ordered with the instructions
/// around it; see [`now_ordered`].
#[inline]
pub fn now() -> u64 {
    let c = clock();
    let raw = read_raw(c.kind, false);
    match c.skew {
        None => raw,
        Some(s) => s.apply(raw),
    }
}

/// Like [`now`], but with `rdtscp`, which waits until the instructions before it have executed:
/// for the stamps of clock-alignment round trips.
#[inline]
pub fn now_ordered() -> u64 {
    let c = clock();
    let raw = read_raw(c.kind, true);
    match c.skew {
        None => raw,
        Some(s) => s.apply(raw),
    }
}

/// The counter without the synthetic skew, ticks: the truth a test compares against (every
/// process of one host reads the same TSC).
#[inline]
pub fn now_raw() -> u64 {
    read_raw(clock().kind, true)
}

/// This process's tick source.
pub fn kind() -> ClockKind {
    clock().kind
}

/// This process's synthetic skew, if one is set.
pub fn skew() -> Option<Skew> {
    clock().skew
}

/// This process's ticks per nanosecond (skew included), calibrated once against
/// `CLOCK_MONOTONIC_RAW` over at least 10 ms since the clock was set up (the first call may wait
/// for the rest of those 10 ms; a later first call measures over a longer span and is more
/// exact). Exactly 1 for `monotonic-raw` without a skew.
pub fn ticks_per_ns() -> f64 {
    *TICKS_PER_NS.get_or_init(|| {
        let c = clock();
        if c.kind == ClockKind::MonotonicRaw && c.skew.is_none() {
            return 1.0;
        }
        let (t0, m0) = c.anchor;
        let min_span = Duration::from_millis(10).as_nanos() as u64;
        let waited = monotonic_raw_ns().saturating_sub(m0);
        if waited < min_span {
            std::thread::sleep(Duration::from_nanos(min_span - waited));
        }
        let (t1, m1) = paired_reading(c);
        (t1.wrapping_sub(t0)) as f64 / (m1.saturating_sub(m0)).max(1) as f64
    })
}

/// Chooses the source and parses the skew; returns the clock and the first bad setting.
fn detect() -> (Clock, Option<SkewError>) {
    let mut err = None;
    let invariant = invariant_tsc();
    let kind = match std::env::var(SOURCE_ENV).ok().as_deref() {
        None | Some("") => {
            if invariant {
                ClockKind::Tsc
            } else {
                ClockKind::MonotonicRaw
            }
        }
        Some("monotonic-raw") => ClockKind::MonotonicRaw,
        Some("tsc") if invariant => ClockKind::Tsc,
        Some(other) => {
            err = Some(SkewError(format!(
                "{SOURCE_ENV}='{other}': expected 'monotonic-raw' or 'tsc' (tsc only with \
                 constant_tsc and nonstop_tsc in /proc/cpuinfo)"
            )));
            if invariant {
                ClockKind::Tsc
            } else {
                ClockKind::MonotonicRaw
            }
        }
    };
    let mut clock = Clock {
        kind,
        skew: None,
        anchor: (0, 0),
    };
    if let Ok(text) = std::env::var(SKEW_ENV) {
        // The offset is given in ns: a short rough calibration of the raw counter converts it.
        match Skew::parse(&text, raw_ticks_per_ns(kind)) {
            Ok(s) => clock.skew = Some(s),
            Err(e) => err = err.or(Some(e)),
        }
    }
    clock.anchor = paired_reading(&clock);
    (clock, err)
}

/// True when `/proc/cpuinfo` lists both `constant_tsc` and `nonstop_tsc` (x86-64 only).
fn invariant_tsc() -> bool {
    if !cfg!(target_arch = "x86_64") {
        return false;
    }
    let Ok(info) = std::fs::read_to_string("/proc/cpuinfo") else {
        return false;
    };
    let Some(flags) = info.lines().find(|l| l.starts_with("flags")) else {
        return false;
    };
    let has = |f: &str| flags.split_whitespace().any(|w| w == f);
    has("constant_tsc") && has("nonstop_tsc")
}

/// Raw ticks per ns over about 2 ms (only to turn a synthetic offset in ns into ticks).
fn raw_ticks_per_ns(kind: ClockKind) -> f64 {
    if kind == ClockKind::MonotonicRaw {
        return 1.0;
    }
    let (t0, m0) = (read_raw(kind, true), monotonic_raw_ns());
    std::thread::sleep(Duration::from_millis(2));
    let (t1, m1) = (read_raw(kind, true), monotonic_raw_ns());
    t1.wrapping_sub(t0) as f64 / m1.saturating_sub(m0).max(1) as f64
}

/// A (ticks, monotonic-raw ns) pair read as close together as possible: the ns reading is
/// bracketed by two tick readings and the tightest of five brackets is kept.
fn paired_reading(c: &Clock) -> (u64, u64) {
    let read = || match c.skew {
        None => read_raw(c.kind, true),
        Some(s) => s.apply(read_raw(c.kind, true)),
    };
    let a = super::anchor::Anchor::read(read, monotonic_raw_ns);
    (a.ticks, a.ns)
}

#[inline]
fn read_raw(kind: ClockKind, ordered: bool) -> u64 {
    match kind {
        ClockKind::Tsc => tsc(ordered),
        ClockKind::MonotonicRaw => monotonic_raw_ns(),
    }
}

#[cfg(target_arch = "x86_64")]
#[inline]
fn tsc(ordered: bool) -> u64 {
    if ordered {
        let mut aux = 0u32;
        // SAFETY: rdtscp exists on every CPU with an invariant TSC (checked before this source
        // is chosen); it writes the processor id into the valid, exclusive `aux`.
        unsafe { core::arch::x86_64::__rdtscp(&mut aux) }
    } else {
        // SAFETY: rdtsc has no memory operands; the source is chosen only on x86-64.
        unsafe { core::arch::x86_64::_rdtsc() }
    }
}

#[cfg(not(target_arch = "x86_64"))]
#[inline]
fn tsc(_ordered: bool) -> u64 {
    monotonic_raw_ns()
}

/// `CLOCK_MONOTONIC_RAW`, ns (not slewed by NTP; one timebase per host).
#[inline]
pub fn monotonic_raw_ns() -> u64 {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_advance_and_calibrate_against_monotonic_raw() {
        let (t0, m0) = (now(), monotonic_raw_ns());
        std::thread::sleep(Duration::from_millis(20));
        let (t1, m1) = (now(), monotonic_raw_ns());
        assert!(t1 > t0);
        let tpn = ticks_per_ns();
        // 20 ms measured two ways agree within 2 % (scheduling between the reads).
        let ns = (t1 - t0) as f64 / tpn;
        let want = (m1 - m0) as f64;
        assert!((ns / want - 1.0).abs() < 0.02, "{ns} ns vs {want} ns");
        if kind() == ClockKind::Tsc {
            assert!(tpn > 0.1 && tpn < 10.0, "{tpn} ticks/ns");
        }
    }

    #[test]
    fn ordered_and_raw_reads_agree_without_skew() {
        if skew().is_none() {
            let a = now_raw();
            let b = now_ordered();
            assert!(b >= a);
            assert!(b - a < 10_000_000, "10 ms apart at most");
        }
    }
}
