//! From a [`Plan`] to the runtime's dataflow: each plan operator becomes one runtime operator
//! (sources, `filter`, `map`, `flat_map`, `window`, `session_window`), not a second copy of
//! them. Rows are `Vec<Value>` with the event time as the element's time.

pub mod changelog_ops;
pub mod join;
pub mod window;

use crate::connectors::filesystem::{self, FileRows};
use crate::connectors::nexmark::NexmarkTable;
use crate::expr::Scalar;
use crate::plan::{Plan, WindowKind};
use crate::types::{Row, Value};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use xorflow_runtime::connectors::pace::Pace;
use xorflow_runtime::connectors::replay::Replay;
use xorflow_runtime::{Dataflow, Stream, Time};

/// What the runtime's sources and late outputs report back: rows skipped per table.
#[derive(Debug, Default)]
pub struct Counters {
    /// Per table: its malformed rows (line, why), from every file read.
    pub malformed: BTreeMap<String, Vec<(u64, String)>>,
    /// Per table: rows read.
    pub rows_read: BTreeMap<String, usize>,
    /// Per window operator: rows later than the watermark allowed (too late for every
    /// window), with the event time of the first one.
    pub late: Arc<Mutex<BTreeMap<String, (u64, i64)>>>,
    /// Per JSON file table read while the job runs: its lines read and malformed lines are
    /// counted under its source vertex ([`crate::connectors::file_source`]).
    pub files: Vec<crate::connectors::file_source::FileTable>,
    /// Per Kafka table: what its source instances in this process counted (records read,
    /// malformed, late, the first ones by partition and offset).
    pub kafka: Vec<(String, crate::connectors::kafka::Counters)>,
    /// The replay clock every replayed file table of the job shares (`'replay.*'`), with the
    /// first such table's name and options.
    pub replay: Option<(String, filesystem::ReplayOptions, Pace)>,
}

/// A filter's stream and the expressions of the projection over it ([`Builder::shared_calls`]).
type Calc = (Stream<Row>, Vec<Scalar>);

/// The state of building one job's dataflow.
pub struct Builder<'a> {
    /// The dataflow.
    pub df: &'a Dataflow,
    /// Source instances per table (the job's parallelism).
    pub parallelism: usize,
    /// Files read, by table name: each read once, however often the table is scanned.
    files: BTreeMap<String, Arc<Vec<(Time, Row)>>>,
    /// Each table's source stream: a table scanned twice (Nexmark q5 and q7 read `bid` in two
    /// subqueries) is read once and fanned out, as Flink reuses a common source.
    scans: BTreeMap<String, Stream<Row>>,
    /// Every sub-plan's stream, by the plan's full text (`{:?}`): a sub-plan that occurs twice
    /// (Nexmark q5 aggregates `bid` into the same HOP windows for both sides of its join) is
    /// computed once and fanned out, as Flink's planner reuses sub-plans
    /// (`table.optimizer.reuse-sub-plan-enabled`, on by default). Equal text means equal
    /// operators on equal inputs, so equal rows.
    reused: BTreeMap<String, Stream<Row>>,
    /// Skipped and late rows.
    pub counters: Counters,
    /// Per table, the columns the job reads ([`Plan::needed_columns`]); the others are left
    /// NULL at the source.
    pub needed: BTreeMap<String, std::collections::BTreeSet<usize>>,
    names: BTreeMap<String, usize>,
}

impl<'a> Builder<'a> {
    /// A builder adding to `df`, with `parallelism` source instances per table.
    pub fn new(df: &'a Dataflow, parallelism: usize) -> Self {
        Builder {
            df,
            parallelism: parallelism.max(1),
            files: BTreeMap::new(),
            scans: BTreeMap::new(),
            reused: BTreeMap::new(),
            counters: Counters::default(),
            needed: BTreeMap::new(),
            names: BTreeMap::new(),
        }
    }

    /// A vertex name unique in the job (`filter`, `filter#2`, ...), as the status page shows it.
    pub fn name(&mut self, base: &str) -> String {
        let n = self.names.entry(base.to_string()).or_insert(0);
        *n += 1;
        match *n {
            1 => base.to_string(),
            k => format!("{base}#{k}"),
        }
    }

    /// The stream of `plan`'s rows.
    ///
    /// # Errors
    /// A source that cannot be opened (a missing file, bad connector options), naming it.
    pub fn stream(&mut self, plan: &Plan) -> Result<Stream<Row>, String> {
        let text = format!("{plan:?}");
        if let Some(s) = self.reused.get(&text) {
            return Ok(s.clone());
        }
        let s = self.build_stream(plan)?;
        self.reused.insert(text, s.clone());
        Ok(s)
    }

