//! The status page's charts: the last minutes ([`super::history`]) of throughput,
//! backpressure and frontier lag per vertex, drawn as SVG on the server with `plotters` (so the
//! page ships no charting code of its own). One line per vertex, in the vertex's colour
//! ([`color`]), which the page's table uses as its key.

use super::history::{History, SAMPLES};
use plotters::prelude::*;

/// Width and height of a chart, pixels.
pub const SIZE: (u32, u32) = (340, 170);

/// The charts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Chart {
    /// Elements in per second per vertex.
    Throughput,
    /// Share of the time blocked by backpressure, %.
    Backpressure,
    /// Frontier lag, s (or time units when the job's unit is unknown).
    Lag,
}

/// Vertex colours, by graph index (repeating).
const COLORS: [(u8, u8, u8); 8] = [
    (0x1f, 0x77, 0xb4),
    (0xd6, 0x27, 0x28),
    (0x2c, 0xa0, 0x2c),
    (0xff, 0x7f, 0x0e),
    (0x94, 0x67, 0xbd),
    (0x8c, 0x56, 0x4b),
    (0xe3, 0x77, 0xc2),
    (0x17, 0xbe, 0xcf),
];

/// Vertex `i`'s colour as CSS (`#rrggbb`).
pub fn color(i: usize) -> String {
    let (r, g, b) = COLORS[i % COLORS.len()];
    format!("#{r:02x}{g:02x}{b:02x}")
}

/// `chart` of `h` as an SVG document. A chart that cannot be drawn (plotters' error) is an
/// SVG saying so: the page stays up.
pub fn render(h: &History, chart: Chart) -> String {
    let mut svg = String::new();
    if let Err(e) = draw(h, chart, &mut svg) {
        svg = format!(
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\"><text x=\"8\" \
             y=\"20\">chart failed: {}</text></svg>",
            SIZE.0,
            SIZE.1,
            e.to_string().replace(['<', '&'], " ")
        );
    }
    svg
}

fn draw(h: &History, chart: Chart, svg: &mut String) -> Result<(), Box<dyn std::error::Error>> {
    let title = match (chart, h.lag_in_s) {
        (Chart::Throughput, _) => "in, elements/s",
        (Chart::Backpressure, _) => "backpressure, % of time",
        (Chart::Lag, true) => "frontier lag, s",
        (Chart::Lag, false) => "frontier lag, time units",
    };
    let now = h.at_s.back().copied().unwrap_or(0.0);
    let span = (SAMPLES as f64).min(now.max(10.0));
    let series: Vec<Vec<(f64, f64)>> = (h.vertices.iter())
        .map(|v| {
            let ys: Vec<Option<f64>> = match chart {
                Chart::Throughput => v.per_s.iter().map(|&x| Some(x)).collect(),
                Chart::Backpressure => v.backpressure.iter().map(|&x| Some(100.0 * x)).collect(),
                Chart::Lag => v.lag.iter().copied().collect(),
            };
            (h.at_s.iter().zip(ys))
                .filter_map(|(&t, y)| Some((t - now, y?)))
                .collect()
        })
        .collect();
    let top = (series.iter().flatten())
        .map(|p| p.1)
        .fold(0.0f64, f64::max);
    let top = match chart {
        Chart::Backpressure => 100.0,
        _ if top <= 0.0 => 1.0,
        _ => top * 1.1,
    };
    let root = SVGBackend::with_string(svg, SIZE).into_drawing_area();
    root.fill(&WHITE)?;
    let mut c = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 13))
        .margin(6)
        .x_label_area_size(20)
        .y_label_area_size(44)
        .build_cartesian_2d(-span..0.0, 0.0..top)?;
    c.configure_mesh()
        .x_labels(5)
        .y_labels(4)
        .x_label_formatter(&|x| format!("{:.0} s", x))
        .y_label_formatter(&|y| short(*y))
        .label_style(("sans-serif", 10))
        .draw()?;
    for (i, points) in series.into_iter().enumerate() {
        let (r, g, b) = COLORS[i % COLORS.len()];
        c.draw_series(LineSeries::new(points, RGBColor(r, g, b).stroke_width(2)))?;
    }
    root.present()?;
    Ok(())
}

/// An axis label: 1.2k, 3.4M, or the number with at most 2 decimals.
fn short(y: f64) -> String {
    match y.abs() {
        a if a >= 1e6 => format!("{:.1}M", y / 1e6),
        a if a >= 1e3 => format!("{:.1}k", y / 1e3),
        a if a >= 10.0 || a == 0.0 => format!("{y:.0}"),
        _ => format!("{y:.2}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn charts_draw_one_line_per_vertex() {
        let mut h = History::default();
        for i in 0..30 {
            let status = json!({"time_per_second": 1, "vertices": [
                {"name": "src", "out_per_s": 100.0 + i as f64, "frontier_lag": i},
                {"name": "win", "in_per_s": 90.0, "backpressure": 0.2, "frontier_lag": 3}]});
            h.record(i as f64, &status);
        }
        for chart in [Chart::Throughput, Chart::Backpressure, Chart::Lag] {
            let svg = render(&h, chart);
            assert!(svg.starts_with("<svg"), "{svg}");
            assert!(!svg.contains("chart failed"), "{svg}");
            for c in [color(0), color(1)] {
                assert!(
                    svg.contains(&c.to_uppercase()) || svg.contains(&c),
                    "{c} in {svg}"
                );
            }
        }
        assert!(render(&h, Chart::Lag).contains("frontier lag, s"));
    }
}
