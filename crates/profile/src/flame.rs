//! A flame graph as a self-contained SVG, drawn from folded stacks (root first, one count
//! each). Written here rather than linked: the Rust port of FlameGraph (`inferno`) is
//! CDDL-1.0, which this Apache-2.0 project does not take in; this is not a hot path, so a short
//! renderer does. Hover a frame for its name, samples and share (the SVG `<title>`).

use std::collections::BTreeMap;
use std::fmt::Write as _;

const WIDTH: f64 = 1200.0;
const PAD: f64 = 10.0;
const ROW: f64 = 16.0;
const TOP: f64 = 36.0;
/// Average glyph width of the 11 px monospace font, px (to cut names that do not fit).
const GLYPH: f64 = 6.7;

#[derive(Default)]
struct Node {
    count: u64,
    children: BTreeMap<String, Node>,
}

impl Node {
    fn depth(&self) -> usize {
        1 + self.children.values().map(Node::depth).max().unwrap_or(0)
    }
}

/// Renders `stacks` (frames root first, samples) as an SVG document titled `title`.
/// Frames narrower than 0.2 px are left out (with everything above them).
pub fn svg(title: &str, stacks: &[(Vec<String>, u64)]) -> String {
    let mut root = Node::default();
    for (frames, n) in stacks {
        root.count += n;
        let mut at = &mut root;
        for f in frames {
            at = at.children.entry(f.clone()).or_default();
            at.count += n;
        }
    }
    let depth = root.depth();
    let height = TOP + depth as f64 * ROW + PAD * 2.0;
    let mut s = String::new();
    let _ = write!(
        s,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{height}\" \
         viewBox=\"0 0 {WIDTH} {height}\" font-family=\"monospace\" font-size=\"11\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"#fdfdf6\"/>\n\
         <text x=\"{}\" y=\"22\" text-anchor=\"middle\" font-size=\"15\">{}</text>\n",
        WIDTH / 2.0,
        escape(title)
    );
    if root.count > 0 {
        let scale = (WIDTH - 2.0 * PAD) / root.count as f64;
        let ctx = Ctx {
            total: root.count,
            scale,
            base: height - PAD,
        };
        draw(&mut s, &ctx, "all", &root, PAD, 0);
    }
    s.push_str("</svg>\n");
    s
}

struct Ctx {
    total: u64,
    scale: f64,
    /// y of the bottom edge of the root row.
    base: f64,
}

fn draw(s: &mut String, ctx: &Ctx, name: &str, node: &Node, x: f64, level: usize) {
    let w = node.count as f64 * ctx.scale;
    if w < 0.2 {
        return;
    }
    let y = ctx.base - (level as f64 + 1.0) * ROW;
    let pct = 100.0 * node.count as f64 / ctx.total as f64;
    let _ = write!(
        s,
        "<g><title>{} ({} samples, {pct:.2} %)</title>\
         <rect x=\"{x:.2}\" y=\"{y:.1}\" width=\"{w:.2}\" height=\"{}\" fill=\"{}\" rx=\"2\"/>",
        escape(name),
        node.count,
        ROW - 1.0,
        color(name)
    );
    let fits = ((w - 6.0) / GLYPH).floor();
    if fits >= 3.0 {
        let fits = fits as usize;
        let text: String = if name.chars().count() <= fits {
            name.to_string()
        } else {
            name.chars().take(fits - 2).collect::<String>() + ".."
        };
        let _ = write!(
            s,
            "<text x=\"{:.2}\" y=\"{:.1}\">{}</text>",
            x + 3.0,
            y + ROW - 4.5,
            escape(&text)
        );
    }
    s.push_str("</g>\n");
    let mut cx = x;
    for (child_name, child) in &node.children {
        draw(s, ctx, child_name, child, cx, level + 1);
        cx += child.count as f64 * ctx.scale;
    }
}

/// A warm color from the name's hash, stable across runs.
fn color(name: &str) -> String {
    // FNV-1a: any stable hash does; colors only tell neighbours apart.
    let mut h: u32 = 0x811c_9dc5;
    for b in name.bytes() {
        h = (h ^ b as u32).wrapping_mul(0x0100_0193);
    }
    let r = 205 + (h % 50);
    let g = 80 + ((h >> 8) % 150);
    let b = 40 + ((h >> 16) % 50);
    format!("rgb({r},{g},{b})")
}

/// Escapes text for XML content and attributes.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c if (c as u32) < 0x20 && c != '\t' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn widths_follow_counts_and_names_are_escaped() {
        let stacks = vec![
            (vec!["main".to_string(), "a<b>".to_string()], 3),
            (vec!["main".to_string(), "c".to_string()], 1),
        ];
        let out = svg("t & t", &stacks);
        assert!(out.starts_with("<svg"));
        assert!(out.contains("t &amp; t"));
        assert!(out.contains("a&lt;b&gt; (3 samples, 75.00 %)"));
        assert!(out.contains("c (1 samples, 25.00 %)"));
        // "all" spans the full width; main too (every sample is in it).
        let full = format!("width=\"{:.2}\"", WIDTH - 2.0 * PAD);
        assert_eq!(out.matches(&full).count(), 2);
        // a<b> is three quarters of it.
        let three_q = format!("width=\"{:.2}\"", (WIDTH - 2.0 * PAD) * 0.75);
        assert!(out.contains(&three_q));
    }

    #[test]
    fn no_samples_is_an_empty_graph() {
        let out = svg("empty", &[]);
        assert!(!out.contains("<rect x="));
        assert!(out.trim_end().ends_with("</svg>"));
    }
}
