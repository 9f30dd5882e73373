//! Drawing tests: the SVG plotters writes is read back for the figure's size, its text (title,
//! axis descriptions, category names, legend) and the bars of every series (rectangles filled
//! with the series' colour).

use super::*;
use std::path::PathBuf;

fn traffic_chart(log_y: bool) -> BarChart {
    BarChart {
        title: "Service traffic".into(),
        x_label: "stages (graph size)".into(),
        y_label: "service messages per element".into(),
        categories: vec!["10".into(), "30".into(), "100".into()],
        series: vec![
            Series {
                name: "xor tracking".into(),
                values: vec![Some(0.002), Some(0.004), Some(0.011)],
            },
            Series {
                name: "ack per element".into(),
                values: vec![Some(10.0), Some(30.0), Some(100.0)],
            },
            Series {
                name: "not run everywhere".into(),
                values: vec![Some(0.0), None, Some(1.5)],
            },
        ],
        log_y,
    }
}

fn latency_chart() -> BarChart {
    BarChart {
        title: "Latency".into(),
        x_label: "percentile".into(),
        y_label: "latency, us".into(),
        categories: vec!["p50".into(), "p90".into(), "p99".into(), "max".into()],
        series: vec![
            Series {
                name: "xor".into(),
                values: vec![Some(12.0), Some(30.0), Some(80.0), Some(400.0)],
            },
            Series {
                name: "ack".into(),
                values: vec![Some(15.0), Some(45.0), Some(120.0), None],
            },
        ],
        log_y: false,
    }
}

/// The SVG's `<text>` elements: their attributes and their text.
fn text_elements(svg: &str) -> Vec<(&str, &str)> {
    svg.split("<text")
        .skip(1)
        .filter_map(|t| {
            let (attrs, rest) = t.split_once('>')?;
            Some((attrs, rest.split_once("</text>")?.0.trim()))
        })
        .collect()
}

/// The texts of the SVG's `<text>` elements.
fn texts(svg: &str) -> Vec<String> {
    text_elements(svg)
        .into_iter()
        .map(|(_, t)| t.to_string())
        .collect()
}

/// Rectangles filled with `c`.
fn filled_rects(svg: &str, c: RGBColor) -> usize {
    let fill = format!("fill=\"#{:02X}{:02X}{:02X}\"", c.0, c.1, c.2);
    svg.split("<rect")
        .skip(1)
        .filter(|r| r.contains(&fill))
        .count()
}

/// A value on the log axis draws a bar; on a linear axis every present value does.
fn drawn(chart: &BarChart, v: &Option<f64>) -> bool {
    v.is_some_and(|v| !chart.log_y || v > 0.0)
}

/// Checks the file is an SVG of the documented size whose text and bars are there: one
/// rectangle of each series' colour per bar it draws, plus its legend swatch.
fn check_drawn(chart: &BarChart, path: &Path) -> String {
    let svg = std::fs::read_to_string(path).unwrap();
    assert!(svg.starts_with("<svg"), "not an SVG: {}", &svg[..40]);
    let size = format!("width=\"{WIDTH}\" height=\"{HEIGHT}\"");
    assert!(svg[..200].contains(&size), "size: {}", &svg[..200]);
    let texts = texts(&svg);
    let wanted = [&chart.title, &chart.x_label, &chart.y_label]
        .into_iter()
        .chain(&chart.categories)
        .chain(chart.series.iter().map(|s| &s.name));
    for w in wanted {
        assert!(texts.contains(w), "no text {w:?} in {texts:?}");
    }
    for (j, s) in chart.series.iter().enumerate() {
        let bars = s.values.iter().filter(|v| drawn(chart, v)).count();
        let n = filled_rects(&svg, series_colour(j));
        assert_eq!(n, bars + 1, "series {j}: {n} rectangles of its colour");
    }
    svg
}

#[test]
fn linear_chart_is_an_svg_of_the_documented_size() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("linear.svg");
    let mut chart = traffic_chart(false);
    // Comparable magnitudes, so that every series' bars are many pixels high.
    chart.series[0].values = vec![Some(20.0), Some(25.0), None];
    chart.draw_svg(&path).unwrap();
    let svg = check_drawn(&chart, &path);
    // Bars wide enough get their value printed.
    assert!(texts(&svg).contains(&"25".to_string()));
}

