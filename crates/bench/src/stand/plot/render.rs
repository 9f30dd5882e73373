//! Drawing a [`BarChart`] with plotters: its chart builder and mesh, its nested coordinate for
//! the groups of bars (a discrete axis of categories, each holding a 0..1 axis where the group's
//! bars sit), its log scale, and its series labels as the legend. Only the bar value labels are
//! placed here: plotters has no element that labels a bar with its value.

use super::axis::{fmt_value, log_key_points};
use super::{series_colour, BarChart, Orientation, ValueRange, WIDTH};
use anyhow::{anyhow, Result};
use plotters::coord::combinators::{BuildNestedCoord, NestedValue};
use plotters::coord::ranged1d::ValueFormatter;
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;
/// A point on the category axis: a category (its index into [`BarChart::categories`]) and a
/// position inside it, 0..1.
type CatValue<'o> = NestedValue<&'o usize, f64>;

/// The font family named in the SVG; the viewer picks the face.
const FAMILY: &str = "sans-serif";
/// Outline of bars and legend swatches.
const EDGE: RGBColor = RGBColor(40, 40, 40);
/// Fraction of a category's width taken by its group of bars.
const GROUP_WIDTH: f64 = 0.8;

/// One bar: its category, its span inside the category (0..1) and its value.
#[derive(Clone, Copy, Debug)]
struct Bar {
    category: usize,
    from: f64,
    to: f64,
    value: f64,
}

/// Draws `bc` on `root`: title, axes, bars, value labels and legend.
pub(super) fn render(
    bc: &BarChart,
    root: &Area<'_>,
    range: ValueRange,
    orientation: Orientation,
) -> Result<()> {
    root.fill(&WHITE).map_err(plot_err)?;
    let n = bc.categories.len();
    // The y axis grows upwards: horizontal charts list their categories in reverse so the first
    // is at the top.
    let order: Vec<usize> = match orientation {
        Orientation::Vertical => (0..n).collect(),
        Orientation::Horizontal => (0..n).rev().collect(),
    };
    let cats = || order.as_slice().nested_coord(|_| 0.0..1.0);
    let lin = || RangedCoordf64::from(range.lo..range.hi);
    let log = || {
        let (bold, light) = log_key_points(range.lo, range.hi);
        (range.lo..range.hi)
            .log_scale()
            .with_key_points(bold)
            .with_light_points(light)
    };
    let cat_name = |v: &CatValue<'_>| match v {
        NestedValue::Category(i) => bc.categories[**i].clone(),
        NestedValue::Value(..) => String::new(),
    };
    let value_name = |v: &f64| fmt_value(*v);
    let mut builder = chart_builder(bc, root, range, orientation)?;
    let p = Painter {
        bc,
        root,
        range,
        orientation,
        order: &order,
    };
    match (orientation, bc.log_y) {
        (Orientation::Vertical, false) => {
            let chart = builder
                .build_cartesian_2d(cats(), lin())
                .map_err(plot_err)?;
            p.paint(chart, &cat_name, &value_name, |c, v| (c, v))
        }
        (Orientation::Vertical, true) => {
            let chart = builder
                .build_cartesian_2d(cats(), log())
                .map_err(plot_err)?;
            p.paint(chart, &cat_name, &value_name, |c, v| (c, v))
        }
        (Orientation::Horizontal, false) => {
            let chart = builder
                .build_cartesian_2d(lin(), cats())
                .map_err(plot_err)?;
            p.paint(chart, &value_name, &cat_name, |c, v| (v, c))
        }
        (Orientation::Horizontal, true) => {
            let chart = builder
                .build_cartesian_2d(log(), cats())
                .map_err(plot_err)?;
            p.paint(chart, &value_name, &cat_name, |c, v| (v, c))
        }
    }
}

