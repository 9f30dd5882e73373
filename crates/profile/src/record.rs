//! One recording: `perf record` attached to pids or around a command, until the pids exit, the
//! command ends, `--duration` passes or Ctrl-C; attached processes' CPU time read from `/proc`
//! at the start and the end.

use crate::control::Control;
use crate::cpu::{self, CpuError};
use crate::perf::{self, PerfError, RecordOptions};
use std::os::unix::process::CommandExt;
use std::process::ExitStatus;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// What to profile.
#[derive(Clone, Debug)]
pub enum Target {
    /// Running processes (`--pid`).
    Pids(Vec<u32>),
    /// A command and every process it starts (`-- COMMAND ARGS...`).
    Command(Vec<String>),
}

/// An attached process's CPU time over the recording.
#[derive(Clone, Debug, PartialEq)]
pub struct Attached {
    /// Process id.
    pub pid: u32,
    /// Its name at the start.
    pub comm: String,
    /// CPU time between the start and the end (or its last reading before it exited), ns.
    pub cpu_ns: u64,
    /// It exited during the recording.
    pub exited: bool,
}

/// What a recording did.
#[derive(Debug)]
pub struct Recording {
    /// Wall time from the start of sampling to its end (the stop, or perf's end).
    pub elapsed: Duration,
    /// The attached processes (empty for a command).
    pub attached: Vec<Attached>,
    /// perf's exit status: the command's own for a command (perf passes it on).
    pub status: ExitStatus,
    /// Stopped by `--duration` or Ctrl-C rather than by the target ending.
    pub stopped: bool,
}

