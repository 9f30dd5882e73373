//! From a parsed query to a [`Plan`]: FROM (tables, views, subqueries, window table
//! functions), WHERE, GROUP BY with aggregates over windows, HAVING, the SELECT list.
//! Anything else is refused with its line and column and what is supported instead.

use super::{GroupSlot, Plan, WindowKind};
use crate::catalog::Catalog;
use crate::error::{Result, SqlError};
use crate::expr::compile::{self, compile, compile_aggregated, has_aggregate, AggScope, Typed};
use crate::expr::Scalar;
use crate::schema::{Field, Schema};
use crate::types::SqlType;
use sqlparser::ast::{
    Expr, FunctionArg, FunctionArgExpr, FunctionArguments, GroupByExpr, JoinConstraint,
    JoinOperator, Query, Select, SelectItem, SetExpr, TableFactor, TableWithJoins,
};

fn join_name(j: &JoinOperator) -> &'static str {
    match j {
        JoinOperator::Left(_) | JoinOperator::LeftOuter(_) => "LEFT JOIN",
        JoinOperator::Right(_) | JoinOperator::RightOuter(_) => "RIGHT JOIN",
        JoinOperator::FullOuter(_) => "FULL JOIN",
        JoinOperator::CrossJoin(_) => "CROSS JOIN",
        _ => "this join",
    }
}

/// Plans `q` against the tables and views of `catalog`.
///
/// # Errors
/// An unknown table, column or function, a type mismatch or an unsupported construct.
pub fn plan_query(q: &Query, catalog: &Catalog) -> Result<Plan> {
    if q.with.is_some() {
        return Err(SqlError::of(
            q,
            "WITH is not supported: declare a CREATE VIEW instead",
        ));
    }
    if let Some(o) = &q.order_by {
        return Err(SqlError::of(
            o,
            "ORDER BY is not supported on a stream (except in a top-N: ROW_NUMBER() OVER (...))",
        ));
    }
    if let Some(l) = &q.limit_clause {
        return Err(SqlError::of(l, "LIMIT is not supported on a stream"));
    }
    match q.body.as_ref() {
        SetExpr::Select(s) => plan_select(s, catalog),
        SetExpr::Query(inner) => plan_query(inner, catalog),
        other => Err(SqlError::of(
            other,
            "only SELECT queries are supported here (no UNION, VALUES or set operations yet)",
        )),
    }
}

