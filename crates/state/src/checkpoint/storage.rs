//! Where checkpoint files are kept: a flat namespace of names (`files/...`, `manifests/...`)
//! over a local directory. Every write is atomic (a temporary file, fsynced, then renamed, then
//! the directory fsynced), so a name either holds a complete file or does not exist.

use crate::error::StateError;
use std::io::Write;
use std::path::{Path, PathBuf};

/// A checkpoint store's files.
pub trait Storage: Send + Sync {
    /// Where this is (for messages): a path or a URL.
    fn location(&self) -> String;

    /// Writes `bytes` under `name`, atomically and durably.
    ///
    /// # Errors
    /// The write failed (the error names the file).
    fn put(&self, name: &str, bytes: &[u8]) -> Result<(), StateError>;

    /// The bytes under `name`.
    ///
    /// # Errors
    /// Missing or unreadable (the error names the file).
    fn get(&self, name: &str) -> Result<Vec<u8>, StateError>;

    /// The names below folder `prefix` (e.g. `"manifests"`), sorted.
    ///
    /// # Errors
    /// The folder cannot be listed.
    fn list(&self, prefix: &str) -> Result<Vec<String>, StateError>;

    /// Deletes `name` (no error if it is already gone).
    ///
    /// # Errors
    /// The file exists and cannot be deleted.
    fn delete(&self, name: &str) -> Result<(), StateError>;

    /// The full path or URL of `name` (for messages).
    fn describe(&self, name: &str) -> PathBuf;
}

/// A local directory.
pub struct LocalDir {
    root: PathBuf,
}

impl LocalDir {
    /// The directory `root`, created if missing.
    ///
    /// # Errors
    /// It cannot be created, or is not a directory.
    pub fn open(root: &Path) -> Result<Self, StateError> {
        std::fs::create_dir_all(root).map_err(|source| StateError::Io {
            path: root.into(),
            source,
        })?;
        Ok(LocalDir { root: root.into() })
    }

    fn io(&self, name: &str) -> impl Fn(std::io::Error) -> StateError + '_ {
        let path = self.root.join(name);
        move |source| StateError::Io {
            path: path.clone(),
            source,
        }
    }
}

impl Storage for LocalDir {
    fn location(&self) -> String {
        self.root.display().to_string()
    }

    fn put(&self, name: &str, bytes: &[u8]) -> Result<(), StateError> {
        let path = self.root.join(name);
        let dir = path.parent().expect("names live below the root");
        std::fs::create_dir_all(dir).map_err(self.io(name))?;
        let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(self.io(name))?;
        tmp.write_all(bytes).map_err(self.io(name))?;
        tmp.as_file().sync_all().map_err(self.io(name))?;
        tmp.persist(&path)
            .map_err(|e| e.error)
            .map_err(self.io(name))?;
        // The rename is durable once the directory is.
        std::fs::File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(self.io(name))
    }

    fn get(&self, name: &str) -> Result<Vec<u8>, StateError> {
        std::fs::read(self.root.join(name)).map_err(self.io(name))
    }

    fn list(&self, prefix: &str) -> Result<Vec<String>, StateError> {
        let dir = self.root.join(prefix);
        let entries = match std::fs::read_dir(&dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(self.io(prefix)(e)),
        };
        let mut names = Vec::new();
        for e in entries {
            let e = e.map_err(self.io(prefix))?;
            let name = e.file_name().to_string_lossy().to_string();
            // Temporary files of an interrupted write are not files of the store.
            if !name.starts_with(".tmp") {
                names.push(format!("{prefix}/{name}"));
            }
        }
        names.sort();
        Ok(names)
    }

    fn delete(&self, name: &str) -> Result<(), StateError> {
        match std::fs::remove_file(self.root.join(name)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(self.io(name)(e)),
            _ => Ok(()),
        }
    }

    fn describe(&self, name: &str) -> PathBuf {
        self.root.join(name)
    }
}
