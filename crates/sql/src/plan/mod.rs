//! Logical plans: what a query computes, as a tree of relational operators each of which maps
//! onto one runtime operator (`crate::exec`). Built from the SQL text by [`build`]; printed by
//! `EXPLAIN` ([`Plan::explain`]).

pub mod build;
pub mod join;
pub mod rank;

use crate::catalog::Table;
use crate::expr::aggregate::AggCall;
use crate::expr::Scalar;
use crate::schema::Schema;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

/// A window table function's windows, sizes in ms (Flink's `TUMBLE`, `HOP`, `CUMULATE`,
/// `SESSION`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WindowKind {
    /// `TUMBLE(data, DESCRIPTOR(t), size)`
    Tumble {
        /// Window length, ms.
        size: i64,
    },
    /// `HOP(data, DESCRIPTOR(t), slide, size)`
    Hop {
        /// Distance between window starts, ms.
        slide: i64,
        /// Window length, ms.
        size: i64,
    },
    /// `CUMULATE(data, DESCRIPTOR(t), step, size)`: windows `[s, s + step)`, `[s, s + 2 step)`,
    /// ... up to `[s, s + size)`, for `s` a multiple of `size`.
    Cumulate {
        /// Growth of each window, ms.
        step: i64,
        /// Largest window, ms.
        size: i64,
    },
    /// `SESSION(data PARTITION BY keys, DESCRIPTOR(t), gap)`
    Session {
        /// Inactivity that closes a session, ms.
        gap: i64,
    },
}

/// Where a window aggregate's output column comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GroupSlot {
    /// The `i`th grouping key.
    Key(usize),
    /// `window_start`
    WindowStart,
    /// `window_end`
    WindowEnd,
    /// `window_time` (`window_end - 1 ms`, the result's event time)
    WindowTime,
}

/// How a join pairs rows, and how long it keeps them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JoinKind {
    /// Equal keys, rows kept forever (Flink's regular join of append-only inputs): each pair is
    /// emitted once, when its second row arrives.
    Regular,
    /// Equal keys and event times in bounds (Flink's interval join): a left row at element time
    /// `a` and a right one at `b` join when `a + lower <= b <= a + upper`; rows are kept until
    /// the frontier passes their interval.
    Interval {
        /// Lower bound of `b - a`, ms.
        lower: i64,
        /// Upper bound of `b - a`, ms.
        upper: i64,
    },
    /// Equal keys and the same window (Flink's window join): both inputs are window results,
    /// their rows kept until the frontier passes the window's end (the left input's column
    /// `left_end`), then joined and emitted.
    Window {
        /// The left input's `window_end` column.
        left_end: usize,
        /// The right input's.
        right_end: usize,
    },
}

/// The columns of a windowed relation that hold its rows' window, and the windows' kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WindowProps {
    /// The `window_start` column.
    pub start: usize,
    /// The `window_end` column.
    pub end: usize,
    /// The windows.
    pub kind: WindowKind,
}

