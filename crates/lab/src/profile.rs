//! `xorflow-lab profile`: the CPU-efficiency paper's task-level CPU profiler around a command or attached to
//! running processes (crates/profile; docs/profile.md).

use clap::Args;
use std::path::PathBuf;
use std::time::Duration;
use xorflow_cli::outcome::CommandError;
use xorflow_profile::perf::CallGraph;
use xorflow_profile::record::Target;
use xorflow_profile::run::{self, Config};

/// Options of `xorflow-lab profile`.
#[derive(Args)]
#[command(
    after_help = "Examples:\n  xorflow-lab profile -- xorflow-lab bench chain --elements 50000000\n  \
                  xorflow-lab profile --pid 1234 --pid 1240 --duration 30s --events 6000000\n\n\
                  Writes summary.csv, processes.csv, report.html, flame.svg, stacks.folded and \
                  other-stacks.txt into --out, and the same per process under processes/."
)]
pub struct ProfileArgs {
    /// A running process to profile (repeatable); not with a COMMAND.
    #[arg(long = "pid", value_name = "PID")]
    pids: Vec<u32>,
    /// Stop after this long (e.g. 30s, 2m); default: when the processes or the command end,
    /// or Ctrl-C.
    #[arg(long, value_parser = humantime::parse_duration)]
    duration: Option<Duration>,
    /// Results folder (must not exist); default: profile-YYYYMMDDTHHMMSSZ here.
    #[arg(long)]
    out: Option<PathBuf>,
    /// The application profile: a TOML file, or a shipped one by name (xorflow, flink, storm).
    #[arg(long, default_value = "xorflow")]
    profile: String,
    /// Samples per second per thread (1-10000).
    #[arg(long, default_value_t = 99, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    frequency: u32,
    /// Stack unwinding: dwarf (complete Rust stacks without frame pointers, about 8 KiB of
    /// perf.data per sample) or fp (frame pointers: small and cheap, but stacks through code
    /// built without them are cut short; what JVMs with -XX:+PreserveFramePointer need).
    #[arg(long, default_value = "dwarf", value_parser = ["fp", "dwarf"])]
    call_graph: String,
    /// Events the profiled run processed: adds CPU per event (ns) per task.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    events: Option<u64>,
    /// Leave inlined functions out of the stacks (a faster perf script; most of a Rust
    /// operator's code is inlined, so its tasks may then go unseen).
    #[arg(long)]
    no_inline: bool,
    /// Unmatched stacks listed in other-stacks.txt.
    #[arg(long, default_value_t = 50)]
    top: usize,
    /// Keep perf.data in the results folder (for perf report).
    #[arg(long)]
    keep_perf_data: bool,
    /// The perf executable.
    #[arg(long, default_value = "perf")]
    perf: PathBuf,
    /// The command to run and profile, with every process it starts.
    #[arg(last = true, value_name = "COMMAND")]
    command: Vec<String>,
}

/// Runs `xorflow-lab profile` (exit 2: usage, a bad profile, perf missing or not permitted, a pid
/// that does not exist, a command that cannot run; 1: perf failed; the command's own failure
/// is reported with exit 1 after the results are written).
pub fn run(a: ProfileArgs) -> Result<(), CommandError> {
    let target = match (a.pids.is_empty(), a.command.is_empty()) {
        (false, true) => Target::Pids(a.pids.clone()),
        (true, false) => Target::Command(a.command.clone()),
        (false, false) => return Err(usage("give either --pid or a COMMAND after --, not both")),
        (true, true) => {
            return Err(usage(
                "nothing to profile: give --pid PID or -- COMMAND ARGS...",
            ))
        }
    };
    let cfg = Config {
        target,
        out: a.out,
        profile: a.profile,
        frequency: a.frequency,
        call_graph: if a.call_graph == "fp" {
            CallGraph::Fp
        } else {
            CallGraph::Dwarf
        },
        duration: a.duration,
        events: a.events,
        perf: a.perf,
        inline: !a.no_inline,
        top: a.top,
        keep_perf_data: a.keep_perf_data,
    };
    let out = run::profile(&cfg).map_err(|e| match e.kind {
        run::Failure::Usage => CommandError::Config(e.message),
        run::Failure::Perf => CommandError::Engine(e.message),
        run::Failure::Interrupted => CommandError::Interrupted(e.message),
    })?;
    crate::print_out(&describe(&out))?;
    match out.command_status {
        Some(s) if !s.success() && !out.stopped => Err(CommandError::Engine(format!(
            "the profiled command failed ({s}); its profile is in '{}'",
            out.dir.display()
        ))),
        _ => Ok(()),
    }
}

fn usage(message: &str) -> CommandError {
    CommandError::Config(format!(
        "{message}\n\nUsage: xorflow-lab profile [OPTIONS] [--pid PID]... [-- COMMAND ARGS...]"
    ))
}

/// The run's task table and where the files are.
fn describe(o: &run::Outcome) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let samples: u64 = o.processes.iter().map(|p| p.samples).sum();
    let complete: u64 = o.processes.iter().map(|p| p.complete_samples).sum();
    let cpu: f64 = o.processes.iter().map(|p| p.cpu_ns as f64 / 1e9).sum();
    let _ = writeln!(
        s,
        "profile: {} processes, {samples} samples ({:.1} % with a complete stack), {cpu:.3} s CPU",
        o.processes.len(),
        100.0 * complete as f64 / samples.max(1) as f64
    );
    let _ = writeln!(
        s,
        "{:<24} {:>8} {:>7} {:>9} {:>12}",
        "task", "samples", "share", "cpu_s", "ns/event"
    );
    for r in &o.rows {
        let per = r
            .cpu_ns_per_event
            .map_or(String::new(), |v| format!("{v:.1}"));
        let _ = writeln!(
            s,
            "{:<24} {:>8} {:>6.1}% {:>9.3} {:>12}",
            r.task,
            r.samples,
            r.share * 100.0,
            r.cpu_s,
            per
        );
    }
    if samples > 0 && complete * 2 < samples {
        let _ = writeln!(
            s,
            "warning: {:.0} % of the stacks do not reach their thread's entry: with fp, code \
             built without frame pointers cuts them (try --call-graph dwarf, or build with \
             RUSTFLAGS=\"-C force-frame-pointers=yes\"); with dwarf, stacks deeper than its \
             8 KiB copy are cut. Their tasks come from the frames that remain",
            100.0 * (samples - complete) as f64 / samples as f64
        );
    }
    let _ = writeln!(s, "results: {}", o.dir.display());
    s
}
