//! The event generator, as the original's (yahoo/streaming-benchmarks,
//! `data/src/setup/core.clj`): 100 campaigns of 10 ads, 100 users and 100 pages (random
//! UUIDs), each event a uniformly drawn user, page, ad, ad type and event type. Event n is due
//! at `start + n / rate`; with skew, its event time moves by -49..=50 ms, and one event in
//! 100,000 is up to 60 s late. Seeded, so a file can be generated again.
//!
//! [`write()`] is `xorflow-lab ysb generate`: the catch-up mode's files, `kafka-json.txt` and
//! `ad-to-campaign-ids.txt` (plus the original's `campaign-ids.txt` and `ad-ids.txt`).

use crate::event::{Event, EventType, AD_TYPES};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::io::Write;
use std::path::PathBuf;
use xorflow_runtime::connectors::output_file::{check_distinct, PendingFile};

/// Campaigns, as in the original.
pub const CAMPAIGNS: usize = 100;
/// Ads per campaign, as in the original.
pub const ADS_PER_CAMPAIGN: usize = 10;
/// Distinct users and pages, as in the original's real-time generator.
pub const USERS: usize = 100;

/// The ids events are drawn from.
#[derive(Clone, Debug)]
pub struct Ids {
    /// Campaign UUIDs.
    pub campaigns: Vec<String>,
    /// Ad UUIDs: ads `10 c .. 10 c + 9` belong to campaign `c`.
    pub ads: Vec<String>,
    /// User UUIDs.
    pub users: Vec<String>,
    /// Page UUIDs.
    pub pages: Vec<String>,
}

/// A random (version 4) UUID, in the usual 8-4-4-4-12 hex form.
pub(crate) fn uuid(rng: &mut impl rand::Rng) -> String {
    let v: u128 = rng.random();
    format!(
        "{:08x}-{:04x}-4{:03x}-{:x}{:03x}-{:012x}",
        (v >> 96) as u32,
        (v >> 80) as u16,
        (v >> 68) as u16 & 0xfff,
        8 | ((v >> 64) as u8 & 3),
        (v >> 52) as u16 & 0xfff,
        v as u64 & 0xffff_ffff_ffff
    )
}

impl Ids {
    /// Draws all ids from `rng`: the original's [`CAMPAIGNS`] campaigns.
    pub fn new(rng: &mut SmallRng) -> Self {
        Self::with_campaigns(rng, CAMPAIGNS)
    }

    /// Draws all ids from `rng`, with `campaigns` campaigns of [`ADS_PER_CAMPAIGN`] ads each
    /// (the CPU-efficiency paper's state-size experiment: 1k-16k campaigns). With [`CAMPAIGNS`] it
    /// draws what [`Ids::new`] draws.
    pub fn with_campaigns(rng: &mut SmallRng, campaigns: usize) -> Self {
        let mut n = |k: usize| (0..k).map(|_| uuid(rng)).collect::<Vec<_>>();
        Ids {
            campaigns: n(campaigns),
            ads: n(campaigns * ADS_PER_CAMPAIGN),
            users: n(USERS),
            pages: n(USERS),
        }
    }

    /// The ad -> campaign table, one `{ "AD": "CAMPAIGN"}` per line (the original's layout).
    pub fn ad_campaigns(&self) -> String {
        let mut s = String::new();
        for (i, ad) in self.ads.iter().enumerate() {
            let c = &self.campaigns[i / ADS_PER_CAMPAIGN];
            s.push_str(&format!("{{ \"{ad}\": \"{c}\"}}\n"));
        }
        s
    }
}

/// Draws the event due at `due_ms` (the original's `make-kafka-event-at`).
pub fn event_at<'a>(
    rng: &mut SmallRng,
    ids: &'a Ids,
    due_ms: u64,
    with_skew: bool,
) -> Event<&'a str> {
    let pick = |rng: &mut SmallRng, v: &'a [String]| v[rng.random_range(0..v.len())].as_str();
    let (user_id, page_id, ad_id) = (
        pick(rng, &ids.users),
        pick(rng, &ids.pages),
        pick(rng, &ids.ads),
    );
    let ad_type = AD_TYPES[rng.random_range(0..AD_TYPES.len())];
    let event_type = EventType::ALL[rng.random_range(0..3)];
    let mut t = due_ms;
    if with_skew {
        t = (t + 50).saturating_sub(rng.random_range(0..100));
        if rng.random_range(0..100_000) == 0 {
            t = t.saturating_sub(rng.random_range(0..60_000));
        }
    }
    Event {
        user_id,
        page_id,
        ad_id,
        ad_type,
        event_type,
        event_time: t,
        ip_address: "1.2.3.4",
    }
}

/// When event `n` is due at `rate` events/s from `start_ms`, ms.
pub fn due_ms(start_ms: u64, n: u64, rate: u64) -> u64 {
    start_ms + (n as u128 * 1000 / rate as u128) as u64
}

