//! From sqlparser's expressions to typed [`Scalar`]s: names resolved against a schema, types
//! checked, constants folded where a function needs one (a regex, a date pattern). Errors name
//! the line and column of the offending part.

use super::aggregate::{self, AggCall, AggFunc};
use super::functions::{Func, TimeField};
use super::{BinOp, Scalar};
use crate::error::{Result, SqlError};
use crate::schema::Schema;
use crate::types::{SqlType, Value};
use sqlparser::ast::{
    self, BinaryOperator, CastKind, DataType, DateTimeField, Expr, FunctionArg, FunctionArgExpr,
    FunctionArguments, Spanned, UnaryOperator,
};
use std::sync::Arc;

/// A compiled expression and its type.
#[derive(Clone, Debug)]
pub struct Typed {
    /// The expression.
    pub expr: Scalar,
    /// Its type.
    pub ty: SqlType,
}

/// What an aggregate query's expressions (SELECT list, HAVING) are compiled against: the
/// GROUP BY expressions, which become the first columns of the aggregate's output, and the
/// aggregate calls found so far, which follow them.
#[derive(Debug)]
pub struct AggScope<'a> {
    /// The schema of the rows being aggregated.
    pub input: &'a Schema,
    /// The GROUP BY expressions: their text (to match the SELECT list's) and compiled form.
    pub groups: Vec<(String, Typed)>,
    /// The aggregate calls found, in order, with their text.
    pub calls: Vec<(String, AggCall)>,
}

impl AggScope<'_> {
    fn group_of(&self, e: &Expr) -> Option<usize> {
        let text = normalized(e);
        if let Some(i) = self.groups.iter().position(|(g, _)| *g == text) {
            return Some(i);
        }
        // `B.auction` matches `GROUP BY auction` when both name the same input column.
        let col = column_ref(e).and_then(|(q, n)| self.input.resolve(q, n).ok())?;
        self.groups
            .iter()
            .position(|(_, t)| t.expr.as_column() == Some(col))
    }
}

fn normalized(e: &Expr) -> String {
    e.to_string().to_ascii_lowercase().replace('`', "")
}

fn column_ref(e: &Expr) -> Option<(Option<&ast::Ident>, &ast::Ident)> {
    match e {
        Expr::Identifier(i) => Some((None, i)),
        Expr::CompoundIdentifier(parts) if parts.len() == 2 => Some((Some(&parts[0]), &parts[1])),
        _ => None,
    }
}

/// Compiles `e` against the columns of `schema`.
///
/// # Errors
/// An unknown column or function, a type mismatch, or an unsupported construct (line, column).
pub fn compile(e: &Expr, schema: &Schema) -> Result<Typed> {
    Compiler { schema, agg: None }.expr(e)
}

/// Compiles `e`, an expression of an aggregate query, against `scope`: GROUP BY expressions
/// and aggregate calls become columns of the aggregate's output (groups first, then calls).
///
/// # Errors
/// As [`compile`], and a column neither grouped nor inside an aggregate.
pub fn compile_aggregated(e: &Expr, scope: &mut AggScope<'_>) -> Result<Typed> {
    Compiler {
        schema: scope.input,
        agg: Some(scope),
    }
    .expr(e)
}

/// The aggregate function `name` names, if any.
pub fn aggregate_func(name: &str) -> Option<AggFunc> {
    Some(match name.to_ascii_uppercase().as_str() {
        "COUNT" => AggFunc::Count,
        "SUM" => AggFunc::Sum,
        "AVG" => AggFunc::Avg,
        "MIN" => AggFunc::Min,
        "MAX" => AggFunc::Max,
        _ => return None,
    })
}

/// Whether `e` contains an aggregate call (not inside an OVER window).
pub fn has_aggregate(e: &Expr) -> bool {
    let any = |xs: &[&Expr]| xs.iter().any(|x| has_aggregate(x));
    match e {
        Expr::Function(f) => {
            if f.over.is_none() && aggregate_func(&f.name.to_string()).is_some() {
                return true;
            }
            match &f.args {
                FunctionArguments::List(l) => l.args.iter().any(|a| match a {
                    FunctionArg::Unnamed(FunctionArgExpr::Expr(x))
                    | FunctionArg::Named {
                        arg: FunctionArgExpr::Expr(x),
                        ..
                    } => has_aggregate(x),
                    _ => false,
                }),
                _ => false,
            }
        }
        Expr::BinaryOp { left, right, .. } => any(&[left, right]),
        Expr::UnaryOp { expr, .. }
        | Expr::Nested(expr)
        | Expr::Cast { expr, .. }
        | Expr::IsNull(expr)
        | Expr::IsNotNull(expr)
        | Expr::IsTrue(expr)
        | Expr::IsFalse(expr)
        | Expr::Extract { expr, .. }
        | Expr::Floor { expr, .. }
        | Expr::Ceil { expr, .. } => has_aggregate(expr),
        Expr::Between {
            expr, low, high, ..
        } => any(&[expr, low, high]),
        Expr::In { expr, .. } => has_aggregate(expr),
        Expr::Like { expr, pattern, .. } => any(&[expr, pattern]),
        Expr::Case {
            operand,
            conditions,
            else_result,
            ..
        } => {
            operand.as_deref().is_some_and(has_aggregate)
                || else_result.as_deref().is_some_and(has_aggregate)
                || conditions
                    .iter()
                    .any(|w| has_aggregate(&w.condition) || has_aggregate(&w.result))
        }
        _ => false,
    }
}

