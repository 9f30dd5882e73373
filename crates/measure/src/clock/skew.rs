//! A synthetic per-process clock skew, for tests only: an offset and a rate error applied on top
//! of the real counter, so that processes sharing one TSC (one host, network namespaces) have
//! clocks that disagree by a known amount and clock alignment can be checked against the truth.

use std::fmt;

/// Environment variable that sets this process's synthetic skew: `offset_ns:ppm`, e.g.
/// `XORFLOW_CLOCK_SKEW=-2500000:17.5` (the clock reads 2.5 ms behind the counter, plus 17.5 ticks
/// per million ticks). Test option: never set it in a measurement.
pub const SKEW_ENV: &str = "XORFLOW_CLOCK_SKEW";

/// A synthetic skew: `skewed(raw) = raw + offset_ticks + raw * ppm / 1e6` (the rate applies from
/// counter zero, so the same raw value always maps to the same skewed one in every process that
/// knows the parameters). Units are the clock's ticks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Skew {
    /// Offset added to every reading, ticks (may be negative).
    pub offset_ticks: i64,
    /// Rate error in parts per 10^12 (1 ppm = 1,000,000): integer, so applying it is exact.
    pub rate_ppt: i64,
}

/// A malformed skew setting, naming the variable and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SkewError(pub String);

impl fmt::Display for SkewError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SkewError {}

/// Largest synthetic rate error accepted, ppm (a real crystal is within about 100 ppm).
pub const MAX_SKEW_PPM: f64 = 1000.0;

impl Skew {
    /// Parses `offset_ns:ppm` (see [`SKEW_ENV`]); `ticks_per_ns` converts the offset into ticks.
    ///
    /// # Errors
    /// Not two numbers separated by `:`, a rate beyond +-[`MAX_SKEW_PPM`], or an offset beyond
    /// +-1 day; the message names [`SKEW_ENV`] and the value.
    pub fn parse(text: &str, ticks_per_ns: f64) -> Result<Skew, SkewError> {
        let bad = |why: &str| SkewError(format!("{SKEW_ENV}='{text}': {why}"));
        let (off, ppm) = text
            .trim()
            .split_once(':')
            .ok_or_else(|| bad("expected offset_ns:ppm, e.g. -2500000:17.5"))?;
        let off: f64 = off
            .trim()
            .parse()
            .map_err(|_| bad("the offset is not a number of nanoseconds"))?;
        let ppm: f64 = ppm
            .trim()
            .parse()
            .map_err(|_| bad("the rate is not a number of ppm"))?;
        if !ppm.is_finite() || ppm.abs() > MAX_SKEW_PPM {
            return Err(bad(&format!(
                "the rate must be within +-{MAX_SKEW_PPM} ppm"
            )));
        }
        if !off.is_finite() || off.abs() > 86_400e9 {
            return Err(bad("the offset must be within +-1 day"));
        }
        Ok(Skew {
            offset_ticks: (off * ticks_per_ns).round() as i64,
            rate_ppt: (ppm * 1e6).round() as i64,
        })
    }

    /// The skewed reading of raw counter value `raw`, ticks (saturating at 0 and u64::MAX).
    #[inline]
    pub fn apply(&self, raw: u64) -> u64 {
        let r = raw as i128;
        let v = r + self.offset_ticks as i128 + r * self.rate_ppt as i128 / 1_000_000_000_000;
        v.clamp(0, u64::MAX as i128) as u64
    }

    /// The rate error, ppm.
    pub fn ppm(&self) -> f64 {
        self.rate_ppt as f64 * 1e-6
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_applies() {
        let s = Skew::parse("-2000:25", 2.0).unwrap();
        assert_eq!(s.offset_ticks, -4000);
        assert_eq!(s.rate_ppt, 25_000_000);
        // 10^9 raw ticks: +25,000 from the rate, -4000 from the offset.
        assert_eq!(s.apply(1_000_000_000), 1_000_000_000 + 25_000 - 4000);
        assert_eq!(s.apply(0), 0, "saturates at zero");
        assert!((s.ppm() - 25.0).abs() < 1e-12);
    }

    #[test]
    fn bad_settings_name_the_variable() {
        for (text, says) in [
            ("12", "offset_ns:ppm"),
            ("x:1", "offset is not"),
            ("1:y", "rate is not"),
            ("1:5000", "within"),
            ("1e20:1", "1 day"),
            ("1:NaN", "within"),
        ] {
            let e = Skew::parse(text, 1.0).unwrap_err().to_string();
            assert!(e.contains(SKEW_ENV) && e.contains(says), "{text}: {e}");
        }
    }
}
