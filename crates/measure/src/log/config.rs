//! Which handler each channel name gets: pattern rules, a default, and the output directory.

use std::path::{Path, PathBuf};
use std::str::FromStr;

use super::spec::{HandlerSpec, SpecError};

/// Maps channel names to handler specs (the Cloudprofiler paper, sec. 5.1, "Online Handler
/// Configuration": the handler is looked up by the channel's name when it opens), plus the
/// directory of the files.
///
/// String form (what `--log SPEC` takes): comma-separated `PATTERN=HANDLER` rules, for example
/// `window.*=xoy:1/64,source.emit=buffered,default=null`. A pattern is a channel name in which
/// `*` stands for any run of characters (possibly empty); the first matching rule wins, and
/// `default=HANDLER` (at most once, anywhere in the list) applies when none matches. Without it
/// the default is `null`. A bare `HANDLER` with no `=` is short for `default=HANDLER`. The empty
/// string means "everything null". Handler syntax: [`HandlerSpec`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogConfig {
    rules: Vec<(String, HandlerSpec)>,
    default: HandlerSpec,
    dir: PathBuf,
}

impl LogConfig {
    /// The default output directory, relative to the working directory: `logs`.
    pub const DEFAULT_DIR: &'static str = "logs";

    /// Every channel null; files (none) in [`Self::DEFAULT_DIR`].
    pub fn null() -> LogConfig {
        LogConfig {
            rules: Vec::new(),
            default: HandlerSpec::Null,
            dir: PathBuf::from(Self::DEFAULT_DIR),
        }
    }

    /// Parses the string form (see the type's doc). Errors name the offending rule or handler.
    pub fn parse(s: &str) -> Result<LogConfig, SpecError> {
        let mut config = LogConfig::null();
        let mut default_seen = false;
        for rule in s.split(',').filter(|r| !r.is_empty()) {
            let (pattern, handler) = match rule.split_once('=') {
                Some((p, h)) => (p, h),
                None => ("default", rule),
            };
            let spec: HandlerSpec = handler.parse()?;
            if pattern == "default" {
                if default_seen {
                    return Err(SpecError::new(rule, "default given twice"));
                }
                default_seen = true;
                config.default = spec;
            } else {
                check_pattern(rule, pattern)?;
                config.rules.push((pattern.to_string(), spec));
            }
        }
        Ok(config)
    }

    /// The same rules, writing files in `dir` (created when the first file opens).
    pub fn with_dir(mut self, dir: impl Into<PathBuf>) -> LogConfig {
        self.dir = dir.into();
        self
    }

    /// The output directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The handler of channel `name`: the first matching rule's, else the default.
    pub fn handler_for(&self, name: &str) -> &HandlerSpec {
        self.rules
            .iter()
            .find(|(p, _)| glob_match(p.as_bytes(), name.as_bytes()))
            .map_or(&self.default, |(_, s)| s)
    }
}

impl FromStr for LogConfig {
    type Err = SpecError;

    fn from_str(s: &str) -> Result<LogConfig, SpecError> {
        LogConfig::parse(s)
    }
}

impl Default for LogConfig {
    fn default() -> LogConfig {
        LogConfig::null()
    }
}

fn check_pattern(rule: &str, pattern: &str) -> Result<(), SpecError> {
    if pattern.is_empty() {
        return Err(SpecError::new(rule, "empty channel pattern before `=`"));
    }
    if let Some(c) = pattern.chars().find(|&c| c != '*' && !is_name_char(c)) {
        return Err(SpecError::new(
            rule,
            format!("character {c:?} in a channel pattern (allowed: A-Z a-z 0-9 . _ - and *)"),
        ));
    }
    Ok(())
}

/// The characters allowed in channel names (they become part of file names).
pub(crate) fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')
}

/// `*` matches any run of bytes; everything else matches itself. Iterative with one backtrack
/// point, so no pattern takes more than O(len(pattern) * len(name)).
fn glob_match(pattern: &[u8], name: &[u8]) -> bool {
    let (mut p, mut n) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while n < name.len() {
        if p < pattern.len() && pattern[p] == b'*' {
            star = Some((p, n));
            p += 1;
        } else if p < pattern.len() && pattern[p] == name[n] {
            p += 1;
            n += 1;
        } else if let Some((sp, sn)) = star {
            p = sp + 1;
            n = sn + 1;
            star = Some((sp, sn + 1));
        } else {
            return false;
        }
    }
    pattern[p..].iter().all(|&c| c == b'*')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_matching_rule_wins_and_default_applies_otherwise() {
        let c =
            LogConfig::parse("window.*=xoy:1/64,window.emit=id,*.sink=counter,default=buffered")
                .unwrap();
        assert_eq!(
            c.handler_for("window.emit"),
            &HandlerSpec::XoY { x: 1, y: 64 }
        );
        assert!(matches!(
            c.handler_for("a.sink"),
            HandlerSpec::Counter { .. }
        ));
        assert_eq!(c.handler_for("source"), &HandlerSpec::Buffered);
        assert_eq!(
            LogConfig::parse("").unwrap().handler_for("x"),
            &HandlerSpec::Null
        );
        assert_eq!(
            LogConfig::parse("id").unwrap().handler_for("x"),
            &HandlerSpec::Id
        );
    }

    #[test]
    fn glob_handles_stars_anywhere() {
        assert!(glob_match(b"*", b""));
        assert!(glob_match(b"a*b*c", b"axxbyyc"));
        assert!(glob_match(b"a*c", b"abcbc"));
        assert!(!glob_match(b"a*c", b"abcb"));
        assert!(!glob_match(b"window.*", b"window"));
        assert!(glob_match(b"window.*", b"window."));
    }

    #[test]
    fn bad_rules_are_named() {
        let e = LogConfig::parse("window.*=xoy:5/2").unwrap_err();
        assert_eq!(e.spec, "xoy:5/2");
        let e = LogConfig::parse("a/b=id").unwrap_err();
        assert_eq!(e.spec, "a/b=id");
        let e = LogConfig::parse("null,default=id").unwrap_err();
        assert!(e.reason.contains("twice"));
        let e = LogConfig::parse("=id").unwrap_err();
        assert!(e.reason.contains("empty"));
    }
}
