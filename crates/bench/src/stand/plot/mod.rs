//! Figures of the bench stand: grouped bar charts drawn into SVG files.
//!
//! A figure is described by a [`BarChart`] (categories on one axis, one coloured bar per
//! [`Series`] in each category, a legend) and drawn with [`BarChart::draw_svg`] (vertical bars)
//! or [`BarChart::draw_svg_horizontal`] (horizontal bars, e.g. latency percentiles). Every figure
//! is [`WIDTH`] x [`HEIGHT`] pixels on a white background.
//!
//! Drawing is plotters' own: its SVG backend (the viewer draws the text, so no font file or font
//! library is needed), its nested category axis for the groups of bars, its series labels for the
//! legend and its log scale. What this module adds is what plotters does not decide for a chart:
//! - the value range, with headroom above the tallest bar so the legend never hides a bar, and the
//!   legend's corner ([`BarChart`], `legend_corner`);
//! - tick labels with 3 significant digits, and log-axis ticks for ranges narrower than a decade,
//!   where plotters' log scale labels nothing ([`axis`]);
//! - bar value labels, which plotters has no element for (`render`).
//!
//! The file is written only once the whole figure is drawn.

mod axis;
mod render;
#[cfg(test)]
mod tests;

use anyhow::{bail, Context, Result};
use plotters::prelude::*;
use std::path::Path;

/// Width of every figure, in pixels.
pub const WIDTH: u32 = 900;
/// Height of every figure, in pixels.
pub const HEIGHT: u32 = 540;
/// The figures' file name extension.
pub const EXTENSION: &str = "svg";

/// One series of a grouped bar chart: a legend name and one value per category of the chart
/// (`values[i]` belongs to `categories[i]`, so `values.len()` must equal the number of
/// categories). `None` draws no bar, e.g. for a configuration that was not run in that category;
/// its slot in the group stays empty so the series keep their positions.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// Legend name, e.g. `"xor tracking"`.
    pub name: String,
    /// One value per category, in the unit of [`BarChart::y_label`]; must be finite when present.
    pub values: Vec<Option<f64>>,
}

/// A grouped bar chart in the style of a paper's figure: the categories along one axis, in each
/// category one coloured bar per series (series order, colours from a fixed palette), and a
/// legend with the series names in a corner of the plot.
///
/// Value range (before the legend's headroom is added above the tallest bar): linear axes span
/// `0 .. max * 1.1` (down to `min * 1.1` if a value is negative;
/// `0 .. 1` if every value is zero or absent); log axes span `min_pos / 2 .. max * 2`, where
/// `min_pos` is the smallest positive value. On a log axis non-positive values draw no bar.
/// Bars wide enough to hold it get their value printed on top in a small font.
#[derive(Debug, Clone, PartialEq)]
pub struct BarChart {
    /// Title printed above the plot.
    pub title: String,
    /// Description of the category axis (the x axis of [`BarChart::draw_svg`], the y axis of
    /// [`BarChart::draw_svg_horizontal`]), e.g. `"stages (graph size)"`.
    pub x_label: String,
    /// Description of the value axis with its unit, e.g. `"service messages per element"`.
    pub y_label: String,
    /// Category names in drawing order (left to right, or top to bottom when horizontal),
    /// e.g. `["10", "30", "100"]`. Must not be empty.
    pub categories: Vec<String>,
    /// The series; each holds one value per category. May be empty (axes only) on a linear axis.
    pub series: Vec<Series>,
    /// Logarithmic value axis, for values spanning decades (e.g. traffic from 0.001 to 100).
    pub log_y: bool,
}

/// Bar direction of a drawing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Orientation {
    /// Categories on the x axis, bars grow upwards.
    Vertical,
    /// Categories on the y axis (first one at the top), bars grow to the right.
    Horizontal,
}

/// The value axis, resolved from the data.
#[derive(Debug, Clone, Copy, PartialEq)]
struct ValueRange {
    lo: f64,
    hi: f64,
    /// Where bars start: 0 on a linear axis, `lo` on a log axis.
    base: f64,
}

impl BarChart {
    /// Draws the chart with vertical bars into an SVG file at `path`
    /// ([`WIDTH`] x [`HEIGHT`] px), replacing any existing file.
    ///
    /// Errors, each message naming the file and, where it applies, the series and category:
    /// no categories; a series whose number of values differs from the number of categories; a
    /// non-finite value; a log axis without any positive value; a path that cannot be written.
    /// Nothing is written when an error is returned.
    pub fn draw_svg(&self, path: &Path) -> Result<()> {
        self.draw(path, Orientation::Vertical)
    }

