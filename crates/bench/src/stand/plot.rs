//! Figures of the bench stand: grouped bar charts drawn into PNG files.
//!
//! A figure is described by a [`BarChart`] (categories on one axis, one coloured bar per
//! [`Series`] in each category, a legend) and drawn with [`BarChart::draw_png`] (vertical bars)
//! or [`BarChart::draw_png_horizontal`] (horizontal bars, e.g. latency percentiles). Every PNG is
//! [`PNG_WIDTH`] x [`PNG_HEIGHT`] pixels, 8-bit RGB, white background.
//!
//! Drawing uses `plotters` (bitmap backend only, into a memory buffer) and the pixels are encoded
//! with the `png` crate; the file is written only once the whole figure is drawn.
//!
//! # Fonts
//!
//! Text (title, axis labels, tick labels, legend, value labels) is rasterised with the pure-Rust
//! `ab_glyph` crate, by a thin wrapper around plotters' bitmap backend (plotters' own `ab_glyph`
//! text support spaces glyphs unevenly), so building needs no system library. The font itself is a
//! TrueType/OpenType file read once at run time: the file named by the environment variable
//! [`FONT_ENV`] if it is set, else the first readable file of [`FONT_PATHS`] (DejaVu Sans,
//! Liberation Sans, ...). A bold sibling (`<stem>-Bold.ttf`) is used for the title when present.
//! A figure without text would be unreadable, so when no font can be loaded drawing fails with an
//! error that names every path tried (install e.g. Debian's `fonts-dejavu-core`, or set
//! [`FONT_ENV`]).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use ab_glyph::{point, Font, FontVec, Glyph, GlyphId, PxScale, ScaleFont};
use anyhow::{anyhow, bail, Context, Result};
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint};
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use plotters_backend::{
    BackendColor, BackendCoord, BackendTextStyle, DrawingErrorKind, FontStyle as BackendFontStyle,
};

/// Width of every figure, in pixels.
pub const PNG_WIDTH: u32 = 900;
/// Height of every figure, in pixels.
pub const PNG_HEIGHT: u32 = 540;

/// Environment variable naming a `.ttf`/`.otf` file to use for the figures' text; when set it is
/// tried before [`FONT_PATHS`].
pub const FONT_ENV: &str = "XORFLOW_PLOT_FONT";

/// Font files tried, in order, for the figures' text (regular sans-serif faces of common Linux
/// distributions, macOS and Windows).
pub const FONT_PATHS: &[&str] = &[
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu-sans-fonts/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
    "/usr/share/fonts/liberation-sans/LiberationSans-Regular.ttf",
    "/usr/share/fonts/truetype/freefont/FreeSans.ttf",
    "/usr/share/fonts/truetype/noto/NotoSans-Regular.ttf",
    "/usr/share/fonts/noto/NotoSans-Regular.ttf",
    "/System/Library/Fonts/Supplemental/Arial.ttf",
    "/Library/Fonts/Arial.ttf",
    "C:\\Windows\\Fonts\\arial.ttf",
];

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
    /// Description of the category axis (the x axis of [`BarChart::draw_png`], the y axis of
    /// [`BarChart::draw_png_horizontal`]), e.g. `"stages (graph size)"`.
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

/// Where the legend goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Corner {
    UpperLeft,
    UpperRight,
    LowerRight,
}

/// Outline of bars and legend swatches.
const EDGE: RGBColor = RGBColor(40, 40, 40);

/// Fraction of a category's width taken by its group of bars.
const GROUP_WIDTH: f64 = 0.8;
/// The font family named in text styles; every family is drawn with the loaded font.
const FAMILY: &str = "sans-serif";

impl BarChart {
    /// Draws the chart with vertical bars into a PNG file at `path`
    /// ([`PNG_WIDTH`] x [`PNG_HEIGHT`] px, RGB), replacing any existing file.
    ///
    /// Errors, each message naming the file and, where it applies, the series and category:
    /// no categories; a series whose number of values differs from the number of categories; a
    /// non-finite value; a log axis without any positive value; no usable font (see the module
    /// docs); a path that cannot be written. Nothing is written when an error is returned.
    pub fn draw_png(&self, path: &Path) -> Result<()> {
        self.draw(path, Orientation::Vertical)
    }

    /// Draws the chart with horizontal bars into a PNG file at `path`: the categories run down
    /// the y axis (the first at the top), values along the x axis. Meant for distributions such
    /// as latency percentiles (`categories = ["p50", "p90", "p99", "max"]`, one series per
    /// tracking mode). Same size, value ranges and errors as [`BarChart::draw_png`].
    pub fn draw_png_horizontal(&self, path: &Path) -> Result<()> {
        self.draw(path, Orientation::Horizontal)
    }