/// The chart's frame: title, margins, and room left of the plot for the tick labels (category
/// names when horizontal) plus the axis description.
fn chart_builder<'a, 'b>(
    bc: &BarChart,
    root: &'a Area<'b>,
    range: ValueRange,
    orientation: Orientation,
) -> Result<ChartBuilder<'a, 'b, SVGBackend<'b>>> {
    let tick_font: TextStyle = (FAMILY, 14).into_font().into();
    let mut widest = 0;
    let labels: Vec<String> = match orientation {
        Orientation::Horizontal => bc.categories.clone(),
        Orientation::Vertical => [range.lo, range.hi, range.hi / 3.0, range.lo / 3.0]
            .iter()
            .map(|v| fmt_value(*v))
            .collect(),
    };
    for l in &labels {
        widest = widest.max(root.estimate_text_size(l, &tick_font).map_err(plot_err)?.0);
    }
    let mut builder = ChartBuilder::on(root);
    builder
        .caption(&bc.title, (FAMILY, 22).into_font().style(FontStyle::Bold))
        .margin(12)
        .margin_right(28)
        .x_label_area_size(56)
        .y_label_area_size((widest + 42).clamp(60, WIDTH / 3));
    Ok(builder)
}

/// What drawing one chart needs besides plotters' chart context.
struct Painter<'c, 'a, 'b> {
    bc: &'c BarChart,
    root: &'a Area<'b>,
    range: ValueRange,
    orientation: Orientation,
    /// The categories in axis order (the category axis' values).
    order: &'c [usize],
}

impl<'c> Painter<'c, '_, '_> {
    /// Draws mesh, bars, value labels and legend into `chart`; `at` turns a point on the
    /// category axis and a value into the chart's coordinate.
    fn paint<'x, 'y: 'x, X, Y>(
        &self,
        mut chart: ChartContext<'x, SVGBackend<'y>, Cartesian2d<X, Y>>,
        x_name: &dyn Fn(&X::ValueType) -> String,
        y_name: &dyn Fn(&Y::ValueType) -> String,
        at: impl Fn(CatValue<'c>, f64) -> (X::ValueType, Y::ValueType),
    ) -> Result<()>
    where
        X: Ranged + ValueFormatter<X::ValueType>,
        Y: Ranged + ValueFormatter<Y::ValueType>,
    {
        let horizontal = self.orientation == Orientation::Horizontal;
        let (x_desc, y_desc) = if horizontal {
            (&self.bc.y_label, &self.bc.x_label)
        } else {
            (&self.bc.x_label, &self.bc.y_label)
        };
        let n = self.bc.categories.len();
        let mut mesh = chart.configure_mesh();
        mesh.x_desc(x_desc.as_str())
            .y_desc(y_desc.as_str())
            .label_style((FAMILY, 14))
            .axis_desc_style((FAMILY, 16))
            .bold_line_style(RGBColor(200, 200, 200).stroke_width(1))
            .light_line_style(RGBColor(238, 238, 238).stroke_width(1))
            .axis_style(BLACK.stroke_width(1))
            .x_label_formatter(x_name)
            .y_label_formatter(y_name)
            .max_light_lines(1);
        // The category axis gets a label per category and no grid lines.
        if horizontal {
            mesh.x_labels(10).y_labels(n).disable_y_mesh();
        } else {
            mesh.x_labels(n).y_labels(10).disable_x_mesh();
        }
        mesh.draw().map_err(plot_err)?;

        let point = |b: &Bar, sub: f64, v: f64| at(self.cat_value(b.category, sub), v);
        for (j, s) in self.bc.series.iter().enumerate() {
            let colour = series_colour(j);
            let bars = self.bars(j);
            let rect = |b: &Bar| [point(b, b.from, self.range.base), point(b, b.to, b.value)];
            chart
                .draw_series(
                    bars.iter()
                        .map(|b| Rectangle::new(rect(b), colour.filled())),
                )
                .map_err(plot_err)?
                .label(s.name.as_str())
                .legend(move |(x, y)| {
                    // A filled, outlined box left of the series name, centred on its line.
                    let corners = [(0, -5), (16, 6)];
                    EmptyElement::at((x, y))
                        + Rectangle::new(corners, colour.filled())
                        + Rectangle::new(corners, EDGE)
                });
            chart
                .draw_series(bars.iter().map(|b| Rectangle::new(rect(b), EDGE)))
                .map_err(plot_err)?;
        }
        let labels = self.value_labels(&chart, &point)?;
        let font = (FAMILY, 11).into_font().color(&RGBColor(60, 60, 60));
        chart
            .draw_series(labels.into_iter().map(|(text, coord, offset, pos)| {
                EmptyElement::at(coord) + Text::new(text, offset, font.pos(pos))
            }))
            .map_err(plot_err)?;
        if !self.bc.series.is_empty() {
            chart
                .configure_series_labels()
                .position(self.bc.legend_corner(self.orientation))
                .margin(6)
                .legend_area_size(24)
                .label_font((FAMILY, 14))
                .background_style(WHITE.mix(0.92))
                .border_style(RGBColor(120, 120, 120))
                .draw()
                .map_err(plot_err)?;
        }
        Ok(())
    }

