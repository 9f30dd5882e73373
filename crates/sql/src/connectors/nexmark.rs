//! `'connector' = 'nexmark'`: one kind of Nexmark event (the table's name, or its
//! `'event-type'` option: person, auction or bid) generated in the source itself
//! (`crates/nexmark`), with Flink's Nexmark options (`events.num`, `first-event.rate`, ...).
//! Instance `i` of `n` generates event numbers `i, i + n, ...`, paced (as Flink's Nexmark
//! source) to `first-event.rate` events per second over all instances; its position in
//! checkpoints is its next event number.

use crate::catalog::Table;
use crate::schema::Schema;
use crate::types::{Row, Value};
use xorflow_nexmark::{
    bid_numbers, event_fields, kind_of, BidNumbers, Event, EventKind, Fields, NexmarkConfig,
};
use xorflow_runtime::operators::OperatorError;
use xorflow_runtime::{Source, SourceOutput, SourcePoll, Time};

/// What a nexmark table generates.
#[derive(Clone, Debug)]
pub struct NexmarkTable {
    /// The generator's configuration.
    pub config: NexmarkConfig,
    /// The kind of event the table holds.
    pub kind: EventKind,
    /// For each column, the event field it reads.
    fields: Vec<usize>,
    /// For each column, whether the job reads it (the others are NULL).
    keep: Vec<bool>,
    /// The watermark's delay, ms.
    delay_ms: i64,
}

const PERSON: [&str; 8] = [
    "id",
    "name",
    "emailAddress",
    "creditCard",
    "city",
    "state",
    "dateTime",
    "extra",
];
const AUCTION: [&str; 10] = [
    "id",
    "itemName",
    "description",
    "initialBid",
    "reserve",
    "dateTime",
    "expires",
    "seller",
    "category",
    "extra",
];
const BID: [&str; 7] = [
    "auction", "bidder", "price", "channel", "url", "dateTime", "extra",
];

impl NexmarkTable {
    /// The generator a table declares.
    ///
    /// # Errors
    /// An unknown event type, option or column.
    pub fn of(table: &Table) -> Result<NexmarkTable, String> {
        let name = |e: String| format!("table '{}': {e}", table.name);
        let kind_name = table
            .option("event-type")
            .unwrap_or(&table.name)
            .to_ascii_lowercase();
        let kind = match kind_name.as_str() {
            "person" => EventKind::Person,
            "auction" => EventKind::Auction,
            "bid" => EventKind::Bid,
            other => {
                return Err(name(format!(
                    "the nexmark connector generates person, auction or bid events: name the \
                     table so or set 'event-type' (not '{other}')"
                )))
            }
        };
        let options: Vec<(&str, &str)> = (table.options.iter())
            .filter(|(k, _)| !matches!(k.as_str(), "connector" | "event-type"))
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        let config = NexmarkConfig::from_options(options).map_err(|e| name(e.to_string()))?;
        let fields = columns(&table.schema, kind).map_err(name)?;
        Ok(NexmarkTable {
            config,
            kind,
            keep: vec![true; fields.len()],
            fields,
            delay_ms: table.rowtime.map_or(0, |r| r.delay_ms),
        })
    }

    /// Instance `instance` of `instances`.
    pub fn source(&self, instance: usize, instances: usize) -> NexmarkSource {
        NexmarkSource {
            table: self.clone(),
            next: instance as u64,
            step: instances.max(1) as u64,
            newest: 0,
            started: None,
        }
    }

    /// The same table with only the columns `keep` says made (the others NULL: column pruning,
    /// `Plan::needed_columns`).
    pub fn keeping(mut self, keep: Vec<bool>) -> Self {
        self.keep = keep;
        self
    }

    /// Whether the job reads only a bid's numbers (auction, bidder, price, dateTime), so its
    /// strings need not be generated ([`bid_numbers`]).
    fn numbers_only(&self) -> bool {
        self.kind == EventKind::Bid
            && (self.fields.iter().zip(&self.keep)).all(|(&f, &k)| !k || matches!(f, 0..=2 | 5))
    }

    /// The row of bid `b` when [`NexmarkTable::numbers_only`].
    fn bid_row(&self, b: &BidNumbers) -> Row {
        (self.fields.iter().zip(&self.keep))
            .map(|(&f, &k)| match (k, f) {
                (false, _) => Value::Null,
                (true, 0) => Value::Int(b.auction),
                (true, 1) => Value::Int(b.bidder),
                (true, 2) => Value::Int(b.price),
                (true, _) => Value::Timestamp(b.date_time_ms),
            })
            .collect()
    }

    /// The event fields the job reads: the generator makes only these ([`event_fields`]).
    fn fields_read(&self) -> Fields {
        let read = (self.fields.iter().zip(&self.keep)).filter(|(_, &k)| k);
        Fields(read.fold(0, |m, (&f, _)| m | 1 << f))
    }

    fn row(&self, e: &Event) -> Row {
        (self.fields.iter().zip(&self.keep))
            .map(|(&f, &k)| if k { field(e, f) } else { Value::Null })
            .collect()
    }
}

