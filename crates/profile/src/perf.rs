//! Running `perf`: the preflight check, `perf record` around a command or attached to pids,
//! `perf script` for the stacks and `perf report -T` for the per-thread CPU counts.
//!
//! Sampling is `perf record -e cpu-clock -F FREQ --call-graph MODE -s`: hardware counters are
//! not available on every machine (not on this one), while the `cpu-clock` software event is;
//! `-s` keeps per-thread counts, read as each inherited thread exits.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// How perf unwinds stacks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallGraph {
    /// Frame pointers: cheap, but binaries built without them (xorflow's release profile
    /// today, most of libc) give truncated stacks.
    Fp,
    /// DWARF unwinding of a copy of the stack's top `dwarf_bytes` (perf's default 8192) at
    /// each sample: complete stacks without frame pointers, about 8 KiB of perf.data per
    /// sample and a slower `perf script`.
    Dwarf,
}

impl CallGraph {
    /// The `--call-graph` argument.
    pub fn arg(self) -> &'static str {
        match self {
            CallGraph::Fp => "fp",
            CallGraph::Dwarf => "dwarf",
        }
    }
}

/// What `perf record` is told.
#[derive(Clone, Debug)]
pub struct RecordOptions {
    /// The perf executable (`perf` on PATH by default).
    pub perf: PathBuf,
    /// Samples per second per thread (the CPU-efficiency paper: 99 Hz, off the 100 Hz timer tick).
    pub frequency: u32,
    /// Stack unwinding.
    pub call_graph: CallGraph,
    /// Where perf.data goes.
    pub data: PathBuf,
}

/// What perf cannot do, with what it said.
#[derive(Debug, thiserror::Error)]
pub enum PerfError {
    /// The executable is missing.
    #[error("cannot run '{perf}': {source} (install perf: apt-get install linux-perf, or pass --perf PATH)")]
    Missing {
        /// The executable tried.
        perf: String,
        /// The cause.
        source: std::io::Error,
    },
    /// perf ran but failed; `paranoid` is `kernel.perf_event_paranoid` when readable.
    #[error("{what} failed ({status}): {stderr}{hint}")]
    Failed {
        /// Which perf command.
        what: String,
        /// Its exit status.
        status: String,
        /// Its last lines on stderr.
        stderr: String,
        /// A hint on permissions, when they are the likely cause.
        hint: String,
    },
}

/// `kernel.perf_event_paranoid`, if readable (2 by default: own processes only, no kernel
/// profiling for unprivileged users; 3 or more on some distributions: nothing unprivileged).
pub fn paranoid() -> Option<i32> {
    std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// The permission hint added to perf failures.
fn permission_hint(stderr: &str) -> String {
    let denied = [
        "Permission denied",
        "perf_event_paranoid",
        "Access to performance",
        "EACCES",
    ]
    .iter()
    .any(|s| stderr.contains(s));
    if !denied {
        return String::new();
    }
    let level = paranoid().map_or("unknown".to_string(), |p| p.to_string());
    format!(
        "\nhint: kernel.perf_event_paranoid is {level}; sampling your own processes needs 2 or \
         less (-1 for other users' processes), or run as root / with CAP_PERFMON: \
         sysctl kernel.perf_event_paranoid=1"
    )
}

fn last_lines(text: &[u8], n: usize) -> String {
    let t = String::from_utf8_lossy(text);
    let lines: Vec<&str> = t.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// Checks that perf runs and may sample: a `perf record` of `true` into `scratch` (removed
/// after).
///
/// # Errors
/// [`PerfError::Missing`] or [`PerfError::Failed`] with perf's words and a permission hint.
pub fn preflight(opts: &RecordOptions, scratch: &Path) -> Result<(), PerfError> {
    let mut cmd = Command::new(&opts.perf);
    cmd.args(record_args(opts, scratch))
        .args(["--", "true"])
        .stdin(Stdio::null());
    let out = cmd.output().map_err(|source| PerfError::Missing {
        perf: opts.perf.display().to_string(),
        source,
    })?;
    let _ = std::fs::remove_file(scratch);
    if out.status.success() {
        return Ok(());
    }
    let stderr = last_lines(&out.stderr, 6);
    Err(PerfError::Failed {
        what: "perf record (the check before profiling)".into(),
        status: out.status.to_string(),
        hint: permission_hint(&stderr),
        stderr,
    })
}

/// `record -e cpu-clock -F FREQ --call-graph MODE -s -o DATA`.
pub fn record_args(opts: &RecordOptions, data: &Path) -> Vec<String> {
    vec![
        "record".into(),
        "-e".into(),
        "cpu-clock".into(),
        "-F".into(),
        opts.frequency.to_string(),
        "--call-graph".into(),
        opts.call_graph.arg().into(),
        "-s".into(),
        "-o".into(),
        data.display().to_string(),
    ]
}

/// The `perf record` command attached to `pids` (`-p a,b,c`).
pub fn record_pids(opts: &RecordOptions, pids: &[u32]) -> Command {
    let mut cmd = Command::new(&opts.perf);
    let list: Vec<String> = pids.iter().map(u32::to_string).collect();
    cmd.args(record_args(opts, &opts.data))
        .args(["-p", &list.join(",")])
        .stdin(Stdio::null());
    cmd
}

/// The `perf record` command that runs `command` (and follows every process it forks).
pub fn record_command(opts: &RecordOptions, command: &[String]) -> Command {
    let mut cmd = Command::new(&opts.perf);
    cmd.args(record_args(opts, &opts.data))
        .arg("--")
        .args(command);
    cmd
}

/// The `perf script` command whose output [`crate::stacks::parse`] reads. `inline`: also the
/// functions inlined at each address (from the binaries' debug info; slower, but Rust's
/// operators are mostly inlined into the runtime's driver).
pub fn script_command(perf: &Path, data: &Path, inline: bool) -> Command {
    let mut cmd = Command::new(perf);
    cmd.args(["script", "-i"])
        .arg(data)
        .args([
            "-F",
            "comm,pid,tid,period,event,ip,sym,dso",
            "--show-task-events",
        ])
        .arg(if inline { "--inline" } else { "--no-inline" })
        .stdin(Stdio::null());
    cmd
}

/// Runs `perf report -T` on `data` and returns its text (the per-thread counts are at its end).
///
/// # Errors
/// As [`PerfError`].
pub fn thread_counts_report(perf: &Path, data: &Path) -> Result<String, PerfError> {
    let out = Command::new(perf)
        .args([
            "report",
            "-T",
            "--stdio",
            "--sort",
            "pid",
            "-g",
            "none",
            "--no-inline",
            "-i",
        ])
        .arg(data)
        .stdin(Stdio::null())
        .output()
        .map_err(|source| PerfError::Missing {
            perf: perf.display().to_string(),
            source,
        })?;
    if !out.status.success() {
        return Err(PerfError::Failed {
            what: "perf report -T".into(),
            status: out.status.to_string(),
            stderr: last_lines(&out.stderr, 6),
            hint: String::new(),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// A failed perf command as a [`PerfError`], from its status and captured stderr.
pub fn failed(what: &str, status: std::process::ExitStatus, stderr: &[u8]) -> PerfError {
    let stderr = last_lines(stderr, 6);
    PerfError::Failed {
        what: what.into(),
        status: status.to_string(),
        hint: permission_hint(&stderr),
        stderr,
    }
}
