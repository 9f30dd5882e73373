//! The checkpoint store on a real directory: incremental chains, retention, and restore with
//! corrupted, truncated and missing files.

use std::collections::BTreeMap;
use xorflow_state::checkpoint::{Chain, CheckpointStore, Manifest};
use xorflow_state::delta::Delta;
use xorflow_state::{CacheConfig, KeyGroups, StateStore};

fn group(k: &u32) -> u16 {
    KeyGroups::DEFAULT.of_hash(u64::from(*k).wrapping_mul(0x9E37_79B9_7F4A_7C15))
}

/// Runs `checkpoints` checkpoints of one value table (keys 0..50, key `c % 50` bumped by
/// 100 + c at checkpoint c), committing each; returns the expected table after each.
fn run(store: &CheckpointStore, checkpoints: u64, max_chain: usize) -> Vec<BTreeMap<u32, u64>> {
    let mut s = StateStore::with_backend(
        Box::new(xorflow_state::backend::MemoryBackend::new()),
        CacheConfig::MEMORY,
    );
    let mut t = s.value_table::<u32, u64>("t", group).unwrap();
    let mut chain = Chain::new(max_chain);
    let mut expected = BTreeMap::new();
    let mut after = Vec::new();
    for c in 1..=checkpoints {
        for k in 0..50u32 {
            if c == 1 || u64::from(k) == c % 50 {
                *t.upsert(&k, || 0).unwrap() += 100 + c;
                *expected.entry(k).or_insert(0) += 100 + c;
            }
        }
        let mut d = Delta::new(chain.next_is_full());
        t.snapshot(&mut d).unwrap();
        chain.push(store.write_snapshot("win/0", c, &d).unwrap());
        let m = Manifest {
            checkpoint: c,
            job: "job-1".into(),
            completed_ms: 0,
            state: [("win/0".to_string(), chain.files().to_vec())].into(),
            positions: [("src/0".to_string(), format!("line={}", c * 10))].into(),
            holds: BTreeMap::new(),
        };
        store.commit(&m).unwrap();
        after.push(expected.clone());
    }
    after
}

fn restore(store: &CheckpointStore) -> (u64, BTreeMap<u32, u64>, Vec<String>) {
    let r = store.latest().unwrap().expect("a checkpoint");
    let deltas = store.read_chain(&r.manifest.state["win/0"]).unwrap();
    let mut s = StateStore::with_backend(
        Box::new(xorflow_state::backend::MemoryBackend::new()),
        CacheConfig::MEMORY,
    );
    let mut t = s.value_table::<u32, u64>("t", group).unwrap();
    t.restore(&deltas, &|_| true).unwrap();
    let got = (0..50u32)
        .filter_map(|k| t.get(&k).unwrap().map(|v| (k, *v)))
        .collect();
    (r.manifest.checkpoint, got, r.skipped)
}

fn files(dir: &std::path::Path, sub: &str) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir.join(sub))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .collect();
    v.sort();
    v
}

#[test]
fn increments_restore_exactly_and_only_retained_checkpoints_keep_files() {
    let dir = tempfile::tempdir().unwrap();
    let store = CheckpointStore::local(dir.path(), 3).unwrap();
    store.claim("job-1", false).unwrap();
    let after = run(&store, 12, 5);
    let (c, got, skipped) = restore(&store);
    assert_eq!((c, &got, skipped.len()), (12, &after[11], 0));
    assert_eq!(
        files(dir.path(), "manifests"),
        ["c0000000010", "c0000000011", "c0000000012"]
    );
    // Chains of at most 5: checkpoints 1, 6 and 11 are full; 10-12 need 6..=12.
    let snaps = files(dir.path(), "files");
    let want: Vec<String> = (6..=12).map(|c| format!("win_0-c{c:010}.snap")).collect();
    assert_eq!(snaps, want);
    // Increments are small: one key each.
    let full = std::fs::metadata(dir.path().join("files/win_0-c0000000006.snap"))
        .unwrap()
        .len();
    let inc = std::fs::metadata(dir.path().join("files/win_0-c0000000007.snap"))
        .unwrap()
        .len();
    assert!(inc * 10 < full, "increment {inc} bytes, full {full} bytes");
}

