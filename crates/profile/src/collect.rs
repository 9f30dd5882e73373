//! Samples gathered per process: identical stacks counted once, and each distinct stack mapped
//! to its task by the application profile (the CPU-efficiency paper, Algorithm 1, lines 7-20).

use crate::profile::{AppProfile, FrameRef, OTHER};
use crate::stacks::{is_complete, Frame, Record, Sample};
use std::collections::{BTreeMap, HashMap};

/// A distinct stack of one process: its thread name and frames (leaf first).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StackKey {
    /// The thread's name.
    pub thread: String,
    /// Frames, leaf first.
    pub frames: Vec<Frame>,
}

/// How often a stack was sampled.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Samples.
    pub samples: u64,
    /// Sum of their periods: ns of CPU for `cpu-clock`.
    pub period: u64,
}

/// Everything sampled in one process.
#[derive(Clone, Debug, Default)]
pub struct ProcessStacks {
    /// Process id.
    pub pid: u32,
    /// Distinct stacks and their counts.
    pub stacks: HashMap<StackKey, Counts>,
    /// Per thread id: its name and its samples' counts.
    pub threads: BTreeMap<u32, (String, Counts)>,
    /// Samples whose stack reached a thread entry ([`is_complete`]).
    pub complete_samples: u64,
    /// The program it exec'd last, when perf saw the exec.
    pub exec_name: Option<String>,
}

impl ProcessStacks {
    /// All samples of the process.
    pub fn samples(&self) -> u64 {
        self.threads.values().map(|(_, c)| c.samples).sum()
    }

    /// The process's name: the program it exec'd, else its main thread's (tid = pid) when
    /// sampled, else its most sampled thread's; `fallback` when nothing was sampled.
    pub fn name(&self, fallback: &str) -> String {
        if let Some(n) = &self.exec_name {
            return n.clone();
        }
        if let Some((comm, _)) = self.threads.get(&self.pid) {
            return comm.clone();
        }
        self.threads
            .values()
            .max_by_key(|(_, c)| c.samples)
            .map_or_else(|| fallback.to_string(), |(comm, _)| comm.clone())
    }

    /// Each distinct stack with its task (`None`: unmatched) and samples.
    pub fn classified<'a>(
        &'a self,
        profile: &'a AppProfile,
    ) -> Vec<(&'a StackKey, Option<&'a str>, u64)> {
        self.stacks
            .iter()
            .map(|(key, c)| {
                let refs: Vec<FrameRef<'_>> = key
                    .frames
                    .iter()
                    .map(|f| FrameRef {
                        function: &f.function,
                        module: &f.module,
                    })
                    .collect();
                (key, profile.classify(&refs, &key.thread), c.samples)
            })
            .collect()
    }

    /// Samples per task name (every task of `profile` present, [`OTHER`] included), and the
    /// unmatched stacks with their counts.
    pub fn classify(&self, profile: &AppProfile) -> (BTreeMap<String, u64>, Vec<(StackKey, u64)>) {
        let mut by_task: BTreeMap<String, u64> =
            profile.tasks().into_iter().map(|t| (t, 0)).collect();
        let mut unmatched = Vec::new();
        for (key, task, n) in self.classified(profile) {
            *by_task
                .entry(task.unwrap_or(OTHER).to_string())
                .or_insert(0) += n;
            if task.is_none() {
                unmatched.push((key.clone(), n));
            }
        }
        (by_task, unmatched)
    }
}

/// Samples of every process, by pid.
#[derive(Clone, Debug, Default)]
pub struct Collected {
    /// Per process.
    pub processes: BTreeMap<u32, ProcessStacks>,
}

impl Collected {
    fn process(&mut self, pid: u32) -> &mut ProcessStacks {
        self.processes.entry(pid).or_insert_with(|| ProcessStacks {
            pid,
            ..ProcessStacks::default()
        })
    }

    /// Adds one record: a sample, or an exec that names its process.
    pub fn add(&mut self, r: Record) {
        match r {
            Record::Sample(s) => self.add_sample(s),
            Record::Exec { pid, name } => self.process(pid).exec_name = Some(name),
        }
    }

    /// Adds one sample.
    pub fn add_sample(&mut self, s: Sample) {
        let p = self.process(s.pid);
        if is_complete(&s.frames) {
            p.complete_samples += 1;
        }
        let t = p
            .threads
            .entry(s.tid)
            .or_insert_with(|| (s.comm.clone(), Counts::default()));
        // A thread renamed after its start keeps the name of its first sample.
        t.1.samples += 1;
        t.1.period += s.period;
        let c = p
            .stacks
            .entry(StackKey {
                thread: s.comm,
                frames: s.frames,
            })
            .or_default();
        c.samples += 1;
        c.period += s.period;
    }

    /// Samples of every process.
    pub fn samples(&self) -> u64 {
        self.processes.values().map(ProcessStacks::samples).sum()
    }
}
