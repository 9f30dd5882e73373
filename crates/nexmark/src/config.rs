//! The generator's configuration: [`NexmarkConfig`], its defaults (Flink Nexmark's
//! `NexmarkConfiguration`) and its connector options (Flink's `NexmarkSourceOptions` names,
//! plus `seed` and `base-time`).

use std::fmt;

/// The base time of the default configuration, 2015-07-15T00:00:00Z, in milliseconds since the
/// Unix epoch. Flink's connector takes the wall clock at job start instead; a fixed time makes
/// two runs with the same configuration produce the same events (the base time Beam's Nexmark
/// uses when it does not use the wall clock).
pub const DEFAULT_BASE_TIME_MS: i64 = 1_436_918_400_000;

/// The smallest base time accepted: 0001-01-01T00:00:00Z in ms since the epoch, so that every
/// timestamp prints with a four-digit year ([`crate::format_timestamp_ms`]).
pub const MIN_BASE_TIME_MS: i64 = -62_135_596_800_000;

/// The largest base time accepted: 9999-01-01T00:00:00Z in ms since the epoch, leaving room
/// for the events after it.
pub const MAX_BASE_TIME_MS: i64 = 253_370_764_800_000;

/// How the events are generated. [`Default`] is Flink Nexmark's default configuration, with an
/// unbounded stream (`events` 0), base time [`DEFAULT_BASE_TIME_MS`] and seed 0.
///
/// Every field is public; [`NexmarkConfig::validate`] says whether a combination can be
/// generated, and [`NexmarkConfig::from_options`] builds one from connector options.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct NexmarkConfig {
    /// Number of events to generate (events); 0 means unbounded, as in Flink (`events.num`).
    pub events: u64,
    /// The event rate that spaces the event timestamps, in events per second of event time
    /// (`first-event.rate`, default 10,000): event `n` has timestamp
    /// `base_time_ms + n * 1000 / first_event_rate` ms (integer division).
    pub first_event_rate: u64,
    /// Flink's second rate of its rate shape, in events per second (`next-event.rate`, default
    /// 10,000). Accepted and kept, but, as in Flink's generator (whose `GeneratorConfig` uses
    /// only the first rate), it affects nothing.
    pub next_event_rate: u64,
    /// The timestamp of event 0, in milliseconds since the Unix epoch, UTC (`base-time`, default
    /// [`DEFAULT_BASE_TIME_MS`]).
    pub base_time_ms: i64,
    /// The seed of every random choice (`seed`, default 0): the same seed, base time and
    /// configuration give the same events.
    pub seed: u64,
    /// People per cycle of `person + auction + bid` events (events; `person.proportion`,
    /// default 1).
    pub person_proportion: u32,
    /// Auctions per cycle (events; `auction.proportion`, default 3).
    pub auction_proportion: u32,
    /// Bids per cycle (events; `bid.proportion`, default 46).
    pub bid_proportion: u32,
    /// Average idealized size of a person, in bytes (`person.avg-size`, default 200): the
    /// `extra` field pads a person to it, counting 8 bytes per number and the strings' lengths.
    pub avg_person_size: u32,
    /// Average idealized size of an auction, in bytes (`auction.avg-size`, default 500).
    pub avg_auction_size: u32,
    /// Average idealized size of a bid, in bytes (`bid.avg-size`, default 100).
    pub avg_bid_size: u32,
    /// A bid is for a hot auction with probability `1 - 1/hot_auction_ratio` (a ratio, at least
    /// 1; `bid.hot-ratio.auctions`, default 2).
    pub hot_auction_ratio: u32,
    /// A bid is by a hot bidder with probability `1 - 1/hot_bidders_ratio` (a ratio, at least 1;
    /// `bid.hot-ratio.bidders`, default 4).
    pub hot_bidders_ratio: u32,
    /// An auction is by a hot seller with probability `1 - 1/hot_sellers_ratio` (a ratio, at
    /// least 1; `auction.hot-ratio.sellers`, default 4).
    pub hot_sellers_ratio: u32,
    /// How many of the most recent people a non-hot seller or bidder is chosen from (people,
    /// default 1,000; no connector option, as in Flink).
    pub num_active_people: u32,
    /// How many of the most recent auctions a bid for a non-hot auction is chosen from, and the
    /// number of auctions an auction's expiry looks ahead (auctions, default 100; no connector
    /// option, as in Flink).
    pub num_in_flight_auctions: u32,
}

