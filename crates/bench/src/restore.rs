//! The changelog thesis's restore-time experiment (`xorflow-lab bench restore`): one key, one window that never
//! closes, N updates, in fold-left and retain-all form; the state is checkpointed every
//! `--checkpoint-every` updates through the real checkpoint store (incremental, with its chain
//! rule: `crates/state/src/checkpoint/chain.rs`), then restored from the last checkpoint into a
//! fresh store. On disk it also measures local recovery (host affinity,
//! `crates/state/src/local.rs`): the store took a savepoint at each checkpoint, and the restore
//! rolls its file back to the last one and rebuilds the tables' metadata. The seed's Samza figures at 3M updates (restored from a changelog): 8.41 s
//! fold-left, 4.42 s retain-all (the changelog thesis, docs/papers.md).

use std::sync::Arc;
use std::time::Instant;
use xorflow_runtime::ValueName;
use xorflow_state::checkpoint::{Chain, CheckpointStore, FileRef};
use xorflow_state::local::Affinity;
use xorflow_state::window::{Fold, WindowForm, WindowState};
use xorflow_state::{BackendKind, StateConfig, StateStore};

/// Options of `bench restore`.
#[derive(clap::Args, Clone, Debug)]
pub struct RestoreConfig {
    /// Updates to the one key's window, one experiment per value (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "1000000,3000000,6000000")]
    pub updates: Vec<u64>,
    /// Updates between checkpoints.
    #[arg(long, default_value_t = 100_000)]
    pub checkpoint_every: u64,
    /// Where the state lives while it is built and after it is restored: memory or disk.
    #[arg(long, value_enum, default_value_t, hide_possible_values = true)]
    pub state_backend: BackendKind,
    /// Restores per experiment; the median is reported.
    #[arg(long, default_value_t = 3)]
    pub repeat: usize,
}

/// One experiment's result.
#[derive(Clone, Debug, serde::Serialize)]
pub struct RestoreResult {
    /// `fold` or `retain`.
    pub form: &'static str,
    /// `memory` or `disk`.
    pub backend: &'static str,
    /// Updates applied before the last checkpoint.
    pub updates: u64,
    /// Files in the restored chain (a full snapshot, then increments).
    pub chain_files: usize,
    /// Bytes of the restored chain.
    pub chain_bytes: u64,
    /// Restore time, s: reading and verifying the chain and rebuilding the state (median).
    pub restore_s: f64,
    /// Every restore's time, s.
    pub restore_s_all: Vec<f64>,
    /// Time spent taking and writing the checkpoints while the state was built, s.
    pub checkpointing_s: f64,
    /// On disk: restore time by local recovery, s (median): reopening the store's file rolled
    /// back to the last checkpoint's savepoint and rebuilding the tables' metadata.
    pub local_s: Option<f64>,
    /// Every local restore's time, s.
    pub local_s_all: Vec<f64>,
    /// On disk: time spent flushing and taking savepoints at the checkpoints, s.
    pub savepoints_s: f64,
}

/// The owner the benchmark's stores record.
const OWNER: &str = "bench restore";

/// The store of the state that is built and checkpointed: with savepoints on disk.
fn affine(
    backend: BackendKind,
    dir: &std::path::Path,
    resume: Option<u64>,
) -> anyhow::Result<StateStore> {
    let cfg = StateConfig {
        backend,
        dir: dir.to_path_buf(),
        ..StateConfig::default()
    };
    let affinity = Affinity {
        owner: OWNER,
        resume,
        savepoints: true,
    };
    Ok(StateStore::open_with(&cfg, "build", 0, Some(affinity))?)
}

/// The sum `updates` updates make.
fn expected(updates: u64) -> u64 {
    (0..updates).map(|i| i % 1000).sum()
}

/// Closes the window and checks its sum.
fn check(w: &mut WindowState<u32, u64, u64>, updates: u64) -> anyhow::Result<()> {
    let (_, groups) = w
        .close_next(u64::MAX, &Sum)?
        .ok_or_else(|| anyhow::anyhow!("the restored state holds no window"))?;
    let got: u64 = groups.iter().map(|(_, acc)| acc).sum();
    let want = expected(updates);
    anyhow::ensure!(got == want, "restored state sums to {got}, {want} expected");
    Ok(())
}

