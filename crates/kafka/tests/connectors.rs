//! The Kafka source and sink against a real broker (`scripts/kafka.sh`), each compared with an
//! oracle computed from what was produced: every valid record once, bad records counted with
//! their partition and offset, committed output exactly once, a killed producer's transaction
//! fenced and invisible.
//!
//! Needs Java 17 and Maven (`.ci/run` installs them); skipped without them outside CI.

use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};
use xorflow_kafka::admin;
use xorflow_kafka::broker::TestBroker;
use xorflow_kafka::producer::Loader;
use xorflow_kafka::{
    Decoded, Decoder, Encoder, KafkaSink, KafkaSource, KafkaUri, RecordView, SourceConfig,
    SourceCounters, Watermark,
};
use xorflow_runtime::{
    Dataflow, Element, RuntimeConfig, Sink, Source, SourceOutput, SourcePoll, Time, VecSink,
};

/// The broker this binary's tests share (`TestBroker::shared`), each test with its own topics.
fn broker() -> Option<&'static TestBroker> {
    TestBroker::shared(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."))
}

/// `time,value` records.
struct Text;

impl Decoder<u64> for Text {
    fn decode(&mut self, r: &RecordView<'_>) -> Decoded<u64> {
        let s = String::from_utf8_lossy(r.payload);
        let parsed = s
            .split_once(',')
            .and_then(|(t, v)| Some((t.parse().ok()?, v.parse().ok()?)));
        match parsed {
            Some((t, v)) => Decoded::Element(t, v),
            None => Decoded::Malformed(format!("'{s}' is not time,value")),
        }
    }
}

impl Encoder<u64> for Text {
    fn encode(&mut self, e: &Element<u64>, key: &mut Vec<u8>, value: &mut Vec<u8>) {
        key.extend_from_slice(format!("{}", e.data % 7).as_bytes());
        value.extend_from_slice(format!("{},{}", e.time, e.data).as_bytes());
    }
}

/// Every committed record of `uri`'s topic, as text.
fn read_committed(uri: &KafkaUri) -> Vec<String> {
    xorflow_kafka::dump::read_topic(uri)
        .unwrap()
        .into_iter()
        .map(|r| String::from_utf8_lossy(&r.value).into_owned())
        .collect()
}

#[test]
fn the_source_emits_every_valid_record_once_and_counts_bad_ones_with_their_offsets() {
    let Some(b) = broker() else { return };
    let uri = KafkaUri::parse(&b.uri("in")).unwrap();
    // Timestamps in 1970: time-based retention would delete them.
    admin::create_topic(&uri, 3, &[("retention.ms", "-1")]).unwrap();
    // Per partition, records at increasing timestamps; every 50th is malformed, every 70th is
    // late (its event time lies far below its own timestamp minus the lateness).
    let (mut expected, mut malformed, mut late) = (Vec::new(), 0, 0);
    let mut loader = Loader::new(&uri).unwrap();
    for i in 0..3000u64 {
        let p = (i % 3) as i32;
        let ts = 1_000_000 + i;
        let value = if i % 50 == 7 {
            malformed += 1;
            format!("garbage {i}")
        } else if i % 70 == 3 {
            late += 1;
            format!("{},{i}", ts - 100)
        } else {
            expected.push((ts - i % 4, i));
            format!("{},{i}", ts - i % 4)
        };
        loader
            .send(p, (ts * 1000) as i64, None, value.as_bytes())
            .unwrap();
    }
    assert_eq!(loader.finish().unwrap(), 3000);
    let cfg = Arc::new(SourceConfig {
        uri: uri.clone(),
        partitions: 3,
        instances: 2,
        watermark: Watermark::RecordTimestamp {
            ms_per_unit: 1000,
            lateness: 10,
        },
        idle_timeout: Duration::from_secs(10),
        bounded: true,
        speed: None,
    });
    let counters = Arc::new(SourceCounters::default());
    let out = VecSink::<u64>::shared();
    let (fact, c2) = (out.factory(), counters.clone());
    let df = Dataflow::new(RuntimeConfig {
        workers: 2,
        ..RuntimeConfig::default()
    })
    .unwrap();
    df.source("kafka", 2, move |k| {
        KafkaSource::new(cfg.clone(), k, Text, c2.clone())
    })
    .sink("out", fact);
    df.run().unwrap();
    let mut got: Vec<(Time, u64)> = out.take().into_iter().map(|e| (e.time, e.data)).collect();
    got.sort_unstable();
    expected.sort_unstable();
    assert_eq!(got, expected);
    assert_eq!(counters.read.load(Ordering::Relaxed), 3000);
    assert_eq!(counters.malformed.load(Ordering::Relaxed), malformed);
    assert_eq!(counters.late.load(Ordering::Relaxed), late);
    let ex = counters.examples.lock().unwrap();
    assert!(!ex.is_empty());
    for s in ex.iter() {
        // Record i sits in partition i % 3 at offset i / 3.
        let i = s.offset as u64 * 3 + s.partition as u64;
        assert!(
            (i % 50 == 7 && s.reason.contains(&format!("garbage {i}")))
                || (i % 70 == 3 && s.reason.starts_with("late")),
            "{s:?}"
        );
    }
}

