//! Joins on the runtime's operators: interval joins on `Stream::interval_join`; window joins and
//! regular joins as keyed processes over the union of both inputs (`Stream::process`), their
//! rows kept in the runtime's keyed state (checkpointed with it).

use super::{time_ms, Builder};
use crate::expr::Scalar;
use crate::key::Key;
use crate::plan::{JoinKind, Plan};
use crate::types::Row;
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use xorflow_runtime::{JoinSide, KeyedProcess, ProcessContext, Stream, Time};

/// The rows of one key waiting for partners.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Waiting {
    left: Vec<Row>,
    right: Vec<Row>,
}

fn joined(l: &Row, r: &Row) -> Row {
    let mut out = Vec::with_capacity(l.len() + r.len());
    out.extend(l.iter().cloned());
    out.extend(r.iter().cloned());
    out
}

/// A regular join of append-only inputs: every row is kept; a pair is emitted when its
/// second row arrives.
struct RegularJoin;

impl KeyedProcess<Key, JoinSide<Row, Row>> for RegularJoin {
    type State = Waiting;
    type Out = Row;
    type Side = ();

    fn on_element(
        &self,
        _key: &Key,
        state: &mut Option<Waiting>,
        e: JoinSide<Row, Row>,
        ctx: &mut ProcessContext<'_, Row, ()>,
    ) {
        let w = state.get_or_insert_with(Waiting::default);
        match e {
            JoinSide::Left(l) => {
                for r in &w.right {
                    ctx.emit(joined(&l, r));
                }
                w.left.push(l);
            }
            JoinSide::Right(r) => {
                for l in &w.left {
                    ctx.emit(joined(l, &r));
                }
                w.right.push(r);
            }
        }
    }

    fn on_timer(&self, _: &Key, _: &mut Option<Waiting>, _: &mut ProcessContext<'_, Row, ()>) {}
}

/// A window join: the rows of one key and window (the key includes window_start and
/// window_end) wait until the frontier passes the window's end, then every pair is emitted
/// and the state dropped.
struct WindowJoin {
    /// The left rows' window_end column.
    left_end: usize,
    /// The right rows'.
    right_end: usize,
}

impl KeyedProcess<Key, JoinSide<Row, Row>> for WindowJoin {
    type State = Waiting;
    type Out = Row;
    type Side = ();

    fn on_element(
        &self,
        _key: &Key,
        state: &mut Option<Waiting>,
        e: JoinSide<Row, Row>,
        ctx: &mut ProcessContext<'_, Row, ()>,
    ) {
        let w = state.get_or_insert_with(Waiting::default);
        match e {
            JoinSide::Left(l) => {
                ctx.set_timer(time_ms(&l[self.left_end]).max(0) as Time);
                w.left.push(l);
            }
            JoinSide::Right(r) => {
                ctx.set_timer(time_ms(&r[self.right_end]).max(0) as Time);
                w.right.push(r);
            }
        }
    }

    fn on_timer(
        &self,
        _: &Key,
        state: &mut Option<Waiting>,
        ctx: &mut ProcessContext<'_, Row, ()>,
    ) {
        if let Some(w) = state.take() {
            for l in &w.left {
                for r in &w.right {
                    ctx.emit(joined(l, r));
                }
            }
        }
    }
}

/// The stream of a [`Plan::Join`]'s rows.
///
/// # Errors
/// What its inputs' streams refuse.
pub fn join(b: &mut Builder<'_>, plan: &Plan) -> Result<Stream<Row>, String> {
    let Plan::Join {
        left,
        right,
        kind,
        left_keys,
        right_keys,
        ..
    } = plan
    else {
        unreachable!("a join")
    };
    let (ls, rs) = (b.stream(left)?, b.stream(right)?);
    let eval = |keys: &[Scalar]| {
        let keys: Arc<Vec<Scalar>> = Arc::new(keys.to_vec());
        move |r: &Row| Key::of(&keys, r)
    };
    let (lk, rk) = (eval(left_keys), eval(right_keys));
    let name = b.name("join");
    if let JoinKind::Interval { lower, upper } = *kind {
        return Ok(ls.interval_join(&name, &rs, lk, rk, (lower, upper), joined));
    }
    let l = ls.map(&format!("{name}.left"), JoinSide::<Row, Row>::Left);
    let r = rs.map(&format!("{name}.right"), JoinSide::<Row, Row>::Right);
    let both = l.union(&format!("{name}.union"), &r);
    let key = move |e: &JoinSide<Row, Row>| match e {
        JoinSide::Left(x) => lk(x),
        JoinSide::Right(x) => rk(x),
    };
    Ok(match *kind {
        JoinKind::Window {
            left_end,
            right_end,
        } => {
            both.process(
                &name,
                key,
                WindowJoin {
                    left_end,
                    right_end,
                },
            )
            .results
        }
        _ => both.process(&name, key, RegularJoin).results,
    })
}
