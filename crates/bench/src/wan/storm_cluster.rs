//! `bench wan --network netns` for Storm: a Storm 2.8 cluster whose daemons are JVMs of their
//! own, one supervisor per network namespace behind `xorflow-lab delay-router` (`super::netns`), each
//! launching its worker's JVM there. Every packet between them crosses its pair's delay: tuples
//! between workers (Netty), Nimbus's assignments, ZooKeeper's sessions and heartbeats, and the
//! kernel's TCP, per pair (docs/wan.md, "A Storm cluster in namespaces").
//!
//! ZooKeeper (the one shaded inside Storm) and Nimbus sit in namespace 0 with supervisor 0, as
//! xorflow's process 0 (the coordinator sits with the first city); the YSB client
//! (`YsbTopology --cluster`, `peers/ysb-contract.md`) runs there too. Storm's daemons need a
//! `storm.home` whose `lib-worker` holds the workers' classpath and `log4j2/` their logging
//! configuration; it and the daemons' local folders live in a scratch folder removed afterwards,
//! their logs in the run's folder (`storm-logs/`).

use super::jvm::node_command;
use super::netns::Router;
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::Duration;

/// ZooKeeper's client port (namespace 0).
const ZOOKEEPER_PORT: u16 = 2181;
/// Nimbus's thrift port (namespace 0).
pub const NIMBUS_PORT: u16 = 6627;
/// Each supervisor's thrift port (Nimbus pushes assignments there) and its one worker slot.
const SUPERVISOR_PORT: u16 = 6628;
const SLOT_PORT: u16 = 6700;
/// Heap of each daemon JVM, and of each worker JVM (`worker.childopts`).
const DAEMON_HEAP: &str = "256m";
const WORKER_OPTS: &str = "-Xmx512m -XX:+UseSerialGC --add-opens=java.base/java.lang=ALL-UNNAMED \
    --add-opens=java.base/java.util=ALL-UNNAMED --add-opens=java.base/java.nio=ALL-UNNAMED";
/// How long ZooKeeper may take to listen (the JVM starts on a loaded machine).
const ZOOKEEPER_START: Duration = Duration::from_secs(60);

/// A running cluster; its daemons are killed and its scratch folder removed when dropped (the
/// workers' JVMs, children of the supervisors, are killed by the router with its namespaces).
pub struct StormCluster {
    /// (name, process) of ZooKeeper, Nimbus and each supervisor.
    nodes: Vec<(String, Child)>,
    scratch: PathBuf,
}

impl StormCluster {
    /// Starts ZooKeeper and Nimbus in namespace 0 and a supervisor with one slot in each of the
    /// router's first `supervisors` namespaces, with `java` (the peer's command, `peers/storm`,
    /// whose `-cp` holds Storm's daemons); logs in `dir/storm-logs/`, each JVM's output in
    /// `dir/<node>.out` and `.err`.
    ///
    /// # Errors
    /// A folder or file cannot be made, a JVM cannot start, or ZooKeeper does not listen within
    /// a minute.
    pub fn start(
        router: &Router,
        java: &[String],
        supervisors: usize,
        dir: &Path,
    ) -> Result<StormCluster> {
        let scratch = std::env::temp_dir().join(format!(
            "xorflow-storm-{}-{}",
            std::process::id(),
            dir.file_name().and_then(|n| n.to_str()).unwrap_or("run")
        ));
        let mut cluster = StormCluster {
            nodes: Vec::new(),
            scratch: scratch.clone(),
        };
        let logs = dir.join("storm-logs");
        let home = make_home(java, &scratch, &logs)?;
        let props = |conf: &Path, log: &str| -> Vec<String> {
            vec![
                format!("-Dstorm.home={}", home.display()),
                format!("-Dstorm.conf.file={}", conf.display()),
                format!(
                    "-Dlog4j.configurationFile={}",
                    home.join("log4j2/cluster.xml").display()
                ),
                format!("-Dstorm.log.dir={}", logs.display()),
                format!("-Dlogfile.name={log}.log"),
                "-Dzookeeper.admin.enableServer=false".into(),
            ]
        };
        let zk_data = scratch.join("zookeeper");
        std::fs::create_dir_all(&zk_data)?;
        let zk_conf = write_conf(&scratch, "zookeeper", None)?;
        let zk = node_command(
            java,
            DAEMON_HEAP,
            &props(&zk_conf, "zookeeper"),
            "org.apache.storm.shade.org.apache.zookeeper.server.ZooKeeperServerMain",
            &[ZOOKEEPER_PORT.to_string(), zk_data.display().to_string()],
        );
        cluster.spawn(router, 0, &zk, dir, "zookeeper")?;
        router.wait_listening(0, ZOOKEEPER_PORT, ZOOKEEPER_START)?;
        let nimbus_conf = write_conf(&scratch, "nimbus", None)?;
        let nimbus = node_command(
            java,
            DAEMON_HEAP,
            &props(&nimbus_conf, "nimbus"),
            "org.apache.storm.daemon.nimbus.Nimbus",
            &[],
        );
        cluster.spawn(router, 0, &nimbus, dir, "nimbus")?;
        for i in 0..supervisors {
            let name = format!("supervisor-{i}");
            let conf = write_conf(&scratch, &name, Some(i))?;
            let cmd = node_command(
                java,
                DAEMON_HEAP,
                &props(&conf, &name),
                "org.apache.storm.daemon.supervisor.Supervisor",
                &[],
            );
            cluster.spawn(router, i, &cmd, dir, &name)?;
        }
        Ok(cluster)
    }

