//! How a run fails: the error every layer of the runtime returns for a run (`RunError`), below
//! all of them so that checkpoints and start-up can return it (docs/design.md, "Layers").

/// Why a run failed.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The configuration or graph is invalid.
    #[error("invalid configuration: {0}")]
    Config(String),
    /// A vertex instance failed (e.g. a sink could not write).
    #[error("worker {worker}: {message}")]
    Vertex {
        /// Worker index.
        worker: usize,
        /// What failed.
        message: String,
    },
    /// User code panicked.
    #[error("worker {worker} panicked: {message}")]
    Panic {
        /// Worker index.
        worker: usize,
        /// The panic message.
        message: String,
    },
    /// The tracker received a malformed flush.
    #[error("tracker: {0}")]
    Tracker(String),
    /// The cluster failed: a process could not be started or reached, died, or failed.
    #[error("cluster: {0}")]
    Cluster(String),
    /// Checkpoints could not be written or the checkpoint directory cannot be used.
    #[error("checkpoints: {0}")]
    Checkpoint(String),
}

impl RunError {
    /// True for the "aborted because another thread failed" errors of threads that did not fail
    /// themselves.
    pub fn is_echo(&self) -> bool {
        matches!(self, RunError::Vertex { message, .. } if message.starts_with("aborted"))
    }
}
