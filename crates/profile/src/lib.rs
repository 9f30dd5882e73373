//! The CPU-efficiency paper's task-level CPU profiler (`xorflow-lab profile`, docs/profile.md): stacks sampled
//! with `perf record -e cpu-clock` at 99 Hz, each mapped to a streaming task by an application
//! profile (ordered keyword -> task rules, matched from the leaf frame up), and each task's CPU
//! = its share of a process's samples x the process's CPU time (the CPU-efficiency paper, section 3.3,
//! Algorithm 1; docs/papers.md).
//!
//! * [`profile`]: the application profile and the matching;
//! * [`perf`]: the perf commands; [`record`]: one recording; [`control`]: perf's control FIFOs;
//! * [`stacks`]: `perf script` text -> samples; [`collect`]: samples per process and task;
//! * [`cpu`]: process CPU time; [`summary`]: CPU per task and per event;
//! * [`folded`], [`flame`], [`html`]: the output files; [`run`]: all of it, into a folder.

pub mod collect;
pub mod control;
pub mod cpu;
pub mod flame;
pub mod folded;
pub mod html;
pub mod perf;
pub mod profile;
pub mod record;
pub mod run;
pub mod stacks;
pub mod summary;
