//! When an operator instance's next snapshot is a full one.
//!
//! Increments keep each checkpoint small, but a restore reads the whole chain and every
//! increment re-states the keys it changed: after many checkpoints the chain can be larger than
//! the state. A new chain starts with a full snapshot when the chain already holds `max_len`
//! files or its increments add up to more than the last full snapshot.

use super::FileRef;

/// The chain of one operator instance since its last full snapshot.
#[derive(Clone, Debug)]
pub struct Chain {
    files: Vec<FileRef>,
    max_len: usize,
    /// Increments only ever add keys (staged output): they never re-state one, so the chain is
    /// never larger than the state, and only its length (the manifest lists every file) calls
    /// for a new full snapshot.
    append_only: bool,
}

impl Chain {
    /// An empty chain of at most `max_len` files (at least 1).
    pub fn new(max_len: usize) -> Self {
        Chain {
            files: Vec::new(),
            max_len: max_len.max(1),
            append_only: false,
        }
    }

    /// The chain of append-only state: a full snapshot, then increments, up to `max_len` files.
    pub fn append_only(max_len: usize) -> Self {
        Chain {
            files: Vec::new(),
            max_len: max_len.max(1),
            append_only: true,
        }
    }

    /// A chain restored from a checkpoint's manifest.
    pub fn from_files(files: Vec<FileRef>, max_len: usize) -> Self {
        Chain {
            files,
            max_len: max_len.max(1),
            append_only: false,
        }
    }

    /// True when the next snapshot must be full.
    pub fn next_is_full(&self) -> bool {
        let Some(full) = self.files.first() else {
            return true;
        };
        let increments: u64 = self.files[1..].iter().map(|f| f.bytes).sum();
        self.files.len() >= self.max_len || (!self.append_only && increments > full.bytes)
    }

    /// Adds the file of the latest snapshot (a full one starts a new chain).
    pub fn push(&mut self, f: FileRef) {
        if f.full {
            self.files.clear();
        }
        self.files.push(f);
    }

    /// The files from the last full snapshot on.
    pub fn files(&self) -> &[FileRef] {
        &self.files
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(bytes: u64, full: bool) -> FileRef {
        FileRef {
            name: format!("files/x-{bytes}"),
            bytes,
            full,
        }
    }

    #[test]
    fn a_chain_restarts_when_long_or_heavier_than_its_base() {
        let mut c = Chain::new(3);
        assert!(c.next_is_full());
        c.push(f(100, true));
        assert!(!c.next_is_full());
        c.push(f(30, false));
        assert!(!c.next_is_full());
        c.push(f(30, false));
        assert!(c.next_is_full(), "3 files");
        c.push(f(50, true));
        assert_eq!(c.files().len(), 1);
        c.push(f(60, false));
        assert!(c.next_is_full(), "increments outweigh the base");
    }

    #[test]
    fn an_append_only_chain_restarts_by_length_only() {
        let mut c = Chain::append_only(100);
        assert!(c.next_is_full());
        c.push(f(10, true));
        for _ in 1..100 {
            assert!(
                !c.next_is_full(),
                "increments outweighing the base do not count"
            );
            c.push(f(1000, false));
        }
        assert!(c.next_is_full(), "100 files");
    }
}
