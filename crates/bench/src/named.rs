//! Looking up an experiment (or any named choice) by its command-line name.

use anyhow::{bail, Result};

/// The element of `all` whose `name` is `s`.
///
/// # Errors
/// None is: the error lists the known names.
pub fn by_name<E: Copy>(all: &[E], name: impl Fn(E) -> &'static str, s: &str) -> Result<E> {
    match all.iter().find(|&&e| name(e) == s) {
        Some(&e) => Ok(e),
        None => bail!(
            "unknown experiment '{s}' (expected one of: {})",
            all.iter().map(|&e| name(e)).collect::<Vec<_>>().join(", ")
        ),
    }
}
