//! Round-trip times between the processes of a job, and the `--delay-matrix` file they can come
//! from.
//!
//! The file: one row per process (row `i`, column `j`: the RTT between processes `i` and `j`, in
//! ms), entries separated by spaces, tabs or commas, `#` starting a comment. An entry is `RTT`
//! or `RTT+-JITTER` (`75+-1`: each frame's RTT drawn from 74-76 ms). The matrix must be square,
//! symmetric (an RTT belongs to a pair; each direction gets half) with zeros on the diagonal.
//! It may list more processes than a job has: a job of N processes uses the first N rows and
//! columns, so one file serves runs of 2, 4 and 8 processes.

use std::path::Path;
use std::time::Duration;

/// Round-trip times and their jitter between `processes()` processes, ms.
#[derive(Clone, Debug, PartialEq)]
pub struct DelayMatrix {
    rtt: Vec<Vec<f64>>,
    /// `None`: the default jitter applies ([`DelayMatrix::with_default_jitter`]).
    jitter: Vec<Vec<Option<f64>>>,
}

impl DelayMatrix {
    /// An `n` x `n` matrix with RTT `rtt_ms(i, j)` and no jitter of its own.
    pub fn from_fn(n: usize, rtt_ms: impl Fn(usize, usize) -> f64) -> Self {
        DelayMatrix {
            rtt: (0..n)
                .map(|i| (0..n).map(|j| rtt_ms(i, j)).collect())
                .collect(),
            jitter: vec![vec![None; n]; n],
        }
    }

    /// Gives every pair with a delay and no jitter of its own `jitter_ms`.
    pub fn with_default_jitter(mut self, jitter_ms: f64) -> Self {
        for (rtt, jit) in self.rtt.iter().zip(&mut self.jitter) {
            for (r, j) in rtt.iter().zip(jit) {
                if j.is_none() && *r > 0.0 {
                    *j = Some(jitter_ms);
                }
            }
        }
        self
    }

    /// Number of processes.
    pub fn processes(&self) -> usize {
        self.rtt.len()
    }

    /// The RTT between processes `i` and `j`, ms.
    pub fn rtt_ms(&self, i: usize, j: usize) -> f64 {
        self.rtt[i][j]
    }

    /// The jitter on that RTT, ms.
    pub fn jitter_ms(&self, i: usize, j: usize) -> f64 {
        self.jitter[i][j].unwrap_or(0.0)
    }

    /// One-way delay of a frame from process `from` to process `to`: (base, jitter), each half
    /// the pair's RTT and RTT jitter.
    pub fn one_way(&self, from: usize, to: usize) -> (Duration, Duration) {
        let half = |ms: f64| Duration::from_secs_f64(ms / 2e3);
        (half(self.rtt_ms(from, to)), half(self.jitter_ms(from, to)))
    }

    /// Mean and largest RTT over the pairs of processes, ms (for reports).
    pub fn mean_and_max_ms(&self) -> (f64, f64) {
        let n = self.processes();
        let pairs: Vec<f64> = (0..n)
            .flat_map(|i| (i + 1..n).map(move |j| (i, j)))
            .map(|(i, j)| self.rtt[i][j])
            .collect();
        let max = pairs.iter().copied().fold(0.0, f64::max);
        (pairs.iter().sum::<f64>() / pairs.len().max(1) as f64, max)
    }

    /// Checks every RTT is at most `max`.
    ///
    /// # Errors
    /// The first pair over it.
    pub fn check(&self, max: Duration) -> Result<(), String> {
        let max_ms = max.as_secs_f64() * 1e3;
        for i in 0..self.processes() {
            for j in 0..self.processes() {
                let top = self.rtt_ms(i, j) + self.jitter_ms(i, j);
                if top > max_ms {
                    return Err(format!(
                        "the RTT between processes {i} and {j} ({top} ms with its jitter) is \
                         over {max_ms} ms"
                    ));
                }
            }
        }
        Ok(())
    }
}

/// Reads a `--delay-matrix` file for a job of `processes` processes.
///
/// # Errors
/// The file cannot be read, or [`parse`] refuses it; the message names the file.
pub fn read(path: &Path, processes: usize) -> Result<DelayMatrix, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("--delay-matrix {}: cannot read it: {e}", path.display()))?;
    parse(&text, processes).map_err(|e| format!("--delay-matrix {}: {e}", path.display()))
}