#[test]
fn log_chart_is_an_svg_of_the_documented_size() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.svg");
    let chart = traffic_chart(true);
    chart.draw_svg(&path).unwrap();
    let svg = check_drawn(&chart, &path);
    // Decade ticks on the log axis, formatted with 3 significant digits.
    let texts = texts(&svg);
    for tick in ["0.001", "0.1", "10"] {
        assert!(
            texts.contains(&tick.to_string()),
            "no tick {tick}: {texts:?}"
        );
    }
}

#[test]
fn horizontal_chart_is_an_svg_of_the_documented_size() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("latency.svg");
    let chart = latency_chart();
    chart.draw_svg_horizontal(&path).unwrap();
    check_drawn(&chart, &path);
}

/// The y coordinate of the text `name`.
fn label_y(svg: &str, name: &str) -> i32 {
    let (attrs, _) = text_elements(svg)
        .into_iter()
        .find(|(_, t)| *t == name)
        .unwrap_or_else(|| panic!("no label {name}"));
    let y = &attrs[attrs.find(" y=\"").unwrap() + 4..];
    y[..y.find('"').unwrap()].parse().unwrap()
}

#[test]
fn horizontal_chart_lists_the_first_category_at_the_top() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("order.svg");
    latency_chart().draw_svg_horizontal(&path).unwrap();
    let svg = std::fs::read_to_string(&path).unwrap();
    let ys: Vec<i32> = ["p50", "p90", "p99", "max"]
        .iter()
        .map(|c| label_y(&svg, c))
        .collect();
    assert!(ys.windows(2).all(|w| w[0] < w[1]), "top to bottom: {ys:?}");
}

#[test]
fn drawing_replaces_an_existing_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("again.svg");
    std::fs::write(&path, b"old contents").unwrap();
    traffic_chart(false).draw_svg(&path).unwrap();
    let svg = std::fs::read_to_string(&path).unwrap();
    assert!(svg.starts_with("<svg"));
}

#[test]
fn length_mismatch_is_an_error_naming_the_series_and_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.svg");
    let mut chart = traffic_chart(false);
    chart.series[1].values.pop();
    let err = format!("{:#}", chart.draw_svg(&path).unwrap_err());
    assert!(err.contains("ack per element"), "{err}");
    assert!(err.contains("has 2 values"), "{err}");
    assert!(err.contains("bad.svg"), "{err}");
    assert!(!path.exists(), "nothing is written on error");
}

#[test]
fn log_chart_without_positive_values_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("empty-log.svg");
    let chart = BarChart {
        series: vec![Series {
            name: "zeros".into(),
            values: vec![Some(0.0), None, Some(-1.0)],
        }],
        ..traffic_chart(true)
    };
    let err = format!("{:#}", chart.draw_svg(&path).unwrap_err());
    assert!(err.contains("no positive value"), "{err}");
    assert!(!path.exists());
    // The same data is fine on a linear axis (bars down to -1).
    let linear = BarChart {
        log_y: false,
        ..chart
    };
    linear.draw_svg(&path).unwrap();
    assert!(path.exists());
}

#[test]
fn non_finite_values_and_missing_categories_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nan.svg");
    let mut chart = traffic_chart(false);
    chart.series[0].values[2] = Some(f64::NAN);
    let err = format!("{:#}", chart.draw_svg(&path).unwrap_err());
    assert!(
        err.contains("xor tracking") && err.contains("\"100\""),
        "{err}"
    );

    let empty = BarChart {
        categories: vec![],
        series: vec![],
        ..traffic_chart(false)
    };
    let err = format!("{:#}", empty.draw_svg(&path).unwrap_err());
    assert!(err.contains("no categories"), "{err}");
}

#[test]
fn unwritable_path_is_an_error_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("no-such-dir").join("fig.svg");
    let err = format!("{:#}", traffic_chart(false).draw_svg(&path).unwrap_err());
    assert!(err.contains("no-such-dir"), "{err}");
}

/// Writes sample figures for a person to look at:
/// `XORFLOW_PLOT_SAMPLES=/tmp cargo test -p xorflow-bench --lib stand::plot -- --ignored`.
#[test]
#[ignore = "writes sample figures outside the test's temporary directory"]
fn write_samples() {
    let dir = std::env::var_os("XORFLOW_PLOT_SAMPLES")
        .map(PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    traffic_chart(false)
        .draw_svg(&dir.join("plot-sample.svg"))
        .unwrap();
    traffic_chart(true)
        .draw_svg(&dir.join("plot-sample-log.svg"))
        .unwrap();
    latency_chart()
        .draw_svg_horizontal(&dir.join("plot-sample-horizontal.svg"))
        .unwrap();
}
