//! # xorflow-nexmark: a deterministic Nexmark event generator
//!
//! The people, auctions and bids of the Nexmark benchmark, generated as Flink's Nexmark
//! benchmark generates them (github.com/nexmark/nexmark, `nexmark-flink`: `NexmarkGenerator`,
//! `GeneratorConfig`, `NexmarkConfiguration`, `model/*Generator.java`), written anew in Rust
//! and made reproducible. A pure generator: no dependency on the xorflow runtime.
//!
//! ```
//! use xorflow_nexmark::{event, write_json_line, Event, Generator, NexmarkConfig};
//! let config = NexmarkConfig::from_options([("events.num", "100"), ("seed", "7")]).unwrap();
//! let mut out = Vec::new();
//! for (_n, e) in Generator::new(config.clone()).with_slice(1, 4) {
//!     write_json_line(&e, &mut out).unwrap();
//! }
//! assert!(matches!(event(&config, 0), Event::Person(p) if p.id == 1000));
//! ```
//!
//! ## What an event is made of
//!
//! Events are numbered from 0. Event `n`'s kind, ids and timestamp follow from `n` alone, as in
//! the specification:
//!
//! - **Kinds.** Each cycle of `person.proportion + auction.proportion + bid.proportion` events
//!   (1 + 3 + 46 = 50 by default) is that many people, then auctions, then bids: events 0, 50,
//!   100, ... are people, 1-3, 51-53, ... auctions, the rest bids ([`kind_of`]).
//! - **Ids.** The k-th person (0-based) has id [`FIRST_PERSON_ID`] + k (1000, 1001, ...), the
//!   k-th auction [`FIRST_AUCTION_ID`] + k; categories are [`FIRST_CATEGORY_ID`] (10) to 14.
//! - **References.** An auction's seller is, with probability `1 - 1/hot-ratio.sellers`, the
//!   hot seller (the first id of the batch of [`HOT_BATCH`] person ids holding the newest
//!   person), otherwise one of the `num_active_people` newest people. A bid's auction is, with
//!   probability `1 - 1/hot-ratio.auctions`, the hot auction (first id of the newest auction's
//!   batch of 100), otherwise one of the `num_in_flight_auctions` auctions before the newest; its
//!   bidder, with probability `1 - 1/hot-ratio.bidders`, the hot bidder (the *second* id of the
//!   newest person's batch), otherwise an active person. As in the specification, a random
//!   choice may also be up to [`PERSON_ID_LEAD`] (10) person ids or [`AUCTION_ID_LEAD`] (10)
//!   auction ids *ahead* of the newest one (and the hot bidder one ahead), so some bids and
//!   auctions name a person or auction whose own event comes a little later, or, at the end of
//!   a bounded stream, never. The guarantee is exactly: every id an event names is at least the
//!   first id and at most the newest id at that event plus 10.
//! - **Timestamps.** Event `n` happens at `base-time + floor(n * 1000 / first-event.rate)` ms:
//!   10 events per ms by default. An auction `expires` `1 + uniform[0, 2h)` ms after it opens,
//!   where `h` is the event time the next `num_in_flight_auctions` auctions take (100 auctions,
//!   1,666 events, 166 ms by default).
//! - **Values.** Prices (cents) are `round(10^(6u) * 100)`, log-uniform from $1 to $1,000,000;
//!   `reserve` is `initialBid` plus another price. Names, emails, credit cards, cities and states
//!   come from the specification's lists and random strings; a bid's channel is one of four hot
//!   channels (Google, Facebook, Baidu, Apple) with probability 1/2, otherwise `channel-N`
//!   (N < 10,000), each channel with its own url. `extra` pads each event to the configured
//!   average *idealized* size (8 bytes per number plus the strings' lengths: 200 bytes per
//!   person, 500 per auction, 100 per bid by default), its length uniform within ±20% of the
//!   gap.
//!
//! ## Determinism
//!
//! The random fields of event `n` come from an RNG (`rand`'s `SmallRng`) seeded with a hash of
//! `(seed, n)` and of nothing else; the url of a channel from one seeded with
//! `(seed, channel)`. So the same seed, base time and configuration give the same events, byte
//! for byte, and any set of event numbers can be generated independently: [`event`] makes one,
//! and [`Generator::with_slice`] makes slice `i` of `n` (event numbers `i, i + n, ...`), which
//! parallel source instances use to generate, together, exactly the sequential stream. (The
//! byte-identity holds for one build of this crate on 64-bit targets: `SmallRng` is another
//! algorithm on 32-bit targets, and a new `rand` may change how numbers are drawn; a test pins
//! the output of seed 0.)
//!
//! ## Where it differs from Flink's generator
//!
//! - Flink draws every event from one unseeded `SplittableRandom`, so no two runs are alike;
//!   its url tables and the pool `extra` is cut from are unseeded too. Here they are seeded as
//!   above (the 1 MiB pool of letters from a fixed seed).
//! - Flink's table source takes the wall clock as its base time; here it is
//!   [`DEFAULT_BASE_TIME_MS`], 2015-07-15T00:00:00Z, unless `base-time` says otherwise.
//! - Flink's table source starts at event id 2 (its `firstEventId` and `firstEventNumber` are
//!   1), so its first event is an auction and ids start at 1001; here event `n` is event id `n`,
//!   and the first person and auction are 1000.
//! - Flink splits a parallel source into blocks of consecutive event ids, each on its own
//!   timeline; here slices interleave on one timeline, so the union of the slices is the
//!   sequential stream.
//! - Flink's `BidGenerator` adds `FIRST_PERSON_ID` to the bidder twice (bidders from 2000); here
//!   once, so bidders are person ids, as sellers are.
//! - Not implemented: the rate shape (`next-event.rate` is accepted and, as in Flink's
//!   generator, has no effect), out-of-order groups (Flink's default, 1, has none), wall-clock
//!   pacing (events are generated as fast as asked for, as Flink's default `max-emit-speed`).
//!
//! ## Configuration
//!
//! [`NexmarkConfig::default`] is Flink Nexmark's default configuration: rate 10,000 events/s,
//! proportions 1:3:46, sizes 200/500/100 bytes, hot ratios 2 (auctions), 4 (bidders), 4
//! (sellers), 1,000 active people, 100 in-flight auctions, unbounded; plus seed 0 and base time
//! [`DEFAULT_BASE_TIME_MS`]. [`NexmarkConfig::from_options`] reads Flink's connector options
//! ([`OPTIONS`]: `events.num`, `first-event.rate`, `person.proportion`, `bid.avg-size`,
//! `bid.hot-ratio.auctions`, ...) and this crate's `seed` and `base-time`.
//!
//! ## JSON
//!
//! [`write_json_line`] writes one event as one line of JSON with the Nexmark DDL's field names
//! and order, numbers as JSON numbers and timestamps (`dateTime`, `expires`) as Flink SQL's
//! JSON format writes a `TIMESTAMP(3)`, `yyyy-MM-dd HH:mm:ss.SSS` in UTC
//! ([`format_timestamp_ms`]):
//!
//! ```text
//! {"id":1000,"name":"Kate Smith","emailAddress":"...","creditCard":"...","city":"Boise","state":"OR","dateTime":"2015-07-15 00:00:00.000","extra":"..."}
//! {"id":1000,"itemName":"...","description":"...","initialBid":1234,"reserve":5678,"dateTime":"2015-07-15 00:00:00.000","expires":"2015-07-15 00:00:00.198","seller":1000,"category":12,"extra":"..."}
//! {"auction":1000,"bidder":1001,"price":420,"channel":"Google","url":"https://www.nexmark.com/...","dateTime":"2015-07-15 00:00:00.000","extra":"..."}
//! ```
#![warn(missing_docs)]

mod config;
mod generate;
mod iter;
mod json;
mod model;

pub use config::{
    ConfigError, NexmarkConfig, OptionPair, DEFAULT_BASE_TIME_MS, MAX_BASE_TIME_MS,
    MIN_BASE_TIME_MS, OPTIONS,
};
pub use generate::{
    bid_numbers, event, event_fields, kind_of, BidNumbers, Fields, AUCTION_ID_LEAD,
    FIRST_AUCTION_ID, FIRST_CATEGORY_ID, FIRST_PERSON_ID, HOT_BATCH, NUM_CATEGORIES,
    PERSON_ID_LEAD,
};
pub use iter::Generator;
pub use json::{format_timestamp_ms, to_json, write_json, write_json_line};
pub use model::{Auction, Bid, Event, EventKind, Person};
