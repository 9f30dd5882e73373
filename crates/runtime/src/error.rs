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
    /// The worker stopped because another thread failed (an echo of the root cause, which
    /// [`RunError::is_echo`] tells apart).
    #[error("worker {worker}: aborted because another thread failed")]
    Aborted {
        /// Worker index.
        worker: usize,
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
    /// True for the errors of threads that did not fail themselves but were stopped because
    /// another one did ([`RunError::Aborted`]).
    pub fn is_echo(&self) -> bool {
        matches!(self, RunError::Aborted { .. })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Catches: an echo told apart by its text, so that a real error whose message starts with
    /// "aborted" (a sink's "aborted transaction ...") would be ranked below other workers'
    /// echoes, and an echo no longer recognised once its text changes.
    #[test]
    fn echoes_are_told_by_their_variant_not_their_text() {
        let real = RunError::Vertex {
            worker: 1,
            message: "aborted transaction: producer fenced".into(),
        };
        assert!(!real.is_echo());
        let echo = RunError::Aborted { worker: 0 };
        assert!(echo.is_echo());
        assert_eq!(
            echo.to_string(),
            "worker 0: aborted because another thread failed"
        );
    }
}
