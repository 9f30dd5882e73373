//! A SQL job: its statements parsed and checked before anything runs, then every `INSERT
//! INTO` and the `SELECT` (if any) run together as one dataflow (as Flink's statement set),
//! their results written to their sinks, whole, on success.

use crate::catalog::{Catalog, Table};
use crate::dialect::FlinkDialect;
use crate::error::SqlError;
use crate::exec::Builder;
use crate::plan::build::plan_query;
use crate::plan::{Plan, WindowKind};
use crate::schema::Schema;
use crate::sinks::{Output, OutputKind};
use sqlparser::ast::{Spanned, Statement};
use sqlparser::parser::Parser;
use sqlparser::tokenizer::Location;

/// One query of the job and where its rows go.
#[derive(Debug)]
pub struct Query {
    /// What it computes.
    pub plan: Plan,
    /// Where its rows go.
    pub output: OutputKind,
    /// The names of its output columns.
    pub columns: Schema,
    /// A plain SELECT (not an INSERT INTO).
    pub from_select: bool,
}

/// A job's statements, planned.
#[derive(Debug)]
pub struct Job {
    /// The tables and views declared.
    pub catalog: Catalog,
    /// The queries to run, in statement order.
    pub queries: Vec<Query>,
    /// `EXPLAIN` statements: print the plans, run nothing.
    pub explain: bool,
}

/// A session window's end is its last row's time plus the gap, anywhere in a slot, and it
/// closes when the frontier passes it, which moves a slot at a time: with slots of the gap (10 s
/// in Nexmark q11) a session waited 5 s of event time on average. Slots of at most 100 ms keep
/// that wait within 100 ms (docs/sql.md, "Emission").
const SESSION_SLOT_MS: i64 = 100;

impl Job {
    /// The tracking granularity (substream length) for the job's windows, ms: the greatest
    /// common divisor of their sizes and slides, so every window end is a substream boundary
    /// (1 s without windows).
    pub fn granularity_ms(&self) -> u64 {
        let mut w = Vec::new();
        for q in &self.queries {
            q.plan.windows(&mut w);
        }
        let lengths = w.iter().flat_map(|k| match *k {
            WindowKind::Tumble { size } => vec![size],
            WindowKind::Hop { slide, size } => vec![slide, size],
            WindowKind::Cumulate { step, size } => vec![step, size],
            WindowKind::Session { gap } => vec![gap, SESSION_SLOT_MS],
        });
        let g = lengths.fold(0u64, |g, x| gcd(g, x.max(1) as u64));
        if g == 0 {
            1000
        } else {
            g
        }
    }
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// Where a plain `SELECT`'s rows go.
#[derive(Clone, Debug)]
pub enum SelectTarget {
    /// Printed to standard output as CSV (a header, then rows as windows close).
    Terminal,
    /// Written whole to this file on success: CSV with a header, or JSON lines for `.jsonl`.
    File(std::path::PathBuf),
}

/// One piece of a job's SQL text and where it comes from (a file's name, `--execute`).
#[derive(Clone, Debug)]
pub struct SqlText {
    /// Named in errors: `q5.sql: line 3, column 7: ...`.
    pub origin: String,
    /// The statements.
    pub text: String,
}

/// A SQL error and the text it is in.
#[derive(Clone, Debug)]
pub struct JobSqlError {
    /// The [`SqlText::origin`] of the text.
    pub origin: String,
    /// The error, with its line and column in that text.
    pub error: SqlError,
}

impl std::fmt::Display for JobSqlError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.origin, self.error)
    }
}

