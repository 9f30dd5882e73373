//! Building the peers (`peers/`): cargo for timely, Maven for the JVM peers, and the commands
//! that run them.

use anyhow::{bail, Context, Result};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Where the peers are and how to run them.
#[derive(Clone, Debug)]
pub struct Peers {
    /// The timely peer's executable.
    pub timely: PathBuf,
    /// The command that runs the Flink job (`java ... ChainJob`); None when Flink is skipped.
    pub flink: Option<Vec<String>>,
    /// The command that runs the Storm topology (`java ... ChainTopology`); None when skipped.
    pub storm: Option<Vec<String>>,
    /// `java -version`'s first line.
    pub java_version: Option<String>,
}

fn run_build(cmd: &mut Command, what: &str) -> Result<()> {
    let out = cmd
        .output()
        .with_context(|| format!("cannot start the build of {what} ({cmd:?})"))?;
    if !out.status.success() {
        bail!(
            "building {what} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

/// Which JVM peers to build and run.
#[derive(Clone, Copy, Debug)]
pub struct JvmPeers {
    /// Apache Flink (`peers/flink`).
    pub flink: bool,
    /// Apache Storm (`peers/storm`).
    pub storm: bool,
}

/// Flink 1.20 on Java 17 needs these opens for its serializers and closure cleaner.
const FLINK_OPENS: [&str; 8] = [
    "java.base/java.lang",
    "java.base/java.util",
    "java.base/java.lang.reflect",
    "java.base/java.io",
    "java.base/java.net",
    "java.base/java.nio",
    "java.base/java.util.concurrent",
    "java.base/java.time",
];

/// Builds `dir/flink` and returns the java command that runs its class `main_class`
/// (`bench checkpoints` runs `CheckpointJob`).
///
/// # Errors
/// As the build of the Flink peer.
pub(crate) fn flink_command(dir: &Path, main_class: &str) -> Result<Vec<String>> {
    jvm_peer(dir, "flink", "--no-flink", main_class, &FLINK_OPENS)
}

/// Builds `dir/flink-sql` (Nexmark on Flink SQL: `xorflow-lab bench nexmark`) and returns the
/// java command that runs its class `main_class`.
///
/// # Errors
/// As the build of the Flink peer.
pub fn flink_sql_command(dir: &Path, main_class: &str) -> Result<Vec<String>> {
    jvm_peer(dir, "flink-sql", "--no-flink", main_class, &FLINK_OPENS)
}

/// Builds `dir/storm` and returns the java command that runs its class `main_class`
/// (`bench peers --workload ysb` runs `YsbTopology`).
///
/// # Errors
/// As the build of the Storm peer.
pub(crate) fn storm_command(dir: &Path, main_class: &str) -> Result<Vec<String>> {
    let opens = [
        "java.base/java.lang",
        "java.base/java.util",
        "java.base/java.nio",
    ];
    jvm_peer(dir, "storm", "--no-storm", main_class, &opens)
}

/// Builds the Maven project `dir/<name>` (`mvn package`, incremental) and returns the java
/// command that runs `main_class` on its classes and dependencies with `opens`.
fn jvm_peer(
    dir: &Path,
    name: &str,
    flag: &str,
    main_class: &str,
    opens: &[&str],
) -> Result<Vec<String>> {
    let pom = dir.join(name).join("pom.xml");
    if !pom.is_file() {
        bail!("'{}' not found", pom.display());
    }
    let _ = writeln!(
        std::io::stderr(),
        "peers: building the {name} peer (mvn package; the first build downloads it)"
    );
    run_build(
        Command::new("mvn")
            .args(["-q", "-B", "package", "-f"])
            .arg(&pom),
        &format!("the {name} peer (mvn; install Maven or pass {flag})"),
    )?;
    let target = dir.join(name).join("target");
    let cp = format!(
        "{}:{}/*",
        target.join("classes").display(),
        target.join("dependency").display()
    );
    let mut cmd: Vec<String> = ["java", "-Xms1g", "-Xmx2g", "-XX:+UseParallelGC"]
        .map(String::from)
        .to_vec();
    for m in opens {
        cmd.push(format!("--add-opens={m}=ALL-UNNAMED"));
    }
    cmd.extend(["-cp".into(), cp, main_class.into()]);
    Ok(cmd)
}

/// Builds what is missing (cargo and Maven are incremental, so a built peer costs seconds) and
/// returns how to run the peers; the JVM peers only as `jvm` asks.
///
/// # Errors
/// `dir` has no peers, a tool is missing (naming it), or a build fails (with its output).
pub fn build(dir: &Path, jvm: JvmPeers) -> Result<Peers> {
    let manifest = dir.join("timely/Cargo.toml");
    if !manifest.is_file() {
        bail!(
            "'{}' not found: run from the repository root or pass --peers-dir",
            manifest.display()
        );
    }
    let _ = writeln!(
        std::io::stderr(),
        "peers: building the timely peer (cargo build --release)"
    );
    // The target folder is named, not inherited: a CARGO_TARGET_DIR set for xorflow's own build
    // would put the peer's executable elsewhere.
    let target = dir.join("timely/target");
    run_build(
        Command::new("cargo")
            .args(["build", "--release", "--quiet", "--manifest-path"])
            .arg(&manifest)
            .arg("--target-dir")
            .arg(&target),
        "the timely peer",
    )?;
    let timely = target.join("release/xorflow-peer-timely");
    if !timely.is_file() {
        bail!("the timely build left no '{}'", timely.display());
    }
    let java_version = if jvm.flink || jvm.storm {
        let java = Command::new("java").arg("-version").output().map_err(|e| {
            anyhow::anyhow!(
                "the Flink and Storm peers need java (JDK 17) on PATH: {e}; or pass --no-flink \
                 --no-storm"
            )
        })?;
        String::from_utf8_lossy(&java.stderr)
            .lines()
            .next()
            .map(str::to_string)
    } else {
        None
    };
    let flink = jvm
        .flink
        .then(|| flink_command(dir, "xorflow.peer.flink.ChainJob"))
        .transpose()?;
    let storm = jvm
        .storm
        .then(|| storm_command(dir, "xorflow.peer.storm.ChainTopology"))
        .transpose()?;
    Ok(Peers {
        timely,
        flink,
        storm,
        java_version,
    })
}
