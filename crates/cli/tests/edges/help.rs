//! The help a newcomer reads (issue 49, item 13): `--help` short, under headings, with
//! examples; `--help-all` everything; no internal references; the two kinds of lateness named
//! apart, the old names still accepted; `xorflow --help` listing every job kind.

use crate::common::bin;
use std::process::Command;

fn help(args: &[&str]) -> String {
    let o = Command::new(bin()).args(args).output().unwrap();
    assert!(
        o.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap()
}

/// Engine and experiment knobs a newcomer's job does not need.
const KNOBS: [&str; 6] = [
    "--tracker-regions",
    "--rtt-topology",
    "--ack-multiplier",
    "--net-writes",
    "--batch-size",
    "--timer-slack",
];

/// Catches: `run file --help` listing 60 options in no order (the knobs among the job's own
/// options), without examples, and `--help-all` losing any option.
#[test]
fn job_help_is_short_grouped_and_has_examples() {
    for job in ["file", "flights", "flights-weather"] {
        let short = help(&["run", job, "--help"]);
        let headings: Vec<&str> = (short.lines())
            .filter(|l| l.ends_with(':') && !l.starts_with(' '))
            .collect();
        let want = [
            "Job:",
            "Input and output:",
            "Checkpoints and recovery:",
            "Cluster:",
        ];
        for h in want {
            assert!(
                headings.contains(&h),
                "{job}: no heading {h} in {headings:?}"
            );
        }
        let (job_at, cluster_at) = (
            headings.iter().position(|h| *h == "Job:"),
            headings.iter().position(|h| *h == "Cluster:"),
        );
        assert!(job_at < cluster_at, "{job}: {headings:?}");
        for k in KNOBS {
            assert!(!short.contains(k), "{job}: {k} in the short help");
        }
        assert_eq!(help(&["run", job, "-h"]), short);
        let all = help(&["run", job, "--help-all"]);
        for k in KNOBS
            .iter()
            .chain(&["--workers", "--checkpoint-interval", "--output"])
        {
            assert!(all.contains(k), "{job}: {k} missing from --help-all");
        }
        assert!(all.contains("Engine tuning:") && all.contains("Experiments:"));
        for text in [&short, &all] {
            for internal in ["seed 00", "issue 4", "issue 5", "../shared"] {
                assert!(!text.contains(internal), "{job}: '{internal}' in its help");
            }
        }
    }
    let file = help(&["run", "file", "--help"]);
    assert!(
        file.contains("Examples:\n  xorflow run file --input"),
        "{file}"
    );
    let options = (file.lines())
        .take_while(|l| *l != "Examples:")
        // An option's own line, not a wrapped description that starts with one.
        .filter(|l| l.trim_start().starts_with('-') && l.len() - l.trim_start().len() <= 6)
        .count();
    assert!(options <= 26, "{options} options in the short help");
}

/// Catches: `--lateness` (how far out of order the input is) and `--allowed-lateness` (how long
/// a closed window takes late rows) easy to confuse, `run flights --help` calling the first
/// "Allowed lateness", and the old name refused once renamed.
#[test]
fn the_two_kinds_of_lateness_are_named_apart_and_the_old_name_still_works() {
    for job in ["file", "flights"] {
        let short = help(&["run", job, "--help"]);
        assert!(
            short.contains("--out-of-orderness <DURATION>"),
            "{job}: {short}"
        );
        assert!(!short.contains("Allowed lateness:"), "{job}: {short}");
    }
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("s.csv");
    std::fs::write(&input, "ts,k\n60,a\n50,a\n61,a\n").unwrap();
    let out = dir.path().join("out.csv");
    let run = |lateness_flag: &str| {
        let o = Command::new(bin())
            .args(["run", "file", "--time-field", "ts", "--key", "k"])
            .args(["--window", "tumbling:1m", lateness_flag, "15s"])
            .arg("--input")
            .arg(&input)
            .arg("--output")
            .arg(&out)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        std::fs::read_to_string(&out).unwrap()
    };
    let new = run("--out-of-orderness");
    assert_eq!(
        new,
        "window_start,window_end,k,count\n0,60,a,1\n60,120,a,2\n"
    );
    assert_eq!(run("--lateness"), new);
}

/// Catches: `xorflow --help` not mentioning `run file` (the job for a user's own data).
#[test]
fn the_top_help_lists_every_job_kind_one_line_each() {
    let top = help(&["--help"]);
    let jobs: Vec<&str> = (top.lines())
        .skip_while(|l| *l != "Jobs:")
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .collect();
    let names: Vec<&str> = jobs
        .iter()
        .filter_map(|l| l.split_whitespace().nth(1))
        .collect();
    assert_eq!(names, ["flights", "flights-weather", "file"], "{top}");
    assert!(jobs.iter().all(|l| l.starts_with("  run ")), "{jobs:?}");
}
