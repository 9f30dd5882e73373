//! Top-N and deduplication: `ROW_NUMBER() OVER (PARTITION BY p ORDER BY o) AS rn` in a
//! subquery, and `WHERE rn <= N` around it (Flink's top-N; `N = 1` ordered by time is its
//! deduplication). Any other use of OVER is refused.

use super::build::project;
use super::Plan;
use crate::error::{Result, SqlError};
use crate::expr::compile::compile;
use crate::expr::{BinOp, Scalar};
use crate::schema::{Field, Schema};
use crate::types::{SqlType, Value};
use sqlparser::ast::{Expr, OrderBySort, SelectItem, WindowSpec, WindowType};

/// The SELECT item that is `ROW_NUMBER() OVER (...)`, if any: its index and window.
///
/// # Errors
/// Another function with OVER, or ROW_NUMBER over a named window.
pub fn row_number(items: &[SelectItem]) -> Result<Option<(usize, &WindowSpec)>> {
    for (i, item) in items.iter().enumerate() {
        let e = match item {
            SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => e,
            _ => continue,
        };
        let Expr::Function(f) = e else { continue };
        let Some(over) = &f.over else { continue };
        if !f.name.to_string().eq_ignore_ascii_case("ROW_NUMBER") {
            return Err(SqlError::of(
                e,
                format!(
                    "{}() OVER is not supported: only ROW_NUMBER() in a top-N",
                    f.name
                ),
            ));
        }
        let WindowType::WindowSpec(spec) = over else {
            return Err(SqlError::of(
                e,
                "ROW_NUMBER() OVER a named window is not supported",
            ));
        };
        if spec.window_frame.is_some() {
            return Err(SqlError::of(e, "ROW_NUMBER() takes no window frame"));
        }
        return Ok(Some((i, spec)));
    }
    Ok(None)
}

/// The top-N of `input` by `spec`, then the SELECT list (`items[rank_item]` is the rank).
///
/// # Errors
/// A partition or order expression that does not compile; no ORDER BY.
pub fn plan_top_n(
    input: Plan,
    items: &[SelectItem],
    rank_item: usize,
    spec: &WindowSpec,
) -> Result<Plan> {
    let schema = input.schema();
    if input.changelog() {
        return Err(SqlError::of(
            &items[rank_item],
            "a top-N over a changelog (an updating input) is not supported",
        ));
    }
    let partition = (spec.partition_by.iter())
        .map(|e| compile(e, &schema).map(|t| t.expr))
        .collect::<Result<Vec<_>>>()?;
    if spec.order_by.is_empty() {
        return Err(SqlError::of(
            &items[rank_item],
            "ROW_NUMBER() needs an ORDER BY in its OVER (...)",
        ));
    }
    let mut order = Vec::new();
    for o in &spec.order_by {
        let desc = match &o.options.sort {
            Some(OrderBySort::Desc) => true,
            Some(OrderBySort::Asc) | None => false,
            Some(_) => return Err(SqlError::of(&o.expr, "ORDER BY ... USING is not supported")),
        };
        order.push((compile(&o.expr, &schema)?.expr, desc));
    }
    let n = schema.fields.len();
    let mut fields = schema.fields.clone();
    let rank_name = match &items[rank_item] {
        SelectItem::ExprWithAlias { alias, .. } => alias.value.clone(),
        _ => "rownum".into(),
    };
    fields.push(Field::new(&rank_name, SqlType::Bigint));
    // The SELECT list without the rank item is planned over the input (so `*` means the
    // input's columns), then put over the top-N, whose rows are the input's columns followed
    // by the rank; the rank item goes after the columns of the items before it.
    let at = project(input.clone(), &items[..rank_item])?
        .schema()
        .fields
        .len();
    let Plan::Project {
        exprs: mut out_exprs,
        schema: mut out_schema,
        ..
    } = project(input.clone(), &without(items, rank_item))?
    else {
        unreachable!("project() plans a projection")
    };
    out_exprs.insert(at, Scalar::Column(n));
    out_schema
        .fields
        .insert(at, Field::new(&rank_name, SqlType::Bigint));
    let top = Plan::TopN {
        input: Box::new(input),
        partition,
        order,
        limit: None,
        schema: Schema::new(fields),
    };
    Ok(Plan::Project {
        input: Box::new(top),
        exprs: out_exprs,
        schema: out_schema,
    })
}

fn without(items: &[SelectItem], i: usize) -> Vec<SelectItem> {
    let mut v = items.to_vec();
    v.remove(i);
    v
}

/// Takes `rank <= N` (or `< N`, `= 1`) out of `predicate` when `plan`'s column is a top-N's
/// rank with no limit yet, setting the limit; returns the plan and what is left of the
/// predicate.
pub fn take_limit(mut plan: Plan, predicate: Scalar) -> (Plan, Option<Scalar>) {
    let mut rest = Vec::new();
    let mut conjuncts = Vec::new();
    split_and(predicate, &mut conjuncts);
    for c in conjuncts {
        let limit = match &c {
            Scalar::Binary(op, a, b, _) => match (a.as_column(), b.as_ref(), op) {
                (Some(col), Scalar::Literal(Value::Int(n)), BinOp::LtEq) => Some((col, *n)),
                (Some(col), Scalar::Literal(Value::Int(n)), BinOp::Lt) => Some((col, n - 1)),
                (Some(col), Scalar::Literal(Value::Int(1)), BinOp::Eq) => Some((col, 1)),
                _ => None,
            },
            _ => None,
        };
        match limit {
            Some((col, n)) if n >= 1 && set_limit(&mut plan, col, n as usize) => {}
            _ => rest.push(c),
        }
    }
    let rest = rest
        .into_iter()
        .reduce(|a, b| Scalar::Binary(BinOp::And, Box::new(a), Box::new(b), SqlType::Boolean));
    (plan, rest)
}

/// Sets the limit of the top-N whose rank `plan`'s column `col` is (through projections and
/// filters), if it has none yet.
fn set_limit(plan: &mut Plan, col: usize, n: usize) -> bool {
    match plan {
        Plan::Project { input, exprs, .. } => match exprs.get(col).and_then(Scalar::as_column) {
            Some(c) => set_limit(input, c, n),
            None => false,
        },
        Plan::Filter { input, .. } => set_limit(input, col, n),
        Plan::TopN { limit, schema, .. } if limit.is_none() && col + 1 == schema.fields.len() => {
            *limit = Some(n);
            true
        }
        _ => false,
    }
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