    /// [`Builder::stream`] of a plan not built yet.
    fn build_stream(&mut self, plan: &Plan) -> Result<Stream<Row>, String> {
        Ok(match plan {
            Plan::Scan { table } => {
                let key = table.name.to_ascii_lowercase();
                match self.scans.get(&key) {
                    Some(s) => s.clone(),
                    None => {
                        let s = self.scan(table)?;
                        self.scans.insert(key, s.clone());
                        s
                    }
                }
            }
            Plan::Filter { input, predicate } => {
                let s = self.stream(input)?;
                let p = predicate.clone();
                let name = self.name("filter");
                s.filter(&name, move |r: &Row| p.holds(r))
            }
            Plan::Project { input, exprs, .. } => {
                let (s, exprs) = match self.shared_calls(input, exprs)? {
                    Some(calc) => calc,
                    None => (self.stream(input)?, exprs.clone()),
                };
                let name = self.name("project");
                // A column that only one output reads, as itself, is moved out of the input row
                // rather than cloned (a string's reference count, a row's worth of values): no
                // other output can read it, so the order of evaluation does not matter.
                let mut reads = Vec::new();
                for e in exprs.iter() {
                    e.columns(&mut reads);
                }
                let moved: Vec<Option<usize>> = (exprs.iter())
                    .map(|e| {
                        e.as_column()
                            .filter(|c| reads.iter().filter(|r| *r == c).count() == 1)
                    })
                    .collect();
                let project = move |r: &mut Row| -> Row {
                    (exprs.iter().zip(&moved))
                        .map(|(e, m)| match m {
                            Some(c) => std::mem::replace(&mut r[*c], Value::Null),
                            None => e.eval(r),
                        })
                        .collect()
                };
                // A changelog row keeps its kind, after its columns (crate::changelog).
                match input.changelog() {
                    false => s.map(&name, move |mut r: Row| project(&mut r)),
                    true => s.map(&name, move |mut r: Row| {
                        let kind = r.last().cloned().unwrap_or(Value::Null);
                        let mut out = project(&mut r);
                        out.push(kind);
                        out
                    }),
                }
            }
            Plan::WindowAssign {
                input,
                window,
                time_column,
                ..
            } => {
                let s = self.stream(input)?;
                let (w, c) = (*window, *time_column);
                if matches!(w, WindowKind::Session { .. }) {
                    return Err("SESSION windows can only be aggregated (GROUP BY window_start, window_end)".into());
                }
                let name = self.name("window_assign");
                s.flat_map(&name, move |r: Row| {
                    let t = time_ms(&r[c]);
                    window::windows_of(w, t)
                        .into_iter()
                        .map(|(start, end)| {
                            let mut out = r.clone();
                            out.push(Value::Timestamp(start));
                            out.push(Value::Timestamp(end));
                            out.push(Value::Timestamp(end - 1));
                            out
                        })
                        .collect::<Vec<_>>()
                })
            }
            Plan::WindowAggregate { .. } => window::aggregate(self, plan)?,
            Plan::Join { .. } => join::join(self, plan)?,
            Plan::GroupAggregate { .. } => changelog_ops::group_aggregate(self, plan)?,
            Plan::TopN { .. } => changelog_ops::top_n(self, plan)?,
        })
    }

    /// A projection over a filter (Flink's Calc) whose condition calls a function that occurs
    /// again in the condition or the projection (Nexmark q21's `REGEXP_EXTRACT(url, ...)` and
    /// `lower(channel)`): each such call is evaluated once per row, into a column appended to
    /// the row before the filter, and the condition and the projection read that column, as
    /// Flink's code generation reuses common expressions. The filter's stream and the
    /// projection's rewritten expressions; `None` when nothing repeats. Calls are evaluated
    /// where the condition's AND, OR or CASE would have skipped them: functions return NULL
    /// on bad input and never fail, so only the cost can differ.
    ///
    /// # Errors
    /// What the filter's input refuses.
    fn shared_calls(&mut self, input: &Plan, exprs: &[Scalar]) -> Result<Option<Calc>, String> {
        let Plan::Filter {
            input: inner,
            predicate,
        } = input
        else {
            return Ok(None);
        };
        if input.changelog() {
            return Ok(None);
        }
        let (mut in_filter, mut all) = (Vec::new(), Vec::new());
        predicate.calls(&mut in_filter);
        predicate.calls(&mut all);
        exprs.iter().for_each(|e| e.calls(&mut all));
        let text = |e: &Scalar| format!("{e:?}");
        let all: Vec<String> = all.iter().map(|e| text(e)).collect();
        let mut shared: Vec<(String, Scalar)> = Vec::new();
        for call in in_filter {
            let t = text(call);
            if all.iter().filter(|a| **a == t).count() > 1 && !shared.iter().any(|(s, _)| *s == t) {
                shared.push((t, call.clone()));
            }
        }
        if shared.is_empty() {
            return Ok(None);
        }
        let width = inner.schema().fields.len();
        let column = |e: &Scalar| {
            let t = matches!(e, Scalar::Call(..)).then(|| text(e))?;
            let j = shared.iter().position(|(s, _)| *s == t)?;
            Some(Scalar::Column(width + j))
        };
        let predicate = predicate.rewrite(&column);
        let exprs = exprs.iter().map(|e| e.rewrite(&column)).collect();
        let calls: Arc<Vec<Scalar>> = Arc::new(shared.into_iter().map(|(_, e)| e).collect());
        let s = self.stream(inner)?;
        let s = s.map(&self.name("shared_calls"), move |mut r: Row| {
            for e in calls.iter() {
                let v = e.eval(&r);
                r.push(v);
            }
            r
        });
        let s = s.filter(&self.name("filter"), move |r: &Row| predicate.holds(r));
        Ok(Some((s, exprs)))
    }

