//! The state layer's one error type.

use std::path::PathBuf;

/// Why a state operation failed. Every variant names what and where.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    /// The on-disk store failed (`path`: its file).
    #[error("state store '{path}': {detail}")]
    Backend {
        /// The store's file.
        path: PathBuf,
        /// What failed.
        detail: String,
    },
    /// A file of the checkpoint store could not be read or written.
    #[error("checkpoint file '{path}': {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A file's content is not what was written: bad checksum, truncated, or undecodable.
    #[error("checkpoint file '{path}' is corrupt: {detail}")]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        detail: String,
    },
    /// A value or key could not be encoded or decoded (`what` names the table).
    #[error("state table '{table}': {detail}")]
    Codec {
        /// The table.
        table: String,
        /// What failed.
        detail: String,
    },
    /// Anything else: a checkpoint that does not exist, a directory of another job, ...
    #[error("{0}")]
    Other(String),
}
