//! Flink SQL's dialect on sqlparser: what its generic dialect parses, plus, through the
//! `Dialect` hooks (never by rewriting the text):
//!
//! - `CREATE TABLE t (..., WATERMARK FOR col AS expr) WITH (...)`: parsed by
//!   [`FlinkDialect::parse_statement`]; sqlparser's `CreateTable` has no place for a watermark,
//!   so the dialect records it ([`FlinkDialect::take_watermarks`]) by table name.
//! - `TABLE name` as an argument of a window table function
//!   (`TABLE(TUMBLE(TABLE bid, DESCRIPTOR(dateTime), INTERVAL '10' SECOND))`): parsed by
//!   [`FlinkDialect::parse_prefix`] into `Expr::Prefixed { prefix: TABLE, value: name }`.
//! - `PRIMARY KEY (a, b) NOT ENFORCED` among a `CREATE TABLE`'s columns (Flink's only form: it
//!   does not check keys), kept as the statement's primary-key constraint.
//! - Back-quoted identifiers (`` `dateTime` ``), as Flink writes them.

use sqlparser::ast::helpers::stmt_create_table::CreateTableBuilder;
use sqlparser::ast::{
    ColumnDef, ConstraintCharacteristics, CreateTableOptions, Expr, Ident, IndexColumn, ObjectName,
    PrimaryKeyConstraint, Statement, TableConstraint,
};
use sqlparser::dialect::{Dialect, GenericDialect};
use sqlparser::keywords::Keyword;
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::{Location, Token};
use std::cell::RefCell;

/// A `WATERMARK FOR column AS expression` clause of a `CREATE TABLE`.
#[derive(Clone, Debug)]
pub struct WatermarkClause {
    /// The table it belongs to.
    pub table: ObjectName,
    /// The rowtime column.
    pub column: Ident,
    /// The watermark expression (Flink: `column - INTERVAL 'n' unit`, a bounded delay).
    pub expr: Expr,
    /// Where the clause starts (line and column, from 1).
    pub at: Location,
}

/// Flink SQL's dialect: the generic dialect with the hooks listed in the module docs.
#[derive(Debug, Default)]
pub struct FlinkDialect {
    generic: GenericDialect,
    watermarks: RefCell<Vec<WatermarkClause>>,
}

impl FlinkDialect {
    /// The watermark clauses parsed so far, in statement order (and forgets them).
    pub fn take_watermarks(&self) -> Vec<WatermarkClause> {
        std::mem::take(&mut self.watermarks.borrow_mut())
    }

    /// `CREATE TABLE name (columns and a watermark) [WITH (options)]`, after `CREATE TABLE`.
    fn parse_create_table(&self, p: &mut Parser) -> Result<Statement, ParserError> {
        let if_not_exists = p.parse_keywords(&[Keyword::IF, Keyword::NOT, Keyword::EXISTS]);
        let name = p.parse_object_name(false)?;
        p.expect_token(&Token::LParen)?;
        let mut columns: Vec<ColumnDef> = Vec::new();
        let mut constraints = Vec::new();
        loop {
            let t = p.peek_token();
            let is_watermark = matches!(&t.token, Token::Word(w)
                if w.quote_style.is_none() && w.value.eq_ignore_ascii_case("WATERMARK"))
                && matches!(&p.peek_nth_token(1).token, Token::Word(w) if w.keyword == Keyword::FOR);
            if is_watermark {
                p.next_token();
                p.next_token();
                let column = p.parse_identifier()?;
                p.expect_keyword_is(Keyword::AS)?;
                let expr = p.parse_expr()?;
                self.watermarks.borrow_mut().push(WatermarkClause {
                    table: name.clone(),
                    column,
                    expr,
                    at: t.span.start,
                });
            } else if p.parse_keywords(&[Keyword::PRIMARY, Keyword::KEY]) {
                let keys = p.parse_parenthesized_column_list(
                    sqlparser::parser::IsOptional::Mandatory,
                    false,
                )?;
                if !p.parse_keywords(&[Keyword::NOT, Keyword::ENFORCED]) {
                    return p.expected(
                        "NOT ENFORCED after PRIMARY KEY (...): Flink SQL does not check keys",
                        p.peek_token(),
                    );
                }
                constraints.push(TableConstraint::PrimaryKey(PrimaryKeyConstraint {
                    name: None,
                    index_name: None,
                    index_type: None,
                    columns: keys.into_iter().map(IndexColumn::from).collect(),
                    include: vec![],
                    index_options: vec![],
                    characteristics: Some(ConstraintCharacteristics {
                        deferrable: None,
                        initially: None,
                        enforced: Some(false),
                    }),
                }));
            } else {
                columns.push(p.parse_column_def()?);
            }
            if p.consume_token(&Token::RParen) {
                break;
            }
            p.expect_token(&Token::Comma)?;
        }
        let options = p.parse_options(Keyword::WITH)?;
        let options = match options.is_empty() {
            true => CreateTableOptions::None,
            false => CreateTableOptions::With(options),
        };
        Ok(Statement::CreateTable(
            CreateTableBuilder::new(name)
                .if_not_exists(if_not_exists)
                .columns(columns)
                .constraints(constraints)
                .table_options(options)
                .build(),
        ))
    }
}