    fn spawn(
        &mut self,
        router: &Router,
        i: usize,
        cmd: &[String],
        dir: &Path,
        name: &str,
    ) -> Result<()> {
        let child = router.spawn(i, &cmd[0], &cmd[1..], dir, name)?;
        self.nodes.push((name.into(), child));
        Ok(())
    }

    /// Nimbus's thrift address, `HOST:PORT` (`YsbTopology --cluster`).
    pub fn nimbus_address() -> String {
        format!("{}:{NIMBUS_PORT}", Router::address(0))
    }
}

impl Drop for StormCluster {
    fn drop(&mut self) {
        for (_, c) in self.nodes.iter_mut().rev() {
            let _ = c.kill();
            let _ = c.wait();
        }
        let _ = std::fs::remove_dir_all(&self.scratch);
    }
}

/// The peer's runtime classpath folder: the `*` entry of `java`'s `-cp` (`target/dependency`).
fn dependency_dir(java: &[String]) -> Result<PathBuf> {
    let cp = (java.iter())
        .position(|a| a == "-cp")
        .and_then(|i| java.get(i + 1))
        .context("the Storm peer's java command has no -cp")?;
    match cp.split(':').find_map(|e| e.strip_suffix("/*")) {
        Some(d) => Ok(PathBuf::from(d)),
        None => bail!("the Storm peer's classpath '{cp}' has no folder/* entry"),
    }
}

/// Makes `scratch/home` (storm.home): `lib-worker` linked to the peer's dependencies, the
/// logging configuration of daemons and workers (log files in `logs`).
fn make_home(java: &[String], scratch: &Path, logs: &Path) -> Result<PathBuf> {
    let home = scratch.join("home");
    let log4j = home.join("log4j2");
    for d in [&log4j, &logs.to_path_buf()] {
        std::fs::create_dir_all(d).with_context(|| format!("cannot create '{}'", d.display()))?;
    }
    let deps = std::fs::canonicalize(dependency_dir(java)?)
        .context("the Storm peer's target/dependency (is it built?)")?;
    let link = home.join("lib-worker");
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(&deps, &link)
        .with_context(|| format!("cannot link '{}'", link.display()))?;
    let write = crate::stand::files::write_whole;
    write(
        &log4j.join("cluster.xml"),
        log4j2("${sys:storm.log.dir}/${sys:logfile.name}").as_bytes(),
    )?;
    write(
        &log4j.join("worker.xml"),
        log4j2("${sys:workers.artifacts}/${sys:storm.id}/${sys:worker.port}/${sys:logfile.name}")
            .as_bytes(),
    )?;
    Ok(home)
}

/// A log4j2 configuration with one file appender writing to `file`.
fn log4j2(file: &str) -> String {
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
         <Configuration status=\"warn\">\n  <Appenders>\n    \
         <File name=\"file\" fileName=\"{file}\">\n      \
         <PatternLayout pattern=\"%d{{ISO8601}} %t %c{{1.}} [%p] %m%n\"/>\n    </File>\n  \
         </Appenders>\n  <Loggers>\n    <Root level=\"info\"><AppenderRef ref=\"file\"/></Root>\n  \
         </Loggers>\n</Configuration>\n"
    )
}