fn plan_select(s: &Select, catalog: &Catalog) -> Result<Plan> {
    if s.distinct.is_some() {
        return Err(SqlError::of(
            s,
            "SELECT DISTINCT is not supported: GROUP BY the columns",
        ));
    }
    let (from, tvf, where_used) = match s.from.as_slice() {
        [one] if one.joins.is_empty() => {
            let (p, t) = plan_from(one, catalog)?;
            (p, t, false)
        }
        [one] => {
            let [j] = one.joins.as_slice() else {
                return Err(SqlError::of(
                    &one.joins[1].relation,
                    "a query joins two inputs at most here: join the others in a subquery",
                ));
            };
            let on = match &j.join_operator {
                JoinOperator::Join(JoinConstraint::On(e))
                | JoinOperator::Inner(JoinConstraint::On(e)) => e,
                other => {
                    return Err(SqlError::of(
                        &j.relation,
                        format!(
                            "only inner joins with ON are supported, not {}",
                            join_name(other)
                        ),
                    ))
                }
            };
            let left = relation(&one.relation, catalog)?;
            let right = relation(&j.relation, catalog)?;
            (
                super::join::plan_join(left, right, Some(on), s.selection.as_ref())?,
                None,
                true,
            )
        }
        [a, b] if a.joins.is_empty() && b.joins.is_empty() => {
            let left = relation(&a.relation, catalog)?;
            let right = relation(&b.relation, catalog)?;
            (
                super::join::plan_join(left, right, None, s.selection.as_ref())?,
                None,
                true,
            )
        }
        [] => return Err(SqlError::of(s, "a query needs a FROM clause")),
        [_, _, third, ..] => {
            return Err(SqlError::of(
                third,
                "a query joins two inputs at most here: join the others in a subquery",
            ))
        }
        [_, b] => {
            return Err(SqlError::of(
                b,
                "mixing comma joins and JOIN is not supported",
            ))
        }
    };
    let selection = if where_used {
        None
    } else {
        s.selection.as_ref()
    };
    let schema = from.schema();
    let grouped = match &s.group_by {
        GroupByExpr::Expressions(e, m) if m.is_empty() => e.clone(),
        GroupByExpr::Expressions(..) | GroupByExpr::All(_) => {
            return Err(SqlError::of(
                s,
                "GROUP BY ALL and GROUP BY modifiers are not supported",
            ))
        }
    };
    let aggregated = !grouped.is_empty()
        || s.projection.iter().any(|i| match i {
            SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => {
                has_aggregate(e)
            }
            _ => false,
        });
    if !aggregated {
        let mut plan = match tvf {
            Some(t) => t.assign(from),
            None => from,
        };
        if let Some(w) = selection {
            plan = filter(plan, w)?;
        }
        if let Some(h) = &s.having {
            return Err(SqlError::of(h, "HAVING needs a GROUP BY"));
        }
        return match super::rank::row_number(&s.projection)? {
            Some((item, over)) => super::rank::plan_top_n(plan, &s.projection, item, over),
            None => project(plan, &s.projection),
        };
    }
    // Flink's legacy group windows: `GROUP BY k, SESSION(ts, gap)` (or TUMBLE(ts, size),
    // HOP(ts, slide, size)) with SESSION_START(...) / SESSION_END(...) in the SELECT list are
    // the window table function of the same windows.
    let (tvf, legacy) = match legacy_window(&grouped, &from)? {
        Some((i, t)) => (Some(t), Some(i)),
        None => (tvf, None),
    };
    // The windows: a window table function's, or (a cascading window aggregate) those of the
    // input's rows when it groups by their window_start and window_end.
    let props = from.window_props();
    let grouped_cols: Vec<usize> = grouped
        .iter()
        .filter_map(|g| compile(g, &schema).ok().and_then(|t| t.expr.as_column()))
        .collect();
    let cascade = match (&tvf, props) {
        (None, Some(p)) if grouped_cols.contains(&p.start) && grouped_cols.contains(&p.end) => {
            if matches!(
                p.kind,
                WindowKind::Session { .. } | WindowKind::Cumulate { .. }
            ) {
                return Err(SqlError::of(s, "grouping the results of SESSION or CUMULATE windows by their window again is not supported"));
            }
            Some(p)
        }
        _ => None,
    };
    if tvf.is_none() && cascade.is_none() {
        return plan_group_aggregate(from, &grouped, selection, s);
    }
    if from.changelog() {
        return Err(SqlError::of(
            s,
            "a window aggregate over a changelog (an updating input) is not supported",
        ));
    }
    // The schema the GROUP BY sees: a TVF's input's columns, then window_start, window_end,
    // window_time; or the windowed input's own.
    let tvf_schema = match &tvf {
        Some(t) => t.schema(&schema),
        None => schema.clone(),
    };
    let n = schema.fields.len();
    let slot_of = |c: usize| -> Option<GroupSlot> {
        match (&cascade, c) {
            (Some(p), c) if c == p.start => Some(GroupSlot::WindowStart),
            (Some(p), c) if c == p.end => Some(GroupSlot::WindowEnd),
            (Some(_), _) => None,
            (None, c) if c == n => Some(GroupSlot::WindowStart),
            (None, c) if c == n + 1 => Some(GroupSlot::WindowEnd),
            (None, c) if c == n + 2 => Some(GroupSlot::WindowTime),
            _ => None,
        }
    };
    let mut input = from;
    if let Some(w) = selection {
        let pred = compile_bool(w, &tvf_schema)?;
        let mut cols = Vec::new();
        pred.columns(&mut cols);
        if tvf.is_some() && cols.iter().any(|c| *c >= n) {
            return Err(SqlError::of(
                w,
                "a WHERE on window_start/window_end before the aggregate is not supported",
            ));
        }
        input = Plan::Filter {
            input: Box::new(input),
            predicate: pred,
        };
    }
    let mut scope = AggScope {
        input: &tvf_schema,
        groups: Vec::new(),
        calls: Vec::new(),
    };
    let (mut keys, mut slots, mut out_fields) = (Vec::new(), Vec::new(), Vec::new());
    // The groups: a legacy window's function becomes its window_start and window_end, named
    // as its _START and _END functions (`SESSION_START(ts, gap)`) for the SELECT list.
    let mut groups: Vec<(Expr, String)> = Vec::new();
    for (i, g) in grouped.iter().enumerate() {
        let text = g.to_string().to_ascii_lowercase().replace('`', "");
        if legacy == Some(i) {
            let (name, args) = text.split_once('(').unwrap_or((&text, ")"));
            for (col, suffix) in [("window_start", "_start"), ("window_end", "_end")] {
                groups.push((
                    Expr::Identifier(sqlparser::ast::Ident::new(col)),
                    format!("{name}{suffix}({args}"),
                ));
            }
        } else {
            groups.push((g.clone(), text));
        }
    }
    for (g, text) in &groups {
        let t = compile(g, &tvf_schema)?;
        let slot = match t.expr.as_column().and_then(slot_of) {
            Some(slot) => slot,
            None => {
                let mut cols = Vec::new();
                t.expr.columns(&mut cols);
                if tvf.is_some() && cols.iter().any(|c| *c >= n) {
                    return Err(SqlError::of(
                        g,
                        "group by window_start, window_end or window_time themselves",
                    ));
                }
                keys.push(t.expr.clone());
                GroupSlot::Key(keys.len() - 1)
            }
        };
        slots.push(slot);
        out_fields.push(output_field(g, None, t.ty, out_fields.len()));
        scope.groups.push((text.clone(), t));
    }
    let has = |s: GroupSlot| slots.contains(&s);
    if !(has(GroupSlot::WindowStart) && has(GroupSlot::WindowEnd)) {
        return Err(SqlError::of(
            s,
            "a window aggregate must GROUP BY window_start and window_end (as in Flink SQL)",
        ));
    }
    // Compile the SELECT list and HAVING against the aggregate's output; aggregate calls are
    // collected as they are met.
    let mut select = Vec::new();
    for (i, item) in s.projection.iter().enumerate() {
        let (e, alias) = select_item(item)?;
        let t = compile_aggregated(e, &mut scope)?;
        select.push((t, output_name(e, alias, i)));
    }
    let having = match &s.having {
        Some(h) => {
            let t = compile_aggregated(h, &mut scope)?;
            if t.ty != SqlType::Boolean {
                return Err(SqlError::of(h, "HAVING takes a condition"));
            }
            Some(t.expr)
        }
        None => None,
    };
    let calls: Vec<_> = scope.calls.into_iter().map(|(_, c)| c).collect();
    for (i, c) in calls.iter().enumerate() {
        out_fields.push(Field::new(&format!("EXPR${i}"), c.ty));
    }
    let (mut window, mut time_column) = match (&tvf, &cascade) {
        (Some(t), _) => (t.window, t.time_column),
        (None, Some(p)) => (p.kind, p.end),
        (None, None) => unreachable!("refused above"),
    };
    let mut cascade = cascade.map(|p| (p.start, p.end));
    if let (Some(t), WindowKind::Cumulate { step, .. }) = (&tvf, window) {
        // CUMULATE: each row is assigned its windows (window_start, window_end appended), then
        // aggregated per window as a cascade: the windows of one start end a step apart.
        input = Plan::WindowAssign {
            input: Box::new(input),
            window,
            time_column: t.time_column,
            schema: tvf_schema.clone(),
        };
        (window, time_column, cascade) =
            (WindowKind::Tumble { size: step }, n + 1, Some((n, n + 1)));
    }
    if let (Some(t), WindowKind::Session { .. }) = (&tvf, window) {
        check_session_keys(t, &keys, &schema, s)?;
    }
    let mut plan = Plan::WindowAggregate {
        input: Box::new(input),
        window,
        time_column,
        keys,
        slots,
        calls,
        schema: Schema::new(out_fields),
        cascade,
    };
    if let Some(h) = having {
        plan = Plan::Filter {
            input: Box::new(plan),
            predicate: h,
        };
    }
    let schema = Schema::new(
        select
            .iter()
            .map(|(t, name)| Field::new(name, t.ty))
            .collect(),
    );
    Ok(Plan::Project {
        input: Box::new(plan),
        exprs: select.into_iter().map(|(t, _)| t.expr).collect(),
        schema,
    })
}

