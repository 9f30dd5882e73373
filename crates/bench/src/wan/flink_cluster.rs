//! `bench wan --network netns` for Flink: a standalone Flink cluster whose JobManager and
//! TaskManagers are JVMs of their own, one TaskManager per network namespace behind
//! `xorflow-lab delay-router` (`super::netns`). Every packet between them crosses its pair's delay:
//! records, credits and watermarks between TaskManagers, the RPC and heartbeats between the
//! JobManager and the TaskManagers, and the kernel's TCP, per pair, so the city sets apply to
//! Flink as to xorflow (docs/wan.md, "A standalone Flink cluster in namespaces").
//!
//! The JobManager sits in namespace 0 with TaskManager 0, as xorflow's process 0 (the
//! coordinator sits with the first city); the YSB client (`YsbJob --cluster`) runs there too
//! and submits the job to the JobManager's REST port once every TaskManager registered.

use super::jvm::node_command;
use super::netns::Router;
use anyhow::{Context, Result};
use std::path::Path;
use std::process::Child;

/// The JobManager's REST port (in namespace 0).
pub const REST_PORT: u16 = 8081;

/// Heap of each TaskManager JVM (its task heap and framework heap below sum to 512 MiB).
const TASK_MANAGER_HEAP: &str = "768m";
/// Heap of the JobManager JVM.
const JOB_MANAGER_HEAP: &str = "512m";

/// A running standalone cluster; its JVMs are killed when dropped.
pub struct FlinkCluster {
    /// (name, process) of the JobManager and each TaskManager.
    nodes: Vec<(String, Child)>,
}

impl FlinkCluster {
    /// Starts a JobManager in namespace 0 and a TaskManager with `slots` slots in each of the
    /// router's first `task_managers` namespaces, with `java` (the peer's command,
    /// `peers/flink`, whose classpath holds Flink's runtime); configuration in
    /// `dir/flink-conf/`, each JVM's output in `dir/<node>.out` and `.err`.
    ///
    /// # Errors
    /// The configuration cannot be written or a JVM cannot start.
    pub fn start(
        router: &Router,
        java: &[String],
        task_managers: usize,
        slots: usize,
        dir: &Path,
    ) -> Result<FlinkCluster> {
        let conf = dir.join("flink-conf");
        std::fs::create_dir_all(&conf)
            .with_context(|| format!("cannot create '{}'", conf.display()))?;
        crate::stand::files::write_whole(&conf.join("config.yaml"), config(slots).as_bytes())?;
        let conf = conf.display().to_string();
        let mut cluster = FlinkCluster { nodes: Vec::new() };
        let jm = node_command(
            java,
            JOB_MANAGER_HEAP,
            &[],
            "org.apache.flink.runtime.entrypoint.StandaloneSessionClusterEntrypoint",
            &["--configDir".into(), conf.clone()],
        );
        let child = router.spawn(0, &jm[0], &jm[1..], dir, "jobmanager")?;
        cluster.nodes.push(("jobmanager".into(), child));
        for i in 0..task_managers {
            let tm = node_command(
                java,
                TASK_MANAGER_HEAP,
                &[],
                "org.apache.flink.runtime.taskexecutor.TaskManagerRunner",
                &[
                    "--configDir".into(),
                    conf.clone(),
                    "-D".into(),
                    format!("taskmanager.host={}", Router::address(i)),
                ],
            );
            let name = format!("taskmanager-{i}");
            let child = router.spawn(i, &tm[0], &tm[1..], dir, &name)?;
            cluster.nodes.push((name, child));
        }
        Ok(cluster)
    }

    /// The JobManager's REST address, `HOST:PORT` (`YsbJob --cluster`).
    pub fn rest_address() -> String {
        format!("{}:{REST_PORT}", Router::address(0))
    }
}

impl super::jvm::PeerCluster for FlinkCluster {
    fn exited(&mut self) -> Vec<String> {
        super::jvm::exited(&mut self.nodes)
    }
}

impl Drop for FlinkCluster {
    fn drop(&mut self) {
        for (_, c) in &mut self.nodes {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// The cluster's `config.yaml`. A JVM started without Flink's scripts gets no memory sizes
/// computed for it, so every TaskManager memory component is given (they sum to 1,024 MiB of
/// process memory); Flink's defaults otherwise (100 ms buffer timeout, 2 exclusive + 8 floating
/// network buffers of 32 KiB per channel, heartbeats every 10 s).
fn config(slots: usize) -> String {
    format!(
        "jobmanager.rpc.address: {jm}\n\
         jobmanager.bind-host: 0.0.0.0\n\
         jobmanager.memory.process.size: 1024m\n\
         rest.address: {jm}\n\
         rest.bind-address: 0.0.0.0\n\
         rest.port: {REST_PORT}\n\
         taskmanager.bind-host: 0.0.0.0\n\
         taskmanager.numberOfTaskSlots: {slots}\n\
         taskmanager.cpu.cores: {slots}\n\
         taskmanager.memory.framework.heap.size: 128m\n\
         taskmanager.memory.framework.off-heap.size: 128m\n\
         taskmanager.memory.task.heap.size: 384m\n\
         taskmanager.memory.task.off-heap.size: 0m\n\
         taskmanager.memory.network.min: 64m\n\
         taskmanager.memory.network.max: 64m\n\
         taskmanager.memory.managed.size: 64m\n\
         taskmanager.memory.jvm-metaspace.size: 256m\n\
         taskmanager.memory.jvm-overhead.min: 192m\n\
         taskmanager.memory.jvm-overhead.max: 192m\n",
        jm = Router::address(0)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_configuration_puts_the_job_manager_in_namespace_0() {
        let c = config(2);
        assert!(c.contains("jobmanager.rpc.address: 10.78.0.1\n"), "{c}");
        assert!(c.contains("taskmanager.numberOfTaskSlots: 2\n"), "{c}");
    }
}
