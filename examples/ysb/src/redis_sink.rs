//! The optional Redis sink (`xorflow-lab run ysb --redis redis://HOST:PORT`): every window result
//! written into a redis-server in the layout of the original benchmark's
//! `CampaignProcessorCommon.writeWindow` (yahoo/streaming-benchmarks,
//! `streaming-benchmark-common`), so the original's tooling (`setup.core`'s `--check` and
//! `--get-stats`) reads xorflow's results:
//!
//! ```text
//! HASH  <campaign>        <window_start_ms> -> <window id>   (a random UUID, made once)
//!                         "windows"         -> <list id>     (a random UUID, made once)
//! LIST  <list id>         LPUSH <window_start_ms>, once per window
//! HASH  <window id>       "seen_count"      HINCRBY views
//!                         "time_updated"    ms since the epoch of the write
//! LIST  "time_updated"    LPUSH the same ms, once per write
//! SET   "campaigns"       SADD <campaign> (the original's setup `-n` writes it; --get-stats
//!                         reads the campaigns from it)
//! ```
//!
//! The original flushes partial counts every second and adds them up with HINCRBY; xorflow
//! writes each (campaign, window) once, when the window closes, so `time_updated -
//! window_start` is the original's latency of the final count. A second run into the same
//! database adds to the same windows' `seen_count`, as the original's would: start from an empty
//! database (`FLUSHALL`) to compare counts.

use std::time::Duration;

/// How long connecting, and each reply, may take before the write fails.
pub const TIMEOUT: Duration = Duration::from_secs(5);

/// A connection writing windows in the module doc's layout.
pub struct RedisWindows {
    /// The address as shown in messages (without a password).
    shown: String,
    con: redis::Connection,
    /// Campaign -> the id of its "windows" list, once read or made.
    lists: rustc_hash::FxHashMap<String, String>,
    /// Windows written.
    written: u64,
    /// The first write that failed, and why.
    failure: Option<String>,
}

impl RedisWindows {
    /// Connects to `url` (`redis://[:PASSWORD@]HOST:PORT[/DB]`) within [`TIMEOUT`] and checks
    /// that the server answers (PING).
    ///
    /// # Errors
    /// A malformed address; no server there, a refused connection, a server that wants a
    /// password or does not answer: each naming the address.
    pub fn connect(url: &str) -> Result<Self, String> {
        let shown = without_password(url);
        let client = redis::Client::open(url)
            .map_err(|e| format!("--redis '{shown}' is not a Redis address: {e}"))?;
        let fail = |e: redis::RedisError| format!("cannot use Redis at {shown}: {e}");
        let mut con = client.get_connection_with_timeout(TIMEOUT).map_err(fail)?;
        con.set_read_timeout(Some(TIMEOUT)).map_err(fail)?;
        con.set_write_timeout(Some(TIMEOUT)).map_err(fail)?;
        redis::cmd("PING").exec(&mut con).map_err(fail)?;
        Ok(RedisWindows {
            shown,
            con,
            lists: Default::default(),
            written: 0,
            failure: None,
        })
    }

    /// Writes one window result: `views` views of `campaign` in the window starting at
    /// `window_start_ms`, at wall-clock time `now_ms` (ms since the epoch). Two round trips
    /// (three for a campaign's first window in this process).
    ///
    /// # Errors
    /// The server refuses a command (out of memory, read-only) or the connection fails, naming
    /// the address, the campaign and the window.
    pub fn write(
        &mut self,
        campaign: &str,
        window_start_ms: u64,
        views: u64,
        now_ms: u64,
    ) -> Result<(), String> {
        if let Some(f) = &self.failure {
            return Err(f.clone());
        }
        match self.write_inner(campaign, window_start_ms, views, now_ms) {
            Ok(()) => {
                self.written += 1;
                Ok(())
            }
            Err(e) => {
                let f = format!(
                    "Redis at {}: cannot write window {window_start_ms} of campaign {campaign}: \
                     {e}",
                    self.shown
                );
                self.failure = Some(f.clone());
                Err(f)
            }
        }
    }