    fn draw(&self, path: &Path, orientation: Orientation) -> Result<()> {
        let file = path.display();
        let range = self
            .value_range()
            .with_context(|| format!("figure {file} ({:?})", self.title))?;
        let fonts = fonts().with_context(|| format!("figure {file}"))?;

        let (w, h) = (PNG_WIDTH, PNG_HEIGHT);
        let mut rgb = vec![0u8; w as usize * h as usize * 3];
        {
            let canvas = Canvas {
                inner: BitMapBackend::with_buffer(&mut rgb, (w, h)),
                fonts,
            };
            let root = canvas.into_drawing_area();
            self.render_root(&root, range, orientation)
                .with_context(|| format!("drawing figure {file}"))?;
            root.present()
                .map_err(|e| anyhow!("drawing figure {file}: {e}"))?;
        }
        let png = encode_png(w, h, &rgb).with_context(|| format!("encoding figure {file}"))?;
        std::fs::write(path, png).with_context(|| format!("writing figure {file}"))?;
        Ok(())
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

    /// Picks the category axis' key points and the value axis' kind, then draws.
    fn render_root(
        &self,
        root: &DrawingArea<Canvas<'_>, Shift>,
        range: ValueRange,
        orientation: Orientation,
    ) -> Result<()> {
        root.fill(&WHITE).map_err(plot_err)?;
        let n = self.categories.len();
        let centers: Vec<f64> = (0..n).map(|i| i as f64 + 0.5).collect();
        let cat = Axis((0.0..n as f64).with_key_points(centers));
        let value_lin = || Axis(RangedCoordf64::from(range.lo..range.hi));
        let value_log = || {
            let (bold, light) = log_key_points(range.lo, range.hi);
            Axis(
                (range.lo..range.hi)
                    .log_scale()
                    .with_key_points(bold)
                    .with_light_points(light),
            )
        };
        match (orientation, self.log_y) {
            (Orientation::Vertical, false) => {
                self.render(root, cat, value_lin(), range, orientation)
            }
            (Orientation::Vertical, true) => {
                self.render(root, cat, value_log(), range, orientation)
            }
            (Orientation::Horizontal, false) => {
                self.render(root, value_lin(), cat, range, orientation)
            }
            (Orientation::Horizontal, true) => {
                self.render(root, value_log(), cat, range, orientation)
            }
        }
    }

    /// Draws title, axes, bars, value labels and legend; `x`/`y` are the coordinate specs, the
    /// category one spanning `0 .. n` with category `i` occupying `[i, i + 1)`.
    fn render<X, Y>(
        &self,
        root: &DrawingArea<Canvas<'_>, Shift>,
        x: X,
        y: Y,
        range: ValueRange,
        orientation: Orientation,
    ) -> Result<()>
    where
        X: Ranged<ValueType = f64, FormatOption = DefaultFormatting>,
        Y: Ranged<ValueType = f64, FormatOption = DefaultFormatting>,
    {
        let horizontal = orientation == Orientation::Horizontal;
        let n = self.categories.len();
        let tick_font: TextStyle = (FAMILY, 14).into_font().into();
        let desc_font = (FAMILY, 16).into_font();
        let value_font = (FAMILY, 11).into_font().color(&RGBColor(60, 60, 60));

        // Room left of the plot: tick labels (category names when horizontal) plus the axis
        // description.
        let widest = |labels: &mut dyn Iterator<Item = String>| -> Result<u32> {
            let mut widest = 0;
            for l in labels {
                widest = widest.max(root.estimate_text_size(&l, &tick_font).map_err(plot_err)?.0);
            }
            Ok(widest)
        };
        let left_ticks = if horizontal {
            widest(&mut self.categories.iter().cloned())?
        } else {
            let probes = [range.lo, range.hi, range.hi / 3.0, range.lo / 3.0];
            widest(&mut probes.iter().map(|v| fmt_value(*v)))?
        };
        let left_area = (left_ticks + 42).clamp(60, PNG_WIDTH / 3);

        let mut chart = ChartBuilder::on(root)
            .caption(&self.title, (FAMILY, 22).into_font().style(FontStyle::Bold))
            .margin(12)
            .margin_right(28)
            .x_label_area_size(56)
            .y_label_area_size(left_area)
            .build_cartesian_2d(x, y)
            .map_err(plot_err)?;

        // Category i sits at [i, i + 1); horizontal charts list the first category at the top.
        let slot = |i: usize| if horizontal { n - 1 - i } else { i };
        let cat_name = |v: &f64| {
            let k = (v - 0.5).round();
            if k < 0.0 || k >= n as f64 {
                return String::new();
            }
            self.categories[slot(k as usize)].clone()
        };
        let value_name = |v: &f64| fmt_value(*v);
        let (x_desc, y_desc) = if horizontal {
            (&self.y_label, &self.x_label)
        } else {
            (&self.x_label, &self.y_label)
        };
        let mut mesh = chart.configure_mesh();
        mesh.x_desc(x_desc.as_str())
            .y_desc(y_desc.as_str())
            .label_style(tick_font.clone())
            .axis_desc_style(desc_font)
            .bold_line_style(RGBColor(200, 200, 200).stroke_width(1))
            .light_line_style(RGBColor(238, 238, 238).stroke_width(1))
            .axis_style(BLACK.stroke_width(1))
            .x_labels(10)
            .y_labels(10)
            .max_light_lines(1);
        if horizontal {
            mesh.disable_y_mesh()
                .x_label_formatter(&value_name)
                .y_label_formatter(&cat_name);
        } else {
            mesh.disable_x_mesh()
                .x_label_formatter(&cat_name)
                .y_label_formatter(&value_name);
        }
        mesh.draw().map_err(plot_err)?;

        // (category position, value) -> chart coordinate.
        let at = |c: f64, v: f64| if horizontal { (v, c) } else { (c, v) };
        let ns = self.series.len().max(1);
        let bar_w = GROUP_WIDTH / ns as f64;
        // Position of series j in its group: in legend order left to right, or top to bottom.
        let place = |j: usize| if horizontal { ns - 1 - j } else { j };
        let bars = |j: usize| {
            let s = &self.series[j];
            s.values.iter().enumerate().filter_map(move |(i, v)| {
                let v = (*v)?;
                if self.log_y && v <= 0.0 {
                    return None;
                }
                let c0 = slot(i) as f64 + (1.0 - GROUP_WIDTH) / 2.0 + place(j) as f64 * bar_w;
                Some((c0, c0 + bar_w, v))
            })
        };

        for j in 0..self.series.len() {
            let colour = series_colour(j);
            chart
                .draw_series(bars(j).map(|(c0, c1, v)| {
                    Rectangle::new([at(c0, range.base), at(c1, v)], colour.filled())
                }))
                .map_err(plot_err)?;
            chart
                .draw_series(
                    bars(j)
                        .map(|(c0, c1, v)| Rectangle::new([at(c0, range.base), at(c1, v)], EDGE)),
                )
                .map_err(plot_err)?;
        }

        // Value labels where they fit: beyond the end of each bar (above a positive vertical bar,
        // below a negative one; right of a positive horizontal bar, left of a negative one) when
        // the bar is at least as wide (thick) as the text, and never outside the plot.
        let (px, py) = chart.plotting_area().get_pixel_range();
        let mut labels = Vec::new();
        for j in 0..self.series.len() {
            for (c0, c1, v) in bars(j) {
                let text = fmt_value(v);
                let (tw, th) = root
                    .estimate_text_size(&text, &value_font)
                    .map_err(plot_err)?;
                let (tw, th) = (tw as i32, th as i32);
                let p0 = chart.backend_coord(&at(c0, v));
                let p1 = chart.backend_coord(&at(c1, v));
                let mid = (c0 + c1) / 2.0;
                if horizontal {
                    let thickness = (p0.1 - p1.1).abs();
                    if th > thickness {
                        continue;
                    }
                    if v >= 0.0 {
                        if p0.0 + 4 + tw > px.end {
                            continue;
                        }
                        labels.push((text, at(mid, v), (4, 0), Pos::new(HPos::Left, VPos::Center)));
                    } else {
                        if p0.0 - 4 - tw < px.start {
                            continue;
                        }
                        let pos = Pos::new(HPos::Right, VPos::Center);
                        labels.push((text, at(mid, v), (-4, 0), pos));
                    }
                } else {
                    let width = (p1.0 - p0.0).abs();
                    if tw > width + 2 {
                        continue;
                    }
                    if v >= 0.0 {
                        if p0.1 - 3 - th < py.start {
                            continue;
                        }
                        labels.push((
                            text,
                            at(mid, v),
                            (0, -3),
                            Pos::new(HPos::Center, VPos::Bottom),
                        ));
                    } else {
                        if p0.1 + 3 + th > py.end {
                            continue;
                        }
                        labels.push((text, at(mid, v), (0, 3), Pos::new(HPos::Center, VPos::Top)));
                    }
                }
            }
        }
        chart
            .draw_series(labels.into_iter().map(|(text, coord, offset, pos)| {
                EmptyElement::at(coord) + Text::new(text, offset, value_font.pos(pos))
            }))
            .map_err(plot_err)?;

        if !self.series.is_empty() {
            self.draw_legend(root, (px, py), orientation)?;
        }
        Ok(())
    }

    /// Draws the legend: a white box with a grey border holding one colour swatch and name per
    /// series, 10 px inside the corner of the plot (pixel ranges `px`, `py`) picked by
    /// [`BarChart::legend_corner`]. (plotters' own legend sizes its lines with a crude font
    /// estimate, which misaligns swatches and names.)
    fn draw_legend(
        &self,
        root: &DrawingArea<Canvas<'_>, Shift>,
        (px, py): (std::ops::Range<i32>, std::ops::Range<i32>),
        orientation: Orientation,
    ) -> Result<()> {
        const PAD: i32 = 5;
        const SWATCH: (i32, i32) = (16, 11);
        const GAP: i32 = 8;
        const LINE: i32 = 20;
        const INSET: i32 = 10;
        let font: TextStyle = (FAMILY, 14).into_font().into();
        let mut text_w = 0;
        for s in &self.series {
            let (w, _) = root.estimate_text_size(&s.name, &font).map_err(plot_err)?;
            text_w = text_w.max(w as i32);
        }
        let w = 2 * PAD + SWATCH.0 + GAP + text_w;
        let h = 2 * PAD + LINE * self.series.len() as i32;
        let (x0, y0) = match self.legend_corner(orientation) {
            Corner::UpperLeft => (px.start + INSET, py.start + INSET),
            Corner::UpperRight => (px.end - INSET - w, py.start + INSET),
            Corner::LowerRight => (px.end - INSET - w, py.end - INSET - h),
        };
        let frame = [(x0, y0), (x0 + w, y0 + h)];
        root.draw(&Rectangle::new(frame, WHITE.mix(0.92).filled()))
            .map_err(plot_err)?;
        root.draw(&Rectangle::new(frame, RGBColor(120, 120, 120)))
            .map_err(plot_err)?;
        let text_style = font.pos(Pos::new(HPos::Left, VPos::Center));
        for (j, s) in self.series.iter().enumerate() {
            let cy = y0 + PAD + LINE * j as i32 + LINE / 2;
            let swatch = [
                (x0 + PAD, cy - SWATCH.1 / 2),
                (x0 + PAD + SWATCH.0, cy + SWATCH.1 / 2),
            ];
            root.draw(&Rectangle::new(swatch, series_colour(j).filled()))
                .map_err(plot_err)?;
            root.draw(&Rectangle::new(swatch, EDGE)).map_err(plot_err)?;
            let at = (x0 + PAD + SWATCH.0 + GAP, cy);
            root.draw(&Text::new(s.name.as_str(), at, text_style.clone()))
                .map_err(plot_err)?;
        }
        Ok(())
    }

    /// The corner for the legend: at the end of the category axis whose outermost category has
    /// the shorter bars, on the side opposite the axis the bars grow from.
    fn legend_corner(&self, orientation: Orientation) -> Corner {
        let tallest = |i: usize| {
            self.series
                .iter()
                .filter_map(|s| s.values.get(i).copied().flatten())
                .filter(|v| !self.log_y || *v > 0.0)
                .fold(f64::NEG_INFINITY, f64::max)
        };
        let first_lower = tallest(0) <= tallest(self.categories.len() - 1);
        match (orientation, first_lower) {
            (Orientation::Vertical, true) => Corner::UpperLeft,
            (Orientation::Vertical, false) => Corner::UpperRight,
            (Orientation::Horizontal, true) => Corner::UpperRight,
            (Orientation::Horizontal, false) => Corner::LowerRight,
        }
    }
}

/// Adapter giving an `f64` coordinate spec the default formatting that plotters' mesh insists
/// on; the labels are printed by our own formatters anyway.
struct Axis<R>(R);

impl<R: Ranged<ValueType = f64>> Ranged for Axis<R> {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        self.0.map(value, limit)
    }

