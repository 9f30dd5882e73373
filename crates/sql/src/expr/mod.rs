//! Scalar expressions: compiled once from the SQL text against a schema ([`compile`]), typed,
//! then evaluated per row ([`Scalar::eval`]). Rows are typed values (`crate::types::Row`), one
//! row at a time: the measured choice is in docs/sql.md, "Evaluation".

pub mod aggregate;
pub mod compile;
pub mod functions;

use crate::types::{rescale, SqlType, Value};
use functions::Func;
use std::sync::Arc;

/// A binary operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinOp {
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `*`
    Mul,
    /// `/` (integer division on integers, as Flink's)
    Div,
    /// `%` and `MOD`
    Mod,
    /// `=`
    Eq,
    /// `<>`, `!=`
    NotEq,
    /// `<`
    Lt,
    /// `<=`
    LtEq,
    /// `>`
    Gt,
    /// `>=`
    GtEq,
    /// `AND` (three-valued)
    And,
    /// `OR` (three-valued)
    Or,
    /// `||`
    Concat,
}

/// A compiled scalar expression over one row.
#[derive(Clone, Debug)]
pub enum Scalar {
    /// The row's column at this index.
    Column(usize),
    /// A constant.
    Literal(Value),
    /// `left op right`, evaluated at `ty` (the result type; arithmetic operands are promoted
    /// to it).
    Binary(BinOp, Box<Scalar>, Box<Scalar>, SqlType),
    /// `NOT e`
    Not(Box<Scalar>),
    /// `-e`
    Neg(Box<Scalar>),
    /// `e IS [NOT] NULL` (`true`: IS NOT NULL)
    IsNull(Box<Scalar>, bool),
    /// `CASE WHEN c THEN r ... ELSE e END` (a `CASE x WHEN v` is compiled to `x = v` conditions).
    Case(Vec<(Scalar, Scalar)>, Option<Box<Scalar>>),
    /// `CAST(e AS ty)`
    Cast(Box<Scalar>, SqlType),
    /// A scalar function.
    Call(Func, Vec<Scalar>),
    /// `e [NOT] IN (list)`
    InList(Box<Scalar>, Vec<Scalar>, bool),
    /// `e [NOT] LIKE pattern`, the pattern compiled
    Like(Box<Scalar>, Arc<regex::Regex>, bool),
}

impl Scalar {
    /// The value of the expression on `row`. Errors of arithmetic (division by zero, overflow)
    /// give NULL (docs/sql.md, "Differences from Flink SQL").
    pub fn eval(&self, row: &[Value]) -> Value {
        match self {
            Scalar::Column(i) => row[*i].clone(),
            Scalar::Literal(v) => v.clone(),
            Scalar::Binary(op, l, r, ty) => binary(*op, l, r, *ty, row),
            Scalar::Not(e) => match e.eval(row) {
                Value::Bool(b) => Value::Bool(!b),
                _ => Value::Null,
            },
            Scalar::Neg(e) => match e.eval(row) {
                Value::Int(i) => i.checked_neg().map_or(Value::Null, Value::Int),
                Value::Double(d) => Value::Double(-d),
                Value::Decimal(u, s) => Value::decimal(-u.get(), s),
                Value::Interval(i) => Value::Interval(-i),
                _ => Value::Null,
            },
            Scalar::IsNull(e, not) => Value::Bool(e.eval(row).is_null() != *not),
            Scalar::Case(whens, otherwise) => {
                for (c, r) in whens {
                    if matches!(c.eval(row), Value::Bool(true)) {
                        return r.eval(row);
                    }
                }
                otherwise.as_ref().map_or(Value::Null, |e| e.eval(row))
            }
            Scalar::Cast(e, ty) => functions::cast(e.eval(row), *ty),
            Scalar::Call(f, args) => match args.len() {
                // Up to four arguments (every function but a long CONCAT or COALESCE) on the
                // stack: a call per row allocates nothing for its arguments. Columns and
                // literals are borrowed where they are (`Func::call_on`), others computed.
                n @ 0..=4 => {
                    let computed: [Value; 4] = std::array::from_fn(|i| match args.get(i) {
                        Some(Scalar::Column(_) | Scalar::Literal(_)) | None => Value::Null,
                        Some(a) => a.eval(row),
                    });
                    let refs: [&Value; 4] = std::array::from_fn(|i| match args.get(i) {
                        Some(Scalar::Column(c)) => &row[*c],
                        Some(Scalar::Literal(v)) => v,
                        _ => &computed[i],
                    });
                    f.call_on(&refs[..n])
                }
                _ => f.call(&args.iter().map(|a| a.eval(row)).collect::<Vec<_>>()),
            },
            Scalar::InList(e, list, negated) => {
                let v = operand(e, row);
                if v.is_null() {
                    return Value::Null;
                }
                let mut saw_null = false;
                for item in list {
                    let w = operand(item, row);
                    saw_null |= w.is_null();
                    if !w.is_null() && w == v {
                        return Value::Bool(!negated);
                    }
                }
                if saw_null {
                    Value::Null
                } else {
                    Value::Bool(*negated)
                }
            }
            Scalar::Like(e, re, negated) => match &*operand(e, row) {
                Value::Str(s) => Value::Bool(re.is_match(s) != *negated),
                _ => Value::Null,
            },
        }
    }