struct Compiler<'a, 'b> {
    schema: &'a Schema,
    agg: Option<&'a mut AggScope<'b>>,
}

const FUNCTIONS: &str = "MOD, ABS, FLOOR, CEIL, ROUND, UPPER, LOWER, CHAR_LENGTH, CONCAT, \
                         SUBSTRING, TRIM, SPLIT_INDEX, REGEXP_EXTRACT, REGEXP, DATE_FORMAT, \
                         EXTRACT, YEAR, MONTH, DAYOFMONTH, HOUR, MINUTE, SECOND, COALESCE, IF, \
                         COUNT_CHAR, TO_TIMESTAMP; aggregates COUNT, SUM, AVG, MIN, MAX";

impl Compiler<'_, '_> {
    fn expr(&mut self, e: &Expr) -> Result<Typed> {
        if let Some(scope) = self.agg.as_deref() {
            if let Some(i) = scope.group_of(e) {
                return Ok(Typed {
                    expr: Scalar::Column(i),
                    ty: scope.groups[i].1.ty,
                });
            }
        }
        match e {
            Expr::Identifier(_) | Expr::CompoundIdentifier(_) => self.column(e),
            Expr::Nested(inner) => self.expr(inner),
            Expr::Value(v) => literal(&v.value, e),
            Expr::Interval(i) => interval(i, e).map(|ms| Typed {
                expr: Scalar::Literal(Value::Interval(ms)),
                ty: SqlType::Interval,
            }),
            Expr::BinaryOp { left, op, right } => self.binary(e, left, op, right),
            Expr::UnaryOp { op, expr } => {
                let t = self.expr(expr)?;
                match op {
                    UnaryOperator::Not => {
                        self.want(&t, SqlType::Boolean, expr)?;
                        Ok(Typed {
                            expr: Scalar::Not(Box::new(t.expr)),
                            ty: SqlType::Boolean,
                        })
                    }
                    UnaryOperator::Minus if t.ty.is_numeric() || t.ty == SqlType::Interval => {
                        Ok(Typed {
                            expr: Scalar::Neg(Box::new(t.expr)),
                            ty: t.ty,
                        })
                    }
                    UnaryOperator::Plus if t.ty.is_numeric() => Ok(t),
                    _ => Err(SqlError::of(e, format!("{op} does not apply to {}", t.ty))),
                }
            }
            Expr::IsNull(x) | Expr::IsNotNull(x) => Ok(Typed {
                expr: Scalar::IsNull(
                    Box::new(self.expr(x)?.expr),
                    matches!(e, Expr::IsNotNull(_)),
                ),
                ty: SqlType::Boolean,
            }),
            Expr::IsTrue(x) | Expr::IsFalse(x) => {
                let t = self.expr(x)?;
                self.want(&t, SqlType::Boolean, x)?;
                let v = Value::Bool(matches!(e, Expr::IsTrue(_)));
                let cmp = Scalar::Binary(
                    BinOp::Eq,
                    Box::new(t.expr),
                    Box::new(Scalar::Literal(v)),
                    SqlType::Boolean,
                );
                let f = Func::Coalesce;
                Ok(Typed {
                    expr: Scalar::Call(f, vec![cmp, Scalar::Literal(Value::Bool(false))]),
                    ty: SqlType::Boolean,
                })
            }
            Expr::Between {
                expr,
                negated,
                low,
                high,
            } => {
                let ge = self.compare(e, expr, BinaryOperator::GtEq, low)?;
                let le = self.compare(e, expr, BinaryOperator::LtEq, high)?;
                let both = Scalar::Binary(BinOp::And, Box::new(ge), Box::new(le), SqlType::Boolean);
                Ok(Typed {
                    expr: if *negated {
                        Scalar::Not(Box::new(both))
                    } else {
                        both
                    },
                    ty: SqlType::Boolean,
                })
            }
            Expr::In {
                expr,
                target: ast::InTarget::List(list),
                negated,
                ..
            } => {
                let x = self.expr(expr)?;
                let mut items = Vec::new();
                for item in list {
                    let t = self.expr(item)?;
                    if !x.ty.comparable(t.ty) {
                        return Err(SqlError::of(
                            item,
                            format!("{} cannot be compared with {}", t.ty, x.ty),
                        ));
                    }
                    items.push(t.expr);
                }
                Ok(Typed {
                    expr: Scalar::InList(Box::new(x.expr), items, *negated),
                    ty: SqlType::Boolean,
                })
            }
            Expr::Like {
                negated,
                expr,
                pattern,
                escape_char: None,
                any: false,
            } => {
                let x = self.expr(expr)?;
                self.want(&x, SqlType::Varchar, expr)?;
                let Expr::Value(v) = pattern.as_ref() else {
                    return Err(SqlError::of(
                        pattern.as_ref(),
                        "LIKE takes a constant pattern here",
                    ));
                };
                let Some(p) = v.value.clone().into_string() else {
                    return Err(SqlError::of(
                        pattern.as_ref(),
                        "LIKE takes a string pattern",
                    ));
                };
                Ok(Typed {
                    expr: Scalar::Like(Box::new(x.expr), Arc::new(like_regex(&p)), *negated),
                    ty: SqlType::Boolean,
                })
            }
            Expr::Case {
                operand,
                conditions,
                else_result,
                ..
            } => self.case(operand.as_deref(), conditions, else_result.as_deref()),
            Expr::Cast {
                kind: CastKind::Cast | CastKind::DoubleColon,
                expr,
                data_type,
                ..
            } => {
                let t = self.expr(expr)?;
                let ty = sql_type(data_type).map_err(|m| SqlError::of(e, m))?;
                Ok(Typed {
                    expr: Scalar::Cast(Box::new(t.expr), ty),
                    ty,
                })
            }
            Expr::Extract { field, expr, .. } => {
                let t = self.expr(expr)?;
                self.want(&t, SqlType::Timestamp, expr)?;
                let f = time_field(field).ok_or_else(|| {
                    SqlError::of(e, format!("EXTRACT({field}) is not supported: YEAR, MONTH, DAY, HOUR, MINUTE, SECOND, DOW, DOY"))
                })?;
                Ok(Typed {
                    expr: Scalar::Call(Func::Extract(f), vec![t.expr]),
                    ty: SqlType::Bigint,
                })
            }
            Expr::Substring {
                expr,
                substring_from,
                substring_for,
                ..
            } => {
                let mut args = vec![self.expr(expr)?.expr];
                let from = match substring_from {
                    Some(f) => self.expr(f)?.expr,
                    None => Scalar::Literal(Value::Int(1)),
                };
                args.push(from);
                if let Some(n) = substring_for {
                    args.push(self.expr(n)?.expr);
                }
                Ok(Typed {
                    expr: Scalar::Call(Func::Substring, args),
                    ty: SqlType::Varchar,
                })
            }
            Expr::Trim {
                expr,
                trim_where: None,
                trim_what: None,
                ..
            } => Ok(Typed {
                expr: Scalar::Call(Func::Trim, vec![self.expr(expr)?.expr]),
                ty: SqlType::Varchar,
            }),
            Expr::Floor { expr, .. } | Expr::Ceil { expr, .. } => {
                let t = self.expr(expr)?;
                let f = if matches!(e, Expr::Floor { .. }) {
                    Func::Floor
                } else {
                    Func::Ceil
                };
                let ty = match t.ty {
                    SqlType::Decimal(p, _) => SqlType::Decimal(p, 0),
                    t => t,
                };
                Ok(Typed {
                    expr: Scalar::Call(f, vec![t.expr]),
                    ty,
                })
            }
            Expr::Function(f) => self.function(e, f),
            _ => Err(SqlError::of(
                e,
                format!("'{e}' is not supported in an expression (docs/sql.md lists what is)"),
            )),
        }
    }

