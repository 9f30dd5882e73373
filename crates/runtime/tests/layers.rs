//! The runtime's modules form layers (docs/design.md, "Layers"): a module may use modules of its
//! own layer and of the layers below, never one above. This test reads every source file of
//! `crates/runtime/src`, finds the modules it uses (`crate::...` and `super::...` paths in code,
//! not in comments or strings; unit tests inside `#[cfg(test)]`, and the files of modules declared
//! under it, are left out, as they may build whole jobs), and fails on an upward use that is not
//! in [`KNOWN`].
//!
//! [`KNOWN`] lists the upward uses the runtime still has, each with what will remove it; the
//! test also fails when one of them is gone, so the list only shrinks.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The layers, bottom first: each a name and the module paths (files or folders under `src/`,
/// without `.rs`) it holds. A file belongs to the longest path that is a prefix of its own.
const LAYERS: &[(&str, &[&str])] = &[
    // What everything may use: option types and their validation, batches, waking.
    ("base", &["config", "error", "batch", "wake", "net/epoll"]),
    // Clocks, counters, latency probes, traffic by kind.
    ("measure", &["measure"]),
    // Processes and hosts: wire format, links, transport, delay.
    ("net", &["net"]),
    // trAcker's glue: flush policy, process acker, tracker shards, frontiers.
    ("progress", &["progress"]),
    // Checkpoint messages, the coordinator, writing and resuming.
    ("checkpoint", &["checkpoint"]),
    // Both ends of an edge (partitioning, batching, send tags), local queues; the narrow
    // handles its sending side takes from a worker.
    ("channel", &["channel"]),
    // What a vertex instance sees of its worker.
    ("context", &["worker/ctx"]),
    // The output port an operator pushes into: its edges and the consumers chained into it.
    ("port", &["port"]),
    // The operator lifecycle and one file per operator kind.
    ("operators", &["operators"]),
    // The worker loop, stepping the vertex instances.
    ("worker", &["worker"]),
    // Getting data in and out: files, part files, rows.
    ("connectors", &["connectors"]),
    // The builder API a job writes.
    ("dataflow", &["dataflow"]),
    // Running a built job; the live metrics server it starts; the report it returns.
    ("execute", &["execute", "measure/cpu_report", "report"]),
    // The crate's face: options as command-line arguments, job errors and options, re-exports.
    ("api", &["args", "job_error", "job_options", "lib"]),
];