    /// Whether the expression is true on `row` (NULL and false are not).
    pub fn holds(&self, row: &[Value]) -> bool {
        matches!(self.eval(row), Value::Bool(true))
    }

    /// The column this expression reads, if it is a bare column.
    pub fn as_column(&self) -> Option<usize> {
        match self {
            Scalar::Column(i) => Some(*i),
            _ => None,
        }
    }

    /// The same expression with every column index `i` read as `map(i)` (for moving a filter
    /// below a projection or a join).
    pub fn remap(&self, map: &dyn Fn(usize) -> usize) -> Scalar {
        self.rewrite(&|e| e.as_column().map(|i| Scalar::Column(map(i))))
    }

    /// The same expression with each sub-expression for which `f` gives a replacement (the
    /// outermost first) replaced by it.
    pub fn rewrite(&self, f: &dyn Fn(&Scalar) -> Option<Scalar>) -> Scalar {
        if let Some(e) = f(self) {
            return e;
        }
        let map = f;
        let b = |e: &Scalar| Box::new(e.rewrite(map));
        match self {
            Scalar::Column(i) => Scalar::Column(*i),
            Scalar::Literal(v) => Scalar::Literal(v.clone()),
            Scalar::Binary(op, l, r, t) => Scalar::Binary(*op, b(l), b(r), *t),
            Scalar::Not(e) => Scalar::Not(b(e)),
            Scalar::Neg(e) => Scalar::Neg(b(e)),
            Scalar::IsNull(e, n) => Scalar::IsNull(b(e), *n),
            Scalar::Case(w, o) => Scalar::Case(
                w.iter()
                    .map(|(c, r)| (c.rewrite(map), r.rewrite(map)))
                    .collect(),
                o.as_ref().map(|e| b(e)),
            ),
            Scalar::Cast(e, t) => Scalar::Cast(b(e), *t),
            Scalar::Call(f, a) => {
                Scalar::Call(f.clone(), a.iter().map(|e| e.rewrite(map)).collect())
            }
            Scalar::InList(e, l, n) => {
                Scalar::InList(b(e), l.iter().map(|x| x.rewrite(map)).collect(), *n)
            }
            Scalar::Like(e, re, n) => Scalar::Like(b(e), re.clone(), *n),
        }
    }