/// An unbounded GROUP BY (no windows): a changelog of each group's aggregates.
fn plan_group_aggregate(
    from: Plan,
    grouped: &[Expr],
    selection: Option<&Expr>,
    s: &Select,
) -> Result<Plan> {
    let mut input = from;
    if let Some(w) = selection {
        input = filter(input, w)?;
    }
    let schema = input.schema();
    let mut scope = AggScope {
        input: &schema,
        groups: Vec::new(),
        calls: Vec::new(),
    };
    let (mut keys, mut out_fields) = (Vec::new(), Vec::new());
    for g in grouped {
        let t = compile(g, &schema)?;
        keys.push(t.expr.clone());
        out_fields.push(output_field(g, None, t.ty, out_fields.len()));
        scope
            .groups
            .push((g.to_string().to_ascii_lowercase().replace('`', ""), t));
    }
    let mut select = Vec::new();
    for (i, item) in s.projection.iter().enumerate() {
        let (e, alias) = select_item(item)?;
        let t = compile_aggregated(e, &mut scope)?;
        select.push((t, output_name(e, alias, i)));
    }
    let having = match &s.having {
        Some(h) => {
            let t = compile_aggregated(h, &mut scope)?;
            if t.ty != SqlType::Boolean {
                return Err(SqlError::of(h, "HAVING takes a condition"));
            }
            Some(t.expr)
        }
        None => None,
    };
    let calls: Vec<_> = scope.calls.into_iter().map(|(_, c)| c).collect();
    for (i, c) in calls.iter().enumerate() {
        out_fields.push(Field::new(&format!("EXPR${i}"), c.ty));
    }
    let mut plan = Plan::GroupAggregate {
        input: Box::new(input),
        keys,
        calls,
        schema: Schema::new(out_fields),
    };
    if let Some(h) = having {
        plan = Plan::Filter {
            input: Box::new(plan),
            predicate: h,
        };
    }
    let schema = Schema::new(
        select
            .iter()
            .map(|(t, name)| Field::new(name, t.ty))
            .collect(),
    );
    Ok(Plan::Project {
        input: Box::new(plan),
        exprs: select.into_iter().map(|(t, _)| t.expr).collect(),
        schema,
    })
}

