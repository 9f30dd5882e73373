//! Oracle tests of the flights job.
//!
//! The oracle ([`xorflow_flights::oracle`]) is a plain batch computation of the job's rules,
//! written independently of the engine (its own CSV splitting, time parsing, lateness rule and
//! aggregation). The tests run the real job (`xorflow_flights::run`) on the nycflights13 data and
//! on a synthetic file, and compare the result rows, the late rows and the summary counters with
//! the oracle.
//!
//! The data file is found through `XORFLOW_FLIGHTS_CSV`, else `data/nycflights13/flights.csv` at
//! the workspace root; the tests panic (they do not skip) when it is missing: run `make data`.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use xorflow_flights::oracle::{
    assert_same_rows, data_path, expected, format_utc, is_late, parse_input, read_real_input,
    simulate_sources, Input as OInput, FLIGHTS_HEADER, OUT_HEADER,
};
use xorflow_flights::{run, FlightsConfig, Summary};
use xorflow_runtime::TrackingMode;
use xorflow_runtime::ValueName;
use xorflow_state::window::WindowForm;
use xorflow_state::BackendKind;

// ---------------------------------------------------------------------------------------------
// Locating the data
// ---------------------------------------------------------------------------------------------

/// The real `flights.csv`. Panics (the tests must not silently skip) when it is absent.
fn data_file() -> PathBuf {
    let p = data_path();
    assert!(
        p.is_file(),
        "the nycflights13 data file '{}' is missing: run `make data` first \
         (or point XORFLOW_FLIGHTS_CSV at flights.csv)",
        p.display()
    );
    p
}

/// The real data, parsed once by the oracle.
fn real_input() -> &'static OInput {
    static INPUT: OnceLock<OInput> = OnceLock::new();
    INPUT.get_or_init(|| read_real_input(&data_file()).unwrap_or_else(|e| panic!("{e}")))
}

// ---------------------------------------------------------------------------------------------
// Running the job and comparing
// ---------------------------------------------------------------------------------------------

/// One job run's settings.
#[derive(Clone, Copy, Debug)]
struct Run {
    workers: usize,
    sources: usize,
    lateness_s: u64,
    window_s: u64,
    granularity: u64,
    tracking: TrackingMode,
    window_state: WindowForm,
    state_backend: BackendKind,
}

impl Run {
    fn new(workers: usize, sources: usize, lateness_s: u64) -> Self {
        Run {
            workers,
            sources,
            lateness_s,
            window_s: 3600,
            granularity: 60,
            tracking: TrackingMode::Tracker,
            window_state: WindowForm::Fold,
            state_backend: BackendKind::Memory,
        }
    }
}

/// What one run produced.
struct Outcome {
    summary: Summary,
    header: String,
    rows: Vec<String>,
    late_file: String,
}

fn run_job(input: &Path, r: Run) -> Outcome {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("out.csv");
    let late = dir.path().join("late.csv");
    let mut cfg = FlightsConfig::new(input.to_path_buf(), out.clone());
    cfg.late_output = Some(late.clone());
    cfg.sources = r.sources;
    cfg.lateness_s = r.lateness_s;
    cfg.window_s = r.window_s;
    cfg.runtime.workers = r.workers;
    cfg.runtime.tracking = r.tracking;
    cfg.runtime.granularity = r.granularity;
    cfg.runtime.window_state = r.window_state;
    cfg.runtime.state.backend = r.state_backend;
    cfg.runtime.state.dir = dir.path().join("state");
    // A cache far smaller than the state, so on disk reads and writes go through the file:
    // fold-left holds a few keys per window, retain-all every element.
    cfg.runtime.state.cache = match r.window_state {
        WindowForm::Fold => xorflow_state::CacheConfig {
            dirty_limit: 2,
            capacity: 2,
        },
        WindowForm::Retain => xorflow_state::CacheConfig {
            dirty_limit: 64,
            capacity: 16,
        },
    };
    let summary = run(&cfg).unwrap_or_else(|e| panic!("{r:?}: the job failed: {e}"));
    let text = std::fs::read_to_string(&out).expect("read output");
    let mut lines = text.lines().map(str::to_string);
    let header = lines.next().unwrap_or_default();
    let mut rows: Vec<String> = lines.collect();
    rows.sort();
    let late_file = std::fs::read_to_string(&late).expect("read late output");
    Outcome {
        summary,
        header,
        rows,
        late_file,
    }
}

