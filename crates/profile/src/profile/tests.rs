use super::*;

fn fr<'a>(function: &'a str, module: &'a str) -> FrameRef<'a> {
    FrameRef { function, module }
}

const TWO: &str = r#"
[[task]]
name = "a"
keywords = ["alpha", "module:liba.so"]

[[task]]
name = "b"
keywords = ["beta", "alphabet", "thread:worker"]
"#;

#[test]
fn the_frame_nearest_the_leaf_decides_before_file_order() {
    let p = AppProfile::parse(TWO, "t.toml").expect("valid");
    // Leaf matches b, root matches a: b, although a comes first in the file.
    let frames = [fr("beta::f", "x"), fr("alpha::main", "x")];
    assert_eq!(p.classify(&frames, "t"), Some("b"));
    // The same frames the other way round: a.
    let frames = [fr("alpha::f", "x"), fr("beta::main", "x")];
    assert_eq!(p.classify(&frames, "t"), Some("a"));
}

#[test]
fn within_one_frame_the_first_task_in_the_file_wins() {
    let p = AppProfile::parse(TWO, "t.toml").expect("valid");
    // "alphabet" holds keywords of both a ("alpha") and b ("alphabet").
    assert_eq!(p.classify(&[fr("alphabet", "x")], "t"), Some("a"));
}

#[test]
fn modules_threads_and_no_match() {
    let p = AppProfile::parse(TWO, "t.toml").expect("valid");
    assert_eq!(p.classify(&[fr("[unknown]", "liba.so")], "t"), Some("a"));
    // Nothing matches: other (None); the thread name decides only after every frame.
    assert_eq!(p.classify(&[fr("gamma", "x")], "main"), None);
    assert_eq!(p.classify(&[fr("gamma", "x")], "worker-1"), Some("b"));
    assert_eq!(
        p.classify(&[fr("gamma", "x"), fr("alpha", "x")], "worker-1"),
        Some("a")
    );
    assert_eq!(p.classify(&[], "main"), None);
}

#[test]
fn tasks_keep_file_order_once_each_with_other_last() {
    let text = format!("{TWO}\n[[task]]\nname = \"a\"\nkeywords = [\"late\"]\n");
    let p = AppProfile::parse(&text, "t.toml").expect("valid");
    assert_eq!(p.rules.len(), 3);
    assert_eq!(p.rules[1].line, 7);
    assert_eq!(p.tasks(), ["a", "b", "other"]);
}

fn invalid(text: &str) -> (usize, String) {
    match AppProfile::parse(text, "bad.toml") {
        Err(ProfileError::Invalid {
            path,
            line,
            message,
        }) => {
            assert_eq!(path, "bad.toml");
            (line, message)
        }
        other => panic!("expected Invalid, got {other:?}"),
    }
}

#[test]
fn bad_files_name_the_line_and_the_problem() {
    let (line, m) = invalid("[[task]]\nname = \"a\"\nkeywords = [\"x\"\n");
    assert_eq!(line, 3, "{m}");
    let (line, m) = invalid("[[task]]\nname = \"a\"\nkeyword = [\"x\"]\n");
    assert_eq!(line, 3);
    assert!(m.contains("keyword"), "{m}");
    let (line, m) = invalid("[[task]]\nname = \"a\"\n\nkeywords = []\n");
    assert_eq!(line, 4);
    assert!(m.contains("no keywords"), "{m}");
    let (line, m) = invalid("[[task]]\nname = \"a\"\nkeywords = [\"x\",\n  \"module:\"]\n");
    assert_eq!(line, 4);
    assert!(m.contains("empty keyword 'module:'"), "{m}");
    let (line, m) = invalid("\n[[task]]\nname = \" \"\nkeywords = [\"x\"]\n");
    assert_eq!(line, 3);
    assert!(m.contains("empty task name"), "{m}");
    let (_, m) = invalid("[[task]]\nkeywords = [\"x\"]\n");
    assert!(m.contains("name"), "{m}");
    let (_, m) = invalid("description = \"nothing\"\n");
    assert!(m.contains("no [[task]]"), "{m}");
    let (_, m) = invalid("[[task]]\nname = 3\nkeywords = [\"x\"]\n");
    assert!(m.contains("string"), "{m}");
}

#[test]
fn load_reads_files_then_builtin_names() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("p.toml");
    std::fs::write(&path, TWO).expect("write");
    let p = AppProfile::load(path.to_str().expect("utf-8")).expect("file");
    assert_eq!(p.rules.len(), 2);
    let e = AppProfile::load(dir.path().join("missing.toml").to_str().expect("utf-8"))
        .expect_err("missing");
    assert!(e.to_string().contains("missing.toml"), "{e}");
    for (name, _) in BUILTIN {
        let p = AppProfile::load(name).expect("builtin parses");
        assert_eq!(p.source, format!("builtin:{name}"));
        assert!(p.tasks().len() > 5, "{name}");
    }
}

#[test]
fn shipped_xorflow_profile_on_real_stacks() {
    use crate::stacks::{parse, Record, Sample};
    let mut samples: Vec<Sample> = Vec::new();
    let text = include_str!("../../tests/fixtures/perf-script-chain.txt");
    parse(text.as_bytes(), |r| {
        if let Record::Sample(s) = r {
            samples.push(s)
        }
    })
    .expect("fixture parses");
    let p = AppProfile::load("xorflow").expect("builtin");
    let task = |s: &Sample| {
        let refs: Vec<FrameRef<'_>> = s
            .frames
            .iter()
            .map(|f| fr(&f.function, &f.module))
            .collect();
        p.classify(&refs, &s.comm).map(str::to_string)
    };
    let tasks: Vec<Option<String>> = samples.iter().map(task).collect();
    assert_eq!(
        tasks,
        [
            // ChainSpans::record (the sink's latency spans) is the first frame up from the leaf
            // that a keyword names, before the sink's own frames.
            Some("measurement".to_string()),
            Some("cluster communication".to_string()),
            Some("acker".to_string()),
            Some("operator".to_string()),
        ]
    );
}