    /// Which of `table`'s columns the job reads (all, when unknown).
    fn keep(&self, table: &crate::catalog::Table) -> Vec<bool> {
        let n = table.schema.fields.len();
        match self.needed.get(&table.name.to_ascii_lowercase()) {
            Some(set) => (0..n).map(|c| set.contains(&c)).collect(),
            None => vec![true; n],
        }
    }

    /// The job's replay clock for table `table` with options `o`: one for all tables, so that
    /// they replay in step.
    fn pace(&mut self, table: &str, o: filesystem::ReplayOptions) -> Result<Pace, String> {
        match &self.counters.replay {
            None => {
                let pace = Pace::new(o.0, o.1, o.2);
                self.counters.replay = Some((table.to_string(), o, pace.clone()));
                Ok(pace)
            }
            Some((_, first, pace)) if *first == o => Ok(pace.clone()),
            Some((other, ..)) => Err(format!(
                "table '{table}': its 'replay.*' options differ from table '{other}''s; the \
                 tables of a job replay on one clock"
            )),
        }
    }

    fn scan(&mut self, table: &crate::catalog::Table) -> Result<Stream<Row>, String> {
        let n = self.parallelism;
        let name = self.name(&format!("source: {}", table.name));
        match table.connector() {
            "filesystem" if filesystem::streams(table)? => {
                let bound = match table.rowtime {
                    Some(rt) => rt.delay_ms.max(0) as Time,
                    None => Time::MAX,
                };
                let mut t = filesystem::file_table(table, &name, self.keep(table), bound, n)?;
                if let Some(o) = filesystem::replay_of(table)? {
                    t = t.paced(self.pace(&table.name, o)?);
                }
                self.counters.files.push(t.clone());
                Ok(self.df.source(&name, n, move |i| t.source(i, n)))
            }
            "filesystem" => {
                // Refuses replay options, which a table read whole cannot honour.
                filesystem::replay_of(table)?;
                let key = table.name.to_ascii_lowercase();
                let records = match self.files.get(&key) {
                    Some(r) => r.clone(),
                    None => {
                        let keep = self.keep(table);
                        let FileRows { rows, malformed } = filesystem::read(table, &keep, n)?;
                        self.counters.rows_read.insert(table.name.clone(), rows.len() + malformed.len());
                        self.counters.malformed.insert(table.name.clone(), malformed);
                        let r: Vec<(Time, Row)> = (rows.into_iter())
                            .map(|(t, r)| (t.max(0) as Time, r))
                            .collect();
                        let r = Arc::new(r);
                        self.files.insert(key, r.clone());
                        r
                    }
                };
                let bound = match table.rowtime {
                    Some(rt) => rt.delay_ms.max(0) as Time,
                    // Without event time every row has time 0 and the watermark stays there.
                    None => Time::MAX,
                };
                let rate = filesystem::rate_of(table)? / n as f64;
                Ok(self.df.source(&name, n, move |i| {
                    Replay::new(records.clone(), i, n, bound).paced(rate)
                }))
            }
            "kafka" => {
                use crate::connectors::kafka::{source_config, JsonRows};
                let cfg = Arc::new(source_config(table, n)?);
                let counters = crate::connectors::kafka::Counters::default();
                self.counters.kafka.push((table.name.clone(), counters.clone()));
                let decoder = JsonRows::new(table);
                Ok(self.df.source(&name, n, move |i| {
                    xorflow_kafka::source::KafkaSource::new(cfg.clone(), i, decoder.clone(), counters.clone())
                }))
            }
            "nexmark" => {
                let t = NexmarkTable::of(table)?.keeping(self.keep(table));
                Ok(self.df.source(&name, n, move |i| t.source(i, n)))
            }
            "" => Err(format!("table '{}' has no 'connector' option", table.name)),
            "upsert-kafka" => Err(format!(
                "table '{}': an upsert-kafka table is written only (reading a changelog from \
                 Kafka is not supported; a 'kafka' table reads the topic's records as rows)",
                table.name,
            )),
            other => Err(format!(
                "table '{}': 'connector' = '{other}' cannot be read (sources: filesystem, kafka, nexmark)",
                table.name,
            )),
        }
    }
}

/// A TIMESTAMP value's ms (0 for NULL).
pub fn time_ms(v: &Value) -> i64 {
    match v {
        Value::Timestamp(t) => *t,
        _ => 0,
    }
}