/// Runs the job on `input` and checks everything against the oracle's view `inp` of it.
fn check_run(input: &Path, inp: &OInput, r: Run) {
    let label = format!(
        "workers={} sources={} lateness={}s window={}s granularity={}s tracking={:?} \
         window-state={} state-backend={}",
        r.workers,
        r.sources,
        r.lateness_s,
        r.window_s,
        r.granularity,
        r.tracking,
        r.window_state.name(),
        r.state_backend.name()
    );
    let exp = expected(inp, r.lateness_s as i64, r.window_s as i64);
    let got = run_job(input, r);
    let s = &got.summary;

    assert_eq!(got.header, OUT_HEADER, "{label}: output header");
    assert_same_rows("result rows", &label, &exp.rows, &got.rows);

    assert_eq!(s.records_read, inp.rows, "{label}: records_read");
    assert_eq!(
        s.records_malformed,
        inp.malformed_lines.len() as u64,
        "{label}: records_malformed"
    );
    assert_eq!(
        s.records_late,
        exp.late.len() as u64,
        "{label}: records_late"
    );
    assert_eq!(s.records_emitted, exp.emitted, "{label}: records_emitted");
    assert_eq!(
        s.elements_below_frontier, 0,
        "{label}: elements_below_frontier"
    );
    assert_eq!(
        s.windows_emitted,
        got.rows.len() as u64,
        "{label}: windows_emitted vs rows written"
    );

    // The late output: the input header, then exactly the late rows.
    let mut late_lines = got.late_file.lines();
    assert_eq!(
        late_lines.next(),
        Some(inp.header.as_str()),
        "{label}: late output header"
    );
    let late_got: Vec<String> = late_lines.map(str::to_string).collect();
    let mut late_got_sorted = late_got.clone();
    late_got_sorted.sort();
    let mut late_exp_sorted = exp.late.clone();
    late_exp_sorted.sort();
    assert_same_rows("late rows", &label, &late_exp_sorted, &late_got_sorted);
    // Documented: the late rows are written in file order.
    assert_eq!(late_got, exp.late, "{label}: late rows not in file order");
}

// ---------------------------------------------------------------------------------------------
// The oracle itself
// ---------------------------------------------------------------------------------------------

fn synthetic_row(
    dep_time: &str,
    dep_delay: &str,
    origin: &str,
    minute: &str,
    time_hour: &str,
) -> String {
    format!(
        "2013,1,1,{dep_time},515,{dep_delay},830,819,11,UA,1545,N14228,{origin},IAH,227,1400,5,{minute},{time_hour}"
    )
}