    fn key_points<H: KeyPointHint>(&self, hint: H) -> Vec<f64> {
        self.0.key_points(hint)
    }

    fn range(&self) -> std::ops::Range<f64> {
        self.0.range()
    }

    fn axis_pixel_range(&self, limit: (i32, i32)) -> std::ops::Range<i32> {
        self.0.axis_pixel_range(limit)
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

/// Formats a value for tick and bar labels with 3 significant digits and no trailing zeros:
/// `0`, `0.0123`, `1.5`, `123`, `12345`; scientific below 0.001 and from 100000 on (`1e-4`,
/// `2.5e5`).
fn fmt_value(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 {
        return "0".to_string();
    }
    if !(1e-3..1e5).contains(&a) {
        // Round to 3 significant digits, then print the shortest form ("1e5", "2.5e5").
        let rounded: f64 = format!("{v:.2e}").parse().unwrap_or(v);
        return format!("{rounded:e}");
    }
    let decimals = (2 - a.log10().floor() as i32).max(0) as usize;
    let s = format!("{v:.decimals$}");
    let s = if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    };
    if s == "-0" {
        "0".to_string()
    } else {
        s
    }
}

/// Tick positions of a log axis spanning `lo .. hi` (both > 0): the bold (labelled) points are
/// the powers of ten inside the range, or 1-2-5 multiples of them when that gives fewer than 3
/// points, or every multiple 1..9 when even that gives fewer than 2. The light points (grid
/// lines only) are the remaining multiples 1..9 of each power of ten inside the range.
fn log_key_points(lo: f64, hi: f64) -> (Vec<f64>, Vec<f64>) {
    let first = lo.log10().floor() as i32;
    let last = hi.log10().ceil() as i32;
    let multiples = |ms: &[f64]| -> Vec<f64> {
        let mut out = Vec::new();
        for e in first..=last {
            let p = 10f64.powi(e);
            for m in ms {
                // Products like 3 * 0.1 are not exact; parse back the printed value.
                let v: f64 = format!("{:e}", m * p).parse().unwrap_or(m * p);
                if v >= lo * (1.0 - 1e-9) && v <= hi * (1.0 + 1e-9) {
                    out.push(v);
                }
            }
        }
        out
    };
    let all = multiples(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]);
    let mut bold = multiples(&[1.0]);
    if bold.len() < 3 {
        bold = multiples(&[1.0, 2.0, 5.0]);
    }
    if bold.len() < 2 {
        bold = all.clone();
    }
    let light = all.into_iter().filter(|v| !bold.contains(v)).collect();
    (bold, light)
}

