//! The Kafka source: a topic's partitions spread over the source instances, positions in
//! xorflow's checkpoints.
//!
//! * **Partitions.** Instance `k` of `n` reads partitions `p` with `p % n == k` through its own
//!   consumer (`assign`, no consumer group: nothing rebalances under a running job).
//! * **Positions.** [`Source::position`] is each partition's next offset, recorded in every
//!   checkpoint (`operators/source.rs`); a restore seeks there. Nothing is committed to Kafka.
//! * **Time.** The [`Decoder`] gives each record's event time. Each partition's *progress* is a
//!   lower bound on the event times still to come from it ([`Watermark`]): the record timestamp or
//!   the largest event time seen, minus the allowed lateness (Flink's bounded out-of-orderness,
//!   per partition). The instance's heartbeat is the minimum over its partitions, so one slow
//!   partition holds the windows back, as Flink's per-partition watermarks do.
//! * **Idleness.** A partition without records for [`SourceConfig::idle_timeout`] leaves the
//!   minimum until it has records again (Flink's `withIdleness`); what it then brings below the
//!   heartbeat is late.
//! * **Bad records.** Late and malformed records are counted, the first ones reported with
//!   topic/partition/offset ([`SourceCounters`]), and skipped.
//! * **End.** Bounded (`SourceConfig::bounded`): a partition ends at its end (the first time the
//!   consumer reaches it), the instance when all its partitions have. Otherwise it never ends.

use crate::context::Quiet;
use crate::settings::{self, BROKER_TIMEOUT};
use crate::uri::KafkaUri;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::Message;
use rdkafka::{Offset, TopicPartitionList};
use std::collections::HashMap;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use xorflow_runtime::operators::OperatorError;
use xorflow_runtime::{Source, SourceOutput, SourcePoll};
use xorflow_tracking::Time;

/// One record as a [`Decoder`] sees it.
#[derive(Clone, Copy, Debug)]
pub struct RecordView<'a> {
    /// Its partition.
    pub partition: i32,
    /// Its offset in the partition.
    pub offset: i64,
    /// The record's timestamp, ms since the Unix epoch, if it has one.
    pub timestamp_ms: Option<i64>,
    /// Its key, if any.
    pub key: Option<&'a [u8]>,
    /// Its value (empty for a null value).
    pub payload: &'a [u8],
}

/// What a record decodes to.
#[derive(Debug, PartialEq)]
pub enum Decoded<T> {
    /// An element with event time `0` (job units).
    Element(Time, T),
    /// Not data (a header record): skipped without a count.
    Skip,
    /// Not a record of this job: skipped, counted and reported with this reason.
    Malformed(String),
}

/// Turns records into elements (the job's format).
pub trait Decoder<T>: Send {
    /// Decodes `record`.
    fn decode(&mut self, record: &RecordView<'_>) -> Decoded<T>;

    /// What the decoder has learned from the records decoded so far that later records need (a
    /// header's column layout), as text without `|`; stored with the source's offsets in each
    /// checkpoint, so a source resumed past the header still knows it. Empty: nothing.
    fn state(&self) -> String {
        String::new()
    }

    /// Takes back a [`Decoder::state`] when the source resumes from a checkpoint.
    ///
    /// # Errors
    /// `state` is not one this decoder wrote.
    fn restore_state(&mut self, state: &str) -> Result<(), String> {
        if state.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "this decoder keeps no state, the checkpoint has '{state}'"
            ))
        }
    }
}

/// Where a partition's progress (the lower bound on its future event times) comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Watermark {
    /// The record timestamp divided by `ms_per_unit` (1000 for jobs in seconds), minus
    /// `lateness`: for feeds stamped when an event was reported. An element below its own
    /// record's bound is late.
    RecordTimestamp {
        /// Milliseconds per unit of event time.
        ms_per_unit: u64,
        /// Allowed lateness, units of event time.
        lateness: Time,
    },
    /// The largest event time seen so far minus `lateness`.
    EventTime {
        /// Allowed lateness, units of event time.
        lateness: Time,
    },
}

