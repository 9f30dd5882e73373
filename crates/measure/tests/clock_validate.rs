//! Clock alignment validated where the truth is known (the Cloudprofiler paper, section 6;
//! docs/papers.md): real processes of one host share one TSC, so each gets a synthetic offset and
//! rate error (`XORFLOW_CLOCK_SKEW`) and every reading is also taken raw. The processes align their
//! clocks by MinRTT ping-pongs before and after a run in which they send each other events (with a
//! ReT acknowledgement back, the baseline); process 0 converts every event's timestamps and
//! durations into its time and checks
//! |true - estimated| <= bound for each.
//!
//! `processes_over_loopback_stay_within_their_bounds` runs three processes on loopback (these are
//! this test binary again, in the role `validate_child`); `scripts/clock-validate.sh` runs the
//! same roles in network namespaces over veth and keeps the summary.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};
use xorflow_measure::clock::exchange::{Exchange, Message, ROUNDS};
use xorflow_measure::clock::ret::ReturnTrip;
use xorflow_measure::clock::skew::SKEW_ENV;
use xorflow_measure::clock::{self, Alignment, PairSamples, ProcessClock};

/// This process's index (marks a child).
const ROLE_ENV: &str = "XORFLOW_CLOCK_VALIDATE";
/// Comma-separated listening addresses, one per process.
const ADDRS_ENV: &str = "XORFLOW_CLOCK_VALIDATE_ADDRS";
/// Where process 0 writes the JSON summary.
const OUT_ENV: &str = "XORFLOW_CLOCK_VALIDATE_OUT";
/// How long the run between the two alignments lasts, ms.
const RUN_MS_ENV: &str = "XORFLOW_CLOCK_VALIDATE_RUN_MS";

/// One reading: the skewed clock (what the process sees) and the raw counter (the truth).
#[derive(Clone, Copy, Debug, serde::Serialize, serde::Deserialize)]
struct Reading {
    ticks: u64,
    raw: u64,
}

fn read() -> Reading {
    let raw = clock::now_raw();
    let ticks = clock::skew().map_or(raw, |s| s.apply(raw));
    Reading { ticks, raw }
}

/// An event sent from `from` to `to`: stamped at both ends, and its ReT measurement.
#[derive(Clone, Copy, Debug, serde::Serialize, serde::Deserialize)]
struct Event {
    from: usize,
    to: usize,
    id: u64,
    start: Reading,
    end: Reading,
}

/// What each process sends process 0 at the end.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
struct Report {
    clock: Option<ProcessClock>,
    samples: Vec<PairSamples>,
    /// Events this process received.
    events: Vec<Event>,
    /// Its own events' ReT: (id, start ticks, returned ticks).
    returned: Vec<(u64, u64, u64)>,
    /// ReTACK round trips it measured: (origin, id, ticks).
    ack_rtts: Vec<(usize, u64, u64)>,
}

/// Frames: u32 length, then a type byte and its fields.
fn send(w: &Mutex<TcpStream>, body: &[u8]) {
    let mut w = w.lock().unwrap();
    let mut f = (body.len() as u32).to_le_bytes().to_vec();
    f.extend_from_slice(body);
    w.write_all(&f).expect("peer connection");
}

fn recv(r: &mut TcpStream) -> Option<Vec<u8>> {
    let mut len = [0u8; 4];
    r.read_exact(&mut len).ok()?;
    let mut b = vec![0u8; u32::from_le_bytes(len) as usize];
    r.read_exact(&mut b).ok()?;
    Some(b)
}

const CLOCK: u8 = 1;
const EVENT: u8 = 2;
const RET_ACK: u8 = 3;
const RET_ACK_ACK: u8 = 4;
const RUN_DONE: u8 = 5;
const REPORT: u8 = 6;

