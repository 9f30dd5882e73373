use super::*;

/// Four samples captured from `perf script --inline` of `xorflow-lab bench chain --processes 2`
/// (dwarf) and one from a frame-pointer recording.
const FIXTURE: &str = include_str!("../../tests/fixtures/perf-script-chain.txt");

fn all(text: &str) -> Vec<Sample> {
    let mut v = Vec::new();
    parse(text.as_bytes(), |r| {
        if let Record::Sample(s) = r {
            v.push(s)
        }
    })
    .expect("parses");
    v
}

#[test]
fn real_capture_parses_into_samples_leaf_first() {
    let s = all(FIXTURE);
    assert_eq!(s.len(), 4);
    let w = &s[0];
    assert_eq!(
        (w.pid, w.tid, w.comm.as_str(), w.period),
        (17304, 17313, "xorflow-worker-", 10_101_010)
    );
    assert_eq!(w.frames.len(), 28);
    assert_eq!(w.frames[0].function, "<u64>::is_multiple_of");
    // An inlined frame takes the module of the real frame it was inlined into.
    assert_eq!(w.frames[0].module, "xorflow");
    assert_eq!(
        w.frames[1].function,
        "xorflow_bench::chain::ChainSpans::record"
    );
    let root = w.frames.last().expect("frames");
    assert_eq!(
        (root.function.as_str(), root.module.as_str()),
        ("clone3", "libc.so.6")
    );
    assert!(is_complete(&w.frames));
}

#[test]
fn repeated_frame_at_one_address_is_kept_once() {
    let s = all(FIXTURE);
    let net = &s[1];
    assert_eq!(net.comm, "xorflow-net-1");
    assert_eq!(
        net.frames.len(),
        11,
        "__libc_recv is printed twice at one address"
    );
    assert_eq!(net.frames[0].module, "[kernel.kallsyms]");
    assert_eq!(net.frames[10].function, "__libc_recv");
    assert!(!is_complete(&net.frames));
}

#[test]
fn cut_short_stacks_are_not_complete() {
    let s = all(FIXTURE);
    // dwarf: the 8 KiB stack copy ended inside tokio; perf adds an [unknown] end marker.
    assert_eq!(
        s[2].frames.last().map(|f| f.function.as_str()),
        Some("[unknown]")
    );
    assert!(!is_complete(&s[2].frames));
    // fp: one frame.
    assert_eq!(s[3].frames.len(), 1);
    assert!(!is_complete(&s[3].frames));
}

#[test]
fn thread_names_with_spaces_and_symbols_with_parentheses() {
    let text = "C2 CompilerThre 123/456   10101010 cpu-clock: \n\
                \t    7f00 foo(int, char) const (/usr/lib/libx.so)\n\
                \t    7f10 Interpreter (/tmp/perf-123.map)\n\
                \t    7f20 [unknown] ([unknown])\n";
    let s = all(text);
    assert_eq!(s.len(), 1);
    assert_eq!(s[0].comm, "C2 CompilerThre");
    assert_eq!((s[0].pid, s[0].tid), (123, 456));
    assert_eq!(s[0].frames[0].function, "foo(int, char) const");
    assert_eq!(s[0].frames[0].module, "libx.so");
    assert_eq!(s[0].frames[1].module, "perf-123.map");
    assert_eq!(s[0].frames[2].module, "[unknown]");
}

#[test]
fn malformed_lines_are_errors_with_their_line() {
    let mut n = 0;
    let e = parse("\n\t  7f00 foo (x)\n".as_bytes(), |_| n += 1).expect_err("frame first");
    assert_eq!(e.line, 2);
    assert!(e.to_string().contains("before any sample header"), "{e}");
    let e =
        parse("x 1/2 10 cpu-clock:\nhello world\n".as_bytes(), |_| n += 1).expect_err("bad header");
    assert_eq!(e.line, 2);
    let e = parse(
        "x 1/2 10 cpu-clock:\n\tnot-hex foo (x)\n".as_bytes(),
        |_| n += 1,
    )
    .expect_err("bad ip");
    assert!(e.to_string().contains("IP SYMBOL (MODULE)"), "{e}");
}

#[test]
fn jvm_perf_map_names_lose_return_and_argument_types() {
    let text = "stage-0 (1/2)#0 9/10 10101010 cpu-clock:\n\
                \t    7f00 void org.apache.flink.streaming.api.operators.StreamMap.processElement(org.apache.flink.streaming.runtime.streamrecord.StreamRecord) (/tmp/perf-9.map)\n\
                \t    7f10 Interpreter (/tmp/perf-9.map)\n\
                \t    7f20 StubRoutines (1) (/tmp/perf-9.map)\n\
                \t    7f30 foo(int) (/usr/lib/libx.so)\n";
    let s = all(text);
    assert_eq!(s[0].comm, "stage-0 (1/2)#0");
    let names: Vec<&str> = s[0].frames.iter().map(|f| f.function.as_str()).collect();
    assert_eq!(
        names,
        [
            "org.apache.flink.streaming.api.operators.StreamMap.processElement",
            "Interpreter",
            "StubRoutines (1)",
            "foo(int)",
        ]
    );
}

#[test]
fn execs_name_processes_and_other_task_events_are_skipped() {
    let text = "       perf-exec     0/0     PERF_RECORD_COMM: perf-exec:17719/17719\n\
                \x20        xorflow 17719/17719 PERF_RECORD_COMM exec: xorflow:17719/17719\n\
                \x20        xorflow 17719/17719 PERF_RECORD_FORK(17721:17721):(17719:17719)\n\
                \x20  xorflow-net-1 17721/17724 PERF_RECORD_COMM: xorflow-net-1:17721/17724\n\
                java 17721/17721   10101010 cpu-clock: \n\
                \t    7f00 main (/usr/bin/java)\n\
                \x20           java 17721/17721 PERF_RECORD_COMM exec: a:b:17721/17721\n";
    let mut v = Vec::new();
    parse(text.as_bytes(), |r| v.push(r)).expect("parses");
    assert_eq!(v.len(), 3, "{v:?}");
    assert_eq!(
        v[0],
        Record::Exec {
            pid: 17719,
            name: "xorflow".into()
        }
    );
    assert!(matches!(&v[1], Record::Sample(s) if s.frames.len() == 1));
    assert_eq!(
        v[2],
        Record::Exec {
            pid: 17721,
            name: "a:b".into()
        }
    );
}
