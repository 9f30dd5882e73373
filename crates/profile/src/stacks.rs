//! Parsing `perf script` text into stack samples.
//!
//! The text is what [`crate::perf::script_command`] asks for (`-F comm,pid,tid,period,event,ip,
//! sym,dso`): per sample a header line `COMM PID/TID PERIOD EVENT:` (the thread name may hold
//! spaces, as JVM threads' do), then one line per frame, leaf first, `IP SYMBOL (MODULE)`, and a
//! blank line. With `--inline`, inlined functions come as frames of module `inlined` at the
//! address of the real frame that follows them.

use std::io::BufRead;

/// One frame: function and module file name.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Frame {
    /// Demangled function name, `[unknown]` when perf could not resolve it.
    pub function: String,
    /// File name of the executable or library (`xorflow`, `libc.so.6`, `[kernel.kallsyms]`,
    /// `perf-PID.map` for JIT code); for an inlined frame, that of the frame it was inlined into.
    pub module: String,
}

/// One sample.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sample {
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// The thread's name (at most 15 bytes on Linux).
    pub comm: String,
    /// The sample's period: ns of CPU for `cpu-clock`.
    pub period: u64,
    /// Frames, leaf first.
    pub frames: Vec<Frame>,
}

/// What `perf script` reports: samples, and (with `--show-task-events`) the programs that
/// processes exec, which name them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Record {
    /// A stack sample.
    Sample(Sample),
    /// Process `pid` exec'd the program `name` (its thread name from then on).
    Exec {
        /// Process id.
        pid: u32,
        /// The program's name (at most 15 bytes).
        name: String,
    },
}

/// A line that is neither a header, a frame nor blank.
#[derive(Debug, thiserror::Error)]
#[error("perf script output line {line}: {message}: '{text}'")]
pub struct ParseError {
    /// 1-based line number.
    pub line: usize,
    /// What was expected.
    pub message: String,
    /// The line (cut to 200 bytes).
    pub text: String,
}

/// Reads every sample and exec of `perf script` text from `input`, calling `each` with it. Other
/// task events (`PERF_RECORD_FORK`, `_EXIT`, thread renames) are skipped.
///
/// # Errors
/// The first malformed line ([`ParseError`]), or a read error (as a `ParseError` naming it).
pub fn parse<R: BufRead>(input: R, mut each: impl FnMut(Record)) -> Result<(), ParseError> {
    let mut current: Option<Sample> = None;
    let mut last_ip = String::new();
    for (i, line) in input.lines().enumerate() {
        let n = i + 1;
        let line = line.map_err(|e| ParseError {
            line: n,
            message: format!("cannot read: {e}"),
            text: String::new(),
        })?;
        if line.trim().is_empty() {
            if let Some(s) = current.take() {
                each(Record::Sample(finish(s)));
            }
            continue;
        }
        if let Some(at) = line.find(" PERF_RECORD_") {
            if let Some(s) = current.take() {
                each(Record::Sample(finish(s)));
            }
            if let Some(e) = exec(&line[at + 1..]) {
                each(e);
            }
            continue;
        }
        let bad = |message: &str| ParseError {
            line: n,
            message: message.to_string(),
            text: line.chars().take(200).collect(),
        };
        if line.starts_with(char::is_whitespace) {
            let s = current
                .as_mut()
                .ok_or_else(|| bad("a frame before any sample header"))?;
            let (ip, frame) = frame(&line).ok_or_else(|| bad("expected 'IP SYMBOL (MODULE)'"))?;
            // perf repeats a frame whose address resolves to itself through the inline lookup.
            let repeated = ip == last_ip && s.frames.last() == Some(&frame);
            if !repeated {
                s.frames.push(frame);
            }
            last_ip = ip.to_string();
        } else {
            if let Some(s) = current.take() {
                each(Record::Sample(finish(s)));
            }
            current =
                Some(header(&line).ok_or_else(|| bad("expected 'COMM PID/TID PERIOD EVENT:'"))?);
            last_ip.clear();
        }
    }
    if let Some(s) = current.take() {
        each(Record::Sample(finish(s)));
    }
    Ok(())
}

