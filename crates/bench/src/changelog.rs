//! The changelog thesis's evaluation with changelog state (`xorflow-lab bench changelog`, docs/kafka.md,
//! bench/results/changelog/REPORT.md): window state on the disk store, every flushed write
//! mirrored to a compacted Kafka topic (`crates/state/src/backend/changelog.rs`), against a real
//! broker (one this command starts with `scripts/kafka.sh`, or `--bootstrap`).
//!
//! * `store-io` (thesis section 4.3): bytes written by the local store and to the changelog for
//!   3M tuples per producer, 1 s windows, 10 keys, fold-left vs retain-all; CPU of the process.
//! * `restore` (section 4.4): one key, a window that never closes, N updates, checkpointed every
//!   100,000; the time to rebuild the window state from the changelog in a fresh store.
//! * `compaction` (section 4.5): the changelog partition's size on the broker's disk over time
//!   and the broker's CPU, with no compaction, aggressive and relaxed compaction.

use crate::restore::{window, Sum};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use xorflow_kafka::changelog::KafkaChangelogs;
use xorflow_kafka::KafkaUri;
use xorflow_runtime::ValueName;
use xorflow_state::backend::ChangelogFactory;
use xorflow_state::delta::Delta;
use xorflow_state::window::WindowForm;
use xorflow_state::{BackendKind, CacheConfig, StateConfig, StateStore};

/// Options of `bench changelog`.
#[derive(clap::Args, Clone, Debug)]
pub struct ChangelogConfig {
    /// Experiments to run (comma-separated): store-io, restore, compaction.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "store-io,restore,compaction"
    )]
    pub experiments: Vec<String>,
    /// A running broker, HOST:PORT (default: start one with scripts/kafka.sh on a free port;
    /// `compaction` needs that one, to read its disk and CPU).
    #[arg(long)]
    pub bootstrap: Option<String>,
    /// store-io: producers, one experiment per value (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "1,3")]
    pub producers: Vec<u64>,
    /// store-io: tuples per producer.
    #[arg(long, default_value_t = 3_000_000)]
    pub tuples: u64,
    /// restore: updates, one experiment per value (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "1000000,3000000,6000000")]
    pub updates: Vec<u64>,
    /// restore: repetitions per experiment (the median is reported).
    #[arg(long, default_value_t = 3)]
    pub repeat: usize,
    /// compaction: how long each policy runs, s.
    #[arg(long, default_value_t = 60)]
    pub compaction_s: u64,
    /// compaction: the policies to run (comma-separated): none, aggressive, relaxed, ratio-0.33.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "none,aggressive,relaxed,ratio-0.33"
    )]
    pub policies: Vec<String>,
}

/// Where the broker is, and the one this command started (stopped when dropped).
struct Broker {
    bootstrap: String,
    own: Option<xorflow_kafka::broker::TestBroker>,
}

impl Broker {
    fn get(cfg: &ChangelogConfig) -> anyhow::Result<Self> {
        if let Some(b) = &cfg.bootstrap {
            return Ok(Broker {
                bootstrap: b.clone(),
                own: None,
            });
        }
        let repo = std::env::current_dir()?;
        anyhow::ensure!(
            repo.join("scripts/kafka.sh").is_file(),
            "no scripts/kafka.sh here: run from the repository, or start a broker and pass \
             --bootstrap"
        );
        let b = xorflow_kafka::broker::TestBroker::start(&repo)
            .ok_or_else(|| anyhow::anyhow!("java and mvn are needed to start a broker"))?;
        Ok(Broker {
            bootstrap: b.bootstrap(),
            own: Some(b),
        })
    }

    fn uri(&self, topic: &str) -> anyhow::Result<KafkaUri> {
        KafkaUri::parse(&format!("kafka://{}/{topic}", self.bootstrap)).map_err(anyhow::Error::msg)
    }
}

