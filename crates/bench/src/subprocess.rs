//! Benches that run a binary once per measurement (`bench checkpoints`, `bench alignment`): a
//! fresh process per run, so runs share no allocator, thread or file state, and the settings can
//! alternate within a repetition. The lab runs its own experiments (`xorflow-lab bench chain`)
//! and the engine's jobs as a user would (`xorflow run flights`: [`engine_binary`]).

use anyhow::{bail, Context};
use std::path::Path;
use std::process::Command;

/// The environment variable naming the `xorflow` binary the lab drives.
pub const ENGINE_BIN_ENV: &str = "XORFLOW_BIN";

/// The `xorflow` binary: `$XORFLOW_BIN`, else the one beside this program (cargo builds both
/// binaries into one folder: `cargo build --release -p xorflow-cli -p xorflow-lab`).
///
/// # Errors
/// Neither exists; the message says how to build it or point at it.
pub fn engine_binary() -> anyhow::Result<std::path::PathBuf> {
    if let Some(p) = std::env::var_os(ENGINE_BIN_ENV) {
        return Ok(p.into());
    }
    let me = std::env::current_exe().context("cannot find this program's path")?;
    let beside = me.with_file_name("xorflow");
    if beside.is_file() {
        return Ok(beside);
    }
    bail!(
        "no xorflow binary beside {} (build it: cargo build --release -p xorflow-cli; or set \
         {ENGINE_BIN_ENV})",
        me.display()
    )
}

/// Runs `exe args` to the end; returns its stdout.
///
/// # Errors
/// It cannot start, or exits unsuccessfully (the error holds the command line and its stderr).
pub fn stdout_of(exe: &Path, args: &[String]) -> anyhow::Result<String> {
    let o = Command::new(exe)
        .args(args)
        .output()
        .with_context(|| format!("cannot run {}", exe.display()))?;
    if !o.status.success() {
        bail!(
            "`{} {}` failed: {}",
            exe.display(),
            args.join(" "),
            String::from_utf8_lossy(&o.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&o.stdout).into_owned())
}

/// Runs `exe args` to the end, killing it after `timeout`; returns its stdout. Its stderr goes
/// to ours (the peers' progress and warnings stay visible).
///
/// # Errors
/// It cannot start, exits unsuccessfully (naming the command and its exit status), or runs
/// past `timeout` (killed).
pub fn stdout_within(
    exe: &str,
    args: &[String],
    timeout: std::time::Duration,
) -> anyhow::Result<String> {
    use std::io::Read;
    let line = || format!("`{exe} {}`", args.join(" "));
    let mut child = Command::new(exe)
        .args(args)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .with_context(|| format!("cannot start {}", line()))?;
    let mut out = child.stdout.take().expect("piped stdout");
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let t0 = std::time::Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait()? {
            break st;
        }
        if t0.elapsed() > timeout {
            let _ = child.kill();
            let _ = child.wait();
            bail!("{} ran past {timeout:?} and was killed", line());
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let stdout = reader.join().unwrap_or_default();
    if !status.success() {
        bail!("{} failed ({status})", line());
    }
    Ok(stdout)
}

/// Runs `exe args`, which prints one JSON object (`bench chain --json`), and parses it.
///
/// # Errors
/// As [`stdout_of`], or the output is not one JSON object.
pub fn json_of(exe: &Path, args: &[String]) -> anyhow::Result<serde_json::Value> {
    let text = stdout_of(exe, args)?;
    serde_json::from_str(text.trim()).with_context(|| {
        format!(
            "`{} {}` printed no result: {text}",
            exe.display(),
            args.join(" ")
        )
    })
}

/// The median of `v` (0 if empty; the mean of the middle two for an even count).
pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => 0.0,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians_of_odd_even_and_empty() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(vec![4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(median(Vec::new()), 0.0);
    }

    #[test]
    fn a_failing_command_is_named_with_its_stderr() {
        let e = stdout_of(
            Path::new("/bin/sh"),
            &["-c".into(), "echo oops >&2; exit 3".into()],
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("oops") && e.contains("-c"), "{e}");
    }
}