/// Writes `scratch/<name>.yaml` (the daemon's `storm.conf.file`) and returns its path.
fn write_conf(scratch: &Path, name: &str, supervisor: Option<usize>) -> Result<PathBuf> {
    let path = scratch.join(format!("{name}.yaml"));
    let text = config(&scratch.join(format!("{name}-local")), supervisor);
    crate::stand::files::write_whole(&path, text.as_bytes())?;
    Ok(path)
}

/// A daemon's configuration: ZooKeeper and Nimbus in namespace 0; a supervisor (host `i`)
/// advertises its namespace's address and offers one slot. Storm's defaults otherwise
/// (`topology.transfer.batch.size`, Netty buffers, no ackers: the topology sets 0).
fn config(local_dir: &Path, supervisor: Option<usize>) -> String {
    let coordinator = Router::address(0);
    let mut s = format!(
        "storm.zookeeper.servers: [\"{coordinator}\"]\n\
         storm.zookeeper.port: {ZOOKEEPER_PORT}\n\
         nimbus.seeds: [\"{coordinator}\"]\n\
         nimbus.thrift.port: {NIMBUS_PORT}\n\
         storm.local.dir: \"{}\"\n",
        local_dir.display()
    );
    let host = Router::address(supervisor.unwrap_or(0));
    s.push_str(&format!("storm.local.hostname: \"{host}\"\n"));
    if supervisor.is_some() {
        s.push_str(&format!(
            "supervisor.slots.ports: [{SLOT_PORT}]\n\
             supervisor.thrift.port: {SUPERVISOR_PORT}\n\
             worker.childopts: \"{WORKER_OPTS}\"\n"
        ));
    }
    s
}

/// Adds `-Dstorm.jar=JAR` (the peer's thin jar, which `StormSubmitter` uploads) before the
/// classpath of `java_args` (the client's java options and arguments, without `java`).
///
/// # Errors
/// No classpath, or the jar is not there (the peer is not built).
pub fn add_storm_jar(java_args: &mut Vec<String>) -> Result<()> {
    let deps = dependency_dir(java_args)?;
    let target = deps.parent().context("target/dependency has no parent")?;
    let jar = target.join("xorflow-peer-storm-0.1.0.jar");
    if !jar.is_file() {
        bail!("'{}' not found: the Storm peer is not built", jar.display());
    }
    let at = (java_args.iter()).position(|a| a == "-cp").unwrap_or(0);
    java_args.insert(at, format!("-Dstorm.jar={}", jar.display()));
    Ok(())
}

impl super::jvm::PeerCluster for StormCluster {
    fn exited(&mut self) -> Vec<String> {
        super::jvm::exited(&mut self.nodes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_supervisor_advertises_its_namespace_and_finds_nimbus_in_namespace_0() {
        let c = config(Path::new("/s/supervisor-2-local"), Some(2));
        assert!(c.contains("storm.local.hostname: \"10.78.0.3\"\n"), "{c}");
        assert!(c.contains("nimbus.seeds: [\"10.78.0.1\"]\n"), "{c}");
        assert!(c.contains("supervisor.slots.ports: [6700]\n"), "{c}");
        assert!(
            c.contains("storm.local.dir: \"/s/supervisor-2-local\"\n"),
            "{c}"
        );
        let n = config(Path::new("/s/nimbus-local"), None);
        assert!(!n.contains("supervisor."), "{n}");
        assert!(n.contains("storm.local.hostname: \"10.78.0.1\"\n"), "{n}");
    }

    #[test]
    fn the_classpath_gives_the_dependencies_and_the_client_its_jar() {
        let java: Vec<String> = [
            "java",
            "-Xmx1g",
            "-cp",
            "/p/target/classes:/p/target/dependency/*",
            "M",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(
            dependency_dir(&java).unwrap(),
            Path::new("/p/target/dependency")
        );
        let mut args = java[1..].to_vec();
        assert!(add_storm_jar(&mut args)
            .unwrap_err()
            .to_string()
            .contains("not built"));
        let bad: Vec<String> = ["java", "M"].map(String::from).to_vec();
        assert!(dependency_dir(&bad).is_err());
    }
}