/// What every instance of one source shares.
#[derive(Clone, Debug)]
pub struct SourceConfig {
    /// The topic.
    pub uri: KafkaUri,
    /// The topic's partitions (read once, before the job starts: [`crate::admin::partitions`]).
    pub partitions: usize,
    /// Source instances.
    pub instances: usize,
    /// Progress per partition.
    pub watermark: Watermark,
    /// How long a partition without records may hold the heartbeat back.
    pub idle_timeout: Duration,
    /// End at the end of every partition (false: follow the topic forever).
    pub bounded: bool,
    /// Replay a recorded topic at this speed: each instance emits a record when its timestamp
    /// minus the first record's, divided by the speed, has passed since it emitted the first
    /// (`None`: as fast as records come).
    pub speed: Option<f64>,
}

impl SourceConfig {
    /// The partitions instance `k` reads.
    pub fn partitions_of(&self, k: usize) -> impl Iterator<Item = i32> + '_ {
        (0..self.partitions)
            .filter(move |p| p % self.instances == k)
            .map(|p| p as i32)
    }
}

/// A record the source skipped, for reports (serialized as `{partition, offset, reason}`).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct SkippedRecord {
    /// Its partition.
    pub partition: i32,
    /// Its offset.
    pub offset: i64,
    /// Why it was skipped.
    pub reason: String,
}

/// Most skipped records kept as examples.
pub const SKIPPED_EXAMPLES: usize = 5;

/// Counts over every instance of a source, in this process. A record is counted the first time
/// this process reads it: records read again after a restart from a checkpoint are not counted
/// twice.
#[derive(Debug, Default)]
pub struct SourceCounters {
    /// Records read (those a decoder skips without a count, such as headers, excluded).
    pub read: AtomicU64,
    /// Records that did not decode.
    pub malformed: AtomicU64,
    /// Records behind their partition's progress or the heartbeat.
    pub late: AtomicU64,
    /// The first malformed or late records.
    pub examples: Mutex<Vec<SkippedRecord>>,
    /// Per partition, the offset below which records are counted.
    counted_to: Mutex<HashMap<i32, i64>>,
    /// `read`, `malformed`, `late` as far as instances have reported them into the run's
    /// statistics ([`SourceCounters::take_unreported`]).
    reported: Mutex<[u64; 3]>,
}

/// Source counter (summed over instances and processes in the run report): records read.
pub const RECORDS_READ: &str = "kafka_records_read";
/// Source counter: records that did not decode.
pub const RECORDS_MALFORMED: &str = "kafka_records_malformed";
/// Source counter: records behind their partition's progress or the heartbeat.
pub const RECORDS_LATE: &str = "kafka_records_late";

impl SourceCounters {
    /// The offset below which `partition`'s records were counted by this process.
    fn counted_to(&self, partition: i32) -> i64 {
        let m = self
            .counted_to
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        m.get(&partition).copied().unwrap_or(0)
    }

    /// Records how far the partitions in `parts` were counted (once per poll, not per record:
    /// a restarted attempt in this process starts from there).
    fn publish(&self, parts: &[Partition]) {
        let mut m = self
            .counted_to
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for p in parts {
            let to = m.entry(p.id).or_insert(0);
            *to = (*to).max(p.counted_to);
        }
    }

    /// `[read, malformed, late]` counted since the last call: every instance of the process
    /// reports through one shared set of counters, so each hands the run report only what no
    /// other instance has (and the run report sums them over processes).
    pub fn take_unreported(&self) -> [u64; 3] {
        let mut done = self
            .reported
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let now = [&self.read, &self.malformed, &self.late].map(|c| c.load(Ordering::Relaxed));
        let delta = [0, 1, 2].map(|i| now[i] - done[i]);
        *done = now;
        delta
    }

    fn skipped(&self, counter: &AtomicU64, topic: &str, r: SkippedRecord) {
        counter.fetch_add(1, Ordering::Relaxed);
        tracing::warn!(
            "skipped record {topic}/{}@{}: {}",
            r.partition,
            r.offset,
            r.reason
        );
        let mut ex = self.examples.lock().expect("counters lock");
        if ex.len() < SKIPPED_EXAMPLES {
            ex.push(r);
        }
    }
}

/// A record kept until it is due (pacing).
struct Owned {
    partition: i32,
    offset: i64,
    timestamp_ms: Option<i64>,
    key: Option<Vec<u8>>,
    payload: Vec<u8>,
}