/// A relational operator and its inputs.
#[derive(Clone, Debug)]
pub enum Plan {
    /// A table's rows, from its connector.
    Scan {
        /// The table.
        table: Table,
    },
    /// Rows for which `predicate` holds.
    Filter {
        /// Input.
        input: Box<Plan>,
        /// The condition.
        predicate: Scalar,
    },
    /// One output row per input row, of `exprs`.
    Project {
        /// Input.
        input: Box<Plan>,
        /// The output columns.
        exprs: Vec<Scalar>,
        /// Their names and types.
        schema: Schema,
    },
    /// Each row with the window (or windows, for `HOP`/`CUMULATE`) it belongs to appended:
    /// `window_start`, `window_end`, `window_time`. A window table function whose rows are read
    /// directly, not aggregated.
    WindowAssign {
        /// Input.
        input: Box<Plan>,
        /// The windows.
        window: WindowKind,
        /// The input's event-time column.
        time_column: usize,
        /// Input columns and the three window columns.
        schema: Schema,
    },
    /// A window aggregate: per window and group, the aggregates, emitted once when trAcker's
    /// frontier passes the window's end (docs/sql.md, "Emission").
    WindowAggregate {
        /// The rows aggregated (the window table function's input).
        input: Box<Plan>,
        /// The windows.
        window: WindowKind,
        /// The input's event-time column.
        time_column: usize,
        /// The grouping keys, over the input.
        keys: Vec<Scalar>,
        /// The output's group columns, in GROUP BY order.
        slots: Vec<GroupSlot>,
        /// The aggregate calls; their results follow the group columns.
        calls: Vec<AggCall>,
        /// Group columns, then aggregates.
        schema: Schema,
        /// Set when the input's rows are themselves window results and the query groups by
        /// their window (Flink's cascading window aggregate): the input's `window_start` and
        /// `window_end` columns; `window` is then the input's windows and `time_column` unused.
        cascade: Option<(usize, usize)>,
    },
    /// An unbounded GROUP BY: per group, its aggregates so far, as a changelog (`+I` for a new
    /// group, `-U`/`+U` when it changes, `-D` when its last row is retracted). The input may be
    /// a changelog itself.
    GroupAggregate {
        /// Input.
        input: Box<Plan>,
        /// The grouping keys, over the input; the output's first columns.
        keys: Vec<Scalar>,
        /// The aggregate calls; their results follow the keys.
        calls: Vec<AggCall>,
        /// Keys, then aggregates.
        schema: Schema,
    },
    /// `ROW_NUMBER() OVER (PARTITION BY p ORDER BY o) AS rn ... WHERE rn <= limit`: per
    /// partition, the first `limit` rows in order, with their rank, as a changelog (a row that
    /// drops out is deleted, rows whose rank changes are updated). Input append-only.
    TopN {
        /// Input.
        input: Box<Plan>,
        /// The partition keys.
        partition: Vec<Scalar>,
        /// The order: expressions, each descending or not.
        order: Vec<(Scalar, bool)>,
        /// How many rows per partition (set from the enclosing query's WHERE).
        limit: Option<usize>,
        /// The input's columns, then the rank (BIGINT).
        schema: Schema,
    },
    /// An inner join.
    Join {
        /// Left input.
        left: Box<Plan>,
        /// Right input.
        right: Box<Plan>,
        /// How rows pair up.
        kind: JoinKind,
        /// Equi-join keys over the left input's rows.
        left_keys: Vec<Scalar>,
        /// The same over the right input's (pairwise equal to `left_keys`).
        right_keys: Vec<Scalar>,
        /// Left columns, then right columns.
        schema: Schema,
    },
}

impl Plan {
    /// The columns of the operator's output rows.
    pub fn schema(&self) -> Schema {
        match self {
            Plan::Scan { table } => table.schema.clone(),
            Plan::Filter { input, .. } => input.schema(),
            Plan::Project { schema, .. }
            | Plan::WindowAssign { schema, .. }
            | Plan::WindowAggregate { schema, .. }
            | Plan::GroupAggregate { schema, .. }
            | Plan::TopN { schema, .. }
            | Plan::Join { schema, .. } => schema.clone(),
        }
    }

    /// The output's event-time column, if the rows still have one (a time attribute, in
    /// Flink's terms): a table's rowtime passed through filters and projections, or a window
    /// aggregate's `window_time`.
    pub fn rowtime(&self) -> Option<usize> {
        self.time_columns()
            .into_iter()
            .find(|(_, offset)| *offset == 0)
            .map(|(c, _)| c)
    }

    /// The columns whose value is the row's element time plus a constant: `(column, offset
    /// ms)`. A table's rowtime (offset 0); a window result's `window_time` (0), `window_end`
    /// (1) and, for fixed windows, `window_start` (1 - size). Interval joins turn bounds on
    /// these columns into bounds on element times.
    pub fn time_columns(&self) -> Vec<(usize, i64)> {
        match self {
            Plan::Scan { table } => table.rowtime.map(|r| (r.column, 0)).into_iter().collect(),
            Plan::Filter { input, .. } => input.time_columns(),
            Plan::Project { input, exprs, .. } => {
                let t = input.time_columns();
                (exprs.iter().enumerate())
                    .filter_map(|(i, e)| {
                        let c = e.as_column()?;
                        t.iter().find(|(tc, _)| *tc == c).map(|(_, o)| (i, *o))
                    })
                    .collect()
            }
            Plan::WindowAssign { input, .. } => input.time_columns(),
            Plan::WindowAggregate {
                slots,
                window,
                cascade,
                ..
            } => (slots.iter().enumerate())
                .filter_map(|(i, s)| match (s, window) {
                    (GroupSlot::WindowTime, _) => Some((i, 0)),
                    (GroupSlot::WindowEnd, _) => Some((i, 1)),
                    // A cascade's (and CUMULATE's) windows are the key's, not `window`'s.
                    (
                        GroupSlot::WindowStart,
                        WindowKind::Tumble { size } | WindowKind::Hop { size, .. },
                    ) if cascade.is_none() => Some((i, 1 - size)),
                    _ => None,
                })
                .collect(),
            Plan::Join {
                left,
                kind: JoinKind::Window { .. },
                ..
            } => left.time_columns(),
            Plan::Join { .. } | Plan::GroupAggregate { .. } | Plan::TopN { .. } => Vec::new(),
        }
    }