#[test]
fn a_missing_topic_and_an_absent_broker_are_named() {
    let e = admin::partitions(
        &KafkaUri::parse("kafka://127.0.0.1:9/t").unwrap(),
        Duration::from_secs(2),
    )
    .unwrap_err();
    assert!(e.contains("cannot reach Kafka at 127.0.0.1:9"), "{e}");
    let Some(b) = broker() else { return };
    let uri = KafkaUri::parse(&b.uri("nothing-here")).unwrap();
    let e = admin::partitions(&uri, Duration::from_secs(10)).unwrap_err();
    assert!(e.contains("topic 'nothing-here' does not exist"), "{e}");
}

/// Emits 0..n, one per time unit, 50 per poll, a poll every 20 ms.
struct Count {
    next: u64,
    n: u64,
}

impl Source<u64> for Count {
    fn poll(&mut self, out: &mut SourceOutput<'_, u64>) -> SourcePoll {
        let end = (self.next + 50).min(self.n);
        while self.next < end {
            out.emit(self.next, self.next);
            self.next += 1;
        }
        out.heartbeat(self.next);
        if self.next == self.n {
            SourcePoll::Done
        } else {
            // 50 elements every 20 ms: the run lasts at least 2 s of wall time, so several 20 ms
            // checkpoints complete however loaded the machine is (0.5 s saw none in a CI run
            // with a load average of 9 on 2 cores).
            SourcePoll::WaitUntil(out.now_ns() + 20_000_000)
        }
    }
}