/// Parses and plans a job's SQL texts, in order (one catalog for all: a file of DDL, then one
/// of queries).
///
/// # Errors
/// The first syntax error, unknown name, type mismatch or unsupported construct, with the text
/// it is in and its line and column.
pub fn plan_job(texts: &[SqlText], select: &SelectTarget) -> Result<Job, JobSqlError> {
    let mut job = Job {
        catalog: Catalog::default(),
        queries: Vec::new(),
        explain: false,
    };
    for t in texts {
        let in_text = |error| JobSqlError {
            origin: t.origin.clone(),
            error,
        };
        plan_text(&mut job, &t.text, select).map_err(in_text)?;
    }
    let selects = (job.queries.iter())
        .filter(|q| matches!(q.output, OutputKind::Terminal | OutputKind::File { .. }))
        .filter(|q| q.from_select)
        .count();
    let whole = |message: &str| JobSqlError {
        origin: texts
            .iter()
            .map(|t| t.origin.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        error: SqlError::at(Location::new(0, 0), message),
    };
    if selects > 1 && !job.explain {
        return Err(whole(
            "a job runs at most one plain SELECT (write the others as INSERT INTO a table)",
        ));
    }
    if job.queries.is_empty() {
        return Err(whole(
            "nothing to run: the job has no INSERT INTO or SELECT",
        ));
    }
    Ok(job)
}

fn plan_text(job: &mut Job, sql: &str, select: &SelectTarget) -> Result<(), SqlError> {
    let dialect = FlinkDialect::default();
    let end = end_of(sql);
    let statements = Parser::parse_sql(&dialect, sql).map_err(|e| SqlError::parse(e, end))?;
    let mut watermarks = dialect.take_watermarks().into_iter().peekable();
    for s in &statements {
        match s {
            Statement::CreateTable(t) => {
                let wm = watermarks.next_if(|w| w.table == t.name);
                job.catalog.create_table(t, wm.as_ref())?;
            }
            Statement::CreateView(v) => {
                let name = v.name.to_string().replace('`', "");
                if !v.columns.is_empty() {
                    return Err(SqlError::of(&v.name, "CREATE VIEW with a column list is not supported: alias the columns in its query"));
                }
                job.catalog
                    .create_view(&name, v.name.span().start, v.query.clone())?;
            }
            Statement::Insert(_) | Statement::Query(_) => {
                let q = plan_statement(&job.catalog, s, select)?;
                job.queries.push(q);
            }
            Statement::Explain { statement, .. } => {
                let q = plan_statement(&job.catalog, statement, select)?;
                job.queries.push(q);
                job.explain = true;
            }
            other => {
                let kind = other.to_string();
                let word: String = kind
                    .split_whitespace()
                    .take(2)
                    .collect::<Vec<_>>()
                    .join(" ");
                return Err(SqlError::of(
                    other,
                    format!("'{word} ...' is not supported (CREATE TABLE, CREATE VIEW, INSERT INTO, SELECT, EXPLAIN)"),
                ));
            }
        }
    }
    Ok(())
}

/// Plans an `INSERT INTO` or a `SELECT`.
fn plan_statement(
    catalog: &Catalog,
    s: &Statement,
    select: &SelectTarget,
) -> Result<Query, SqlError> {
    match s {
        Statement::Query(q) => {
            let plan = plan_query(q, catalog)?;
            let output = match select {
                SelectTarget::Terminal => OutputKind::Terminal,
                SelectTarget::File(p) => OutputKind::File {
                    path: p.clone(),
                    format: crate::sinks::file_format(p),
                },
            };
            Ok(Query {
                columns: plan.schema(),
                plan,
                output,
                from_select: true,
            })
        }
        Statement::Insert(i) => {
            let target = match &i.table {
                sqlparser::ast::TableObject::TableName(n) => n,
                other => {
                    return Err(SqlError::of(
                        s,
                        format!("INSERT INTO {other}: name a table"),
                    ))
                }
            };
            let name = target.to_string().replace('`', "");
            let Some(table) = catalog.table(&name) else {
                return Err(SqlError::of(
                    target,
                    format!(
                        "unknown table '{name}' (declared: {})",
                        catalog.names().join(", ")
                    ),
                ));
            };
            let Some(source) = &i.source else {
                return Err(SqlError::of(s, "INSERT INTO ... needs a SELECT"));
            };
            if !i.columns.is_empty() {
                return Err(SqlError::of(
                    s,
                    "INSERT INTO t (columns) is not supported: select the table's columns in order",
                ));
            }
            let plan = plan_query(source, catalog)?;
            let output = sink_of(table, &plan.schema(), s.span().start)?;
            Ok(Query {
                columns: table.schema.clone(),
                plan,
                output,
                from_select: false,
            })
        }
        other => Err(SqlError::of(
            other,
            "EXPLAIN takes a SELECT or an INSERT INTO",
        )),
    }
}

/// The sink a table's connector makes, checked against the rows the query gives it.
fn sink_of(table: &Table, rows: &Schema, at: Location) -> Result<OutputKind, SqlError> {
    let want = &table.schema;
    if want.fields.len() != rows.fields.len() {
        return Err(SqlError::at(
            at,
            format!(
                "INSERT INTO {}: the query gives {} columns ({}), the table has {} ({})",
                table.name,
                rows.fields.len(),
                rows.names().join(", "),
                want.fields.len(),
                want.names().join(", ")
            ),
        ));
    }
    for (w, r) in want.fields.iter().zip(&rows.fields) {
        let ok = w.ty == r.ty
            || r.ty == crate::types::SqlType::Null
            || (w.ty.is_numeric() && r.ty.is_numeric())
            || w.ty == crate::types::SqlType::Varchar;
        if !ok {
            return Err(SqlError::at(
                at,
                format!(
                    "INSERT INTO {}: column {} is {}, the query gives {} ({})",
                    table.name, w.name, w.ty, r.ty, r.name
                ),
            ));
        }
    }
    match table.connector() {
        "blackhole" => Ok(OutputKind::Blackhole),
        "print" => Ok(OutputKind::Print),
        "kafka" => crate::connectors::kafka::uri_of(table)
            .map(|uri| OutputKind::Kafka { uri })
            .map_err(|m| SqlError::at(table.at, m)),
        "upsert-kafka" => crate::connectors::upsert_kafka::uri_of(table)
            .map(|uri| OutputKind::UpsertKafka { uri, key: table.primary_key.clone() })
            .map_err(|m| SqlError::at(table.at, m)),
        "filesystem" => {
            let path = table.option("path").ok_or_else(|| SqlError::at(table.at, format!("table '{}': the filesystem connector needs a 'path'", table.name)))?;
            let format = crate::connectors::filesystem::format_of(table).map_err(|m| SqlError::at(table.at, m))?;
            Ok(OutputKind::File { path: path.into(), format })
        }
        other => Err(SqlError::at(
            table.at,
            format!("table '{}': 'connector' = '{other}' cannot be written (sinks: blackhole, print, filesystem, kafka, upsert-kafka)", table.name),
        )),
    }
}

fn end_of(sql: &str) -> Location {
    let line = sql.lines().count().max(1) as u64;
    let column = sql
        .lines()
        .last()
        .map_or(1, |l| l.chars().count() as u64 + 1);
    Location::new(line, column)
}

/// What one run did: per query its output and rows, and the rows skipped.
#[derive(Debug, Default)]
pub struct RunSummary {
    /// Rows per query output, in query order.
    pub rows_out: Vec<u64>,
}

/// Adds every query of `job` to the dataflow `b` builds, with its sink. With `explain` (the
/// dataflow only to be shown, `EXPLAIN`), no output file is created.
///
/// # Errors
/// A source that cannot be opened, an output that cannot be created.
pub fn build(b: &mut Builder<'_>, job: &Job, explain: bool) -> Result<Vec<Output>, String> {
    for q in &job.queries {
        let all = (0..q.plan.schema().fields.len()).collect();
        q.plan.needed_columns(&all, &mut b.needed);
    }
    let mut outputs = Vec::new();
    for (i, q) in job.queries.iter().enumerate() {
        let stream = b.stream(&q.plan)?;
        let changelog = q.plan.changelog();
        let out = Output::attach(b, i, stream, &q.output, &q.columns, changelog, explain)?;
        outputs.push(out);
    }
    Ok(outputs)
}
