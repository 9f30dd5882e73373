//! Duration options that must be whole units (a window in s, a granularity in ms).

use std::time::Duration;

/// `d` as whole seconds, at least `min`.
///
/// # Errors
/// A fractional or shorter duration, naming `--{what}`.
pub fn secs(d: Duration, what: &str, min: u64) -> Result<u64, String> {
    if d.subsec_nanos() != 0 || d.as_secs() < min {
        return Err(format!(
            "--{what} must be a whole number of seconds, at least {min}s"
        ));
    }
    Ok(d.as_secs())
}

/// `d` as whole milliseconds, at least `min`.
///
/// # Errors
/// A fractional or shorter duration, naming `--{what}`.
pub fn millis(d: Duration, what: &str, min: u64) -> Result<u64, String> {
    if !d.subsec_nanos().is_multiple_of(1_000_000) || (d.as_millis() as u64) < min {
        return Err(format!(
            "--{what} must be a whole number of ms, at least {min}ms"
        ));
    }
    Ok(d.as_millis() as u64)
}
