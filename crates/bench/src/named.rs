//! Looking up an experiment (or any named choice) by its command-line name.

use anyhow::Result;

/// The value of `E` whose clap name is `s` (`xorflow_runtime::config::parse_value`).
///
/// # Errors
/// None is: the error lists the known names.
pub fn by_name<E: clap::ValueEnum>(s: &str) -> Result<E> {
    xorflow_runtime::config::parse_value("experiment", s).map_err(anyhow::Error::msg)
}