/// Sums values: the fold-left aggregate.
pub(crate) struct Sum;

impl Fold<u64> for Sum {
    type Acc = u64;
    fn init(&self) -> u64 {
        0
    }
    fn add(&self, acc: &mut u64, v: &u64) {
        *acc += v;
    }
}

/// The window that never closes, and the one key.
const END: u64 = u64::MAX - 1;
const KEY: u32 = 7;

/// A state store of one instance of vertex `name` on `backend`, files under `dir`.
pub(crate) fn store(
    backend: BackendKind,
    dir: &std::path::Path,
    name: &str,
) -> anyhow::Result<StateStore> {
    let cfg = StateConfig {
        backend,
        dir: dir.to_path_buf(),
        ..StateConfig::default()
    };
    Ok(StateStore::open(&cfg, name, 0)?)
}

/// Window state keyed by `u32`, folding `u64` values by [`Sum`].
pub(crate) fn window(
    store: &mut StateStore,
    form: WindowForm,
) -> anyhow::Result<WindowState<u32, u64, u64>> {
    Ok(WindowState::new(store, "window", form, Arc::new(|_| 0))?)
}

/// The state built and checkpointed: the chain of the last checkpoint, its number, and the
/// time spent on snapshots and on savepoints.
struct Built {
    chain: Vec<FileRef>,
    last: u64,
    checkpointing_s: f64,
    savepoints_s: f64,
}

/// Builds the state with `updates` updates, checkpointing every `every` (on disk with a
/// savepoint per checkpoint).
fn build(
    form: WindowForm,
    backend: BackendKind,
    updates: u64,
    every: u64,
    dir: &std::path::Path,
    ck: &CheckpointStore,
) -> anyhow::Result<Built> {
    let mut st = affine(backend, &dir.join("state"), None)?;
    let mut w = window(&mut st, form)?;
    let mut chain = Chain::new(16);
    let (mut spent, mut savepoints_s, mut last) = (0.0, 0.0, None);
    for i in 0..updates {
        w.add(END, KEY, &(i % 1000), &Sum)?;
        if (i + 1) % every == 0 || i + 1 == updates {
            let t0 = Instant::now();
            let mut d = xorflow_state::delta::Delta::new(chain.next_is_full());
            w.snapshot(&mut d)?;
            let f = ck.write_snapshot("window/0", i + 1, &d)?;
            chain.push(f);
            spent += t0.elapsed().as_secs_f64();
            let t1 = Instant::now();
            w.flush()?;
            st.savepoint(i + 1..=i + 1, last)?;
            savepoints_s += t1.elapsed().as_secs_f64();
            last = Some(i + 1);
        }
    }
    Ok(Built {
        chain: chain.files().to_vec(),
        last: last.unwrap_or(0),
        checkpointing_s: spent,
        savepoints_s,
    })
}

/// Local recovery of the built store: reopens its file rolled back to checkpoint `last` and
/// rebuilds the metadata (timed), takes a savepoint of the same checkpoint again for the next
/// repetition (a rollback drops the others), and checks the sum.
fn restore_local(
    form: WindowForm,
    updates: u64,
    last: u64,
    dir: &std::path::Path,
) -> anyhow::Result<f64> {
    let t0 = Instant::now();
    let mut st = affine(BackendKind::Disk, &dir.join("state"), Some(last))?;
    anyhow::ensure!(
        st.restored_locally(),
        "the store was not rolled back: {:?}",
        st.opened()
    );
    let mut w = window(&mut st, form)?;
    w.reopen()?;
    let took = t0.elapsed().as_secs_f64();
    st.savepoint(last..=last, None)?;
    check(&mut w, updates)?;
    Ok(took)
}

/// Restores `chain` into a fresh store and checks it holds what `updates` updates made.
fn restore(
    form: WindowForm,
    backend: BackendKind,
    updates: u64,
    chain: &[FileRef],
    dir: &std::path::Path,
    ck: &CheckpointStore,
) -> anyhow::Result<f64> {
    let mut st = store(backend, &dir.join("restored"), "restore")?;
    let mut w = window(&mut st, form)?;
    let t0 = Instant::now();
    let deltas = ck.read_chain(chain)?;
    w.restore(&deltas, &|_| true)?;
    let took = t0.elapsed().as_secs_f64();
    check(&mut w, updates)?;
    st.remove()?;
    Ok(took)
}

