//! Running one [`RunSpec`]: the engine's YSB command, under `xorflow-lab profile` when the spec
//! says so (the CPU-efficiency paper's sampler, crates/profile), with its processes pinned when asked; and what
//! it measured: the engine's result and the CPU of each task.

use super::pin;
use super::spec::{Pin, RunSpec};
use crate::ysb::{Engine, Engines};
use anyhow::{bail, Context, Result};
use serde::Serialize;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use xorflow_runtime::ValueName;
use xorflow_ysb::bench::BenchResult;

/// The JVM options that make JIT-compiled frames resolvable by perf (docs/profile.md, "JVM
/// peers"): frame pointers kept, and the perf map written at exit. The JVM peers get them
/// in plain runs too, so that the overhead experiment compares like with like.
pub const JVM_PERF_FLAGS: [&str; 3] = [
    "-XX:+PreserveFramePointer",
    "-XX:+UnlockDiagnosticVMOptions",
    "-XX:+DumpPerfMapAtExit",
];

/// Tasks that only start a process (JVM class loading and start-up code, xorflow's setup):
/// left out of the CPU per event, which is about the steady work (shown apart in REPORT.md).
pub const STARTUP_TASKS: [&str; 2] = ["setup", "class loading"];

/// One task's CPU in a profiled run (a row of the profiler's cluster `summary.csv`).
#[derive(Clone, Debug, Serialize)]
pub struct TaskCpu {
    /// Task name (the application profile's, or "other").
    pub task: String,
    /// Stacks sampled in it.
    pub samples: u64,
    /// Its share of all samples, 0-1.
    pub share: f64,
    /// Its CPU seconds: share x the processes' CPU time.
    pub cpu_s: f64,
}

/// A finished run.
#[derive(Clone, Debug, Serialize)]
pub struct Measured {
    /// Its folder name under `runs/`.
    pub id: String,
    /// What ran.
    pub spec: RunSpec,
    /// The engine's YSB result (`peers/ysb-contract.md`).
    pub result: BenchResult,
    /// CPU by task (empty for a run without the profiler).
    pub tasks: Vec<TaskCpu>,
    /// Wall time from start to exit, s (the profiler's stack resolution included).
    pub wall_s: f64,
}

impl Measured {
    /// CPU seconds of the steady work: every task but [`STARTUP_TASKS`].
    pub fn steady_cpu_s(&self) -> f64 {
        self.tasks
            .iter()
            .filter(|t| !STARTUP_TASKS.contains(&t.task.as_str()))
            .map(|t| t.cpu_s)
            .sum()
    }

    /// CPU ns per emitted event of `task` (0 when it was not seen).
    pub fn ns_per_event(&self, task: &str) -> f64 {
        let cpu: f64 = self
            .tasks
            .iter()
            .filter(|t| t.task == task)
            .map(|t| t.cpu_s)
            .sum();
        cpu * 1e9 / self.result.events_emitted.max(1) as f64
    }

    /// Steady CPU ns per emitted event, all tasks but start-up.
    pub fn steady_ns_per_event(&self) -> f64 {
        self.steady_cpu_s() * 1e9 / self.result.events_emitted.max(1) as f64
    }

    /// `task`'s share of the steady CPU, 0-1.
    pub fn steady_share(&self, task: &str) -> f64 {
        let all = self.steady_cpu_s();
        if all <= 0.0 || STARTUP_TASKS.contains(&task) {
            return 0.0;
        }
        self.tasks
            .iter()
            .filter(|t| t.task == task)
            .map(|t| t.cpu_s)
            .sum::<f64>()
            / all
    }
}

/// How the runs are made: this binary (for `xorflow-lab profile`), the engines per table size,
/// and the profiler's unwinding per engine.
pub struct Runner {
    /// This binary.
    pub xorflow: PathBuf,
    /// Engines (their inputs) by campaigns.
    pub engines: std::collections::BTreeMap<usize, Engines>,
    /// Where the runs' folders go (`<results>/runs`).
    pub runs_dir: PathBuf,
}

