//! `flush_all` (the SIGTERM path): alone in its own test binary, because it completes every
//! channel of the process, which would cut the other tests' channels short.

use std::path::Path;

use xorflow_measure::log::{flush_all, read_dir, Event, LogConfig, LogFile, Logs, Records};

fn logs(spec: &str, dir: &Path) -> Logs {
    Logs::new(LogConfig::parse(spec).unwrap().with_dir(dir), 3)
}

fn events(f: &LogFile) -> Vec<Event> {
    match &f.records {
        Records::Events(v) => v.clone(),
        other => panic!("expected events, got {other:?}"),
    }
}

#[test]
fn flush_all_completes_live_channels_and_later_calls_are_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let logs = logs("a=buffered,b=first-last,c=counter:1h,d=xoy:1/2", dir.path());
    let mut a = logs.open("a").unwrap();
    let mut b = logs.open("b").unwrap();
    let mut c = logs.open("c").unwrap();
    let mut d = logs.open("d").unwrap();
    // 70 000 calls: one full block already shipped, the rest in the live block.
    for id in 0..70_000 {
        a.log(id);
        b.log(id);
        c.log(id);
        d.log(id);
    }
    flush_all().unwrap();
    a.log(1);
    b.log(1);
    c.log(1);
    // Filling a whole block after the flush must not write either.
    for id in 0..70_000 {
        d.log(id);
    }
    let dir_now = read_dir(dir.path()).unwrap();
    assert!(dir_now.incomplete.is_empty(), "{:?}", dir_now.incomplete);
    for ch in [a, b, c, d] {
        ch.close().unwrap();
    }
    let files = read_dir(dir.path()).unwrap().files;
    let by = |n: &str| files.iter().find(|f| f.header.channel == n).unwrap();
    assert_eq!(events(by("a")).len(), 70_000);
    assert_eq!(
        events(by("b")).iter().map(|e| e.id).collect::<Vec<_>>(),
        [0, 69_999]
    );
    let Records::Counts(s) = &by("c").records else {
        panic!()
    };
    assert_eq!(s.last().unwrap().calls, 70_000);
    assert_eq!(events(by("d")).len(), 35_000);
}
