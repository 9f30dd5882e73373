//! Part files: the committed output of one sink instance per completed checkpoint, as Flink's
//! file sink keeps it (docs/state.md, "Exactly-once sinks").
//!
//! ```text
//! <dir>/part-<checkpoint, 20 digits>-<instance, 4 digits>   committed with the checkpoint
//! <dir>/part-final-<instance>                              what followed the last checkpoint
//! <dir>/.tmp-<...>                                         being written (never read)
//! ```
//!
//! A part is written to a temporary name, synced, and renamed: it exists whole or not at all.
//! Names sort in output order (by checkpoint, then instance; `final` after every number), so
//! [`PartFiles::assemble`] concatenates them in name order.

use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The part files of one sink instance, and the bytes it wrote since its last commit.
#[derive(Debug)]
pub struct PartFiles {
    dir: PathBuf,
    instance: usize,
    /// Written since the last commit or rollback.
    pending: Vec<u8>,
}

/// What the name of a part file says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Part {
    /// Committed with checkpoint `.0`, by instance `.1`.
    Checkpoint(u64, usize),
    /// After the last checkpoint, by instance `.0`.
    Final(usize),
}

impl Part {
    fn name(self) -> String {
        match self {
            Part::Checkpoint(c, i) => format!("part-{c:020}-{i:04}"),
            Part::Final(i) => format!("part-final-{i:04}"),
        }
    }

    fn parse(name: &str) -> Option<Part> {
        let rest = name.strip_prefix("part-")?;
        let (c, i) = rest.rsplit_once('-')?;
        let i = i.parse().ok()?;
        match c {
            "final" => Some(Part::Final(i)),
            c => Some(Part::Checkpoint(c.parse().ok()?, i)),
        }
    }

    fn instance(self) -> usize {
        match self {
            Part::Checkpoint(_, i) | Part::Final(i) => i,
        }
    }
}

fn io_err(what: &str, path: &Path, e: std::io::Error) -> String {
    format!("cannot {what} part file '{}': {e}", path.display())
}

impl PartFiles {
    /// The parts of sink instance `instance` in `dir` (created by the first commit).
    pub fn new(dir: &Path, instance: usize) -> Self {
        PartFiles {
            dir: dir.to_path_buf(),
            instance,
            pending: Vec::new(),
        }
    }

    /// The bytes written since the last commit: append the output here.
    pub fn pending(&mut self) -> &mut Vec<u8> {
        &mut self.pending
    }

    /// Commits what was written since the last commit as the part of checkpoint `checkpoint`
    /// (nothing is written when that is nothing). Idempotent: a part committed again replaces
    /// itself.
    ///
    /// # Errors
    /// The part cannot be written, synced or renamed, naming it.
    pub fn commit(&mut self, checkpoint: u64) -> Result<(), String> {
        self.write_part(Part::Checkpoint(checkpoint, self.instance))
    }

    /// Commits what was written since the last commit as this instance's final part (the job
    /// has finished).
    ///
    /// # Errors
    /// As [`PartFiles::commit`].
    pub fn finish(&mut self) -> Result<(), String> {
        self.write_part(Part::Final(self.instance))
    }

    fn write_part(&mut self, part: Part) -> Result<(), String> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let dir = &self.dir;
        fs::create_dir_all(dir).map_err(|e| io_err("create the directory of", dir, e))?;
        let path = self.dir.join(part.name());
        let tmp = self.dir.join(format!(".tmp-{}", part.name()));
        let mut f = File::create(&tmp).map_err(|e| io_err("create", &tmp, e))?;
        f.write_all(&self.pending)
            .and_then(|()| f.sync_all())
            .map_err(|e| io_err("write", &tmp, e))?;
        fs::rename(&tmp, &path).map_err(|e| io_err("rename into", &path, e))?;
        self.pending.clear();
        Ok(())
    }

    /// Discards this instance's parts committed after checkpoint `committed` (all of them if
    /// `None`), its final part, its temporary files and what was written since the last commit.
    ///
    /// # Errors
    /// The directory cannot be read or a part cannot be removed, naming it.
    pub fn rollback(&mut self, committed: Option<u64>) -> Result<(), String> {
        self.pending.clear();
        let mine = |p: Part| p.instance() == self.instance;
        let keep =
            |p: Part| matches!(p, Part::Checkpoint(c, _) if committed.is_some_and(|d| c <= d));
        for entry in read_dir(&self.dir)? {
            let name = entry.file_name().to_string_lossy().into_owned();
            let part = name.strip_prefix(".tmp-").unwrap_or(&name);
            let Some(p) = Part::parse(part) else {
                continue;
            };
            if mine(p) && (part.len() != name.len() || !keep(p)) {
                let path = entry.path();
                fs::remove_file(&path).map_err(|e| io_err("remove", &path, e))?;
            }
        }
        Ok(())
    }

    /// Appends every committed part in `dir`, in output order, to `out`; returns the bytes
    /// copied. Temporary files and other names are left out.
    ///
    /// # Errors
    /// A part cannot be read or `out` cannot be written, naming the part.
    pub fn assemble(dir: &Path, out: &mut impl Write) -> Result<u64, String> {
        let mut names: Vec<(String, PathBuf)> = read_dir(dir)?
            .into_iter()
            .filter_map(|e| {
                let n = e.file_name().to_string_lossy().into_owned();
                Part::parse(&n).map(|_| (n, e.path()))
            })
            .collect();
        names.sort();
        let mut total = 0;
        for (_, path) in names {
            let mut f = File::open(&path).map_err(|e| io_err("open", &path, e))?;
            total += std::io::copy(&mut f, out).map_err(|e| io_err("copy", &path, e))?;
        }
        Ok(total)
    }

    /// Removes `dir` and everything in it (after [`PartFiles::assemble`]); a missing directory
    /// is not an error.
    ///
    /// # Errors
    /// It cannot be removed, naming it.
    pub fn remove(dir: &Path) -> Result<(), String> {
        match fs::remove_dir_all(dir) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(io_err("remove the directory of", dir, e))
            }
            _ => Ok(()),
        }
    }
}