/// Why a recording failed.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// A pid is not there.
    #[error(transparent)]
    Pid(#[from] CpuError),
    /// perf could not start or failed.
    #[error(transparent)]
    Perf(#[from] PerfError),
    /// The command cannot be run.
    #[error("cannot run the command '{command}': {message}")]
    Command {
        /// The program.
        command: String,
        /// Why.
        message: String,
    },
}

/// How often the attached processes' CPU is read while recording (bounds what an exiting
/// process's last reading misses), and how often perf's end is checked.
const POLL: Duration = Duration::from_millis(50);

/// Records `target` with `opts` for at most `duration`, or until `interrupted` is set (by the
/// caller's SIGINT handler: Ctrl-C stops the recording, not the profiler; perf gets the
/// terminal's SIGINT too, stops its command and writes its data).
///
/// # Errors
/// [`RecordError`]: a missing pid, perf not starting or not answering its control FIFO.
pub fn record(
    opts: &RecordOptions,
    target: &Target,
    duration: Option<Duration>,
    interrupted: &AtomicBool,
) -> Result<Recording, RecordError> {
    run(opts, target, duration, interrupted)
}

fn run(
    opts: &RecordOptions,
    target: &Target,
    duration: Option<Duration>,
    interrupted: &AtomicBool,
) -> Result<Recording, RecordError> {
    let mut control = None;
    let mut cmd = match target {
        Target::Pids(pids) => {
            let dir = opts.data.parent().unwrap_or(std::path::Path::new("."));
            let c = Control::new(dir)?;
            let mut cmd = perf::record_pids(opts, pids);
            // Its own process group: Ctrl-C reaches us, and we stop perf after reading the
            // processes' CPU at the end of sampling.
            // -q: perf would say "Events enabled" and "disabled" at each control command.
            cmd.args(c.args()).arg("-q").process_group(0);
            control = Some(c);
            cmd
        }
        Target::Command(command) => perf::record_command(opts, command),
    };
    let mut child = cmd.spawn().map_err(|source| PerfError::Missing {
        perf: opts.perf.display().to_string(),
        source,
    })?;
    let pids: &[u32] = match target {
        Target::Pids(p) => p,
        Target::Command(_) => &[],
    };
    let start_cpu = match start(control.as_mut(), &mut child, pids) {
        Ok(s) => s,
        Err(e) => {
            stop(&mut child);
            return Err(e);
        }
    };
    // --duration counts from the start of sampling, not of perf's attaching.
    let started = Instant::now();
    let mut last: Vec<(u64, bool)> = start_cpu.iter().map(|s| (s.cpu_ns, false)).collect();
    let mut signalled = false;
    let mut sampled_for = None;
    let status = loop {
        if let Some(status) = child.try_wait().map_err(|e| PerfError::Failed {
            what: "waiting for perf record".into(),
            status: "unknown".into(),
            stderr: e.to_string(),
            hint: String::new(),
        })? {
            break status;
        }
        if !signalled {
            poll_cpu(pids, &mut last);
        }
        let due = duration.is_some_and(|d| started.elapsed() >= d);
        if (due || interrupted.load(Ordering::Relaxed)) && !signalled {
            if let Some(c) = control.as_mut() {
                // Sampling off, then the CPU read: both cover the same span.
                let _ = c.send("disable", &mut child, ACK_TIMEOUT);
                poll_cpu(pids, &mut last);
            }
            // perf stops on SIGINT, ends its command (SIGTERM) and writes its data.
            // SAFETY: kill sends a signal to our own child; no memory is shared.
            unsafe {
                libc::kill(child.id() as libc::pid_t, libc::SIGINT);
            }
            signalled = true;
            sampled_for = Some(started.elapsed());
        }
        std::thread::sleep(POLL);
    };
    let attached = (pids.iter().zip(&start_cpu).zip(&last))
        .map(|((&pid, s), &(end, exited))| Attached {
            pid,
            comm: s.comm.clone(),
            cpu_ns: end.saturating_sub(s.cpu_ns),
            exited,
        })
        .collect();
    Ok(Recording {
        elapsed: sampled_for.unwrap_or_else(|| started.elapsed()),
        attached,
        status,
        stopped: signalled || interrupted.load(Ordering::Relaxed),
    })
}

/// How long perf may take to answer a control command (attaching reads every mapping of the
/// processes first).
const ACK_TIMEOUT: Duration = Duration::from_secs(60);

/// Turns sampling on and reads the attached processes' CPU right after.
fn start(
    control: Option<&mut Control>,
    child: &mut std::process::Child,
    pids: &[u32],
) -> Result<Vec<cpu::ProcStat>, RecordError> {
    if let Some(c) = control {
        c.send("enable", child, ACK_TIMEOUT)?;
    }
    Ok(pids
        .iter()
        .map(|&p| cpu::read(p))
        .collect::<Result<_, _>>()?)
}

/// The latest CPU reading of each process; a process that is gone keeps its last one.
fn poll_cpu(pids: &[u32], last: &mut [(u64, bool)]) {
    for (i, &pid) in pids.iter().enumerate() {
        match cpu::read(pid) {
            Ok(s) => last[i].0 = s.cpu_ns,
            Err(_) => last[i].1 = true,
        }
    }
}

/// Ends perf after a failed start (SIGINT, then waits for it).
fn stop(child: &mut std::process::Child) {
    // SAFETY: a signal to our own child.
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGINT);
    }
    let _ = child.wait();
}

/// Checks before anything starts that every pid exists and that a command's program exists
/// and is executable (perf would say so only after its own start, in words about its
/// "workload").
///
/// # Errors
/// [`RecordError::Pid`] or [`RecordError::Command`], naming the pid or the program.
pub fn check_target(target: &Target) -> Result<(), RecordError> {
    match target {
        Target::Pids(pids) => {
            for &pid in pids {
                cpu::read(pid)?;
            }
            Ok(())
        }
        Target::Command(command) => check_command(command),
    }
}

fn check_command(command: &[String]) -> Result<(), RecordError> {
    let program = command.first().ok_or_else(|| RecordError::Command {
        command: String::new(),
        message: "no command after --".into(),
    })?;
    let err = |message: String| RecordError::Command {
        command: program.clone(),
        message,
    };
    if program.contains('/') {
        return executable(std::path::Path::new(program)).map_err(err);
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    if std::env::split_paths(&path).any(|d| executable(&d.join(program)).is_ok()) {
        return Ok(());
    }
    Err(err("not found on PATH".into()))
}

fn executable(p: &std::path::Path) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    let m = std::fs::metadata(p).map_err(|e| e.to_string())?;
    if !m.is_file() {
        return Err("not a file".into());
    }
    if m.permissions().mode() & 0o111 == 0 {
        return Err("not executable".into());
    }
    Ok(())
}