/// Upward uses still in the runtime: (the layer prefix of the user, that of the used, what
/// removes it). docs/design.md, "Layers", lists the same.
/// None are left: the last ones went with the option types moving into `config/` (cluster and
/// delay), the wire format's opaque payloads, narrow handles for channels and the tracking mode's
/// rules in `progress/mode.rs`. An entry added here must say what will remove it.
const KNOWN: &[(&str, &str, &str)] = &[];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every `.rs` file under `dir`, as module paths relative to `src/` (`net/link`, `net` for
/// `net/mod.rs`, `lib`).
fn modules(dir: &Path, out: &mut BTreeMap<String, PathBuf>) {
    for e in std::fs::read_dir(dir).expect("src is readable") {
        let p = e.expect("entry").path();
        if p.is_dir() {
            modules(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            let rel = p.strip_prefix(src()).unwrap().with_extension("");
            let mut m = rel.to_string_lossy().replace('\\', "/");
            if let Some(parent) = m.strip_suffix("/mod") {
                m = parent.to_string();
            }
            out.insert(m, p);
        }
    }
}

/// `text` with comments, string and character literals blanked out (same length, lines kept),
/// and the bodies of `#[cfg(test)]` items removed.
fn code_only(text: &str) -> String {
    let b: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(b.len());
    let mut i = 0;
    let blank = |c: char| if c == '\n' { '\n' } else { ' ' };
    while i < b.len() {
        let c = b[i];
        let next = b.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < b.len() && b[i] != '\n' {
                out.push(' ');
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < b.len() {
                if b[i] == '/' && b.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if b[i] == '*' && b.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(blank(b[i]));
                    i += 1;
                }
            }
        } else if c == 'r' && (next == Some('"') || next == Some('#')) && !ident_before(&b, i) {
            // A raw string: r"...", r#"..."#.
            let mut j = i + 1;
            let mut hashes = 0;
            while b.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if b.get(j) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            j += 1;
            loop {
                if j >= b.len() {
                    break;
                }
                if b[j] == '"' && (0..hashes).all(|k| b.get(j + 1 + k) == Some(&'#')) {
                    j += 1 + hashes;
                    break;
                }
                j += 1;
            }
            out.extend(b[i..j.min(b.len())].iter().map(|&c| blank(c)));
            i = j;
        } else if c == '"' {
            let mut j = i + 1;
            while j < b.len() && b[j] != '"' {
                j += if b[j] == '\\' { 2 } else { 1 };
            }
            let end = (j + 1).min(b.len());
            out.extend(b[i..end].iter().map(|&c| blank(c)));
            i = end;
        } else if c == '\'' {
            // A character literal ('a', '\n', '\''), or a lifetime ('a) left as it is.
            let len = if next == Some('\\') {
                b[i + 2..].iter().position(|&x| x == '\'').map(|p| p + 3)
            } else if b.get(i + 2) == Some(&'\'') {
                Some(3)
            } else {
                None
            };
            match len {
                Some(n) => {
                    out.extend(b[i..i + n].iter().map(|&c| blank(c)));
                    i += n;
                }
                None => {
                    out.push(c);
                    i += 1;
                }
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    without_test_items(&out)
}

fn ident_before(b: &[char], i: usize) -> bool {
    i > 0 && (b[i - 1].is_alphanumeric() || b[i - 1] == '_')
}

/// `code` without the items marked `#[cfg(test)]` (a `mod x { ... }` or `mod x;`, or any item up
/// to its closing brace or semicolon).
fn without_test_items(code: &str) -> String {
    let mut out = String::new();
    let mut rest = code;
    while let Some(at) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..at]);
        let after = &rest[at..];
        let (mut depth, mut end) = (0usize, after.len());
        for (k, ch) in after.char_indices() {
            match ch {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = k + 1;
                        break;
                    }
                }
                ';' if depth == 0 => {
                    end = k + 1;
                    break;
                }
                _ => {}
            }
        }
        out.extend(
            after[..end]
                .chars()
                .map(|c| if c == '\n' { '\n' } else { ' ' }),
        );
        rest = &after[end..];
    }
    out.push_str(rest);
    out
}

/// The paths (as segments) that `code` names starting at `crate::` or `super::`, with `use`
/// groups (`crate::{a::b, c}`) expanded; `super` resolved against module `me` (`net/link`;
/// `net` for `net/mod.rs`).
fn paths(code: &str, me: &str) -> Vec<Vec<String>> {
    let mut found = Vec::new();
    let chars: Vec<char> = code.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let starts = |w: &str| chars[i..].iter().take(w.len()).copied().eq(w.chars());
        let word_start = i == 0 || !(chars[i - 1].is_alphanumeric() || chars[i - 1] == '_');
        if word_start && (starts("crate::") || starts("super::")) {
            let mut base: Vec<String> = Vec::new();
            if starts("super::") {
                base = me
                    .split('/')
                    .filter(|s| !s.is_empty())
                    .map(str::to_string)
                    .collect();
                base.pop();
                i += "super::".len();
                while chars[i..].iter().take(7).copied().eq("super::".chars()) {
                    base.pop();
                    i += 7;
                }
            } else {
                i += "crate::".len();
            }
            let (groups, end) = parse_tree(&chars, i);
            for g in groups {
                let mut p = base.clone();
                p.extend(g);
                found.push(p);
            }
            i = end;
        } else {
            i += 1;
        }
    }
    found
}