/// A legacy group window function among the GROUP BY expressions (`SESSION(ts, gap)`,
/// `TUMBLE(ts, size)`, `HOP(ts, slide, size)`): its index and windows.
///
/// # Errors
/// A time column that is not the input's time attribute, an argument that is not an interval.
fn legacy_window(grouped: &[Expr], from: &Plan) -> Result<Option<(usize, Tvf)>> {
    let schema = from.schema();
    for (i, g) in grouped.iter().enumerate() {
        let Expr::Function(f) = g else { continue };
        let name = f.name.to_string().to_ascii_uppercase();
        if !matches!(name.as_str(), "TUMBLE" | "HOP" | "SESSION") {
            continue;
        }
        let FunctionArguments::List(list) = &f.args else {
            continue;
        };
        let args: Vec<&Expr> = (list.args.iter())
            .filter_map(|a| match a {
                FunctionArg::Unnamed(FunctionArgExpr::Expr(x)) => Some(x),
                _ => None,
            })
            .collect();
        let want = if name == "HOP" { 3 } else { 2 };
        if args.len() != want {
            return Err(SqlError::of(
                g,
                format!("{name}(time, ...) in GROUP BY takes {want} arguments"),
            ));
        }
        let time = compile(args[0], &schema)?.expr.as_column();
        if time.is_none() || time != from.rowtime() {
            return Err(SqlError::of(args[0], format!("{name}'s first argument must be the input's time attribute (its WATERMARK column)")));
        }
        let ms = |x: &Expr| -> Result<i64> {
            match x {
                Expr::Interval(iv) => compile::interval(iv, x).and_then(|v| match v > 0 {
                    true => Ok(v),
                    false => Err(SqlError::of(x, "window sizes must be positive")),
                }),
                _ => Err(SqlError::of(x, "expected an INTERVAL")),
            }
        };
        let window = match name.as_str() {
            "TUMBLE" => WindowKind::Tumble { size: ms(args[1])? },
            "HOP" => WindowKind::Hop {
                slide: ms(args[1])?,
                size: ms(args[2])?,
            },
            _ => WindowKind::Session { gap: ms(args[1])? },
        };
        let time_column = time.expect("checked");
        // The legacy SESSION(ts, gap) is per group: the other keys partition it.
        let partition = (grouped.iter().enumerate())
            .filter(|(j, _)| *j != i)
            .map(|(_, g)| g.clone())
            .collect();
        let tvf = Tvf {
            window,
            time_column,
            alias: None,
            partition,
        };
        return Ok(Some((i, tvf)));
    }
    Ok(None)
}