    fn want(&self, t: &Typed, ty: SqlType, at: &Expr) -> Result<()> {
        match t.ty == ty || t.ty == SqlType::Null {
            true => Ok(()),
            false => Err(SqlError::of(
                at,
                format!("expected {ty}, found {} ('{at}')", t.ty),
            )),
        }
    }

    fn column(&mut self, e: &Expr) -> Result<Typed> {
        let (q, name) = match e {
            Expr::Identifier(i) => (None, i),
            Expr::CompoundIdentifier(p) if p.len() == 2 => (Some(&p[0]), &p[1]),
            _ => {
                return Err(SqlError::of(
                    e,
                    format!("'{e}': nested fields are not supported"),
                ))
            }
        };
        if let Some(scope) = self.agg.as_deref() {
            // Not a group: the column must be inside an aggregate.
            scope.input.resolve(q, name)?;
            return Err(SqlError::of(
                e,
                format!("column '{e}' must appear in GROUP BY or inside an aggregate function"),
            ));
        }
        let i = self.schema.resolve(q, name)?;
        Ok(Typed {
            expr: Scalar::Column(i),
            ty: self.schema.fields[i].ty,
        })
    }

    fn compare(&mut self, at: &Expr, l: &Expr, op: BinaryOperator, r: &Expr) -> Result<Scalar> {
        let (a, b) = (self.expr(l)?, self.expr(r)?);
        let op = bin_op(&op).expect("a comparison");
        self.binary_typed(at, op, a, b).map(|t| t.expr)
    }