    /// Draws the chart with horizontal bars into an SVG file at `path`: the categories run down
    /// the y axis (the first at the top), values along the x axis. Meant for distributions such
    /// as latency percentiles (`categories = ["p50", "p90", "p99", "max"]`, one series per
    /// tracking mode). Same size, value ranges and errors as [`BarChart::draw_svg`].
    pub fn draw_svg_horizontal(&self, path: &Path) -> Result<()> {
        self.draw(path, Orientation::Horizontal)
    }

    fn draw(&self, path: &Path, orientation: Orientation) -> Result<()> {
        let file = path.display();
        let range = self
            .value_range()
            .with_context(|| format!("figure {file} ({:?})", self.title))?;
        let mut svg = String::new();
        {
            let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT)).into_drawing_area();
            render::render(self, &root, range, orientation)
                .with_context(|| format!("drawing figure {file}"))?;
            root.present()
                .map_err(|e| anyhow::anyhow!("drawing figure {file}: {e}"))?;
        }
        crate::stand::files::write_whole(path, svg.as_bytes())
            .with_context(|| format!("writing figure {file}"))
    }

    /// Checks the data and resolves the value axis.
    fn value_range(&self) -> Result<ValueRange> {
        if self.categories.is_empty() {
            bail!("bar chart has no categories");
        }
        let n = self.categories.len();
        let mut min = f64::INFINITY;
        let mut max = f64::NEG_INFINITY;
        let mut min_pos = f64::INFINITY;
        for s in &self.series {
            if s.values.len() != n {
                bail!(
                    "series {:?} has {} values but the chart has {} categories",
                    s.name,
                    s.values.len(),
                    n
                );
            }
            for (v, cat) in s.values.iter().zip(&self.categories) {
                let Some(v) = *v else { continue };
                if !v.is_finite() {
                    bail!(
                        "series {:?}, category {cat:?}: value {v} is not finite",
                        s.name
                    );
                }
                min = min.min(v);
                max = max.max(v);
                if v > 0.0 {
                    min_pos = min_pos.min(v);
                }
            }
        }
        // Headroom past the tallest bar for the legend (about 20 px per series of a ~430 px
        // plot), so the legend never hides a bar whichever corner it takes.
        let keep = 1.0 - ((self.series.len() as f64 * 20.0 + 30.0) / 430.0).min(0.6);
        if self.log_y {
            if !min_pos.is_finite() {
                bail!("log-scale bar chart has no positive value to draw");
            }
            let lo = min_pos / 2.0;
            let hi = lo * ((max * 2.0) / lo).powf(1.0 / keep);
            Ok(ValueRange { lo, hi, base: lo })
        } else {
            let lo = if min < 0.0 { min * 1.1 } else { 0.0 };
            let hi = if max > 0.0 { max * 1.1 / keep } else { 0.0 };
            let hi = if hi > lo { hi } else { lo + 1.0 };
            Ok(ValueRange { lo, hi, base: 0.0 })
        }
    }

    /// The corner for the legend: at the end of the category axis whose outermost category has
    /// the shorter bars, on the side opposite the axis the bars grow from (plotters places a
    /// legend where it is told, it does not look at the data).
    fn legend_corner(&self, orientation: Orientation) -> SeriesLabelPosition {
        let tallest = |i: usize| {
            self.series
                .iter()
                .filter_map(|s| s.values.get(i).copied().flatten())
                .filter(|v| !self.log_y || *v > 0.0)
                .fold(f64::NEG_INFINITY, f64::max)
        };
        let first_lower = tallest(0) <= tallest(self.categories.len() - 1);
        match (orientation, first_lower) {
            (Orientation::Vertical, true) => SeriesLabelPosition::UpperLeft,
            (Orientation::Vertical, false) => SeriesLabelPosition::UpperRight,
            (Orientation::Horizontal, true) => SeriesLabelPosition::UpperRight,
            (Orientation::Horizontal, false) => SeriesLabelPosition::LowerRight,
        }
    }
}

/// Colour of series `j`: the ten "tab10" colours of matplotlib (familiar from papers), then
/// plotters' `Palette99`.
fn series_colour(j: usize) -> RGBColor {
    const TAB10: [(u8, u8, u8); 10] = [
        (31, 119, 180),
        (255, 127, 14),
        (44, 160, 44),
        (214, 39, 40),
        (148, 103, 189),
        (140, 86, 75),
        (227, 119, 194),
        (127, 127, 127),
        (188, 189, 34),
        (23, 190, 207),
    ];
    match TAB10.get(j) {
        Some(&(r, g, b)) => RGBColor(r, g, b),
        None => {
            let (r, g, b) = Palette99::pick(j - TAB10.len()).rgb();
            RGBColor(r, g, b)
        }
    }
}