/// SESSION windows are per partition key (`SESSION(TABLE t PARTITION BY k, ...)`): the
/// GROUP BY keys besides the window must be exactly those (the runtime keys sessions by them).
fn check_session_keys(t: &Tvf, keys: &[Scalar], schema: &Schema, s: &Select) -> Result<()> {
    let mut part = Vec::new();
    for p in &t.partition {
        part.push(compile(p, schema)?.expr.as_column());
    }
    let mut got: Vec<Option<usize>> = keys.iter().map(Scalar::as_column).collect();
    part.sort();
    got.sort();
    if part != got || got.contains(&None) {
        return Err(SqlError::of(
            s,
            "a SESSION window aggregate must GROUP BY exactly its PARTITION BY columns (and \
             window_start, window_end): SESSION(TABLE t PARTITION BY k, DESCRIPTOR(ts), gap)",
        ));
    }
    Ok(())
}

/// A window table function in FROM, before we know whether its rows are aggregated.
struct Tvf {
    window: WindowKind,
    time_column: usize,
    alias: Option<String>,
    /// SESSION's PARTITION BY columns.
    partition: Vec<Expr>,
}

impl Tvf {
    fn schema(&self, input: &Schema) -> Schema {
        let mut fields = input.fields.clone();
        for name in ["window_start", "window_end", "window_time"] {
            fields.push(Field::new(name, SqlType::Timestamp));
        }
        let s = Schema::new(fields);
        match &self.alias {
            Some(a) => s.qualified(a),
            None => s,
        }
    }

    fn assign(self, input: Plan) -> Plan {
        let schema = self.schema(&input.schema());
        Plan::WindowAssign {
            input: Box::new(input),
            window: self.window,
            time_column: self.time_column,
            schema,
        }
    }
}

