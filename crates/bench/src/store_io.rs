//! The changelog thesis's store I/O experiment (`xorflow-lab bench store-io`): bytes the local on-disk store
//! writes for 3M tuples per producer (1 or 3 producers, each sending 6,000 tuples/s of event
//! time, the seed's rate), 10 keys, 1 s tumbling windows closed as event time passes, fold-left
//! vs retain-all, with the process CPU time it took. The store is the disk backend behind its
//! write-back cache (flush at 500 dirty keys: `crates/state/src/cache.rs`). The seed's figures
//! (Samza, RocksDB): fold-left ~4.7 / ~5.6 MB, retain-all ~28.6 / ~86.4 MB.

use crate::restore::{store, window, Sum};
use std::time::Instant;
use xorflow_runtime::ValueName;
use xorflow_state::window::WindowForm;
use xorflow_state::BackendKind;

/// Options of `bench store-io`.
#[derive(clap::Args, Clone, Debug)]
pub struct StoreIoConfig {
    /// Producers, one experiment per value (comma-separated); each sends 3M tuples.
    #[arg(long, value_delimiter = ',', default_value = "1,3")]
    pub producers: Vec<u64>,
    /// Tuples per producer.
    #[arg(long, default_value_t = 3_000_000)]
    pub tuples: u64,
    /// Event-time rate of each producer, tuples/s.
    #[arg(long, default_value_t = 6_000)]
    pub rate: u64,
    /// Keys (tuples cycle through them).
    #[arg(long, default_value_t = 10)]
    pub keys: u32,
    /// Flush the write-back cache every this many seconds of event time (Samza's commit, 60 s
    /// by default).
    #[arg(long, default_value_t = 60)]
    pub commit_s: u64,
}

/// One experiment's result.
#[derive(Clone, Debug, serde::Serialize)]
pub struct StoreIoResult {
    /// `fold` or `retain`.
    pub form: &'static str,
    /// Producers.
    pub producers: u64,
    /// Tuples over all producers.
    pub tuples: u64,
    /// Key and value bytes the store was given (puts), plus deleted keys' bytes.
    pub bytes_written: u64,
    /// Puts and deletes.
    pub puts: u64,
    /// See `puts`.
    pub deletes: u64,
    /// Windows closed.
    pub windows: u64,
    /// Process CPU time of the experiment, s.
    pub cpu_s: f64,
    /// Wall time, s.
    pub elapsed_s: f64,
}

/// Runs one experiment: tuples in event-time order (the producers interleaved), each window
/// closed (its results folded, its state deleted) once the next one starts.
fn one(cfg: &StoreIoConfig, form: WindowForm, producers: u64) -> anyhow::Result<StoreIoResult> {
    let tmp = tempfile::tempdir()?;
    let mut st = store(BackendKind::Disk, tmp.path(), "store-io")?;
    let mut w = window(&mut st, form)?;
    let total = cfg.tuples * producers;
    let per_s = cfg.rate * producers;
    let (cpu0, t0) = (
        xorflow_runtime::measure::clock::process_cpu_ns(),
        Instant::now(),
    );
    let mut windows = 0;
    let mut checksum = 0u64;
    for i in 0..total {
        let second = i / per_s;
        // Window [second, second + 1) ends at second + 1; the previous one closes now.
        if i % per_s == 0 && second > 0 {
            while let Some((_, groups)) = w.close_next(second, &Sum)? {
                windows += 1;
                checksum += groups.iter().map(|(_, acc)| acc).sum::<u64>();
            }
        }
        // A commit lands mid-window, as Samza's timer would: the open window's keys are dirty.
        if i % per_s == per_s / 2 && second.is_multiple_of(cfg.commit_s.max(1)) {
            w.flush()?;
        }
        w.add(second + 1, (i % u64::from(cfg.keys)) as u32, &1, &Sum)?;
    }
    while let Some((_, groups)) = w.close_next(u64::MAX, &Sum)? {
        windows += 1;
        checksum += groups.iter().map(|(_, acc)| acc).sum::<u64>();
    }
    w.flush()?;
    anyhow::ensure!(
        checksum == total,
        "windows counted {checksum} tuples of {total}"
    );
    let stats = st.stats();
    let cpu_s = (xorflow_runtime::measure::clock::process_cpu_ns() - cpu0) as f64 * 1e-9;
    let elapsed_s = t0.elapsed().as_secs_f64();
    drop(w);
    st.remove()?;
    Ok(StoreIoResult {
        form: form.name(),
        producers,
        tuples: total,
        bytes_written: stats.bytes_written,
        puts: stats.puts,
        deletes: stats.deletes,
        windows,
        cpu_s,
        elapsed_s,
    })
}

/// Runs every experiment: both forms for each number of producers.
///
/// # Errors
/// The store failed, or the windows did not count every tuple once.
pub fn run(cfg: &StoreIoConfig) -> anyhow::Result<Vec<StoreIoResult>> {
    anyhow::ensure!(
        cfg.rate > 0 && cfg.keys > 0,
        "--rate and --keys must be at least 1"
    );
    let mut out = Vec::new();
    for &p in &cfg.producers {
        anyhow::ensure!(p > 0, "--producers must be at least 1");
        for form in [WindowForm::Fold, WindowForm::Retain] {
            out.push(one(cfg, form, p)?);
        }
    }
    Ok(out)
}

/// One result as a line of text.
pub fn describe(r: &StoreIoResult) -> String {
    format!(
        "{:>6} {} producer(s), {} tuples: {:.3} MB ({} bytes) written ({} puts, {} deletes, {} \
         windows); CPU {:.2} s over {:.2} s",
        r.form,
        r.producers,
        r.tuples,
        r.bytes_written as f64 / 1e6,
        r.bytes_written,
        r.puts,
        r.deletes,
        r.windows,
        r.cpu_s,
        r.elapsed_s
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every tuple is counted once (`one` checks it); retain-all writes nearly every tuple,
    /// fold-left one value per key and commit.
    #[test]
    fn small_experiment_counts_every_tuple_and_retain_writes_more() {
        let cfg = StoreIoConfig {
            producers: vec![2],
            tuples: 3000,
            rate: 600,
            keys: 10,
            commit_s: 1,
        };
        let r = run(&cfg).unwrap();
        let (fold, retain) = (&r[0], &r[1]);
        assert_eq!((fold.tuples, fold.windows), (6000, 5), "{fold:?}");
        assert_eq!(
            fold.puts, 50,
            "each commit writes the 10 open keys: {fold:?}"
        );
        // Flushed at every 500 appends and at commits: all but a window's unflushed tail, as
        // runs (one put per list per flush: `crates/state/src/run.rs`) of at least a byte per
        // element.
        assert!(retain.puts > fold.puts, "{retain:?}");
        assert!(retain.bytes_written >= 4000, "{retain:?}");
        assert!(
            fold.bytes_written * 5 < retain.bytes_written,
            "{fold:?} {retain:?}"
        );
    }
}