impl Default for NexmarkConfig {
    fn default() -> Self {
        NexmarkConfig {
            events: 0,
            first_event_rate: 10_000,
            next_event_rate: 10_000,
            base_time_ms: DEFAULT_BASE_TIME_MS,
            seed: 0,
            person_proportion: 1,
            auction_proportion: 3,
            bid_proportion: 46,
            avg_person_size: 200,
            avg_auction_size: 500,
            avg_bid_size: 100,
            hot_auction_ratio: 2,
            hot_bidders_ratio: 4,
            hot_sellers_ratio: 4,
            num_active_people: 1000,
            num_in_flight_auctions: 100,
        }
    }
}

/// Why options or a configuration were refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ConfigError {
    /// An option that is not one of [`OPTIONS`]; the message lists them.
    UnknownOption {
        /// The option as given.
        name: String,
    },
    /// A known option whose value cannot be used.
    InvalidValue {
        /// The option.
        name: String,
        /// Its value as given.
        value: String,
        /// What it should be.
        expected: &'static str,
    },
    /// Values that cannot be generated together (all proportions 0, ...).
    Invalid(String),
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::UnknownOption { name } => write!(
                f,
                "unknown nexmark option '{name}'; the known options are: {}",
                OPTIONS.join(", ")
            ),
            ConfigError::InvalidValue {
                name,
                value,
                expected,
            } => write!(
                f,
                "nexmark option '{name}' = '{value}': expected {expected}"
            ),
            ConfigError::Invalid(m) => write!(f, "{m}"),
        }
    }
}

impl std::error::Error for ConfigError {}

/// Every option [`NexmarkConfig::from_options`] accepts: Flink Nexmark's connector options that
/// shape the events, their aliases, and this crate's `seed` and `base-time`.
///
/// | option | field | value |
/// |---|---|---|
/// | `events.num` | [`NexmarkConfig::events`] | events, 0 unbounded |
/// | `first-event.rate` | [`NexmarkConfig::first_event_rate`] | events/s, at least 1 |
/// | `next-event.rate` | [`NexmarkConfig::next_event_rate`] | events/s, at least 1 (no effect) |
/// | `person.proportion`, `auction.proportion`, `bid.proportion` | the proportions | events per cycle |
/// | `person.avg-size` (alias `avg-person.size`) | [`NexmarkConfig::avg_person_size`] | bytes: `200`, `200b`, `1kb` |
/// | `auction.avg-size` (alias `avg-auction.size`) | [`NexmarkConfig::avg_auction_size`] | bytes |
/// | `bid.avg-size` (alias `avg-bid.size`) | [`NexmarkConfig::avg_bid_size`] | bytes |
/// | `bid.hot-ratio.auctions` (alias `hot-auction.ratio`) | [`NexmarkConfig::hot_auction_ratio`] | at least 1 |
/// | `bid.hot-ratio.bidders` (alias `hot-bidder.ratio`) | [`NexmarkConfig::hot_bidders_ratio`] | at least 1 |
/// | `auction.hot-ratio.sellers` (alias `hot-seller.ratio`) | [`NexmarkConfig::hot_sellers_ratio`] | at least 1 |
/// | `seed` | [`NexmarkConfig::seed`] | an unsigned 64-bit integer |
/// | `base-time` | [`NexmarkConfig::base_time_ms`] | ms since the Unix epoch |
pub const OPTIONS: &[&str] = &[
    "events.num",
    "first-event.rate",
    "next-event.rate",
    "person.proportion",
    "auction.proportion",
    "bid.proportion",
    "person.avg-size",
    "auction.avg-size",
    "bid.avg-size",
    "avg-person.size",
    "avg-auction.size",
    "avg-bid.size",
    "bid.hot-ratio.auctions",
    "bid.hot-ratio.bidders",
    "auction.hot-ratio.sellers",
    "hot-auction.ratio",
    "hot-bidder.ratio",
    "hot-seller.ratio",
    "seed",
    "base-time",
];

/// One option, a name and its value: a pair `(K, V)` or a reference to one, of anything that
/// gives a `&str` (`String`, `&str`, ...), so that [`NexmarkConfig::from_options`] takes slices,
/// vectors and maps of them.
pub trait OptionPair {
    /// The option's name.
    fn name(&self) -> &str;
    /// Its value, as text.
    fn value(&self) -> &str;
}

impl<K: AsRef<str>, V: AsRef<str>> OptionPair for (K, V) {
    fn name(&self) -> &str {
        self.0.as_ref()
    }
    fn value(&self) -> &str {
        self.1.as_ref()
    }
}