    /// Where the rows' windows are, if they are window results (through projections, filters
    /// and window joins).
    pub fn window_props(&self) -> Option<WindowProps> {
        match self {
            Plan::WindowAggregate { slots, window, .. } => Some(WindowProps {
                start: slots.iter().position(|s| *s == GroupSlot::WindowStart)?,
                end: slots.iter().position(|s| *s == GroupSlot::WindowEnd)?,
                kind: *window,
            }),
            Plan::Filter { input, .. } => input.window_props(),
            Plan::Project { input, exprs, .. } => {
                let w = input.window_props()?;
                let at = |c: usize| exprs.iter().position(|e| e.as_column() == Some(c));
                Some(WindowProps {
                    start: at(w.start)?,
                    end: at(w.end)?,
                    kind: w.kind,
                })
            }
            Plan::Join {
                left,
                kind: JoinKind::Window { .. },
                ..
            } => left.window_props(),
            _ => None,
        }
    }

    /// Whether the output is a changelog (rows carry a [`crate::changelog::RowKind`]) rather
    /// than append-only.
    pub fn changelog(&self) -> bool {
        match self {
            Plan::GroupAggregate { .. } | Plan::TopN { .. } => true,
            Plan::Filter { input, .. } | Plan::Project { input, .. } => input.changelog(),
            _ => false,
        }
    }

    /// Adds to `acc` the columns of each table that the plan's output columns `out` need,
    /// through every operator (column pruning: a source leaves the other columns NULL, so a
    /// query reading two columns of a wide table does not carry, clone and drop the rest).
    pub fn needed_columns(
        &self,
        out: &BTreeSet<usize>,
        acc: &mut BTreeMap<String, BTreeSet<usize>>,
    ) {
        let cols = |e: &Scalar, set: &mut BTreeSet<usize>| {
            let mut v = Vec::new();
            e.columns(&mut v);
            set.extend(v);
        };
        match self {
            Plan::Scan { table } => {
                (acc.entry(table.name.to_ascii_lowercase()).or_default())
                    .extend(out.iter().copied());
            }
            Plan::Filter { input, predicate } => {
                let mut need = out.clone();
                cols(predicate, &mut need);
                input.needed_columns(&need, acc);
            }
            Plan::Project { input, exprs, .. } => {
                let mut need = BTreeSet::new();
                for i in out {
                    if let Some(e) = exprs.get(*i) {
                        cols(e, &mut need);
                    }
                }
                input.needed_columns(&need, acc);
            }
            Plan::WindowAssign {
                input, time_column, ..
            } => {
                let n = input.schema().fields.len();
                let mut need: BTreeSet<usize> = out.iter().copied().filter(|c| *c < n).collect();
                need.insert(*time_column);
                input.needed_columns(&need, acc);
            }
            Plan::WindowAggregate {
                input,
                time_column,
                keys,
                calls,
                cascade,
                ..
            } => {
                let mut need = BTreeSet::from([*time_column]);
                keys.iter().for_each(|k| cols(k, &mut need));
                for c in calls {
                    c.arg
                        .iter()
                        .chain(&c.filter)
                        .for_each(|e| cols(e, &mut need));
                }
                if let Some((s, e)) = cascade {
                    need.extend([*s, *e]);
                }
                input.needed_columns(&need, acc);
            }
            Plan::GroupAggregate {
                input, keys, calls, ..
            } => {
                let mut need = BTreeSet::new();
                keys.iter().for_each(|k| cols(k, &mut need));
                for c in calls {
                    c.arg
                        .iter()
                        .chain(&c.filter)
                        .for_each(|e| cols(e, &mut need));
                }
                input.needed_columns(&need, acc);
            }
            Plan::TopN {
                input,
                partition,
                order,
                ..
            } => {
                let n = input.schema().fields.len();
                let mut need: BTreeSet<usize> = out.iter().copied().filter(|c| *c < n).collect();
                partition.iter().for_each(|k| cols(k, &mut need));
                order.iter().for_each(|(k, _)| cols(k, &mut need));
                input.needed_columns(&need, acc);
            }
            Plan::Join {
                left,
                right,
                left_keys,
                right_keys,
                kind,
                ..
            } => {
                let nl = left.schema().fields.len();
                let mut l: BTreeSet<usize> = out.iter().copied().filter(|c| *c < nl).collect();
                let mut r: BTreeSet<usize> =
                    out.iter().filter(|c| **c >= nl).map(|c| c - nl).collect();
                left_keys.iter().for_each(|k| cols(k, &mut l));
                right_keys.iter().for_each(|k| cols(k, &mut r));
                if let JoinKind::Window {
                    left_end,
                    right_end,
                } = kind
                {
                    l.insert(*left_end);
                    r.insert(*right_end);
                }
                // Interval joins and window joins need the inputs' time columns too.
                l.extend(left.time_columns().into_iter().map(|t| t.0));
                r.extend(right.time_columns().into_iter().map(|t| t.0));
                left.needed_columns(&l, acc);
                right.needed_columns(&r, acc);
            }
        }
    }

