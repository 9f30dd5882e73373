//! Planning an inner join: the conjuncts of its ON and WHERE sorted into predicates of one
//! input (pushed below the join), equalities of the two (the keys), bounds on the two inputs'
//! event times (an interval join), the same window on both sides (a window join), and the rest
//! (checked on each joined row).

use super::{JoinKind, Plan};
use crate::error::{Result, SqlError};
use crate::expr::compile::compile;
use crate::expr::{BinOp, Scalar};
use crate::types::{SqlType, Value};
use sqlparser::ast::Expr;

/// Plans `left JOIN right ON on WHERE where_` (a comma join has no `on`).
///
/// # Errors
/// A condition that is not BOOLEAN, or a join without an equality of the two inputs.
pub fn plan_join(
    left: Plan,
    right: Plan,
    on: Option<&Expr>,
    where_: Option<&Expr>,
) -> Result<Plan> {
    if left.changelog() || right.changelog() {
        let at = on.or(where_).map_or(
            sqlparser::tokenizer::Location::new(0, 0),
            crate::expr::compile::place,
        );
        return Err(SqlError::at(
            at,
            "a join of a changelog (an updating input) is not supported: join append-only inputs",
        ));
    }
    let (ls, rs) = (left.schema(), right.schema());
    let schema = ls.concat(&rs);
    let nl = ls.fields.len();
    let mut conjuncts = Vec::new();
    let mut at = None;
    for e in on.into_iter().chain(where_) {
        at.get_or_insert(e);
        let t = compile(e, &schema)?;
        if t.ty != SqlType::Boolean {
            return Err(SqlError::of(
                e,
                format!("a join condition must be BOOLEAN, not {}", t.ty),
            ));
        }
        split_and(t.expr, &mut conjuncts);
    }
    let side = |e: &Scalar| {
        let mut cols = Vec::new();
        e.columns(&mut cols);
        match (cols.iter().all(|c| *c < nl), cols.iter().all(|c| *c >= nl)) {
            (true, true) => Side::None,
            (true, false) => Side::Left,
            (false, true) => Side::Right,
            _ => Side::Both,
        }
    };
    let to_right = |e: &Scalar| e.remap(&|c| c - nl);
    let (mut left_only, mut right_only, mut residual) = (Vec::new(), Vec::new(), Vec::new());
    let (mut left_keys, mut right_keys) = (Vec::new(), Vec::new());
    let mut diffs: Vec<(usize, usize, BinOp, i64)> = Vec::new();
    for c in conjuncts {
        match side(&c) {
            Side::Left | Side::None => left_only.push(c),
            Side::Right => right_only.push(to_right(&c)),
            Side::Both => {
                if let Scalar::Binary(BinOp::Eq, a, b, _) = &c {
                    match (side(a), side(b)) {
                        (Side::Left, Side::Right) => {
                            left_keys.push((**a).clone());
                            right_keys.push(to_right(b));
                            continue;
                        }
                        (Side::Right, Side::Left) => {
                            left_keys.push((**b).clone());
                            right_keys.push(to_right(a));
                            continue;
                        }
                        _ => {}
                    }
                }
                if let Some(d) = time_difference(&c, nl) {
                    diffs.push(d);
                }
                residual.push(c);
            }
        }
    }
    if left_keys.is_empty() {
        let what = at.map_or_else(String::new, |e| format!(" ('{e}')"));
        return Err(SqlError::of(
            at.unwrap_or(&Expr::Value(sqlparser::ast::Value::Null.into())),
            format!("a join needs an equality of a column of each input{what}: cross joins are not supported"),
        ));
    }
    let left = with_filter(left, left_only);
    let right = with_filter(right, right_only);
    let kind = window_join(&left, &right, &left_keys, &right_keys)
        .or_else(|| interval_join(&left, &right, &diffs))
        .unwrap_or(JoinKind::Regular);
    let mut plan = Plan::Join {
        left: Box::new(left),
        right: Box::new(right),
        kind,
        left_keys,
        right_keys,
        schema,
    };
    // Bounds that made it an interval join are checked again on each pair: they hold for the
    // event-time columns, which a late row's element time does not follow.
    if let Some(p) = residual.into_iter().reduce(and) {
        plan = Plan::Filter {
            input: Box::new(plan),
            predicate: p,
        };
    }
    Ok(plan)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Side {
    None,
    Left,
    Right,
    Both,
}

fn and(a: Scalar, b: Scalar) -> Scalar {
    Scalar::Binary(BinOp::And, Box::new(a), Box::new(b), SqlType::Boolean)
}

fn split_and(e: Scalar, out: &mut Vec<Scalar>) {
    match e {
        Scalar::Binary(BinOp::And, a, b, _) => {
            split_and(*a, out);
            split_and(*b, out);
        }
        e => out.push(e),
    }
}

fn with_filter(p: Plan, preds: Vec<Scalar>) -> Plan {
    match preds.into_iter().reduce(and) {
        Some(predicate) => Plan::Filter {
            input: Box::new(p),
            predicate,
        },
        None => p,
    }
}

/// `col + ms` (or `col - ms`, or `col`): the column and the ms added.
fn column_plus(e: &Scalar) -> Option<(usize, i64)> {
    match e {
        Scalar::Column(c) => Some((*c, 0)),
        Scalar::Binary(op @ (BinOp::Add | BinOp::Sub), a, b, _) => match (a.as_ref(), b.as_ref()) {
            (Scalar::Column(c), Scalar::Literal(Value::Interval(ms))) => {
                Some((*c, if *op == BinOp::Add { *ms } else { -ms }))
            }
            _ => None,
        },
        _ => None,
    }
}

/// A comparison of a left column and a right column (each plus a constant): as
/// `(left column, right column, op, c)` meaning `L op R + c`.
fn time_difference(e: &Scalar, nl: usize) -> Option<(usize, usize, BinOp, i64)> {
    let Scalar::Binary(op @ (BinOp::Lt | BinOp::LtEq | BinOp::Gt | BinOp::GtEq), a, b, _) = e
    else {
        return None;
    };
    let ((ca, ka), (cb, kb)) = (column_plus(a)?, column_plus(b)?);
    // ca + ka op cb + kb  <=>  ca op cb + (kb - ka)
    let flip = |op: BinOp| match op {
        BinOp::Lt => BinOp::Gt,
        BinOp::LtEq => BinOp::GtEq,
        BinOp::Gt => BinOp::Lt,
        _ => BinOp::LtEq,
    };
    match (ca < nl, cb < nl) {
        (true, false) => Some((ca, cb - nl, *op, kb - ka)),
        (false, true) => Some((cb, ca - nl, flip(*op), ka - kb)),
        _ => None,
    }
}

/// A window join: both inputs are window results and the keys include their window_start and
/// window_end.
fn window_join(left: &Plan, right: &Plan, lk: &[Scalar], rk: &[Scalar]) -> Option<JoinKind> {
    let (l, r) = (left.window_props()?, right.window_props()?);
    let pair = |lc: usize, rc: usize| {
        lk.iter()
            .zip(rk)
            .any(|(a, b)| a.as_column() == Some(lc) && b.as_column() == Some(rc))
    };
    (pair(l.start, r.start) && pair(l.end, r.end)).then_some(JoinKind::Window {
        left_end: l.end,
        right_end: r.end,
    })
}

/// An interval join: a lower and an upper bound on `L.t - R.t` for event-time columns of each
/// input, turned into bounds on the element times' difference `b - a` (right minus left).
fn interval_join(
    left: &Plan,
    right: &Plan,
    diffs: &[(usize, usize, BinOp, i64)],
) -> Option<JoinKind> {
    let (lt, rt) = (left.time_columns(), right.time_columns());
    let (mut lo, mut hi): (Option<i64>, Option<i64>) = (None, None);
    for &(lc, rc, op, k) in diffs {
        let (&(_, lo_off), &(_, ro_off)) = (
            lt.iter().find(|t| t.0 == lc)?,
            rt.iter().find(|t| t.0 == rc)?,
        );
        // L.col = a + lo_off, R.col = b + ro_off; L.col op R.col + k
        // <=> a - b op k + ro_off - lo_off  <=>  b - a flip(op) lo_off - ro_off - k.
        let bound = lo_off - ro_off - k;
        match op {
            BinOp::GtEq => hi = Some(hi.map_or(bound, |h: i64| h.min(bound))),
            BinOp::Gt => hi = Some(hi.map_or(bound - 1, |h: i64| h.min(bound - 1))),
            BinOp::LtEq => lo = Some(lo.map_or(bound, |l: i64| l.max(bound))),
            BinOp::Lt => lo = Some(lo.map_or(bound + 1, |l: i64| l.max(bound + 1))),
            _ => {}
        }
    }
    match (lo, hi) {
        (Some(lower), Some(upper)) if lower <= upper => Some(JoinKind::Interval { lower, upper }),
        _ => None,
    }
}