/// Encodes `rgb` (row-major, 3 bytes a pixel, `w` x `h`) as an 8-bit RGB PNG.
fn encode_png(w: u32, h: u32, rgb: &[u8]) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    let mut encoder = png::Encoder::new(&mut out, w, h);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder.write_header()?;
    writer.write_image_data(rgb)?;
    writer.finish()?;
    Ok(out)
}

/// Converts a plotters error (whose error type borrows nothing but is not always `Send`).
fn plot_err<E: std::fmt::Display>(e: E) -> anyhow::Error {
    anyhow!("{e}")
}

/// The faces used for the figures' text.
struct Fonts {
    regular: FontVec,
    /// The title's face; the regular one is used when no bold sibling file exists.
    bold: Option<FontVec>,
}

impl Fonts {
    /// Face, scale and glyphs (positioned in a box whose top-left corner is the origin) of
    /// `text`, with the box's width and height in pixels.
    fn layout<S: BackendTextStyle>(
        &self,
        text: &str,
        style: &S,
    ) -> (&FontVec, Vec<Glyph>, i32, i32) {
        let font = match style.style() {
            BackendFontStyle::Bold => self.bold.as_ref().unwrap_or(&self.regular),
            _ => &self.regular,
        };
        let scale = PxScale::from(style.size() as f32);
        let scaled = font.as_scaled(scale);
        let ascent = scaled.ascent();
        let mut pen = 0.0f32;
        let mut prev: Option<GlyphId> = None;
        let mut glyphs = Vec::with_capacity(text.len());
        for c in text.chars() {
            let id = scaled.glyph_id(c);
            if let Some(p) = prev {
                pen += scaled.kern(p, id);
            }
            glyphs.push(id.with_scale_and_position(scale, point(pen, ascent)));
            pen += scaled.h_advance(id);
            prev = Some(id);
        }
        let height = (ascent - scaled.descent()).ceil() as i32;
        (font, glyphs, pen.ceil() as i32, height)
    }
}

