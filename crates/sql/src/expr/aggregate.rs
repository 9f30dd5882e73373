//! Aggregate calls (`COUNT`, `COUNT(DISTINCT)`, `SUM`, `AVG`, `MIN`, `MAX`, each with an
//! optional `FILTER (WHERE ...)`) and their accumulators, kept per (window, group) by the
//! runtime's window operators.

use super::Scalar;
use crate::types::{SqlType, Value};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// An aggregate function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AggFunc {
    /// `COUNT(*)`, or `COUNT(x)`: rows where x is not NULL
    Count,
    /// `SUM(x)`: NULL when no row had a value
    Sum,
    /// `AVG(x)`: of the integer type for integers (as Flink: truncated), else of x's type
    Avg,
    /// `MIN(x)`
    Min,
    /// `MAX(x)`
    Max,
}

/// One aggregate call of a query.
#[derive(Clone, Debug)]
pub struct AggCall {
    /// The function.
    pub func: AggFunc,
    /// Its argument (`None`: `COUNT(*)`).
    pub arg: Option<Scalar>,
    /// `DISTINCT`: each value counted once.
    pub distinct: bool,
    /// `FILTER (WHERE ...)`: only rows where it holds.
    pub filter: Option<Scalar>,
    /// The result type.
    pub ty: SqlType,
}

/// The running state of one aggregate call for one (window, group).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum Acc {
    /// COUNT.
    Count(i64),
    /// COUNT(DISTINCT), and the distinct values of SUM/AVG(DISTINCT).
    Distinct(BTreeSet<Value>),
    /// SUM and AVG: the sum so far (NULL: none yet) and the rows counted.
    Sum(Value, i64),
    /// MIN and MAX: the extreme so far.
    Extreme(Value),
    /// MIN, MAX and DISTINCT aggregates over a changelog: each value with how often it is in
    /// the group now, so that a retraction can remove it ([`AggCall::retract`]).
    Multiset(BTreeMap<Value, i64>),
}

impl AggCall {
    /// A fresh accumulator.
    pub fn init(&self) -> Acc {
        match (self.func, self.distinct) {
            (_, true) => Acc::Distinct(BTreeSet::new()),
            (AggFunc::Count, false) => Acc::Count(0),
            (AggFunc::Sum | AggFunc::Avg, false) => Acc::Sum(Value::Null, 0),
            (AggFunc::Min | AggFunc::Max, false) => Acc::Extreme(Value::Null),
        }
    }

    /// A fresh accumulator that can take retractions ([`AggCall::retract`]): for the unbounded
    /// GROUP BY, whose input may be a changelog.
    pub fn init_retractable(&self) -> Acc {
        match (self.func, self.distinct) {
            (AggFunc::Count, false) => Acc::Count(0),
            (AggFunc::Sum | AggFunc::Avg, false) => Acc::Sum(Value::Null, 0),
            _ => Acc::Multiset(BTreeMap::new()),
        }
    }

    /// Takes `row` out again (an update-before or delete of a changelog input). Only on
    /// accumulators from [`AggCall::init_retractable`].
    pub fn retract(&self, acc: &mut Acc, row: &[Value]) {
        if let Some(f) = &self.filter {
            if !f.holds(row) {
                return;
            }
        }
        let v = match &self.arg {
            Some(a) => a.eval(row),
            None => Value::Bool(true),
        };
        if v.is_null() {
            return;
        }
        match acc {
            Acc::Count(n) => *n -= 1,
            Acc::Sum(s, n) => {
                *n -= 1;
                *s = match *n {
                    0 => Value::Null,
                    _ => super::arithmetic(super::BinOp::Sub, s, &v, self.sum_type()),
                };
            }
            Acc::Multiset(m) => {
                if let Some(c) = m.get_mut(&v) {
                    *c -= 1;
                    if *c <= 0 {
                        m.remove(&v);
                    }
                }
            }
            Acc::Distinct(_) | Acc::Extreme(_) => debug_assert!(false, "not retractable"),
        }
    }

    /// Folds `row` in.
    pub fn add(&self, acc: &mut Acc, row: &[Value]) {
        if let Some(f) = &self.filter {
            if !f.holds(row) {
                return;
            }
        }
        let v = match &self.arg {
            Some(a) => a.eval(row),
            None => Value::Bool(true),
        };
        if v.is_null() {
            return;
        }
        match acc {
            Acc::Count(n) => *n += 1,
            Acc::Distinct(set) => {
                set.insert(v);
            }
            Acc::Sum(s, n) => {
                *s = add_values(s, &v, self.sum_type());
                *n += 1;
            }
            Acc::Multiset(m) => *m.entry(v).or_insert(0) += 1,
            Acc::Extreme(m) => {
                let better = match self.func {
                    AggFunc::Min => m.is_null() || v < *m,
                    _ => m.is_null() || v > *m,
                };
                if better {
                    *m = v;
                }
            }
        }
    }

    /// Merges `other` into `acc` (two partial aggregates of the same group).
    pub fn merge(&self, acc: &mut Acc, other: Acc) {
        match (acc, other) {
            (Acc::Count(a), Acc::Count(b)) => *a += b,
            (Acc::Distinct(a), Acc::Distinct(b)) => a.extend(b),
            (Acc::Sum(s, n), Acc::Sum(t, m)) => {
                if !t.is_null() {
                    *s = add_values(s, &t, self.sum_type());
                }
                *n += m;
            }
            (Acc::Extreme(a), Acc::Extreme(b)) => {
                let better = !b.is_null()
                    && (a.is_null()
                        || match self.func {
                            AggFunc::Min => b < *a,
                            _ => b > *a,
                        });
                if better {
                    *a = b;
                }
            }
            _ => {}
        }
    }