/// The FROM item: a plan of its rows, and the window table function over them if it is one.
fn plan_from(t: &TableWithJoins, catalog: &Catalog) -> Result<(Plan, Option<Tvf>)> {
    match &t.relation {
        TableFactor::TableFunction { expr, alias } => {
            let (plan, tvf) = window_tvf(expr, catalog)?;
            let tvf = Tvf {
                alias: alias.as_ref().map(|a| a.name.value.clone()),
                ..tvf
            };
            Ok((plan, Some(tvf)))
        }
        other => Ok((relation(other, catalog)?, None)),
    }
}

/// A table, a view or a subquery, its columns qualified by its alias (or its name).
pub(super) fn relation(t: &TableFactor, catalog: &Catalog) -> Result<Plan> {
    match t {
        TableFactor::Table {
            name,
            alias,
            args: None,
            ..
        } => named(name, alias.as_ref().map(|a| a.name.value.as_str()), catalog),
        TableFactor::Derived {
            subquery,
            alias,
            lateral: false,
            ..
        } => {
            let p = plan_query(subquery, catalog)?;
            Ok(match alias {
                Some(a) => requalify(p, &a.name.value),
                None => p,
            })
        }
        other => Err(SqlError::of(
            other,
            format!("'{other}' is not supported in FROM"),
        )),
    }
}

/// The table or view `name`, its columns qualified by `alias` (or its name).
fn named(
    name: &sqlparser::ast::ObjectName,
    alias: Option<&str>,
    catalog: &Catalog,
) -> Result<Plan> {
    let text = name.to_string().replace('`', "");
    let qualify = alias.map_or(text.clone(), str::to_string);
    if let Some(table) = catalog.table(&text) {
        let mut table = table.clone();
        table.schema = table.schema.qualified(&qualify);
        return Ok(Plan::Scan { table });
    }
    if let Some((_, q)) = catalog.view(&text) {
        return Ok(requalify(plan_query(q, catalog)?, &qualify));
    }
    Err(SqlError::of(
        name,
        format!(
            "unknown table '{text}' (declared: {})",
            catalog.names().join(", ")
        ),
    ))
}

/// The same rows with every column qualified by `alias`.
fn requalify(p: Plan, alias: &str) -> Plan {
    let schema = p.schema().qualified(alias);
    let exprs = (0..schema.fields.len()).map(Scalar::Column).collect();
    match p {
        Plan::Project { input, exprs, .. } => Plan::Project {
            input,
            exprs,
            schema,
        },
        Plan::Scan { mut table } => {
            table.schema = schema;
            Plan::Scan { table }
        }
        other => Plan::Project {
            input: Box::new(other),
            exprs,
            schema,
        },
    }
}

