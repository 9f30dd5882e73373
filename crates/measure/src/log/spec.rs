//! Handler specs: the run-time name (and arguments) of a channel's handler (the Cloudprofiler
//! paper, sec. 5.1; docs/papers.md).

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// Which handler a channel uses, parsed from a spec string at run time (no rebuild needed).
///
/// Syntax (ASCII, no spaces):
///
/// | spec | handler | what is written |
/// |---|---|---|
/// | `null` | discards every call | nothing (no file) |
/// | `id` | every call, uncompressed blocks (the paper's "Buf. ID bin") | `(id, ticks)` per call |
/// | `buffered` | every call, zstd-compressed blocks (the paper's "Buf. ID zstd") | `(id, ticks)` per call |
/// | `counter` or `counter:PERIOD` | periodic counter (PERIOD in humantime form, `1s`, `100ms`; default 1s) | `(ticks, calls so far)` per period and at close |
/// | `xoy:X/Y` | XoY sampling: calls whose `id % Y < X` (0 <= X <= Y, Y >= 1) | `(id, ticks)` per kept call |
/// | `downsample:N` | calls number 0, N, 2N, ... of this channel (N >= 1) | `(id, ticks)` per kept call |
/// | `first-last` | the first and the last call | at most two `(id, ticks)` |
/// | `ret` | ReT baseline: `ret_start`/`ret_end`/`ret_rtt` calls | `(kind, id, ticks)` per call |
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HandlerSpec {
    /// Discard everything.
    Null,
    /// Every call, uncompressed.
    Id,
    /// Every call, zstd-compressed on the writer thread.
    Buffered,
    /// Calls counted; a sample `(ticks, total)` every `period`.
    Counter { period: Duration },
    /// Keep the calls with `id % y < x`.
    XoY { x: u64, y: u64 },
    /// Keep every `n`-th call (calls 0, n, 2n, ...).
    Downsample { n: u64 },
    /// The first and the last call.
    FirstLast,
    /// ReT start/end/round-trip records.
    Ret,
}

/// A spec string that does not parse; `spec` is the offending text, `reason` says why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("bad log handler spec {spec:?}: {reason}")]
pub struct SpecError {
    /// The text that failed to parse.
    pub spec: String,
    /// What is wrong with it.
    pub reason: String,
}

impl SpecError {
    pub(crate) fn new(spec: &str, reason: impl Into<String>) -> SpecError {
        SpecError {
            spec: spec.to_string(),
            reason: reason.into(),
        }
    }
}

impl FromStr for HandlerSpec {
    type Err = SpecError;

    fn from_str(s: &str) -> Result<HandlerSpec, SpecError> {
        let (name, arg) = match s.split_once(':') {
            Some((n, a)) => (n, Some(a)),
            None => (s, None),
        };
        let no_arg = |spec: HandlerSpec| match arg {
            None => Ok(spec),
            Some(_) => Err(SpecError::new(s, format!("`{name}` takes no argument"))),
        };
        match name {
            "null" => no_arg(HandlerSpec::Null),
            "id" => no_arg(HandlerSpec::Id),
            "buffered" => no_arg(HandlerSpec::Buffered),
            "first-last" => no_arg(HandlerSpec::FirstLast),
            "ret" => no_arg(HandlerSpec::Ret),
            "counter" => parse_counter(s, arg),
            "xoy" => parse_xoy(s, arg),
            "downsample" => {
                let n = parse_u64(s, arg.unwrap_or(""), "N in downsample:N")?;
                if n == 0 {
                    return Err(SpecError::new(s, "N in downsample:N must be at least 1"));
                }
                Ok(HandlerSpec::Downsample { n })
            }
            _ => Err(SpecError::new(
                s,
                "unknown handler; expected null, id, buffered, counter[:PERIOD], xoy:X/Y, \
                 downsample:N, first-last or ret",
            )),
        }
    }
}

fn parse_counter(s: &str, arg: Option<&str>) -> Result<HandlerSpec, SpecError> {
    let period = match arg {
        None => Duration::from_secs(1),
        Some(a) => humantime::parse_duration(a)
            .map_err(|e| SpecError::new(s, format!("PERIOD in counter:PERIOD: {e}")))?,
    };
    if period < Duration::from_millis(1) {
        return Err(SpecError::new(
            s,
            "PERIOD in counter:PERIOD must be at least 1ms",
        ));
    }
    Ok(HandlerSpec::Counter { period })
}

fn parse_xoy(s: &str, arg: Option<&str>) -> Result<HandlerSpec, SpecError> {
    let Some((x, y)) = arg.and_then(|a| a.split_once('/')) else {
        return Err(SpecError::new(s, "expected xoy:X/Y, e.g. xoy:1/64"));
    };
    let x = parse_u64(s, x, "X in xoy:X/Y")?;
    let y = parse_u64(s, y, "Y in xoy:X/Y")?;
    if y == 0 || x > y {
        return Err(SpecError::new(s, "xoy:X/Y needs Y >= 1 and X <= Y"));
    }
    Ok(HandlerSpec::XoY { x, y })
}

fn parse_u64(s: &str, text: &str, what: &str) -> Result<u64, SpecError> {
    text.parse::<u64>().map_err(|_| {
        SpecError::new(
            s,
            format!("{what} must be an unsigned integer, got {text:?}"),
        )
    })
}

impl fmt::Display for HandlerSpec {
    /// The canonical spec string; parsing it gives the same spec back.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HandlerSpec::Null => f.write_str("null"),
            HandlerSpec::Id => f.write_str("id"),
            HandlerSpec::Buffered => f.write_str("buffered"),
            HandlerSpec::Counter { period } => {
                write!(f, "counter:{}", humantime::format_duration(*period))
            }
            HandlerSpec::XoY { x, y } => write!(f, "xoy:{x}/{y}"),
            HandlerSpec::Downsample { n } => write!(f, "downsample:{n}"),
            HandlerSpec::FirstLast => f.write_str("first-last"),
            HandlerSpec::Ret => f.write_str("ret"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_handler_parses_and_prints_back() {
        for s in [
            "null",
            "id",
            "buffered",
            "counter:1s",
            "counter:250ms",
            "xoy:1/100",
            "xoy:0/1",
            "downsample:1000",
            "first-last",
            "ret",
        ] {
            let spec: HandlerSpec = s.parse().unwrap();
            assert_eq!(spec.to_string(), s);
            assert_eq!(spec.to_string().parse::<HandlerSpec>().unwrap(), spec);
        }
        assert_eq!(
            "counter".parse::<HandlerSpec>().unwrap(),
            HandlerSpec::Counter {
                period: Duration::from_secs(1)
            }
        );
    }

    #[test]
    fn bad_specs_name_the_text_and_the_reason() {
        for (s, reason) in [
            ("nul", "unknown handler"),
            ("xoy:3/2", "X <= Y"),
            ("xoy:1/0", "Y >= 1"),
            ("xoy:1", "expected xoy:X/Y"),
            ("xoy:a/2", "X in xoy:X/Y"),
            ("downsample:0", "at least 1"),
            ("downsample", "N in downsample:N"),
            ("counter:fast", "PERIOD"),
            ("counter:0s", "at least 1ms"),
            ("null:1", "takes no argument"),
        ] {
            let err = s.parse::<HandlerSpec>().unwrap_err();
            assert_eq!(err.spec, s);
            assert!(err.to_string().contains(reason), "{s}: {err}");
        }
    }
}