#[test]
fn oracle_computes_hand_checked_values() {
    let rows = [
        synthetic_row("517", "2", "EWR", "15", "2013-01-01T10:00:00Z"),
        synthetic_row("533", "4", "EWR", "29", "2013-01-01T10:00:00Z"),
        synthetic_row("NA", "NA", "EWR", "30", "2013-01-01T10:00:00Z"),
        synthetic_row("600", "-3", "JFK", "0", "2013-01-01T11:00:00Z"),
        synthetic_row("700", "61", "JFK", "59", "2013-01-01T10:00:00Z"),
        synthetic_row("x", "1", "JFK", "0", "2013-01-01T11:00:00Z"),
    ];
    let text = format!("{FLIGHTS_HEADER}\n{}\n", rows.join("\n"));
    let inp = parse_input(&text);
    assert_eq!(inp.rows, 6);
    assert_eq!(inp.malformed_lines, vec![7]);
    assert_eq!(inp.valid[0].event, 1_357_034_400 + 15 * 60);
    assert_eq!(inp.valid[0].arrival, inp.valid[0].event + 120);
    let e = expected(&inp, 3600, 3600);
    assert_eq!(
        e.rows,
        vec![
            "2013-01-01T10:00:00Z,EWR,3,1,3.00,4",
            "2013-01-01T11:00:00Z,JFK,1,0,-3.00,-3",
        ]
    );
    assert_eq!(e.late, vec![rows[4].clone()]);
    assert_eq!(e.emitted, 4);
    assert_eq!(simulate_sources(&inp, 2, 3600), vec![4]);
    let e = expected(&inp, 24 * 3600, 7200);
    assert_eq!(
        e.rows,
        vec![
            "2013-01-01T10:00:00Z,EWR,3,1,3.00,4",
            "2013-01-01T10:00:00Z,JFK,2,0,29.00,61",
        ]
    );
    assert!(e.late.is_empty());
}

