//! Checks of the options every file job shares (`examples/flights`, its join, `examples/ysb`),
//! written once so the same mistake gets the same message from every job.

use crate::connectors::output_file::check_distinct;
use crate::{JobError, RuntimeConfig};
use std::path::Path;

/// `--sources` lies in `1..=max`.
///
/// # Errors
/// [`JobError::Config`] naming the range and the value.
pub fn check_sources(sources: usize, max: usize) -> Result<(), JobError> {
    if (1..=max).contains(&sources) {
        return Ok(());
    }
    Err(JobError::Config(format!(
        "--sources must be between 1 and {max}, got {sources}"
    )))
}

/// `--speed`, when given, is a positive finite number.
///
/// # Errors
/// [`JobError::Config`] naming the value.
pub fn check_speed(speed: Option<f64>) -> Result<(), JobError> {
    match speed {
        Some(s) if !(s.is_finite() && s > 0.0) => Err(JobError::Config(format!(
            "--speed must be a positive number, got {s}"
        ))),
        _ => Ok(()),
    }
}

/// The engine options are valid and, on process 0 (the one that reads and writes the files),
/// no two of `paths` (flag, path) name one file.
///
/// # Errors
/// [`JobError::Config`] with the engine's or [`check_distinct`]'s message.
pub fn check_engine_and_paths(
    runtime: &RuntimeConfig,
    paths: &[(&str, &Path)],
) -> Result<(), JobError> {
    runtime.validate().map_err(JobError::Config)?;
    if !runtime.cluster.is_process_zero() {
        return Ok(());
    }
    check_distinct(paths).map_err(JobError::Config)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_sources_and_speeds_are_named() {
        assert!(check_sources(1, 4).is_ok() && check_sources(4, 4).is_ok());
        let e = check_sources(0, 4).unwrap_err().to_string();
        assert_eq!(e, "--sources must be between 1 and 4, got 0");
        assert!(check_speed(None).is_ok() && check_speed(Some(0.5)).is_ok());
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            let e = check_speed(Some(bad)).unwrap_err().to_string();
            assert!(e.starts_with("--speed must be a positive number"), "{e}");
        }
    }

    #[test]
    fn paths_naming_one_file_are_refused() {
        let rt = RuntimeConfig::default();
        let (a, b) = (Path::new("/tmp/x.csv"), Path::new("/tmp/./x.csv"));
        assert!(check_engine_and_paths(&rt, &[("--input", a), ("--output", b)]).is_err());
        assert!(check_engine_and_paths(&rt, &[("--input", a)]).is_ok());
    }
}