/// Field `f` of `e` (in the order of [`PERSON`], [`AUCTION`], [`BID`]).
fn field(e: &Event, f: usize) -> Value {
    match (e, f) {
        (Event::Person(p), 0) => Value::Int(p.id),
        (Event::Person(p), 1) => Value::str(&p.name),
        (Event::Person(p), 2) => Value::str(&p.email_address),
        (Event::Person(p), 3) => Value::str(&p.credit_card),
        (Event::Person(p), 4) => Value::str(&p.city),
        (Event::Person(p), 5) => Value::str(&p.state),
        (Event::Person(p), 6) => Value::Timestamp(p.date_time_ms),
        (Event::Person(p), _) => Value::str(&p.extra),
        (Event::Auction(a), 0) => Value::Int(a.id),
        (Event::Auction(a), 1) => Value::str(&a.item_name),
        (Event::Auction(a), 2) => Value::str(&a.description),
        (Event::Auction(a), 3) => Value::Int(a.initial_bid),
        (Event::Auction(a), 4) => Value::Int(a.reserve),
        (Event::Auction(a), 5) => Value::Timestamp(a.date_time_ms),
        (Event::Auction(a), 6) => Value::Timestamp(a.expires_ms),
        (Event::Auction(a), 7) => Value::Int(a.seller),
        (Event::Auction(a), 8) => Value::Int(a.category),
        (Event::Auction(a), _) => Value::str(&a.extra),
        (Event::Bid(b), 0) => Value::Int(b.auction),
        (Event::Bid(b), 1) => Value::Int(b.bidder),
        (Event::Bid(b), 2) => Value::Int(b.price),
        (Event::Bid(b), 3) => Value::str(&b.channel),
        (Event::Bid(b), 4) => Value::str(&b.url),
        (Event::Bid(b), 5) => Value::Timestamp(b.date_time_ms),
        (Event::Bid(b), _) => Value::str(&b.extra),
    }
}

/// The event field each column reads (by name, ignoring case).
fn columns(schema: &Schema, kind: EventKind) -> Result<Vec<usize>, String> {
    let names: &[&str] = match kind {
        EventKind::Person => &PERSON,
        EventKind::Auction => &AUCTION,
        EventKind::Bid => &BID,
    };
    (schema.fields.iter())
        .map(|f| {
            names
                .iter()
                .position(|n| n.eq_ignore_ascii_case(&f.name))
                .ok_or_else(|| {
                    format!(
                        "column '{}' is not a field of a {} event ({})",
                        f.name,
                        kind.name(),
                        names.join(", ")
                    )
                })
        })
        .collect()
}

/// One instance of a nexmark table's source.
pub struct NexmarkSource {
    table: NexmarkTable,
    next: u64,
    step: u64,
    newest: i64,
    /// When pacing started (ns) and the event number it started at.
    started: Option<(u64, u64)>,
}

impl NexmarkSource {
    /// How many event numbers (of all kinds, every instance's) the pace allows up to now: the
    /// first not yet due, or `Err(when)` it is due (ns).
    fn due(&mut self, now: u64) -> Result<u64, u64> {
        let rate = self.table.config.first_event_rate.max(1) as f64;
        let (t0, n0) = *self.started.get_or_insert((now, self.next));
        let due = n0 + ((now - t0) as f64 * rate / 1e9) as u64 + self.step;
        match self.next < due {
            true => Ok(due),
            false => Err(t0 + ((self.next - n0) as f64 * 1e9 / rate) as u64),
        }
    }
}

impl Source<Row> for NexmarkSource {
    fn poll(&mut self, out: &mut SourceOutput<'_, Row>) -> SourcePoll {
        let due = match self.due(out.now_ns()) {
            Ok(d) => d,
            Err(at) => return SourcePoll::WaitUntil(at),
        };
        let c = &self.table.config;
        let numbers_only = self.table.numbers_only();
        let fields = self.table.fields_read();
        let mut emitted = 0;
        while emitted < out.budget() && self.next < due {
            if c.events > 0 && self.next >= c.events {
                return SourcePoll::Done;
            }
            let n = self.next;
            self.next += self.step;
            if kind_of(c, n) != self.table.kind {
                continue;
            }
            let (t, row) = match numbers_only {
                true => {
                    let b = bid_numbers(c, n);
                    (b.date_time_ms, self.table.bid_row(&b))
                }
                false => {
                    let e = event_fields(c, n, fields);
                    (e.date_time_ms(), self.table.row(&e))
                }
            };
            self.newest = self.newest.max(t);
            out.emit(t.max(0) as Time, row);
            emitted += 1;
        }
        let wm = (self.newest - self.table.delay_ms).max(0);
        out.heartbeat(wm as Time);
        SourcePoll::Ready
    }

    fn position(&self) -> Option<String> {
        Some(self.next.to_string())
    }

    fn seek(&mut self, position: &str) -> Result<(), OperatorError> {
        let n: u64 = position
            .parse()
            .map_err(|_| format!("position '{position}' is not an event number"))?;
        if n % self.step != self.next % self.step {
            return Err(format!("position {n} is not of this instance").into());
        }
        self.next = n;
        self.started = None;
        self.newest = self.table.config.timestamp_ms(n.saturating_sub(self.step));
        Ok(())
    }
}