fn clock_frame(phase: u8, m: Message) -> Vec<u8> {
    let (t, seq, stamp) = match m {
        Message::Ping { seq } => (0u8, seq, 0),
        Message::Pong { seq, stamp } => (1, seq, stamp),
        Message::Done => (2, 0, 0),
    };
    let mut v = vec![CLOCK, phase, t];
    v.extend_from_slice(&seq.to_le_bytes());
    v.extend_from_slice(&stamp.to_le_bytes());
    v
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

/// Shared state of one process.
struct Node {
    me: usize,
    out: Vec<Option<Mutex<TcpStream>>>,
    /// Exchanges per phase and peer.
    ex: Mutex<[HashMap<usize, Exchange>; 2]>,
    report: Mutex<Report>,
    run_done: Mutex<Vec<bool>>,
    /// ReTACKs sent and not yet answered: (origin, id) -> sent ticks.
    acks: Mutex<HashMap<(usize, u64), u64>>,
    /// Own events not yet returned: id -> start ticks.
    pending: Mutex<HashMap<u64, u64>>,
    reports: Mutex<Vec<Report>>,
    /// Process 0 closed its connection (it has every report).
    zero_closed: std::sync::atomic::AtomicBool,
    changed: Condvar,
    lock: Mutex<()>,
}

impl Node {
    fn notify(&self) {
        let _g = self.lock.lock().unwrap();
        self.changed.notify_all();
    }

    fn wait_until(&self, what: &str, deadline: Instant, done: impl Fn() -> bool) {
        let mut g = self.lock.lock().unwrap();
        while !done() {
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(
                !left.is_zero(),
                "process {}: timed out waiting for {what}",
                self.me
            );
            g = self
                .changed
                .wait_timeout(g, left.min(Duration::from_millis(10)))
                .unwrap()
                .0;
        }
    }

    fn out(&self, j: usize) -> &Mutex<TcpStream> {
        self.out[j].as_ref().expect("a peer")
    }

    /// Handles one frame from peer `j` (on its reader thread).
    fn on_frame(&self, j: usize, b: &[u8]) {
        match b[0] {
            CLOCK => {
                let (phase, seq, stamp) = (b[1] as usize, b[3..7].try_into().unwrap(), 0);
                let seq = u32::from_le_bytes(seq);
                let m = match b[2] {
                    0 => Message::Ping { seq },
                    1 => Message::Pong {
                        seq,
                        stamp: u64_at(b, 7) + stamp,
                    },
                    _ => Message::Done,
                };
                let reply = {
                    let mut ex = self.ex.lock().unwrap();
                    let e = ex[phase].get_mut(&j).unwrap();
                    e.on_message(m).unwrap()
                };
                if let Some(r) = reply {
                    send(self.out(j), &clock_frame(phase as u8, r));
                }
            }
            EVENT => {
                let end = read();
                let (id, ticks, raw) = (u64_at(b, 1), u64_at(b, 9), u64_at(b, 17));
                let ev = Event {
                    from: j,
                    to: self.me,
                    id,
                    start: Reading { ticks, raw },
                    end,
                };
                self.report.lock().unwrap().events.push(ev);
                let mut f = vec![RET_ACK];
                f.extend_from_slice(&id.to_le_bytes());
                self.acks
                    .lock()
                    .unwrap()
                    .insert((j, id), clock::now_ordered());
                send(self.out(j), &f);
            }
            RET_ACK => {
                let returned = clock::now_ordered();
                let id = u64_at(b, 1);
                let start = self.pending.lock().unwrap().remove(&id).unwrap();
                self.report
                    .lock()
                    .unwrap()
                    .returned
                    .push((id, start, returned));
                let mut f = vec![RET_ACK_ACK];
                f.extend_from_slice(&id.to_le_bytes());
                send(self.out(j), &f);
            }
            RET_ACK_ACK => {
                let now = clock::now_ordered();
                let id = u64_at(b, 1);
                let sent = self.acks.lock().unwrap().remove(&(j, id)).unwrap();
                self.report
                    .lock()
                    .unwrap()
                    .ack_rtts
                    .push((j, id, now - sent));
            }
            RUN_DONE => self.run_done.lock().unwrap()[j] = true,
            REPORT => self
                .reports
                .lock()
                .unwrap()
                .push(serde_json::from_slice(&b[1..]).unwrap()),
            other => panic!("frame type {other}"),
        }
        self.notify();
    }
}

/// Connects to every other process and accepts one connection from each (a 4-byte hello with
/// the sender's index); returns (outgoing, incoming) by process.
fn connect(me: usize, addrs: &[SocketAddr]) -> (Vec<Option<TcpStream>>, Vec<Option<TcpStream>>) {
    let l = TcpListener::bind(addrs[me]).expect("listen");
    let n = addrs.len();
    let mut out: Vec<Option<TcpStream>> = (0..n).map(|_| None).collect();
    let deadline = Instant::now() + Duration::from_secs(20);
    for j in (0..n).filter(|&j| j != me) {
        let s = loop {
            match TcpStream::connect(addrs[j]) {
                Ok(s) => break s,
                Err(e) if Instant::now() > deadline => panic!("connect to {j}: {e}"),
                Err(_) => std::thread::sleep(Duration::from_millis(20)),
            }
        };
        s.set_nodelay(true).unwrap();
        (&s).write_all(&(me as u32).to_le_bytes()).unwrap();
        out[j] = Some(s);
    }
    let mut inc: Vec<Option<TcpStream>> = (0..n).map(|_| None).collect();
    for _ in 1..n {
        let (mut s, _) = l.accept().unwrap();
        s.set_nodelay(true).unwrap();
        let mut h = [0u8; 4];
        s.read_exact(&mut h).unwrap();
        inc[u32::from_le_bytes(h) as usize] = Some(s);
    }
    (out, inc)
}

/// Runs one phase: pings every peer, answers theirs, until every exchange is finished.
fn phase(node: &Node, phase: usize, peers: &[usize]) {
    for &j in peers {
        let first = node.ex.lock().unwrap()[phase].get_mut(&j).unwrap().start();
        send(node.out(j), &clock_frame(phase as u8, first));
    }
    node.wait_until(
        "the clock phase",
        Instant::now() + Duration::from_secs(30),
        || {
            node.ex.lock().unwrap()[phase]
                .values()
                .all(Exchange::finished)
        },
    );
}

/// The run: an event to each peer in turn every `gap`, for `run`.
fn run(node: &Node, peers: &[usize], run: Duration) {
    let gap = Duration::from_micros(500);
    let end = Instant::now() + run;
    let mut id = 0u64;
    while Instant::now() < end {
        let j = peers[id as usize % peers.len()];
        let start = read();
        node.pending.lock().unwrap().insert(id, start.ticks);
        let mut f = vec![EVENT];
        for x in [id, start.ticks, start.raw] {
            f.extend_from_slice(&x.to_le_bytes());
        }
        send(node.out(j), &f);
        id += 1;
        std::thread::sleep(gap);
    }
    for &j in peers {
        send(node.out(j), &[RUN_DONE]);
    }
    node.wait_until(
        "the end of the run",
        Instant::now() + Duration::from_secs(30),
        || {
            node.run_done.lock().unwrap().iter().all(|&d| d)
                && node.pending.lock().unwrap().is_empty()
                && node.acks.lock().unwrap().is_empty()
        },
    );
}

/// One process of the validation (see the module docs).
fn child(me: usize) {
    clock::init().expect("a valid clock setting");
    let addrs: Vec<SocketAddr> = std::env::var(ADDRS_ENV)
        .expect("addresses")
        .split(',')
        .map(|a| a.parse().expect("an address"))
        .collect();
    let run_ms: u64 = std::env::var(RUN_MS_ENV).map_or(1000, |v| v.parse().unwrap());
    let n = addrs.len();
    let peers: Vec<usize> = (0..n).filter(|&j| j != me).collect();
    let (out, inc) = connect(me, &addrs);
    let ticks: xorflow_measure::clock::exchange::TickFn = Arc::new(clock::now_ordered);
    let ex = |_| {
        (peers.iter())
            .map(|&j| (j, Exchange::new(ROUNDS, ticks.clone())))
            .collect()
    };
    let mut run_done = vec![false; n];
    run_done[me] = true;
    let node = Arc::new(Node {
        me,
        out: out.into_iter().map(|s| s.map(Mutex::new)).collect(),
        ex: Mutex::new([ex(0), ex(1)]),
        report: Mutex::default(),
        run_done: Mutex::new(run_done),
        acks: Mutex::default(),
        pending: Mutex::default(),
        reports: Mutex::default(),
        zero_closed: Default::default(),
        changed: Condvar::new(),
        lock: Mutex::new(()),
    });
    for (j, s) in inc.into_iter().enumerate() {
        let (Some(mut s), node) = (s, node.clone()) else {
            continue;
        };
        std::thread::spawn(move || {
            while let Some(f) = recv(&mut s) {
                node.on_frame(j, &f);
            }
            if j == 0 {
                node.zero_closed
                    .store(true, std::sync::atomic::Ordering::Relaxed);
                node.notify();
            }
        });
    }
    phase(&node, 0, &peers);
    run(&node, &peers, Duration::from_millis(run_ms));
    phase(&node, 1, &peers);
    let mut report = std::mem::take(&mut *node.report.lock().unwrap());
    report.clock = Some(clock::process_clock(me));
    let ex = node.ex.lock().unwrap();
    report.samples = (peers.iter())
        .map(|&j| PairSamples {
            initiator: me,
            responder: j,
            before: ex[0][&j].result(),
            after: ex[1][&j].result(),
        })
        .collect();
    drop(ex);
    if me != 0 {
        let mut f = vec![REPORT];
        f.extend(serde_json::to_vec(&report).unwrap());
        send(node.out(0), &f);
        // Process 0 closes first: closing here could lose the report.
        node.wait_until(
            "process 0",
            Instant::now() + Duration::from_secs(30),
            || node.zero_closed.load(std::sync::atomic::Ordering::Relaxed),
        );
        return;
    }
    node.wait_until(
        "the reports",
        Instant::now() + Duration::from_secs(30),
        || node.reports.lock().unwrap().len() == n - 1,
    );
    let mut all = std::mem::take(&mut *node.reports.lock().unwrap());
    all.push(report);
    let summary = check(all);
    let path = std::env::var(OUT_ENV).expect("an output path");
    std::fs::write(&path, serde_json::to_string_pretty(&summary).unwrap()).unwrap();
    std::process::exit(0);
}

/// Largest, median and count of a list.
fn stats(mut v: Vec<f64>) -> serde_json::Value {
    v.sort_by(f64::total_cmp);
    let at = |q: f64| {
        v.get(((v.len() as f64 - 1.0) * q).round() as usize)
            .copied()
    };
    serde_json::json!({"n": v.len(), "p50": at(0.5), "p99": at(0.99), "max": v.last()})
}

/// Per duration case: |errors|, bounds and naive bounds, ns.
type ErrBoundNaive = (Vec<f64>, Vec<f64>, Vec<f64>);

/// Process 0's check: every converted timestamp and duration against the truth.
fn check(reports: Vec<Report>) -> serde_json::Value {
    let mut clocks: Vec<ProcessClock> = reports.iter().map(|r| r.clock.unwrap()).collect();
    clocks.sort_by_key(|c| c.process);
    let samples = reports.iter().flat_map(|r| r.samples.clone()).collect();
    let a = Alignment::new(0, ROUNDS, clocks.clone(), samples).unwrap();
    let truth = |raw: u64| clocks[0].skew.map_or(raw, |s| s.apply(raw)) as f64;
    let tpn = |p: usize| clocks[p].ticks_per_ns;
    let mut violations = Vec::new();
    let mut per_pair: HashMap<(usize, usize), (Vec<f64>, Vec<f64>)> = HashMap::new();
    let mut durations: HashMap<String, ErrBoundNaive> = HashMap::new();
    let mut events: HashMap<(usize, u64), Event> = HashMap::new();
    for e in reports.iter().flat_map(|r| &r.events) {
        events.insert((e.from, e.id), *e);
        for (p, r) in [(e.from, e.start), (e.to, e.end)] {
            let s = a.to_reference(p, r.ticks).unwrap();
            let err = (s.ticks - truth(r.raw)).abs() / tpn(0);
            if err > s.bound_ns {
                violations.push(format!("process {p} reading: error {err} ns > {s:?}"));
            }
            let v = per_pair.entry((0, p)).or_default();
            v.0.push(err);
            v.1.push(s.bound_ns);
        }
        let d = a
            .duration((e.from, e.start.ticks), (e.to, e.end.ticks))
            .unwrap();
        let naive = a
            .duration_naive((e.from, e.start.ticks), (e.to, e.end.ticks))
            .unwrap();
        let want = (truth(e.end.raw) - truth(e.start.raw)) / tpn(0);
        let err = (d.ns - want).abs();
        if err > d.bound_ns {
            violations.push(format!("event {e:?}: error {err} ns > {d:?}"));
        }
        let v = durations.entry(format!("{:?}", d.case)).or_default();
        v.0.push(err);
        v.1.push(d.bound_ns);
        v.2.push(naive.bound_ns);
    }
    // ReT: the origin's returned stamp, the end side's ReTACK round trip.
    let rtts: HashMap<(usize, u64), u64> = (reports.iter())
        .flat_map(|r| r.ack_rtts.iter().map(|&(o, id, t)| ((o, id), t)))
        .collect();
    let (mut ret_err, mut ret_bound) = (Vec::new(), Vec::new());
    for (origin, r) in reports.iter().map(|r| (r.clock.unwrap().process, r)) {
        for &(id, start, returned) in &r.returned {
            let e = events[&(origin, id)];
            let rt = ReturnTrip {
                start,
                returned,
                ack_rtt: rtts[&(origin, id)],
            };
            let span = rt.span(tpn(origin), tpn(e.to));
            let want = (truth(e.end.raw) - truth(e.start.raw)) / tpn(0);
            ret_err.push(span.ns - want);
            ret_bound.push(span.bound_ns);
        }
    }
    let pairs: Vec<_> = (a.pairs.iter())
        .map(|p| {
            let (i, j) = (p.samples.initiator, p.samples.responder);
            let skew_ppm = |q: usize| clocks[q].skew.map_or(0.0, |s| s.ppm());
            serde_json::json!({
                "initiator": i, "responder": j,
                "before_min_rtt_ns": p.before_min_rtt_ns, "after_min_rtt_ns": p.after_min_rtt_ns,
                "bound_ns": p.bound_ns, "offset_ns": p.offset_ns, "rate_ppm": p.rate_ppm,
                "rate_bound_ppm": p.map.map(|m| m.rate_bound() * 1e6),
                "true_rate_ppm": skew_ppm(i) - skew_ppm(j),
            })
        })
        .collect();
    let mut conv: Vec<_> = per_pair.into_iter().collect();
    conv.sort_by_key(|(k, _)| *k);
    serde_json::json!({
        "processes": clocks.len(),
        "clocks": clocks,
        "pairs": pairs,
        "timestamps": conv.into_iter().map(|((_, p), (err, bound))| serde_json::json!({
            "process": p, "error_ns": stats(err), "bound_ns": stats(bound)})).collect::<Vec<_>>(),
        "durations": durations.into_iter().map(|(case, (err, bound, naive))| serde_json::json!({
            "case": case, "error_ns": stats(err), "bound_ns": stats(bound),
            "naive_bound_ns": stats(naive)})).collect::<Vec<_>>(),
        "ret": {"overstatement_ns": stats(ret_err), "bound_ns": stats(ret_bound)},
        "violations": violations,
    })
}

/// The child role: does nothing unless started by a validation run.
#[test]
#[ignore = "a role of processes_over_loopback_stay_within_their_bounds and clock-validate.sh"]
fn validate_child() {
    if let Ok(me) = std::env::var(ROLE_ENV) {
        child(me.parse().expect("a process index"));
    }
}

#[test]
fn processes_over_loopback_stay_within_their_bounds() {
    // Free ports, released just before the children bind them.
    let addrs: Vec<String> = (0..3)
        .map(|_| {
            let l = TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().to_string()
        })
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("summary.json");
    let skews = ["0:0", "-2500000:12", "40000000:-27"];
    let mut children: Vec<_> = (0..3)
        .map(|i| {
            std::process::Command::new(std::env::current_exe().unwrap())
                .args([
                    "--exact",
                    "validate_child",
                    "--include-ignored",
                    "--nocapture",
                ])
                .env(ROLE_ENV, i.to_string())
                .env(ADDRS_ENV, addrs.join(","))
                .env(OUT_ENV, &out)
                .env(RUN_MS_ENV, "300")
                .env(SKEW_ENV, skews[i])
                .stdout(std::process::Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    let zero = children[0].wait().unwrap();
    for c in &mut children[1..] {
        // They end once process 0 has closed its connections; a failed run leaves them waiting.
        if !zero.success() {
            let _ = c.kill();
        }
        assert!(c.wait().unwrap().success() || !zero.success());
    }
    assert!(zero.success(), "process 0 failed");
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(s["violations"], serde_json::json!([]), "{s:#}");
    assert!(s["timestamps"].as_array().unwrap().len() == 3, "{s:#}");
    for p in s["pairs"].as_array().unwrap() {
        // The synthetic rate difference is found within the rate's bound ((e1 + e2) / span:
        // tens of ppm over a 300 ms run).
        let (got, want) = (
            p["rate_ppm"].as_f64().unwrap(),
            p["true_rate_ppm"].as_f64().unwrap(),
        );
        assert!(
            (got - want).abs() <= p["rate_bound_ppm"].as_f64().unwrap(),
            "{p}"
        );
        assert!(p["bound_ns"].as_f64().unwrap() < 1e6, "{p}");
    }
}