    fn binary(&mut self, e: &Expr, l: &Expr, op: &BinaryOperator, r: &Expr) -> Result<Typed> {
        let Some(op) = bin_op(op) else {
            return Err(SqlError::of(
                e,
                format!("the operator {op} is not supported"),
            ));
        };
        let (a, b) = (self.expr(l)?, self.expr(r)?);
        self.binary_typed(e, op, a, b)
    }

    fn binary_typed(&mut self, e: &Expr, op: BinOp, a: Typed, b: Typed) -> Result<Typed> {
        use SqlType as T;
        let mismatch = || {
            SqlError::of(
                e,
                format!("'{e}': {op:?} does not apply to {} and {}", a.ty, b.ty),
            )
        };
        let ty = match op {
            BinOp::And | BinOp::Or => {
                for t in [&a, &b] {
                    if !matches!(t.ty, T::Boolean | T::Null) {
                        return Err(mismatch());
                    }
                }
                T::Boolean
            }
            BinOp::Eq | BinOp::NotEq | BinOp::Lt | BinOp::LtEq | BinOp::Gt | BinOp::GtEq => {
                // A string constant compared with a timestamp is read as one (Flink's implicit
                // cast of literals).
                let (a, b) = (
                    coerce_literal(a.clone(), b.ty),
                    coerce_literal(b.clone(), a.ty),
                );
                if !a.ty.comparable(b.ty) {
                    return Err(mismatch());
                }
                return Ok(Typed {
                    expr: Scalar::Binary(op, Box::new(a.expr), Box::new(b.expr), T::Boolean),
                    ty: T::Boolean,
                });
            }
            BinOp::Concat => T::Varchar,
            _ => arithmetic_type(op, a.ty, b.ty).ok_or_else(mismatch)?,
        };
        // Doubles and decimals meet as doubles: promote the decimal side.
        let promote = |t: Typed| match (ty, t.ty) {
            (T::Double, T::Decimal(..)) => Scalar::Cast(Box::new(t.expr), T::Double),
            _ => t.expr,
        };
        Ok(Typed {
            expr: Scalar::Binary(op, Box::new(promote(a)), Box::new(promote(b)), ty),
            ty,
        })
    }

    fn case(
        &mut self,
        operand: Option<&Expr>,
        conditions: &[ast::CaseWhen],
        otherwise: Option<&Expr>,
    ) -> Result<Typed> {
        let mut whens = Vec::new();
        let mut ty = SqlType::Null;
        for w in conditions {
            let cond = match operand {
                Some(x) => {
                    let eq = BinaryOperator::Eq;
                    self.compare(&w.condition, x, eq, &w.condition)?
                }
                None => {
                    let c = self.expr(&w.condition)?;
                    self.want(&c, SqlType::Boolean, &w.condition)?;
                    c.expr
                }
            };
            let r = self.expr(&w.result)?;
            ty = unify(ty, r.ty).ok_or_else(|| {
                SqlError::of(
                    &w.result,
                    format!("CASE results of types {ty} and {}", r.ty),
                )
            })?;
            whens.push((cond, r.expr));
        }
        let otherwise = match otherwise {
            Some(x) => {
                let r = self.expr(x)?;
                ty = unify(ty, r.ty).ok_or_else(|| {
                    SqlError::of(x, format!("CASE results of types {ty} and {}", r.ty))
                })?;
                Some(Box::new(r.expr))
            }
            None => None,
        };
        // Every branch at the common type.
        let at = |s: Scalar| match ty {
            SqlType::Decimal(..) | SqlType::Double => Scalar::Cast(Box::new(s), ty),
            _ => s,
        };
        let whens = whens.into_iter().map(|(c, r)| (c, at(r))).collect();
        Ok(Typed {
            expr: Scalar::Case(whens, otherwise.map(|o| Box::new(at(*o)))),
            ty,
        })
    }

