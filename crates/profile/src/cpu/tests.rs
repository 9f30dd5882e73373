use super::*;

#[test]
fn stat_fields_are_counted_after_the_last_parenthesis() {
    // A comm with spaces and parentheses; utime 250, stime 50 ticks at 100 Hz = 3 s.
    let line = "4242 (my (odd) name) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 3 0 \
                1000 0 0";
    let s = parse_stat(line, 100).expect("parses");
    assert_eq!(s.comm, "my (odd) name");
    assert_eq!(s.cpu_ns, 3_000_000_000);
    assert_eq!(parse_stat(line, 1000).map(|s| s.cpu_ns), Some(300_000_000));
    assert_eq!(parse_stat("4242 (x) S 1 2", 100), None);
    assert_eq!(parse_stat("no parentheses", 100), None);
}

#[test]
fn own_process_is_read_and_a_missing_pid_is_named() {
    let me = read(std::process::id()).expect("own stat");
    assert!(!me.comm.is_empty());
    let e = read(u32::MAX - 1).expect_err("no such pid");
    assert!(matches!(e, CpuError::NoSuchProcess(_)));
    assert!(e.to_string().contains(&(u32::MAX - 1).to_string()));
}

const REPORT: &str = "\n# (Tip: ...)\n#\n#   PID    TID   cpu-clock\n  17721  17727  3919582548\n\
                      \x20 17719  17726  3917150814\n  17721  17724  1811864849\n";

#[test]
fn thread_counts_table_is_read_per_thread() {
    let c = parse_thread_counts(REPORT).expect("table");
    assert_eq!(c.len(), 3);
    assert_eq!(c[&(17721, 17727)], 3_919_582_548);
    assert_eq!(parse_thread_counts("no table here"), None);
}

#[test]
fn command_cpu_uses_counts_and_fills_in_sampled_threads_without_one() {
    let counts = parse_thread_counts(REPORT).expect("table");
    // Process 17721: both threads counted; its main thread sampled but without a count.
    let sampled: BTreeMap<u32, u64> = [(17727, 1), (17721, 500)].into();
    let (ns, src) = command_process_cpu(17721, &counts, &sampled);
    assert_eq!(ns, 3_919_582_548 + 1_811_864_849 + 500);
    assert_eq!(src, CpuSource::Mixed);
    let only_counted: BTreeMap<u32, u64> = [(17727, 1)].into();
    assert_eq!(
        command_process_cpu(17721, &counts, &only_counted).1,
        CpuSource::PerfCounts
    );
    let (ns, src) = command_process_cpu(99, &counts, &[(5, 700)].into());
    assert_eq!((ns, src), (700, CpuSource::Samples));
}
