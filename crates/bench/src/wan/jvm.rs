//! The JVMs of a peer's cluster (`super::flink_cluster`, `super::storm_cluster`): each daemon
//! runs the peer's own java command with its own heap and main class.

use std::process::Child;

/// A peer's cluster of JVM daemons running in the namespaces (`FlinkCluster`, `StormCluster`);
/// dropping it kills them.
pub(super) trait PeerCluster {
    /// The daemons that exited, with their status (any of them ends the run).
    fn exited(&mut self) -> Vec<String>;
}

/// Of `nodes` (name, process), those that exited, as "name status".
pub(super) fn exited(nodes: &mut [(String, Child)]) -> Vec<String> {
    (nodes.iter_mut())
        .filter_map(|(name, c)| match c.try_wait() {
            Ok(Some(s)) => Some(format!("{name} {s}")),
            _ => None,
        })
        .collect()
}

/// `java` (`java [options] -cp CP MAIN`) with its heap set to `heap`, the JVM options `props`
/// (e.g. `-Dkey=value`) after it, and `main args` instead of its main class.
pub(super) fn node_command(
    java: &[String],
    heap: &str,
    props: &[String],
    main: &str,
    args: &[String],
) -> Vec<String> {
    let mut cmd: Vec<String> = java[..java.len().saturating_sub(1)]
        .iter()
        .filter(|a| !a.starts_with("-Xms") && !a.starts_with("-Xmx"))
        .cloned()
        .collect();
    cmd.insert(1, format!("-Xmx{heap}"));
    for (i, p) in props.iter().enumerate() {
        cmd.insert(2 + i, p.clone());
    }
    cmd.push(main.into());
    cmd.extend(args.iter().cloned());
    cmd
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_node_runs_the_peers_classpath_with_its_own_heap_and_main() {
        let java: Vec<String> = [
            "java",
            "-Xms1g",
            "-Xmx2g",
            "-XX:+UseParallelGC",
            "-cp",
            "a:b/*",
            "xorflow.peer.flink.YsbJob",
        ]
        .map(String::from)
        .to_vec();
        let props = ["-Da=1".to_string()];
        let cmd = node_command(
            &java,
            "768m",
            &props,
            "M",
            &["--configDir".into(), "c".into()],
        );
        assert_eq!(
            cmd,
            [
                "java",
                "-Xmx768m",
                "-Da=1",
                "-XX:+UseParallelGC",
                "-cp",
                "a:b/*",
                "M",
                "--configDir",
                "c"
            ]
        );
    }
}