impl<K: AsRef<str>, V: AsRef<str>> OptionPair for &(K, V) {
    fn name(&self) -> &str {
        self.0.as_ref()
    }
    fn value(&self) -> &str {
        self.1.as_ref()
    }
}

fn invalid(name: &str, value: &str, expected: &'static str) -> ConfigError {
    ConfigError::InvalidValue {
        name: name.to_string(),
        value: value.to_string(),
        expected,
    }
}

fn parse_num<T: std::str::FromStr>(
    name: &str,
    value: &str,
    expected: &'static str,
) -> Result<T, ConfigError> {
    value
        .trim()
        .parse::<T>()
        .map_err(|_| invalid(name, value, expected))
}

/// A size in bytes as Flink's `MemorySize` writes it: a number and an optional unit, `b`/`bytes`,
/// `k`/`kb`/`kibibytes` (1024), `m`/`mb`/`mebibytes` (1024²), case-insensitive.
fn parse_size(name: &str, value: &str) -> Result<u32, ConfigError> {
    const EXPECTED: &str = "a size in bytes below 2^31, e.g. 200, 200b or 1kb";
    let v = value.trim().to_ascii_lowercase();
    let digits = v.find(|c: char| !c.is_ascii_digit()).unwrap_or(v.len());
    let (num, unit) = v.split_at(digits);
    let factor: u64 = match unit.trim() {
        "" | "b" | "bytes" => 1,
        "k" | "kb" | "kibibytes" => 1 << 10,
        "m" | "mb" | "mebibytes" => 1 << 20,
        _ => return Err(invalid(name, value, EXPECTED)),
    };
    let n: u64 = num.parse().map_err(|_| invalid(name, value, EXPECTED))?;
    n.checked_mul(factor)
        .filter(|&b| b <= i32::MAX as u64)
        .map(|b| b as u32)
        .ok_or_else(|| invalid(name, value, EXPECTED))
}

impl NexmarkConfig {
    /// The default configuration with `options` applied, in order (a later value of an option
    /// replaces an earlier one), then validated. The option names are [`OPTIONS`] (Flink
    /// Nexmark's connector option names, e.g. `events.num`, `first-event.rate`,
    /// `bid.proportion`). Any collection of pairs of strings will do ([`OptionPair`]):
    /// `&[(String, String)]`, `&HashMap<String, String>`, `[("events.num", "1000")]`.
    ///
    /// # Errors
    /// [`ConfigError::UnknownOption`] for a name not in [`OPTIONS`] (its message lists them),
    /// [`ConfigError::InvalidValue`] for a value that does not parse or is out of range, and
    /// what [`NexmarkConfig::validate`] refuses.
    pub fn from_options<I>(options: I) -> Result<Self, ConfigError>
    where
        I: IntoIterator,
        I::Item: OptionPair,
    {
        let mut c = NexmarkConfig::default();
        for o in options {
            c.set_option(o.name(), o.value())?;
        }
        c.validate()?;
        Ok(c)
    }

    /// Sets one option (a name of [`OPTIONS`]) from its text. The configuration is not
    /// validated: call [`NexmarkConfig::validate`] once all are set.
    ///
    /// # Errors
    /// [`ConfigError::UnknownOption`] or [`ConfigError::InvalidValue`], as for
    /// [`NexmarkConfig::from_options`].
    pub fn set_option(&mut self, name: &str, value: &str) -> Result<(), ConfigError> {
        const RATE: &str = "a rate in events per second, at least 1";
        const PROPORTION: &str = "a whole number of events per cycle (0 or more)";
        const RATIO: &str = "a whole number, at least 1";
        let ratio = |v: &str| -> Result<u32, ConfigError> {
            match parse_num::<u32>(name, v, RATIO)? {
                0 => Err(invalid(name, v, RATIO)),
                r => Ok(r),
            }
        };
        let rate = |v: &str| -> Result<u64, ConfigError> {
            match parse_num::<u64>(name, v, RATE)? {
                0 => Err(invalid(name, v, RATE)),
                r => Ok(r),
            }
        };
        match name {
            "events.num" => {
                self.events = parse_num(name, value, "a number of events (0: unbounded)")?
            }
            "first-event.rate" => self.first_event_rate = rate(value)?,
            "next-event.rate" => self.next_event_rate = rate(value)?,
            "person.proportion" => self.person_proportion = parse_num(name, value, PROPORTION)?,
            "auction.proportion" => self.auction_proportion = parse_num(name, value, PROPORTION)?,
            "bid.proportion" => self.bid_proportion = parse_num(name, value, PROPORTION)?,
            "person.avg-size" | "avg-person.size" => {
                self.avg_person_size = parse_size(name, value)?
            }
            "auction.avg-size" | "avg-auction.size" => {
                self.avg_auction_size = parse_size(name, value)?
            }
            "bid.avg-size" | "avg-bid.size" => self.avg_bid_size = parse_size(name, value)?,
            "bid.hot-ratio.auctions" | "hot-auction.ratio" => {
                self.hot_auction_ratio = ratio(value)?
            }
            "bid.hot-ratio.bidders" | "hot-bidder.ratio" => self.hot_bidders_ratio = ratio(value)?,
            "auction.hot-ratio.sellers" | "hot-seller.ratio" => {
                self.hot_sellers_ratio = ratio(value)?
            }
            "seed" => self.seed = parse_num(name, value, "an unsigned 64-bit integer")?,
            "base-time" => {
                self.base_time_ms = parse_num(
                    name,
                    value,
                    "a time in milliseconds since the Unix epoch (UTC)",
                )?
            }
            _ => {
                return Err(ConfigError::UnknownOption {
                    name: name.to_string(),
                })
            }
        }
        Ok(())
    }

