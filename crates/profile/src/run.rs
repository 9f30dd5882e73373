//! `xorflow-lab profile` from start to end: check the profile and perf, record, read the stacks,
//! attribute CPU per process and task, and write the results folder, first as `DIR.partial`,
//! renamed to `DIR` only once complete.

use crate::collect::{Collected, ProcessStacks, StackKey};
use crate::cpu::{self, CpuSource};
use crate::folded::{self, Unmatched};
use crate::perf::{self, CallGraph, RecordOptions};
use crate::profile::{AppProfile, OTHER};
use crate::record::{self, RecordError, Recording, Target};
use crate::summary::{self, TaskRow};
use crate::{flame, html, stacks};
use std::collections::BTreeMap;
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Everything `xorflow-lab profile` is told.
#[derive(Clone, Debug)]
pub struct Config {
    /// Pids or a command.
    pub target: Target,
    /// Results folder; `None`: `profile-YYYYMMDDTHHMMSSZ` in the current directory.
    pub out: Option<PathBuf>,
    /// The application profile: a file, or a builtin name (`xorflow`, `flink`, `storm`).
    pub profile: String,
    /// Samples per second (99).
    pub frequency: u32,
    /// Stack unwinding.
    pub call_graph: CallGraph,
    /// Stop after this long (default: when the target ends, or Ctrl-C).
    pub duration: Option<Duration>,
    /// Events the profiled run processed, for CPU per event.
    pub events: Option<u64>,
    /// The perf executable.
    pub perf: PathBuf,
    /// Resolve inlined functions (`perf script --inline`).
    pub inline: bool,
    /// Unmatched stacks listed in `other-stacks.txt`.
    pub top: usize,
    /// Keep `perf.data` in the results folder.
    pub keep_perf_data: bool,
}

/// A process's results.
#[derive(Clone, Debug)]
pub struct ProcessResult {
    /// Process id.
    pub pid: u32,
    /// Its name.
    pub name: String,
    /// CPU time over the profile, ns.
    pub cpu_ns: u64,
    /// Where `cpu_ns` came from.
    pub cpu_source: CpuSource,
    /// Samples, and how many of them reached a thread entry (a complete stack).
    pub samples: u64,
    /// See `samples`.
    pub complete_samples: u64,
    /// Task rows.
    pub rows: Vec<TaskRow>,
}

/// What a profile produced.
#[derive(Debug)]
pub struct Outcome {
    /// The results folder.
    pub dir: PathBuf,
    /// The whole run's task rows.
    pub rows: Vec<TaskRow>,
    /// Per process.
    pub processes: Vec<ProcessResult>,
    /// The command's exit status (perf passes it on); `None` for pids.
    pub command_status: Option<ExitStatus>,
    /// Stopped by `--duration` or Ctrl-C.
    pub stopped: bool,
}

/// A failure: what to print and its kind (the CLI's exit status comes from it).
#[derive(Debug)]
pub struct RunError {
    /// Whose failure it is.
    pub kind: Failure,
    /// The message.
    pub message: String,
}

/// Whose failure a [`RunError`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// The user's to fix before anything ran: usage, configuration, this machine's setup (perf
    /// missing or not permitted, a pid that does not exist, a command that cannot run).
    Usage,
    /// perf failed during the run.
    Perf,
    /// Ctrl-C stopped the profile before it was written.
    Interrupted,
}

fn fail(kind: Failure, message: impl Into<String>) -> RunError {
    RunError {
        kind,
        message: message.into(),
    }
}