    fn function(&mut self, e: &Expr, f: &ast::Function) -> Result<Typed> {
        let name = f.name.to_string().to_ascii_uppercase();
        if f.over.is_some() {
            return Err(SqlError::of(
                e,
                "OVER windows are supported only as ROW_NUMBER() in a top-N or deduplication query",
            ));
        }
        let (args, distinct, star) = function_args(e, f)?;
        if let Some(func) = aggregate_func(&name) {
            return self.aggregate(e, f, func, &args, distinct, star);
        }
        if distinct || star || f.filter.is_some() {
            return Err(SqlError::of(
                e,
                format!("{name} is not an aggregate function"),
            ));
        }
        let mut typed = Vec::new();
        for a in &args {
            typed.push(self.expr(a)?);
        }
        let n = typed.len();
        let arity = |lo: usize, hi: usize| -> Result<()> {
            match (lo..=hi).contains(&n) {
                true => Ok(()),
                false => Err(SqlError::of(
                    e,
                    format!("{name} takes {lo} to {hi} arguments, not {n}"),
                )),
            }
        };
        let ty_of = |i: usize| typed[i].ty;
        let (func, ty) = match name.as_str() {
            "MOD" => {
                arity(2, 2)?;
                if !(ty_of(0).is_integer() && ty_of(1).is_integer()) {
                    return Err(SqlError::of(e, "MOD takes two integers"));
                }
                (Func::Mod, SqlType::Bigint)
            }
            "ABS" => (arity(1, 1).map(|_| Func::Abs)?, ty_of(0)),
            "FLOOR" | "CEIL" | "CEILING" => {
                arity(1, 1)?;
                let f = if name == "FLOOR" {
                    Func::Floor
                } else {
                    Func::Ceil
                };
                (f, ty_of(0))
            }
            "ROUND" => (arity(1, 2).map(|_| Func::Round)?, ty_of(0)),
            "UPPER" => (arity(1, 1).map(|_| Func::Upper)?, SqlType::Varchar),
            "LOWER" => (arity(1, 1).map(|_| Func::Lower)?, SqlType::Varchar),
            "CHAR_LENGTH" | "CHARACTER_LENGTH" => {
                (arity(1, 1).map(|_| Func::CharLength)?, SqlType::Bigint)
            }
            "CONCAT" => (arity(1, 64).map(|_| Func::Concat)?, SqlType::Varchar),
            "SUBSTRING" | "SUBSTR" => (arity(2, 3).map(|_| Func::Substring)?, SqlType::Varchar),
            "TRIM" => (arity(1, 1).map(|_| Func::Trim)?, SqlType::Varchar),
            "SPLIT_INDEX" => (arity(3, 3).map(|_| Func::SplitIndex)?, SqlType::Varchar),
            "REGEXP_EXTRACT" => {
                arity(2, 3)?;
                (
                    Func::RegexpExtract(constant_regex(&args[1])?),
                    SqlType::Varchar,
                )
            }
            "REGEXP" => {
                arity(2, 2)?;
                (Func::Regexp(constant_regex(&args[1])?), SqlType::Boolean)
            }
            "DATE_FORMAT" => {
                arity(2, 2)?;
                let pattern = constant_string(&args[1]).ok_or_else(|| {
                    SqlError::of(&args[1], "DATE_FORMAT takes a constant pattern")
                })?;
                typed.truncate(1);
                (
                    Func::DateFormat(Arc::from(pattern.as_str())),
                    SqlType::Varchar,
                )
            }
            "YEAR" | "MONTH" | "DAYOFMONTH" | "HOUR" | "MINUTE" | "SECOND" => {
                arity(1, 1)?;
                let field = match name.as_str() {
                    "YEAR" => TimeField::Year,
                    "MONTH" => TimeField::Month,
                    "DAYOFMONTH" => TimeField::Day,
                    "HOUR" => TimeField::Hour,
                    "MINUTE" => TimeField::Minute,
                    _ => TimeField::Second,
                };
                (Func::Extract(field), SqlType::Bigint)
            }
            "COALESCE" => {
                arity(1, 64)?;
                let mut ty = SqlType::Null;
                for t in &typed {
                    ty = unify(ty, t.ty)
                        .ok_or_else(|| SqlError::of(e, "COALESCE of different types"))?;
                }
                (Func::Coalesce, ty)
            }
            "IF" => {
                arity(3, 3)?;
                let ty = unify(ty_of(1), ty_of(2))
                    .ok_or_else(|| SqlError::of(e, "IF's two results have different types"))?;
                (Func::If, ty)
            }
            "COUNT_CHAR" => (arity(2, 2).map(|_| Func::CountChar)?, SqlType::Bigint),
            "TO_TIMESTAMP" => (arity(1, 1).map(|_| Func::ToTimestamp)?, SqlType::Timestamp),
            _ => {
                return Err(SqlError::of(
                    e,
                    format!("unknown function {name} (supported: {FUNCTIONS})"),
                ))
            }
        };
        Ok(Typed {
            expr: Scalar::Call(func, typed.into_iter().map(|t| t.expr).collect()),
            ty,
        })
    }