/// A store of vertex `vertex` on disk under `dir`, mirrored to changelogs under `prefix`;
/// `write_through`: every write is flushed at once (no write-back cache).
fn store(
    dir: &std::path::Path,
    vertex: &str,
    changelog: Arc<dyn ChangelogFactory>,
    write_through: bool,
) -> anyhow::Result<StateStore> {
    let cache = if write_through {
        CacheConfig {
            dirty_limit: 1,
            capacity: 1,
        }
    } else {
        CacheConfig::DISK
    };
    let cfg = StateConfig {
        backend: BackendKind::Disk,
        dir: dir.to_path_buf(),
        cache,
        changelog: Some(changelog),
    };
    Ok(StateStore::open(&cfg, vertex, 0)?)
}

/// One `store-io` result.
#[derive(Clone, Debug, serde::Serialize)]
pub struct StoreIoResult {
    /// `fold` or `retain`.
    pub form: &'static str,
    /// Producers.
    pub producers: u64,
    /// Tuples over all producers.
    pub tuples: u64,
    /// Bytes the local store was given (keys and values of puts, keys of deletes).
    pub local_bytes: u64,
    /// Key and value bytes appended to the changelog.
    pub changelog_bytes: u64,
    /// Records appended to the changelog (puts and tombstones).
    pub changelog_records: u64,
    /// Process CPU time, s, and wall time, s.
    pub cpu_s: f64,
    /// See `cpu_s`.
    pub elapsed_s: f64,
}

/// `store-io`: tuples in event-time order at 6,000/s per producer (the seed's rate), 10 keys,
/// 1 s windows closed as the next starts, a commit (flush of store and changelog) every 60 s of
/// event time, mid-window (as Samza's timer).
fn store_io(
    b: &Broker,
    form: WindowForm,
    producers: u64,
    tuples: u64,
) -> anyhow::Result<StoreIoResult> {
    let tmp = tempfile::tempdir()?;
    let topic = format!(
        "store-io-{}-{producers}-{}",
        form.name(),
        std::process::id()
    );
    let logs = Arc::new(KafkaChangelogs::new(b.uri(&topic)?, 1, Vec::new()));
    let mut st = store(tmp.path(), "w", logs, false)?;
    let mut w = window(&mut st, form)?;
    let (per_s, total, keys) = (6_000 * producers, tuples * producers, 10);
    let (cpu0, t0) = (
        xorflow_runtime::measure::clock::process_cpu_ns(),
        Instant::now(),
    );
    let mut counted = 0u64;
    let mut d = Delta::new(true);
    for i in 0..total {
        let second = i / per_s;
        if i % per_s == 0 && second > 0 {
            while let Some((_, groups)) = w.close_next(second, &Sum)? {
                counted += groups.iter().map(|(_, acc)| acc).sum::<u64>();
            }
        }
        if i % per_s == per_s / 2 && second.is_multiple_of(60) {
            w.flush()?;
            st.changelog_snapshot(&mut d)?;
        }
        w.add(second + 1, (i % keys) as u32, &1, &Sum)?;
    }
    while let Some((_, groups)) = w.close_next(u64::MAX, &Sum)? {
        counted += groups.iter().map(|(_, acc)| acc).sum::<u64>();
    }
    w.flush()?;
    st.changelog_snapshot(&mut d)?;
    anyhow::ensure!(
        counted == total,
        "windows counted {counted} of {total} tuples"
    );
    let (local, log) = (st.stats(), st.changelog_stats().unwrap_or_default());
    let cpu_s = (xorflow_runtime::measure::clock::process_cpu_ns() - cpu0) as f64 * 1e-9;
    Ok(StoreIoResult {
        form: form.name(),
        producers,
        tuples: total,
        local_bytes: local.bytes_written,
        changelog_bytes: log.bytes,
        changelog_records: log.records,
        cpu_s,
        elapsed_s: t0.elapsed().as_secs_f64(),
    })
}

/// One `restore` result.
#[derive(Clone, Debug, serde::Serialize)]
pub struct RestoreResult {
    /// `fold`, `fold (write-through)` or `retain`.
    pub form: String,
    /// Updates.
    pub updates: u64,
    /// Records in the range replayed.
    pub records: u64,
    /// Median time to rebuild the window state from the changelog, s (replay and reopen).
    pub restore_s: f64,
    /// Every repetition's, s.
    pub restore_s_all: Vec<f64>,
    /// Time to build the state and its changelog, s.
    pub build_s: f64,
}

