//! How a run fails: the error every layer of the runtime returns for a run (`RunError`), below
//! all of them so that checkpoints and start-up can return it (docs/design.md, "Layers"), and
//! the errors it holds from the layers above: how an operator instance fails (`OperatorError`,
//! `error/operator.rs`, below the output port whose chained operators return it) and how the
//! processes of a job fail (`ClusterError`, `error/cluster.rs`).

mod cluster;
mod operator;

pub use cluster::ClusterError;
pub use operator::OperatorError;

/// Why a run failed.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The configuration or graph is invalid.
    #[error("invalid configuration: {0}")]
    Config(String),
    /// A vertex instance failed (e.g. a sink could not write).
    #[error("worker {worker}: {error}")]
    Vertex {
        /// Worker index.
        worker: usize,
        /// What failed.
        #[source]
        error: OperatorError,
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
    Cluster(#[from] ClusterError),
    /// Checkpoints could not be written while the job ran.
    #[error("checkpoints: {0}")]
    Checkpoint(String),
    /// The checkpoint directory cannot be used: it cannot be created, it holds an earlier run's
    /// checkpoints (or, resuming, another job's), or no checkpoint to resume from verifies.
    #[error("{0}")]
    CheckpointDir(#[source] xorflow_state::StateError),
    /// The live metrics server (`--metrics-addr`) cannot start.
    #[error(transparent)]
    Metrics(#[from] MetricsError),
}

impl RunError {
    /// True when the run was refused for a reason the user fixes, before the job ran: an invalid
    /// configuration, a metrics address that cannot be bound, a checkpoint directory that cannot
    /// be used. False for a failure of the engine, or of the job's code, while it ran.
    pub fn is_refusal(&self) -> bool {
        match self {
            RunError::Config(_) | RunError::CheckpointDir(_) => true,
            RunError::Metrics(m) => m.is_refusal(),
            RunError::Cluster(c) => c.is_refusal(),
            RunError::Vertex { .. }
            | RunError::Aborted { .. }
            | RunError::Panic { .. }
            | RunError::Tracker(_)
            | RunError::Checkpoint(_) => false,
        }
    }

    /// True for the errors of threads that did not fail themselves but were stopped because
    /// another one did ([`RunError::Aborted`]).
    pub fn is_echo(&self) -> bool {
        matches!(self, RunError::Aborted { .. })
    }
}

/// Why the live metrics server (`--metrics-addr`, `measure/live/server.rs`) cannot start.
#[derive(Debug, thiserror::Error)]
pub enum MetricsError {
    /// The address cannot be bound: in use, not this host's, or a port the user may not open.
    #[error("--metrics-addr {addr}: cannot listen there: {source}")]
    Bind {
        /// The address asked for (its port moved by the process index in a local launch).
        addr: std::net::SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// The bound socket cannot be set up (its address read, made non-blocking).
    #[error("--metrics-addr {addr}: {source}")]
    Socket {
        /// The address asked for.
        addr: std::net::SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// The server's thread cannot start.
    #[error("metrics server thread: {0}")]
    Thread(#[source] std::io::Error),
}

impl MetricsError {
    /// True for an address the user must change ([`MetricsError::Bind`]); the others are this
    /// machine's failures.
    pub fn is_refusal(&self) -> bool {
        matches!(self, MetricsError::Bind { .. })
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
            error: "aborted transaction: producer fenced".into(),
        };
        assert!(!real.is_echo());
        let echo = RunError::Aborted { worker: 0 };
        assert!(echo.is_echo());
        assert_eq!(
            echo.to_string(),
            "worker 0: aborted because another thread failed"
        );
    }

    /// Catches: a refused start (exit 2 in the CLI) confused with a failure while running (1).
    #[test]
    fn refusals_are_the_users_to_fix() {
        let addr: std::net::SocketAddr = "127.0.0.1:9464".parse().unwrap();
        let in_use = std::io::Error::from(std::io::ErrorKind::AddrInUse);
        assert!(RunError::from(MetricsError::Bind {
            addr,
            source: in_use
        })
        .is_refusal());
        let thread = std::io::Error::other("no threads left");
        assert!(!RunError::from(MetricsError::Thread(thread)).is_refusal());
        assert!(RunError::Config("--workers 0".into()).is_refusal());
        let dir = xorflow_state::StateError::Other("belongs to another job".into());
        assert!(RunError::CheckpointDir(dir).is_refusal());
        let lost = ClusterError::Lost("process 1 died".into());
        assert!(!RunError::Cluster(lost).is_refusal());
        let setup = ClusterError::Setup("no cluster token".into());
        assert!(RunError::Cluster(setup).is_refusal());
        assert!(!RunError::Aborted { worker: 0 }.is_refusal());
    }
}
