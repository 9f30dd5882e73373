//! Pinning a run's xorflow processes to a core each (the CPU-efficiency paper's scale-out at equal cores: two
//! "nodes" of one core against one node of two), from outside: the run's process tree is read
//! from `/proc` and every thread of process i is moved to core i with `taskset -a -c -p`.
//!
//! Why from outside: `--processes N` starts the other processes itself, and the profiler sits
//! between this bench and them. Threads started later inherit their creator's affinity, so
//! pinning again every poll during the first [`PIN_FOR`] catches the workers, which start
//! after the processes have connected.

use anyhow::{bail, Context, Result};
use std::collections::BTreeSet;
use std::process::Command;
use std::time::Duration;

/// How long after the start the processes are pinned again at every poll (the generation
/// starts about 2 s after the start: `bench ysb`'s default start).
pub const PIN_FOR: Duration = Duration::from_secs(4);

/// The processes pinned so far.
#[derive(Default)]
pub struct Pinned(BTreeSet<u32>);

impl Pinned {
    /// Pins the `bench ysb` processes under `root` (in pid order: process 0 first, since it
    /// starts the others) to cores 0, 1, ... (modulo the cores there are).
    ///
    /// # Errors
    /// `taskset` is missing or refuses.
    pub fn pin_ysb_processes(&mut self, root: u32, expected: usize) -> Result<()> {
        let pids = ysb_descendants(root);
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        for (i, &pid) in pids.iter().take(expected).enumerate() {
            let out = Command::new("taskset")
                .args(["-a", "-c", "-p", &(i % cores).to_string(), &pid.to_string()])
                .output()
                .context("cannot run taskset (util-linux)")?;
            // A process that just exited cannot be pinned; anything else is an error.
            if !out.status.success() && std::path::Path::new(&format!("/proc/{pid}")).exists() {
                bail!(
                    "taskset refused to pin process {pid}: {}",
                    String::from_utf8_lossy(&out.stderr).trim()
                );
            }
            self.0.insert(pid);
        }
        Ok(())
    }

    /// Whether `n` processes were pinned.
    pub fn complete(&self, n: usize) -> bool {
        self.0.len() >= n
    }

    /// The pids pinned.
    pub fn pids(&self) -> Vec<u32> {
        self.0.iter().copied().collect()
    }
}

/// Descendants of `root` (itself included) whose command line has `bench ysb`, in pid order.
pub fn ysb_descendants(root: u32) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut parent = std::collections::HashMap::new();
    for e in dir.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        if let Some(pp) = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|s| ppid_of(&s))
        {
            parent.insert(pid, pp);
        }
    }
    let under = |mut p: u32| {
        for _ in 0..64 {
            if p == root {
                return true;
            }
            match parent.get(&p) {
                Some(&pp) if pp != 0 => p = pp,
                _ => return false,
            }
        }
        false
    };
    let mut pids: Vec<u32> = parent
        .keys()
        .copied()
        .filter(|&p| under(p) && is_ysb_bench(p))
        .collect();
    pids.sort_unstable();
    pids
}

/// The parent pid in a `/proc/PID/stat` line (after the parenthesised command name, which may
/// hold spaces and parentheses itself).
pub fn ppid_of(stat: &str) -> Option<u32> {
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(1)?.parse().ok()
}

fn is_ysb_bench(pid: u32) -> bool {
    let Ok(c) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
        return false;
    };
    let args: Vec<&[u8]> = c.split(|&b| b == 0).collect();
    args.windows(2).any(|w| w[0] == b"bench" && w[1] == b"ysb")
        && !args.iter().any(|a| *a == b"profile")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parent_pid_is_read_past_a_command_name_with_spaces() {
        assert_eq!(ppid_of("123 (a b) c) S 77 123 123 0"), Some(77));
        assert_eq!(ppid_of("garbage"), None);
    }

    #[test]
    fn pins_a_process_with_bench_ysb_in_its_command_line_to_core_zero() {
        // A real process whose command line holds "bench ysb" (sh's $0 and $1).
        let mut child = Command::new("sh")
            .args(["-c", "sleep 5; true", "bench", "ysb"])
            .spawn()
            .unwrap();
        // Until the child has exec'd sh, its command line is still this test's.
        let t0 = std::time::Instant::now();
        while !is_ysb_bench(child.id()) && t0.elapsed() < std::time::Duration::from_secs(5) {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert_eq!(ysb_descendants(child.id()), vec![child.id()]);
        let mut p = Pinned::default();
        p.pin_ysb_processes(child.id(), 1).unwrap();
        assert!(p.complete(1) && !p.complete(2));
        let status = std::fs::read_to_string(format!("/proc/{}/status", child.id())).unwrap();
        let _ = child.kill();
        let _ = child.wait();
        let allowed = status
            .lines()
            .find(|l| l.starts_with("Cpus_allowed_list"))
            .unwrap();
        assert!(allowed.ends_with("\t0"), "{allowed}");
    }
}
