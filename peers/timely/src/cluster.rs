//! Cluster runs: `--processes N` starts N copies of this program on this machine, one timely
//! process each (timely's own TCP cluster mode, `CommunicationConfig::Cluster`), and merges their
//! reports. The copies get `--process i --addresses a0,..` and print a [`ProcessReport`] on
//! stdout; a copy that fails stops the others, and every copy exits when the launcher dies (it
//! watches its stdin, a pipe from the launcher), so no run leaves processes behind.

use crate::report::{Measured, ProcessReport};
use anyhow::{bail, Context, Result};
use std::io::Read;
use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::thread::JoinHandle;
use std::time::Duration;

/// `n` free loopback addresses (bound, read and released: a rare race with another program
/// taking one in between makes timely fail to bind, and the run fails with its message).
fn free_addresses(n: usize) -> Result<Vec<String>> {
    let listeners: Vec<TcpListener> = (0..n)
        .map(|_| TcpListener::bind("127.0.0.1:0"))
        .collect::<std::io::Result<_>>()
        .context("cannot find free loopback ports")?;
    listeners
        .iter()
        .map(|l| Ok(l.local_addr()?.to_string()))
        .collect()
}

/// One started copy: the child and the thread reading its stdout.
struct Copy {
    child: Child,
    stdout: Option<JoinHandle<std::io::Result<String>>>,
}

/// Runs `processes` copies of this program with this run's arguments (`argv`, without the
/// program name) and returns their measurements merged.
///
/// # Errors
/// A copy cannot start, exits with failure (the others are killed), or prints an unreadable
/// report.
pub fn launch(argv: &[String], processes: usize) -> Result<Measured> {
    let exe = std::env::current_exe().context("cannot find this program's path")?;
    let addresses = free_addresses(processes)?.join(",");
    let mut copies = Vec::with_capacity(processes);
    for i in 0..processes {
        let mut child = Command::new(&exe)
            .args(argv)
            .args(["--process", &i.to_string(), "--addresses", &addresses])
            .arg("--exit-with-stdin")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .with_context(|| format!("cannot start process {i} ({})", exe.display()))?;
        let mut out = child.stdout.take().expect("piped");
        // Read while the copy runs: a full pipe would block it before it exits.
        let stdout = std::thread::spawn(move || {
            let mut s = String::new();
            out.read_to_string(&mut s).map(|_| s)
        });
        copies.push(Copy {
            child,
            stdout: Some(stdout),
        });
    }
    let waited = wait_all(&mut copies);
    if waited.is_err() {
        for c in &mut copies {
            let _ = c.child.kill();
            let _ = c.child.wait();
        }
    }
    waited?;
    let mut merged = Measured::default();
    for (i, c) in copies.iter_mut().enumerate() {
        let text = c
            .stdout
            .take()
            .expect("read once")
            .join()
            .map_err(|_| anyhow::anyhow!("process {i}: stdout reader panicked"))?
            .with_context(|| format!("process {i}: cannot read its stdout"))?;
        // The report is the last line: timely prints "awaiting connections" lines before it.
        let last = text.trim_end().lines().last().unwrap_or_default();
        let r: ProcessReport = serde_json::from_str(last)
            .with_context(|| format!("process {i} printed no report: {:?}", short(&text)))?;
        merged.add(Measured::from_report(r).with_context(|| format!("process {i}"))?);
    }
    Ok(merged)
}

/// Waits for every copy; the first one to fail ends the wait with its status.
fn wait_all(copies: &mut [Copy]) -> Result<()> {
    let mut running = copies.len();
    while running > 0 {
        running = 0;
        for (i, c) in copies.iter_mut().enumerate() {
            match c.child.try_wait().with_context(|| format!("process {i}"))? {
                Some(s) if !s.success() => bail!("process {i} of the cluster run failed: {s}"),
                Some(_) => {}
                None => running += 1,
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(())
}

fn short(s: &str) -> &str {
    &s[..s.len().min(200)]
}

/// In a copy: exits as soon as the launcher's end of stdin closes (the launcher ended or was
/// killed), so a copy never outlives its run or waits forever for a dead peer.
pub fn exit_with_stdin() {
    std::thread::spawn(|| {
        let mut sink = [0u8; 64];
        let mut stdin = std::io::stdin();
        loop {
            match stdin.read(&mut sink) {
                Ok(0) | Err(_) => {
                    eprintln!("timely peer: the launcher is gone; exiting");
                    std::process::exit(3);
                }
                Ok(_) => {}
            }
        }
    });
}
