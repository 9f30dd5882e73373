//! The injected delay's options (`--rtt`, `--rtt-topology`, `--delay-matrix`, `--rtt-jitter`):
//! the round-trip times they give each pair of processes (a city set's table, a matrix file);
//! delaying the frames is `net/delay/`.

pub mod matrix;
pub mod topology;

pub use matrix::DelayMatrix;
pub use topology::Topology;

use crate::config::ValueName;
use std::path::PathBuf;
use std::time::Duration;

/// Largest round-trip time accepted between two processes (a minute: beyond that the peer
/// timeout and the start-up bound stop making sense).
pub const MAX_RTT: Duration = Duration::from_secs(60);

/// Where a job's injected delays come from.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum DelaySpec {
    /// No delay (the default).
    #[default]
    None,
    /// The same round-trip time between every pair of processes (`--rtt`).
    Mesh(Duration),
    /// Process `i` in city `i` of a city set of the wide-area paper (`--rtt-topology`).
    Topology(Topology),
    /// Round-trip times per pair from a file (`--delay-matrix`, [`matrix::parse`]).
    File(PathBuf),
}

/// The delay options of a job.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DelayConfig {
    /// Where the round-trip times come from.
    pub spec: DelaySpec,
    /// Jitter on every pair's round-trip time that has none of its own: a frame's RTT is drawn
    /// uniformly from [RTT - jitter, RTT + jitter] (never below 0), so its one-way delay from
    /// half that (`--rtt-jitter`).
    pub jitter: Duration,
}

impl DelayConfig {
    /// The delay a command line's options ask for: `--rtt`, `--rtt-topology` or
    /// `--delay-matrix` (the first given; clap lets only one through), and `--rtt-jitter`.
    pub fn of_options(
        rtt: Option<Duration>,
        topology: Option<Topology>,
        matrix: Option<&std::path::Path>,
        jitter: Duration,
    ) -> Self {
        let spec = match (rtt, topology, matrix) {
            (Some(rtt), _, _) => DelaySpec::Mesh(rtt),
            (_, Some(t), _) => DelaySpec::Topology(t),
            (_, _, Some(f)) => DelaySpec::File(f.to_path_buf()),
            _ => DelaySpec::None,
        };
        DelayConfig { spec, jitter }
    }

    /// True when no delay is configured.
    pub fn is_none(&self) -> bool {
        self.spec == DelaySpec::None
    }

    /// The round-trip times between the `processes` processes of a job (dedicated tracker
    /// processes included, in process order); `None` without delay.
    ///
    /// # Errors
    /// An unreadable or malformed matrix file (naming the file and line), a matrix or city set
    /// smaller than the job, or a round-trip time over [`MAX_RTT`].
    pub fn resolve(&self, processes: usize) -> Result<Option<DelayMatrix>, String> {
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        let m = match &self.spec {
            DelaySpec::None => return Ok(None),
            DelaySpec::Mesh(rtt) => {
                DelayMatrix::from_fn(processes, |i, j| if i == j { 0.0 } else { ms(*rtt) })
            }
            DelaySpec::Topology(t) => {
                if processes > topology::CITIES {
                    return Err(format!(
                        "--rtt-topology {} has {} cities, the job has {processes} processes",
                        t.name(),
                        topology::CITIES
                    ));
                }
                DelayMatrix::from_fn(processes, |i, j| t.rtt_ms(i, j))
            }
            DelaySpec::File(path) => matrix::read(path, processes)?,
        };
        let m = m.with_default_jitter(ms(self.jitter));
        m.check(MAX_RTT)?;
        Ok(Some(m))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mesh_topology_and_none_resolve() {
        let none = DelayConfig::default();
        assert!(none.is_none() && none.resolve(4).unwrap().is_none());
        let mesh = DelayConfig {
            spec: DelaySpec::Mesh(Duration::from_millis(40)),
            jitter: Duration::from_millis(2),
        };
        let m = mesh.resolve(3).unwrap().unwrap();
        assert_eq!(m.processes(), 3);
        assert_eq!(m.rtt_ms(0, 0), 0.0);
        assert_eq!((m.rtt_ms(1, 2), m.jitter_ms(1, 2)), (40.0, 2.0));
        // No jitter on a pair without delay: it stays an undelayed connection.
        assert_eq!(m.jitter_ms(1, 1), 0.0);
        let eu = DelayConfig {
            spec: DelaySpec::Topology(Topology::Eu),
            jitter: Duration::ZERO,
        };
        assert_eq!(eu.resolve(2).unwrap().unwrap().rtt_ms(0, 1), 16.0);
        let err = eu.resolve(9).unwrap_err();
        assert!(
            err.contains("8 cities") && err.contains("9 processes"),
            "{err}"
        );
        let far = DelayConfig {
            spec: DelaySpec::Mesh(Duration::from_secs(61)),
            jitter: Duration::ZERO,
        };
        assert!(far.resolve(2).unwrap_err().contains("over"));
    }
}