impl Runner {
    /// Runs `spec` as run number `index`, in `runs/<id>/` (stdout, stderr, counts and the
    /// profile's folder).
    ///
    /// # Errors
    /// The engine is missing or fails, the run outlives its time limit (killed, with every
    /// process it started), or its result or profile cannot be read.
    pub fn run(&self, spec: &RunSpec, index: usize) -> Result<Measured> {
        let id = spec.id(index);
        let dir = self.runs_dir.join(&id);
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("cannot create '{}'", dir.display()))?;
        let engines = self
            .engines
            .get(&spec.campaigns)
            .with_context(|| format!("no inputs with {} campaigns", spec.campaigns))?;
        let counts = dir.join("counts.csv");
        let (exe, mut args) =
            engines.command(spec.engine, spec.point, &counts, &spec.xorflow_args)?;
        if spec.engine != Engine::Xorflow {
            args.splice(0..0, JVM_PERF_FLAGS.map(String::from));
        }
        let profile_dir = dir.join("profile");
        let (exe, args) = if spec.profiled {
            (
                self.xorflow.display().to_string(),
                profiler_args(spec.engine, &profile_dir, exe, args),
            )
        } else {
            (exe, args)
        };
        let t0 = Instant::now();
        let stdout = run_logged(&exe, &args, &dir, spec)?;
        let wall_s = t0.elapsed().as_secs_f64();
        let result = engines
            .result_of(spec.engine, spec.point, &counts, &stdout)
            .with_context(|| format!("run {id} (see '{}')", dir.display()))?;
        let tasks = if spec.profiled {
            read_summary(&profile_dir.join("summary.csv"))?
        } else {
            Vec::new()
        };
        Ok(Measured {
            id,
            spec: spec.clone(),
            result,
            tasks,
            wall_s,
        })
    }
}

/// `xorflow-lab profile` around `exe args`: dwarf unwinding with inlined frames for xorflow (most
/// of an operator's code is inlined), frame pointers without inline resolution for the JVMs
/// (their compiled frames come from the perf map; docs/profile.md).
fn profiler_args(engine: Engine, out: &Path, exe: String, args: Vec<String>) -> Vec<String> {
    let mut a: Vec<String> = ["profile", "--out"].map(String::from).to_vec();
    a.push(out.display().to_string());
    a.extend(["--profile".into(), engine.name().into()]);
    if engine == Engine::Xorflow {
        a.extend(["--call-graph".into(), "dwarf".into()]);
    } else {
        a.extend(["--call-graph".into(), "fp".into(), "--no-inline".into()]);
    }
    a.push("--".into());
    a.push(exe);
    a.extend(args);
    a
}

