//! The tables and views a job's statements declare: `CREATE TABLE` (columns, watermark,
//! connector options) and `CREATE VIEW` (a named query).

use crate::dialect::WatermarkClause;
use crate::error::{Result, SqlError};
use crate::expr::compile::{compile, sql_type};
use crate::expr::{BinOp, Scalar};
use crate::schema::{Field, Schema};
use crate::types::{SqlType, Value};
use sqlparser::ast::{
    CreateTable, CreateTableOptions, Expr, Query, Spanned, SqlOption, TableConstraint,
};
use sqlparser::tokenizer::Location;
use std::collections::BTreeMap;

/// A table's event-time column and the delay of its watermark (`WATERMARK FOR col AS col -
/// INTERVAL ...`): the source heartbeats the largest time read minus `delay_ms`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rowtime {
    /// The column (a TIMESTAMP(3)).
    pub column: usize,
    /// The bounded delay, ms.
    pub delay_ms: i64,
}

/// A declared table.
#[derive(Clone, Debug)]
pub struct Table {
    /// Its name, as declared.
    pub name: String,
    /// Its columns.
    pub schema: Schema,
    /// Its event time, if it declares a watermark.
    pub rowtime: Option<Rowtime>,
    /// The `WITH` options, keys as written (Flink's keys are lower case).
    pub options: BTreeMap<String, String>,
    /// The columns of its `PRIMARY KEY (...) NOT ENFORCED`, in key order (empty: none). Not
    /// checked, as in Flink; an upsert-kafka sink writes a record's key from them.
    pub primary_key: Vec<usize>,
    /// Where its `CREATE TABLE` starts.
    pub at: Location,
}

impl Table {
    /// The option `key`, if given.
    pub fn option(&self, key: &str) -> Option<&str> {
        self.options.get(key).map(String::as_str)
    }

    /// The `connector` option.
    pub fn connector(&self) -> &str {
        self.option("connector").unwrap_or("")
    }
}

/// The job's tables and views, by name (case-insensitive).
#[derive(Clone, Debug, Default)]
pub struct Catalog {
    tables: BTreeMap<String, Table>,
    views: BTreeMap<String, (String, Box<Query>)>,
}

impl Catalog {
    /// Adds the table a `CREATE TABLE` declares, with its watermark clause if any.
    ///
    /// # Errors
    /// A name taken, an unsupported column type, a watermark that is not `col - INTERVAL`, a
    /// `WITH` option that is not `'key' = 'value'`.
    pub fn create_table(&mut self, t: &CreateTable, wm: Option<&WatermarkClause>) -> Result<()> {
        let name = t.name.to_string().replace('`', "");
        let at = t.name.span().start;
        self.check_free(&name, at, t.if_not_exists)?;
        let mut fields = Vec::new();
        for c in &t.columns {
            let ty = sql_type(&c.data_type).map_err(|m| SqlError::in_span(c.name.span, m))?;
            if !c.options.is_empty() {
                return Err(SqlError::in_span(
                    c.name.span,
                    format!("column options ('{}') are not supported", c),
                ));
            }
            fields.push(Field::new(&c.name.value, ty));
        }
        let schema = Schema::new(fields).qualified(&name);
        let rowtime = match wm {
            Some(w) => Some(rowtime(&schema, w)?),
            None => None,
        };
        let mut primary_key = Vec::new();
        for c in &t.constraints {
            let TableConstraint::PrimaryKey(pk) = c else {
                return Err(SqlError::of(
                    c,
                    format!("constraint '{c}': only PRIMARY KEY (...) NOT ENFORCED"),
                ));
            };
            if !primary_key.is_empty() {
                return Err(SqlError::of(c, "a table has one PRIMARY KEY"));
            }
            for k in &pk.columns {
                let Expr::Identifier(id) = &k.column.expr else {
                    return Err(SqlError::of(c, "PRIMARY KEY (...) names columns"));
                };
                primary_key.push(schema.resolve(None, id)?);
            }
        }
        let options = match &t.table_options {
            CreateTableOptions::With(o) => with_options(o)?,
            CreateTableOptions::None => BTreeMap::new(),
            other => {
                return Err(SqlError::at(
                    at,
                    format!("table options '{other}': write WITH ('key' = 'value', ...)"),
                ))
            }
        };
        let table = Table {
            name: name.clone(),
            schema,
            rowtime,
            options,
            primary_key,
            at,
        };
        self.tables.insert(name.to_ascii_lowercase(), table);
        Ok(())
    }

    /// Adds a view.
    ///
    /// # Errors
    /// A name taken.
    pub fn create_view(&mut self, name: &str, at: Location, query: Box<Query>) -> Result<()> {
        self.check_free(name, at, false)?;
        self.views
            .insert(name.to_ascii_lowercase(), (name.to_string(), query));
        Ok(())
    }

    fn check_free(&self, name: &str, at: Location, if_not_exists: bool) -> Result<()> {
        let key = name.to_ascii_lowercase();
        if (self.tables.contains_key(&key) || self.views.contains_key(&key)) && !if_not_exists {
            return Err(SqlError::at(at, format!("'{name}' is already declared")));
        }
        Ok(())
    }

    /// The table `name`.
    pub fn table(&self, name: &str) -> Option<&Table> {
        self.tables.get(&name.to_ascii_lowercase())
    }

    /// The view `name`: its name as declared and its query.
    pub fn view(&self, name: &str) -> Option<&(String, Box<Query>)> {
        self.views.get(&name.to_ascii_lowercase())
    }

    /// Every table and view name, for errors that list them.
    pub fn names(&self) -> Vec<String> {
        let t = self.tables.values().map(|t| t.name.clone());
        t.chain(self.views.values().map(|v| v.0.clone())).collect()
    }
}

fn rowtime(schema: &Schema, w: &WatermarkClause) -> Result<Rowtime> {
    let column = schema.resolve(None, &w.column)?;
    if schema.fields[column].ty != SqlType::Timestamp {
        return Err(SqlError::at(
            w.at,
            format!(
                "WATERMARK FOR {}: the column must be a TIMESTAMP(3)",
                w.column
            ),
        ));
    }
    let bad = || {
        SqlError::at(
            w.at,
            format!(
                "WATERMARK ... AS {}: supported is the column itself or the column minus an \
                 interval (`{col} - INTERVAL '5' SECOND`)",
                w.expr,
                col = w.column
            ),
        )
    };
    let delay_ms = match compile(&w.expr, schema)?.expr {
        Scalar::Column(c) if c == column => 0,
        Scalar::Binary(BinOp::Sub, l, r, _) => match (*l, *r) {
            (Scalar::Column(c), Scalar::Literal(Value::Interval(ms))) if c == column && ms >= 0 => {
                ms
            }
            _ => return Err(bad()),
        },
        _ => return Err(bad()),
    };
    Ok(Rowtime { column, delay_ms })
}

fn with_options(options: &[SqlOption]) -> Result<BTreeMap<String, String>> {
    let mut out = BTreeMap::new();
    for o in options {
        let SqlOption::KeyValue { key, value } = o else {
            return Err(SqlError::of(
                o,
                format!("option '{o}': write 'key' = 'value'"),
            ));
        };
        let text = |e: &Expr| match e {
            Expr::Value(v) => v
                .value
                .clone()
                .into_string()
                .unwrap_or_else(|| v.value.to_string()),
            other => other.to_string(),
        };
        let k = key.to_string().trim_matches(['\'', '"', '`']).to_string();
        out.insert(k, text(value));
    }
    Ok(out)
}