/// A use tree at `i`: `a::b::c`, `a::{b, c::d}`, `{a, b}`; its paths and where it ends.
fn parse_tree(c: &[char], mut i: usize) -> (Vec<Vec<String>>, usize) {
    let skip_ws = |i: &mut usize| {
        while *i < c.len() && c[*i].is_whitespace() {
            *i += 1;
        }
    };
    let mut prefix = Vec::new();
    loop {
        skip_ws(&mut i);
        if i < c.len() && c[i] == '{' {
            i += 1;
            let mut all = Vec::new();
            loop {
                skip_ws(&mut i);
                if i >= c.len() || c[i] == '}' {
                    i += 1;
                    break;
                }
                let (sub, end) = parse_tree(c, i);
                for s in sub {
                    let mut p = prefix.clone();
                    p.extend(s);
                    all.push(p);
                }
                i = end;
                skip_ws(&mut i);
                if i < c.len() && c[i] == ',' {
                    i += 1;
                }
            }
            return (all, i);
        }
        let start = i;
        while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
            i += 1;
        }
        if i == start {
            return (vec![prefix], i);
        }
        prefix.push(c[start..i].iter().collect());
        if c.get(i) == Some(&':') && c.get(i + 1) == Some(&':') {
            i += 2;
        } else {
            return (vec![prefix], i);
        }
    }
}

/// The module a path names: the longest prefix of it that is a module, after resolving the
/// crate root's re-exports (`crate::RuntimeConfig` is `config`).
fn target(
    path: &[String],
    mods: &BTreeMap<String, PathBuf>,
    root: &BTreeMap<String, String>,
) -> Option<String> {
    if path.len() == 1 || !mods.contains_key(&path[0]) {
        return root.get(&path[0]).cloned();
    }
    (1..=path.len())
        .rev()
        .map(|n| path[..n].join("/"))
        .find(|m| mods.contains_key(m))
}

/// The crate root's re-exports: item name -> module (from `pub use a::b::{X, Y};` in lib.rs).
fn root_exports(mods: &BTreeMap<String, PathBuf>) -> BTreeMap<String, String> {
    let lib = code_only(&std::fs::read_to_string(src().join("lib.rs")).unwrap());
    let mut out = BTreeMap::new();
    for stmt in lib.split(';') {
        let Some(at) = stmt.find("pub use ") else {
            continue;
        };
        let chars: Vec<char> = stmt[at + 8..].chars().collect();
        for p in parse_tree(&chars, 0).0 {
            if let (Some(name), Some(m)) = (p.last(), target(&p, mods, &BTreeMap::new())) {
                out.insert(name.clone(), m);
            }
        }
    }
    out
}

/// The layer of module `m`: the one holding the longest prefix of it.
fn layer_of(m: &str) -> (usize, &'static str) {
    let mut best: Option<(usize, usize, &str)> = None;
    for (rank, (_, prefixes)) in LAYERS.iter().enumerate() {
        for p in prefixes.iter() {
            let hit = m == *p || m.starts_with(&format!("{p}/"));
            if hit && best.is_none_or(|(_, len, _)| p.len() > len) {
                best = Some((rank, p.len(), p));
            }
        }
    }
    let (rank, _, p) =
        best.unwrap_or_else(|| panic!("module {m} is in no layer: add it to LAYERS"));
    (rank, p)
}

/// The modules whose files are test code: declared as `#[cfg(test)] mod x;` in their parent
/// (`net/test_transport` in `net/mod.rs`), by module path.
fn test_only(mods: &BTreeMap<String, PathBuf>) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (m, file) in mods {
        let text = std::fs::read_to_string(file).unwrap();
        let mut rest = text.as_str();
        while let Some(at) = rest.find("#[cfg(test)]") {
            rest = &rest[at + "#[cfg(test)]".len()..];
            let decl = rest.trim_start();
            let Some(decl) = decl.strip_prefix("mod ") else {
                continue;
            };
            let Some(name) = decl.split(';').next().filter(|n| !n.contains('{')) else {
                continue;
            };
            let parent = if m == "lib" { "" } else { m.as_str() };
            let path = format!("{parent}/{}", name.trim());
            out.insert(path.trim_start_matches('/').to_string());
        }
    }
    out
}