impl Owned {
    fn of(r: &RecordView<'_>) -> Self {
        Owned {
            partition: r.partition,
            offset: r.offset,
            timestamp_ms: r.timestamp_ms,
            key: r.key.map(<[u8]>::to_vec),
            payload: r.payload.to_vec(),
        }
    }

    fn view(&self) -> RecordView<'_> {
        RecordView {
            partition: self.partition,
            offset: self.offset,
            timestamp_ms: self.timestamp_ms,
            key: self.key.as_deref(),
            payload: &self.payload,
        }
    }
}

/// One partition of an instance.
#[derive(Clone, Debug)]
struct Partition {
    id: i32,
    /// The next offset to read (`None`: from the partition's start).
    next: Option<i64>,
    /// Lower bound on its future event times.
    progress: Time,
    /// When it last had a record or reached its end, ns (worker clock).
    last_ns: u64,
    /// Bounded and at its end.
    done: bool,
    /// Records below this offset were counted already ([`SourceCounters`]).
    counted_to: i64,
}

/// A source instance reading its share of a topic's partitions; `T` is the element type and `D`
/// its [`Decoder`].
pub struct KafkaSource<T, D> {
    cfg: Arc<SourceConfig>,
    instance: usize,
    decoder: D,
    consumer: Option<BaseConsumer<Quiet>>,
    parts: Vec<Partition>,
    index: HashMap<i32, usize>,
    /// The last heartbeat sent.
    heartbeat: Time,
    counters: Arc<SourceCounters>,
    /// Since when every call has failed (ns) and the last failure.
    failing: Option<(u64, String)>,
    /// Pacing ([`SourceConfig::speed`]): when the first record was emitted (ns) and its
    /// timestamp (ms).
    pace: Option<(u64, i64)>,
    /// Pacing: a record read before it was due.
    pending: Option<Owned>,
    _t: PhantomData<fn() -> T>,
}

impl<T, D: Decoder<T>> KafkaSource<T, D> {
    /// Instance `instance` of `cfg`'s source, decoding with `decoder`, counting into `counters`.
    /// Connects at its first poll.
    pub fn new(
        cfg: Arc<SourceConfig>,
        instance: usize,
        decoder: D,
        counters: Arc<SourceCounters>,
    ) -> Self {
        let parts: Vec<Partition> = cfg
            .partitions_of(instance)
            .map(|id| Partition {
                id,
                next: None,
                progress: 0,
                last_ns: 0,
                done: false,
                counted_to: 0,
            })
            .collect();
        let index = parts.iter().enumerate().map(|(i, p)| (p.id, i)).collect();
        KafkaSource {
            cfg,
            instance,
            decoder,
            consumer: None,
            parts,
            index,
            heartbeat: 0,
            counters,
            failing: None,
            pace: None,
            pending: None,
            _t: PhantomData,
        }
    }

    /// Creates the consumer and assigns this instance's partitions at their positions.
    fn connect(&mut self, now_ns: u64) -> Result<(), String> {
        let uri = &self.cfg.uri;
        let client = format!("xorflow-source-{}", self.instance);
        let c: BaseConsumer<Quiet> = settings::consumer(uri, &client)
            .create_with_context(Quiet::default())
            .map_err(|e| format!("{uri}: cannot create a consumer: {e}"))?;
        let mut tpl = TopicPartitionList::new();
        for p in &mut self.parts {
            let at = p.next.map_or(Offset::Beginning, Offset::Offset);
            tpl.add_partition_offset(&uri.topic, p.id, at)
                .map_err(|e| format!("{uri}: partition {}: {e}", p.id))?;
            p.last_ns = now_ns;
            p.counted_to = self.counters.counted_to(p.id);
        }
        c.assign(&tpl)
            .map_err(|e| format!("{uri}: cannot assign partitions: {e}"))?;
        self.consumer = Some(c);
        Ok(())
    }

