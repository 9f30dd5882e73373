//! Process CPU time: `/proc/PID/stat` for attached processes, and perf's own per-thread
//! `cpu-clock` counts for the processes of a command (the CPU-efficiency paper reads PMC cycles per process;
//! this machine has no hardware counters, so CPU time stands in for cycles).

use std::collections::BTreeMap;

/// A process as `/proc/PID/stat` shows it.
#[derive(Clone, Debug, PartialEq)]
pub struct ProcStat {
    /// The process's name (`comm`, at most 15 bytes).
    pub comm: String,
    /// User + system CPU time of all its threads so far, ns (tick resolution: 10 ms at 100 Hz).
    pub cpu_ns: u64,
}

/// Why a process could not be read.
#[derive(Debug, thiserror::Error)]
pub enum CpuError {
    /// No such process (or it is gone).
    #[error("no process with pid {0} (/proc/{0}/stat does not exist)")]
    NoSuchProcess(u32),
    /// The file exists but cannot be read or parsed.
    #[error("cannot read /proc/{pid}/stat: {message}")]
    Unreadable {
        /// The process.
        pid: u32,
        /// Why.
        message: String,
    },
}

/// Reads process `pid`'s name and CPU time.
///
/// # Errors
/// [`CpuError::NoSuchProcess`], or [`CpuError::Unreadable`] for a file that does not parse.
pub fn read(pid: u32) -> Result<ProcStat, CpuError> {
    let path = format!("/proc/{pid}/stat");
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(CpuError::NoSuchProcess(pid))
        }
        Err(e) => {
            return Err(CpuError::Unreadable {
                pid,
                message: e.to_string(),
            })
        }
    };
    parse_stat(&text, ticks_per_s()).ok_or_else(|| CpuError::Unreadable {
        pid,
        message: "unexpected format".into(),
    })
}

/// Parses a `/proc/PID/stat` line: `PID (COMM) STATE ...`, utime and stime the 14th and 15th
/// fields, in clock ticks (`ticks_per_s` of them a second). COMM may hold spaces and
/// parentheses, so the fields are counted after the last `)`.
pub fn parse_stat(text: &str, ticks_per_s: u64) -> Option<ProcStat> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let comm = text.get(open + 1..close)?.to_string();
    let fields: Vec<&str> = text.get(close + 1..)?.split_whitespace().collect();
    // fields[0] is field 3 (state): utime is field 14, stime field 15.
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    let ticks = utime.checked_add(stime)?;
    Some(ProcStat {
        comm,
        cpu_ns: ticks.saturating_mul(1_000_000_000) / ticks_per_s.max(1),
    })
}

/// Clock ticks per second (`sysconf(_SC_CLK_TCK)`, 100 on Linux).
pub fn ticks_per_s() -> u64 {
    // SAFETY: sysconf reads a constant; no memory is passed.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 {
        t as u64
    } else {
        100
    }
}

/// Where a process's CPU time came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CpuSource {
    /// `/proc/PID/stat` at the start and the end (attached processes).
    Proc,
    /// perf's per-thread `cpu-clock` counts (`perf record -s`, read as each thread exits).
    PerfCounts,
    /// perf's counts for the threads that have one, sample periods for the others (the
    /// command's main thread: perf keeps no count for it).
    Mixed,
    /// The sum of the samples' periods (samples / frequency): the fallback.
    Samples,
}

impl CpuSource {
    /// The name written in `processes.csv`.
    pub fn name(self) -> &'static str {
        match self {
            CpuSource::Proc => "proc-stat",
            CpuSource::PerfCounts => "perf-thread-counts",
            CpuSource::Mixed => "perf-thread-counts+sample-periods",
            CpuSource::Samples => "sample-periods",
        }
    }
}

/// Parses `perf report -T`'s per-thread table (`#  PID  TID  cpu-clock` then one row per
/// thread) into CPU ns per (pid, tid). Rows before the table's header are ignored; `None` when
/// there is no table. perf has a row for each thread it followed from its start to its exit,
/// but none for the command's own main thread nor for threads still running at the end.
pub fn parse_thread_counts(report: &str) -> Option<BTreeMap<(u32, u32), u64>> {
    let mut lines = report.lines();
    lines.find(|l| {
        let w: Vec<&str> = l.trim_start_matches('#').split_whitespace().collect();
        w.len() >= 3 && w[0] == "PID" && w[1] == "TID"
    })?;
    let mut counts = BTreeMap::new();
    for l in lines {
        let w: Vec<&str> = l.split_whitespace().collect();
        let [pid, tid, count, ..] = w[..] else {
            continue;
        };
        let (Ok(pid), Ok(tid), Ok(count)) = (pid.parse(), tid.parse(), count.parse::<u64>()) else {
            continue;
        };
        *counts.entry((pid, tid)).or_insert(0) += count;
    }
    Some(counts)
}

/// A command's process's CPU time: per thread perf's count (`counts`, by (pid, tid)) where it
/// has one, else the sum of that thread's sample periods (`sampled`: tid -> ns). Returns the
/// ns and the source: [`CpuSource::PerfCounts`] when every sampled thread had a count,
/// [`CpuSource::Mixed`] when some did, [`CpuSource::Samples`] when none did.
pub fn command_process_cpu(
    pid: u32,
    counts: &BTreeMap<(u32, u32), u64>,
    sampled: &BTreeMap<u32, u64>,
) -> (u64, CpuSource) {
    let mine = || counts.range((pid, 0)..=(pid, u32::MAX));
    let mut ns: u64 = mine().map(|(_, &c)| c).sum();
    let mut estimated = 0usize;
    for (&tid, &period) in sampled {
        if !counts.contains_key(&(pid, tid)) {
            ns += period;
            estimated += 1;
        }
    }
    let source = match (mine().next().is_some(), estimated) {
        (true, 0) => CpuSource::PerfCounts,
        (true, _) => CpuSource::Mixed,
        (false, _) => CpuSource::Samples,
    };
    (ns, source)
}

#[cfg(test)]
mod tests;
