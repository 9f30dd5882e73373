//! Where things run: which processes run workers, which host tracker shards only, and which
//! process hosts each shard (docs/design.md, "Processes, shards and markers").

use crate::config::RuntimeConfig;
use crate::net::cluster::Resolved;

/// This process's place in the job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Placement {
    /// Processes in the job, tracker processes included.
    pub processes: usize,
    /// Processes `0..worker_processes` run workers; the rest host tracker shards only.
    pub worker_processes: usize,
    /// Dedicated tracker processes (`--tracker-processes`).
    pub tracker_processes: usize,
    /// This process's index.
    pub me: usize,
    /// Worker threads in this process (0 in a tracker process).
    pub local_workers: usize,
}

impl Placement {
    /// The placement of the process `cluster` resolved to, for `config`.
    pub fn new(config: &RuntimeConfig, cluster: &Resolved) -> Self {
        let processes = cluster.processes();
        let tracker_processes = config.cluster.tracker_processes;
        let worker_processes = processes - tracker_processes;
        let me = cluster.process;
        Placement {
            processes,
            worker_processes,
            tracker_processes,
            me,
            local_workers: if me >= worker_processes {
                0
            } else {
                config.workers
            },
        }
    }

    /// True in a dedicated tracker process (no workers).
    pub fn is_tracker_process(&self) -> bool {
        self.me >= self.worker_processes
    }

    /// The process hosting tracker shard `k`.
    pub fn shard_host(&self, k: usize) -> usize {
        shard_host(k, self.worker_processes, self.tracker_processes)
    }
}

/// The process hosting tracker shard `k`: dedicated tracker process `k mod T` after the worker
/// processes, or worker process `k mod N` without tracker processes.
pub(crate) fn shard_host(k: usize, worker_processes: usize, tracker_processes: usize) -> usize {
    if tracker_processes > 0 {
        worker_processes + k % tracker_processes
    } else {
        k % worker_processes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::link::Wiring;

    #[test]
    fn shards_go_to_tracker_processes_when_there_are_any() {
        // 3 worker processes, no tracker processes: shard k in process k mod 3.
        let hosts: Vec<usize> = (0..5).map(|k| shard_host(k, 3, 0)).collect();
        assert_eq!(hosts, vec![0, 1, 2, 0, 1]);
        // 3 worker processes and 2 tracker processes (3 and 4).
        let hosts: Vec<usize> = (0..5).map(|k| shard_host(k, 3, 2)).collect();
        assert_eq!(hosts, vec![3, 4, 3, 4, 3]);
        // A tracker process has no workers of its own.
        let w = Wiring::new(3, 3, 2, vec![None; 5], 4, 4);
        assert_eq!(w.total_workers(), 6);
        assert!(w.local_workers().is_empty());
        assert!((0..6).all(|g| w.local(g).is_none()));
        let w = Wiring::new(1, 3, 2, vec![None; 5], 4, 4);
        assert_eq!(w.local_workers(), 2..4);
        assert_eq!((w.local(1), w.local(3)), (None, Some(1)));
    }
}
