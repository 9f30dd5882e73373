//! Logical plans: what a query computes, as a tree of relational operators each of which maps
//! onto one runtime operator (`crate::exec`). Built from the SQL text by [`build`]; printed by
//! `EXPLAIN` ([`Plan::explain`]).

pub mod build;

use crate::catalog::Table;
use crate::expr::aggregate::AggCall;
use crate::expr::Scalar;
use crate::schema::Schema;
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
            | Plan::WindowAggregate { schema, .. } => schema.clone(),
        }
    }

    /// The output's event-time column, if the rows still have one (a time attribute, in
    /// Flink's terms): a table's rowtime passed through filters and projections, or a window
    /// aggregate's `window_time`.
    pub fn rowtime(&self) -> Option<usize> {
        match self {
            Plan::Scan { table } => table.rowtime.map(|r| r.column),
            Plan::Filter { input, .. } => input.rowtime(),
            Plan::Project { input, exprs, .. } => {
                let t = input.rowtime()?;
                exprs.iter().position(|e| e.as_column() == Some(t))
            }
            Plan::WindowAssign { input, .. } => input.rowtime(),
            Plan::WindowAggregate { slots, .. } => {
                slots.iter().position(|s| *s == GroupSlot::WindowTime)
            }
        }
    }

    /// Every window the plan computes, inputs first.
    pub fn windows(&self, out: &mut Vec<WindowKind>) {
        match self {
            Plan::Scan { .. } => {}
            Plan::Filter { input, .. } | Plan::Project { input, .. } => input.windows(out),
            Plan::WindowAssign { input, window, .. } | Plan::WindowAggregate { input, window, .. } => {
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
        };
        match self {
            Plan::Scan { .. } => {}
            Plan::Filter { input, .. }
            | Plan::Project { input, .. }
            | Plan::WindowAssign { input, .. }
            | Plan::WindowAggregate { input, .. } => input.explain_into(out, depth + 1),
        }
    }
}