    /// Whether events can be generated with this configuration: a cycle of at least one event
    /// (`person + auction + bid` proportions, at most 2^31 - 1), rates and hot ratios at least 1,
    /// a base time within [[`MIN_BASE_TIME_MS`], [`MAX_BASE_TIME_MS`]].
    ///
    /// # Errors
    /// A [`ConfigError::Invalid`] naming the first problem.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let total = self.total_proportion();
        if total == 0 {
            return Err(ConfigError::Invalid(
                "nexmark: person.proportion + auction.proportion + bid.proportion is 0: at least \
                 one kind of event is needed"
                    .into(),
            ));
        }
        if total > i32::MAX as u64 {
            return Err(ConfigError::Invalid(format!(
                "nexmark: the proportions add up to {total}, more than {}",
                i32::MAX
            )));
        }
        if self.first_event_rate == 0 || self.next_event_rate == 0 {
            return Err(ConfigError::Invalid(
                "nexmark: first-event.rate and next-event.rate must be at least 1 event/s".into(),
            ));
        }
        for (name, r) in [
            ("bid.hot-ratio.auctions", self.hot_auction_ratio),
            ("bid.hot-ratio.bidders", self.hot_bidders_ratio),
            ("auction.hot-ratio.sellers", self.hot_sellers_ratio),
        ] {
            if r == 0 {
                return Err(ConfigError::Invalid(format!(
                    "nexmark: {name} is 0: a hot ratio is at least 1"
                )));
            }
        }
        if !(MIN_BASE_TIME_MS..=MAX_BASE_TIME_MS).contains(&self.base_time_ms) {
            return Err(ConfigError::Invalid(format!(
                "nexmark: base-time {} ms is outside years 1 to 9998 ({MIN_BASE_TIME_MS} to \
                 {MAX_BASE_TIME_MS} ms since the epoch)",
                self.base_time_ms
            )));
        }
        Ok(())
    }

    /// Events per cycle: `person_proportion + auction_proportion + bid_proportion` (events).
    pub fn total_proportion(&self) -> u64 {
        u64::from(self.person_proportion)
            + u64::from(self.auction_proportion)
            + u64::from(self.bid_proportion)
    }

    /// The timestamp of event `n` (0-based event number), in ms since the Unix epoch:
    /// `base_time_ms + floor(n * 1000 / first_event_rate)`, Flink's
    /// `baseTime + (long)(n * interEventDelayUs) / 1000` computed exactly. Saturates at
    /// `i64::MAX`.
    pub fn timestamp_ms(&self, n: u64) -> i64 {
        let offset = u128::from(n) * 1000 / u128::from(self.first_event_rate.max(1));
        let offset = i64::try_from(offset).unwrap_or(i64::MAX);
        self.base_time_ms.saturating_add(offset)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_as_flink_memory_sizes() {
        assert_eq!(parse_size("x", "200").unwrap(), 200);
        assert_eq!(parse_size("x", "200b").unwrap(), 200);
        assert_eq!(parse_size("x", "1 KB").unwrap(), 1024);
        assert_eq!(parse_size("x", "2m").unwrap(), 2 << 20);
        assert!(parse_size("x", "1q").is_err());
        assert!(parse_size("x", "b").is_err());
        assert!(parse_size("x", "4096m").is_err());
    }
}