/// Runs every experiment: both forms for each `updates` value.
///
/// # Errors
/// The state or checkpoint store failed, or a restore did not give back the state.
pub fn run(cfg: &RestoreConfig) -> anyhow::Result<Vec<RestoreResult>> {
    anyhow::ensure!(
        cfg.checkpoint_every > 0,
        "--checkpoint-every must be at least 1"
    );
    anyhow::ensure!(cfg.repeat > 0, "--repeat must be at least 1");
    let mut out = Vec::new();
    for &updates in &cfg.updates {
        for form in [WindowForm::Fold, WindowForm::Retain] {
            let tmp = tempfile::tempdir()?;
            let ck = CheckpointStore::local(&tmp.path().join("checkpoints"), 1)?;
            let built = build(
                form,
                cfg.state_backend,
                updates,
                cfg.checkpoint_every,
                tmp.path(),
                &ck,
            )?;
            let chain = &built.chain;
            let mut all = Vec::new();
            let mut local = Vec::new();
            for _ in 0..cfg.repeat {
                all.push(restore(
                    form,
                    cfg.state_backend,
                    updates,
                    chain,
                    tmp.path(),
                    &ck,
                )?);
                if cfg.state_backend == BackendKind::Disk {
                    local.push(restore_local(form, updates, built.last, tmp.path())?);
                }
            }
            out.push(RestoreResult {
                form: form.name(),
                backend: cfg.state_backend.name(),
                updates,
                chain_files: chain.len(),
                chain_bytes: chain.iter().map(|f| f.bytes).sum(),
                restore_s: median(&all).unwrap_or(0.0),
                restore_s_all: all,
                checkpointing_s: built.checkpointing_s,
                local_s: median(&local),
                local_s_all: local,
                savepoints_s: built.savepoints_s,
            });
        }
    }
    Ok(out)
}

/// The median of `v` (`None` if empty).
fn median(v: &[f64]) -> Option<f64> {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    s.get(s.len() / 2).copied()
}

/// One result as a line of text.
pub fn describe(r: &RestoreResult) -> String {
    let local = match r.local_s {
        Some(l) => format!(
            "; local recovery {:.3} ms (runs, s: {:?}; savepoints {:.2} s)",
            l * 1e3,
            r.local_s_all
                .iter()
                .map(|s| format!("{s:.4}"))
                .collect::<Vec<_>>(),
            r.savepoints_s
        ),
        None => String::new(),
    };
    format!(
        "{:>6} {:>6} {:>9} updates: restore {:.3} ms (chain {} files, {} bytes; runs, s: {:?}); \
         checkpointing {:.2} s{local}",
        r.form,
        r.backend,
        r.updates,
        r.restore_s * 1e3,
        r.chain_files,
        r.chain_bytes,
        r.restore_s_all
            .iter()
            .map(|s| format!("{s:.4}"))
            .collect::<Vec<_>>(),
        r.checkpointing_s
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both forms on both backends restore the sum they were built with (`restore` checks it
    /// and fails otherwise); retain-all's chain holds every element, fold-left's one value.
    #[test]
    fn small_experiments_restore_what_was_built() {
        for state_backend in [BackendKind::Memory, BackendKind::Disk] {
            let cfg = RestoreConfig {
                updates: vec![2500],
                checkpoint_every: 300,
                state_backend,
                repeat: 1,
            };
            let r = run(&cfg).unwrap();
            assert_eq!(r.len(), 2);
            let (fold, retain) = (&r[0], &r[1]);
            assert!(fold.chain_bytes < 1000, "{fold:?}");
            // Every element is in the chain: at least its byte of postcard (values < 128
            // take one), and more than fold-left's single value.
            assert!(retain.chain_bytes > 2500, "{retain:?}");
            // On disk the local recovery was measured (and checked its sum).
            let disk = state_backend == BackendKind::Disk;
            assert_eq!(fold.local_s.is_some(), disk, "{fold:?}");
            assert_eq!(retain.local_s.is_some(), disk, "{retain:?}");
        }
    }
}