    /// Windows written so far.
    pub fn written(&self) -> u64 {
        self.written
    }

    /// The first write that failed, and why (later writes are refused with it).
    pub fn failure(&self) -> Option<&str> {
        self.failure.as_deref()
    }

    fn write_inner(
        &mut self,
        campaign: &str,
        start: u64,
        views: u64,
        now_ms: u64,
    ) -> redis::RedisResult<()> {
        let window: Option<String> = redis::cmd("HGET")
            .arg(campaign)
            .arg(start)
            .query(&mut self.con)?;
        let mut p = redis::pipe();
        let window = match window {
            Some(w) => w,
            None => {
                let w = crate::generate::uuid(&mut rand::rng());
                let list = self.list_of(campaign)?;
                p.cmd("HSET").arg(campaign).arg(start).arg(&w);
                p.cmd("LPUSH").arg(list).arg(start);
                w
            }
        };
        p.cmd("HINCRBY").arg(&window).arg("seen_count").arg(views);
        p.cmd("HSET").arg(&window).arg("time_updated").arg(now_ms);
        p.cmd("LPUSH").arg("time_updated").arg(now_ms);
        p.exec(&mut self.con)
    }

    /// The id of `campaign`'s "windows" list: cached, read, or made (and the campaign added to
    /// the "campaigns" set).
    fn list_of(&mut self, campaign: &str) -> redis::RedisResult<String> {
        if let Some(l) = self.lists.get(campaign) {
            return Ok(l.clone());
        }
        let found: Option<String> = redis::cmd("HGET")
            .arg(campaign)
            .arg("windows")
            .query(&mut self.con)?;
        let list = match found {
            Some(l) => l,
            None => {
                let l = crate::generate::uuid(&mut rand::rng());
                let mut p = redis::pipe();
                p.cmd("HSET").arg(campaign).arg("windows").arg(&l);
                p.cmd("SADD").arg("campaigns").arg(campaign);
                p.exec(&mut self.con)?;
                l
            }
        };
        self.lists.insert(campaign.to_string(), list.clone());
        Ok(list)
    }
}

/// `url` with the password of `redis://user:password@host` replaced by `***`.
pub fn without_password(url: &str) -> String {
    match (url.split_once("://"), url.rfind('@')) {
        (Some((scheme, rest)), Some(at)) if at > scheme.len() => {
            let user = rest[..at - scheme.len() - 3]
                .split_once(':')
                .map_or("", |(u, _)| u);
            format!("{scheme}://{user}:***@{}", &url[at + 1..])
        }
        _ => url.to_string(),
    }
}

/// Wall-clock now, ms since the Unix epoch (the original's `System.currentTimeMillis()`).
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_have_the_uuid_v4_form_and_passwords_are_not_shown() {
        let id = crate::generate::uuid(&mut rand::rng());
        let parts: Vec<&str> = id.split('-').collect();
        let lens: Vec<usize> = parts.iter().map(|p| p.len()).collect();
        assert_eq!(lens, [8, 4, 4, 4, 12], "{id}");
        assert!(parts[2].starts_with('4'), "{id}");
        assert!(matches!(&parts[3][..1], "8" | "9" | "a" | "b"), "{id}");
        assert_ne!(crate::generate::uuid(&mut rand::rng()), id);
        assert_eq!(
            without_password("redis://:s3cret@10.0.0.1:6379/2"),
            "redis://:***@10.0.0.1:6379/2"
        );
        assert_eq!(
            without_password("redis://me:s3cret@h:1"),
            "redis://me:***@h:1"
        );
        assert_eq!(without_password("redis://h:1"), "redis://h:1");
    }

    #[test]
    fn a_refused_connection_names_the_address() {
        // A port nothing listens on: bound, then released.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .unwrap()
            .port();
        let url = format!("redis://127.0.0.1:{port}");
        let e = RedisWindows::connect(&url).err().unwrap();
        assert!(
            e.starts_with(&format!("cannot use Redis at {url}: ")),
            "{e}"
        );
        let e = RedisWindows::connect("http://x").err().unwrap();
        assert!(e.contains("is not a Redis address"), "{e}");
    }
}