/// Loads the figures' fonts once per process; later calls return the first outcome.
fn fonts() -> Result<&'static Fonts> {
    static FONTS: OnceLock<std::result::Result<Fonts, String>> = OnceLock::new();
    FONTS
        .get_or_init(load_fonts)
        .as_ref()
        .map_err(|msg| anyhow!("{msg}"))
}

/// Reads the first usable font of [`FONT_ENV`] and [`FONT_PATHS`], and its bold sibling when
/// present; the error lists every path tried with the reason it was not used.
fn load_fonts() -> std::result::Result<Fonts, String> {
    let mut candidates: Vec<PathBuf> = Vec::new();
    if let Some(p) = std::env::var_os(FONT_ENV) {
        candidates.push(PathBuf::from(p));
    }
    candidates.extend(FONT_PATHS.iter().map(PathBuf::from));
    load_fonts_from(candidates)
}

/// Loads the first usable font of `candidates` (and its bold sibling when present).
fn load_fonts_from(candidates: Vec<PathBuf>) -> std::result::Result<Fonts, String> {
    let read = |path: &Path| -> std::result::Result<FontVec, String> {
        let bytes = std::fs::read(path).map_err(|e| e.to_string())?;
        FontVec::try_from_vec(bytes).map_err(|_| "not a TrueType/OpenType font".to_string())
    };
    let mut tried = Vec::new();
    for path in candidates {
        match read(&path) {
            Ok(regular) => {
                let bold = bold_sibling(&path).and_then(|b| read(&b).ok());
                return Ok(Fonts { regular, bold });
            }
            Err(e) => tried.push(format!("{} ({e})", path.display())),
        }
    }
    Err(format!(
        "no font for the figures' text; tried: {}. Install a TrueType font (e.g. Debian's \
         fonts-dejavu-core) or set {FONT_ENV} to a .ttf file",
        tried.join(", ")
    ))
}