    fn aggregate(
        &mut self,
        e: &Expr,
        f: &ast::Function,
        func: AggFunc,
        args: &[Expr],
        distinct: bool,
        star: bool,
    ) -> Result<Typed> {
        let Some(scope) = self.agg.as_deref_mut() else {
            return Err(SqlError::of(
                e,
                "an aggregate function here needs a GROUP BY (or is inside another aggregate)",
            ));
        };
        let text = normalized(e);
        if let Some(i) = scope.calls.iter().position(|(t, _)| *t == text) {
            let ty = scope.calls[i].1.ty;
            return Ok(Typed {
                expr: Scalar::Column(scope.groups.len() + i),
                ty,
            });
        }
        let input = scope.input;
        let inner = |x: &Expr| compile(x, input);
        let arg = match (star, args) {
            (true, _) | (false, []) if func == AggFunc::Count => None,
            (false, [a]) => Some(inner(a)?),
            _ => return Err(SqlError::of(e, format!("{func:?} takes one argument"))),
        };
        let filter = match &f.filter {
            Some(c) => {
                let t = inner(c)?;
                if t.ty != SqlType::Boolean {
                    return Err(SqlError::of(
                        c.as_ref(),
                        "FILTER (WHERE ...) takes a condition",
                    ));
                }
                Some(t.expr)
            }
            None => None,
        };
        let ty = aggregate::result_type(func, arg.as_ref().map(|t| t.ty))
            .map_err(|m| SqlError::of(e, format!("{func:?} {m}")))?;
        let call = AggCall {
            func,
            arg: arg.map(|t| t.expr),
            distinct,
            filter,
            ty,
        };
        let scope = self.agg.as_deref_mut().expect("checked above");
        scope.calls.push((text, call));
        Ok(Typed {
            expr: Scalar::Column(scope.groups.len() + scope.calls.len() - 1),
            ty,
        })
    }
}

/// The arguments of `f`: expressions, whether DISTINCT, whether `*`.
fn function_args(e: &Expr, f: &ast::Function) -> Result<(Vec<Expr>, bool, bool)> {
    let list = match &f.args {
        FunctionArguments::None => return Ok((Vec::new(), false, false)),
        FunctionArguments::List(l) => l,
        FunctionArguments::Subquery(_) => {
            return Err(SqlError::of(
                e,
                "subqueries as function arguments are not supported",
            ))
        }
    };
    let distinct = matches!(
        list.duplicate_treatment,
        Some(ast::DuplicateTreatment::Distinct)
    );
    let (mut args, mut star) = (Vec::new(), false);
    for a in &list.args {
        match a {
            FunctionArg::Unnamed(FunctionArgExpr::Expr(x)) => args.push(x.clone()),
            FunctionArg::Unnamed(FunctionArgExpr::Wildcard) => star = true,
            _ => {
                return Err(SqlError::of(
                    e,
                    format!("argument '{a}' is not supported here"),
                ))
            }
        }
    }
    Ok((args, distinct, star))
}

/// Result type of arithmetic `op` on `a` and `b`.
fn arithmetic_type(op: BinOp, a: SqlType, b: SqlType) -> Option<SqlType> {
    use SqlType as T;
    Some(match (a, b) {
        (T::Null, t) | (t, T::Null) if t.is_numeric() => t,
        (T::Timestamp, T::Interval) if matches!(op, BinOp::Add | BinOp::Sub) => T::Timestamp,
        (T::Interval, T::Timestamp) if op == BinOp::Add => T::Timestamp,
        (T::Interval, T::Interval) if matches!(op, BinOp::Add | BinOp::Sub) => T::Interval,
        (T::Interval, t) | (t, T::Interval) if t.is_integer() && op == BinOp::Mul => T::Interval,
        (T::Double, t) | (t, T::Double) if t.is_numeric() => T::Double,
        (T::Decimal(p, s), T::Decimal(q, t)) => decimal_type(op, (p, s), (q, t)),
        (T::Decimal(p, s), t) | (t, T::Decimal(p, s)) if t.is_integer() => {
            let (ip, is) = (19, 0);
            match a {
                T::Decimal(..) => decimal_type(op, (p, s), (ip, is)),
                _ => decimal_type(op, (ip, is), (p, s)),
            }
        }
        (T::Int, T::Int) => T::Int,
        (x, y) if x.is_integer() && y.is_integer() => T::Bigint,
        _ => return None,
    })
}

