//! The ad -> campaign table: the original's `ad-to-campaign-ids.txt`, one `{ "AD": "CAMPAIGN"}`
//! per line (100 campaigns of 10 ads each when generated). The original job reads it from
//! Redis; here it is an in-memory table shared by the join's instances.

use crate::ad_id::AdId;
use rustc_hash::FxHashMap;
use std::path::Path;

/// Campaigns and the index of each ad's campaign.
#[derive(Debug, Default)]
pub struct Campaigns {
    /// Campaign ids, in order of first appearance in the file.
    pub ids: Vec<String>,
    /// Ad id -> index into `ids`.
    ads: FxHashMap<AdId, u32>,
}

impl Campaigns {
    /// Reads `path`.
    ///
    /// # Errors
    /// The file cannot be read, or a line (1-based number given) is not a JSON object of one
    /// string -> string entry, or names an ad already mapped to another campaign, or the file
    /// maps no ad at all. Empty lines are allowed.
    pub fn read(path: &Path) -> Result<Self, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read --ad-campaigns '{}': {e}", path.display()))?;
        Self::parse(&text).map_err(|e| format!("--ad-campaigns '{}': {e}", path.display()))
    }

    /// Parses the file's text (see [`Campaigns::read`]).
    ///
    /// # Errors
    /// As [`Campaigns::read`].
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut c = Campaigns::default();
        let mut index: FxHashMap<String, u32> = FxHashMap::default();
        for (i, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let map: std::collections::BTreeMap<String, String> = serde_json::from_str(line)
                .map_err(|e| {
                    format!("line {}: not a {{\"AD\": \"CAMPAIGN\"}} object: {e}", i + 1)
                })?;
            let mut entries = map.into_iter();
            let (Some((ad, campaign)), None) = (entries.next(), entries.next()) else {
                return Err(format!(
                    "line {}: expected exactly one ad -> campaign entry",
                    i + 1
                ));
            };
            let next = c.ids.len() as u32;
            let k = *index.entry(campaign.clone()).or_insert(next);
            if k == next {
                c.ids.push(campaign);
            }
            if let Some(old) = c.ads.insert(AdId::new(&ad), k) {
                if old != k {
                    return Err(format!(
                        "line {}: ad {ad} is mapped to two campaigns ({} and {})",
                        i + 1,
                        c.ids[old as usize],
                        c.ids[k as usize]
                    ));
                }
            }
        }
        if c.ads.is_empty() {
            return Err("maps no ad to a campaign".into());
        }
        Ok(c)
    }

    /// The index of `ad`'s campaign in [`Campaigns::ids`], if the table has the ad.
    pub fn of(&self, ad: &str) -> Option<u32> {
        self.of_id(&AdId::new(ad))
    }

    /// [`Campaigns::of`] for an id already read.
    pub fn of_id(&self, ad: &AdId) -> Option<u32> {
        self.ads.get(ad).copied()
    }

    /// Number of ads mapped.
    pub fn ads(&self) -> usize {
        self.ads.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_original_layout() {
        let c = Campaigns::parse("{ \"a1\": \"c1\"}\n{ \"a2\": \"c1\"}\n\n{ \"a3\": \"c2\"}\n")
            .unwrap();
        assert_eq!(c.ids, ["c1", "c2"]);
        assert_eq!(
            (c.of("a1"), c.of("a2"), c.of("a3"), c.of("a4")),
            (Some(0), Some(0), Some(1), None)
        );
        assert_eq!(c.ads(), 3);
    }

    #[test]
    fn refuses_bad_tables_naming_the_line() {
        for (text, why) in [
            ("", "maps no ad"),
            ("{ \"a1\": \"c1\"}\nnot json\n", "line 2"),
            ("{ \"a1\": \"c1\", \"a2\": \"c2\"}\n", "exactly one"),
            ("{}\n", "exactly one"),
            ("{ \"a1\": 5}\n", "line 1"),
            ("{ \"a1\": \"c1\"}\n{ \"a1\": \"c2\"}\n", "two campaigns"),
        ] {
            let e = Campaigns::parse(text).unwrap_err();
            assert!(e.contains(why), "{text:?}: {e}");
        }
    }
}
