//! Events as JSON objects with the Nexmark DDL's field names, timestamps in Flink SQL's text
//! format.

use crate::model::{Auction, Bid, Event, Person};
use chrono::{DateTime, Datelike, Timelike};
use std::io::{self, Write};

/// A timestamp in ms since the Unix epoch as Flink SQL's JSON format writes a `TIMESTAMP(3)`:
/// `yyyy-MM-dd HH:mm:ss.SSS`, UTC, e.g. `2015-07-15 00:00:00.001` for 1436918400001. Years
/// outside 0 to 9999 have more digits or a sign; a time outside what `chrono` represents (about
/// ±262,000 years) is written as its number of milliseconds.
pub fn format_timestamp_ms(ms: i64) -> String {
    let mut s = String::with_capacity(23);
    // Writing to a String cannot fail.
    let _ = write_timestamp(&mut s, ms);
    s
}

fn write_timestamp(out: &mut impl std::fmt::Write, ms: i64) -> std::fmt::Result {
    match DateTime::from_timestamp_millis(ms) {
        Some(t) => write!(
            out,
            "{:04}-{:02}-{:02} {:02}:{:02}:{:02}.{:03}",
            t.year(),
            t.month(),
            t.day(),
            t.hour(),
            t.minute(),
            t.second(),
            t.timestamp_subsec_millis()
        ),
        None => write!(out, "{ms}"),
    }
}

/// Writes `s` as a JSON string (quoted and escaped by serde_json).
fn string<W: Write + ?Sized>(out: &mut W, s: &str) -> io::Result<()> {
    serde_json::to_writer(&mut *out, s).map_err(io::Error::from)
}

/// Writes a timestamp as a JSON string in [`format_timestamp_ms`]'s format.
fn timestamp<W: Write + ?Sized>(out: &mut W, ms: i64) -> io::Result<()> {
    let mut s = String::with_capacity(25);
    s.push('"');
    let _ = write_timestamp(&mut s, ms);
    s.push('"');
    out.write_all(s.as_bytes())
}

fn person<W: Write + ?Sized>(p: &Person, out: &mut W) -> io::Result<()> {
    write!(out, "{{\"id\":{},\"name\":", p.id)?;
    string(out, &p.name)?;
    out.write_all(b",\"emailAddress\":")?;
    string(out, &p.email_address)?;
    out.write_all(b",\"creditCard\":")?;
    string(out, &p.credit_card)?;
    out.write_all(b",\"city\":")?;
    string(out, &p.city)?;
    out.write_all(b",\"state\":")?;
    string(out, &p.state)?;
    out.write_all(b",\"dateTime\":")?;
    timestamp(out, p.date_time_ms)?;
    out.write_all(b",\"extra\":")?;
    string(out, &p.extra)?;
    out.write_all(b"}")
}

fn auction<W: Write + ?Sized>(a: &Auction, out: &mut W) -> io::Result<()> {
    write!(out, "{{\"id\":{},\"itemName\":", a.id)?;
    string(out, &a.item_name)?;
    out.write_all(b",\"description\":")?;
    string(out, &a.description)?;
    write!(
        out,
        ",\"initialBid\":{},\"reserve\":{},\"dateTime\":",
        a.initial_bid, a.reserve
    )?;
    timestamp(out, a.date_time_ms)?;
    out.write_all(b",\"expires\":")?;
    timestamp(out, a.expires_ms)?;
    write!(
        out,
        ",\"seller\":{},\"category\":{},\"extra\":",
        a.seller, a.category
    )?;
    string(out, &a.extra)?;
    out.write_all(b"}")
}

fn bid<W: Write + ?Sized>(b: &Bid, out: &mut W) -> io::Result<()> {
    write!(
        out,
        "{{\"auction\":{},\"bidder\":{},\"price\":{},\"channel\":",
        b.auction, b.bidder, b.price
    )?;
    string(out, &b.channel)?;
    out.write_all(b",\"url\":")?;
    string(out, &b.url)?;
    out.write_all(b",\"dateTime\":")?;
    timestamp(out, b.date_time_ms)?;
    out.write_all(b",\"extra\":")?;
    string(out, &b.extra)?;
    out.write_all(b"}")
}

/// Writes `event` as one JSON object, without a line break: the fields of its Nexmark table, in
/// the DDL's order and with its names (person `id, name, emailAddress, creditCard, city, state,
/// dateTime, extra`; auction `id, itemName, description, initialBid, reserve, dateTime,
/// expires, seller, category, extra`; bid `auction, bidder, price, channel, url, dateTime,
/// extra`). Ids and prices are JSON numbers, timestamps strings in [`format_timestamp_ms`]'s
/// format, the other fields JSON strings. No field names the kind: each kind goes to its own
/// file or topic.
///
/// # Errors
/// What writing to `out` returns.
pub fn write_json<W: Write + ?Sized>(event: &Event, out: &mut W) -> io::Result<()> {
    match event {
        Event::Person(p) => person(p, out),
        Event::Auction(a) => auction(a, out),
        Event::Bid(b) => bid(b, out),
    }
}

/// Writes `event` as one line of JSON lines: [`write_json`]'s object and `\n`.
///
/// # Errors
/// What writing to `out` returns.
pub fn write_json_line<W: Write + ?Sized>(event: &Event, out: &mut W) -> io::Result<()> {
    write_json(event, out)?;
    out.write_all(b"\n")
}

/// [`write_json`]'s object as a string (no line break).
pub fn to_json(event: &Event) -> String {
    let mut v = Vec::with_capacity(256);
    // Writing to a Vec cannot fail, and serde_json writes UTF-8.
    let _ = write_json(event, &mut v);
    String::from_utf8(v).unwrap_or_default()
}
