//! Column references for the calculator: `[Name]` and `[Rows | Name]` stand for
//! the values of one observed table column, resolved through a [`ColumnSource`]
//! the caller passes in (the calculator itself reads no files and keeps no state).
//!
//! A reference is a list, so it is allowed only as the sole argument of an
//! aggregate (`mean([Wait])`, `count([Wait])`); anywhere else it is a
//! `column_not_a_list` error while parsing. [`TableColumns`] is an in-memory
//! source with the matching rules every source should follow: the exact name
//! first, then case-insensitive with whitespace collapsed; a name two different
//! tables share needs the qualifier (the table's label column, `[Hotel | Occupancy]`).

use std::fmt;

/// A column reference as written, whitespace collapsed: `[Wait]` or `[Hotel | Occupancy]`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ColumnRef {
    /// The label column (first column) of the table meant, when qualified.
    pub rows: Option<String>,
    /// The column's header.
    pub name: String,
}

impl ColumnRef {
    /// `[name]`.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            rows: None,
            name: name.into(),
        }
    }

    /// `[rows | name]`.
    pub fn qualified(rows: impl Into<String>, name: impl Into<String>) -> Self {
        Self {
            rows: Some(rows.into()),
            name: name.into(),
        }
    }
}

/// `[Name]` or `[Rows | Name]`: the canonical spelling, which parses back to the same reference.
impl fmt::Display for ColumnRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.rows {
            Some(rows) => write!(f, "[{rows} | {}]", self.name),
            None => write!(f, "[{}]", self.name),
        }
    }
}

/// The column a reference resolved to. `labels[i]` is the row of `values[i]`;
/// rows without a value are listed in `missing`, not in `values`.
#[derive(Debug, Clone, PartialEq)]
pub struct ResolvedColumn {
    /// The column's header as the table writes it.
    pub name: String,
    /// The table's label column header (e.g. `Clinic`).
    pub rows_label: String,
    /// Row labels of the rows that have a value, in table order.
    pub labels: Vec<String>,
    /// The values, in table order.
    pub values: Vec<f64>,
    /// Row labels of the rows without a value.
    pub missing: Vec<String>,
    /// The unit the table states for the column's values (`s`, `%`), if any: what a limit written with a
    /// unit (`5 min`) is converted into.
    pub unit: Option<String>,
}

/// Why a reference did not resolve. Codes are stable snake_case.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ColumnError {
    #[error("no observed column is named {reference}; {}", available_text(.available))]
    Unknown {
        reference: String,
        /// References that would resolve, e.g. `[Wait]`, `[Hotel | Occupancy]`.
        available: Vec<String>,
    },
    #[error(
        "{reference} names a column of more than one observed table; write one of {}",
        .qualifiers.join(", ")
    )]
    Ambiguous {
        reference: String,
        /// Qualified references, one per matching table.
        qualifiers: Vec<String>,
    },
    #[error("column {reference} has no values")]
    Empty { reference: String },
}

fn available_text(available: &[String]) -> String {
    if available.is_empty() {
        "no table has been observed".to_owned()
    } else {
        format!("available columns: {}", available.join(", "))
    }
}

impl ColumnError {
    pub fn code(&self) -> &'static str {
        match self {
            ColumnError::Unknown { .. } => "unknown_column",
            ColumnError::Ambiguous { .. } => "ambiguous_column",
            ColumnError::Empty { .. } => "empty_column",
        }
    }
}

/// Resolves column references (the loop's ledger of observed tables implements it).
pub trait ColumnSource {
    fn column(&self, reference: &ColumnRef) -> Result<ResolvedColumn, ColumnError>;
}

/// The source where nothing has been observed: every reference is `unknown_column`.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoColumns;

impl ColumnSource for NoColumns {
    fn column(&self, reference: &ColumnRef) -> Result<ResolvedColumn, ColumnError> {
        Err(ColumnError::Unknown {
            reference: reference.to_string(),
            available: Vec::new(),
        })
    }
}

/// One observed table: a label column and numeric columns (`None` = no value in that row).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ColumnTable {
    /// The label column's header (e.g. `Clinic`).
    pub rows_label: String,
    /// The row labels, in table order.
    pub labels: Vec<String>,
    /// `(header, one cell per row)`; a column shorter than `labels` lacks the remaining rows.
    pub columns: Vec<(String, Vec<Option<f64>>)>,
    /// `(header, unit)` for each column whose values the table states a unit for.
    pub units: Vec<(String, String)>,
}

/// An in-memory [`ColumnSource`] over observed tables, with the standard matching rules.
/// The same table observed twice (same rows and values) is one table, not an ambiguity.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TableColumns {
    pub tables: Vec<ColumnTable>,
}

