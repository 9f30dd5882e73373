//! `--metrics-addr`: a running flights job (real data, paced) serves Prometheus metrics that
//! move while it runs, and a status page that a real browser (headless Chromium, Debian's
//! `chromium` package) renders with the job's graph, live rates, frontiers and checkpoints; a
//! screenshot of it is checked. With two processes each serves its own port.
//!
//! Chromium is found as `chromium`, `chromium-browser` or `$XORFLOW_CHROMIUM`; without it the
//! browser part is skipped, except under CI (`CI` set), where it fails.

mod common;
use common::{bin, flights_csv};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A free local port (bound and released; the job binds it right after).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `GET path` on `addr`: the body, or `None` if nothing answers.
fn get(addr: SocketAddr, path: &str) -> Option<String> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_millis(500)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").ok()?;
    let mut text = String::new();
    s.read_to_string(&mut text).ok()?;
    let (head, body) = text.split_once("\r\n\r\n")?;
    head.starts_with("HTTP/1.").then(|| body.to_string())
}

/// Waits up to 15 s for `path` on `addr` to answer.
fn wait_for(addr: SocketAddr, path: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        if let Some(b) = get(addr, path) {
            return b;
        }
        assert!(Instant::now() < deadline, "nothing answers on {addr}{path}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The value of the sample `name{labels}` in an OpenMetrics text.
fn sample(text: &str, series: &str) -> Option<f64> {
    let line = text
        .lines()
        .find(|l| l.starts_with(series) && l[series.len()..].starts_with(' '))?;
    line.rsplit(' ').next()?.parse().ok()
}

/// Sum of every sample of metric `name` whose labels contain `label`.
fn total(text: &str, name: &str, label: &str) -> f64 {
    (text.lines())
        .filter(|l| l.starts_with(&format!("{name}{{")) && l.contains(label))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// Starts the flights job paced to run about 8 s, serving metrics on `port`.
fn start_job(input: &Path, dir: &Path, port: u16, extra: &[&str]) -> Child {
    Command::new(bin())
        .args(["run", "flights", "--input"])
        .arg(input)
        .arg("--output")
        .arg(dir.join("out.csv"))
        .args([
            "--speed",
            "4000000",
            "--metrics-addr",
            &format!("127.0.0.1:{port}"),
        ])
        .args(["--checkpoint-interval", "500ms", "--checkpoint-dir"])
        .arg(dir.join("ck"))
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn finish(child: Child) {
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

fn chromium() -> Option<PathBuf> {
    let named = std::env::var_os("XORFLOW_CHROMIUM").map(PathBuf::from);
    let found = named
        .into_iter()
        .chain(["chromium", "chromium-browser"].map(PathBuf::from));
    for c in found {
        let ok = Command::new(&c)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
        if ok {
            return Some(c);
        }
    }
    xorflow_testkit::skip("headless Chromium is missing (apt-get install chromium)");
    None
}

/// Runs headless Chromium on `url` with `args`, letting the page's script run 3.5 s of
/// virtual time; returns its stdout and stderr.
fn browse(chrome: &Path, url: &str, args: &[&str]) -> (String, String) {
    let o = Command::new(chrome)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--virtual-time-budget=3500",
        ])
        .args(["--window-size=1100,800"])
        .args(args)
        .arg(url)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "chromium failed on {url}:\n{err}");
    (String::from_utf8_lossy(&o.stdout).into_owned(), err)
}

/// The page's DOM as headless Chromium renders it. Chromium on a loaded machine now and then
/// exits 0 having printed nothing (CI at 19852fd, two test binaries at once): an empty dump is
/// tried again, twice, and a third is a failure showing Chromium's stderr.
fn dump_dom(chrome: &Path, url: &str) -> String {
    let mut errs = String::new();
    for _ in 0..3 {
        let (dom, err) = browse(chrome, url, &["--dump-dom"]);
        if !dom.trim().is_empty() {
            return dom;
        }
        errs.push_str(&err);
    }
    panic!("chromium printed no DOM for {url} three times; its stderr:\n{errs}");
}

/// Width and height of a PNG file (its IHDR chunk), and its size.
fn png_shape(p: &Path) -> (u32, u32, usize) {
    let b = std::fs::read(p).unwrap();
    assert_eq!(
        &b[..8],
        b"\x89PNG\r\n\x1a\n",
        "{} is not a PNG",
        p.display()
    );
    assert_eq!(&b[12..16], b"IHDR");
    let be = |i: usize| u32::from_be_bytes(b[i..i + 4].try_into().unwrap());
    (be(16), be(20), b.len())
}

#[test]
fn a_running_job_serves_moving_metrics_and_a_status_page_a_browser_renders() {
    let Some(input) = flights_csv() else { return };
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let child = start_job(&input, dir.path(), port, &[]);
    let first = wait_for(addr, "/metrics");
    std::thread::sleep(Duration::from_millis(1500));
    let second = get(addr, "/metrics").expect("metrics while the job runs");
    // Prometheus conventions: counters end in _total, units in names, a TYPE per family.
    for line in [
        "# TYPE xorflow_vertex_elements_in counter",
        "# TYPE xorflow_vertex_frontier gauge",
        "# TYPE xorflow_vertex_cpu_seconds counter",
        "# TYPE xorflow_vertex_backpressure_seconds counter",
        "# TYPE xorflow_vertex_input_queue_fill_ratio gauge",
        "# TYPE xorflow_checkpoints_completed counter",
        "# TYPE xorflow_traffic_bytes counter",
    ] {
        assert!(second.contains(line), "missing '{line}' in:\n{second}");
    }
    let window_in = |t: &str| total(t, "xorflow_vertex_elements_in_total", "vertex=\"hourly\"");
    assert!(
        window_in(&second) > window_in(&first),
        "the window's input moves"
    );
    assert!(
        window_in(&second) < 336_776.0,
        "and the job is still running"
    );
    let frontier = "xorflow_vertex_frontier{vertex=\"hourly\",worker=\"0\"}";
    assert!(
        sample(&second, frontier).unwrap() > 1_356_998_400.0,
        "frontier in 2013 (s)"
    );
    assert!(sample(&second, "xorflow_checkpoints_completed_total").unwrap() >= 1.0);
    let status: serde_json::Value =
        serde_json::from_str(&get(addr, "/api/status").unwrap()).unwrap();
    let names: Vec<&str> = (status["vertices"].as_array().unwrap().iter())
        .map(|v| v["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["departures", "hourly", "csv"]);
    assert!(status["vertices"][1]["in_per_s"].as_f64().unwrap() > 0.0);
    cpu_adds_up(&status, &[child.id()]);
    // The last minutes, sampled once a second, and drawn: one line per vertex in its colour.
    std::thread::sleep(Duration::from_millis(1200));
    let history: serde_json::Value =
        serde_json::from_str(&get(addr, "/api/history").unwrap()).unwrap();
    assert_eq!(
        history["lag_unit"], "s",
        "the flights job's times are seconds"
    );
    assert!(history["at_s"].as_array().unwrap().len() >= 2, "{history}");
    let per_s = history["vertices"][1]["per_s"].as_array().unwrap();
    assert!(per_s.iter().any(|x| x.as_f64().unwrap() > 0.0), "{history}");
    for chart in ["throughput", "backpressure", "lag"] {
        let svg = get(addr, &format!("/charts/{chart}.svg")).unwrap();
        assert!(svg.starts_with("<svg"), "{chart}: {svg}");
        let color = status["vertices"][1]["color"]
            .as_str()
            .unwrap()
            .to_uppercase();
        assert!(
            svg.to_uppercase().contains(&color),
            "{chart}: no line in {color}"
        );
    }
    if let Some(chrome) = chromium() {
        let url = format!("http://{addr}/");
        let dom = dump_dom(&chrome, &url);
        for v in ["departures", "hourly", "csv"] {
            assert!(
                dom.contains(&format!("data-name=\"{v}\"")),
                "vertex {v} drawn:\n{dom}"
            );
        }
        // Frontiers as times, lags in seconds (f681eac: raw numbers).
        assert!(
            dom.contains("frontier 2013-"),
            "frontiers shown as times:\n{dom}"
        );
        assert!(dom.contains(" s</td>"), "lags in seconds");
        assert!(dom.contains("data-chart=\"throughput\""), "charts");
        assert!(dom.contains("other threads"), "CPU by where it went");
        assert!(dom.contains(" completed, last "), "checkpoints shown");
        let refreshed = dom
            .split("id=\"updated\">")
            .nth(1)
            .and_then(|r| r.split('<').next());
        let refreshed: u32 = refreshed.and_then(|n| n.parse().ok()).unwrap_or(0);
        assert!(refreshed >= 2, "the page refreshes itself ({refreshed})");
        let shot = dir.path().join("status.png");
        let _ = browse(
            &chrome,
            &url,
            &[&format!("--screenshot={}", shot.display())],
        );
        let (w, h, bytes) = png_shape(&shot);
        assert_eq!((w, h), (1100, 800));
        // A blank page compresses to a few kB; the graph, table and text do not.
        assert!(bytes > 15_000, "screenshot of {bytes} bytes looks empty");
    }
    finish(child);
    assert!(
        get(addr, "/metrics").is_none(),
        "the server stops with the job"
    );
}

/// The process's CPU on the page adds up: the vertices' CPU is the worker threads' operator
/// task, the tasks and the other threads make the process's total, and that total is the one
/// the kernel reports for the processes `pids` (f681eac showed 0 % CPU on every vertex of a run that
/// used 17 CPU s, and no total).
fn cpu_adds_up(status: &serde_json::Value, pids: &[u32]) {
    let cpu = &status["cpu"];
    let f = |v: &serde_json::Value| v.as_f64().unwrap();
    let vertices: f64 = status["vertices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| f(&v["cpu_s"]))
        .sum();
    let tasks = cpu["tasks"].as_object().unwrap();
    let operators = f(&tasks["operators"]);
    assert!(
        (vertices - operators).abs() <= 0.01 + 0.01 * operators,
        "{cpu} vs {vertices}"
    );
    let total = tasks.values().map(f).sum::<f64>() + f(&cpu["other_threads_s"]);
    let process = f(&cpu["process_s"]);
    assert!((total - process).abs() <= 0.01 + 0.01 * process, "{cpu}");
    // The kernel's count (utime + stime, clock ticks of 10 ms), read just after.
    let kernel: f64 = (pids.iter())
        .map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
            let after_name = stat.rsplit(')').next().unwrap();
            let fields: Vec<&str> = after_name.split_whitespace().collect();
            let ticks = fields[11].parse::<f64>().unwrap() + fields[12].parse::<f64>().unwrap();
            ticks / 100.0
        })
        .sum();
    assert!(process > 0.05, "{cpu}");
    assert!(
        process <= kernel + 0.05 && kernel - process <= 0.3 + 0.2 * kernel,
        "the page's {process} s against the kernel's {kernel} s"
    );
}

/// A free local port whose successor is free too (both bound, then released): process `p` of a
/// local launch listens on the port plus `p`. (With only the first port checked, CI once found
/// the second taken by another test's connection.)
fn free_port_pair() -> u16 {
    loop {
        let first = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = first.local_addr().unwrap().port();
        if port < u16::MAX && TcpListener::bind(("127.0.0.1", port + 1)).is_ok() {
            return port;
        }
    }
}

/// Each process serves its own port, and process 0 the whole job: its `/api/status` adds up the
/// processes' own (asked with `?scope=process`), with real instance counts and frontiers.
#[test]
fn each_process_of_a_local_launch_serves_its_own_port() {
    let Some(input) = flights_csv() else { return };
    let dir = tempfile::tempdir().unwrap();
    let port = free_port_pair();
    let summary = dir.path().join("summary.json");
    let mut child = start_job(
        &input,
        dir.path(),
        port,
        &[
            "--processes",
            "2",
            "--workers",
            "1",
            "--summary",
            summary.to_str().unwrap(),
        ],
    );
    for p in 0..2u16 {
        let addr = SocketAddr::from(([127, 0, 0, 1], port + p));
        let deadline = Instant::now() + Duration::from_secs(15);
        let status = loop {
            if let Some(b) = get(addr, "/api/status") {
                break b;
            }
            if Instant::now() > deadline || child.try_wait().unwrap().is_some() {
                let _ = child.kill();
                let o = child.wait_with_output().unwrap();
                let err = String::from_utf8_lossy(&o.stderr);
                panic!("nothing answers on {addr}/api/status; the job said:\n{err}");
            }
            std::thread::sleep(Duration::from_millis(100));
        };
        let status: serde_json::Value = serde_json::from_str(&status).unwrap();
        assert_eq!(status["process"], p, "port {} is process {p}'s", port + p);
    }
    // Process 0 shows the whole job (f681eac: each process only itself). Its counters move, so
    // the job's status, asked between two rounds of the processes' own, lies between their sums.
    let at = |p: u16, path: &str| -> serde_json::Value {
        let addr = SocketAddr::from(([127, 0, 0, 1], port + p));
        serde_json::from_str(&get(addr, path).expect("a status")).unwrap()
    };
    let own = |p| at(p, "/api/status?scope=process");
    // Until every vertex has a frontier past the start (the window's first hour closed).
    let deadline = Instant::now() + Duration::from_secs(15);
    while (at(0, "/api/status")["vertices"].as_array().unwrap().iter())
        .any(|v| v["frontier"].as_i64().unwrap_or(0) == 0)
    {
        assert!(Instant::now() < deadline, "no frontier moved in 15 s");
        std::thread::sleep(Duration::from_millis(100));
    }
    let before = [own(0), own(1)];
    let job = at(0, "/api/status");
    let after = [own(0), own(1)];
    assert_eq!(job["scope"], "job");
    let reachable: Vec<bool> = (job["processes"].as_array().unwrap().iter())
        .map(|p| p["reachable"].as_bool().unwrap())
        .collect();
    assert_eq!(reachable, [true, true], "{}", job["processes"]);
    let vertices = job["vertices"].as_array().unwrap();
    for (i, v) in vertices.iter().enumerate() {
        let sum = |s: &[serde_json::Value; 2], k: &str| {
            s.iter()
                .map(|s| s["vertices"][i][k].as_u64().unwrap())
                .sum::<u64>()
        };
        for k in ["elements_in", "elements_out"] {
            let n = v[k].as_u64().unwrap();
            assert!(
                sum(&before, k) <= n && n <= sum(&after, k),
                "{} {k}: {} <= {n} <= {}",
                v["name"],
                sum(&before, k),
                sum(&after, k)
            );
        }
        // Real instance counts: one source instance (f681eac: one per worker), one instance of
        // every other vertex per process.
        let want = if i == 0 { 1 } else { 2 };
        assert_eq!(v["instances"], want, "{v}");
        // No frontier of i64::MAX where no instance has one; frontiers where they mean
        // something: the source's heartbeat, the window's and the sink's, about 2013 (s).
        let f = v["frontier"].as_i64().expect("a frontier");
        assert!((1_356_000_000..1_420_000_000).contains(&f), "{v}");
    }
    assert!(vertices[1]["elements_in"].as_u64().unwrap() > 0, "{job}");
    // The whole job's CPU: both processes' (process 1 is process 0's child).
    let mut pids = vec![child.id()];
    for task in std::fs::read_dir(format!("/proc/{}/task", child.id())).unwrap() {
        let children = std::fs::read_to_string(task.unwrap().path().join("children"));
        let children = children.unwrap_or_default();
        pids.extend(
            children
                .split_whitespace()
                .map(|p| p.parse::<u32>().unwrap()),
        );
    }
    assert_eq!(pids.len(), 2, "process 0 and its child: {pids:?}");
    cpu_adds_up(&at(0, "/api/status"), &pids);
    // The last status before the job ended against the run's own final report: the source's
    // and the window's output, at most what the run reports and short of it by no more than
    // the last moments of the paced feed (a process missing from the sum would halve the
    // window's; one counted twice would exceed the report).
    let addr0 = SocketAddr::from(([127, 0, 0, 1], port));
    let mut last = None;
    while let Some(body) = get(addr0, "/api/status") {
        last = serde_json::from_str::<serde_json::Value>(&body)
            .ok()
            .or(last);
        std::thread::sleep(Duration::from_millis(50));
    }
    finish(child);
    let last = last.expect("a status");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&summary).unwrap()).unwrap();
    for (v, key) in [(0, "records_emitted"), (1, "windows_emitted")] {
        let live = last["vertices"][v]["elements_out"].as_u64().unwrap();
        let fin = report[key].as_u64().unwrap();
        assert!(
            live <= fin && live as f64 >= 0.85 * fin as f64,
            "{}: {live} live, {fin} in the report",
            last["vertices"][v]["name"]
        );
    }
}

#[test]
fn a_metrics_address_in_use_is_refused_naming_it() {
    let Some(input) = flights_csv() else { return };
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let o = Command::new(bin())
        .args(["run", "flights", "--input"])
        .arg(&input)
        .arg("--output")
        .arg(dir.path().join("out.csv"))
        .args(["--metrics-addr", &addr.to_string()])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(
        err.contains(&format!("--metrics-addr {addr}: cannot listen")),
        "{err}"
    );
    assert!(
        !dir.path().join("out.csv").exists(),
        "no output from a refused run"
    );
}

/// A SQL job's status page names the vertices of its plan (issue 50: "the status page shows the
/// SQL plan's operators by name"), exactly those `EXPLAIN` lists for the dataflow it would run,
/// in the same order; the window's input moves while it runs. Nexmark q5 (a HOP aggregate
/// joined with its own maximum) over generated bids, paced to run about 4 s.
#[test]
fn a_sql_jobs_status_page_names_the_operators_explain_lists() {
    let dir = tempfile::tempdir().unwrap();
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let ddl = std::fs::read_to_string(repo.join("examples/nexmark/ddl_gen.sql"))
        .unwrap()
        .replace("'events.num' = '10000000'", "'events.num' = '80000'")
        .replace(
            "'first-event.rate' = '10000000'",
            "'first-event.rate' = '20000'",
        );
    assert!(ddl.contains("'events.num' = '80000'") && ddl.contains("'20000'"));
    let q5 = std::fs::read_to_string(repo.join("examples/nexmark/queries/q5.sql")).unwrap();
    let insert = &q5[q5.find("INSERT INTO").expect("q5 inserts")..];
    std::fs::write(dir.path().join("ddl.sql"), &ddl).unwrap();
    std::fs::write(dir.path().join("q5.sql"), &q5).unwrap();
    let sql = |last: &str| {
        let mut c = Command::new(bin());
        c.arg("sql");
        for f in ["ddl.sql", last] {
            c.arg("--file").arg(dir.path().join(f));
        }
        c.args(["--workers", "2"]);
        c
    };
    // EXPLAIN needs the sink's table: q5.sql's CREATE TABLE, then the plan.
    let table = &q5[q5.find("CREATE TABLE").unwrap()..q5.find("INSERT INTO").unwrap()];
    std::fs::write(
        dir.path().join("explain.sql"),
        format!("{table}\nEXPLAIN {insert}"),
    )
    .unwrap();
    let o = sql("explain.sql").output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout).to_string();
    let graph = &text[text
        .find("== dataflow")
        .expect("EXPLAIN shows the dataflow")..];
    let explained: Vec<&str> = (graph.lines().skip(1))
        .map(|l| l.split("  ").next().unwrap())
        .collect();
    assert!(
        explained.contains(&"source: bid") && explained.contains(&"window_aggregate"),
        "{text}"
    );
    let port = free_port();
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let child = sql("q5.sql")
        .args(["--metrics-addr", &format!("127.0.0.1:{port}")])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let first = wait_for(addr, "/metrics");
    std::thread::sleep(Duration::from_millis(1000));
    let second = get(addr, "/metrics").expect("metrics while the job runs");
    let status: serde_json::Value =
        serde_json::from_str(&get(addr, "/api/status").expect("a status")).unwrap();
    finish(child);
    let shown: Vec<&str> = (status["vertices"].as_array().unwrap().iter())
        .map(|v| v["name"].as_str().unwrap())
        .collect();
    assert_eq!(shown, explained, "the status page against EXPLAIN:\n{text}");
    // The HOP's slices take the bids as they come (the windows themselves only when a slide
    // closes, 2 s of event time and the 4 s watermark delay later).
    let label = "vertex=\"window_aggregate.slices\"";
    let window_in = |t: &str| total(t, "xorflow_vertex_elements_in_total", label);
    assert!(
        window_in(&second) > window_in(&first),
        "the window's input moves:\n{second}"
    );
}
