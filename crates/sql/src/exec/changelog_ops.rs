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

    /// Folds the batch's rows of the key (a mini-batch: Flink SQL's `table.exec.mini-batch`,
    /// bounded by the input batch, so no row waits for one) and emits the group's net change:
    /// an insert, an update-before and update-after pair, a delete, or nothing.
    const BATCHED: bool = true;

    fn on_element(
        &self,
        key: &Key,
        state: &mut Option<Group>,
        row: Row,
        ctx: &mut ProcessContext<'_, Row, ()>,
    ) {
        self.on_elements(key, state, &mut vec![row], ctx);
    }

    fn on_elements(
        &self,
        key: &Key,
        state: &mut Option<Group>,
        rows: &mut Vec<Row>,
        ctx: &mut ProcessContext<'_, Row, ()>,
    ) {
        let fresh = || match self.changelog_in {
            // An append-only input never retracts: MIN and MAX keep one value, not a multiset.
            false => self.calls.iter().map(AggCall::init).collect(),
            true => self.calls.iter().map(AggCall::init_retractable).collect(),
        };
        let g = state.get_or_insert_with(|| Group {
            accs: fresh(),
            rows: 0,
            emitted: None,
        });
        for mut row in rows.drain(..) {
            let kind = match self.changelog_in {
                true => RowKind::pop(&mut row),
                false => RowKind::Insert,
            };
            for (c, a) in self.calls.iter().zip(g.accs.iter_mut()) {
                match kind.adds() {
                    true => c.add(a, &row),
                    false => c.retract(a, &row),
                }
            }
            g.rows += if kind.adds() { 1 } else { -1 };
            if g.rows <= 0 {
                // The group is empty: it starts afresh, and what was emitted stays to retract.
                g.accs = fresh();
                g.rows = 0;
            }
        }
        if g.rows == 0 {
            if let Some(old) = g.emitted.take() {
                ctx.emit(RowKind::Delete.push(old));
            }
            *state = None;
            return;
        }
        let mut now = Vec::with_capacity(key.values().len() + self.calls.len() + 1);
        now.extend_from_slice(key.values());
        now.extend(self.calls.iter().zip(&g.accs).map(|(c, a)| c.finish(a)));
        // The copy has room for the kind (as `now` has): no reallocation to push it.
        let copy = |r: &Row| {
            let mut c = Vec::with_capacity(r.len() + 1);
            c.extend_from_slice(r);
            c
        };
        match g.emitted.take() {
            None => ctx.emit(RowKind::Insert.push(copy(&now))),
            Some(old) if old == now => {}
            Some(old) => {
                ctx.emit(RowKind::UpdateBefore.push(old));
                ctx.emit(RowKind::UpdateAfter.push(copy(&now)));
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
            // A column (every Nexmark top-N orders by one) is compared in place, not cloned.
            let o = match e {
                Scalar::Column(c) => a[*c].cmp(&b[*c]),
                _ => e.eval(a).cmp(&e.eval(b)),
            };
            let o = if *desc { o.reverse() } else { o };
            if o != Ordering::Equal {
                return o;
            }
        }
        Ordering::Equal
    }
}

/// `row` with its rank (1-based) and room for the changelog's kind after it.
impl TopN {
    /// A top-1 (deduplication, Nexmark q18: the last bid per bidder and auction): the batch's
    /// best row replaces the partition's if strictly better (the first to arrive keeps rank 1
    /// on a tie), the old row moved into the update-before rather than copied.
    fn deduplicate(
        &self,
        r: &mut Ranked,
        rows: &mut Vec<Row>,
        ctx: &mut ProcessContext<'_, Row, ()>,
    ) {
        let old = r.rows.pop();
        let mut new: Option<Row> = None;
        for row in rows.drain(..) {
            let better = match new.as_ref().or(old.as_ref()) {
                None => true,
                Some(top) => self.cmp(&row, top) == Ordering::Less,
            };
            if better {
                new = Some(row);
            }
        }
        match (old, new) {
            (old, None) => r.rows.extend(old),
            (old, Some(now)) => {
                match old {
                    Some(mut old) => {
                        old.push(Value::Int(1));
                        ctx.emit(RowKind::UpdateBefore.push(old));
                        ctx.emit(RowKind::UpdateAfter.push(ranked(&now, 0)));
                    }
                    None => ctx.emit(RowKind::Insert.push(ranked(&now, 0))),
                }
                r.rows.push(now);
            }
        }
    }
}

fn ranked(row: &Row, rank: usize) -> Row {
    let mut r = Vec::with_capacity(row.len() + 2);
    r.extend_from_slice(row);
    r.push(Value::Int(rank as i64 + 1));
    r
}

impl KeyedProcess<Key, Row> for TopN {
    type State = Ranked;
    type Out = Row;
    type Side = ();