/// plotters' bitmap backend with its text drawn by `ab_glyph` directly: plotters' own
/// `ab_glyph` text support (0.3.7) places each glyph at its outline's left edge instead of
/// applying the side bearing, which spaces digits unevenly ("1 0"). Everything but text is
/// passed through unchanged.
///
/// Text metrics: a font of size `s` spans `s` pixels from ascent to descent (ab_glyph's
/// `PxScale`), so a text box is `advance width x s` pixels, anchored as the style asks and
/// rotated by its transform around the anchor point.
struct Canvas<'a> {
    inner: BitMapBackend<'a>,
    fonts: &'static Fonts,
}

impl<'a> DrawingBackend for Canvas<'a> {
    type ErrorType = <BitMapBackend<'a> as DrawingBackend>::ErrorType;

    fn get_size(&self) -> (u32, u32) {
        self.inner.get_size()
    }

    fn ensure_prepared(&mut self) -> std::result::Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.ensure_prepared()
    }

    fn present(&mut self) -> std::result::Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.present()
    }

    fn draw_pixel(
        &mut self,
        point: BackendCoord,
        color: BackendColor,
    ) -> std::result::Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.draw_pixel(point, color)
    }

    fn draw_line<S: plotters_backend::BackendStyle>(
        &mut self,
        from: BackendCoord,
        to: BackendCoord,
        style: &S,
    ) -> std::result::Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.draw_line(from, to, style)
    }

    fn draw_rect<S: plotters_backend::BackendStyle>(
        &mut self,
        upper_left: BackendCoord,
        bottom_right: BackendCoord,
        style: &S,
        fill: bool,
    ) -> std::result::Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.draw_rect(upper_left, bottom_right, style, fill)
    }

    fn draw_path<S: plotters_backend::BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        path: I,
        style: &S,
    ) -> std::result::Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.draw_path(path, style)
    }

    fn draw_circle<S: plotters_backend::BackendStyle>(
        &mut self,
        center: BackendCoord,
        radius: u32,
        style: &S,
        fill: bool,
    ) -> std::result::Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.draw_circle(center, radius, style, fill)
    }

    fn fill_polygon<S: plotters_backend::BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        vert: I,
        style: &S,
    ) -> std::result::Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.fill_polygon(vert, style)
    }

    fn blit_bitmap(
        &mut self,
        pos: BackendCoord,
        size: (u32, u32),
        src: &[u8],
    ) -> std::result::Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.blit_bitmap(pos, size, src)
    }

    fn draw_text<S: BackendTextStyle>(
        &mut self,
        text: &str,
        style: &S,
        pos: BackendCoord,
    ) -> std::result::Result<(), DrawingErrorKind<Self::ErrorType>> {
        let color = style.color();
        if color.alpha == 0.0 || text.is_empty() {
            return Ok(());
        }
        let (font, glyphs, width, height) = self.fonts.layout(text, style);
        let anchor = style.anchor();
        let dx = match anchor.h_pos {
            HPos::Left => 0,
            HPos::Center => -width / 2,
            HPos::Right => -width,
        };
        let dy = match anchor.v_pos {
            VPos::Top => 0,
            VPos::Center => -height / 2,
            VPos::Bottom => -height,
        };
        let transform = style.transform();
        let mut result = Ok(());
        for glyph in glyphs {
            let Some(outline) = font.outline_glyph(glyph) else {
                continue; // blank glyph (space)
            };
            let bounds = outline.px_bounds();
            let (x0, y0) = (bounds.min.x as i32 + dx, bounds.min.y as i32 + dy);
            outline.draw(|x, y, coverage| {
                if coverage <= 0.0 || result.is_err() {
                    return;
                }
                let (tx, ty) = transform.transform(x0 + x as i32, y0 + y as i32);
                let at = (pos.0 + tx, pos.1 + ty);
                result = self
                    .inner
                    .draw_pixel(at, color.mix(f64::from(coverage.min(1.0))));
            });
        }
        result
    }

    fn estimate_text_size<S: BackendTextStyle>(
        &self,
        text: &str,
        style: &S,
    ) -> std::result::Result<(u32, u32), DrawingErrorKind<Self::ErrorType>> {
        let (_, _, width, height) = self.fonts.layout(text, style);
        Ok((width.max(0) as u32, height.max(0) as u32))
    }
}

