//! The files a job writes (examples/flights re-exports this module as `files`). Two options
//! naming the same file are refused before anything is opened for writing; each output is
//! written to a temporary file beside its final path and renamed there only when the whole run
//! has succeeded, so that a failed, killed or interrupted run leaves the previous file as it
//! was and never a partial one at the final path.

use std::fs::File;
use std::path::{Component, Path, PathBuf};
use std::sync::{Mutex, MutexGuard, Once, PoisonError};

/// What a path names, to tell whether two paths are one file.
#[derive(PartialEq, Eq)]
enum Identity {
    /// An existing regular file: its device and inode (hard links, symbolic links and any
    /// spelling of its path compare equal).
    Inode(u64, u64),
    /// Anything else: the real path of its directory and its name.
    Path(PathBuf),
}

/// `p` with `.` and `..` removed lexically.
fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            c => out.push(c),
        }
    }
    out
}

fn identity(p: &Path) -> Identity {
    use std::os::unix::fs::MetadataExt;
    // `dir/new/../file` names no file yet, but it will be `dir/file` once `dir/new` is created.
    let abs = normalize(&std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf()));
    for q in [p, &abs] {
        if let Ok(m) = std::fs::metadata(q) {
            if m.is_file() {
                return Identity::Inode(m.dev(), m.ino());
            }
            if let Ok(real) = q.canonicalize() {
                return Identity::Path(real);
            }
        }
    }
    match (abs.parent(), abs.file_name()) {
        (Some(dir), Some(name)) => {
            Identity::Path(dir.canonicalize().unwrap_or_else(|_| dir.into()).join(name))
        }
        _ => Identity::Path(abs),
    }
}

/// Refuses two of `paths` (an option's name and its path) that name the same file: writing one
/// would destroy the other (the input, or another output).
///
/// # Errors
/// A message naming both options and paths.
pub fn check_distinct(paths: &[(&str, &Path)]) -> Result<(), String> {
    let ids: Vec<Identity> = paths.iter().map(|(_, p)| identity(p)).collect();
    for (i, (a, pa)) in paths.iter().enumerate() {
        for (j, (b, pb)) in paths.iter().enumerate().skip(i + 1) {
            if ids[i] == ids[j] {
                return Err(format!(
                    "{a} '{}' and {b} '{}' are the same file: one would overwrite the other",
                    pa.display(),
                    pb.display()
                ));
            }
        }
    }
    Ok(())
}

/// Temporary files not yet renamed, removed by the signal thread on SIGINT, SIGTERM or SIGHUP.
static PENDING: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

fn pending() -> MutexGuard<'static, Vec<PathBuf>> {
    PENDING.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Starts (once) the thread that, on SIGINT, SIGTERM or SIGHUP, removes the pending temporary
/// files and then ends the process by that signal, as it would have ended without the handler.
/// It holds the lock of [`PENDING`] from then on, so no rename can follow.
fn watch_signals() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
        let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]) else {
            return;
        };
        let _ = std::thread::Builder::new()
            .name("output-cleanup".into())
            .spawn(move || {
                if let Some(sig) = signals.forever().next() {
                    let files = pending();
                    for p in files.iter() {
                        let _ = std::fs::remove_file(p);
                    }
                    let _ = signal_hook::low_level::emulate_default_handler(sig);
                    std::process::exit(128 + sig);
                }
            });
    });
}

/// Ends the process by SIGPIPE, the way a program that never ignored it would end (as `cat` does
/// when the reader of its pipe is gone), after removing the pending temporary files as the signal
/// thread would ([`watch_signals`]). For a job writing to a closed standard output
/// (`connectors/print_rows.rs`, `crates/cli/src/terminal.rs`).
pub fn die_of_sigpipe() -> ! {
    let files = pending();
    for p in files.iter() {
        let _ = std::fs::remove_file(p);
    }
    // SAFETY: restoring a signal's default action and raising it have no memory effects; the
    // Rust runtime ignores SIGPIPE, so it must be restored first for the signal to end us.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        libc::raise(libc::SIGPIPE);
    }
    std::process::exit(128 + libc::SIGPIPE)
}