impl TableColumns {
    /// The tables of tool results shaped like knowledge results (read with [`crate::knowledge::tables_in`]:
    /// label column, column names, row labels and values): what column references resolve against.
    pub fn from_results<'a>(
        results: impl IntoIterator<Item = &'a serde_json::Value>,
    ) -> TableColumns {
        let tables = results
            .into_iter()
            .flat_map(crate::knowledge::tables_in)
            .map(|table| ColumnTable {
                labels: table.rows.iter().map(|r| r.label.clone()).collect(),
                columns: table
                    .columns
                    .iter()
                    .map(|c| {
                        let cells = table.rows.iter().map(|r| r.value(&c.name)).collect();
                        (c.name.clone(), cells)
                    })
                    .collect(),
                units: table
                    .columns
                    .iter()
                    .filter_map(|c| Some((c.name.clone(), c.unit.clone()?)))
                    .collect(),
                rows_label: table.label_column,
            })
            .collect();
        TableColumns { tables }
    }
}

/// Lowercased, whitespace trimmed and collapsed to single spaces.
pub fn normalize_name(text: &str) -> String {
    text.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

impl TableColumns {
    fn resolved(table: &ColumnTable, name: &str, cells: &[Option<f64>]) -> ResolvedColumn {
        let mut column = ResolvedColumn {
            name: name.to_owned(),
            rows_label: table.rows_label.clone(),
            labels: Vec::new(),
            values: Vec::new(),
            missing: Vec::new(),
            unit: table
                .units
                .iter()
                .find(|(header, _)| header == name)
                .map(|(_, unit)| unit.clone()),
        };
        for (i, label) in table.labels.iter().enumerate() {
            match cells.get(i).copied().flatten() {
                Some(value) => {
                    column.labels.push(label.clone());
                    column.values.push(value);
                }
                None => column.missing.push(label.clone()),
            }
        }
        column
    }

    /// Every `(table, header, cells)`, in table order.
    fn all(&self) -> impl Iterator<Item = (&ColumnTable, &str, &[Option<f64>])> {
        self.tables.iter().flat_map(|table| {
            table
                .columns
                .iter()
                .map(move |(name, cells)| (table, name.as_str(), cells.as_slice()))
        })
    }

    /// The reference that resolves each column: `[Name]`, or `[Rows | Name]` when the name is shared.
    fn available(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for (table, name, _) in self.all() {
            let shared = self
                .all()
                .filter(|(_, other, _)| normalize_name(other) == normalize_name(name))
                .map(|(t, n, c)| Self::resolved(t, n, c))
                .collect::<Vec<_>>();
            let distinct = shared.iter().any(|c| *c != shared[0]);
            let reference = if distinct {
                ColumnRef::qualified(&table.rows_label, name)
            } else {
                ColumnRef::new(name)
            }
            .to_string();
            if !out.contains(&reference) {
                out.push(reference);
            }
        }
        out
    }
}

impl ColumnSource for TableColumns {
    fn column(&self, reference: &ColumnRef) -> Result<ResolvedColumn, ColumnError> {
        let exact = |table: &ColumnTable, name: &str| {
            name == reference.name
                && reference
                    .rows
                    .as_ref()
                    .is_none_or(|rows| *rows == table.rows_label)
        };
        let loose = |table: &ColumnTable, name: &str| {
            normalize_name(name) == normalize_name(&reference.name)
                && reference
                    .rows
                    .as_ref()
                    .is_none_or(|rows| normalize_name(rows) == normalize_name(&table.rows_label))
        };
        for matches in [
            &exact as &dyn Fn(&ColumnTable, &str) -> bool,
            &loose as &dyn Fn(&ColumnTable, &str) -> bool,
        ] {
            let mut found: Vec<ResolvedColumn> = Vec::new();
            for (table, name, cells) in self.all() {
                if matches(table, name) {
                    let column = Self::resolved(table, name, cells);
                    if !found.contains(&column) {
                        found.push(column);
                    }
                }
            }
            match found.len() {
                0 => continue,
                1 => return Ok(found.remove(0)),
                _ => {
                    let mut qualifiers: Vec<String> = Vec::new();
                    for column in &found {
                        let q = ColumnRef::qualified(&column.rows_label, &column.name).to_string();
                        if !qualifiers.contains(&q) {
                            qualifiers.push(q);
                        }
                    }
                    return Err(ColumnError::Ambiguous {
                        reference: reference.to_string(),
                        qualifiers,
                    });
                }
            }
        }
        Err(ColumnError::Unknown {
            reference: reference.to_string(),
            available: self.available(),
        })
    }
}