/// `TUMBLE(TABLE t, DESCRIPTOR(c), size)`, `HOP(TABLE t, DESCRIPTOR(c), slide, size)`,
/// `CUMULATE(TABLE t, DESCRIPTOR(c), step, size)`, `SESSION(TABLE t [PARTITION BY k],
/// DESCRIPTOR(c), gap)`.
fn window_tvf(e: &Expr, catalog: &Catalog) -> Result<(Plan, Tvf)> {
    let Expr::Function(f) = e else {
        return Err(SqlError::of(
            e,
            "TABLE(...) takes a window function: TUMBLE, HOP, CUMULATE or SESSION",
        ));
    };
    let name = f.name.to_string().to_ascii_uppercase();
    let FunctionArguments::List(list) = &f.args else {
        return Err(SqlError::of(e, format!("{name} needs arguments")));
    };
    let args: Vec<&Expr> = list
        .args
        .iter()
        .map(|a| match a {
            FunctionArg::Unnamed(FunctionArgExpr::Expr(x)) => Ok(x),
            FunctionArg::Named {
                arg: FunctionArgExpr::Expr(x),
                ..
            } => Ok(x),
            other => Err(SqlError::of(
                e,
                format!("argument '{other}' of {name} is not supported"),
            )),
        })
        .collect::<Result<_>>()?;
    let usage = match name.as_str() {
        "TUMBLE" => "TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '10' SECOND)",
        "HOP" => "HOP(TABLE t, DESCRIPTOR(ts), slide, size)",
        "CUMULATE" => "CUMULATE(TABLE t, DESCRIPTOR(ts), step, size)",
        "SESSION" => "SESSION(TABLE t PARTITION BY k, DESCRIPTOR(ts), gap)",
        _ => {
            return Err(SqlError::of(
                e,
                format!("unknown window function {name} (TUMBLE, HOP, CUMULATE, SESSION)"),
            ))
        }
    };
    let want = if name == "TUMBLE" || name == "SESSION" {
        3
    } else {
        4
    };
    if args.len() != want {
        return Err(SqlError::of(
            e,
            format!("{name} takes {want} arguments: {usage}"),
        ));
    }
    // The data: TABLE name (our dialect's Prefixed form, src/dialect.rs).
    let mut partition = Vec::new();
    let input = match args[0] {
        Expr::Prefixed { prefix, value } if prefix.value == "TABLE" => {
            // `TABLE t PARTITION BY k, ...` comes as a tuple of the name and the keys
            // (src/dialect.rs).
            let value = match value.as_ref() {
                Expr::Tuple(items) if !items.is_empty() => {
                    partition = items[1..].to_vec();
                    &items[0]
                }
                v => v,
            };
            if !partition.is_empty() && name != "SESSION" {
                return Err(SqlError::of(
                    args[0],
                    format!("{name} takes no PARTITION BY"),
                ));
            }
            let Expr::CompoundIdentifier(parts) = value else {
                return Err(SqlError::of(
                    args[0],
                    format!("the first argument: {usage}"),
                ));
            };
            let name = sqlparser::ast::ObjectName::from(parts.clone());
            named(&name, None, catalog)?
        }
        other => return Err(SqlError::of(other, format!("the first argument: {usage}"))),
    };
    let schema = input.schema();
    let time_column = match args[1] {
        Expr::Function(d) if d.name.to_string().eq_ignore_ascii_case("DESCRIPTOR") => {
            let col = match &d.args {
                FunctionArguments::List(l) if l.args.len() == 1 => match &l.args[0] {
                    FunctionArg::Unnamed(FunctionArgExpr::Expr(Expr::Identifier(i))) => i.clone(),
                    _ => return Err(SqlError::of(args[1], "DESCRIPTOR takes one column")),
                },
                _ => return Err(SqlError::of(args[1], "DESCRIPTOR takes one column")),
            };
            let c = schema.resolve(None, &col)?;
            if input.rowtime() != Some(c) {
                return Err(SqlError::of(
                    args[1],
                    format!(
                        "DESCRIPTOR({}): not a time attribute of its table (declare WATERMARK \
                         FOR {} AS ... in its CREATE TABLE)",
                        col.value, col.value
                    ),
                ));
            }
            c
        }
        other => return Err(SqlError::of(other, format!("the second argument: {usage}"))),
    };
    let ms = |x: &Expr| -> Result<i64> {
        let v = match x {
            Expr::Interval(i) => compile::interval(i, x)?,
            _ => return Err(SqlError::of(x, format!("expected an INTERVAL: {usage}"))),
        };
        match v > 0 {
            true => Ok(v),
            false => Err(SqlError::of(x, "window sizes must be positive")),
        }
    };
    let window = match name.as_str() {
        "TUMBLE" => WindowKind::Tumble { size: ms(args[2])? },
        "HOP" => {
            let (slide, size) = (ms(args[2])?, ms(args[3])?);
            if size % slide != 0 {
                return Err(SqlError::of(
                    args[3],
                    "HOP's size must be a multiple of its slide",
                ));
            }
            WindowKind::Hop { slide, size }
        }
        "CUMULATE" => {
            let (step, size) = (ms(args[2])?, ms(args[3])?);
            if size % step != 0 {
                return Err(SqlError::of(
                    args[3],
                    "CUMULATE's size must be a multiple of its step",
                ));
            }
            WindowKind::Cumulate { step, size }
        }
        _ => WindowKind::Session { gap: ms(args[2])? },
    };
    Ok((
        input,
        Tvf {
            window,
            time_column,
            alias: None,
            partition,
        },
    ))
}