/// `DejaVuSans.ttf` -> `DejaVuSans-Bold.ttf`, `LiberationSans-Regular.ttf` ->
/// `LiberationSans-Bold.ttf`.
fn bold_sibling(path: &Path) -> Option<PathBuf> {
    let stem = path.file_stem()?.to_str()?;
    let ext = path.extension()?.to_str()?;
    let base = stem.strip_suffix("-Regular").unwrap_or(stem);
    Some(path.with_file_name(format!("{base}-Bold.{ext}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SIGNATURE: [u8; 8] = [0x89, b'P', b'N', b'G', b'\r', b'\n', 0x1a, b'\n'];

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

    /// Width and height from the IHDR chunk, after checking the signature and chunk type.
    fn png_size(bytes: &[u8]) -> (u32, u32) {
        assert!(bytes.len() > 24, "PNG too short: {} bytes", bytes.len());
        assert_eq!(bytes[..8], SIGNATURE, "not a PNG signature");
        assert_eq!(&bytes[12..16], b"IHDR");
        let w = u32::from_be_bytes(bytes[16..20].try_into().unwrap());
        let h = u32::from_be_bytes(bytes[20..24].try_into().unwrap());
        (w, h)
    }

    /// Decodes an 8-bit RGB PNG into its pixels.
    fn pixels(bytes: &[u8]) -> Vec<[u8; 3]> {
        let decoder = png::Decoder::new(std::io::Cursor::new(bytes));
        let mut reader = decoder.read_info().unwrap();
        let mut buf = vec![0; reader.output_buffer_size().unwrap()];
        let info = reader.next_frame(&mut buf).unwrap();
        assert_eq!(info.color_type, png::ColorType::Rgb);
        buf[..info.buffer_size()]
            .chunks_exact(3)
            .map(|p| [p[0], p[1], p[2]])
            .collect()
    }

    fn count_colour(px: &[[u8; 3]], c: RGBColor) -> usize {
        px.iter().filter(|p| **p == [c.0, c.1, c.2]).count()
    }

    /// Draws, then checks the file is a PNG of the documented size whose bars of each series
    /// (and nothing else of that colour but the legend swatch) are present.
    fn check_drawn(chart: &BarChart, path: &Path) -> Vec<[u8; 3]> {
        let bytes = std::fs::read(path).unwrap();
        assert_eq!(png_size(&bytes), (PNG_WIDTH, PNG_HEIGHT));
        let px = pixels(&bytes);
        assert_eq!(px.len(), (PNG_WIDTH * PNG_HEIGHT) as usize);
        // Text is rendered: anti-aliased glyphs leave many grey levels, lines only a few.
        let mut greys: Vec<u8> = px
            .iter()
            .filter(|p| p[0] == p[1] && p[1] == p[2])
            .map(|p| p[0])
            .collect();
        greys.sort_unstable();
        greys.dedup();
        assert!(
            greys.len() > 40,
            "no anti-aliased text: grey levels {greys:?}"
        );
        for j in 0..chart.series.len() {
            let n = count_colour(&px, series_colour(j));
            // Legend swatch alone is 15x13 = 195 pixels (minus its edge).
            assert!(n > 300, "series {j}: only {n} pixels of its colour");
        }
        px
    }

    #[test]
    fn linear_chart_is_a_png_of_the_documented_size() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("linear.png");
        let mut chart = traffic_chart(false);
        // Comparable magnitudes, so that every series' bars are many pixels high.
        chart.series[0].values = vec![Some(20.0), Some(25.0), None];
        chart.draw_png(&path).unwrap();
        check_drawn(&chart, &path);
    }

    #[test]
    fn log_chart_is_a_png_of_the_documented_size() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log.png");
        let chart = traffic_chart(true);
        chart.draw_png(&path).unwrap();
        check_drawn(&chart, &path);
    }

    #[test]
    fn horizontal_chart_is_a_png_of_the_documented_size() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("latency.png");
        let chart = BarChart {
            title: "Latency".into(),
            x_label: "percentile".into(),
            y_label: "latency, µs".into(),
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
        };
        chart.draw_png_horizontal(&path).unwrap();
        check_drawn(&chart, &path);
    }

    #[test]
    fn drawing_replaces_an_existing_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("again.png");
        std::fs::write(&path, b"old contents").unwrap();
        traffic_chart(false).draw_png(&path).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(bytes[..8], SIGNATURE);
    }

    #[test]
    fn length_mismatch_is_an_error_naming_the_series_and_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bad.png");
        let mut chart = traffic_chart(false);
        chart.series[1].values.pop();
        let err = format!("{:#}", chart.draw_png(&path).unwrap_err());
        assert!(err.contains("ack per element"), "{err}");
        assert!(err.contains("has 2 values"), "{err}");
        assert!(err.contains("bad.png"), "{err}");
        assert!(!path.exists(), "nothing is written on error");
    }

    #[test]
    fn log_chart_without_positive_values_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("empty-log.png");
        let chart = BarChart {
            series: vec![Series {
                name: "zeros".into(),
                values: vec![Some(0.0), None, Some(-1.0)],
            }],
            ..traffic_chart(true)
        };
        let err = format!("{:#}", chart.draw_png(&path).unwrap_err());
        assert!(err.contains("no positive value"), "{err}");
        assert!(!path.exists());
        // The same data is fine on a linear axis (bars down to -1).
        let linear = BarChart {
            log_y: false,
            ..chart
        };
        linear.draw_png(&path).unwrap();
        assert!(path.exists());
    }

    #[test]
    fn non_finite_values_and_missing_categories_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nan.png");
        let mut chart = traffic_chart(false);
        chart.series[0].values[2] = Some(f64::NAN);
        let err = format!("{:#}", chart.draw_png(&path).unwrap_err());
        assert!(
            err.contains("xor tracking") && err.contains("\"100\""),
            "{err}"
        );

        let empty = BarChart {
            categories: vec![],
            series: vec![],
            ..traffic_chart(false)
        };
        let err = format!("{:#}", empty.draw_png(&path).unwrap_err());
        assert!(err.contains("no categories"), "{err}");
    }

    #[test]
    fn unwritable_path_is_an_error_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("no-such-dir").join("fig.png");
        let err = format!("{:#}", traffic_chart(false).draw_png(&path).unwrap_err());
        assert!(err.contains("no-such-dir"), "{err}");
    }

    #[test]
    fn values_are_formatted_with_three_significant_digits() {
        let cases = [
            (0.0, "0"),
            (0.001, "0.001"),
            (0.01234, "0.0123"),
            (1.5, "1.5"),
            (2.0, "2"),
            (123.4, "123"),
            (12345.0, "12345"),
            (-0.25, "-0.25"),
            (0.0001, "1e-4"),
            (250_000.0, "2.5e5"),
            (100_000.0, "1e5"),
        ];
        for (v, want) in cases {
            assert_eq!(fmt_value(v), want, "fmt_value({v})");
        }
    }

    #[test]
    fn log_ticks_are_decades_or_finer_for_narrow_ranges() {
        let (bold, light) = log_key_points(0.001, 200.0);
        assert_eq!(bold, vec![0.001, 0.01, 0.1, 1.0, 10.0, 100.0]);
        assert!(light.contains(&0.002) && light.contains(&200.0));
        assert!(!light.contains(&300.0));

        let (bold, _) = log_key_points(3.0, 40.0);
        assert_eq!(bold, vec![5.0, 10.0, 20.0]);

        let (bold, _) = log_key_points(2.5, 4.5);
        assert_eq!(bold, vec![3.0, 4.0]);
    }

    #[test]
    fn font_loading_skips_unusable_files_and_names_every_path_tried() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing.ttf");
        let garbage = dir.path().join("Garbage.ttf");
        std::fs::write(&garbage, b"not a font").unwrap();
        let Err(msg) = load_fonts_from(vec![missing.clone(), garbage.clone()]) else {
            panic!("no usable font, yet loading succeeded");
        };
        assert!(msg.contains(&missing.display().to_string()), "{msg}");
        assert!(msg.contains(&garbage.display().to_string()), "{msg}");
        assert!(msg.contains("not a TrueType/OpenType font"), "{msg}");
        assert!(msg.contains(FONT_ENV), "{msg}");

        // A usable font after unusable ones is taken, with its bold sibling when it has one.
        let fonts = fonts().expect("the tests need one of FONT_PATHS");
        let regular = dir.path().join("Face-Regular.ttf");
        std::fs::write(&regular, fonts.regular.as_slice()).unwrap();
        let loaded = load_fonts_from(vec![missing.clone(), garbage.clone(), regular]).unwrap();
        assert_eq!(loaded.regular.as_slice(), fonts.regular.as_slice());
        assert!(loaded.bold.is_none());
        std::fs::write(dir.path().join("Face-Bold.ttf"), fonts.regular.as_slice()).unwrap();
        let regular = dir.path().join("Face-Regular.ttf");
        assert!(load_fonts_from(vec![regular]).unwrap().bold.is_some());
    }

    #[test]
    fn bold_sibling_names() {
        let p = bold_sibling(Path::new("/f/DejaVuSans.ttf")).unwrap();
        assert_eq!(p, Path::new("/f/DejaVuSans-Bold.ttf"));
        let p = bold_sibling(Path::new("/f/LiberationSans-Regular.ttf")).unwrap();
        assert_eq!(p, Path::new("/f/LiberationSans-Bold.ttf"));
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
            .draw_png(&dir.join("plot-sample.png"))
            .unwrap();
        traffic_chart(true)
            .draw_png(&dir.join("plot-sample-log.png"))
            .unwrap();
        let latency = BarChart {
            title: "Latency of one element, 30 stages".into(),
            x_label: "percentile".into(),
            y_label: "latency, µs".into(),
            categories: vec!["p50".into(), "p90".into(), "p99".into(), "max".into()],
            series: vec![
                Series {
                    name: "xor tracking".into(),
                    values: vec![Some(12.5), Some(31.0), Some(84.0), Some(412.0)],
                },
                Series {
                    name: "ack per element".into(),
                    values: vec![Some(15.0), Some(44.5), Some(121.0), Some(388.0)],
                },
            ],
            log_y: false,
        };
        latency
            .draw_png_horizontal(&dir.join("plot-sample-horizontal.png"))
            .unwrap();
    }
}
