//! Folded stacks (`stacks.folded`, one line `thread;root;...;leaf COUNT` per distinct stack,
//! the format FlameGraph, inferno and speedscope read) and the unmatched stacks'
//! listing (`other-stacks.txt`).

use crate::collect::StackKey;
use crate::stacks::Frame;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// A frame's name in folded stacks and flame graphs: its function, or `[MODULE]` when perf
/// could not name the function; `;` (the separator) becomes `:`.
pub fn frame_name(f: &Frame) -> String {
    let name = if f.function == "[unknown]" && f.module != "[unknown]" {
        format!("[{}]", f.module)
    } else {
        f.function.clone()
    };
    name.replace(';', ":").replace(['\n', '\r'], " ")
}

/// Stacks as root-first name lists (the thread's name at the root), identical ones merged,
/// sorted by names.
pub fn fold<'a>(stacks: impl IntoIterator<Item = (&'a StackKey, u64)>) -> Vec<(Vec<String>, u64)> {
    let mut merged: BTreeMap<Vec<String>, u64> = BTreeMap::new();
    for (key, n) in stacks {
        let mut names = Vec::with_capacity(key.frames.len() + 1);
        names.push(key.thread.replace(';', ":"));
        names.extend(key.frames.iter().rev().map(frame_name));
        *merged.entry(names).or_insert(0) += n;
    }
    merged.into_iter().collect()
}

/// Like [`fold`], with each stack's task as an extra root frame (`tasks.folded`: a flame graph
/// of it shows which stacks went to which task).
pub fn fold_by_task<'a>(
    stacks: impl IntoIterator<Item = (&'a StackKey, &'a str, u64)>,
) -> Vec<(Vec<String>, u64)> {
    let mut merged: BTreeMap<Vec<String>, u64> = BTreeMap::new();
    for (key, task, n) in stacks {
        for (mut names, n) in fold([(key, n)]) {
            names.insert(0, task.replace(';', ":"));
            *merged.entry(names).or_insert(0) += n;
        }
    }
    merged.into_iter().collect()
}

/// The text of `stacks.folded`.
pub fn text(folded: &[(Vec<String>, u64)]) -> String {
    let mut s = String::new();
    for (names, n) in folded {
        let _ = writeln!(s, "{} {n}", names.join(";"));
    }
    s
}

/// One unmatched stack and where it was seen.
pub struct Unmatched<'a> {
    /// The process: pid and name.
    pub process: (u32, &'a str),
    /// The stack.
    pub key: &'a StackKey,
    /// Its samples.
    pub samples: u64,
}

/// `other-stacks.txt`: the `top` most-sampled unmatched stacks (`stacks` sorted most first),
/// frames leaf first as `function (module)`, so that keywords for them can be chosen.
pub fn other_text(stacks: &[Unmatched<'_>], total_samples: u64, top: usize) -> String {
    let other: u64 = stacks.iter().map(|u| u.samples).sum();
    let pct = |n: u64| {
        if total_samples == 0 {
            0.0
        } else {
            100.0 * n as f64 / total_samples as f64
        }
    };
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# Stacks no keyword of the application profile matched (task \"other\"): {other} of \
         {total_samples} samples ({:.1} %), {} distinct stacks; the {} most sampled follow.\n\
         # Frames leaf first, as 'function (module)'. Add a keyword for one of them to the \
         profile to give the stack a task.",
        pct(other),
        stacks.len(),
        top.min(stacks.len())
    );
    for u in stacks.iter().take(top) {
        let _ = writeln!(
            s,
            "\n== {} samples ({:.2} %) pid {} ({}) thread {}",
            u.samples,
            pct(u.samples),
            u.process.0,
            u.process.1,
            u.key.thread
        );
        for f in &u.key.frames {
            let _ = writeln!(s, "    {} ({})", f.function, f.module);
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(function: &str, module: &str) -> Frame {
        Frame {
            function: function.into(),
            module: module.into(),
        }
    }

    #[test]
    fn folds_root_first_with_thread_and_merges() {
        let a = StackKey {
            thread: "w;1".into(),
            frames: vec![f("leaf", "x"), f("[unknown]", "libjvm.so"), f("main", "x")],
        };
        let folded = fold([(&a, 2), (&a, 3)]);
        assert_eq!(text(&folded), "w:1;main;[libjvm.so];leaf 5\n");
    }

    #[test]
    fn other_listing_names_shares_and_frames() {
        let a = StackKey {
            thread: "t".into(),
            frames: vec![f("leaf", "x"), f("root", "x")],
        };
        let u = [Unmatched {
            process: (7, "p"),
            key: &a,
            samples: 5,
        }];
        let s = other_text(&u, 20, 10);
        assert!(s.contains("5 of 20 samples (25.0 %)"), "{s}");
        assert!(
            s.contains("== 5 samples (25.00 %) pid 7 (p) thread t\n    leaf (x)\n    root (x)\n")
        );
    }
}