impl Dialect for FlinkDialect {
    fn is_delimited_identifier_start(&self, ch: char) -> bool {
        ch == '`' || ch == '"'
    }

    fn is_identifier_start(&self, ch: char) -> bool {
        self.generic.is_identifier_start(ch)
    }

    fn is_identifier_part(&self, ch: char) -> bool {
        self.generic.is_identifier_part(ch)
    }

    fn supports_filter_during_aggregation(&self) -> bool {
        true
    }

    fn supports_named_fn_args_with_rarrow_operator(&self) -> bool {
        true
    }

    /// `TABLE name` inside a window table function's arguments.
    fn parse_prefix(&self, p: &mut Parser) -> Option<Result<Expr, ParserError>> {
        let is_table_arg =
            p.peek_keyword(Keyword::TABLE) && matches!(&p.peek_nth_token(1).token, Token::Word(_));
        if !is_table_arg {
            return None;
        }
        let table = p.next_token();
        let prefix = Ident::with_span(table.span, "TABLE");
        let parse = |p: &mut Parser| -> Result<Expr, ParserError> {
            let name = p.parse_object_name(false)?;
            let parts = name
                .0
                .into_iter()
                .filter_map(|part| part.as_ident().cloned());
            let table = Expr::CompoundIdentifier(parts.collect());
            if !p.parse_keywords(&[Keyword::PARTITION, Keyword::BY]) {
                return Ok(table);
            }
            // `TABLE t PARTITION BY k1, k2` (SESSION): the name, then the keys, as a tuple.
            let mut items = vec![table];
            loop {
                items.push(p.parse_expr()?);
                if !p.consume_token(&Token::Comma) {
                    break;
                }
                // The next argument (DESCRIPTOR(...)) is not a key: give the comma back.
                let next = p.peek_token();
                if matches!(&next.token, Token::Word(w) if w.value.eq_ignore_ascii_case("DESCRIPTOR"))
                {
                    p.prev_token();
                    break;
                }
            }
            Ok(Expr::Tuple(items))
        };
        Some(parse(p).map(|value| Expr::Prefixed {
            prefix,
            value: Box::new(value),
        }))
    }

    fn parse_statement(&self, p: &mut Parser) -> Option<Result<Statement, ParserError>> {
        let is_kw = |t: &Token, k: Keyword| matches!(t, Token::Word(w) if w.keyword == k);
        let create_table = is_kw(&p.peek_token().token, Keyword::CREATE)
            && is_kw(&p.peek_nth_token(1).token, Keyword::TABLE);
        if !create_table {
            return None;
        }
        p.next_token();
        p.next_token();
        Some(self.parse_create_table(p))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(sql: &str) -> (Vec<Statement>, Vec<WatermarkClause>) {
        let d = FlinkDialect::default();
        let s = Parser::parse_sql(&d, sql).unwrap();
        (s, d.take_watermarks())
    }

    #[test]
    fn a_create_table_keeps_its_watermark_and_options() {
        let (s, w) = parse(
            "CREATE TABLE bid (auction BIGINT, `dateTime` TIMESTAMP(3),\n  \
             WATERMARK FOR `dateTime` AS `dateTime` - INTERVAL '4' SECOND\n) \
             WITH ('connector' = 'filesystem', 'path' = 'b.json')",
        );
        let Statement::CreateTable(t) = &s[0] else {
            panic!()
        };
        assert_eq!(t.columns.len(), 2);
        assert_eq!(t.columns[1].name.value, "dateTime");
        assert!(matches!(&t.table_options, CreateTableOptions::With(o) if o.len() == 2));
        assert_eq!(w.len(), 1);
        assert_eq!(w[0].column.value, "dateTime");
        assert_eq!(w[0].expr.to_string(), "`dateTime` - INTERVAL '4' SECOND");
        assert_eq!((w[0].at.line, w[0].at.column), (2, 3));
    }

    #[test]
    fn window_table_functions_take_table_arguments() {
        let (s, _) = parse(
            "SELECT auction, count(*) FROM TABLE(HOP(TABLE bid, DESCRIPTOR(dateTime), \
             INTERVAL '2' SECOND, INTERVAL '10' SECOND)) GROUP BY auction, window_start, window_end",
        );
        let text = s[0].to_string();
        assert!(
            text.contains("HOP(TABLE bid, DESCRIPTOR(dateTime)"),
            "{text}"
        );
    }

    #[test]
    fn errors_name_line_and_column() {
        let d = FlinkDialect::default();
        let e = Parser::parse_sql(&d, "SELECT a\nFROM t WHERE )").unwrap_err();
        assert!(e.to_string().contains("Line: 2"), "{e}");
        let e = Parser::parse_sql(&d, "CREATE TABLE t (a BIGINT,\n WATERMARK FOR a) WITH ()");
        assert!(e.is_err());
    }
}