    /// Takes one record: updates its partition, decodes it, emits or skips it.
    fn take(&mut self, r: &RecordView<'_>, now_ns: u64, out: &mut SourceOutput<'_, T>)
    where
        T: Clone + Send,
    {
        let Some(&i) = self.index.get(&r.partition) else {
            return;
        };
        let p = &mut self.parts[i];
        if p.next.is_some_and(|n| r.offset < n) {
            return; // fetched before a seek
        }
        p.next = Some(r.offset + 1);
        p.last_ns = now_ns;
        let first = r.offset >= p.counted_to;
        p.counted_to = p.counted_to.max(r.offset + 1);
        let skip = |c: &SourceCounters, counter: &AtomicU64, reason: String| {
            if first {
                let s = SkippedRecord {
                    partition: r.partition,
                    offset: r.offset,
                    reason,
                };
                c.skipped(counter, &self.cfg.uri.topic, s);
            }
        };
        let decoded = self.decoder.decode(r);
        if first && !matches!(decoded, Decoded::Skip) {
            self.counters.read.fetch_add(1, Ordering::Relaxed);
        }
        let (time, data) = match decoded {
            Decoded::Element(t, d) => (t, d),
            Decoded::Skip => return,
            Decoded::Malformed(why) => {
                return skip(&self.counters, &self.counters.malformed, why);
            }
        };
        let bound = match self.cfg.watermark {
            Watermark::RecordTimestamp {
                ms_per_unit,
                lateness,
            } => match r.timestamp_ms {
                Some(ts) if ts >= 0 => (ts as u64 / ms_per_unit.max(1)).saturating_sub(lateness),
                _ => {
                    let why = "the record has no timestamp".to_string();
                    return skip(&self.counters, &self.counters.malformed, why);
                }
            },
            Watermark::EventTime { lateness } => time.saturating_sub(lateness),
        };
        p.progress = p.progress.max(bound);
        let floor = p.progress.max(self.heartbeat);
        if time < floor {
            let why = format!("late: event time {time} is below the source's progress {floor}");
            return skip(&self.counters, &self.counters.late, why);
        }
        out.emit(time, data);
    }

    /// When record `r` is due (pacing), ns; `None`: now.
    fn due(&mut self, r: &RecordView<'_>, now_ns: u64) -> Option<u64> {
        let speed = self.cfg.speed?;
        let ts = r.timestamp_ms?;
        let (start, ts0) = *self.pace.get_or_insert((now_ns, ts));
        let due = start.saturating_add(((ts - ts0).max(0) as f64 * 1e6 / speed) as u64);
        (due > now_ns).then_some(due)
    }

    /// A failed poll: fatal errors fail the source at once, others once every call has failed
    /// for [`BROKER_TIMEOUT`].
    fn failed(&mut self, e: &KafkaError, now_ns: u64) -> Result<(), String> {
        let uri = &self.cfg.uri;
        let fatal = matches!(
            e.rdkafka_error_code(),
            Some(
                RDKafkaErrorCode::AutoOffsetReset
                    | RDKafkaErrorCode::OffsetOutOfRange
                    | RDKafkaErrorCode::UnknownTopicOrPartition
                    | RDKafkaErrorCode::UnknownTopic
                    | RDKafkaErrorCode::TopicAuthorizationFailed
            )
        ) || matches!(e, KafkaError::MessageConsumptionFatal(_));
        let msg = format!("{uri}: {e}");
        if fatal {
            return Err(format!(
                "{msg} (positions of this source: {})",
                self.positions()
            ));
        }
        let since = self.failing.get_or_insert((now_ns, String::new()));
        since.1 = msg;
        if now_ns.saturating_sub(since.0) > BROKER_TIMEOUT.as_nanos() as u64 {
            return Err(format!(
                "{} for {} s, the last failure: {}",
                "the Kafka source got nothing but failures",
                BROKER_TIMEOUT.as_secs(),
                since.1
            ));
        }
        Ok(())
    }

    /// The heartbeat its partitions allow: the minimum progress over the partitions that are
    /// neither ended nor idle; if all live ones are idle, the largest of theirs.
    fn allowed_heartbeat(&self, now_ns: u64) -> Option<Time> {
        let idle = self.cfg.idle_timeout.as_nanos() as u64;
        let live = self.parts.iter().filter(|p| !p.done);
        let active = live
            .clone()
            .filter(|p| now_ns.saturating_sub(p.last_ns) < idle)
            .map(|p| p.progress)
            .min();
        active.or_else(|| live.map(|p| p.progress).max())
    }