    /// Every window the plan computes, inputs first.
    pub fn windows(&self, out: &mut Vec<WindowKind>) {
        match self {
            Plan::Scan { .. } => {}
            Plan::Filter { input, .. }
            | Plan::Project { input, .. }
            | Plan::GroupAggregate { input, .. }
            | Plan::TopN { input, .. } => input.windows(out),
            Plan::Join { left, right, .. } => {
                left.windows(out);
                right.windows(out);
            }
            Plan::WindowAssign { input, window, .. }
            | Plan::WindowAggregate { input, window, .. } => {
                input.windows(out);
                out.push(*window);
            }
        }
    }

    /// The plan as `EXPLAIN` prints it: one operator per line, inputs indented below.
    pub fn explain(&self) -> String {
        let mut out = String::new();
        self.explain_into(&mut out, 0);
        out
    }

    fn explain_into(&self, out: &mut String, depth: usize) {
        let pad = "  ".repeat(depth);
        let names = |s: &Schema| s.names().join(", ");
        let _ = match self {
            Plan::Scan { table } => writeln!(
                out,
                "{pad}Scan {} [connector={}] ({})",
                table.name,
                table.connector(),
                names(&table.schema)
            ),
            Plan::Filter { predicate, .. } => writeln!(out, "{pad}Filter {predicate:?}"),
            Plan::Project { schema, .. } => writeln!(out, "{pad}Project ({})", names(schema)),
            Plan::WindowAssign { window, .. } => writeln!(out, "{pad}WindowAssign {window:?}"),
            Plan::WindowAggregate {
                window,
                keys,
                calls,
                schema,
                ..
            } => writeln!(
                out,
                "{pad}WindowAggregate {window:?} keys={} aggregates={} ({})",
                keys.len(),
                calls.len(),
                names(schema)
            ),
            Plan::Join {
                kind, left_keys, ..
            } => {
                writeln!(out, "{pad}Join {kind:?} keys={}", left_keys.len())
            }
            Plan::GroupAggregate {
                keys,
                calls,
                schema,
                ..
            } => writeln!(
                out,
                "{pad}GroupAggregate (changelog) keys={} aggregates={} ({})",
                keys.len(),
                calls.len(),
                names(schema)
            ),
            Plan::TopN {
                partition, limit, ..
            } => writeln!(
                out,
                "{pad}TopN (changelog) partition keys={} limit={limit:?}",
                partition.len()
            ),
        };
        match self {
            Plan::Scan { .. } => {}
            Plan::Filter { input, .. }
            | Plan::Project { input, .. }
            | Plan::WindowAssign { input, .. }
            | Plan::WindowAggregate { input, .. }
            | Plan::GroupAggregate { input, .. }
            | Plan::TopN { input, .. } => input.explain_into(out, depth + 1),
            Plan::Join { left, right, .. } => {
                left.explain_into(out, depth + 1);
                right.explain_into(out, depth + 1);
            }
        }
    }
}