/// Runs a profile as `cfg` says.
///
/// # Errors
/// [`RunError`]: a bad profile file, an existing results folder, perf missing or not permitted,
/// a pid that does not exist, a command that cannot be run (2); perf failing, no samples (1).
/// The partial folder is removed on failure.
pub fn profile(cfg: &Config) -> Result<Outcome, RunError> {
    let app = AppProfile::load(&cfg.profile).map_err(|e| fail(Failure::Usage, e.to_string()))?;
    record::check_target(&cfg.target).map_err(|e| fail(Failure::Usage, e.to_string()))?;
    let dir = cfg.out.clone().unwrap_or_else(default_dir);
    let partial = partial_of(&dir);
    for p in [&dir, &partial] {
        if p.exists() {
            return Err(fail(
                Failure::Usage,
                format!(
                    "'{}' already exists: pass another --out (or remove it)",
                    p.display()
                ),
            ));
        }
    }
    std::fs::create_dir_all(&partial).map_err(|e| {
        fail(
            Failure::Usage,
            format!("cannot create '{}': {e}", partial.display()),
        )
    })?;
    // Ctrl-C ends the recording (and the command); a second one, or one outside the recording,
    // ends the profile: either way this process cleans up rather than dying mid-write.
    let interrupted = Arc::new(AtomicBool::new(false));
    let sig = signal_hook::flag::register(libc::SIGINT, interrupted.clone()).ok();
    let r = profile_into(cfg, &app, &dir, &partial, &interrupted);
    if let Some(id) = sig {
        signal_hook::low_level::unregister(id);
    }
    if r.is_err() {
        let _ = std::fs::remove_dir_all(&partial);
    }
    r
}

fn profile_into(
    cfg: &Config,
    app: &AppProfile,
    dir: &Path,
    partial: &Path,
    interrupted: &AtomicBool,
) -> Result<Outcome, RunError> {
    let opts = RecordOptions {
        perf: cfg.perf.clone(),
        frequency: cfg.frequency,
        call_graph: cfg.call_graph,
        data: partial.join("perf.data"),
    };
    let checked = perf::preflight(&opts, &partial.join("preflight.data"));
    if interrupted.load(Ordering::Relaxed) {
        return Err(interrupted_error());
    }
    checked.map_err(|e| fail(Failure::Usage, e.to_string()))?;
    let rec =
        record::record(&opts, &cfg.target, cfg.duration, interrupted).map_err(|e| match e {
            RecordError::Perf(perf::PerfError::Failed { .. }) => fail(Failure::Perf, e.to_string()),
            e => fail(Failure::Usage, e.to_string()),
        })?;
    let size = std::fs::metadata(&opts.data).map(|m| m.len()).unwrap_or(0);
    if size == 0 {
        return Err(fail(
            Failure::Perf,
            format!(
                "perf record wrote no data ({}): see its messages above",
                rec.status
            ),
        ));
    }
    // The Ctrl-C that ended the recording is spent; another one ends the profile.
    interrupted.store(false, Ordering::Relaxed);
    let collected = read_stacks(cfg, &opts.data, partial, interrupted)?;
    if collected.samples() == 0 {
        return Err(fail(Failure::Perf, "perf recorded no samples: the target used less CPU than one sample period (1/frequency s), or exited at once"));
    }
    let processes = attribute(cfg, app, &collected, &rec, &opts.data)?;
    let rows = summary::combine(
        &app.tasks(),
        &processes.iter().map(|p| p.rows.clone()).collect::<Vec<_>>(),
        cfg.events,
    );
    write_all(cfg, app, &collected, &processes, &rows, &rec, partial)?;
    if !cfg.keep_perf_data {
        let _ = std::fs::remove_file(&opts.data);
    }
    std::fs::rename(partial, dir).map_err(|e| {
        fail(
            Failure::Perf,
            format!(
                "cannot rename '{}' to '{}': {e}",
                partial.display(),
                dir.display()
            ),
        )
    })?;
    Ok(Outcome {
        dir: dir.to_path_buf(),
        rows,
        processes,
        command_status: matches!(cfg.target, Target::Command(_)).then_some(rec.status),
        stopped: rec.stopped,
    })
}