/// An output being written. A regular (or not yet existing) final path gets a temporary file
/// beside it, `.<name>.<pid>.<random>.xorflow-tmp`, renamed to it by [`PendingFile::commit`];
/// dropped uncommitted (any failure) the temporary file is removed and the final path keeps what
/// it had. A process killed with SIGKILL cannot remove its temporary file: the next one for the
/// same path removes it once the process named in it is gone ([`remove_stale_temps`]).
/// An existing final path that is not a regular file (`/dev/stdout`, `/dev/null`, a FIFO) is
/// written in place: it has no content to keep, and renaming over it would replace the device.
pub struct PendingFile {
    target: PathBuf,
    what: &'static str,
    temp: Option<tempfile::NamedTempFile>,
    direct: Option<File>,
}

impl PendingFile {
    /// Creates the file that will become `target` (its directory too, if missing); `what` names
    /// it in messages ("output", "late output", "summary").
    ///
    /// # Errors
    /// A message naming `target` when it is a directory or cannot be written.
    pub fn create(target: &Path, what: &'static str) -> Result<Self, String> {
        let err =
            |e: &dyn std::fmt::Display| format!("cannot create {what} '{}': {e}", target.display());
        // The rename replaces a symbolic link itself: write to the file it points to instead.
        let real = std::fs::canonicalize(target).unwrap_or_else(|_| target.to_path_buf());
        let meta = std::fs::metadata(&real).ok();
        if let Some(m) = meta.as_ref().filter(|m| !m.is_file()) {
            if m.is_dir() {
                return Err(err(&"it is a directory"));
            }
            let f = File::options()
                .write(true)
                .open(&real)
                .map_err(|e| err(&e))?;
            return Ok(PendingFile {
                target: real,
                what,
                temp: None,
                direct: Some(f),
            });
        }
        let dir = match real.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        std::fs::create_dir_all(dir)
            .map_err(|e| err(&format!("cannot create directory '{}': {e}", dir.display())))?;
        let name = real.file_name().ok_or_else(|| err(&"no file name"))?;
        watch_signals();
        remove_stale_temps(dir, &name.to_string_lossy());
        let mut list = pending();
        let temp = tempfile::Builder::new()
            .prefix(&format!(
                ".{}.{}.",
                name.to_string_lossy(),
                std::process::id()
            ))
            .suffix(".xorflow-tmp")
            .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666))
            .tempfile_in(dir)
            .map_err(|e| err(&e))?;
        if let Some(m) = meta {
            // Overwritten in place, the file would have kept its permissions.
            let _ = temp.as_file().set_permissions(m.permissions());
        }
        list.push(temp.path().to_path_buf());
        Ok(PendingFile {
            target: real,
            what,
            temp: Some(temp),
            direct: None,
        })
    }

    /// The final path.
    pub fn target(&self) -> &Path {
        &self.target
    }

    /// What it is, in messages ("output", "late output", "summary").
    pub fn what(&self) -> &'static str {
        self.what
    }

    /// A handle to write the content with.
    ///
    /// # Errors
    /// A message naming the final path when the handle cannot be duplicated.
    pub fn file(&self) -> Result<File, String> {
        let f = match (&self.temp, &self.direct) {
            (Some(t), _) => t.as_file(),
            (None, Some(f)) => f,
            (None, None) => unreachable!("a pending file has a temporary file or a direct one"),
        };
        f.try_clone().map_err(|e| {
            format!(
                "cannot write {} '{}': {e}",
                self.what,
                self.target.display()
            )
        })
    }

    /// Sorts the lines written after the first `header` ones, as bytes: rows written in the
    /// order they arrived, from whichever worker sent them first, come out in one order whatever
    /// the timing, so that identical runs, and a recovered run and one without the failure, write
    /// identical files. An output written in place (a device, a FIFO) keeps the order it was
    /// written in: it cannot be read back.
    ///
    /// # Errors
    /// A message naming the final path when the file cannot be read back or rewritten.
    pub fn sort_lines(&self, header: usize) -> Result<(), String> {
        use std::io::{Read, Seek, SeekFrom, Write};
        let Some(temp) = &self.temp else {
            return Ok(());
        };
        let mut f = temp.as_file();
        let mut text = Vec::new();
        (f.seek(SeekFrom::Start(0))
            .and_then(|_| f.read_to_end(&mut text)))
        .map_err(|e| self.write_error(&e))?;
        let mut lines: Vec<&[u8]> = text.split_inclusive(|&b| b == b'\n').collect();
        let at = header.min(lines.len());
        lines[at..].sort_unstable();
        let mut out = Vec::with_capacity(text.len() + 1);
        for l in &lines {
            out.extend_from_slice(l);
            // A last line without its line break would join the next one once sorted.
            if !l.ends_with(b"\n") {
                out.push(b'\n');
            }
        }
        (f.set_len(0)
            .and_then(|()| f.seek(SeekFrom::Start(0)))
            .and_then(|_| f.write_all(&out)))
        .map_err(|e| self.write_error(&e))
    }

    /// Puts what was written on disk (a full disk fails here, before any rename).
    ///
    /// # Errors
    /// A message naming the final path.
    pub fn sync(&self) -> Result<(), String> {
        let f = match (&self.temp, &self.direct) {
            (Some(t), _) => t.as_file(),
            (None, Some(f)) => f,
            (None, None) => unreachable!("a pending file has a temporary file or a direct one"),
        };
        // A device written in place (`/dev/full`, a FIFO) may not sync: its writes have failed
        // already if they were going to.
        match (f.sync_all(), &self.temp) {
            (Err(e), Some(_)) => Err(self.write_error(&e)),
            _ => Ok(()),
        }
    }

    fn write_error(&self, e: &dyn std::fmt::Display) -> String {
        format!(
            "cannot write {} '{}': {e}",
            self.what,
            self.target.display()
        )
    }

    /// Renames the written file to its final path (after syncing it, so that a crash leaves the
    /// old content or the new one, not an empty file).
    ///
    /// # Errors
    /// A message naming the final path; the temporary file is then removed.
    pub fn commit(mut self) -> Result<(), String> {
        self.sync()?;
        let Some(temp) = self.temp.take() else {
            return Ok(());
        };
        let mut list = pending();
        list.retain(|p| p != temp.path());
        let target = self.target.clone();
        temp.persist(&target)
            .map_err(|e| self.write_error(&e.error))?;
        Ok(())
    }
}