/// The entries of `dir`; none if it does not exist (nothing was committed).
fn read_dir(dir: &Path) -> Result<Vec<fs::DirEntry>, String> {
    let it = match fs::read_dir(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        r => r.map_err(|e| io_err("list the directory of", dir, e))?,
    };
    it.collect::<Result<_, _>>()
        .map_err(|e| io_err("list the directory of", dir, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assembled(dir: &Path) -> String {
        let mut out = Vec::new();
        PartFiles::assemble(dir, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn parts_assemble_in_checkpoint_then_instance_order_with_final_last() {
        let d = tempfile::tempdir().unwrap();
        let mut a = PartFiles::new(d.path(), 0);
        let mut b = PartFiles::new(d.path(), 1);
        b.pending().extend(b"b10\n");
        b.commit(10).unwrap();
        a.pending().extend(b"a2\n");
        a.commit(2).unwrap();
        a.pending().extend(b"a10\n");
        a.commit(10).unwrap();
        a.pending().extend(b"afinal\n");
        a.finish().unwrap();
        b.commit(11).unwrap(); // nothing pending: no part
        assert_eq!(assembled(d.path()), "a2\na10\nb10\nafinal\n");
        assert_eq!(fs::read_dir(d.path()).unwrap().count(), 4);
    }

    #[test]
    fn rollback_drops_later_parts_final_and_temporaries_of_its_own_instance_only() {
        let d = tempfile::tempdir().unwrap();
        let mut a = PartFiles::new(d.path(), 0);
        let mut b = PartFiles::new(d.path(), 1);
        for c in [1, 2, 3] {
            a.pending().extend(format!("a{c}\n").as_bytes());
            a.commit(c).unwrap();
            b.pending().extend(format!("b{c}\n").as_bytes());
            b.commit(c).unwrap();
        }
        a.pending().extend(b"af\n");
        a.finish().unwrap();
        fs::write(d.path().join(".tmp-part-00000000000000000001-0000"), "x").unwrap();
        a.pending().extend(b"uncommitted\n");
        a.rollback(Some(1)).unwrap();
        assert_eq!(assembled(d.path()), "a1\nb1\nb2\nb3\n");
        // The same checkpoint delivered again replaces nothing twice.
        a.pending().extend(b"a2\n");
        a.commit(2).unwrap();
        a.rollback(Some(2)).unwrap();
        a.pending().extend(b"a3\n");
        a.commit(3).unwrap();
        assert_eq!(assembled(d.path()), "a1\nb1\na2\nb2\na3\nb3\n");
        b.rollback(None).unwrap();
        assert_eq!(assembled(d.path()), "a1\na2\na3\n");
        PartFiles::remove(d.path()).unwrap();
        PartFiles::remove(d.path()).unwrap();
        assert!(!d.path().exists());
    }

    #[test]
    fn missing_directory_is_empty_and_unwritable_one_is_named() {
        let n = PartFiles::assemble(Path::new("/nonexistent/parts"), &mut Vec::new()).unwrap();
        assert_eq!(n, 0);
        let mut p = PartFiles::new(Path::new("/proc/parts"), 0);
        p.pending().extend(b"x\n");
        let e = p.commit(1).unwrap_err();
        assert!(e.contains("/proc/parts"), "{e}");
    }
}
