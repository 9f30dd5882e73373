//! `xorflow log ...`: reading the event logs a run wrote with `--log SPEC --log-dir DIR`
//! (the Cloudprofiler paper's handlers, crates/measure/src/log; docs/measurement.md, "Event logging").

use clap::{Args, Subcommand};
use std::path::{Path, PathBuf};
use xorflow_cli::outcome::CommandError;
use xorflow_measure::clock::Alignment;
use xorflow_measure::log::{self, LogFile, Summary};

/// Event-log tools.
#[derive(Subcommand)]
pub enum LogCmd {
    /// Per-hop durations between two channels, joined by event id (an element's time): count,
    /// percentiles and the largest error bound, in ns of process 0's clock.
    Hops(HopsArgs),
}

#[derive(Args)]
pub struct HopsArgs {
    /// The run's --log-dir.
    #[arg(long, default_value = "logs")]
    dir: PathBuf,
    /// The first end, e.g. `events.out` (a source's emissions).
    #[arg(long)]
    from: String,
    /// The second end, e.g. `counts.in` (arrivals at a sink).
    #[arg(long)]
    to: String,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

/// Runs a `log` subcommand (exit 2 on a bad folder or file, 1 when no id pairs up).
pub fn run(cmd: LogCmd) -> Result<(), CommandError> {
    let LogCmd::Hops(a) = cmd;
    crate::print_out(&hops(&a)?)
}

fn hops(a: &HopsArgs) -> Result<String, CommandError> {
    let dir = log::read_dir(&a.dir).map_err(|e| CommandError::Input(e.to_string()))?;
    let clock = read_clock(&a.dir).map_err(CommandError::Input)?;
    for ch in [&a.from, &a.to] {
        if !dir.files.iter().any(|f| &f.header.channel == ch) {
            return Err(CommandError::Input(format!(
                "no log files of channel '{ch}' in '{}'",
                a.dir.display()
            )));
        }
    }
    let h = match &clock {
        Some(c) => log::hop_durations(&dir.files, &a.from, &a.to, c),
        None => {
            let one = one_process(&dir.files).map_err(CommandError::Input)?;
            log::hop_durations(&dir.files, &a.from, &a.to, &one)
        }
    };
    // Logs that match no event: what the run did is in question, not the files.
    let s = log::summarize(&h.durations).ok_or_else(|| {
        CommandError::Engine(format!(
            "no event id of '{}' also reached '{}'",
            a.from, a.to
        ))
    })?;
    let out = serde_json::json!({
        "from": a.from, "to": a.to, "count": s.count,
        "unmatched_from": h.unmatched_from, "unmatched_to": h.unmatched_to,
        "duplicates": h.duplicates, "incomplete_files": dir.incomplete.len(),
        "clock_aligned": clock.is_some(),
        "min_ns": s.min_ns, "p50_ns": s.p50_ns, "p90_ns": s.p90_ns, "p99_ns": s.p99_ns,
        "max_ns": s.max_ns, "mean_error_ns": s.mean_error_ns, "max_error_ns": s.max_error_ns,
    });
    Ok(if a.json {
        format!("{out}\n")
    } else {
        describe(a, &h, &s, dir.incomplete.len(), clock.is_some())
    })
}

fn describe(a: &HopsArgs, h: &log::Hops, s: &Summary, incomplete: usize, aligned: bool) -> String {
    let us = |ns: f64| format!("{:.1}", ns / 1e3);
    format!(
        "{} -> {}: {} events (unmatched: {} / {}, duplicates {}, unfinished files {incomplete})\n\
         duration us: min {} p50 {} p90 {} p99 {} max {}\n\
         error bound us: mean {} max {} ({})\n",
        a.from,
        a.to,
        s.count,
        h.unmatched_from,
        h.unmatched_to,
        h.duplicates,
        us(s.min_ns),
        us(s.p50_ns),
        us(s.p90_ns),
        us(s.p99_ns),
        us(s.max_ns),
        us(s.mean_error_ns),
        us(s.max_error_ns),
        if aligned {
            "clock.json: converted into process 0's time"
        } else {
            "one process: its own clock"
        }
    )
}

/// The run's clock alignment, if it wrote one (runs of several processes).
fn read_clock(dir: &Path) -> Result<Option<Alignment>, String> {
    let path = dir.join(xorflow_runtime::execute::CLOCK_FILE);
    match std::fs::read(&path) {
        Ok(b) => serde_json::from_slice(&b)
            .map(Some)
            .map_err(|e| format!("'{}' is not a clock alignment: {e}", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("cannot read '{}': {e}", path.display())),
    }
}

/// Without an alignment every file must come from one process: its ticks convert by its own
/// rate, exactly.
fn one_process(files: &[LogFile]) -> Result<impl Fn(u32, u64) -> (f64, f64), String> {
    let mut procs: Vec<u32> = files.iter().map(|f| f.header.process).collect();
    procs.sort_unstable();
    procs.dedup();
    if procs.len() > 1 {
        return Err(format!(
            "files of processes {procs:?} but no {}: a run of several processes writes it \
             with its logs",
            xorflow_runtime::execute::CLOCK_FILE
        ));
    }
    let tpn = files.first().map_or(1.0, |f| f.header.ticks_per_ns);
    Ok(move |_p: u32, t: u64| (t as f64 / tpn, 0.0))
}