    /// Takes what the consumer has buffered, up to the poll's budget. Returns when a paced
    /// replay's next record is due (`Some(ns)`), or `None`.
    fn read(&mut self, out: &mut SourceOutput<'_, T>, now: u64) -> Result<Option<u64>, String>
    where
        T: Clone + Send,
    {
        if let Some(r) = self.pending.take() {
            if let Some(due) = self.due(&r.view(), now) {
                self.pending = Some(r);
                return Ok(Some(due));
            }
            self.take(&r.view(), now, out);
        }
        let consumer = self.consumer.take().expect("connected");
        let res = self.drain(&consumer, out, now);
        self.consumer = Some(consumer);
        self.counters.publish(&self.parts);
        res
    }

    fn drain(
        &mut self,
        consumer: &BaseConsumer<Quiet>,
        out: &mut SourceOutput<'_, T>,
        now: u64,
    ) -> Result<Option<u64>, String>
    where
        T: Clone + Send,
    {
        while out.emitted() < out.budget() && self.parts.iter().any(|p| !p.done) {
            match consumer.poll(Duration::ZERO) {
                None => break,
                Some(Ok(m)) => {
                    let r = RecordView {
                        partition: m.partition(),
                        offset: m.offset(),
                        timestamp_ms: m.timestamp().to_millis(),
                        key: m.key(),
                        payload: m.payload().unwrap_or_default(),
                    };
                    self.failing = None;
                    if let Some(due) = self.due(&r, now) {
                        self.pending = Some(Owned::of(&r));
                        return Ok(Some(due));
                    }
                    self.take(&r, now, out);
                }
                Some(Err(KafkaError::PartitionEOF(p))) => {
                    self.failing = None;
                    if let Some(&i) = self.index.get(&p) {
                        self.parts[i].last_ns = now;
                        self.parts[i].done |= self.cfg.bounded;
                    }
                }
                Some(Err(e)) => self.failed(&e, now)?,
            }
        }
        Ok(None)
    }

    fn positions(&self) -> String {
        let mut s = String::new();
        for p in &self.parts {
            if !s.is_empty() {
                s.push(',');
            }
            match p.next {
                Some(n) => s.push_str(&format!("{}:{n}", p.id)),
                None => s.push_str(&format!("{}:start", p.id)),
            }
        }
        let state = self.decoder.state();
        if !state.is_empty() {
            s.push('|');
            s.push_str(&state);
        }
        s
    }
}

impl<T: Clone + Send, D: Decoder<T>> Source<T> for KafkaSource<T, D> {
    fn poll(&mut self, out: &mut SourceOutput<'_, T>) -> SourcePoll {
        let now = out.now_ns();
        let read = match self.consumer {
            None => self.connect(now).and_then(|()| self.read(out, now)),
            Some(_) => self.read(out, now),
        };
        let wait = match read {
            Ok(w) => w,
            Err(e) => {
                out.fail(e);
                return SourcePoll::Done;
            }
        };
        if self.parts.iter().all(|p| p.done) {
            return SourcePoll::Done;
        }
        if let Some(h) = self.allowed_heartbeat(now).filter(|&h| h > self.heartbeat) {
            self.heartbeat = h;
            out.heartbeat(h);
        }
        match wait {
            Some(due) => SourcePoll::WaitUntil(due),
            None if out.emitted() >= out.budget() => SourcePoll::Ready,
            // Nothing buffered: look again in a millisecond (librdkafka fetches in the
            // background; a millisecond bounds what this adds to latency).
            None => SourcePoll::WaitUntil(now + 1_000_000),
        }
    }

    /// Adds what this process's instances counted and no instance reported yet, as
    /// [`RECORDS_READ`], [`RECORDS_MALFORMED`] and [`RECORDS_LATE`]: summed over processes, the
    /// run report holds the whole input's counts.
    fn report(&mut self, stats: &mut xorflow_runtime::VertexStats) {
        let [read, malformed, late] = self.counters.take_unreported();
        stats.count(RECORDS_READ, read);
        stats.count(RECORDS_MALFORMED, malformed);
        stats.count(RECORDS_LATE, late);
    }

    /// `partition:next_offset,...` (`partition:start` for a partition not read yet), then
    /// `|` and the decoder's [`Decoder::state`] if it has one.
    fn position(&self) -> Option<String> {
        Some(self.positions())
    }

