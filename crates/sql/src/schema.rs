//! The columns of a relation as a query sees them: names, the table or alias they come from,
//! and types.

use crate::error::{Result, SqlError};
use crate::types::SqlType;
use sqlparser::ast::Ident;

/// One column.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Field {
    /// The table name or alias that qualifies it (`B.price`), if any.
    pub qualifier: Option<String>,
    /// Its name, as written where it was defined.
    pub name: String,
    /// Its type.
    pub ty: SqlType,
}

impl Field {
    /// An unqualified column.
    pub fn new(name: &str, ty: SqlType) -> Field {
        Field {
            qualifier: None,
            name: name.to_string(),
            ty,
        }
    }
}

/// The columns of a relation, in row order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Schema {
    /// The columns.
    pub fields: Vec<Field>,
}

impl Schema {
    /// A schema of `fields`.
    pub fn new(fields: Vec<Field>) -> Schema {
        Schema { fields }
    }

    /// The same columns, all qualified by `alias`.
    pub fn qualified(&self, alias: &str) -> Schema {
        let fields = self
            .fields
            .iter()
            .map(|f| Field {
                qualifier: Some(alias.to_string()),
                ..f.clone()
            })
            .collect();
        Schema { fields }
    }

    /// The columns of `self` followed by those of `other` (a join's row).
    pub fn concat(&self, other: &Schema) -> Schema {
        let mut fields = self.fields.clone();
        fields.extend(other.fields.iter().cloned());
        Schema { fields }
    }

    /// The index of the column `name` (qualified by `qualifier` if given). Names match exactly
    /// first, then ignoring ASCII case (Flink's identifiers are case-sensitive; a name that
    /// differs only in case is taken when it is the only candidate).
    ///
    /// # Errors
    /// No such column, naming those there are, or an ambiguous name.
    pub fn resolve(&self, qualifier: Option<&Ident>, name: &Ident) -> Result<usize> {
        let q_ok = |f: &Field| match qualifier {
            None => true,
            Some(q) => f
                .qualifier
                .as_deref()
                .is_some_and(|fq| fq.eq_ignore_ascii_case(&q.value)),
        };
        for exact in [true, false] {
            let hits: Vec<usize> = (self.fields.iter().enumerate())
                .filter(|(_, f)| q_ok(f))
                .filter(|(_, f)| match exact {
                    true => f.name == name.value,
                    false => f.name.eq_ignore_ascii_case(&name.value),
                })
                .map(|(i, _)| i)
                .collect();
            match hits.len() {
                0 => continue,
                1 => return Ok(hits[0]),
                _ => {
                    return Err(SqlError::in_span(
                        name.span,
                        format!(
                            "column '{}' is ambiguous: qualify it with its table",
                            name.value
                        ),
                    ))
                }
            }
        }
        let shown = match qualifier {
            Some(q) => format!("{}.{}", q.value, name.value),
            None => name.value.clone(),
        };
        let have: Vec<String> = self.fields.iter().map(|f| f.display()).collect();
        Err(SqlError::in_span(
            qualifier.map_or(name.span, |q| q.span),
            format!(
                "unknown column '{shown}' (the columns here: {})",
                have.join(", ")
            ),
        ))
    }

    /// The column names.
    pub fn names(&self) -> Vec<String> {
        self.fields.iter().map(|f| f.name.clone()).collect()
    }
}

impl Field {
    /// `qualifier.name`, or the name alone.
    pub fn display(&self) -> String {
        match &self.qualifier {
            Some(q) => format!("{q}.{}", self.name),
            None => self.name.clone(),
        }
    }
}