    /// Every function call in the expression, outer calls before the calls in their arguments.
    pub fn calls<'a>(&'a self, out: &mut Vec<&'a Scalar>) {
        if let Scalar::Call(..) = self {
            out.push(self);
        }
        match self {
            Scalar::Column(_) | Scalar::Literal(_) => {}
            Scalar::Binary(_, l, r, _) => {
                l.calls(out);
                r.calls(out);
            }
            Scalar::Not(e)
            | Scalar::Neg(e)
            | Scalar::IsNull(e, _)
            | Scalar::Cast(e, _)
            | Scalar::Like(e, ..) => e.calls(out),
            Scalar::Case(w, o) => {
                for (c, r) in w {
                    c.calls(out);
                    r.calls(out);
                }
                if let Some(e) = o {
                    e.calls(out);
                }
            }
            Scalar::Call(_, a) => a.iter().for_each(|e| e.calls(out)),
            Scalar::InList(e, l, _) => {
                e.calls(out);
                l.iter().for_each(|x| x.calls(out));
            }
        }
    }

    /// Every column index the expression reads.
    pub fn columns(&self, out: &mut Vec<usize>) {
        match self {
            Scalar::Column(i) => out.push(*i),
            Scalar::Literal(_) => {}
            Scalar::Binary(_, l, r, _) => {
                l.columns(out);
                r.columns(out);
            }
            Scalar::Not(e) | Scalar::Neg(e) | Scalar::IsNull(e, _) | Scalar::Cast(e, _) => {
                e.columns(out)
            }
            Scalar::Like(e, ..) => e.columns(out),
            Scalar::Case(w, o) => {
                for (c, r) in w {
                    c.columns(out);
                    r.columns(out);
                }
                if let Some(e) = o {
                    e.columns(out);
                }
            }
            Scalar::Call(_, a) => a.iter().for_each(|e| e.columns(out)),
            Scalar::InList(e, l, _) => {
                e.columns(out);
                l.iter().for_each(|x| x.columns(out));
            }
        }
    }
}

fn binary(op: BinOp, l: &Scalar, r: &Scalar, ty: SqlType, row: &[Value]) -> Value {
    // AND and OR look at the right side only when the left does not decide.
    match op {
        BinOp::And => {
            return match l.eval(row) {
                Value::Bool(false) => Value::Bool(false),
                a => match (a, r.eval(row)) {
                    (_, Value::Bool(false)) => Value::Bool(false),
                    (Value::Bool(true), Value::Bool(true)) => Value::Bool(true),
                    _ => Value::Null,
                },
            }
        }
        BinOp::Or => {
            return match l.eval(row) {
                Value::Bool(true) => Value::Bool(true),
                a => match (a, r.eval(row)) {
                    (_, Value::Bool(true)) => Value::Bool(true),
                    (Value::Bool(false), Value::Bool(false)) => Value::Bool(false),
                    _ => Value::Null,
                },
            }
        }
        _ => {}
    }
    let (a, b) = (operand(l, row), operand(r, row));
    let (a, b) = (&*a, &*b);
    if a.is_null() || b.is_null() {
        return Value::Null;
    }
    match op {
        BinOp::Eq => Value::Bool(a == b),
        BinOp::NotEq => Value::Bool(a != b),
        BinOp::Lt => Value::Bool(a < b),
        BinOp::LtEq => Value::Bool(a <= b),
        BinOp::Gt => Value::Bool(a > b),
        BinOp::GtEq => Value::Bool(a >= b),
        BinOp::Concat => Value::str(&format!("{}{}", a.to_text(), b.to_text())),
        _ => arithmetic(op, a, b, ty),
    }
}

/// `e`'s value on `row`, borrowed where it already is (a column, a literal): comparing a string
/// column with a literal then touches neither's `Arc` count, and a literal's count is one cache
/// line that every worker would write.
fn operand<'a>(e: &'a Scalar, row: &'a [Value]) -> std::borrow::Cow<'a, Value> {
    match e {
        Scalar::Column(i) => std::borrow::Cow::Borrowed(&row[*i]),
        Scalar::Literal(v) => std::borrow::Cow::Borrowed(v),
        e => std::borrow::Cow::Owned(e.eval(row)),
    }
}

