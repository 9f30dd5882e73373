//! The three kinds of Nexmark events, with the fields of the Nexmark DDL (Flink's
//! `model/Person.java`, `Auction.java`, `Bid.java`). Ids, prices and timestamps are `i64`, the
//! DDL's `BIGINT` and `TIMESTAMP(3)` as milliseconds since the Unix epoch, UTC.

/// A new person registering with the auction site.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Person {
    /// The person's id (a person id, from [`crate::FIRST_PERSON_ID`] up, one per person event).
    pub id: i64,
    /// First and last name, e.g. "Peter Smith".
    pub name: String,
    /// A made-up address, `<3 to 6 chars>@<3 or 4 chars>.com` (the chars may include spaces, as
    /// in the specification).
    pub email_address: String,
    /// Four groups of four digits separated by spaces.
    pub credit_card: String,
    /// One of ten US cities.
    pub city: String,
    /// One of six US states (two-letter codes).
    pub state: String,
    /// When the person registered: the event's timestamp, in ms since the Unix epoch (UTC).
    pub date_time_ms: i64,
    /// Lowercase letters padding the person to the configured average size (bytes).
    pub extra: String,
}

/// A new auction.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Auction {
    /// The auction's id (an auction id, from [`crate::FIRST_AUCTION_ID`] up, one per auction
    /// event).
    pub id: i64,
    /// A random name of 3 to 19 chars (lowercase letters and spaces, trimmed).
    pub item_name: String,
    /// A random description of 3 to 99 chars (lowercase letters and spaces, trimmed).
    pub description: String,
    /// The starting price, in cents (100 to 100,000,000).
    pub initial_bid: i64,
    /// The reserve price, in cents: `initial_bid` plus another random price.
    pub reserve: i64,
    /// When the auction opened: the event's timestamp, in ms since the Unix epoch (UTC).
    pub date_time_ms: i64,
    /// When the auction closes, in ms since the Unix epoch (UTC): after `date_time_ms`, on
    /// average by the event time `num_in_flight_auctions` more auctions take to be generated.
    pub expires_ms: i64,
    /// The seller's person id.
    pub seller: i64,
    /// The category id, [`crate::FIRST_CATEGORY_ID`] to `FIRST_CATEGORY_ID + 4`.
    pub category: i64,
    /// Lowercase letters padding the auction to the configured average size (bytes).
    pub extra: String,
}

/// A bid on an auction.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Bid {
    /// The auction's id.
    pub auction: i64,
    /// The bidder's person id.
    pub bidder: i64,
    /// The price bid, in cents (100 to 100,000,000).
    pub price: i64,
    /// Where the bid came from: "Google", "Facebook", "Baidu", "Apple" or "channel-N" (N below
    /// 10,000).
    pub channel: String,
    /// An `https://www.nexmark.com/...` url, one per channel.
    pub url: String,
    /// When the bid was placed: the event's timestamp, in ms since the Unix epoch (UTC).
    pub date_time_ms: i64,
    /// Lowercase letters padding the bid to the configured average size (bytes).
    pub extra: String,
}

/// A Nexmark event: a person, an auction or a bid.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Event {
    /// A new person.
    Person(Person),
    /// A new auction.
    Auction(Auction),
    /// A bid.
    Bid(Bid),
}

/// The kind of an [`Event`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EventKind {
    /// [`Event::Person`].
    Person,
    /// [`Event::Auction`].
    Auction,
    /// [`Event::Bid`].
    Bid,
}

impl EventKind {
    /// The three kinds, in the order of a cycle (people first, then auctions, then bids).
    pub const ALL: [EventKind; 3] = [EventKind::Person, EventKind::Auction, EventKind::Bid];

    /// "person", "auction" or "bid": the Nexmark table's name, and the name of its file and
    /// topic in `xorflow nexmark generate`.
    pub fn name(self) -> &'static str {
        match self {
            EventKind::Person => "person",
            EventKind::Auction => "auction",
            EventKind::Bid => "bid",
        }
    }

    /// Flink's `event_type` column of the `datagen` table: 0 person, 1 auction, 2 bid.
    pub fn event_type(self) -> u8 {
        match self {
            EventKind::Person => 0,
            EventKind::Auction => 1,
            EventKind::Bid => 2,
        }
    }
}

impl std::fmt::Display for EventKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl Event {
    /// Its kind.
    pub fn kind(&self) -> EventKind {
        match self {
            Event::Person(_) => EventKind::Person,
            Event::Auction(_) => EventKind::Auction,
            Event::Bid(_) => EventKind::Bid,
        }
    }

    /// Its timestamp (`dateTime`), in ms since the Unix epoch (UTC).
    pub fn date_time_ms(&self) -> i64 {
        match self {
            Event::Person(p) => p.date_time_ms,
            Event::Auction(a) => a.date_time_ms,
            Event::Bid(b) => b.date_time_ms,
        }
    }
}
