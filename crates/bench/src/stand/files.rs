//! How the stand writes its files: whole or not at all. `xorflow-lab bench report` rewrites the
//! results.csv, figures and REPORT.md of an existing folder, so a write that fails half-way (a full
//! disk, a signal) must leave the previous file, never a truncated one that reads as complete
//! (the defect review's partial-output defect; the flights job does the same in `examples/flights/src/files.rs`).

use anyhow::{Context, Result};
use std::io::Write as _;
use std::path::Path;

/// Writes `bytes` to `path` through a temporary file in the same folder, renamed over `path` once
/// it is complete and synced.
///
/// # Errors
/// The folder is missing or not writable, the disk is full, or `path` is a folder; `path` is then
/// as it was and no temporary file stays behind.
pub fn write_whole(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let fail = || format!("cannot write '{}'", path.display());
    let mut tmp = tempfile::Builder::new()
        .prefix(".xorflow-")
        .suffix(".tmp")
        .tempfile_in(dir)
        .with_context(fail)?;
    tmp.write_all(bytes).with_context(fail)?;
    tmp.as_file().sync_all().with_context(fail)?;
    tmp.persist(path).map_err(|e| e.error).with_context(fail)?;
    Ok(())
}

/// Creates a run's folder `dir` and writes its `meta.json`.
///
/// # Errors
/// The folder or the file cannot be written.
pub fn start_run_dir(dir: &Path, meta: &super::Meta) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create '{}'", dir.display()))?;
    write_whole(
        &dir.join("meta.json"),
        serde_json::to_string_pretty(meta)?.as_bytes(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_a_file_whole_and_leaves_nothing_else() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("REPORT.md");
        std::fs::write(&p, "old").unwrap();
        // A second name for the old file: written in place, it would change too.
        std::fs::hard_link(&p, d.path().join("old")).unwrap();
        write_whole(&p, b"new report").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "new report");
        assert_eq!(
            std::fs::read_to_string(d.path().join("old")).unwrap(),
            "old"
        );
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 2);
    }

    #[test]
    fn a_failed_write_keeps_the_previous_state_and_no_temporary() {
        let d = tempfile::tempdir().unwrap();
        // A folder where the file should go: the rename fails after the data was written.
        let p = d.path().join("results.csv");
        std::fs::create_dir(&p).unwrap();
        std::fs::write(p.join("inside"), "kept").unwrap();
        let e = write_whole(&p, b"rows").unwrap_err();
        assert!(format!("{e:#}").contains("results.csv"), "{e:#}");
        assert_eq!(std::fs::read_to_string(p.join("inside")).unwrap(), "kept");
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 1);
        // A missing folder: an error naming the path, nothing created.
        let q = d.path().join("missing").join("REPORT.md");
        let e = write_whole(&q, b"x").unwrap_err();
        assert!(format!("{e:#}").contains("missing/REPORT.md"), "{e:#}");
        assert!(!d.path().join("missing").exists());
    }
}
