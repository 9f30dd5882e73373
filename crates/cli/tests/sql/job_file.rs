//! `xorflow sql --config job.toml`: a job file lists the SQL files and options; its run writes
//! what the same command line writes, and a bad key is refused naming it and the file.

use crate::oracle::{ddl, generate, query_to_file, read_csv};
use assert_cmd::Command;

#[test]
fn a_job_file_runs_its_files_as_the_command_line_does() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    generate(&data, 20_000);
    let out = dir.path().join("q5.csv");
    let (ddl, q5) = (
        ddl(&data, dir.path()),
        query_to_file("q5", &out, dir.path()),
    );
    Command::cargo_bin("xorflow")
        .unwrap()
        .args(["sql", "--workers", "2", "--file"])
        .arg(&ddl)
        .arg("--file")
        .arg(&q5)
        .assert()
        .success();
    let sorted = |mut rows: Vec<Vec<String>>| {
        rows.sort();
        rows
    };
    let want = sorted(read_csv(&out, true));
    assert!(!want.is_empty(), "q5 over 20,000 events wrote no rows");
    std::fs::remove_file(&out).unwrap();
    let job = dir.path().join("q5.toml");
    let text = format!(
        "job = \"sql\"\n[options]\nfile = [{:?}, {:?}]\nworkers = 2\ncheckpoint-interval = \"100ms\"\n\
         checkpoint-dir = {:?}\n",
        ddl.display().to_string(),
        q5.display().to_string(),
        dir.path().join("ck").display().to_string()
    );
    std::fs::write(&job, text).unwrap();
    let o = Command::cargo_bin("xorflow")
        .unwrap()
        .args(["sql", "--config"])
        .arg(&job)
        .arg("--workers")
        .arg("1")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(sorted(read_csv(&out, true)), want, "the job file's run");
    // The file's checkpoint options applied: the folder records the job (a run this short may
    // end before its first checkpoint).
    assert!(
        dir.path().join("ck/job").exists(),
        "the file's checkpoint options were not applied"
    );
    // An option `xorflow sql` does not have: exit 2, naming the key and the file.
    std::fs::write(&job, "[options]\nspeed = 2\n").unwrap();
    let o = Command::cargo_bin("xorflow")
        .unwrap()
        .args(["sql", "--config"])
        .arg(&job)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("unknown key 'options.speed': `xorflow sql` has no option --speed")
            && err.contains(&job.display().to_string()),
        "{err}"
    );
}
