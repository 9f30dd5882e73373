//! `xorflow nexmark generate`: the files it writes (counts per kind, JSON lines with the Nexmark
//! DDL's fields), that the same seed writes the same bytes, and its refusals (exit 2, one line
//! naming the problem).

use assert_cmd::Command;
use std::path::Path;

fn xorflow() -> Command {
    Command::cargo_bin("xorflow").expect("the xorflow binary")
}

/// Runs `xorflow nexmark generate` with `args`; returns (exit status, stdout, stderr).
fn generate(args: &[&str]) -> (Option<i32>, String, String) {
    let o = xorflow()
        .args(["nexmark", "generate"])
        .args(args)
        .output()
        .unwrap();
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn generate_ok(args: &[&str]) -> String {
    let (code, out, err) = generate(args);
    assert_eq!(code, Some(0), "stdout: {out}\nstderr: {err}");
    out
}

const FIELDS: [(&str, &[&str]); 3] = [
    (
        "person",
        &[
            "id",
            "name",
            "emailAddress",
            "creditCard",
            "city",
            "state",
            "dateTime",
            "extra",
        ],
    ),
    (
        "auction",
        &[
            "id",
            "itemName",
            "description",
            "initialBid",
            "reserve",
            "dateTime",
            "expires",
            "seller",
            "category",
            "extra",
        ],
    ),
    (
        "bid",
        &[
            "auction", "bidder", "price", "channel", "url", "dateTime", "extra",
        ],
    ),
];

fn files_of(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Catches: events sent to the wrong file, counts off the 1:3:46 proportions, lines that are
/// not one JSON object with the DDL's fields, temporary files left behind, a summary that
/// does not say what was written.
#[test]
fn ten_thousand_events_make_200_people_600_auctions_and_9200_bids() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let out = generate_ok(&["--events", "10000", "--out", d, "--seed", "5"]);
    assert_eq!(out.lines().count(), 1, "{out}");
    assert!(
        out.contains("10000 events (200 person, 600 auction, 9200 bid)"),
        "{out}"
    );
    assert_eq!(
        files_of(dir.path()),
        ["auction.json", "bid.json", "person.json"]
    );
    let mut bytes = 0;
    for ((name, fields), want) in FIELDS.iter().zip([200, 600, 9200]) {
        let text = std::fs::read_to_string(dir.path().join(format!("{name}.json"))).unwrap();
        bytes += text.len();
        assert!(text.ends_with('\n'));
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), want, "{name}");
        let mut last_time = String::new();
        for line in &lines {
            let v: serde_json::Value =
                serde_json::from_str(line).unwrap_or_else(|e| panic!("{name}: {e}: {line}"));
            let mut keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
            keys.sort_unstable();
            let mut want_keys = fields.to_vec();
            want_keys.sort_unstable();
            assert_eq!(keys, want_keys, "{name}: {line}");
            let first = format!("{{\"{}\":", fields[0]);
            assert!(line.starts_with(&first), "{name}: {line}");
            // Event order: timestamps never go back.
            let t = v["dateTime"].as_str().unwrap().to_string();
            assert!(t >= last_time, "{name}: {t} after {last_time}");
            last_time = t;
        }
        if *name == "person" {
            let first: serde_json::Value = serde_json::from_str(lines[0]).unwrap();
            assert_eq!(first["id"], 1000);
            assert_eq!(first["dateTime"], "2015-07-15 00:00:00.000");
        }
    }
    assert!(
        out.contains(&format!(", {bytes} bytes ")),
        "{out} vs {bytes}"
    );
}

/// Catches: output that depends on anything but the seed, base time and rate (a clock, a
/// thread RNG, the directory), and options that do not reach the generator.
#[test]
fn the_same_seed_writes_the_same_files_and_another_seed_other_ones() {
    let [a, b, c] = [(); 3].map(|()| tempfile::tempdir().unwrap());
    for (dir, seed) in [(&a, "11"), (&b, "11"), (&c, "12")] {
        let d = dir.path().to_str().unwrap();
        generate_ok(&["--events", "5000", "--out", d, "--seed", seed]);
    }
    let read = |dir: &tempfile::TempDir, name: &str| {
        std::fs::read(dir.path().join(format!("{name}.json"))).unwrap()
    };
    for (name, _) in FIELDS {
        assert!(read(&a, name) == read(&b, name), "{name} differs");
        assert!(read(&a, name) != read(&c, name), "{name} ignores the seed");
    }
    // Run again into the same directory: the files are replaced by the same bytes.
    let before = read(&a, "bid");
    generate_ok(&[
        "--events",
        "5000",
        "--out",
        a.path().to_str().unwrap(),
        "--seed",
        "11",
    ]);
    assert!(read(&a, "bid") == before);
    assert_eq!(files_of(a.path()).len(), 3);

    // --base-time and --rate move the timestamps.
    let d = tempfile::tempdir().unwrap();
    generate_ok(&[
        "--events",
        "100",
        "--out",
        d.path().to_str().unwrap(),
        "--base-time",
        "0",
        "--rate",
        "10",
    ]);
    let bids = String::from_utf8(read(&d, "bid")).unwrap();
    let last: serde_json::Value = serde_json::from_str(bids.lines().last().unwrap()).unwrap();
    // Event 99 at 10 events/s: 9.9 s after the epoch.
    assert_eq!(last["dateTime"], "1970-01-01 00:00:09.900");
}

/// Asserts a refusal: exit 2, nothing on stdout, one line on stderr containing `needle`.
fn refused(args: &[&str], needle: &str) {
    let (code, out, err) = generate(args);
    assert_eq!(code, Some(2), "{args:?}: stdout {out}\nstderr {err}");
    assert_eq!(out, "", "{args:?}");
    assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
    assert!(err.starts_with("error: "), "{args:?}: {err}");
    assert!(err.contains(needle), "{args:?}: {err}");
}

#[test]
fn bad_options_are_refused_with_one_line_naming_the_problem() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    refused(&["--events", "0", "--out", d], "--events 0");
    refused(&["--events", "10", "--out", d, "--rate", "0"], "--rate 0");
    refused(
        &[
            "--events",
            "10",
            "--out",
            d,
            "--base-time",
            "-99999999999999999",
        ],
        "--base-time",
    );
    let missing = dir.path().join("missing");
    let m = missing.to_str().unwrap();
    refused(&["--events", "10", "--out", m], m);
    assert!(
        !missing.exists(),
        "a missing --out directory is not created"
    );
    let file = dir.path().join("file");
    std::fs::write(&file, "x").unwrap();
    refused(
        &["--events", "10", "--out", file.to_str().unwrap()],
        "not a directory",
    );
    assert_eq!(files_of(dir.path()), ["file"], "nothing written");
}

/// An --out directory that cannot be written: refused before anything is generated, and a
/// previous file there is left as it was.
#[test]
fn an_unwritable_out_directory_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let ro = dir.path().join("ro");
    std::fs::create_dir(&ro).unwrap();
    std::fs::write(ro.join("bid.json"), "old").unwrap();
    std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o555)).unwrap();
    // Root writes anyway: then take a directory no one can create files in.
    let target = if std::fs::write(ro.join("probe"), "").is_ok() {
        std::fs::remove_file(ro.join("probe")).unwrap();
        Path::new("/proc").to_path_buf()
    } else {
        ro.clone()
    };
    let t = target.to_str().unwrap();
    refused(&["--events", "10", "--out", t], t);
    assert_eq!(std::fs::read_to_string(ro.join("bid.json")).unwrap(), "old");
    std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o755)).unwrap();
}
