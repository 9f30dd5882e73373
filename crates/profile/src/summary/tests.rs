use super::*;

fn order(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

#[test]
fn task_cpu_is_share_times_process_cpu_and_per_event() {
    let samples: BTreeMap<String, u64> = [("a".into(), 3), ("b".into(), 1)].into();
    let rows = attribute(
        &order(&["b", "a", "other"]),
        &samples,
        2_000_000_000,
        Some(1000),
    );
    let names: Vec<&str> = rows.iter().map(|r| r.task.as_str()).collect();
    assert_eq!(names, ["b", "a", "other"]);
    let a = &rows[1];
    assert_eq!(a.samples, 3);
    assert!((a.share - 0.75).abs() < 1e-12);
    assert!((a.cpu_s - 1.5).abs() < 1e-12);
    // 1.5 s over 1000 events = 1.5 ms per event.
    assert!((a.cpu_ns_per_event.expect("events") - 1.5e6).abs() < 1e-6);
    assert_eq!(rows[2].samples, 0);
    let sum: f64 = rows.iter().map(|r| r.share).sum();
    assert!((sum - 1.0).abs() < 1e-12);
}

#[test]
fn tasks_outside_the_order_come_last_and_no_samples_is_not_nan() {
    let samples: BTreeMap<String, u64> = [("z".into(), 2)].into();
    let rows = attribute(&order(&["a"]), &samples, 10, None);
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[1].task, "z");
    assert_eq!(rows[1].cpu_ns_per_event, None);
    let none = attribute(&order(&["a"]), &BTreeMap::new(), 1_000_000_000, Some(0));
    assert_eq!(
        (none[0].share, none[0].cpu_s, none[0].cpu_ns_per_event),
        (0.0, 0.0, None)
    );
}

#[test]
fn run_sums_processes_cpu_and_weighs_shares_by_samples() {
    let o = order(&["a", "b"]);
    // Process 1: 4 samples, 1 s CPU; process 2: 1 sample, 3 s CPU.
    let p1 = attribute(&o, &[("a".into(), 4)].into(), 1_000_000_000, Some(2));
    let p2 = attribute(&o, &[("b".into(), 1)].into(), 3_000_000_000, Some(2));
    let run = combine(&o, &[p1, p2], Some(2));
    assert!((run[0].share - 0.8).abs() < 1e-12);
    assert!((run[0].cpu_s - 1.0).abs() < 1e-12);
    assert!((run[1].cpu_s - 3.0).abs() < 1e-12);
    assert!((run[1].cpu_ns_per_event.expect("events") - 1.5e9).abs() < 1e-3);
}

#[test]
fn csv_has_the_header_and_quotes_names() {
    let rows = vec![TaskRow {
        task: "a, \"b\"".into(),
        samples: 2,
        share: 0.5,
        cpu_s: 0.25,
        cpu_ns_per_event: None,
    }];
    assert_eq!(
        csv(&rows),
        "task,samples,share,cpu_s,cpu_ns_per_event\n\"a, \"\"b\"\"\",2,0.500000,0.250000,\n"
    );
}