/// Flink's (Calcite's) decimal result types, precision capped at 38.
fn decimal_type(op: BinOp, (p, s): (u8, u8), (q, t): (u8, u8)) -> SqlType {
    let cap = |x: u32| x.min(38) as u8;
    let (p, s, q, t) = (p as u32, s as u32, q as u32, t as u32);
    match op {
        BinOp::Mul => SqlType::Decimal(cap(p + q), cap(s + t)),
        BinOp::Div => {
            let scale = (s + q + 1).max(6);
            SqlType::Decimal(cap(p - s + t + scale), cap(scale))
        }
        _ => {
            let scale = s.max(t);
            SqlType::Decimal(cap((p - s).max(q - t) + scale + 1), cap(scale))
        }
    }
}

/// The common type of two branches.
fn unify(a: SqlType, b: SqlType) -> Option<SqlType> {
    use SqlType as T;
    Some(match (a, b) {
        (T::Null, t) | (t, T::Null) => t,
        (x, y) if x == y => x,
        (T::Double, t) | (t, T::Double) if t.is_numeric() => T::Double,
        (T::Decimal(p, s), T::Decimal(q, t)) => T::Decimal(p.max(q), s.max(t)),
        (T::Decimal(p, s), t) | (t, T::Decimal(p, s)) if t.is_integer() => T::Decimal(p.max(19), s),
        (x, y) if x.is_integer() && y.is_integer() => T::Bigint,
        _ => return None,
    })
}

fn coerce_literal(t: Typed, other: SqlType) -> Typed {
    match (&t.expr, other) {
        (Scalar::Literal(Value::Str(s)), SqlType::Timestamp) => {
            match crate::types::parse_timestamp(s) {
                Some(ms) => Typed {
                    expr: Scalar::Literal(Value::Timestamp(ms)),
                    ty: SqlType::Timestamp,
                },
                None => t,
            }
        }
        _ => t,
    }
}

fn bin_op(op: &BinaryOperator) -> Option<BinOp> {
    Some(match op {
        BinaryOperator::Plus => BinOp::Add,
        BinaryOperator::Minus => BinOp::Sub,
        BinaryOperator::Multiply => BinOp::Mul,
        BinaryOperator::Divide => BinOp::Div,
        BinaryOperator::Modulo => BinOp::Mod,
        BinaryOperator::Eq => BinOp::Eq,
        BinaryOperator::NotEq => BinOp::NotEq,
        BinaryOperator::Lt => BinOp::Lt,
        BinaryOperator::LtEq => BinOp::LtEq,
        BinaryOperator::Gt => BinOp::Gt,
        BinaryOperator::GtEq => BinOp::GtEq,
        BinaryOperator::And => BinOp::And,
        BinaryOperator::Or => BinOp::Or,
        BinaryOperator::StringConcat => BinOp::Concat,
        _ => return None,
    })
}

fn literal(v: &ast::Value, at: &Expr) -> Result<Typed> {
    let (value, ty) = match v {
        ast::Value::Number(text, _) => number(text).ok_or_else(|| {
            SqlError::of(at, format!("'{text}' is not a number xorflow can hold"))
        })?,
        ast::Value::SingleQuotedString(s) | ast::Value::DoubleQuotedString(s) => {
            (Value::str(s), SqlType::Varchar)
        }
        ast::Value::Boolean(b) => (Value::Bool(*b), SqlType::Boolean),
        ast::Value::Null => (Value::Null, SqlType::Null),
        _ => {
            return Err(SqlError::of(
                at,
                format!("the literal {v} is not supported"),
            ))
        }
    };
    Ok(Typed {
        expr: Scalar::Literal(value),
        ty,
    })
}

/// A numeric literal: an integer (INT or BIGINT), a decimal (`0.908`: DECIMAL(4, 3)) or a
/// double (`1e3`).
fn number(text: &str) -> Option<(Value, SqlType)> {
    if text.contains(['e', 'E']) {
        return text
            .parse()
            .ok()
            .map(|d| (Value::Double(d), SqlType::Double));
    }
    if let Some((int, frac)) = text.split_once('.') {
        let scale = frac.len() as u8;
        let u = super::functions::parse_decimal(text, scale)?;
        let precision = (int.trim_start_matches('0').len() as u8 + scale).max(1);
        return Some((Value::decimal(u, scale), SqlType::Decimal(precision, scale)));
    }
    let i: i64 = text.parse().ok()?;
    let ty = if i32::try_from(i).is_ok() {
        SqlType::Int
    } else {
        SqlType::Bigint
    };
    Some((Value::Int(i), ty))
}

