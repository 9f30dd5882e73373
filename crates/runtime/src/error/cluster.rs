//! How a job across processes fails: the error of the net layer's boundary (`net/cluster.rs`
//! resolves and launches the processes, `net/transport.rs` connects and serves them), kept
//! below the layers so that a run's error (`RunError::Cluster`) can hold it. Its kind decides
//! the exit status (a setup the user fixes is a refusal, exit 2) and whether a run with
//! checkpoints restarts (`execute/restart.rs`).

/// Why the processes of a job could not be started, connected or kept together.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    /// The cluster as configured cannot be set up: a hostfile that cannot be read, a host that
    /// does not resolve, no cluster token, an address this process cannot listen on. The user's
    /// to fix; nothing ran.
    #[error("{0}")]
    Setup(String),
    /// This machine could not start the launch's processes or the network's thread or runtime.
    #[error("{0}")]
    Start(String),
    /// The processes did not all connect, agree on the job and align their clocks within the
    /// start-up timeout (a missing process, a process of another job, a version mismatch).
    #[error("{0}")]
    Connect(String),
    /// A process failed, died or lost its connection while the job ran, or its report could not
    /// be read.
    #[error("{0}")]
    Lost(String),
}

impl ClusterError {
    /// True when the run was refused before anything ran, for a reason the user fixes
    /// ([`ClusterError::Setup`]).
    pub fn is_refusal(&self) -> bool {
        matches!(self, ClusterError::Setup(_))
    }
}
