//! The generator against its specification (Flink's Nexmark generator, as the crate's doc
//! states it): kinds, ids, references, timestamps, sizes, determinism, slices, options, JSON.

use std::collections::{BTreeMap, HashMap};
use xorflow_nexmark::*;

fn config(events: u64, seed: u64) -> NexmarkConfig {
    NexmarkConfig {
        events,
        seed,
        ..NexmarkConfig::default()
    }
}

fn all(c: &NexmarkConfig) -> Vec<(u64, Event)> {
    Generator::new(c.clone()).collect()
}

fn json_of(events: &[(u64, Event)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (_, e) in events {
        write_json_line(e, &mut out).unwrap();
    }
    out
}

fn counts(events: &[(u64, Event)]) -> [usize; 3] {
    let mut c = [0; 3];
    for (_, e) in events {
        c[e.kind().event_type() as usize] += 1;
    }
    c
}

#[test]
fn defaults_are_flinks() {
    let c = NexmarkConfig::default();
    assert_eq!(c.events, 0);
    assert_eq!(c.first_event_rate, 10_000);
    assert_eq!(c.next_event_rate, 10_000);
    assert_eq!(
        (c.person_proportion, c.auction_proportion, c.bid_proportion),
        (1, 3, 46)
    );
    assert_eq!(
        (c.avg_person_size, c.avg_auction_size, c.avg_bid_size),
        (200, 500, 100)
    );
    assert_eq!(
        (
            c.hot_auction_ratio,
            c.hot_bidders_ratio,
            c.hot_sellers_ratio
        ),
        (2, 4, 4)
    );
    assert_eq!((c.num_active_people, c.num_in_flight_auctions), (1000, 100));
    assert_eq!(c.base_time_ms, DEFAULT_BASE_TIME_MS);
    assert_eq!(
        format_timestamp_ms(DEFAULT_BASE_TIME_MS),
        "2015-07-15 00:00:00.000"
    );
    assert_eq!(c.seed, 0);
}

/// Catches: kinds drawn at random instead of by event number, or the cycle's order changed.
#[test]
fn proportions_are_exact_in_every_run_of_a_cycle() {
    let events = all(&config(1000, 3));
    assert_eq!(counts(&events[..50]), [1, 3, 46]);
    for start in [0, 1, 17, 49, 50, 333, 950] {
        assert_eq!(
            counts(&events[start..start + 50]),
            [1, 3, 46],
            "from {start}"
        );
    }
    assert_eq!(counts(&events), [20, 60, 920]);
    assert_eq!(events[0].1.kind(), EventKind::Person);
    assert!((1..4).all(|i| events[i].1.kind() == EventKind::Auction));
    assert!((4..50).all(|i| events[i].1.kind() == EventKind::Bid));

    let c = NexmarkConfig::from_options([
        ("events.num", "200"),
        ("person.proportion", "2"),
        ("auction.proportion", "5"),
        ("bid.proportion", "13"),
    ])
    .unwrap();
    let events = all(&c);
    for start in (0..180).step_by(7) {
        assert_eq!(counts(&events[start..start + 20]), [2, 5, 13]);
    }
    for (n, e) in &events {
        assert_eq!(kind_of(&c, *n), e.kind());
    }
}

/// A proportion of 0 leaves that kind out (Flink allows it): only bids, only people.
#[test]
fn a_kind_with_proportion_zero_is_never_generated() {
    for (opts, kind) in [
        (["0", "0", "1"], EventKind::Bid),
        (["1", "0", "0"], EventKind::Person),
        (["0", "1", "0"], EventKind::Auction),
    ] {
        let c = NexmarkConfig::from_options([
            ("events.num", "300"),
            ("person.proportion", opts[0]),
            ("auction.proportion", opts[1]),
            ("bid.proportion", opts[2]),
        ])
        .unwrap();
        assert!(all(&c).iter().all(|(_, e)| e.kind() == kind), "{opts:?}");
    }
}

/// Catches: randomness not derived from the seed alone (a clock, thread RNG, a shared RNG whose
/// state depends on what was generated before), or a seed that does not reach every field.
#[test]
fn the_same_seed_gives_the_same_bytes_and_another_seed_other_ones() {
    let a = json_of(&all(&config(3000, 42)));
    let b = json_of(&all(&config(3000, 42)));
    assert_eq!(a, b);
    let other = all(&config(3000, 43));
    assert_ne!(a, json_of(&other));
    // Every kind, and the bids' urls, change with the seed.
    let first = all(&config(3000, 42));
    for kind in EventKind::ALL {
        let differ = first
            .iter()
            .zip(&other)
            .filter(|((_, x), (_, y))| x.kind() == kind && x != y)
            .count();
        assert!(differ > 10, "{kind}: {differ}");
    }
    let urls = |v: &[(u64, Event)]| -> Vec<String> {
        v.iter()
            .filter_map(|(_, e)| match e {
                Event::Bid(b) if b.channel == "Google" => Some(b.url.clone()),
                _ => None,
            })
            .collect()
    };
    assert_ne!(urls(&first)[0], urls(&other)[0]);
    // The base time moves the timestamps and nothing else.
    let mut later = config(3000, 42);
    later.base_time_ms += 1000;
    for ((_, x), (_, y)) in first.iter().zip(all(&later).iter()) {
        assert_eq!(x.date_time_ms() + 1000, y.date_time_ms());
    }
}

/// Pins the output of seed 0: catches a change of the generator's values (a new `rand` drawing
/// numbers differently, a reordered draw) that would silently change every benchmark's input.
/// If the change is intended, update the hash and say so in the commit.
#[test]
fn the_output_of_seed_0_is_pinned() {
    let bytes = json_of(&all(&config(2000, 0)));
    // FNV-1a, 64 bits.
    let hash = bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    assert_eq!(
        (bytes.len(), format!("{hash:016x}")),
        (PINNED_LEN, PINNED_HASH.to_string()),
        "the first line: {}",
        String::from_utf8_lossy(bytes.split(|&b| b == b'\n').next().unwrap())
    );
}

const PINNED_LEN: usize = 559_675;
const PINNED_HASH: &str = "4385808263ddd966";

/// Catches: slices that overlap, miss events, or make an event differently than the sequential
/// generator does.
#[test]
fn slices_together_are_the_whole_sequence() {
    let c = config(1003, 9);
    let whole = all(&c);
    for instances in 1..=5u64 {
        let mut union: Vec<(u64, Event)> = Vec::new();
        for i in 0..instances {
            let slice: Vec<_> = Generator::new(c.clone()).with_slice(i, instances).collect();
            assert!(slice.windows(2).all(|w| w[0].0 + instances == w[1].0));
            assert!(slice.iter().all(|(n, _)| n % instances == i));
            assert_eq!(
                Generator::new(c.clone())
                    .with_slice(i, instances)
                    .size_hint(),
                (slice.len(), Some(slice.len()))
            );
            union.extend(slice);
        }
        union.sort_by_key(|(n, _)| *n);
        assert_eq!(union, whole, "{instances} instances");
    }
    for (n, e) in whole.iter().step_by(97) {
        assert_eq!(&event(&c, *n), e);
    }
}

#[test]
fn a_slice_resumes_at_an_event_number() {
    let c = config(100, 1);
    let g = Generator::new(c.clone()).with_slice(2, 3).from_event(50);
    assert_eq!(g.next_event_number(), Some(50));
    let rest: Vec<u64> = g.map(|(n, _)| n).collect();
    assert_eq!(rest, (50..100).step_by(3).collect::<Vec<_>>());
    let g = Generator::new(c.clone()).with_slice(2, 3).from_event(51);
    assert_eq!(g.next_event_number(), Some(53));
    let g = Generator::new(c.clone()).with_slice(2, 3).from_event(0);
    assert_eq!(g.next_event_number(), Some(2));
    let mut g = Generator::new(c).from_event(100);
    assert_eq!(g.next_event_number(), None);
    assert!(g.next().is_none());
    let unbounded = Generator::new(NexmarkConfig::default()).from_event(u64::MAX - 1);
    assert_eq!(unbounded.next_event_number(), None);
}

/// Catches: timestamps from a clock or spaced by another rate than first-event.rate.
#[test]
fn timestamps_follow_the_event_number_at_first_event_rate() {
    for rate in [10_000u64, 3, 1, 7_777, 1_000_000] {
        let c = NexmarkConfig {
            events: 5000,
            first_event_rate: rate,
            base_time_ms: 1_000_000,
            ..NexmarkConfig::default()
        };
        let events = all(&c);
        assert!(events
            .windows(2)
            .all(|w| w[0].1.date_time_ms() <= w[1].1.date_time_ms()));
        for (n, e) in &events {
            let expected = 1_000_000 + (u128::from(*n) * 1000 / u128::from(rate)) as i64;
            assert_eq!(e.date_time_ms(), expected, "event {n} at {rate}/s");
            assert_eq!(c.timestamp_ms(*n), expected);
        }
        // `rate` events take one second.
        if rate < 4000 {
            let n = rate as usize;
            assert_eq!(
                events[n + 5].1.date_time_ms() - events[5].1.date_time_ms(),
                1000
            );
        }
    }
    // 10,000 events/s: 10 events per millisecond.
    let events = all(&config(100, 0));
    assert_eq!(events[9].1.date_time_ms(), DEFAULT_BASE_TIME_MS);
    assert_eq!(events[10].1.date_time_ms(), DEFAULT_BASE_TIME_MS + 1);
    assert_eq!(events[99].1.date_time_ms(), DEFAULT_BASE_TIME_MS + 9);
}

/// The guarantee the specification gives, as the crate's doc states it: person and auction ids
/// are consecutive from 1000 in event order; every id an event names is at least the first id
/// and at most the newest id at that event plus the lead (10); a non-hot choice is within the
/// active people or in-flight auctions; the hot choices are the batch's first (bidders: second)
/// id.
#[test]
fn references_are_within_the_window_and_at_most_ten_ids_ahead() {
    let c = config(60_000, 5);
    let mut newest_person = FIRST_PERSON_ID - 1;
    let mut newest_auction = FIRST_AUCTION_ID - 1;
    let (mut bids, mut existing_auction, mut existing_bidder) = (0u64, 0u64, 0u64);
    let (mut hot_auction, mut hot_bidder, mut hot_seller, mut auctions) = (0u64, 0u64, 0u64, 0u64);
    let hot = |newest: i64, first: i64| (newest - first) / HOT_BATCH * HOT_BATCH + first;
    for (n, e) in Generator::new(c.clone()) {
        match e {
            Event::Person(p) => {
                assert_eq!(p.id, newest_person + 1, "event {n}");
                newest_person = p.id;
            }
            Event::Auction(a) => {
                assert_eq!(a.id, newest_auction + 1, "event {n}");
                newest_auction = a.id;
                auctions += 1;
                assert!(a.seller >= FIRST_PERSON_ID, "event {n}: {a:?}");
                assert!(
                    a.seller <= newest_person + PERSON_ID_LEAD,
                    "event {n}: {a:?}"
                );
                let people = newest_person - FIRST_PERSON_ID + 1;
                let active = people.min(i64::from(c.num_active_people));
                if a.seller == hot(newest_person, FIRST_PERSON_ID) {
                    hot_seller += 1;
                } else {
                    assert!(a.seller >= newest_person + 1 - active, "event {n}: {a:?}");
                }
                assert!(
                    (FIRST_CATEGORY_ID..FIRST_CATEGORY_ID + NUM_CATEGORIES).contains(&a.category)
                );
            }
            Event::Bid(b) => {
                bids += 1;
                assert!(b.auction >= FIRST_AUCTION_ID, "event {n}: {b:?}");
                assert!(
                    b.auction <= newest_auction + AUCTION_ID_LEAD,
                    "event {n}: {b:?}"
                );
                assert!(b.bidder >= FIRST_PERSON_ID, "event {n}: {b:?}");
                assert!(
                    b.bidder <= newest_person + PERSON_ID_LEAD,
                    "event {n}: {b:?}"
                );
                if b.auction == hot(newest_auction, FIRST_AUCTION_ID) {
                    hot_auction += 1;
                } else {
                    let in_flight = i64::from(c.num_in_flight_auctions);
                    let lowest = (newest_auction - in_flight).max(FIRST_AUCTION_ID);
                    assert!(b.auction >= lowest, "event {n}: {b:?}");
                }
                let people = newest_person - FIRST_PERSON_ID + 1;
                let active = people.min(i64::from(c.num_active_people));
                if b.bidder == hot(newest_person, FIRST_PERSON_ID) + 1 {
                    hot_bidder += 1;
                } else {
                    assert!(b.bidder >= newest_person + 1 - active, "event {n}: {b:?}");
                }
                existing_auction += u64::from(b.auction <= newest_auction);
                existing_bidder += u64::from(b.bidder <= newest_person);
            }
        }
    }
    // Hot ratios 2 (auctions) and 4 (bidders, sellers): at least 1 - 1/ratio of the choices are
    // hot (a random choice may hit the hot id too).
    let share = |k: u64, of: u64| k as f64 / of as f64;
    assert!(share(hot_auction, bids) > 0.48, "{hot_auction}/{bids}");
    assert!(share(hot_bidder, bids) > 0.73, "{hot_bidder}/{bids}");
    assert!(
        share(hot_seller, auctions) > 0.72,
        "{hot_seller}/{auctions}"
    );
    // Most references name an id already generated.
    assert!(share(existing_auction, bids) > 0.95);
    assert!(share(existing_bidder, bids) > 0.95);
}

/// Catches: extra padding to another average, or sizes counted differently (8 bytes per number
/// field plus the strings' lengths, as the specification counts them).
#[test]
fn events_average_the_configured_sizes() {
    for (p, a, b) in [(200u32, 500u32, 100u32), (1000, 2000, 300)] {
        let mut c = config(50_000, 11);
        (c.avg_person_size, c.avg_auction_size, c.avg_bid_size) = (p, a, b);
        let mut total = [0usize; 3];
        let mut count = [0usize; 3];
        for (_, e) in Generator::new(c) {
            let (k, size) = match &e {
                Event::Person(p) => (
                    0,
                    8 + p.name.len()
                        + p.email_address.len()
                        + p.credit_card.len()
                        + p.city.len()
                        + p.state.len()
                        + p.extra.len(),
                ),
                Event::Auction(a) => (
                    1,
                    8 + a.item_name.len() + a.description.len() + 40 + a.extra.len(),
                ),
                Event::Bid(b) => (2, 32 + b.extra.len()),
            };
            total[k] += size;
            count[k] += 1;
        }
        for (k, want) in [p, a, b].into_iter().enumerate() {
            let avg = total[k] as f64 / count[k] as f64;
            let want = f64::from(want);
            assert!(
                (avg - want).abs() < want * 0.02,
                "kind {k}: {avg} vs {want}"
            );
        }
    }
    // Smaller than the fixed fields: no padding.
    let mut c = config(100, 0);
    c.avg_bid_size = 10;
    for (_, e) in Generator::new(c) {
        if let Event::Bid(b) = e {
            assert_eq!(b.extra, "");
        }
    }
}

#[test]
fn field_values_are_in_the_specified_ranges() {
    let c = config(20_000, 8);
    let channels: BTreeMap<String, String> = BTreeMap::new();
    let mut urls = channels;
    for (n, e) in Generator::new(c.clone()) {
        match e {
            Event::Person(p) => {
                assert!(p.name.contains(' '));
                assert!(p.email_address.ends_with(".com") && p.email_address.contains('@'));
                assert_eq!(p.credit_card.len(), 19, "{}", p.credit_card);
                assert_eq!(p.state.len(), 2);
                assert!(p.extra.bytes().all(|b| b.is_ascii_lowercase()));
            }
            Event::Auction(a) => {
                assert!((100..=100_000_000).contains(&a.initial_bid));
                assert!(a.reserve > a.initial_bid);
                // Expiry: 1 ms to twice the time 100 auctions (1,666 events) take, 166 ms.
                let horizon = c.timestamp_ms(n + 1666) - a.date_time_ms;
                assert!(a.expires_ms > a.date_time_ms);
                assert!(a.expires_ms <= a.date_time_ms + 2 * horizon, "{a:?}");
                assert!(a.item_name.len() < 20 && a.description.len() < 100);
            }
            Event::Bid(b) => {
                assert!((100..=100_000_000).contains(&b.price));
                assert!(b.url.starts_with("https://www.nexmark.com/"), "{}", b.url);
                let hot = ["Google", "Facebook", "Baidu", "Apple"].contains(&b.channel.as_str());
                if !hot {
                    let k: u32 = b.channel.strip_prefix("channel-").unwrap().parse().unwrap();
                    assert!(k < 10_000);
                }
                // One url per channel.
                let url = urls.entry(b.channel.clone()).or_insert(b.url.clone());
                assert_eq!(url, &b.url, "{}", b.channel);
            }
        }
    }
    assert!(urls.len() > 500);
}

#[test]
fn options_use_flinks_names_and_refuse_unknown_ones() {
    let opts: Vec<(String, String)> = [
        ("events.num", "1234"),
        ("first-event.rate", "500"),
        ("next-event.rate", "700"),
        ("person.proportion", "2"),
        ("auction.proportion", "4"),
        ("bid.proportion", "44"),
        ("person.avg-size", "1kb"),
        ("auction.avg-size", "600b"),
        ("bid.avg-size", "120"),
        ("bid.hot-ratio.auctions", "3"),
        ("bid.hot-ratio.bidders", "5"),
        ("auction.hot-ratio.sellers", "6"),
        ("seed", "99"),
        ("base-time", "-5"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    let c = NexmarkConfig::from_options(opts.as_slice()).unwrap();
    let want = NexmarkConfig {
        events: 1234,
        first_event_rate: 500,
        next_event_rate: 700,
        base_time_ms: -5,
        seed: 99,
        person_proportion: 2,
        auction_proportion: 4,
        bid_proportion: 44,
        avg_person_size: 1024,
        avg_auction_size: 600,
        avg_bid_size: 120,
        hot_auction_ratio: 3,
        hot_bidders_ratio: 5,
        hot_sellers_ratio: 6,
        ..NexmarkConfig::default()
    };
    assert_eq!(c, want);
    let map: HashMap<String, String> = opts.into_iter().collect();
    assert_eq!(NexmarkConfig::from_options(&map).unwrap(), want);

    // The brief's spellings are aliases.
    let c = NexmarkConfig::from_options([
        ("avg-person.size", "300"),
        ("avg-auction.size", "400"),
        ("avg-bid.size", "50"),
        ("hot-auction.ratio", "7"),
        ("hot-bidder.ratio", "8"),
        ("hot-seller.ratio", "9"),
    ])
    .unwrap();
    assert_eq!(
        (c.avg_person_size, c.avg_auction_size, c.avg_bid_size),
        (300, 400, 50)
    );
    assert_eq!(
        (
            c.hot_auction_ratio,
            c.hot_bidders_ratio,
            c.hot_sellers_ratio
        ),
        (7, 8, 9)
    );

    let e = NexmarkConfig::from_options([("events.nmu", "5")]).unwrap_err();
    assert!(matches!(&e, ConfigError::UnknownOption { name } if name == "events.nmu"));
    let msg = e.to_string();
    assert!(msg.contains("'events.nmu'"), "{msg}");
    for known in OPTIONS {
        assert!(msg.contains(known), "{msg}");
    }

    for (k, v) in [
        ("events.num", "-1"),
        ("events.num", "many"),
        ("first-event.rate", "0"),
        ("bid.hot-ratio.auctions", "0"),
        ("person.avg-size", "12 parsecs"),
        ("seed", "-3"),
        ("base-time", "yesterday"),
    ] {
        let e = NexmarkConfig::from_options([(k, v)]).unwrap_err();
        assert!(
            matches!(&e, ConfigError::InvalidValue { name, value, .. } if name == k && value == v),
            "{k}={v}: {e:?}"
        );
        assert!(e.to_string().contains(k), "{e}");
    }
    let e = NexmarkConfig::from_options([
        ("person.proportion", "0"),
        ("auction.proportion", "0"),
        ("bid.proportion", "0"),
    ])
    .unwrap_err();
    assert!(matches!(e, ConfigError::Invalid(_)), "{e:?}");
    assert!(NexmarkConfig::from_options([("base-time", "999999999999999999")]).is_err());
}

#[test]
fn timestamps_are_written_as_flink_sql_text() {
    assert_eq!(
        format_timestamp_ms(DEFAULT_BASE_TIME_MS + 1),
        "2015-07-15 00:00:00.001"
    );
    assert_eq!(format_timestamp_ms(0), "1970-01-01 00:00:00.000");
    assert_eq!(format_timestamp_ms(-1), "1969-12-31 23:59:59.999");
    assert_eq!(
        format_timestamp_ms(951_782_400_000 + 86_399_123),
        "2000-02-29 23:59:59.123"
    );
    assert_eq!(
        format_timestamp_ms(MIN_BASE_TIME_MS),
        "0001-01-01 00:00:00.000"
    );
    assert_eq!(
        format_timestamp_ms(MAX_BASE_TIME_MS),
        "9999-01-01 00:00:00.000"
    );
}

/// The names of the keys of a JSON object line, in the order written.
fn keys_in_order(line: &str) -> Vec<String> {
    let v: serde_json::Value = serde_json::from_str(line).unwrap();
    let mut keys: Vec<(usize, String)> = v
        .as_object()
        .unwrap()
        .keys()
        .map(|k| (line.find(&format!("\"{k}\":")).unwrap(), k.clone()))
        .collect();
    keys.sort();
    keys.into_iter().map(|(_, k)| k).collect()
}

fn is_timestamp(v: &serde_json::Value) -> bool {
    let s = v.as_str().unwrap_or_default();
    let b = s.as_bytes();
    s.len() == 23
        && b.iter().enumerate().all(|(i, c)| match i {
            4 | 7 => *c == b'-',
            10 => *c == b' ',
            13 | 16 => *c == b':',
            19 => *c == b'.',
            _ => c.is_ascii_digit(),
        })
}

/// Catches: field names other than the Nexmark DDL's, fields in another order, numbers written
/// as strings, timestamps in another format, lines that are not one JSON object each.
#[test]
fn json_lines_have_the_ddls_fields() {
    let c = config(200, 4);
    let mut out = Vec::new();
    for (_, e) in Generator::new(c.clone()) {
        write_json_line(&e, &mut out).unwrap();
        assert_eq!(to_json(&e) + "\n", String::from_utf8(out.clone()).unwrap());
        let line = String::from_utf8(std::mem::take(&mut out)).unwrap();
        let line = line.strip_suffix('\n').unwrap();
        assert!(!line.contains('\n'));
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let (names, numbers, times): (&[&str], &[&str], &[&str]) = match e.kind() {
            EventKind::Person => (
                &[
                    "id",
                    "name",
                    "emailAddress",
                    "creditCard",
                    "city",
                    "state",
                    "dateTime",
                    "extra",
                ],
                &["id"],
                &["dateTime"],
            ),
            EventKind::Auction => (
                &[
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
                ],
                &["id", "initialBid", "reserve", "seller", "category"],
                &["dateTime", "expires"],
            ),
            EventKind::Bid => (
                &[
                    "auction", "bidder", "price", "channel", "url", "dateTime", "extra",
                ],
                &["auction", "bidder", "price"],
                &["dateTime"],
            ),
        };
        assert_eq!(keys_in_order(line), names, "{line}");
        for (k, x) in v.as_object().unwrap() {
            if numbers.contains(&k.as_str()) {
                assert!(x.is_i64(), "{k} in {line}");
            } else if times.contains(&k.as_str()) {
                assert!(is_timestamp(x), "{k} in {line}");
            } else {
                assert!(x.is_string(), "{k} in {line}");
            }
        }
        assert_eq!(
            v["dateTime"].as_str().unwrap(),
            format_timestamp_ms(e.date_time_ms())
        );
        match &e {
            Event::Person(p) => {
                assert_eq!(v["id"], p.id);
                assert_eq!(v["emailAddress"], p.email_address.as_str());
            }
            Event::Auction(a) => {
                assert_eq!(v["reserve"], a.reserve);
                assert_eq!(v["expires"], format_timestamp_ms(a.expires_ms).as_str());
            }
            Event::Bid(b) => {
                assert_eq!(v["bidder"], b.bidder);
                assert_eq!(v["url"], b.url.as_str());
            }
        }
    }
}

/// Strings are escaped by serde_json (none of the generator's need it, but a caller's might).
#[test]
fn strings_are_escaped() {
    let e = Event::Bid(Bid {
        auction: 1,
        bidder: 2,
        price: 3,
        channel: "a\"b\\c\nd".into(),
        url: "é".into(),
        date_time_ms: 0,
        extra: String::new(),
    });
    let line = to_json(&e);
    assert_eq!(
        line,
        r#"{"auction":1,"bidder":2,"price":3,"channel":"a\"b\\c\nd","url":"é","dateTime":"1970-01-01 00:00:00.000","extra":""}"#
    );
}
