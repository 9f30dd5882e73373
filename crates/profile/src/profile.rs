//! Application profiles: the ordered keyword -> task rules that map a sampled stack to a
//! streaming task (the CPU-efficiency paper, section 3.3 and its Algorithm 1).
//!
//! A profile is a TOML file of `[[task]]` tables, each a task name and its keywords:
//!
//! ```toml
//! [[task]]
//! name = "serialization"
//! keywords = ["batch_codec::", "postcard::"]
//! ```
//!
//! A keyword is a substring of a frame's function name (case-sensitive); `module:TEXT` is a
//! substring of the frame's module (the file name of its executable or library, e.g.
//! `libc.so.6`, `[kernel.kallsyms]`); `thread:TEXT` a substring of the thread's name.
//!
//! Matching ([`AppProfile::classify`]): the frames are walked from the leaf (where the CPU was)
//! to the root; at each frame the tasks are tried in file order, and the first task with a
//! keyword that matches this frame wins. The thread name counts as one more frame beyond the
//! root, so `thread:` keywords decide only when no frame matched. A stack no keyword matches is
//! [`OTHER`]. Task names may repeat (a task can appear early with specific keywords and again
//! late with generic ones); results are summed by name.

use serde::Deserialize;
use std::path::Path;
use toml::Spanned;

/// The task of stacks that no keyword matches (the CPU-efficiency paper's "unmatched").
pub const OTHER: &str = "other";

/// The profiles shipped in `profiles/`, by the name `--profile` also accepts.
pub const BUILTIN: [(&str, &str); 3] = [
    ("xorflow", include_str!("../../../profiles/xorflow.toml")),
    ("flink", include_str!("../../../profiles/flink.toml")),
    ("storm", include_str!("../../../profiles/storm.toml")),
];

/// Why a profile could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    /// The file cannot be read.
    #[error("cannot read the application profile '{path}': {source}")]
    Read {
        /// The file.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// The file is not a valid profile: bad TOML, an unknown field, an empty name or keyword.
    #[error("{path} line {line}: {message}")]
    Invalid {
        /// The file (or `builtin:NAME`).
        path: String,
        /// 1-based line of the offending item.
        line: usize,
        /// What is wrong.
        message: String,
    },
}

/// What a keyword is matched against.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Keyword {
    /// A substring of the frame's function name.
    Function(String),
    /// `module:TEXT`: a substring of the frame's module file name.
    Module(String),
    /// `thread:TEXT`: a substring of the thread's name.
    Thread(String),
}

/// One `[[task]]` table: a task name and its keywords, in file order.
#[derive(Clone, Debug)]
pub struct Rule {
    /// The task's name.
    pub task: String,
    /// Its keywords.
    pub keywords: Vec<Keyword>,
    /// 1-based line of the table's `name` (for messages).
    pub line: usize,
}

/// One frame of a stack as the matcher sees it.
#[derive(Clone, Copy, Debug)]
pub struct FrameRef<'a> {
    /// Function name (demangled), or `[unknown]`.
    pub function: &'a str,
    /// File name of the module, e.g. `xorflow`, `libc.so.6`, `[kernel.kallsyms]`.
    pub module: &'a str,
}

