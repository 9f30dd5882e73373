//! What each handler writes for a given call sequence, through real files read back.

use std::path::Path;
use std::time::Duration;

use xorflow_measure::log::{
    read_dir, read_file, Event, HandlerSpec, LogConfig, LogFile, Logs, Records, RetKind,
};

fn logs(spec: &str, dir: &Path) -> Logs {
    Logs::new(LogConfig::parse(spec).unwrap().with_dir(dir), 3)
}

/// Logs `ids` with ticks `1000 + 10 * call number` on a channel of `spec`, closes it, and
/// returns the one file written.
fn write_and_read(spec: &str, ids: &[u64]) -> LogFile {
    let dir = tempfile::tempdir().unwrap();
    let mut ch = logs(spec, dir.path()).open("op.emit").unwrap();
    for (i, &id) in ids.iter().enumerate() {
        ch.log_at(id, 1000 + 10 * i as u64);
    }
    ch.close().unwrap();
    let mut d = read_dir(dir.path()).unwrap();
    assert!(d.incomplete.is_empty());
    assert_eq!(d.files.len(), 1);
    d.files.pop().unwrap()
}

fn events(f: &LogFile) -> Vec<Event> {
    match &f.records {
        Records::Events(v) => v.clone(),
        other => panic!("expected events, got {other:?}"),
    }
}

fn ev(id: u64, call: u64) -> Event {
    Event {
        id,
        ticks: 1000 + 10 * call,
    }
}

#[test]
fn null_writes_no_file() {
    let dir = tempfile::tempdir().unwrap();
    let mut ch = logs("null", dir.path()).open("op").unwrap();
    for id in 0..100 {
        ch.log(id);
    }
    ch.close().unwrap();
    assert!(!dir.path().exists() || std::fs::read_dir(dir.path()).unwrap().next().is_none());
}

#[test]
fn id_and_buffered_keep_every_call_across_blocks() {
    // 150 000 calls: two full 64 Ki blocks and a partial one; ids not monotone.
    let ids: Vec<u64> = (0..150_000u64)
        .map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15))
        .collect();
    for spec in ["id", "buffered"] {
        let f = write_and_read(spec, &ids);
        let want: Vec<Event> = ids
            .iter()
            .enumerate()
            .map(|(i, &id)| ev(id, i as u64))
            .collect();
        assert_eq!(events(&f), want, "{spec}");
        assert_eq!(f.header.spec, spec);
        assert_eq!(f.header.process, 3);
        assert_eq!(f.header.channel, "op.emit");
    }
}

#[test]
fn buffered_files_are_compressed() {
    let ids: Vec<u64> = (0..100_000).collect();
    let dir = tempfile::tempdir().unwrap();
    for spec in ["id", "buffered"] {
        let d = dir.path().join(spec);
        let mut ch = logs(spec, &d).open("op").unwrap();
        for (i, &id) in ids.iter().enumerate() {
            ch.log_at(id, 1000 + 10 * i as u64);
        }
        ch.close().unwrap();
    }
    let size = |s: &str| {
        std::fs::metadata(dir.path().join(s).join("op.p3.i0.xflog"))
            .unwrap()
            .len()
    };
    assert!(
        size("id") >= 100_000 * 16,
        "id is uncompressed: {}",
        size("id")
    );
    assert!(
        size("buffered") * 20 < size("id"),
        "buffered {} vs id {}",
        size("buffered"),
        size("id")
    );
}

#[test]
fn xoy_keeps_ids_whose_remainder_is_below_x() {
    let ids: Vec<u64> = (0..5000).collect();
    let f = write_and_read("xoy:2/1024", &ids);
    let kept: Vec<u64> = events(&f).iter().map(|e| e.id).collect();
    assert_eq!(kept, [0, 1, 1024, 1025, 2048, 2049, 3072, 3073, 4096, 4097]);
    assert_eq!(events(&f)[2], ev(1024, 1024));
    // Not a power of two: the division path.
    let f = write_and_read("xoy:1/100", &ids);
    let kept: Vec<u64> = events(&f).iter().map(|e| e.id).collect();
    assert_eq!(kept, (0..50).map(|k| k * 100).collect::<Vec<_>>());
    assert!(events(&write_and_read("xoy:0/7", &ids)).is_empty());
    assert_eq!(events(&write_and_read("xoy:7/7", &ids)).len(), 5000);
}

#[test]
fn downsample_keeps_calls_0_n_2n() {
    let ids = [50, 51, 52, 53, 54, 55, 56, 57, 58, 59];
    let f = write_and_read("downsample:3", &ids);
    assert_eq!(events(&f), [ev(50, 0), ev(53, 3), ev(56, 6), ev(59, 9)]);
    assert_eq!(events(&write_and_read("downsample:1", &ids)).len(), 10);
}

#[test]
fn first_last_keeps_the_first_and_the_last_call() {
    assert!(events(&write_and_read("first-last", &[])).is_empty());
    assert_eq!(events(&write_and_read("first-last", &[7])), [ev(7, 0)]);
    let f = write_and_read("first-last", &[7, 8, 9, 4]);
    assert_eq!(events(&f), [ev(7, 0), ev(4, 3)]);
}