/// `restore`: builds the state (one key, a window that never closes), checkpointing every
/// 100,000 updates, then rebuilds it `repeat` times in fresh stores from the changelog range of
/// the last checkpoint, checking its sum each time.
fn restore(
    b: &Broker,
    form: WindowForm,
    write_through: bool,
    compacted: bool,
    updates: u64,
    repeat: usize,
) -> anyhow::Result<RestoreResult> {
    let tmp = tempfile::tempdir()?;
    let label = match (form, write_through, compacted) {
        (WindowForm::Fold, true, true) => "fold (write-through, compacted)".to_string(),
        (WindowForm::Fold, true, false) => "fold (write-through)".to_string(),
        (f, _, _) => f.name().to_string(),
    };
    let topic = format!(
        "restore-{}-{write_through}-{compacted}-{updates}-{}",
        form.name(),
        std::process::id()
    );
    let configs = if compacted {
        policies()[1].1.clone()
    } else {
        Vec::new()
    };
    let logs: Arc<dyn ChangelogFactory> =
        Arc::new(KafkaChangelogs::new(b.uri(&topic)?, 1, configs));
    let t0 = Instant::now();
    let mut d = Delta::new(true);
    {
        let mut st = store(&tmp.path().join("build"), "w", logs.clone(), write_through)?;
        let mut w = window(&mut st, form)?;
        for i in 0..updates {
            w.add(u64::MAX - 1, 7, &(i % 1000), &Sum)?;
            if (i + 1) % 100_000 == 0 || i + 1 == updates {
                w.flush()?;
                st.changelog_snapshot(&mut d)?;
            }
        }
    }
    let build_s = t0.elapsed().as_secs_f64();
    if compacted {
        // The broker's log cleaner looks for work every 15 s (log.cleaner.backoff.ms).
        std::thread::sleep(Duration::from_secs(20));
    }
    let want: u64 = (0..updates).map(|i| i % 1000).sum();
    let (mut all, mut records) = (Vec::new(), 0);
    for r in 0..repeat {
        let dir = tmp.path().join(format!("restore-{r}"));
        let mut st = store(&dir, "w", logs.clone(), write_through)?;
        let mut w = window(&mut st, form)?;
        let t = Instant::now();
        records = st
            .changelog_restore(std::slice::from_ref(&d))?
            .ok_or_else(|| anyhow::anyhow!("the store has no changelog"))?;
        w.reopen()?;
        all.push(t.elapsed().as_secs_f64());
        let (_, groups) = w
            .close_next(u64::MAX, &Sum)?
            .ok_or_else(|| anyhow::anyhow!("the restored state holds no window"))?;
        let got: u64 = groups.iter().map(|(_, acc)| acc).sum();
        anyhow::ensure!(
            got == want,
            "restored sum {got}, {want} expected ({label}, {updates})"
        );
    }
    let mut sorted = all.clone();
    sorted.sort_by(f64::total_cmp);
    Ok(RestoreResult {
        form: label,
        updates,
        records,
        restore_s: sorted[sorted.len() / 2],
        restore_s_all: all,
        build_s,
    })
}

/// One sample of the `compaction` experiment.
#[derive(Clone, Debug, serde::Serialize)]
pub struct CompactionSample {
    /// Policy: `none`, `aggressive`, `relaxed`.
    pub policy: &'static str,
    /// `fold` or `retain`.
    pub form: &'static str,
    /// Seconds since the policy's run started.
    pub t_s: f64,
    /// The changelog partition's log segments on the broker's disk, bytes.
    pub bytes: u64,
    /// Broker CPU since the previous sample, % of one core.
    pub broker_cpu_pct: f64,
}

