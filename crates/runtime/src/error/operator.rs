//! Why an operator instance failed: the error of every fallible method of
//! [`crate::operators::Operator`], [`crate::operators::Vertex`], [`crate::operators::sink::Sink`],
//! the sources' traits and the chained stages of the output port (`port/chained.rs`): the
//! boundary between a job's code and the engine. The worker that runs the instance stops the run with it
//! (`RunError::Vertex`, which names the worker), so each variant names what failed.

/// Why an operator instance failed (opening, processing a batch, snapshotting, restoring,
/// closing).
#[derive(Debug, thiserror::Error)]
pub enum OperatorError {
    /// The operator's own account of what failed, in its words (a job's code writes
    /// `Err(format!(...).into())`, or `?` on a `Result<_, String>`).
    #[error("{0}")]
    Failed(String),
    /// Its keyed state could not be read, written, snapshotted or restored (`xorflow_state`);
    /// `operator` names it ("window 'hourly'").
    #[error("{operator}: {source}")]
    State {
        /// The operator, as "kind 'name'".
        operator: String,
        /// What the state store said.
        #[source]
        source: xorflow_state::StateError,
    },
    /// Its event log (`--event-log`, `xorflow_measure::log`) could not be written.
    #[error("event log: {0}")]
    EventLog(#[from] xorflow_measure::log::LogError),
    /// A file or socket it reads or writes failed; `context` names it.
    #[error("{context}: {source}")]
    Io {
        /// What was being read or written, naming the file.
        context: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
}

impl OperatorError {
    /// A failure of the keyed state of `operator` ("window 'hourly'").
    pub fn state(operator: impl Into<String>, source: xorflow_state::StateError) -> Self {
        OperatorError::State {
            operator: operator.into(),
            source,
        }
    }

    /// An I/O failure on what `context` names ("cannot write 'out.csv'").
    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        OperatorError::Io {
            context: context.into(),
            source,
        }
    }
}

impl From<String> for OperatorError {
    fn from(message: String) -> Self {
        OperatorError::Failed(message)
    }
}

impl From<&str> for OperatorError {
    fn from(message: &str) -> Self {
        OperatorError::Failed(message.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error as _;

    /// Catches: a wrapped failure that loses its cause, so a user sees "state store ..." or a
    /// file name without the reason (or the reason without the name).
    #[test]
    fn each_kind_keeps_what_and_why() {
        let io = OperatorError::io(
            "cannot write 'out.csv'",
            std::io::Error::from(std::io::ErrorKind::StorageFull),
        );
        assert!(io.to_string().starts_with("cannot write 'out.csv': "));
        assert!(io.source().is_some());
        let own: OperatorError = format!("key {} has no price", 7).into();
        assert_eq!(own.to_string(), "key 7 has no price");
        let gone = xorflow_state::StateError::Other("gone".into());
        let state = OperatorError::state("window 'hourly'", gone);
        assert_eq!(state.to_string(), "window 'hourly': gone");
        assert!(state.source().is_some());
    }
}