/// Every use of a module of a higher layer: (from, to) pairs, by the layers' prefixes of both.
fn upward_uses() -> BTreeMap<(String, String), BTreeSet<String>> {
    let mut mods = BTreeMap::new();
    modules(&src(), &mut mods);
    let root = root_exports(&mods);
    let tests = test_only(&mods);
    let mut up: BTreeMap<(String, String), BTreeSet<String>> = BTreeMap::new();
    for (m, file) in mods.iter().filter(|(m, _)| !tests.contains(*m)) {
        let me = if m == "lib" { "" } else { m.as_str() };
        let code = code_only(&std::fs::read_to_string(file).unwrap());
        let (from_rank, from) = layer_of(m);
        for p in paths(&code, me) {
            let Some(t) = target(&p, &mods, &root) else {
                continue;
            };
            let (to_rank, to) = layer_of(&t);
            if to_rank > from_rank {
                up.entry((from.to_string(), to.to_string()))
                    .or_default()
                    .insert(format!("{m} -> {t}"));
            }
        }
    }
    up
}

/// Files of modules declared under `#[cfg(test)]` are found, and only those.
#[test]
fn test_modules_are_found() {
    let mut mods = BTreeMap::new();
    modules(&src(), &mut mods);
    let tests = test_only(&mods);
    assert!(tests.contains("net/test_transport"), "{tests:?}");
    assert!(!tests.contains("net/transport"), "{tests:?}");
}

#[test]
fn every_module_is_in_a_layer() {
    let mut mods = BTreeMap::new();
    modules(&src(), &mut mods);
    for m in mods.keys() {
        layer_of(m);
    }
}

#[test]
fn no_module_uses_a_layer_above_its_own_except_the_known_ones() {
    let up = upward_uses();
    let known: BTreeSet<(String, String)> = KNOWN
        .iter()
        .map(|(a, b, _)| (a.to_string(), b.to_string()))
        .collect();
    let new: Vec<String> = (up.iter())
        .filter(|(k, _)| !known.contains(*k))
        .map(|((a, b), uses)| {
            format!(
                "{a} -> {b}: {}",
                uses.iter().cloned().collect::<Vec<_>>().join(", ")
            )
        })
        .collect();
    assert!(
        new.is_empty(),
        "modules use layers above their own (docs/design.md, \"Layers\"):\n{}",
        new.join("\n")
    );
    let gone: Vec<String> = (known.iter())
        .filter(|k| !up.contains_key(*k))
        .map(|(a, b)| format!("{a} -> {b}"))
        .collect();
    assert!(
        gone.is_empty(),
        "these known upward uses are gone: remove them from KNOWN\n{}",
        gone.join("\n")
    );
}

/// The parser finds what a file uses: groups, `super`, root re-exports; not comments, strings
/// or unit tests.
#[test]
fn the_reader_finds_uses_and_only_uses() {
    let code = code_only(
        "use crate::{channel::{input::X, output}, worker::ctx::WorkerCtx};\n\
         // crate::execute::Nothing\n\
         let s = \"crate::report::No\";\n\
         fn f<'a>(c: char) -> bool { c == '{' }\n\
         use super::super::progress::frontiers::F;\n\
         #[cfg(test)]\nmod tests { use crate::dataflow::Dataflow; }\n",
    );
    let got = paths(&code, "net/link");
    let got: Vec<String> = got.iter().map(|p| p.join("::")).collect();
    assert_eq!(
        got,
        [
            "channel::input::X",
            "channel::output",
            "worker::ctx::WorkerCtx",
            "progress::frontiers::F",
        ]
    );
}