/// Runs `exe args` in a process group of its own with stdout and stderr into `dir`, pinning
/// its processes as `spec` asks; returns its stdout.
///
/// # Errors
/// It cannot start, fails (naming its stderr file), or outlives the generation plus 5 minutes
/// (the profiler's stack resolution takes minutes at high rates), when its whole group is
/// killed.
fn run_logged(exe: &str, args: &[String], dir: &Path, spec: &RunSpec) -> Result<String> {
    let (out_path, err_path) = (dir.join("stdout.txt"), dir.join("stderr.txt"));
    let file = |p: &Path| {
        std::fs::File::create(p).with_context(|| format!("cannot create '{}'", p.display()))
    };
    std::fs::write(
        dir.join("command.txt"),
        format!("{exe} {}\n", args.join(" ")),
    )?;
    let mut child = Command::new(exe)
        .args(args)
        .stdin(Stdio::null())
        .stdout(file(&out_path)?)
        .stderr(file(&err_path)?)
        .process_group(0)
        .spawn()
        .with_context(|| format!("cannot start `{exe}`"))?;
    let limit = Duration::from_secs(spec.point.duration_s + 300);
    let t0 = Instant::now();
    let mut pinned = pin::Pinned::default();
    let status = loop {
        if let Some(st) = child.try_wait()? {
            break st;
        }
        if spec.pin == Pin::CorePerProcess && t0.elapsed() < pin::PIN_FOR {
            pinned.pin_ysb_processes(child.id(), spec.point.processes)?;
        }
        if t0.elapsed() > limit {
            // SAFETY: a signal to the process group of our own child, not yet waited for.
            unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
            let _ = child.wait();
            bail!(
                "`{exe}` ran past {limit:?} and was killed with its processes (stderr: '{}')",
                err_path.display()
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    if spec.pin == Pin::CorePerProcess && !pinned.complete(spec.point.processes) {
        bail!(
            "could not pin the run's {} processes to a core each (found {:?})",
            spec.point.processes,
            pinned.pids()
        );
    }
    if !status.success() {
        bail!(
            "`{exe}` failed ({status}); its messages are in '{}'",
            err_path.display()
        );
    }
    std::fs::read_to_string(&out_path)
        .with_context(|| format!("cannot read '{}'", out_path.display()))
}

/// The profiler's cluster `summary.csv` (`task,samples,share,cpu_s,cpu_ns_per_event`).
///
/// # Errors
/// The file is missing or a row is malformed (naming the file).
pub fn read_summary(path: &Path) -> Result<Vec<TaskCpu>> {
    let mut r = csv::Reader::from_path(path)
        .with_context(|| format!("cannot read '{}'", path.display()))?;
    let mut tasks = Vec::new();
    for row in r.records() {
        let row = row.with_context(|| format!("'{}': bad row", path.display()))?;
        let num = |i: usize| -> Result<f64> {
            row.get(i)
                .and_then(|v| v.parse().ok())
                .with_context(|| format!("'{}': bad number in {row:?}", path.display()))
        };
        tasks.push(TaskCpu {
            task: row.get(0).unwrap_or_default().to_string(),
            samples: num(1)? as u64,
            share: num(2)?,
            cpu_s: num(3)?,
        });
    }
    Ok(tasks)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_rows_are_read_and_bad_ones_named() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("summary.csv");
        std::fs::write(
            &p,
            "task,samples,share,cpu_s,cpu_ns_per_event\nwindow,30,0.300000,0.600000,\n\
             \"a, b\",70,0.700000,1.400000,12.5\n",
        )
        .unwrap();
        let t = read_summary(&p).unwrap();
        assert_eq!(t.len(), 2);
        assert_eq!((t[1].task.as_str(), t[1].samples), ("a, b", 70));
        assert!((t[0].cpu_s - 0.6).abs() < 1e-12);
        std::fs::write(
            &p,
            "task,samples,share,cpu_s,cpu_ns_per_event\nx,many,0.1,0.1,\n",
        )
        .unwrap();
        let e = read_summary(&p).unwrap_err().to_string();
        assert!(e.contains("summary.csv") && e.contains("bad number"), "{e}");
        assert!(read_summary(&d.path().join("none.csv")).is_err());
    }

    #[test]
    fn cpu_per_event_leaves_start_up_out() {
        let m = Measured {
            id: "x".into(),
            spec: RunSpec {
                experiment: super::super::spec::Experiment::Load,
                engine: Engine::Flink,
                point: crate::ysb::Point {
                    rate: 1000,
                    duration_s: 20,
                    processes: 1,
                    workers: 2,
                    sources: 2,
                },
                label: String::new(),
                xorflow_args: vec![],
                pin: Pin::Free,
                campaigns: 100,
                profiled: true,
                rep: 0,
            },
            result: serde_json::from_value(serde_json::json!({
                "engine": "flink", "rate": 1000, "duration_s": 20, "sources": 2, "workers": 2,
                "processes": 1, "start_ms": 0, "events_expected": 20000, "events_emitted": 20000,
                "views_counted": 0, "windows": 0, "generator_lag_ms_max": 0.0,
                "throughput_events_per_s": 1000.0,
                "window_latency_ms": {"p50": 0.0, "p90": 0.0, "p99": 0.0, "max": 0.0, "count": 0},
                "updated_latency_ms": {"p50": 0.0, "p90": 0.0, "p99": 0.0, "max": 0.0, "count": 0},
                "prewindow_latency_ms": {"p50": 0.0, "p90": 0.0, "p99": 0.0, "max": 0.0, "count": 0}
            }))
            .unwrap(),
            tasks: vec![
                TaskCpu {
                    task: "class loading".into(),
                    samples: 10,
                    share: 0.5,
                    cpu_s: 1.0,
                },
                TaskCpu {
                    task: "window".into(),
                    samples: 10,
                    share: 0.5,
                    cpu_s: 0.02,
                },
            ],
            wall_s: 1.0,
        };
        assert!((m.steady_ns_per_event() - 1000.0).abs() < 1e-9);
        assert!((m.ns_per_event("class loading") - 50_000.0).abs() < 1e-9);
        assert!((m.steady_share("window") - 1.0).abs() < 1e-12);
        assert_eq!(m.steady_share("class loading"), 0.0);
    }
}
