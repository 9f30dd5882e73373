//! The result computed without the engine: a plain pass over both files, for tests and for
//! checking a run (`counts.csv`) by hand. Written apart from the job's code (its own JSON
//! reading, through `serde_json::Value`) so a bug in one does not hide in the other; it shares
//! only the definitions: a view counts in window `floor(event_time / 10 s) * 10 s` of its ad's
//! campaign unless it is late (below the largest event time before it in the file minus the
//! lateness) or malformed, or its ad is unknown.

use std::collections::BTreeMap;

/// (campaign id, window start ms) -> views.
pub type Counts = BTreeMap<(String, u64), u64>;

/// Counts views per campaign and window of `window_ms`.
///
/// # Errors
/// A line of `ad_campaigns` that is not a one-entry JSON object of strings.
pub fn counts(
    events: &str,
    ad_campaigns: &str,
    lateness_ms: u64,
    window_ms: u64,
) -> Result<Counts, String> {
    let table = table(ad_campaigns)?;
    let mut out = Counts::new();
    let mut max: Option<u64> = None;
    for line in events.lines() {
        let Ok(serde_json::Value::Object(o)) = serde_json::from_str::<serde_json::Value>(line)
        else {
            continue;
        };
        const FIELDS: [&str; 7] = [
            "user_id",
            "page_id",
            "ad_id",
            "ad_type",
            "event_type",
            "event_time",
            "ip_address",
        ];
        if o.len() != FIELDS.len()
            || !FIELDS
                .iter()
                .all(|f| o.get(*f).is_some_and(|v| v.is_string()))
        {
            continue;
        }
        let kind = o["event_type"].as_str().unwrap_or_default();
        let Ok(t) = o["event_time"].as_str().unwrap_or_default().parse::<u64>() else {
            continue;
        };
        if !["view", "click", "purchase"].contains(&kind) {
            continue;
        }
        if let Some(m) = max {
            if t + lateness_ms < m {
                continue;
            }
        }
        max = Some(max.map_or(t, |m| m.max(t)));
        if kind != "view" {
            continue;
        }
        if let Some(c) = table.get(o["ad_id"].as_str().unwrap_or_default()) {
            *out.entry((c.clone(), t / window_ms * window_ms))
                .or_default() += 1;
        }
    }
    Ok(out)
}

/// The ad -> campaign table.
///
/// # Errors
/// A line that is not a one-entry JSON object of strings.
fn table(ad_campaigns: &str) -> Result<BTreeMap<String, String>, String> {
    let mut table = BTreeMap::new();
    for line in ad_campaigns.lines().filter(|l| !l.trim().is_empty()) {
        let v: serde_json::Value = serde_json::from_str(line).map_err(|e| e.to_string())?;
        let o = v
            .as_object()
            .filter(|o| o.len() == 1)
            .ok_or("not a one-entry object")?;
        for (ad, c) in o {
            table.insert(
                ad.clone(),
                c.as_str().ok_or("campaign not a string")?.to_string(),
            );
        }
    }
    Ok(table)
}

/// The counts of a bench run (`xorflow-lab bench ysb`, `peers/ysb-contract.md`): event `k` of
/// `rate * duration_s` is template line `k mod N` (empty lines skipped) at event time
/// `start_ms + floor(k * 1000 / rate)` ms; nothing is late. Computed here from that formula, not
/// from the bench's [`crate::bench::schedule::Schedule`].
///
/// # Errors
/// As [`counts`]; a template line that is not an event.
pub fn scheduled(
    templates: &str,
    ad_campaigns: &str,
    rate: u64,
    duration_s: u64,
    start_ms: u64,
    window_ms: u64,
) -> Result<Counts, String> {
    let table = table(ad_campaigns)?;
    let mut campaign_of = Vec::new();
    for line in templates.lines().filter(|l| !l.trim().is_empty()) {
        let v: serde_json::Value = serde_json::from_str(line).map_err(|e| e.to_string())?;
        let view = v["event_type"].as_str() == Some("view");
        let c = v["ad_id"].as_str().and_then(|ad| table.get(ad));
        campaign_of.push(c.filter(|_| view).cloned());
    }
    let n = campaign_of.len() as u64;
    let mut per = std::collections::HashMap::<(usize, u64), u64>::new();
    for k in 0..rate * duration_s {
        let i = (k % n) as usize;
        if campaign_of[i].is_some() {
            let t = start_ms + (u128::from(k) * 1000 / u128::from(rate)) as u64;
            *per.entry((i, t / window_ms * window_ms)).or_default() += 1;
        }
    }
    let mut out = Counts::new();
    for ((i, w), v) in per {
        let c = campaign_of[i]
            .clone()
            .expect("only views of known ads are counted");
        *out.entry((c, w)).or_default() += v;
    }
    Ok(out)
}