    /// A batch's rows of the partition enter one by one at their place in the order (after
    /// equal ones: the first to arrive keeps the better rank), and the partition's net change
    /// is emitted once (a mini-batch, as Flink SQL's rank and deduplication operators fold
    /// theirs): per rank whose row changed, an update-before of the old row and an
    /// update-after of the new, an insert for a rank newly filled. The input is append-only,
    /// so a row once pushed out never returns and no rank empties.
    const BATCHED: bool = true;

    fn on_element(
        &self,
        key: &Key,
        state: &mut Option<Ranked>,
        row: Row,
        ctx: &mut ProcessContext<'_, Row, ()>,
    ) {
        self.on_elements(key, state, &mut vec![row], ctx);
    }

    fn on_elements(
        &self,
        _key: &Key,
        state: &mut Option<Ranked>,
        rows: &mut Vec<Row>,
        ctx: &mut ProcessContext<'_, Row, ()>,
    ) {
        let r = state.get_or_insert_with(Ranked::default);
        if self.limit == 1 {
            return self.deduplicate(r, rows, ctx);
        }
        // The ranks as they were, copied at the first row that changes them.
        let mut before: Option<Vec<Row>> = None;
        for row in rows.drain(..) {
            let at = r
                .rows
                .partition_point(|x| self.cmp(x, &row) != Ordering::Greater);
            if at >= self.limit {
                continue;
            }
            before.get_or_insert_with(|| r.rows.clone());
            r.rows.insert(at, row);
            r.rows.truncate(self.limit);
        }
        let Some(before) = before else {
            return;
        };
        for (i, now) in r.rows.iter().enumerate() {
            match before.get(i) {
                Some(old) if old == now => {}
                Some(old) => {
                    ctx.emit(RowKind::UpdateBefore.push(ranked(old, i)));
                    ctx.emit(RowKind::UpdateAfter.push(ranked(now, i)));
                }
                None => ctx.emit(RowKind::Insert.push(ranked(now, i))),
            }
        }
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
    let mut s = b.stream(input)?;
    // Keys that are expressions (q17's DATE_FORMAT(dateTime, ...)) are computed once, into
    // columns appended to the row, as Flink's planner computes them in a Calc before the
    // exchange: the exchange's hash and the operator's key then clone values instead of
    // evaluating the expressions twice. Not over a changelog, whose rows end with their kind.
    let mut keys = keys.clone();
    let computed: Vec<usize> = (0..keys.len())
        .filter(|&i| !matches!(keys[i], Scalar::Column(_)))
        .collect();
    if !changelog_in && !computed.is_empty() {
        let width = input.schema().fields.len();
        let exprs: Arc<Vec<Scalar>> = Arc::new(computed.iter().map(|&i| keys[i].clone()).collect());
        for (j, &i) in computed.iter().enumerate() {
            keys[i] = Scalar::Column(width + j);
        }
        s = s.map(&b.name("group_keys"), move |mut r: Row| {
            debug_assert_eq!(r.len(), width);
            let values: Vec<Value> = exprs.iter().map(|e| e.eval(&r)).collect();
            r.extend(values);
            r
        });
    }
    let keys = &keys;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::aggregate::AggFunc;
    use crate::types::SqlType;
    use proptest::prelude::*;

    /// A changelog row of `(key, value)` with its kind.
    fn change(kind: RowKind, v: i64) -> Row {
        kind.push(vec![Value::Int(1), Value::Int(v)])
    }

    /// What the group aggregate emits for `changes` fed in batches of `batch`, applied to a
    /// table as a sink applies a changelog: the group's final row (or none), and how many
    /// changes it emitted.
    fn fold(changes: &[Row], batch: usize, changelog_in: bool) -> (Option<Row>, usize) {
        let f = GroupAggregate {
            calls: Arc::new(vec![
                AggCall {
                    func: AggFunc::Count,
                    arg: None,
                    distinct: false,
                    filter: None,
                    ty: SqlType::Bigint,
                },
                AggCall {
                    func: AggFunc::Max,
                    arg: Some(Scalar::Column(1)),
                    distinct: false,
                    filter: None,
                    ty: SqlType::Bigint,
                },
            ]),
            changelog_in,
        };
        let key = Key::from_values(vec![Value::Int(1)]);
        let (mut state, mut out, mut side, mut timers) = (None, Vec::new(), Vec::new(), Vec::new());
        for chunk in changes.chunks(batch) {
            let mut rows = chunk.to_vec();
            let mut pc = ProcessContext::new(0, 0, &mut out, &mut side, &mut timers);
            f.on_elements(&key, &mut state, &mut rows, &mut pc);
        }
        let mut table: Option<Row> = None;
        for mut row in out.iter().cloned() {
            match RowKind::pop(&mut row) {
                RowKind::Insert | RowKind::UpdateAfter => {
                    assert!(table.is_none(), "an insert over a live row: {out:?}");
                    table = Some(row);
                }
                RowKind::UpdateBefore | RowKind::Delete => {
                    assert_eq!(
                        table.take(),
                        Some(row),
                        "a retraction of another row: {out:?}"
                    );
                }
            }
        }
        (table, out.len())
    }

    proptest! {
        /// Folding a batch's rows before emitting (the mini-batch) leaves a sink with the same
        /// row as emitting after every row, over inserts and retractions, the group emptied
        /// and refilled within a batch included; and never emits more changes.
        #[test]
        fn a_mini_batch_emits_the_net_change_of_its_rows(
            ops in prop::collection::vec((any::<bool>(), 0i64..5), 1..40),
            batch in 1usize..10,
        ) {
            // A valid changelog: only rows that are in the group are retracted.
            let (mut live, mut changes) = (Vec::new(), Vec::new());
            for (add, v) in ops {
                if add || live.is_empty() {
                    live.push(v);
                    changes.push(change(RowKind::Insert, v));
                } else {
                    let v = live.remove(v as usize % live.len());
                    changes.push(change(RowKind::Delete, v));
                }
            }
            let (each, n_each) = fold(&changes, 1, true);
            let (batched, n_batched) = fold(&changes, batch, true);
            prop_assert_eq!(&batched, &each);
            prop_assert!(n_batched <= n_each);
            let want = live.iter().max().map(|m| vec![Value::Int(1), Value::Int(live.len() as i64), Value::Int(*m)]);
            prop_assert_eq!(batched, want);
        }
    }

    /// The rows a sink holds after the top-N's changelog for `rows` fed in batches of `batch`
    /// (applied as a multiset: an update-before or delete takes out a row that is there), and
    /// how many changes it emitted.
    fn top(rows: &[Row], batch: usize, limit: usize) -> (Vec<Row>, usize) {
        let f = TopN {
            order: Arc::new(vec![(Scalar::Column(1), true)]),
            limit,
        };
        let key = Key::from_values(vec![Value::Int(1)]);
        let (mut state, mut out, mut side, mut timers) = (None, Vec::new(), Vec::new(), Vec::new());
        for chunk in rows.chunks(batch) {
            let mut rows = chunk.to_vec();
            let mut pc = ProcessContext::new(0, 0, &mut out, &mut side, &mut timers);
            f.on_elements(&key, &mut state, &mut rows, &mut pc);
        }
        let mut held: Vec<Row> = Vec::new();
        for mut row in out.iter().cloned() {
            match RowKind::pop(&mut row) {
                RowKind::Insert | RowKind::UpdateAfter => held.push(row),
                RowKind::UpdateBefore | RowKind::Delete => {
                    let at = held.iter().position(|r| *r == row);
                    let at = at.unwrap_or_else(|| panic!("{row:?} retracted, not held: {out:?}"));
                    held.remove(at);
                }
            }
        }
        held.sort();
        (held, out.len())
    }

    proptest! {
        /// The top-N's net change per batch leaves a sink with the same ranked rows as a
        /// change per row, which are the batch oracle's: the `limit` largest values, ties in
        /// arrival order, each with its rank.
        #[test]
        fn a_batched_top_n_leaves_the_ranked_rows_of_the_input(
            values in prop::collection::vec(0i64..20, 1..60),
            batch in 1usize..12,
            limit in 1usize..5,
        ) {
            let rows: Vec<Row> = (values.iter().enumerate())
                .map(|(i, &v)| vec![Value::Int(i as i64), Value::Int(v)])
                .collect();
            let (each, n_each) = top(&rows, 1, limit);
            let (batched, n_batched) = top(&rows, batch, limit);
            prop_assert_eq!(&batched, &each);
            prop_assert!(n_batched <= n_each);
            let mut order: Vec<&Row> = rows.iter().collect();
            // Stable: equal values keep arrival order, so the first to arrive ranks better.
            order.sort_by(|a, b| b[1].cmp(&a[1]));
            let mut want: Vec<Row> = (order.into_iter().take(limit).enumerate())
                .map(|(i, r)| ranked(r, i))
                .collect();
            want.sort();
            prop_assert_eq!(batched, want);
        }
    }

    #[test]
    fn an_append_only_group_keeps_extremes_without_a_multiset() {
        let rows: Vec<Row> = [3, 9, 4]
            .iter()
            .map(|&v| vec![Value::Int(1), Value::Int(v)])
            .collect();
        let (last, n) = fold(&rows, 2, false);
        assert_eq!(
            last,
            Some(vec![Value::Int(1), Value::Int(3), Value::Int(9)])
        );
        // An insert for the first batch, an update pair for the second.
        assert_eq!(n, 3);
    }
}
