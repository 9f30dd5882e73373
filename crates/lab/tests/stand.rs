//! The bench stand's smoke profile end to end (what CI runs): `xorflow-lab bench all --smoke` writes,
//! per experiment, a results folder with meta.json, results.csv (the documented columns, every
//! run successful and measured), the figures as SVGs and a REPORT.md that links them.

use assert_cmd::Command;
use std::path::Path;
use std::time::Duration;
use xorflow_bench::stand::experiments::snapshots::STAGE_COLUMNS;
use xorflow_bench::stand::experiments::ALL;
use xorflow_bench::stand::report::CSV_COLUMNS;
use xorflow_bench::stand::Meta;
use xorflow_runtime::ValueName;

fn header_and_rows(path: &Path) -> (Vec<String>, Vec<csv::StringRecord>) {
    let mut r = csv::Reader::from_path(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let header = r.headers().unwrap().iter().map(str::to_string).collect();
    let rows = r.records().map(|x| x.unwrap()).collect();
    (header, rows)
}

#[test]
fn smoke_profile_writes_csv_figures_and_reports() {
    let out = tempfile::tempdir().unwrap();
    let run = Command::cargo_bin("xorflow-lab")
        .unwrap()
        .args(["bench", "all", "--smoke", "--out"])
        .arg(out.path())
        .timeout(Duration::from_secs(240))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "bench all --smoke failed:\n{stderr}");
    for e in ALL {
        let dirs: Vec<_> = std::fs::read_dir(out.path())
            .unwrap()
            .map(|d| d.unwrap().path())
            .filter(|p| {
                p.file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with(&format!("{}-", e.name()))
            })
            .collect();
        assert_eq!(dirs.len(), 1, "{}: one results folder", e.name());
        let dir = &dirs[0];
        // Read back as the stand writes it: a field missing from meta.json fails here.
        let meta: Meta =
            serde_json::from_str(&std::fs::read_to_string(dir.join("meta.json")).unwrap())
                .unwrap_or_else(|err| panic!("{}: meta.json: {err}", e.name()));
        for (k, v) in [("command", &meta.command), ("git", &meta.git)] {
            assert!(!v.is_empty(), "{}: meta.json has no {k}", e.name());
        }
        assert!(meta.cpus > 0, "{}: meta.json has no cpus", e.name());
        assert_eq!(meta.profile, "smoke");

        let (header, rows) = header_and_rows(&dir.join("results.csv"));
        assert_eq!(header, CSV_COLUMNS, "{}: results.csv columns", e.name());
        assert!(!rows.is_empty(), "{}: no runs", e.name());
        let col = |name: &str| header.iter().position(|h| h == name).unwrap();
        for r in &rows {
            assert_eq!(&r[col("experiment")], e.name());
            assert_eq!(&r[col("ok")], "true", "{}: a run failed: {:?}", e.name(), r);
            let elements: f64 = r[col("elements")].parse().unwrap();
            let warmup: f64 = r[col("warmup")].parse().unwrap();
            assert!(elements > warmup && warmup > 0.0, "{}: {r:?}", e.name());
            // Every run was rate-controlled and kept (about) to its rate.
            let rate: f64 = r[col("rate")].parse().unwrap();
            let achieved: f64 = r[col("achieved_rate")].parse().unwrap();
            assert!(
                rate > 0.0 && achieved > 0.5 * rate && achieved < 1.1 * rate,
                "{}: achieved {achieved} of {rate}",
                e.name()
            );
            let tracking_on = &r[col("config")] != "none";
            if tracking_on && e.name() != "throughput" {
                assert!(
                    !r[col("notification_p99_us")].is_empty(),
                    "{}: no notification latency: {r:?}",
                    e.name()
                );
            }
        }
        if e.name() == "snapshots" {
            let (h, rows) = header_and_rows(&dir.join("stages.csv"));
            assert_eq!(h, STAGE_COLUMNS, "stages.csv columns");
            assert!(
                rows.iter().any(|r| r[5].parse::<u64>().unwrap() > 0),
                "nothing buffered"
            );
        }

        let report = std::fs::read_to_string(dir.join("REPORT.md")).unwrap();
        assert!(
            report.contains("Paper's claim and this run"),
            "{}",
            e.name()
        );
        let figures: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|d| d.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "svg"))
            .collect();
        assert!(!figures.is_empty(), "{}: no figures", e.name());
        for p in &figures {
            let svg = std::fs::read_to_string(p).unwrap();
            assert!(
                svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"),
                "{} is not an SVG",
                p.display()
            );
            let name = p.file_name().unwrap().to_string_lossy();
            assert!(report.contains(&*name), "REPORT.md does not show {name}");
        }
    }
}
