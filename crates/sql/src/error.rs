//! What a SQL job's statements did wrong, and where.

use sqlparser::ast::Spanned;
use sqlparser::parser::ParserError;
use sqlparser::tokenizer::{Location, Span};
use std::fmt;

/// An error in a job's SQL text: a syntax error, an unknown table, column or function, a type
/// mismatch or an unsupported construct. `line` and `column` count from 1 (0: unknown).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SqlError {
    /// The line of the SQL text.
    pub line: u64,
    /// The column in that line.
    pub column: u64,
    /// What is wrong, and what is supported instead where that helps.
    pub message: String,
}

impl fmt::Display for SqlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            0 => write!(f, "{}", self.message),
            _ => write!(
                f,
                "line {}, column {}: {}",
                self.line, self.column, self.message
            ),
        }
    }
}

impl std::error::Error for SqlError {}

impl SqlError {
    /// An error at `at`.
    pub fn at(at: Location, message: impl Into<String>) -> SqlError {
        SqlError {
            line: at.line,
            column: at.column,
            message: message.into(),
        }
    }

    /// An error about the AST node `node` (at its first token).
    pub fn of(node: &impl Spanned, message: impl Into<String>) -> SqlError {
        SqlError::at(node.span().start, message)
    }

    /// An error about the text in `span`.
    pub fn in_span(span: Span, message: impl Into<String>) -> SqlError {
        SqlError::at(span.start, message)
    }

    /// sqlparser's error: its text ends in " at Line: L, Column: C" where it knows the place;
    /// without one (the text ended early) the place is `end`, the end of the text.
    pub fn parse(e: ParserError, end: Location) -> SqlError {
        let text = match e {
            ParserError::TokenizerError(s) | ParserError::ParserError(s) => s,
            ParserError::RecursionLimitExceeded => "the statement nests too deeply".into(),
        };
        match text.rfind(" at Line: ") {
            Some(i) => {
                let place = &text[i + " at Line: ".len()..];
                let mut nums = place
                    .split(|c: char| !c.is_ascii_digit())
                    .filter(|s| !s.is_empty())
                    .map(|s| s.parse::<u64>().unwrap_or(0));
                let (line, column) = (nums.next().unwrap_or(0), nums.next().unwrap_or(0));
                SqlError {
                    line,
                    column,
                    message: format!("syntax error: {}", &text[..i]),
                }
            }
            None => SqlError::at(end, format!("syntax error: {text}")),
        }
    }
}

/// What the planner's functions return.
pub type Result<T> = std::result::Result<T, SqlError>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_parser_error_keeps_its_place() {
        let e = ParserError::ParserError("Expected: ), found: x at Line: 3, Column: 14".into());
        let e = SqlError::parse(e, Location::new(9, 9));
        assert_eq!((e.line, e.column), (3, 14));
        assert_eq!(
            e.to_string(),
            "line 3, column 14: syntax error: Expected: ), found: x"
        );
        let e = ParserError::ParserError("Expected: an expression, found: EOF".into());
        assert_eq!(SqlError::parse(e, Location::new(2, 7)).line, 2);
    }
}