/// An `INTERVAL 'n' UNIT` literal in ms.
///
/// # Errors
/// A value or unit it cannot read.
pub fn interval(i: &ast::Interval, at: &Expr) -> Result<i64> {
    let text = match i.value.as_ref() {
        Expr::Value(v) => v
            .value
            .clone()
            .into_string()
            .unwrap_or_else(|| v.value.to_string()),
        other => other.to_string(),
    };
    let n: f64 = text.trim().parse().map_err(|_| {
        SqlError::of(
            at,
            format!("INTERVAL '{text}': expected a number of units, e.g. INTERVAL '10' SECOND"),
        )
    })?;
    let unit = match &i.leading_field {
        Some(DateTimeField::Millisecond | DateTimeField::Milliseconds) => 1.0,
        Some(DateTimeField::Second | DateTimeField::Seconds) | None => 1e3,
        Some(DateTimeField::Minute | DateTimeField::Minutes) => 60e3,
        Some(DateTimeField::Hour | DateTimeField::Hours) => 3600e3,
        Some(DateTimeField::Day | DateTimeField::Days) => 86400e3,
        Some(f) => {
            return Err(SqlError::of(
                at,
                format!(
                    "INTERVAL ... {f}: supported units are MILLISECOND, SECOND, MINUTE, HOUR, DAY"
                ),
            ))
        }
    };
    if i.last_field.is_some() {
        return Err(SqlError::of(
            at,
            "interval ranges (DAY TO SECOND) are not supported",
        ));
    }
    Ok((n * unit).round() as i64)
}

fn time_field(f: &DateTimeField) -> Option<TimeField> {
    Some(match f {
        DateTimeField::Year => TimeField::Year,
        DateTimeField::Month => TimeField::Month,
        DateTimeField::Day => TimeField::Day,
        DateTimeField::Hour => TimeField::Hour,
        DateTimeField::Minute => TimeField::Minute,
        DateTimeField::Second => TimeField::Second,
        DateTimeField::DayOfWeek | DateTimeField::Dow => TimeField::DayOfWeek,
        DateTimeField::DayOfYear | DateTimeField::Doy => TimeField::DayOfYear,
        _ => return None,
    })
}

/// The SQL type a column definition or CAST names.
///
/// # Errors
/// A type xorflow does not support, listing those it does.
pub fn sql_type(t: &DataType) -> std::result::Result<SqlType, String> {
    Ok(match t {
        DataType::BigInt(_) => SqlType::Bigint,
        DataType::Int(_) | DataType::Integer(_) | DataType::SmallInt(_) | DataType::TinyInt(_) => {
            SqlType::Int
        }
        DataType::Double(_) | DataType::DoublePrecision | DataType::Float(_) | DataType::Real => {
            SqlType::Double
        }
        DataType::Decimal(info) | DataType::Numeric(info) | DataType::Dec(info) => {
            let (p, s) = match info {
                ast::ExactNumberInfo::None => (10, 0),
                ast::ExactNumberInfo::Precision(p) => (*p, 0),
                ast::ExactNumberInfo::PrecisionAndScale(p, s) => (*p, (*s).max(0) as u64),
            };
            if p == 0 || p > 38 || s > p {
                return Err(format!(
                    "DECIMAL({p}, {s}): precision 1 to 38, scale at most the precision"
                ));
            }
            SqlType::Decimal(p as u8, s as u8)
        }
        DataType::Varchar(_)
        | DataType::String(_)
        | DataType::Text
        | DataType::Char(_)
        | DataType::CharVarying(_)
        | DataType::Character(_) => SqlType::Varchar,
        DataType::Boolean | DataType::Bool => SqlType::Boolean,
        DataType::Timestamp(_, _) | DataType::Datetime(_) => SqlType::Timestamp,
        other => {
            return Err(format!(
                "the type {other} is not supported (BIGINT, INT, DOUBLE, DECIMAL(p, s), VARCHAR, \
                 STRING, BOOLEAN, TIMESTAMP(3))"
            ))
        }
    })
}

fn constant_string(e: &Expr) -> Option<String> {
    match e {
        Expr::Value(v) => v.value.clone().into_string(),
        _ => None,
    }
}

fn constant_regex(e: &Expr) -> Result<Option<Arc<regex::Regex>>> {
    match constant_string(e) {
        Some(p) => regex::Regex::new(&p)
            .map(|r| Some(Arc::new(r)))
            .map_err(|err| SqlError::of(e, format!("bad regular expression: {err}"))),
        None => Ok(None),
    }
}

/// A LIKE pattern as a regex (`%`: any text, `_`: one character).
fn like_regex(p: &str) -> regex::Regex {
    let mut re = String::from("(?s)^");
    for c in p.chars() {
        match c {
            '%' => re.push_str(".*"),
            '_' => re.push('.'),
            c => re.push_str(&regex::escape(&c.to_string())),
        }
    }
    re.push('$');
    regex::Regex::new(&re).expect("an escaped pattern")
}

/// Where an expression starts, for errors found after compiling.
pub fn place(e: &Expr) -> sqlparser::tokenizer::Location {
    e.span().start
}
