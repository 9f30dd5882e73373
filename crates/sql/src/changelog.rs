//! Changelogs: the rows of a result that changes later (an unbounded GROUP BY, a top-N), each
//! with its kind, as Flink's `RowKind`. In the dataflow a changelog row carries its kind as one
//! more value after its columns ([`RowKind::push`], [`RowKind::pop`]).

use crate::types::{Row, Value};

/// What a changelog row does to the result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowKind {
    /// `+I`: a new row.
    Insert,
    /// `-U`: the row as it was before an update (retracted).
    UpdateBefore,
    /// `+U`: the row as it is after an update.
    UpdateAfter,
    /// `-D`: the row is gone.
    Delete,
}

impl RowKind {
    /// Flink's short form: `+I`, `-U`, `+U`, `-D`.
    pub fn short(self) -> &'static str {
        match self {
            RowKind::Insert => "+I",
            RowKind::UpdateBefore => "-U",
            RowKind::UpdateAfter => "+U",
            RowKind::Delete => "-D",
        }
    }

    /// Whether the row is added to the result (`+I`, `+U`) rather than taken out.
    pub fn adds(self) -> bool {
        matches!(self, RowKind::Insert | RowKind::UpdateAfter)
    }

    /// Appends the kind to `row` (as the dataflow carries it).
    pub fn push(self, mut row: Row) -> Row {
        row.push(Value::Int(self as i64));
        row
    }

    /// Takes the kind off a changelog row.
    pub fn pop(row: &mut Row) -> RowKind {
        match row.pop() {
            Some(Value::Int(1)) => RowKind::UpdateBefore,
            Some(Value::Int(2)) => RowKind::UpdateAfter,
            Some(Value::Int(3)) => RowKind::Delete,
            _ => RowKind::Insert,
        }
    }

    /// The kind of a changelog row, without taking it off.
    pub fn of(row: &[Value]) -> RowKind {
        match row.last() {
            Some(Value::Int(1)) => RowKind::UpdateBefore,
            Some(Value::Int(2)) => RowKind::UpdateAfter,
            Some(Value::Int(3)) => RowKind::Delete,
            _ => RowKind::Insert,
        }
    }
}