/// An application profile: rules in file order.
#[derive(Clone, Debug)]
pub struct AppProfile {
    /// Where it came from: a path, or `builtin:NAME`.
    pub source: String,
    /// The rules, in file order.
    pub rules: Vec<Rule>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileDef {
    #[serde(default)]
    #[allow(dead_code)] // documentation for the reader of the file
    description: Option<String>,
    #[serde(default)]
    task: Vec<TaskDef>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TaskDef {
    name: Spanned<String>,
    keywords: Spanned<Vec<Spanned<String>>>,
}

impl AppProfile {
    /// Reads the profile at `spec`: a file, or when no such file exists, a [`BUILTIN`] name.
    ///
    /// # Errors
    /// [`ProfileError::Read`] when `spec` is neither a readable file nor a builtin name;
    /// [`ProfileError::Invalid`] naming the file and line of the first problem.
    pub fn load(spec: &str) -> Result<AppProfile, ProfileError> {
        let path = Path::new(spec);
        if !path.exists() {
            if let Some((name, text)) = BUILTIN.iter().find(|(n, _)| *n == spec) {
                return AppProfile::parse(text, &format!("builtin:{name}"));
            }
        }
        let text = std::fs::read_to_string(path).map_err(|source| ProfileError::Read {
            path: spec.to_string(),
            source,
        })?;
        AppProfile::parse(&text, spec)
    }

    /// Parses profile `text`; `source` names it in errors.
    ///
    /// # Errors
    /// [`ProfileError::Invalid`]: bad TOML, an unknown field, no `[[task]]`, an empty task name,
    /// an empty keyword list, an empty keyword (also after `module:` or `thread:`).
    pub fn parse(text: &str, source: &str) -> Result<AppProfile, ProfileError> {
        let invalid = |at: usize, message: String| ProfileError::Invalid {
            path: source.to_string(),
            line: line_of(text, at),
            message,
        };
        let def: FileDef = toml::from_str(text).map_err(|e| {
            let at = e.span().map_or(0, |s| s.start);
            invalid(at, e.message().trim().to_string())
        })?;
        if def.task.is_empty() {
            return Err(invalid(
                0,
                "no [[task]] tables: a profile needs at least one".into(),
            ));
        }
        let mut rules = Vec::with_capacity(def.task.len());
        for t in def.task {
            let name = t.name.get_ref().trim();
            if name.is_empty() {
                return Err(invalid(t.name.span().start, "empty task name".into()));
            }
            if t.keywords.get_ref().is_empty() {
                return Err(invalid(
                    t.keywords.span().start,
                    format!("task '{name}' has no keywords"),
                ));
            }
            let mut keywords = Vec::new();
            for k in t.keywords.get_ref() {
                keywords.push(
                    keyword(k.get_ref())
                        .map_err(|m| invalid(k.span().start, format!("task '{name}': {m}")))?,
                );
            }
            rules.push(Rule {
                task: name.to_string(),
                keywords,
                line: line_of(text, t.name.span().start),
            });
        }
        Ok(AppProfile {
            source: source.to_string(),
            rules,
        })
    }

    /// Task names in file order, each once, then [`OTHER`] unless a rule already names it.
    pub fn tasks(&self) -> Vec<String> {
        let mut names: Vec<String> = Vec::new();
        for r in &self.rules {
            if !names.contains(&r.task) {
                names.push(r.task.clone());
            }
        }
        if !names.iter().any(|n| n == OTHER) {
            names.push(OTHER.to_string());
        }
        names
    }

    /// The task of a stack: `frames` leaf first, `thread` the thread's name; `None` when no
    /// keyword matches (the caller counts it as [`OTHER`]). See the module docs for the order.
    pub fn classify(&self, frames: &[FrameRef<'_>], thread: &str) -> Option<&str> {
        for f in frames {
            for r in &self.rules {
                if r.keywords.iter().any(|k| matches_frame(k, f)) {
                    return Some(&r.task);
                }
            }
        }
        self.rules
            .iter()
            .find(|r| {
                r.keywords
                    .iter()
                    .any(|k| matches!(k, Keyword::Thread(t) if thread.contains(t.as_str())))
            })
            .map(|r| r.task.as_str())
    }
}

fn matches_frame(k: &Keyword, f: &FrameRef<'_>) -> bool {
    match k {
        Keyword::Function(s) => f.function.contains(s.as_str()),
        Keyword::Module(s) => f.module.contains(s.as_str()),
        Keyword::Thread(_) => false,
    }
}

fn keyword(raw: &str) -> Result<Keyword, String> {
    let (kind, text): (fn(String) -> Keyword, &str) = if let Some(t) = raw.strip_prefix("module:") {
        (Keyword::Module, t)
    } else if let Some(t) = raw.strip_prefix("thread:") {
        (Keyword::Thread, t)
    } else {
        (Keyword::Function, raw)
    };
    if text.is_empty() {
        return Err(format!(
            "empty keyword '{raw}' (it would match every frame)"
        ));
    }
    Ok(kind(text.to_string()))
}

/// 1-based line of byte offset `at` in `text`.
fn line_of(text: &str, at: usize) -> usize {
    let at = at.min(text.len());
    text.as_bytes()[..at]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

#[cfg(test)]
mod tests;