/// Streams `perf script` into the samples of each process; its stderr goes to a log file that
/// is quoted on failure.
fn read_stacks(
    cfg: &Config,
    data: &Path,
    partial: &Path,
    interrupted: &AtomicBool,
) -> Result<Collected, RunError> {
    let log_path = partial.join("perf-script.log");
    let log = std::fs::File::create(&log_path).map_err(|e| {
        fail(
            Failure::Perf,
            format!("cannot create '{}': {e}", log_path.display()),
        )
    })?;
    let mut child = perf::script_command(&cfg.perf, data, cfg.inline)
        .stdout(Stdio::piped())
        .stderr(log)
        .spawn()
        .map_err(|e| {
            fail(
                Failure::Usage,
                format!("cannot run '{} script': {e}", cfg.perf.display()),
            )
        })?;
    let mut collected = Collected::default();
    let out = child.stdout.take().expect("stdout is piped");
    let done = AtomicBool::new(false);
    let pid = child.id() as libc::pid_t;
    let parsed = std::thread::scope(|s| {
        // On Ctrl-C, perf script is stopped: the parse then sees the end of its output.
        s.spawn(|| {
            while !done.load(Ordering::Relaxed) {
                if interrupted.load(Ordering::Relaxed) {
                    // SAFETY: a signal to our own child, not yet waited for.
                    unsafe {
                        libc::kill(pid, libc::SIGTERM);
                    }
                    return;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        });
        let r = stacks::parse(BufReader::new(out), |r| collected.add(r));
        done.store(true, Ordering::Relaxed);
        r
    });
    let status = child
        .wait()
        .map_err(|e| fail(Failure::Perf, format!("perf script: {e}")))?;
    if interrupted.load(Ordering::Relaxed) {
        return Err(interrupted_error());
    }
    let stderr = std::fs::read(&log_path).unwrap_or_default();
    let _ = std::fs::remove_file(&log_path);
    if !status.success() {
        return Err(fail(
            Failure::Perf,
            perf::failed("perf script", status, &stderr).to_string(),
        ));
    }
    parsed.map_err(|e| fail(Failure::Perf, e.to_string()))?;
    Ok(collected)
}

/// Each process's CPU time and task rows: attached pids from `/proc`, a command's processes
/// from perf's per-thread counts (sample periods where perf has none).
fn attribute(
    cfg: &Config,
    app: &AppProfile,
    collected: &Collected,
    rec: &Recording,
    data: &Path,
) -> Result<Vec<ProcessResult>, RunError> {
    let counts = match cfg.target {
        Target::Command(_) => perf::thread_counts_report(&cfg.perf, data)
            .ok()
            .and_then(|t| cpu::parse_thread_counts(&t))
            .unwrap_or_default(),
        Target::Pids(_) => BTreeMap::new(),
    };
    let empty = ProcessStacks::default();
    // Processes perf saw exec but never sampled used less than a sample period: left out.
    let mut pids: Vec<u32> = (collected.processes.values())
        .filter(|p| p.samples() > 0)
        .map(|p| p.pid)
        .collect();
    let unsampled: Vec<u32> = (rec.attached.iter().map(|a| a.pid))
        .filter(|p| !pids.contains(p))
        .collect();
    pids.extend(unsampled);
    let mut out = Vec::new();
    for pid in pids {
        let p = collected.processes.get(&pid).unwrap_or(&empty);
        let attached = rec.attached.iter().find(|a| a.pid == pid);
        let (cpu_ns, cpu_source, name) = match attached {
            Some(a) => (a.cpu_ns, CpuSource::Proc, a.comm.clone()),
            None => {
                let sampled = p
                    .threads
                    .iter()
                    .map(|(&tid, (_, c))| (tid, c.period))
                    .collect();
                let (ns, src) = cpu::command_process_cpu(pid, &counts, &sampled);
                (ns, src, p.name(&pid.to_string()))
            }
        };
        let (by_task, _) = p.classify(app);
        out.push(ProcessResult {
            pid,
            name,
            cpu_ns,
            cpu_source,
            samples: p.samples(),
            complete_samples: p.complete_samples,
            rows: summary::attribute(&app.tasks(), &by_task, cpu_ns, cfg.events),
        });
    }
    Ok(out)
}

/// The results: the run's files at the top, each process's under `processes/PID-NAME/`.
fn write_all(
    cfg: &Config,
    app: &AppProfile,
    collected: &Collected,
    processes: &[ProcessResult],
    rows: &[TaskRow],
    rec: &Recording,
    partial: &Path,
) -> Result<(), RunError> {
    let empty = ProcessStacks::default();
    let mut unmatched = Vec::new();
    let mut by_task = Vec::new();
    for p in processes {
        let stacks = collected.processes.get(&p.pid).unwrap_or(&empty);
        let dir = partial
            .join("processes")
            .join(format!("{}-{}", p.pid, safe_name(&p.name)));
        std::fs::create_dir_all(&dir).map_err(|e| {
            fail(
                Failure::Perf,
                format!("cannot create '{}': {e}", dir.display()),
            )
        })?;
        let classified = stacks.classified(app);
        let mut mine: Vec<(u32, &str, &StackKey, u64)> = classified
            .iter()
            .filter(|(_, task, _)| task.is_none())
            .map(|(k, _, n)| (p.pid, p.name.as_str(), *k, *n))
            .collect();
        sort_unmatched(&mut mine);
        let tasks: Vec<(&StackKey, &str, u64)> = classified
            .iter()
            .map(|(k, t, n)| (*k, t.unwrap_or(OTHER), *n))
            .collect();
        let files = Files {
            title: format!("pid {} ({})", p.pid, p.name),
            rows: &p.rows,
            samples: p.samples,
            stacks: &tasks,
            unmatched: &mine,
        };
        files.write(&dir, cfg.top)?;
        unmatched.extend(mine);
        by_task.extend(tasks);
    }
    sort_unmatched(&mut unmatched);
    let files = Files {
        title: "all processes".into(),
        rows,
        samples: collected.samples(),
        stacks: &by_task,
        unmatched: &unmatched,
    };
    let svg = files.write(partial, cfg.top)?;
    write(&partial.join("processes.csv"), &processes_csv(processes))?;
    write(
        &partial.join("report.html"),
        &report(cfg, app, processes, rows, rec, &svg),
    )?;
    let profile_copy = partial.join("application-profile.txt");
    write(&profile_copy, &describe_profile(app))
}

fn write(path: &Path, text: &str) -> Result<(), RunError> {
    std::fs::write(path, text).map_err(|e| {
        fail(
            Failure::Perf,
            format!("cannot write '{}': {e}", path.display()),
        )
    })
}

/// The files of one process or of the whole run.
struct Files<'a> {
    title: String,
    rows: &'a [TaskRow],
    samples: u64,
    /// Every distinct stack with its task and samples.
    stacks: &'a [(&'a StackKey, &'a str, u64)],
    /// Unmatched stacks, most sampled first: (pid, process name, stack, samples).
    unmatched: &'a [(u32, &'a str, &'a StackKey, u64)],
}

impl Files<'_> {
    /// Writes summary.csv, stacks.folded, tasks.folded, flame.svg, tasks.svg and
    /// other-stacks.txt into `dir`; returns tasks.svg's text (for the HTML report).
    fn write(&self, dir: &Path, top: usize) -> Result<String, RunError> {
        let stacks = folded::fold(self.stacks.iter().map(|(k, _, n)| (*k, *n)));
        let tasks = folded::fold_by_task(self.stacks.iter().copied());
        let list: Vec<Unmatched<'_>> = self
            .unmatched
            .iter()
            .map(|(pid, name, key, n)| Unmatched {
                process: (*pid, name),
                key,
                samples: *n,
            })
            .collect();
        let tasks_svg = flame::svg(&format!("{}: by task", self.title), &tasks);
        write(&dir.join("summary.csv"), &summary::csv(self.rows))?;
        write(&dir.join("stacks.folded"), &folded::text(&stacks))?;
        write(&dir.join("tasks.folded"), &folded::text(&tasks))?;
        write(&dir.join("flame.svg"), &flame::svg(&self.title, &stacks))?;
        write(&dir.join("tasks.svg"), &tasks_svg)?;
        write(
            &dir.join("other-stacks.txt"),
            &folded::other_text(&list, self.samples, top),
        )?;
        Ok(tasks_svg)
    }
}