    /// The point `sub` (0..1) inside category `i` on the category axis.
    fn cat_value(&self, i: usize, sub: f64) -> CatValue<'c> {
        let slot = match self.orientation {
            Orientation::Vertical => i,
            Orientation::Horizontal => self.order.len() - 1 - i,
        };
        NestedValue::Value(&self.order[slot], sub)
    }

    /// The bars of series `j`: one per category with a value (and, on a log axis, a positive
    /// one), placed in the group in legend order, left to right or top to bottom.
    fn bars(&self, j: usize) -> Vec<Bar> {
        let ns = self.bc.series.len().max(1);
        let width = GROUP_WIDTH / ns as f64;
        let place = match self.orientation {
            Orientation::Vertical => j,
            Orientation::Horizontal => ns - 1 - j,
        };
        let from = (1.0 - GROUP_WIDTH) / 2.0 + place as f64 * width;
        let s = &self.bc.series[j];
        s.values
            .iter()
            .enumerate()
            .filter_map(|(category, v)| {
                let value = (*v)?;
                (!self.bc.log_y || value > 0.0).then_some(Bar {
                    category,
                    from,
                    to: from + width,
                    value,
                })
            })
            .collect()
    }

    /// Value labels where they fit: beyond the end of each bar (above a positive vertical bar,
    /// below a negative one; right of a positive horizontal bar, left of a negative one) when the
    /// bar is at least as wide (thick) as the text, and never outside the plot. Each is its text,
    /// the bar end's coordinate, a pixel offset from it and the text's anchor.
    #[allow(clippy::type_complexity)]
    fn value_labels<X: Ranged, Y: Ranged>(
        &self,
        chart: &ChartContext<'_, SVGBackend<'_>, Cartesian2d<X, Y>>,
        point: &dyn Fn(&Bar, f64, f64) -> (X::ValueType, Y::ValueType),
    ) -> Result<Vec<(String, (X::ValueType, Y::ValueType), (i32, i32), Pos)>> {
        let font: TextStyle = (FAMILY, 11).into_font().into();
        let (px, py) = chart.plotting_area().get_pixel_range();
        let mut labels = Vec::new();
        for j in 0..self.bc.series.len() {
            for b in self.bars(j) {
                let text = fmt_value(b.value);
                let (tw, th) = self
                    .root
                    .estimate_text_size(&text, &font)
                    .map_err(plot_err)?;
                let (tw, th) = (tw as i32, th as i32);
                let p0 = chart.backend_coord(&point(&b, b.from, b.value));
                let p1 = chart.backend_coord(&point(&b, b.to, b.value));
                let mid = point(&b, (b.from + b.to) / 2.0, b.value);
                let positive = b.value >= 0.0;
                let placed = match self.orientation {
                    Orientation::Horizontal if th > (p0.1 - p1.1).abs() => None,
                    Orientation::Horizontal if positive => (p0.0 + 4 + tw <= px.end)
                        .then_some(((4, 0), Pos::new(HPos::Left, VPos::Center))),
                    Orientation::Horizontal => (p0.0 - 4 - tw >= px.start)
                        .then_some(((-4, 0), Pos::new(HPos::Right, VPos::Center))),
                    Orientation::Vertical if tw > (p1.0 - p0.0).abs() + 2 => None,
                    Orientation::Vertical if positive => (p0.1 - 3 - th >= py.start)
                        .then_some(((0, -3), Pos::new(HPos::Center, VPos::Bottom))),
                    Orientation::Vertical => (p0.1 + 3 + th <= py.end)
                        .then_some(((0, 3), Pos::new(HPos::Center, VPos::Top))),
                };
                if let Some((offset, pos)) = placed {
                    labels.push((text, mid, offset, pos));
                }
            }
        }
        Ok(labels)
    }
}

/// Converts a plotters error (whose error type borrows nothing but is not always `Send`).
fn plot_err<E: std::fmt::Display>(e: E) -> anyhow::Error {
    anyhow!("{e}")
}