/// What `xorflow-lab ysb generate` is told.
#[derive(Clone, Debug)]
pub struct GenerateConfig {
    /// Events to write.
    pub events: u64,
    /// Events per second of event time.
    pub rate: u64,
    /// Skew and late events, as the original's `--with-skew`.
    pub with_skew: bool,
    /// Seed of the ids and the draws.
    pub seed: u64,
    /// Due time of the first event, ms since the epoch.
    pub start_ms: u64,
    /// The events file.
    pub events_path: PathBuf,
    /// The ad -> campaign file.
    pub ad_campaigns_path: PathBuf,
    /// Campaigns (the original: [`CAMPAIGNS`]), each with [`ADS_PER_CAMPAIGN`] ads.
    pub campaigns: usize,
}

/// Writes the events file and the ad -> campaign file (each complete or not at all), and the
/// original's `campaign-ids.txt` and `ad-ids.txt` beside the latter.
///
/// # Errors
/// A rate of 0, two paths naming one file, or a file that cannot be written.
pub fn write(cfg: &GenerateConfig) -> Result<(), String> {
    if cfg.rate == 0 {
        return Err("--rate must be at least 1 event/s".into());
    }
    if cfg.campaigns == 0 {
        return Err("--campaigns must be at least 1".into());
    }
    let dir = cfg
        .ad_campaigns_path
        .parent()
        .unwrap_or(std::path::Path::new(""))
        .to_path_buf();
    let (campaign_ids, ad_ids) = (dir.join("campaign-ids.txt"), dir.join("ad-ids.txt"));
    check_distinct(&[
        ("--output", &cfg.events_path),
        ("--ad-campaigns", &cfg.ad_campaigns_path),
        ("campaign-ids.txt", &campaign_ids),
        ("ad-ids.txt", &ad_ids),
    ])?;
    let mut rng = SmallRng::seed_from_u64(cfg.seed);
    let ids = Ids::with_campaigns(&mut rng, cfg.campaigns);
    let events = PendingFile::create(&cfg.events_path, "events")?;
    let err = |e: std::io::Error| format!("cannot write '{}': {e}", cfg.events_path.display());
    let mut w = std::io::BufWriter::with_capacity(1 << 20, events.file()?);
    for n in 0..cfg.events {
        let e = event_at(
            &mut rng,
            &ids,
            due_ms(cfg.start_ms, n, cfg.rate),
            cfg.with_skew,
        );
        writeln!(w, "{}", e.to_json()).map_err(err)?;
    }
    w.flush().map_err(err)?;
    drop(w);
    let small = [
        (&cfg.ad_campaigns_path, ids.ad_campaigns()),
        (&campaign_ids, ids.campaigns.join("\n") + "\n"),
        (&ad_ids, ids.ads.join("\n") + "\n"),
    ];
    let mut pending = vec![events];
    for (path, text) in small {
        let f = PendingFile::create(path, "ids")?;
        f.file()?
            .write_all(text.as_bytes())
            .map_err(|e| format!("cannot write '{}': {e}", path.display()))?;
        pending.push(f);
    }
    pending.into_iter().try_for_each(PendingFile::commit)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::campaigns::Campaigns;

    #[test]
    fn ids_and_table_have_the_original_shape() {
        let ids = Ids::new(&mut SmallRng::seed_from_u64(7));
        let c = Campaigns::parse(&ids.ad_campaigns()).unwrap();
        assert_eq!((c.ids.len(), c.ads()), (100, 1000));
        assert_eq!(c.of(&ids.ads[15]), Some(1));
        let u = &ids.users[0];
        assert_eq!((u.len(), &u[14..15]), (36, "4"), "{u}");
        assert!(matches!(&u[19..20], "8" | "9" | "a" | "b"), "{u}");
    }

    #[test]
    fn events_are_due_on_schedule_and_skew_stays_in_its_bounds() {
        let ids = Ids::new(&mut SmallRng::seed_from_u64(1));
        let mut rng = SmallRng::seed_from_u64(2);
        let (mut views, mut late) = (0, 0);
        for n in 0..300_000u64 {
            let due = due_ms(1_000_000, n, 1000);
            assert_eq!(event_at(&mut rng, &ids, due, false).event_time, due);
            let t = event_at(&mut rng, &ids, due, true);
            assert!(t.event_time <= due + 50 && t.event_time + 60_049 >= due);
            late += u64::from(t.event_time + 49 < due);
            views += u64::from(t.event_type == EventType::View);
        }
        assert_eq!(due_ms(0, 3, 7), 428);
        // A third are views; late events are rare (expected 3 in 300,000).
        assert!((90_000..110_000).contains(&views), "{views}");
        assert!(late <= 20, "{late}");
    }
}