#[test]
fn a_corrupt_truncated_or_missing_file_falls_back_to_the_previous_checkpoint() {
    for damage in ["flip", "truncate", "delete"] {
        let dir = tempfile::tempdir().unwrap();
        let store = CheckpointStore::local(dir.path(), 3).unwrap();
        let after = run(&store, 8, 4);
        let newest = dir.path().join("files/win_0-c0000000008.snap");
        match damage {
            "flip" => {
                let mut b = std::fs::read(&newest).unwrap();
                let i = b.len() / 2;
                b[i] ^= 1;
                std::fs::write(&newest, b).unwrap();
            }
            "truncate" => {
                let b = std::fs::read(&newest).unwrap();
                std::fs::write(&newest, &b[..b.len() - 3]).unwrap();
            }
            _ => std::fs::remove_file(&newest).unwrap(),
        }
        let (c, got, skipped) = restore(&store);
        assert_eq!(c, 7, "{damage}");
        assert_eq!(got, after[6], "{damage}");
        assert_eq!(skipped.len(), 1, "{damage}");
        assert!(
            skipped[0].contains("win_0-c0000000008.snap"),
            "{damage}: {skipped:?}"
        );
    }
}

#[test]
fn a_damaged_manifest_falls_back_and_none_left_is_an_error_naming_the_files() {
    let dir = tempfile::tempdir().unwrap();
    let store = CheckpointStore::local(dir.path(), 2).unwrap();
    let after = run(&store, 5, 10);
    std::fs::write(dir.path().join("manifests/c0000000005"), b"garbage").unwrap();
    let (c, got, skipped) = restore(&store);
    assert_eq!((c, got), (4, after[3].clone()));
    assert!(
        skipped[0].contains("c0000000005") && skipped[0].contains("too short"),
        "{skipped:?}"
    );
    // Checkpoint 4's chain starts at checkpoint 1: without it, nothing is usable.
    std::fs::remove_file(dir.path().join("files/win_0-c0000000001.snap")).unwrap();
    let e = store.latest().unwrap_err().to_string();
    assert!(
        e.contains("no usable checkpoint") && e.contains("win_0-c0000000001.snap"),
        "{e}"
    );
}

#[test]
fn a_directory_with_checkpoints_needs_resume_and_the_same_job() {
    let dir = tempfile::tempdir().unwrap();
    let store = CheckpointStore::local(dir.path(), 3).unwrap();
    store.claim("job-1", false).unwrap();
    store.claim("job-1", false).unwrap(); // no checkpoint yet: still free
    run(&store, 2, 4);
    let e = store.claim("job-1", false).unwrap_err().to_string();
    assert!(
        e.contains("--resume") && e.contains("2 checkpoint(s)"),
        "{e}"
    );
    let e = store.claim("job-2", true).unwrap_err().to_string();
    assert!(e.contains("belongs to another job"), "{e}");
    store.claim("job-1", true).unwrap();
    assert!(CheckpointStore::local(dir.path(), 0).is_err());
}

/// Catches (issue 49, item 7): repeating a command that finished refused because of its own
/// checkpoints, and `--resume` of a finished job restoring its last checkpoint (re-running the
/// end of the job) instead of saying it finished.
#[test]
fn a_finished_run_is_started_afresh_and_has_nothing_to_resume() {
    use xorflow_state::checkpoint::Claim;
    let dir = tempfile::tempdir().unwrap();
    let store = CheckpointStore::local(dir.path(), 3).unwrap();
    assert_eq!(store.claim("job-1", false).unwrap(), Claim::Empty);
    run(&store, 2, 4);
    store.mark_finished().unwrap();
    let e = store.claim("job-1", true).unwrap_err().to_string();
    assert!(
        e.contains("finished") && e.contains("nothing to resume"),
        "{e}"
    );
    assert_eq!(
        store.claim("job-1", false).unwrap(),
        Claim::Afresh { removed: 2 }
    );
    assert!(
        store.latest().unwrap().is_none(),
        "the finished run's checkpoints are gone"
    );
    let files = std::fs::read_dir(dir.path().join("files")).map_or(0, |d| d.count());
    assert_eq!(files, 0);
    // Afresh, it is an unfinished run again: checkpoints need --resume once more.
    run(&store, 1, 2);
    assert!(store.claim("job-1", false).is_err());
    assert_eq!(store.claim("job-1", true).unwrap(), Claim::Resume);
}

#[test]
fn files_of_checkpoints_in_flight_survive_retention() {
    let dir = tempfile::tempdir().unwrap();
    let store = CheckpointStore::local(dir.path(), 1).unwrap();
    run(&store, 3, 10);
    // A snapshot of checkpoint 9 written before its manifest: retention must not take it.
    let f = store.write_snapshot("win/0", 9, &Delta::new(true)).unwrap();
    run(&store, 2, 10); // commits checkpoints 1 and 2 again: nothing newer than 3 is named
    assert!(dir.path().join(&f.name).exists(), "{} deleted", f.name);
}