/// `a op b` for `+ - * / %` at the result type `ty`.
pub fn arithmetic(op: BinOp, a: &Value, b: &Value, ty: SqlType) -> Value {
    match ty {
        SqlType::Int | SqlType::Bigint => {
            let (Some(x), Some(y)) = (a.as_i64(), b.as_i64()) else {
                return Value::Null;
            };
            let r = match op {
                BinOp::Add => x.checked_add(y),
                BinOp::Sub => x.checked_sub(y),
                BinOp::Mul => x.checked_mul(y),
                BinOp::Div => x.checked_div(y),
                BinOp::Mod => x.checked_rem(y),
                _ => None,
            };
            r.map_or(Value::Null, Value::Int)
        }
        SqlType::Double => {
            let (Some(x), Some(y)) = (a.as_f64(), b.as_f64()) else {
                return Value::Null;
            };
            Value::Double(match op {
                BinOp::Add => x + y,
                BinOp::Sub => x - y,
                BinOp::Mul => x * y,
                BinOp::Div => x / y,
                BinOp::Mod => x % y,
                _ => return Value::Null,
            })
        }
        SqlType::Decimal(_, s) => decimal_arithmetic(op, a, b, s),
        SqlType::Timestamp => match (a, b) {
            (Value::Timestamp(t), Value::Interval(i))
            | (Value::Interval(i), Value::Timestamp(t)) => match op {
                BinOp::Add => Value::Timestamp(t + i),
                BinOp::Sub => Value::Timestamp(t - i),
                _ => Value::Null,
            },
            _ => Value::Null,
        },
        SqlType::Interval => match (a, b) {
            (Value::Interval(x), Value::Interval(y)) => match op {
                BinOp::Add => Value::Interval(x + y),
                BinOp::Sub => Value::Interval(x - y),
                _ => Value::Null,
            },
            (Value::Interval(x), Value::Int(y)) | (Value::Int(y), Value::Interval(x)) => match op {
                BinOp::Mul => Value::Interval(x * y),
                _ => Value::Null,
            },
            _ => Value::Null,
        },
        _ => Value::Null,
    }
}

/// Decimal `a op b` with result scale `s`: exact for `+ - *`, rounded half away from zero to
/// `s` for `/`.
fn decimal_arithmetic(op: BinOp, a: &Value, b: &Value, s: u8) -> Value {
    let scale_of = |v: &Value| match v {
        Value::Decimal(_, s) => *s,
        _ => 0,
    };
    let (sa, sb) = (scale_of(a), scale_of(b));
    let (Some(x), Some(y)) = (a.decimal_at(sa), b.decimal_at(sb)) else {
        // A double operand was promoted away at compile time; anything else is NULL.
        return Value::Null;
    };
    let r = match op {
        BinOp::Add | BinOp::Sub | BinOp::Mod => {
            let m = sa.max(sb);
            let (x, y) = (rescale(x, sa, m), rescale(y, sb, m));
            let v = match op {
                BinOp::Add => x.checked_add(y),
                BinOp::Sub => x.checked_sub(y),
                _ => x.checked_rem(y),
            };
            v.map(|v| rescale(v, m, s))
        }
        BinOp::Mul => x.checked_mul(y).map(|v| rescale(v, sa + sb, s)),
        BinOp::Div => {
            if y == 0 {
                None
            } else {
                // x/10^sa / (y/10^sb) at scale s: x * 10^(s + sb - sa + 1) / y, then round.
                let shift = s as i32 + sb as i32 - sa as i32 + 1;
                let num = match shift >= 0 {
                    true => x.checked_mul(10i128.pow(shift as u32)),
                    false => Some(x / 10i128.pow((-shift) as u32)),
                };
                num.and_then(|n| n.checked_div(y))
                    .map(|q| rescale(q, s + 1, s))
            }
        }
        _ => None,
    };
    r.map_or(Value::Null, |u| Value::decimal(u, s))
}