/// Parses the text of a delay matrix (format in the module docs) and keeps the first
/// `processes` rows and columns.
///
/// # Errors
/// A malformed entry (naming line and column), rows of different lengths, a matrix that is not
/// square or symmetric or has a non-zero diagonal, or fewer rows than `processes`.
pub fn parse(text: &str, processes: usize) -> Result<DelayMatrix, String> {
    let mut rows: Vec<(usize, Vec<Entry>)> = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("");
        let entries: Vec<&str> = line
            .split(|c: char| c.is_whitespace() || c == ',')
            .filter(|s| !s.is_empty())
            .collect();
        if entries.is_empty() {
            continue;
        }
        let row = entries
            .iter()
            .enumerate()
            .map(|(c, e)| {
                entry(e).map_err(|why| format!("line {}, column {}: {why}", n + 1, c + 1))
            })
            .collect::<Result<_, _>>()?;
        rows.push((n + 1, row));
    }
    let size = rows.len();
    if size < processes {
        return Err(format!(
            "{size} rows, the job has {processes} processes (one row and column per process)"
        ));
    }
    for (line, row) in &rows {
        if row.len() != size {
            return Err(format!(
                "line {line}: {} entries, expected {size} (the matrix has {size} rows)",
                row.len()
            ));
        }
    }
    for i in 0..size {
        let (line, row) = &rows[i];
        if row[i].0 != 0.0 {
            return Err(format!("line {line}: a process's RTT to itself must be 0"));
        }
        for j in 0..i {
            if row[j] != rows[j].1[i] {
                return Err(format!(
                    "line {line}: the RTT between processes {i} and {j} differs from the one \
                     between {j} and {i} on line {} (an RTT belongs to the pair; each direction \
                     gets half)",
                    rows[j].0
                ));
            }
        }
    }
    Ok(DelayMatrix {
        rtt: (rows.iter().take(processes))
            .map(|(_, r)| r[..processes].iter().map(|e| e.0).collect())
            .collect(),
        jitter: (rows.iter().take(processes))
            .map(|(_, r)| r[..processes].iter().map(|e| e.1).collect())
            .collect(),
    })
}

/// A parsed entry: RTT and its own jitter, ms.
type Entry = (f64, Option<f64>);

/// One entry: `RTT` or `RTT+-JITTER`, ms, finite and not negative.
fn entry(text: &str) -> Result<Entry, String> {
    let number = |s: &str| -> Result<f64, String> {
        match s.parse::<f64>() {
            Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
            _ => Err(format!(
                "'{text}' is not a round-trip time in ms (expected e.g. 40 or 75+-1)"
            )),
        }
    };
    match text.split_once("+-") {
        Some((rtt, jitter)) => Ok((number(rtt)?, Some(number(jitter)?))),
        None => Ok((number(text)?, None)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_matrix_file_parses_with_comments_commas_and_jitter() {
        let m = parse(
            "# three cities\n0 40 75+-1\n\n40, 0, 10 # comment\n75+-1 10 0\n",
            3,
        )
        .unwrap();
        assert_eq!(m.processes(), 3);
        assert_eq!((m.rtt_ms(0, 2), m.jitter_ms(0, 2)), (75.0, 1.0));
        assert_eq!(m.one_way(1, 0), (Duration::from_millis(20), Duration::ZERO));
        // --rtt-jitter fills in only the pairs that have a delay and no jitter of their own.
        let m = m.with_default_jitter(4.0);
        assert_eq!(m.jitter_ms(0, 1), 4.0);
        assert_eq!(m.jitter_ms(0, 2), 1.0);
        assert_eq!(m.jitter_ms(1, 1), 0.0);
        let (mean, max) = m.mean_and_max_ms();
        assert!((mean - 125.0 / 3.0).abs() < 1e-9 && max == 75.0);
        // A larger matrix serves a smaller job.
        let two = parse("0 40 75\n40 0 10\n75 10 0\n", 2).unwrap();
        assert_eq!(two.processes(), 2);
        assert_eq!(two.rtt_ms(1, 0), 40.0);
    }

    #[test]
    fn bad_matrices_name_what_and_where() {
        let err = |text: &str, n: usize| parse(text, n).unwrap_err();
        let e = err("0 40\n40 zero\n", 2);
        assert!(
            e.contains("line 2, column 2") && e.contains("'zero'"),
            "{e}"
        );
        assert!(err("0 -4\n-4 0\n", 2).contains("line 1, column 2"));
        assert!(err("0 40\n40 0\n", 3).contains("2 rows, the job has 3"));
        assert!(err("0 40 1\n40 0\n1 2 0\n", 2).contains("line 2: 2 entries, expected 3"));
        let e = err("0 40\n41 0\n", 2);
        assert!(
            e.contains("line 2") && e.contains("line 1") && e.contains("differs"),
            "{e}"
        );
        assert!(err("1 40\n40 0\n", 2).contains("line 1: a process's RTT to itself"));
        assert!(err("0 nan\nnan 0\n", 2).contains("'nan'"));
        let e = read(Path::new("/nonexistent/wan.txt"), 2).unwrap_err();
        assert!(
            e.contains("/nonexistent/wan.txt") && e.contains("cannot read"),
            "{e}"
        );
    }
}