fn compile_bool(e: &Expr, schema: &Schema) -> Result<Scalar> {
    let t = compile(e, schema)?;
    match t.ty {
        SqlType::Boolean | SqlType::Null => Ok(t.expr),
        other => Err(SqlError::of(
            e,
            format!("a condition must be BOOLEAN, not {other}"),
        )),
    }
}

fn filter(input: Plan, e: &Expr) -> Result<Plan> {
    let predicate = compile_bool(e, &input.schema())?;
    // `WHERE rownum <= N` over a ROW_NUMBER() sets the top-N's limit.
    let (mut input, predicate) = super::rank::take_limit(input, predicate);
    if let Some(p) = predicate {
        input = Plan::Filter {
            input: Box::new(input),
            predicate: p,
        };
    }
    Ok(input)
}

fn select_item(item: &SelectItem) -> Result<(&Expr, Option<&str>)> {
    match item {
        SelectItem::UnnamedExpr(e) => Ok((e, None)),
        SelectItem::ExprWithAlias { expr, alias } => Ok((expr, Some(alias.value.as_str()))),
        other => Err(SqlError::of(
            other,
            "* here is not supported: name the columns",
        )),
    }
}

/// The SELECT list over `input`'s rows (no aggregates).
pub(super) fn project(input: Plan, items: &[SelectItem]) -> Result<Plan> {
    let schema = input.schema();
    let (mut exprs, mut fields) = (Vec::new(), Vec::new());
    for (i, item) in items.iter().enumerate() {
        match item {
            SelectItem::Wildcard(_) => {
                for (c, f) in schema.fields.iter().enumerate() {
                    exprs.push(Scalar::Column(c));
                    fields.push(Field::new(&f.name, f.ty));
                }
            }
            SelectItem::QualifiedWildcard(kind, _) => {
                let q = match kind {
                    sqlparser::ast::SelectItemQualifiedWildcardKind::ObjectName(n) => n.to_string(),
                    other => other.to_string(),
                }
                .replace('`', "");
                let before = exprs.len();
                for (c, f) in schema.fields.iter().enumerate() {
                    if f.qualifier
                        .as_deref()
                        .is_some_and(|fq| fq.eq_ignore_ascii_case(&q))
                    {
                        exprs.push(Scalar::Column(c));
                        fields.push(Field::new(&f.name, f.ty));
                    }
                }
                if exprs.len() == before {
                    return Err(SqlError::of(
                        item,
                        format!("{q}.*: no table or alias '{q}' here"),
                    ));
                }
            }
            _ => {
                let (e, alias) = select_item(item)?;
                let Typed { expr, ty } = compile(e, &schema)?;
                fields.push(Field::new(&output_name(e, alias, i), ty));
                exprs.push(expr);
            }
        }
    }
    Ok(Plan::Project {
        input: Box::new(input),
        exprs,
        schema: Schema::new(fields),
    })
}

/// A SELECT item's column name: its alias, the column it names, or `EXPR$i` (as Flink).
fn output_name(e: &Expr, alias: Option<&str>, i: usize) -> String {
    if let Some(a) = alias {
        return a.to_string();
    }
    match e {
        Expr::Identifier(id) => id.value.clone(),
        Expr::CompoundIdentifier(p) => p.last().map_or(format!("EXPR${i}"), |x| x.value.clone()),
        _ => format!("EXPR${i}"),
    }
}

fn output_field(e: &Expr, alias: Option<&str>, ty: SqlType, i: usize) -> Field {
    Field::new(&output_name(e, alias, i), ty)
}