#[test]
fn the_sink_commits_per_checkpoint_and_read_committed_sees_each_result_once() {
    let Some(b) = broker() else { return };
    let uri = KafkaUri::parse(&b.uri("out")).unwrap();
    admin::create_topic(&uri, 2, &[]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let df = Dataflow::new(RuntimeConfig {
        workers: 2,
        checkpoint_interval: Some(Duration::from_millis(20)),
        checkpoint_dir: Some(dir.path().join("ck")),
        ..RuntimeConfig::default()
    })
    .unwrap();
    let u2 = uri.clone();
    df.source("count", 1, |_| Count { next: 0, n: 5000 })
        .gather()
        .sink("kafka", move |i| KafkaSink::new(u2.clone(), i, Text));
    let report = df.run().unwrap();
    let ck = report.checkpoints.expect("checkpoints");
    assert!(ck.completed >= 2, "only {} checkpoints", ck.completed);
    let mut got = read_committed(&uri);
    got.sort_unstable();
    let mut want: Vec<String> = (0..5000).map(|i| format!("{i},{i}")).collect();
    want.sort_unstable();
    assert_eq!(got, want);
    let markers = read_committed(&uri.with_topic(&xorflow_kafka::sink::control_topic("out")));
    assert!(
        markers.iter().any(|m| m.starts_with("checkpoint ")) && markers[0] == "reset",
        "{markers:?}"
    );
}

#[test]
fn a_killed_producers_transaction_is_fenced_and_its_commit_marker_survives() {
    let Some(b) = broker() else { return };
    let uri = KafkaUri::parse(&b.uri("fenced")).unwrap();
    admin::create_topic(&uri, 1, &[]).unwrap();
    let batch = |from: u64| {
        (from..from + 10)
            .map(|i| Element::new(i, i))
            .collect::<Vec<_>>()
    };
    let mut s = KafkaSink::new(uri.clone(), 0, Text);
    s.open(true).unwrap();
    s.fresh_start().unwrap();
    s.write(batch(0)).unwrap();
    s.commit(5).unwrap();
    // Written, not committed: the process "dies" with its transaction open.
    s.write(batch(100)).unwrap();
    std::mem::forget(s);
    let mut again = KafkaSink::<u64, Text>::new(uri.clone(), 0, Text);
    again.open(true).unwrap();
    again.rollback(Some(3)).unwrap();
    assert_eq!(again.durable_commit().unwrap(), Some(5));
    let got = read_committed(&uri);
    let want: Vec<String> = (0..10).map(|i| format!("{i},{i}")).collect();
    assert_eq!(got, want, "only the committed batch is visible");
    // Another instance id has committed nothing.
    let mut other = KafkaSink::<u64, Text>::new(uri, 1, Text);
    other.open(true).unwrap();
    assert_eq!(other.durable_commit().unwrap(), None);
}

/// A run restored from a snapshot taken before the sink's first commit (checkpoint 1's: the
/// sink had committed nothing then) rolls back to "nothing", but the commit of checkpoint 1 made
/// after that snapshot, before the kill, is in the output: the restored sink must still see it
/// as its last commit, or checkpoint 1's output is written twice (2 duplicate rows in
/// `crates/cli/tests/kafka/flights.rs`, CI, when a rollback to nothing wrote a `reset` marker).
/// A fresh start of the same id, by contrast, forgets it.
#[test]
fn a_rollback_to_nothing_keeps_a_commit_that_raced_with_the_kill() {
    let Some(b) = broker() else { return };
    let uri = KafkaUri::parse(&b.uri("raced-first")).unwrap();
    admin::create_topic(&uri, 1, &[]).unwrap();
    let batch: Vec<_> = (0..10u64).map(|i| Element::new(i, i)).collect();
    let mut s = KafkaSink::new(uri.clone(), 0, Text);
    s.open(true).unwrap();
    s.fresh_start().unwrap();
    s.write(batch).unwrap();
    s.commit(1).unwrap();
    std::mem::forget(s);
    let mut again = KafkaSink::<u64, Text>::new(uri.clone(), 0, Text);
    again.open(true).unwrap();
    again.rollback(None).unwrap();
    assert_eq!(again.durable_commit().unwrap(), Some(1));
    again.fresh_start().unwrap();
    assert_eq!(again.durable_commit().unwrap(), None);
}

/// A killed instance's transaction left open on the control topic (its marker written, its
/// commit not reached) must not hide another instance's later commits: a `read_committed` read
/// stops at the first open transaction of a partition, so with one partition for all, a
/// surviving instance restoring before the zombie was fenced read an older checkpoint as its
/// last commit and wrote a committed checkpoint again (duplicates in
/// `crates/cli/tests/kafka/flights.rs` after kill -9 under load).
#[test]
fn another_instances_open_transaction_does_not_hide_a_commit() {
    use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
    let Some(b) = broker() else { return };
    let uri = KafkaUri::parse(&b.uri("interleaved")).unwrap();
    admin::create_topic(&uri, 1, &[]).unwrap();
    let batch = |from: u64| {
        (from..from + 10)
            .map(|i| Element::new(i, i))
            .collect::<Vec<_>>()
    };
    let mut s0 = KafkaSink::new(uri.clone(), 0, Text);
    s0.open(true).unwrap();
    s0.fresh_start().unwrap();
    s0.write(batch(0)).unwrap();
    s0.commit(1).unwrap();
    let mut s1 = KafkaSink::<u64, Text>::new(uri.clone(), 1, Text);
    s1.open(true).unwrap();
    s1.fresh_start().unwrap();
    // Instance 1 dies between writing its commit marker and committing: a producer with its
    // transactional id (fencing `s1`) leaves a transaction open where instance 1 writes markers.
    let control = xorflow_kafka::sink::control_topic("interleaved");
    let zombie: BaseProducer =
        xorflow_kafka::settings::transactional_producer(&uri, "zombie", "xorflow-interleaved-1")
            .create()
            .unwrap();
    zombie.init_transactions(Duration::from_secs(30)).unwrap();
    zombie.begin_transaction().unwrap();
    let record = BaseRecord::to(&control)
        .partition(xorflow_kafka::sink::control_partition(1))
        .key("xorflow-interleaved-1")
        .payload("checkpoint 2");
    zombie.send(record).map_err(|(e, _)| e).unwrap();
    zombie.flush(Duration::from_secs(30)).unwrap();
    // Instance 0 commits checkpoint 2 after that, then is restarted from checkpoint 1's snapshot.
    s0.write(batch(10)).unwrap();
    s0.commit(2).unwrap();
    let mut again = KafkaSink::<u64, Text>::new(uri.clone(), 0, Text);
    again.open(true).unwrap();
    again.rollback(Some(1)).unwrap();
    assert_eq!(
        again.durable_commit().unwrap(),
        Some(2),
        "instance 0 committed checkpoint 2"
    );
    std::mem::forget(zombie);
}

/// Counts a window's elements.
struct CountAgg;

impl xorflow_runtime::Aggregate<u64> for CountAgg {
    type Acc = u64;
    type Out = u64;
    fn init(&self) -> u64 {
        0
    }
    fn add(&self, acc: &mut u64, _: &u64) {
        *acc += 1;
    }
    fn finish(&self, acc: u64) -> u64 {
        acc
    }
}

/// Starts a job that follows `uri` (never ends: its thread is left behind when the test ends)
/// with one instance over both partitions, 100 s windows, and returns its results.
fn follow(
    uri: &KafkaUri,
    idle: Duration,
) -> xorflow_runtime::SharedVec<xorflow_runtime::WindowResult<u8, u64>> {
    let cfg = Arc::new(SourceConfig {
        uri: uri.clone(),
        partitions: 2,
        instances: 1,
        watermark: Watermark::RecordTimestamp {
            ms_per_unit: 1000,
            lateness: 0,
        },
        idle_timeout: idle,
        bounded: false,
        speed: None,
    });
    let out = VecSink::shared();
    let fact = out.factory();
    std::thread::spawn(move || {
        let df = Dataflow::new(RuntimeConfig::default()).unwrap();
        let c = Arc::new(SourceCounters::default());
        df.source("kafka", 1, move |k| {
            KafkaSource::new(cfg.clone(), k, Text, c.clone())
        })
        .tumbling_window("w", 100, |_: &u64| 0u8, CountAgg)
        .sink("out", fact);
        let _ = df.run();
    });
    out
}

#[test]
fn an_idle_partition_stops_holding_the_windows_back_after_the_idleness_timeout() {
    let Some(b) = broker() else { return };
    let uri = KafkaUri::parse(&b.uri("idle")).unwrap();
    admin::create_topic(&uri, 2, &[("retention.ms", "-1")]).unwrap();
    // Partition 0: times 1000..2000 s, stamped with their time; partition 1 stays empty.
    let mut loader = Loader::new(&uri).unwrap();
    for t in 1000..2000u64 {
        loader
            .send(0, (t * 1000) as i64, None, format!("{t},{t}").as_bytes())
            .unwrap();
    }
    loader.finish().unwrap();
    // No idleness (an hour): the empty partition's progress (0) holds every window open.
    let held = follow(&uri, Duration::from_secs(3600));
    let idle = follow(&uri, Duration::from_millis(300));
    let t0 = Instant::now();
    let want: Vec<(u64, u64)> = (10..19).map(|w| (w * 100, 100)).collect();
    let mut got = Vec::new();
    loop {
        got.extend(idle.take().iter().map(|e| (e.data.start, e.data.value)));
        got.sort_unstable();
        // Windows up to [1800, 1900) close once the idle partition leaves the minimum: the
        // heartbeat is then 1999, and [1900, 2000) stays open until it passes 2000.
        if got == want {
            break;
        }
        assert!(got.len() <= want.len(), "{got:?}");
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "idle windows never closed: {got:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        held.take().is_empty(),
        "windows closed while an empty partition held them"
    );
}
