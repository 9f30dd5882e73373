//! The files a run writes. Two options naming the same file are refused before anything is
//! opened for writing.

use std::path::{Component, Path, PathBuf};

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

#[cfg(test)]
mod tests {
    use super::*;

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
}