    /// Takes the offsets of a [`Source::position`]; partitions it does not name (added to the
    /// topic since) start from their beginning.
    fn seek(&mut self, position: &str) -> Result<(), OperatorError> {
        let (offsets, state) = position.split_once('|').unwrap_or((position, ""));
        self.decoder
            .restore_state(state)
            .map_err(|e| format!("the checkpoint's decoder state: {e}"))?;
        for item in offsets.split(',').filter(|s| !s.is_empty()) {
            let bad = || format!("position '{item}' is not PARTITION:OFFSET");
            let (p, o) = item.split_once(':').ok_or_else(bad)?;
            let p: i32 = p.parse().map_err(|_| bad())?;
            let next = match o {
                "start" => None,
                o => Some(o.parse::<i64>().ok().filter(|&o| o >= 0).ok_or_else(bad)?),
            };
            let i = *self.index.get(&p).ok_or_else(|| {
                format!(
                    "the checkpoint has partition {p}, which is not this instance's ({} of {} \
                     over {} partitions): was the topic or --sources changed?",
                    self.instance, self.cfg.instances, self.cfg.partitions
                )
            })?;
            self.parts[i].next = next;
        }
        // A resumed replay paces from its own first record.
        (self.pace, self.pending) = (None, None);
        if self.consumer.is_some() {
            return Err("seek after the source started".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_reported_once_whichever_instance_reports() {
        let c = SourceCounters::default();
        c.read.fetch_add(10, Ordering::Relaxed);
        c.malformed.fetch_add(2, Ordering::Relaxed);
        assert_eq!(c.take_unreported(), [10, 2, 0]);
        // A second instance of the process reports nothing twice.
        assert_eq!(c.take_unreported(), [0, 0, 0]);
        c.read.fetch_add(5, Ordering::Relaxed);
        c.late.fetch_add(1, Ordering::Relaxed);
        assert_eq!(c.take_unreported(), [5, 0, 1]);
    }
    use xorflow_runtime::Source;

    /// A decoder whose state is the text of the last header record.
    #[derive(Default)]
    struct Headers(String);

    impl Decoder<u64> for Headers {
        fn decode(&mut self, _: &RecordView<'_>) -> Decoded<u64> {
            Decoded::Skip
        }
        fn state(&self) -> String {
            self.0.clone()
        }
        fn restore_state(&mut self, state: &str) -> Result<(), String> {
            self.0 = state.to_string();
            Ok(())
        }
    }

    fn source<D: Decoder<u64>>(decoder: D) -> KafkaSource<u64, D> {
        let cfg = SourceConfig {
            uri: KafkaUri::parse("kafka://127.0.0.1:1/t").unwrap(),
            partitions: 4,
            instances: 2,
            watermark: Watermark::EventTime { lateness: 0 },
            idle_timeout: Duration::from_secs(1),
            bounded: true,
            speed: None,
        };
        KafkaSource::new(Arc::new(cfg), 1, decoder, Arc::default())
    }

    /// A position carries the decoder's state after the offsets; a seek gives both back, and
    /// a decoder without state refuses a position that has some.
    #[test]
    fn the_position_carries_the_decoders_state_through_a_seek() {
        let mut a = source(Headers::default());
        a.seek("1:17,3:start").unwrap();
        a.decoder.0 = "a,b,c".into();
        assert_eq!(a.position().unwrap(), "1:17,3:start|a,b,c");
        let mut b = source(Headers::default());
        b.seek(&a.position().unwrap()).unwrap();
        assert_eq!(b.position(), a.position());
        assert_eq!(b.decoder.0, "a,b,c");
        // Without a state: the offsets only, as before.
        let mut c = source(Headers::default());
        c.seek("1:5,3:6").unwrap();
        assert_eq!(c.position().unwrap(), "1:5,3:6");
        struct Plain;
        impl Decoder<u64> for Plain {
            fn decode(&mut self, _: &RecordView<'_>) -> Decoded<u64> {
                Decoded::Skip
            }
        }
        let e = source(Plain).seek("1:5|x").unwrap_err();
        assert!(e.to_string().contains("decoder state"), "{e}");
        assert!(source(Plain)
            .seek("2:5")
            .unwrap_err()
            .to_string()
            .contains("partition 2"));
    }
}
