//! `xorflow-lab delay-proxy` as a user runs it: a real process in front of a real TCP service adds
//! the configured round trip and keeps the bytes; bad routes exit 2 naming them.

#[path = "../../cli/tests/common/mod.rs"]
mod common;
use common::perf::refused;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// An echo service on a free port.
fn echo() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for s in l.incoming() {
            let mut s = s.unwrap();
            std::thread::spawn(move || {
                let mut b = [0u8; 4096];
                while let Ok(n) = s.read(&mut b) {
                    if n == 0 || s.write_all(&b[..n]).is_err() {
                        return;
                    }
                }
            });
        }
    });
    port
}

#[test]
fn a_round_trip_through_the_proxy_takes_the_configured_rtt() {
    let upstream = echo();
    let listen = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let route = format!("{listen}=127.0.0.1:{upstream}");
    let mut child = Command::new(common::lab())
        .args(["delay-proxy", "--route", &route, "--rtt", "30ms"])
        .stderr(Stdio::piped())
        .spawn()
        .expect("xorflow-lab delay-proxy starts");
    // It says what it serves once listening.
    let mut line = String::new();
    BufReader::new(child.stderr.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert!(
        line.contains(&listen.to_string()) && line.contains("30ms"),
        "{line}"
    );
    let mut s = TcpStream::connect(listen).unwrap();
    s.set_nodelay(true).unwrap();
    for k in 0..5u8 {
        let msg = vec![k; 512];
        let t0 = Instant::now();
        s.write_all(&msg).unwrap();
        let mut back = vec![0u8; msg.len()];
        s.read_exact(&mut back).unwrap();
        let rtt = t0.elapsed();
        assert_eq!(back, msg);
        assert!(
            rtt >= Duration::from_millis(30) && rtt < Duration::from_millis(50),
            "round {k}: {rtt:?}"
        );
    }
    child.kill().unwrap();
    child.wait().unwrap();
}

#[test]
fn bad_routes_exit_2_naming_them() {
    // Held for the whole test: its port is in use.
    let held = TcpListener::bind("127.0.0.1:0").unwrap();
    let in_use = format!("{}=127.0.0.1:1", held.local_addr().unwrap());
    let cases: [(&[&str], &str); 4] = [
        (
            &["--route", "127.0.0.1:0", "--rtt", "10ms"],
            "expected LISTEN=UPSTREAM",
        ),
        (
            &["--route", "127.0.0.1:0=nowhere", "--rtt", "10ms"],
            "UPSTREAM 'nowhere'",
        ),
        (&["--route", &in_use, "--rtt", "10ms"], "cannot listen on"),
        (
            &["--route", "127.0.0.1:0=127.0.0.1:1", "--rtt", "2min"],
            "at most",
        ),
    ];
    for (args, want) in cases {
        let mut a = vec!["delay-proxy"];
        a.extend_from_slice(args);
        refused(&a, want);
    }
}