#[test]
fn counter_samples_the_running_count_every_period() {
    let dir = tempfile::tempdir().unwrap();
    let mut ch = logs("counter:10ms", dir.path()).open("op").unwrap();
    assert_eq!(
        ch.spec(),
        &HandlerSpec::Counter {
            period: Duration::from_millis(10)
        }
    );
    for round in 0..5u64 {
        for id in 0..1000 {
            ch.log(round * 1000 + id);
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    ch.close().unwrap();
    let f = read_file(&dir.path().join("op.p3.i0.xflog")).unwrap();
    let Records::Counts(s) = f.records else {
        panic!("expected counts")
    };
    assert_eq!(s.first().unwrap().calls, 0, "a sample at open");
    assert_eq!(s.last().unwrap().calls, 5000, "a sample at close: {s:?}");
    assert!(s.len() >= 8, "about 12 periods of 10 ms: {s:?}");
    assert!(s
        .windows(2)
        .all(|w| w[0].calls <= w[1].calls && w[0].ticks <= w[1].ticks));
    // Some sample fell between rounds, i.e. the sampler ran while the channel was open.
    assert!(s.iter().any(|x| x.calls > 0 && x.calls < 5000));
}

#[test]
fn ret_records_start_end_and_round_trip_and_ignores_log() {
    let dir = tempfile::tempdir().unwrap();
    let mut ch = logs("ret", dir.path()).open("ysb.ret").unwrap();
    ch.ret_start(1);
    ch.log(99); // not a ReT call: ignored
    ch.ret_end(1);
    ch.ret_rtt(1, 40);
    ch.close().unwrap();
    let f = read_file(&dir.path().join("ysb.ret.p3.i0.xflog")).unwrap();
    let Records::Ret(r) = f.records else {
        panic!("expected ret records")
    };
    let kinds: Vec<(RetKind, u64)> = r.iter().map(|x| (x.kind, x.id)).collect();
    assert_eq!(
        kinds,
        [
            (RetKind::Start, 1),
            (RetKind::End, 1),
            (RetKind::RoundTrip, 1)
        ]
    );
    assert!(r[0].ticks <= r[1].ticks);
    assert_eq!(r[2].ticks, 40);
}

#[test]
fn ret_calls_on_other_handlers_are_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let mut ch = logs("buffered", dir.path()).open("op").unwrap();
    ch.ret_start(1);
    ch.ret_end(1);
    ch.log_at(2, 5);
    ch.close().unwrap();
    let f = read_file(&dir.path().join("op.p3.i0.xflog")).unwrap();
    assert_eq!(f.records, Records::Events(vec![Event { id: 2, ticks: 5 }]));
}

#[test]
fn the_same_name_on_two_threads_gets_two_files() {
    let dir = tempfile::tempdir().unwrap();
    let logs = logs("window.*=id", dir.path());
    let handles: Vec<_> = (0..2u64)
        .map(|t| {
            let logs = logs.clone();
            std::thread::spawn(move || {
                let mut ch = logs.open("window.emit").unwrap();
                for id in 0..10_000 {
                    ch.log(t * 1_000_000 + id);
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let d = read_dir(dir.path()).unwrap();
    assert_eq!(d.files.len(), 2);
    let mut instances: Vec<u32> = d.files.iter().map(|f| f.header.instance).collect();
    instances.sort();
    assert_eq!(instances, [0, 1]);
    for f in &d.files {
        let e = events(f);
        assert_eq!(e.len(), 10_000);
        let base = e[0].id;
        assert!(e.iter().enumerate().all(|(i, x)| x.id == base + i as u64));
    }
}

#[test]
fn drop_completes_the_file_and_open_files_are_partial() {
    let dir = tempfile::tempdir().unwrap();
    let mut ch = logs("buffered", dir.path()).open("op").unwrap();
    for id in 0..1000 {
        ch.log(id);
    }
    let d = read_dir(dir.path()).unwrap();
    assert!(d.files.is_empty());
    assert_eq!(d.incomplete, [dir.path().join("op.p3.i0.xflog.partial")]);
    drop(ch);
    let d = read_dir(dir.path()).unwrap();
    assert!(d.incomplete.is_empty());
    assert_eq!(events(&d.files[0]).len(), 1000);
}

#[test]
fn bad_channel_names_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let logs = logs("id", dir.path());
    for name in ["", "a/b", "../x", ".hidden", "sp ace", &"x".repeat(201)] {
        let e = logs
            .open(name)
            .err()
            .unwrap_or_else(|| panic!("{name:?} accepted"));
        assert!(e.to_string().contains("bad log channel name"), "{e}");
    }
}

#[test]
fn an_unwritable_directory_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("not-a-dir");
    std::fs::write(&file, b"x").unwrap();
    let e = logs("id", &file).open("op").err().unwrap();
    assert!(e.to_string().contains("not-a-dir"), "{e}");
}