/// The compaction policies of section 4.5 (and its 0.33 dirty-ratio point): topic settings.
fn policies() -> [(&'static str, Vec<(String, String)>); 4] {
    let s = |v: &[(&str, &str)]| {
        v.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect::<Vec<_>>()
    };
    [
        (
            "none",
            s(&[("cleanup.policy", "delete"), ("retention.ms", "-1")]),
        ),
        (
            "aggressive",
            s(&[("min.cleanable.dirty.ratio", "0.01"), ("segment.ms", "100")]),
        ),
        (
            "relaxed",
            s(&[
                ("min.cleanable.dirty.ratio", "0.66"),
                ("segment.ms", "1000"),
            ]),
        ),
        (
            "ratio-0.33",
            s(&[
                ("min.cleanable.dirty.ratio", "0.33"),
                ("segment.ms", "1000"),
            ]),
        ),
    ]
}

/// Bytes of the log segments (`*.log`) in a partition's folder `dir`: the records. The index
/// files beside them are left out: an active segment's are preallocated sparse files of 10 MB
/// each (`segment.index.bytes`), which would swamp the figure.
fn log_bytes(dir: &std::path::Path) -> u64 {
    std::fs::read_dir(dir).map_or(0, |d| {
        d.flatten()
            .filter(|e| e.file_name().to_string_lossy().ends_with(".log"))
            .filter_map(|e| e.metadata().ok())
            .map(|m| m.len())
            .sum()
    })
}

/// CPU time of process `pid` (user + system), s.
fn cpu_of(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    // Fields 14 and 15 of stat (utime, stime), 11 and 12 after the command.
    (ticks(11) + ticks(12)) / 100.0
}

/// `compaction`: the store-io workload with 1 producer, paced to 6,000 tuples/s of real time
/// for `secs` (the thesis ran its producer at that rate), written through (every update a
/// record), a commit every second; samples the partition's size and the broker's CPU every
/// second.
fn compaction(
    b: &Broker,
    policy: (&'static str, Vec<(String, String)>),
    form: WindowForm,
    secs: u64,
) -> anyhow::Result<Vec<CompactionSample>> {
    let own = b
        .own
        .as_ref()
        .ok_or_else(|| anyhow::anyhow!("compaction needs a broker this command starts"))?;
    let tmp = tempfile::tempdir()?;
    let topic = format!(
        "compaction-{}-{}-{}",
        policy.0,
        form.name(),
        std::process::id()
    );
    let logs = Arc::new(KafkaChangelogs::new(b.uri(&topic)?, 1, policy.1));
    // Write-through: every update reaches the changelog, as in the thesis's Samza (with the
    // write-back cache, fold-left would write next to nothing and there would be nothing to
    // compact).
    let mut st = store(tmp.path(), "w", logs, true)?;
    let mut w = window(&mut st, form)?;
    let part_dir: PathBuf = own.data_dir().join(format!("{topic}-w-0"));
    let pid = own
        .pid()
        .ok_or_else(|| anyhow::anyhow!("the broker's pid is unknown"))?;
    let (t0, mut samples, mut d) = (Instant::now(), Vec::new(), Delta::new(true));
    let (mut last_cpu, mut last_t) = (cpu_of(pid), 0.0);
    let mut i = 0u64;
    while t0.elapsed() < Duration::from_secs(secs) {
        let second = i / 6_000;
        let due = Duration::from_secs_f64(i as f64 / 6_000.0);
        if let Some(wait) = due.checked_sub(t0.elapsed()) {
            std::thread::sleep(wait);
        }
        if i.is_multiple_of(6_000) && second > 0 {
            while w.close_next(second, &Sum)?.is_some() {}
            w.flush()?;
            st.changelog_snapshot(&mut d)?;
            let (cpu, t) = (cpu_of(pid), t0.elapsed().as_secs_f64());
            samples.push(CompactionSample {
                policy: policy.0,
                form: form.name(),
                t_s: t,
                bytes: log_bytes(&part_dir),
                broker_cpu_pct: 100.0 * (cpu - last_cpu) / (t - last_t).max(1e-9),
            });
            (last_cpu, last_t) = (cpu, t);
        }
        w.add(second + 1, (i % 10) as u32, &1, &Sum)?;
        i += 1;
    }
    Ok(samples)
}

/// Everything `bench changelog` measured.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct ChangelogResults {
    /// `store-io` results.
    pub store_io: Vec<StoreIoResult>,
    /// `restore` results.
    pub restore: Vec<RestoreResult>,
    /// `compaction` samples.
    pub compaction: Vec<CompactionSample>,
}

/// Runs the experiments `cfg` names, printing each result as it comes (`say`).
///
/// # Errors
/// An unknown experiment, no broker, or an experiment that failed or did not check out.
pub fn run(cfg: &ChangelogConfig, say: &mut dyn FnMut(String)) -> anyhow::Result<ChangelogResults> {
    for e in &cfg.experiments {
        anyhow::ensure!(
            ["store-io", "restore", "compaction"].contains(&e.as_str()),
            "unknown experiment '{e}' (store-io, restore, compaction)"
        );
    }
    anyhow::ensure!(cfg.repeat > 0, "--repeat must be at least 1");
    let b = Broker::get(cfg)?;
    let has = |e: &str| cfg.experiments.iter().any(|x| x == e);
    let mut out = ChangelogResults::default();
    let forms = [WindowForm::Fold, WindowForm::Retain];
    if has("store-io") {
        for &p in &cfg.producers {
            for form in forms {
                let r = store_io(&b, form, p, cfg.tuples)?;
                say(describe_store_io(&r));
                out.store_io.push(r);
            }
        }
    }
    if has("restore") {
        for &u in &cfg.updates {
            for (form, wt, compacted) in [
                (WindowForm::Fold, false, false),
                (WindowForm::Fold, true, false),
                (WindowForm::Fold, true, true),
                (WindowForm::Retain, false, false),
            ] {
                let r = restore(&b, form, wt, compacted, u, cfg.repeat)?;
                say(describe_restore(&r));
                out.restore.push(r);
            }
        }
    }
    if has("compaction") {
        let known: Vec<&str> = policies().iter().map(|p| p.0).collect();
        for p in &cfg.policies {
            anyhow::ensure!(
                known.contains(&p.as_str()),
                "unknown policy '{p}' ({})",
                known.join(", ")
            );
        }
        for policy in policies()
            .into_iter()
            .filter(|p| cfg.policies.iter().any(|x| x == p.0))
        {
            for form in forms {
                let s = compaction(&b, policy.clone(), form, cfg.compaction_s)?;
                if let Some(l) = s.last() {
                    let peak = s.iter().map(|x| x.bytes).max().unwrap_or(0);
                    let cpu = s.iter().map(|x| x.broker_cpu_pct).sum::<f64>() / s.len() as f64;
                    say(format!(
                        "compaction {:>10} {:>6}: {:.2} MB of log at {:.0} s (peak {:.2} MB), \
                         broker CPU {cpu:.1} % on average",
                        l.policy,
                        l.form,
                        l.bytes as f64 / 1e6,
                        l.t_s,
                        peak as f64 / 1e6
                    ));
                }
                out.compaction.extend(s);
            }
        }
    }
    Ok(out)
}

/// A `store-io` result as a line.
pub fn describe_store_io(r: &StoreIoResult) -> String {
    format!(
        "store-io {:>6} {} producer(s), {} tuples: local store {:.3} MB, changelog {:.3} MB \
         ({} records); CPU {:.2} s over {:.2} s",
        r.form,
        r.producers,
        r.tuples,
        r.local_bytes as f64 / 1e6,
        r.changelog_bytes as f64 / 1e6,
        r.changelog_records,
        r.cpu_s,
        r.elapsed_s
    )
}

/// A `restore` result as a line.
pub fn describe_restore(r: &RestoreResult) -> String {
    format!(
        "restore {:>31} {} updates: {:.3} s from the changelog ({} records; runs, s: {:?}); \
         built in {:.2} s",
        r.form,
        r.updates,
        r.restore_s,
        r.records,
        r.restore_s_all
            .iter()
            .map(|s| format!("{s:.3}"))
            .collect::<Vec<_>>(),
        r.build_s
    )
}
