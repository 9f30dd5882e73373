//! The operators whose results change later, as keyed processes on the runtime
//! (`Stream::process`, state in the runtime's keyed state): the unbounded GROUP BY and the
//! top-N. Both emit a changelog (`crate::changelog`).

use super::Builder;
use crate::changelog::RowKind;
use crate::expr::aggregate::{Acc, AggCall};
use crate::expr::Scalar;
use crate::key::Key;
use crate::plan::Plan;
use crate::types::{Row, Value};
use serde::{Deserialize, Serialize};
use std::cmp::Ordering;
use std::sync::Arc;
use xorflow_runtime::{KeyedProcess, ProcessContext, Stream};

/// One group's state: its accumulators, how many rows it holds, and the row last emitted.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Group {
    accs: Vec<Acc>,
    rows: i64,
    emitted: Option<Row>,
}

struct GroupAggregate {
    calls: Arc<Vec<AggCall>>,
    /// Whether the input is a changelog (its rows carry a kind).
    changelog_in: bool,
}

impl KeyedProcess<Key, Row> for GroupAggregate {
    type State = Group;
    type Out = Row;
    type Side = ();

    fn on_element(
        &self,
        key: &Key,
        state: &mut Option<Group>,
        mut row: Row,
        ctx: &mut ProcessContext<'_, Row, ()>,
    ) {
        let kind = match self.changelog_in {
            true => RowKind::pop(&mut row),
            false => RowKind::Insert,
        };
        let g = state.get_or_insert_with(|| Group {
            accs: self.calls.iter().map(AggCall::init_retractable).collect(),
            rows: 0,
            emitted: None,
        });
        for (c, a) in self.calls.iter().zip(g.accs.iter_mut()) {
            match kind.adds() {
                true => c.add(a, &row),
                false => c.retract(a, &row),
            }
        }
        g.rows += if kind.adds() { 1 } else { -1 };
        if g.rows <= 0 {
            if let Some(old) = g.emitted.take() {
                ctx.emit(RowKind::Delete.push(old));
            }
            *state = None;
            return;
        }
        let mut now = key.values().to_vec();
        now.extend(self.calls.iter().zip(&g.accs).map(|(c, a)| c.finish(a)));
        match g.emitted.take() {
            None => ctx.emit(RowKind::Insert.push(now.clone())),
            Some(old) if old == now => {}
            Some(old) => {
                ctx.emit(RowKind::UpdateBefore.push(old));
                ctx.emit(RowKind::UpdateAfter.push(now.clone()));
            }
        }
        g.emitted = Some(now);
    }

    fn on_timer(&self, _: &Key, _: &mut Option<Group>, _: &mut ProcessContext<'_, Row, ()>) {}
}

/// One partition's first rows, in order.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Ranked {
    rows: Vec<Row>,
}

struct TopN {
    order: Arc<Vec<(Scalar, bool)>>,
    limit: usize,
}

impl TopN {
    fn cmp(&self, a: &Row, b: &Row) -> Ordering {
        for (e, desc) in self.order.iter() {
            let o = e.eval(a).cmp(&e.eval(b));
            let o = if *desc { o.reverse() } else { o };
            if o != Ordering::Equal {
                return o;
            }
        }
        Ordering::Equal
    }
}

fn ranked(row: &Row, rank: usize) -> Row {
    let mut r = row.clone();
    r.push(Value::Int(rank as i64 + 1));
    r
}

impl KeyedProcess<Key, Row> for TopN {
    type State = Ranked;
    type Out = Row;
    type Side = ();

    /// A row enters at its place in the order (after equal ones: the first to arrive keeps
    /// the better rank); the rows it moves down change rank, and the one it pushes past the
    /// limit is deleted. The input is append-only, so a row once pushed out never returns.
    fn on_element(
        &self,
        _key: &Key,
        state: &mut Option<Ranked>,
        row: Row,
        ctx: &mut ProcessContext<'_, Row, ()>,
    ) {
        let r = state.get_or_insert_with(Ranked::default);
        let at = r
            .rows
            .partition_point(|x| self.cmp(x, &row) != Ordering::Greater);
        if at >= self.limit {
            return;
        }
        for (i, old) in r.rows.iter().enumerate().skip(at) {
            let kind_before = if i + 1 < self.limit {
                RowKind::UpdateBefore
            } else {
                RowKind::Delete
            };
            ctx.emit(kind_before.push(ranked(old, i)));
            if i + 1 < self.limit {
                ctx.emit(RowKind::UpdateAfter.push(ranked(old, i + 1)));
            }
        }
        ctx.emit(RowKind::Insert.push(ranked(&row, at)));
        r.rows.insert(at, row);
        r.rows.truncate(self.limit);
    }

    fn on_timer(&self, _: &Key, _: &mut Option<Ranked>, _: &mut ProcessContext<'_, Row, ()>) {}
}

fn key_fn(keys: &[Scalar]) -> impl Fn(&Row) -> Key + Send + Sync + 'static {
    let keys: Arc<Vec<Scalar>> = Arc::new(keys.to_vec());
    move |r: &Row| Key::of(&keys, r)
}

/// The stream of a [`Plan::GroupAggregate`]'s changelog.
///
/// # Errors
/// What its input's stream refuses.
pub fn group_aggregate(b: &mut Builder<'_>, plan: &Plan) -> Result<Stream<Row>, String> {
    let Plan::GroupAggregate {
        input, keys, calls, ..
    } = plan
    else {
        unreachable!("a group aggregate")
    };
    let changelog_in = input.changelog();
    let s = b.stream(input)?;
    let name = b.name("group_aggregate");
    let f = GroupAggregate {
        calls: Arc::new(calls.clone()),
        changelog_in,
    };
    Ok(s.process(&name, key_fn(keys), f).results)
}

/// The stream of a [`Plan::TopN`]'s changelog.
///
/// # Errors
/// A ROW_NUMBER() whose enclosing query sets no limit; what its input's stream refuses.
pub fn top_n(b: &mut Builder<'_>, plan: &Plan) -> Result<Stream<Row>, String> {
    let Plan::TopN {
        input,
        partition,
        order,
        limit,
        ..
    } = plan
    else {
        unreachable!("a top-N")
    };
    let Some(limit) = *limit else {
        return Err(
            "ROW_NUMBER() OVER (...) needs `WHERE rownum <= N` in the query around it (a top-N)"
                .into(),
        );
    };
    let s = b.stream(input)?;
    let name = b.name("top_n");
    let f = TopN {
        order: Arc::new(order.clone()),
        limit,
    };
    Ok(s.process(&name, key_fn(partition), f).results)
}