/// `PERF_RECORD_COMM exec: NAME:PID/TID` (NAME may hold ':').
fn exec(event: &str) -> Option<Record> {
    let rest = event.strip_prefix("PERF_RECORD_COMM exec: ")?;
    let (name, ids) = rest.trim_end().rsplit_once(':')?;
    let pid = ids.split_once('/')?.0.parse().ok()?;
    Some(Record::Exec {
        pid,
        name: name.to_string(),
    })
}

/// An inlined frame takes the module of the real frame below it (towards the root).
fn finish(mut s: Sample) -> Sample {
    let mut module = String::new();
    for f in s.frames.iter_mut().rev() {
        if f.module == "inlined" {
            if !module.is_empty() {
                f.module.clone_from(&module);
            }
        } else {
            module.clone_from(&f.module);
        }
    }
    s
}

/// `COMM PID/TID PERIOD EVENT:`, read from the right because COMM may hold spaces.
fn header(line: &str) -> Option<Sample> {
    let mut rest = line.trim_end();
    let take = |rest: &mut &str| -> Option<String> {
        let cut = rest.rfind(char::is_whitespace)?;
        let word = rest[cut..].trim().to_string();
        *rest = rest[..cut].trim_end();
        Some(word)
    };
    let event = take(&mut rest)?;
    if !event.ends_with(':') {
        return None;
    }
    let period: u64 = take(&mut rest)?.parse().ok()?;
    let ids = take(&mut rest)?;
    let (pid, tid) = ids.split_once('/')?;
    Some(Sample {
        pid: pid.parse().ok()?,
        tid: tid.parse().ok()?,
        comm: rest.trim().to_string(),
        period,
        frames: Vec::new(),
    })
}

/// `IP SYMBOL (MODULE)`: the module is the last parenthesised group, since Rust and C++ symbols
/// may hold parentheses and spaces themselves.
fn frame(line: &str) -> Option<(&str, Frame)> {
    let line = line.trim();
    let (ip, rest) = line.split_once(' ')?;
    if ip.is_empty() || !ip.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let rest = rest.trim_start();
    let (function, module) = match rest
        .strip_suffix(')')
        .and_then(|r| r.rfind(" (").map(|c| (r, c)))
    {
        Some((r, cut)) => (&r[..cut], &r[cut + 2..]),
        None => (rest, "[unknown]"),
    };
    let module = module.rsplit('/').next().unwrap_or(module);
    let function = function.trim();
    let function = if module.starts_with("perf-") && module.ends_with(".map") {
        jit_name(function)
    } else {
        function
    };
    Some((
        ip,
        Frame {
            function: function.to_string(),
            module: module.to_string(),
        },
    ))
}

/// A JIT-compiled method as the JVM's perf map names it, `RETURN package.Class.method(ARGS)`,
/// cut to `package.Class.method`: keywords then match the method, not its argument types.
/// Other names (`Interpreter`, `StubRoutines (1)`) are kept.
pub fn jit_name(name: &str) -> &str {
    // A method's '(' follows its name directly; `StubRoutines (1)` has a space before it.
    match name.find('(') {
        Some(open) if name.ends_with(')') && open > 0 && !name[..open].ends_with(' ') => {
            let head = &name[..open];
            head.rsplit(' ').next().unwrap_or(head)
        }
        _ => name,
    }
}

/// Thread entry points: a stack whose root frame is one of these was unwound completely.
pub const ROOTS: [&str; 6] = [
    "_start",
    "__libc_start_main",
    "__libc_start_call_main",
    "start_thread",
    "clone",
    "clone3",
];

/// True when the stack reaches a thread entry point ([`ROOTS`]), i.e. it was not cut short by
/// missing frame pointers or dwarf unwinding's stack copy. Unresolved frames at the root are
/// skipped first (perf adds a `[unknown]` end marker after some dwarf stacks).
pub fn is_complete(frames: &[Frame]) -> bool {
    frames
        .iter()
        .rev()
        .find(|f| f.function != "[unknown]")
        .is_some_and(|f| ROOTS.contains(&f.function.as_str()))
}

#[cfg(test)]
mod tests;