/// Commits every output of a run together: all are synced first, so that a failure of any
/// (a full disk, a device that refuses) leaves every final path as it was; then each is renamed
/// into place, renames in one directory not failing once the files are written. Create them all
/// ([`PendingFile::create`]) before the job starts, so that one that cannot be written (a
/// directory, a folder that cannot be written) is found before anything runs.
///
/// # Errors
/// The first output that cannot be written, naming it; no output is renamed then.
pub fn commit_all(files: impl IntoIterator<Item = PendingFile>) -> Result<(), String> {
    let files: Vec<PendingFile> = files.into_iter().collect();
    for f in &files {
        f.sync()?;
    }
    files.into_iter().try_for_each(PendingFile::commit)
}

/// Removes the temporary files `.<name>.<pid>.<random>.xorflow-tmp` in `dir` whose process no
/// longer runs (killed before it could remove them: SIGKILL, a crash). Files of live processes,
/// and names without a pid, are left alone; a file that cannot be removed is left too (this is
/// tidying, not part of the run).
pub fn remove_stale_temps(dir: &Path, name: &str) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let prefix = format!(".{name}.");
    for e in entries.flatten() {
        let file = e.file_name().to_string_lossy().into_owned();
        let Some(rest) = file
            .strip_prefix(&prefix)
            .and_then(|r| r.strip_suffix(".xorflow-tmp"))
        else {
            continue;
        };
        let pid = rest.split('.').next().and_then(|p| p.parse::<u32>().ok());
        if pid.is_some_and(|p| !Path::new(&format!("/proc/{p}")).exists()) {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

impl Drop for PendingFile {
    fn drop(&mut self) {
        if let Some(temp) = self.temp.take() {
            let mut list = pending();
            list.retain(|p| p != temp.path());
            let _ = temp.close();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn same_files_are_found_whatever_the_spelling() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::write(d.join("a.csv"), "a").unwrap();
        std::fs::hard_link(d.join("a.csv"), d.join("hard.csv")).unwrap();
        std::os::unix::fs::symlink(d.join("a.csv"), d.join("soft.csv")).unwrap();
        let a = d.join("a.csv");
        for other in [
            d.join("hard.csv"),
            d.join("soft.csv"),
            d.join("./x/../a.csv"),
            d.join("a.csv"),
        ] {
            let e = check_distinct(&[("--input", &a), ("--output", &other)]).unwrap_err();
            assert!(e.contains("--input") && e.contains("--output"), "{e}");
        }
        let new = d.join("new.csv");
        let e = check_distinct(&[("--output", &new), ("--summary", &d.join("./new.csv"))]);
        assert!(e.is_err());
        assert!(check_distinct(&[("--input", &a), ("--output", &new)]).is_ok());
    }

    /// Catches: rows of a multi-worker run written in arrival order (a different file for the
    /// same input from run to run), a header sorted among the rows, a last row without a line
    /// break joined to another.
    #[test]
    fn sorted_lines_keep_the_header_first_and_every_row_whole() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("out.csv");
        let p = PendingFile::create(&target, "output").unwrap();
        p.file().unwrap().write_all(b"h,x\nb,2\na,1\nc,3").unwrap();
        p.sort_lines(1).unwrap();
        p.file().unwrap().write_all(b"").unwrap();
        p.commit().unwrap();
        assert_eq!(
            std::fs::read_to_string(&target).unwrap(),
            "h,x\na,1\nb,2\nc,3\n"
        );
    }

    #[test]
    fn a_dropped_file_leaves_the_previous_content_and_a_committed_one_replaces_it() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("out.csv");
        std::fs::write(&target, "old").unwrap();
        let p = PendingFile::create(&target, "output").unwrap();
        p.file().unwrap().write_all(b"half").unwrap();
        drop(p);
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "old");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        let p = PendingFile::create(&target, "output").unwrap();
        p.file().unwrap().write_all(b"new").unwrap();
        p.commit().unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "new");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        assert!(pending().is_empty());
    }

    #[test]
    fn temporary_files_of_dead_processes_are_removed_and_live_ones_kept() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("out.csv");
        // 4194304 is Linux's largest pid: one above names no process.
        let dead = dir.path().join(".out.csv.4194305.x1.xorflow-tmp");
        let live = dir
            .path()
            .join(format!(".out.csv.{}.x2.xorflow-tmp", std::process::id()));
        let other = dir.path().join(".other.csv.4194305.x3.xorflow-tmp");
        let old_style = dir.path().join(".out.csv.x4.xorflow-tmp");
        for p in [&dead, &live, &other, &old_style] {
            std::fs::write(p, "partial").unwrap();
        }
        // What PendingFile::create does first (not called here: the pending list is shared
        // with the test above, which checks it is empty).
        remove_stale_temps(dir.path(), "out.csv");
        assert!(!dead.exists(), "a dead process's temporary file is removed");
        assert!(live.exists() && other.exists() && old_style.exists());
        assert!(!target.exists());
    }
}
