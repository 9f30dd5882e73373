//! `report.html`: one self-contained page (no scripts, no external files) with the run's
//! settings, the task table of the whole run, one per process, and the run's flame graph.

use crate::flame::escape;
use crate::summary::TaskRow;
use std::fmt::Write as _;

/// One process's section.
pub struct ProcessSection<'a> {
    /// Heading, e.g. `pid 1234 (xorflow)`.
    pub title: String,
    /// CPU time, s, and where it came from.
    pub cpu: (f64, &'a str),
    /// Samples, and how many reached a thread entry.
    pub samples: (u64, u64),
    /// Its task rows.
    pub rows: &'a [TaskRow],
}

/// The page: `settings` as (name, value) lines, the run's `rows`, `processes`, and the flame
/// graph `svg` inlined.
pub fn page(
    settings: &[(&str, String)],
    rows: &[TaskRow],
    processes: &[ProcessSection<'_>],
    svg: &str,
) -> String {
    let mut s = String::from(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>xorflow-lab profile</title>\n\
         <style>body{font-family:sans-serif;margin:1.5em;color:#222}\
         table{border-collapse:collapse;margin:.5em 0 1.5em}\
         td,th{border:1px solid #ccc;padding:.25em .6em;text-align:right}\
         td:first-child,th:first-child{text-align:left}th{background:#f3f3f3}\
         .bar{display:inline-block;height:.8em;background:#d95f02;vertical-align:middle}\
         svg{max-width:100%;height:auto}</style></head><body>\n\
         <h1>Task-level CPU profile</h1>\n<table>\n",
    );
    for (k, v) in settings {
        let _ = writeln!(s, "<tr><th>{}</th><td>{}</td></tr>", escape(k), escape(v));
    }
    s.push_str("</table>\n<h2>Whole run</h2>\n");
    table(&mut s, rows);
    for p in processes {
        let pct = if p.samples.0 == 0 {
            0.0
        } else {
            100.0 * p.samples.1 as f64 / p.samples.0 as f64
        };
        let _ = writeln!(
            s,
            "<h2>{}</h2>\n<p>CPU {:.3} s ({}), {} samples, {pct:.1} % with a complete stack</p>",
            escape(&p.title),
            p.cpu.0,
            escape(p.cpu.1),
            p.samples.0
        );
        table(&mut s, p.rows);
    }
    s.push_str(
        "<h2>Flame graph by task (whole run)</h2>\n<p>The bottom row is the task each stack went \
         to; hover a frame for its samples. flame.svg has the same stacks by thread.</p>\n",
    );
    s.push_str(svg.trim_start_matches(|c| c != '<'));
    s.push_str("</body></html>\n");
    s
}

fn table(s: &mut String, rows: &[TaskRow]) {
    s.push_str(
        "<table><tr><th>task</th><th>samples</th><th>share</th><th></th><th>CPU s</th>\
         <th>CPU ns / event</th></tr>\n",
    );
    for r in rows {
        let per = r
            .cpu_ns_per_event
            .map_or(String::new(), |v| format!("{v:.1}"));
        let _ = writeln!(
            s,
            "<tr><td>{}</td><td>{}</td><td>{:.1} %</td>\
             <td><span class=\"bar\" style=\"width:{:.0}px\"></span></td>\
             <td>{:.3}</td><td>{per}</td></tr>",
            escape(&r.task),
            r.samples,
            r.share * 100.0,
            r.share * 200.0,
            r.cpu_s
        );
    }
    s.push_str("</table>\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_holds_tables_and_svg_escaped() {
        let rows = vec![TaskRow {
            task: "a<b".into(),
            samples: 3,
            share: 1.0,
            cpu_s: 0.5,
            cpu_ns_per_event: Some(12.25),
        }];
        let p = page(
            &[("command", "x & y".into())],
            &rows,
            &[],
            "<svg><rect/></svg>",
        );
        assert!(p.contains("<td>x &amp; y</td>"));
        assert!(p.contains("<td>a&lt;b</td><td>3</td><td>100.0 %</td>"));
        assert!(p.contains("<td>12.3</td>") || p.contains("<td>12.2</td>"));
        assert!(p.contains("<svg><rect/></svg>"));
        assert!(!p.contains("<script"));
    }
}