#[test]
fn lateness_only_depends_on_the_record_on_real_data() {
    let inp = real_input();
    for lateness in [3600, 24 * 3600, 600] {
        let rule: Vec<usize> = inp
            .valid
            .iter()
            .filter(|r| is_late(r, lateness))
            .map(|r| r.index)
            .collect();
        for n in [1, 3] {
            assert_eq!(
                simulate_sources(inp, n, lateness),
                rule,
                "simulated sources disagree with the per-record rule (sources={n}, L={lateness})"
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The job on the real data
// ---------------------------------------------------------------------------------------------

fn real_grid(lateness_s: u64) {
    let path = data_file();
    let inp = real_input();
    for workers in [1, 2, 4] {
        for sources in [1, 3] {
            check_run(&path, inp, Run::new(workers, sources, lateness_s));
        }
    }
}

#[test]
fn real_data_lateness_24h_matches_oracle() {
    // No flight of 2013 left more than 24 h late: nothing is late.
    assert!(expected(real_input(), 24 * 3600, 3600).late.is_empty());
    real_grid(24 * 3600);
}

#[test]
fn real_data_lateness_1h_matches_oracle() {
    assert!(!expected(real_input(), 3600, 3600).late.is_empty());
    real_grid(3600);
}

#[test]
fn real_data_without_tracking_matches_oracle() {
    let r = Run {
        tracking: TrackingMode::None,
        ..Run::new(2, 3, 3600)
    };
    check_run(&data_file(), real_input(), r);
}

#[test]
fn real_data_every_window_state_form_and_backend_matches_oracle() {
    // The changelog thesis's two window forms on both backends give the same rows (`run_job` gives
    // the disk backend a tiny cache).
    let path = data_file();
    let inp = real_input();
    for window_state in [WindowForm::Fold, WindowForm::Retain] {
        for state_backend in [BackendKind::Memory, BackendKind::Disk] {
            // The disk runs cost seconds each: the markers baseline runs in memory only.
            let modes: &[TrackingMode] = match state_backend {
                BackendKind::Memory => &[TrackingMode::Tracker, TrackingMode::Markers],
                BackendKind::Disk => &[TrackingMode::Tracker],
            };
            for &tracking in modes {
                let r = Run {
                    window_state,
                    state_backend,
                    tracking,
                    ..Run::new(2, 2, 3600)
                };
                check_run(&path, inp, r);
            }
        }
    }
}

#[test]
fn real_data_other_window_sizes_match_oracle() {
    let path = data_file();
    let inp = real_input();
    for window_s in [7200, 900] {
        check_run(
            &path,
            inp,
            Run {
                window_s,
                ..Run::new(2, 3, 3600)
            },
        );
    }
}

#[test]
fn real_data_windows_not_multiple_of_granularity_match_oracle() {
    // Windows whose ends fall inside a tracking slot, and slots longer than a window.
    let path = data_file();
    let inp = real_input();
    for (window_s, granularity) in [(5400, 60), (90, 60), (900, 3600)] {
        check_run(
            &path,
            inp,
            Run {
                window_s,
                granularity,
                ..Run::new(2, 2, 3600)
            },
        );
    }
}

// ---------------------------------------------------------------------------------------------
// The job on a synthetic file with malformed, NA and late rows
// ---------------------------------------------------------------------------------------------

/// A small deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Hand-written edge cases, generated rows, and malformed rows spread among them. The last row is
/// late (with a lateness of 10 minutes) and has no line terminator.
fn synthetic_text() -> String {
    let mut rows: Vec<String> = vec![
        synthetic_row("517", "2", "EWR", "15", "2013-01-01T10:00:00Z"),
        synthetic_row("533", "4", "LGA", "29", "2013-01-01T10:00:00Z"),
        synthetic_row("NA", "NA", "EWR", "30", "2013-01-01T10:00:00Z"),
        // wrong field counts
        "2013,1,1,517,515,2,830".to_string(),
        synthetic_row("517", "2", "EWR", "15", "2013-01-01T10:00:00Z") + ",extra",
        synthetic_row("600", "-3", "JFK", "0", "2013-01-01T11:00:00Z"),
        // late with L = 10 min
        synthetic_row("700", "25", "EWR", "45", "2013-01-01T10:00:00Z"),
        // exactly L: not late
        synthetic_row("612", "10", "EWR", "59", "2013-01-01T10:00:00Z"),
        // unparsable dep_delay
        synthetic_row("517", "x2", "EWR", "15", "2013-01-01T10:00:00Z"),
        synthetic_row("517", "1.5", "EWR", "15", "2013-01-01T10:00:00Z"),
        synthetic_row("517", "", "EWR", "15", "2013-01-01T10:00:00Z"),
        synthetic_row("613", "11", "JFK", "0", "2013-01-01T11:00:00Z"),
        // dep_time present, dep_delay NA; dep_time NA, dep_delay present
        synthetic_row("500", "NA", "LGA", "5", "2013-01-01T12:00:00Z"),
        synthetic_row("NA", "3", "LGA", "10", "2013-01-01T12:00:00Z"),
        // unparsable minute
        synthetic_row("517", "2", "EWR", "abc", "2013-01-01T10:00:00Z"),
        synthetic_row("517", "2", "EWR", "", "2013-01-01T10:00:00Z"),
        synthetic_row("517", "2", "EWR", "NA", "2013-01-01T10:00:00Z"),
        synthetic_row("900", "120", "JFK", "0", "2013-01-01T13:00:00Z"),
        // unparsable dep_time
        synthetic_row("5z7", "2", "EWR", "15", "2013-01-01T10:00:00Z"),
        synthetic_row("815", "-10", "JFK", "50", "2013-01-01T11:00:00Z"),
        // unparsable time_hour
        synthetic_row("517", "2", "EWR", "15", "yesterday"),
        synthetic_row("517", "2", "EWR", "15", ""),
        synthetic_row("1000", "5", "EWR", "0", "2013-01-02T00:00:00Z"),
        // same arrival as the previous one
        synthetic_row("1000", "0", "LGA", "5", "2013-01-02T00:00:00Z"),
    ];
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let origins = ["EWR", "JFK", "LGA"];
    for i in 0..3000 {
        let hour = 1_357_034_400 + 3600 * rng.below(48) as i64;
        let minute = rng.below(60);
        let dep_delay = match rng.below(10) {
            0 => "NA".to_string(),
            1..=2 => (rng.below(240) as i64).to_string(),
            _ => (rng.below(30) as i64 - 10).to_string(),
        };
        let dep_time = if dep_delay == "NA" && rng.below(2) == 0 {
            "NA"
        } else {
            "1234"
        };
        rows.push(synthetic_row(
            dep_time,
            &dep_delay,
            origins[rng.below(3) as usize],
            &minute.to_string(),
            &format_utc(hour),
        ));
        if i % 500 == 7 {
            rows.push(synthetic_row("517", "oops", "JFK", "1", &format_utc(hour)));
        }
    }
    rows.push(synthetic_row(
        "2359",
        "30",
        "LGA",
        "1",
        "2013-01-02T23:00:00Z",
    ));
    format!("{FLIGHTS_HEADER}\n{}", rows.join("\n"))
}

#[test]
fn synthetic_file_with_malformed_na_and_late_rows_matches_oracle() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("flights.csv");
    let text = synthetic_text();
    std::fs::write(&path, &text).expect("write synthetic csv");
    let inp = parse_input(&text);
    // 11 hand-written malformed rows + 6 generated ones.
    assert_eq!(
        inp.malformed_lines.len(),
        17,
        "synthetic file: malformed rows"
    );
    assert!(!expected(&inp, 600, 3600).late.is_empty());
    assert!(!expected(&inp, 0, 3600).late.is_empty());
    for tracking in [TrackingMode::Tracker, TrackingMode::None] {
        for workers in [1, 3] {
            for sources in [1, 2, 5] {
                for lateness_s in [600, 0] {
                    check_run(
                        &path,
                        &inp,
                        Run {
                            tracking,
                            ..Run::new(workers, sources, lateness_s)
                        },
                    );
                }
            }
        }
    }
}

#[test]
fn synthetic_file_with_more_sources_than_records_matches_oracle() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("flights.csv");
    let text = format!(
        "{FLIGHTS_HEADER}\n{}\n{}\n{}\n",
        synthetic_row("517", "2", "EWR", "15", "2013-01-01T10:00:00Z"),
        synthetic_row("517", "bad", "EWR", "15", "2013-01-01T10:00:00Z"),
        synthetic_row("600", "90", "JFK", "0", "2013-01-01T11:00:00Z"),
    );
    std::fs::write(&path, &text).expect("write synthetic csv");
    let inp = parse_input(&text);
    for sources in [4, 7] {
        for lateness_s in [3600, 0] {
            check_run(&path, &inp, Run::new(2, sources, lateness_s));
        }
    }
}

/// Checkpoints every millisecond in both window forms on both backends: the rows stay the
/// oracle's, checkpoints complete, retention keeps at most three, and the newest checkpoint
/// verifies and restores into window state holding no more flights than its source had emitted.
#[test]
fn real_data_with_checkpoints_matches_oracle_and_writes_restorable_checkpoints() {
    use xorflow_flights::output::DepartureStats;
    use xorflow_flights::reader::Flight;
    use xorflow_state::checkpoint::CheckpointStore;
    use xorflow_state::window::WindowState;
    let path = data_file();
    let inp = real_input();
    let exp = expected(inp, 3600, 3600);
    use xorflow_runtime::config::CheckpointCut::{Buffered, Versioned};
    use xorflow_runtime::TrackingMode::{Markers, Tracker};
    // trAcker's buffered cut with every form and backend; its versioned cut with fold-left
    // (which keeps versions) on both backends and retain-all (which buffers beside a versioned
    // sink); aligned barriers (markers) with two.
    let cases = [
        (Tracker, Buffered, WindowForm::Fold, BackendKind::Memory),
        (Tracker, Buffered, WindowForm::Fold, BackendKind::Disk),
        (Tracker, Buffered, WindowForm::Retain, BackendKind::Memory),
        (Tracker, Buffered, WindowForm::Retain, BackendKind::Disk),
        (Tracker, Versioned, WindowForm::Fold, BackendKind::Memory),
        (Tracker, Versioned, WindowForm::Fold, BackendKind::Disk),
        (Tracker, Versioned, WindowForm::Retain, BackendKind::Memory),
        (Markers, Buffered, WindowForm::Fold, BackendKind::Memory),
        (Markers, Buffered, WindowForm::Retain, BackendKind::Disk),
    ];
    for (tracking, cut, window_state, state_backend) in cases {
        {
            let label = format!(
                "{} on {}, {} ({} cut)",
                window_state.name(),
                state_backend.name(),
                tracking.name(),
                cut.name()
            );
            let dir = tempfile::tempdir().unwrap();
            let ck = dir.path().join("ck");
            let mut cfg = FlightsConfig::new(path.clone(), dir.path().join("out.csv"));
            cfg.runtime.tracking = tracking;
            cfg.lateness_s = 3600;
            cfg.runtime.window_state = window_state;
            cfg.runtime.state.backend = state_backend;
            cfg.runtime.state.dir = dir.path().join("state");
            cfg.runtime.checkpoint_interval = Some(std::time::Duration::from_millis(1));
            cfg.runtime.checkpoint_cut = cut;
            cfg.runtime.checkpoint_dir = Some(ck.clone());
            let s = run(&cfg).unwrap_or_else(|e| panic!("{label}: {e}"));
            let text = std::fs::read_to_string(dir.path().join("out.csv")).unwrap();
            let mut rows: Vec<String> = text.lines().skip(1).map(str::to_string).collect();
            rows.sort();
            assert_same_rows("result rows", &label, &exp.rows, &rows);
            assert_eq!(s.elements_below_frontier, 0, "{label}");
            let c = s.checkpoints.as_ref().expect("checkpoint summary");
            assert!(c.completed > 0, "{label}: no checkpoint completed");
            let store = CheckpointStore::local(&ck, 3).unwrap();
            let kept = std::fs::read_dir(ck.join("manifests")).unwrap().count();
            assert!((1..=3).contains(&kept), "{label}: {kept} manifests");
            let latest = store.latest().unwrap().expect("a checkpoint").manifest;
            assert_eq!(Some(latest.checkpoint), c.latest, "{label}");
            let emitted: u64 = latest.positions["source/0"].parse().unwrap();
            let mut held = 0u64;
            // The window's instances (the sink's hold its staged rows).
            let windows = latest
                .state
                .iter()
                .filter(|(i, _)| i.starts_with("hourly/"));
            assert_eq!(windows.clone().count(), cfg.runtime.workers, "{label}");
            for (instance, chain) in windows {
                let deltas = store.read_chain(chain).unwrap();
                let mut st = xorflow_state::StateStore::with_backend(
                    Box::new(xorflow_state::backend::MemoryBackend::new()),
                    xorflow_state::CacheConfig::MEMORY,
                );
                let group = std::sync::Arc::new(|_: &String| 0u16);
                let mut w: WindowState<String, Flight, DepartureStats> =
                    WindowState::new(&mut st, "windows", window_state, group).unwrap();
                w.restore(&deltas, &|_| true)
                    .unwrap_or_else(|e| panic!("{label}: {instance}: {e}"));
                while let Some((_, groups)) = w.close_next(u64::MAX, &FoldDepartures).unwrap() {
                    held += groups.iter().map(|(_, acc)| acc.flights).sum::<u64>();
                }
            }
            assert!(
                held <= emitted,
                "{label}: {held} flights held, {emitted} emitted"
            );
        }
    }
}

/// The flights aggregate as the state layer folds with it.
struct FoldDepartures;

impl xorflow_state::window::Fold<xorflow_flights::reader::Flight> for FoldDepartures {
    type Acc = xorflow_flights::output::DepartureStats;
    fn init(&self) -> Self::Acc {
        xorflow_runtime::Aggregate::init(&xorflow_flights::output::Departures)
    }
    fn add(&self, acc: &mut Self::Acc, el: &xorflow_flights::reader::Flight) {
        xorflow_runtime::Aggregate::add(&xorflow_flights::output::Departures, acc, el)
    }
}