    /// The aggregate's result.
    pub fn finish(&self, acc: &Acc) -> Value {
        match acc {
            Acc::Count(n) => Value::Int(*n),
            Acc::Distinct(set) => match self.func {
                AggFunc::Count => Value::Int(set.len() as i64),
                AggFunc::Min => set.first().cloned().unwrap_or(Value::Null),
                AggFunc::Max => set.last().cloned().unwrap_or(Value::Null),
                AggFunc::Sum | AggFunc::Avg => {
                    let mut s = Value::Null;
                    for v in set {
                        s = add_values(&s, v, self.sum_type());
                    }
                    self.average(s, set.len() as i64)
                }
            },
            Acc::Sum(s, n) => self.average(s.clone(), *n),
            Acc::Extreme(m) => m.clone(),
            Acc::Multiset(m) => match (self.func, self.distinct) {
                (AggFunc::Count, _) => Value::Int(m.len() as i64),
                (AggFunc::Min, _) => m.keys().next().cloned().unwrap_or(Value::Null),
                (AggFunc::Max, _) => m.keys().next_back().cloned().unwrap_or(Value::Null),
                (AggFunc::Sum | AggFunc::Avg, _) => {
                    let mut s = Value::Null;
                    for v in m.keys() {
                        s = add_values(&s, v, self.sum_type());
                    }
                    self.average(s, m.len() as i64)
                }
            },
        }
    }

    fn average(&self, sum: Value, n: i64) -> Value {
        if self.func != AggFunc::Avg || sum.is_null() || n == 0 {
            return sum;
        }
        super::arithmetic(super::BinOp::Div, &sum, &Value::Int(n), self.ty)
    }

    /// The type sums are kept in: the result type (AVG of integers sums as BIGINT).
    fn sum_type(&self) -> SqlType {
        match self.ty {
            SqlType::Int => SqlType::Bigint,
            t => t,
        }
    }
}

fn add_values(a: &Value, b: &Value, ty: SqlType) -> Value {
    if a.is_null() {
        return super::functions::cast(b.clone(), ty);
    }
    super::arithmetic(super::BinOp::Add, a, b, ty)
}

/// The result type of `func` over an argument of type `arg`, or why it cannot take one.
pub fn result_type(func: AggFunc, arg: Option<SqlType>) -> Result<SqlType, String> {
    match (func, arg) {
        (AggFunc::Count, _) => Ok(SqlType::Bigint),
        (_, None) => Err("needs an argument".into()),
        (AggFunc::Sum | AggFunc::Avg, Some(t)) if t.is_integer() => Ok(SqlType::Bigint),
        (AggFunc::Sum, Some(SqlType::Decimal(_, s))) => Ok(SqlType::Decimal(38, s)),
        (AggFunc::Avg, Some(SqlType::Decimal(_, s))) => Ok(SqlType::Decimal(38, s.max(6))),
        (AggFunc::Sum | AggFunc::Avg, Some(SqlType::Double)) => Ok(SqlType::Double),
        (AggFunc::Sum | AggFunc::Avg, Some(t)) => Err(format!("takes a number, not {t}")),
        (AggFunc::Min | AggFunc::Max, Some(t)) => Ok(t),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(func: AggFunc, distinct: bool, ty: SqlType) -> AggCall {
        AggCall {
            func,
            arg: Some(Scalar::Column(0)),
            distinct,
            filter: None,
            ty,
        }
    }

    #[test]
    fn aggregates_skip_nulls_and_merge_partials() {
        let rows = [Value::Int(3), Value::Null, Value::Int(5), Value::Int(3)];
        for (func, distinct, want) in [
            (AggFunc::Count, false, Value::Int(3)),
            (AggFunc::Count, true, Value::Int(2)),
            (AggFunc::Sum, false, Value::Int(11)),
            (AggFunc::Avg, false, Value::Int(3)),
            (AggFunc::Min, false, Value::Int(3)),
            (AggFunc::Max, false, Value::Int(5)),
        ] {
            let c = call(func, distinct, SqlType::Bigint);
            let (mut a, mut b) = (c.init(), c.init());
            for (i, r) in rows.iter().enumerate() {
                c.add(
                    if i % 2 == 0 { &mut a } else { &mut b },
                    std::slice::from_ref(r),
                );
            }
            c.merge(&mut a, b);
            assert_eq!(c.finish(&a), want, "{func:?} distinct={distinct}");
        }
        for (func, distinct, want) in [
            (AggFunc::Max, false, Value::Int(3)),
            (AggFunc::Min, false, Value::Int(3)),
            (AggFunc::Count, true, Value::Int(1)),
            (AggFunc::Sum, false, Value::Int(6)),
        ] {
            // 3, 5, 3 in, 5 out: MAX falls back to 3.
            let c = call(func, distinct, SqlType::Bigint);
            let mut a = c.init_retractable();
            for v in [3, 5, 3] {
                c.add(&mut a, &[Value::Int(v)]);
            }
            c.retract(&mut a, &[Value::Int(5)]);
            assert_eq!(
                c.finish(&a),
                want,
                "{func:?} distinct={distinct} after a retraction"
            );
        }
        let empty = call(AggFunc::Sum, false, SqlType::Bigint);
        assert!(empty.finish(&empty.init()).is_null());
    }
}