/// The rules as they were applied, for the results folder.
fn describe_profile(app: &AppProfile) -> String {
    let mut s = format!("# The application profile this run used: {}\n", app.source);
    for r in &app.rules {
        s.push_str(&format!("{} (line {}): {:?}\n", r.task, r.line, r.keywords));
    }
    s
}

fn processes_csv(processes: &[ProcessResult]) -> String {
    let mut s = String::from("pid,name,cpu_s,cpu_source,samples,complete_stack_share\n");
    for p in processes {
        let complete = if p.samples == 0 {
            0.0
        } else {
            p.complete_samples as f64 / p.samples as f64
        };
        s.push_str(&format!(
            "{},{},{:.6},{},{},{complete:.4}\n",
            p.pid,
            summary::csv_field(&p.name),
            p.cpu_ns as f64 / 1e9,
            p.cpu_source.name(),
            p.samples
        ));
    }
    s
}

fn report(
    cfg: &Config,
    app: &AppProfile,
    processes: &[ProcessResult],
    rows: &[TaskRow],
    rec: &Recording,
    svg: &str,
) -> String {
    let target = match &cfg.target {
        Target::Pids(p) => format!(
            "pids {}",
            p.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")
        ),
        Target::Command(c) => c.join(" "),
    };
    let samples: u64 = processes.iter().map(|p| p.samples).sum();
    let complete: u64 = processes.iter().map(|p| p.complete_samples).sum();
    let settings = vec![
        ("profiled", target),
        ("application profile", app.source.clone()),
        (
            "sampling",
            format!(
                "perf record -e cpu-clock -F {} --call-graph {}",
                cfg.frequency,
                cfg.call_graph.arg()
            ),
        ),
        (
            "recorded",
            format!(
                "{:.1} s{}",
                rec.elapsed.as_secs_f64(),
                if rec.stopped {
                    " (stopped by --duration or Ctrl-C)"
                } else {
                    ""
                }
            ),
        ),
        (
            "samples",
            format!(
                "{samples} ({:.1} % with a complete stack)",
                100.0 * complete as f64 / samples.max(1) as f64
            ),
        ),
        (
            "events",
            cfg.events
                .map_or("not given (--events N)".into(), |e| e.to_string()),
        ),
    ];
    let sections: Vec<html::ProcessSection<'_>> = processes
        .iter()
        .map(|p| html::ProcessSection {
            title: format!("pid {} ({})", p.pid, p.name),
            cpu: (p.cpu_ns as f64 / 1e9, p.cpu_source.name()),
            samples: (p.samples, p.complete_samples),
            rows: &p.rows,
        })
        .collect();
    html::page(&settings, rows, &sections, svg)
}

fn interrupted_error() -> RunError {
    fail(
        Failure::Interrupted,
        "interrupted (Ctrl-C): no profile written",
    )
}

/// `DIR.partial` next to `DIR`.
pub fn partial_of(dir: &Path) -> PathBuf {
    let mut name = dir
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_else(|| "profile".into());
    name.push(".partial");
    dir.with_file_name(name)
}

/// `profile-YYYYMMDDTHHMMSSZ` (UTC) in the current directory.
pub fn default_dir() -> PathBuf {
    let t = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
    PathBuf::from(format!("profile-{}", t.replace(['-', ':'], "")))
}

/// A name safe in a file name: letters, digits, `-`, `_`, `.`; others become `_`.
fn safe_name(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Most sampled first, then by pid and stack (a stable order for files).
fn sort_unmatched(v: &mut [(u32, &str, &StackKey, u64)]) {
    v.sort_by(|a, b| b.3.cmp(&a.3).then_with(|| (a.0, a.2).cmp(&(b.0, b.2))));
}
