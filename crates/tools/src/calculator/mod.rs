//! The calculator tool: a whitelisting tokenizer and recursive-descent parser for
//! arithmetic, aggregates over argument lists and boolean rule checks, evaluated
//! over f64 with every intermediate bounded. It is not a general expression
//! language: there are no variables, strings, attributes or user functions, so
//! nothing here can reach the host.
//!
//! The grammar, lowest precedence first:
//!
//! | level      | syntax                                   | operands → result   |
//! |------------|------------------------------------------|---------------------|
//! | or         | `a or b` (left-associative)              | booleans → boolean  |
//! | and        | `a and b` (left-associative)             | booleans → boolean  |
//! | not        | `not a`                                  | boolean → boolean   |
//! | comparison | `a >= b`, `>`, `<=`, `<`, `==`, `!=` (at most one: `1 < 2 < 3` is refused) | numbers (`==`/`!=`: one type) → boolean |
//! | sum        | `a + b`, `a - b` (left-associative)      | numbers → number    |
//! | product    | `a * b`, `a / b` (left-associative)      | numbers → number    |
//! | negation   | `-a`                                     | number → number     |
//! | power      | `a ** b` (right-associative, \|b\| ≤ [`MAX_EXPONENT`]) | numbers → number |
//! | value      | decimal number, `true`, `false`, `( … )`, `sum` `mean` `min` `max` `count` `(a, …)` | |
//!
//! An aggregate's only argument may instead be a column reference, `[Name]` or
//! `[Rows | Name]` (`mean([Wait])`, `count([Hotel | Occupancy])`): the values of
//! one observed table column, resolved through the [`ColumnSource`] passed to
//! [`eval_with`] / [`run_with`] (see [`columns`]); a reference anywhere else is a
//! `column_not_a_list` error, and a column has no [`MAX_ARGUMENTS`] limit.
//! `count([Name])` counts the rows that have a value; `count([Name] > 7)` (any
//! comparison operator, a number expression after it) counts those whose value
//! passes the comparison — what a count tolerance ("no more than one depot above
//! 7") needs. A filter anywhere but in `count` is `filter_outside_count`.
//!
//! A limit may be written with its unit, as the knowledge states it (`mean([Wait])
//! <= 5 min`, `max([Temperature]) <= 8 °C`, `count([Wait] > 8 minutes) <= 1`,
//! glued or spaced, any name or symbol `forge_language::units` knows): it is
//! converted into the unit the table states for the column before the comparison
//! (`forge_language::units::align_limit`, so a column without a unit takes the
//! limit's, as a bare limit is read). It stands only as one side of a comparison
//! whose other side is a column's `sum`, `mean`, `min` or `max`, or as a row
//! filter's limit (`unit_without_column` elsewhere: `5 min * 60` has no column to
//! take a unit from); units that measure different things are
//! `unit_not_comparable`, never compared raw.
//!
//! The aggregates take 1 to [`MAX_ARGUMENTS`] number arguments (`count()` is an
//! arity error like the others: a count of nothing is never what a task asks
//! for). `mean` sums left to right and divides by the count, so it equals the
//! spelled-out `(a + b + …) / n` exactly. Types are checked while parsing, so an
//! expression is refused before any of it is evaluated; `and`/`or` evaluate both
//! sides (no short circuit: an error anywhere is reported). Number comparisons
//! ignore float noise (see [`COMPARISON_TOLERANCE`]).
//!
//! [`Expr`]'s `Display` is the canonical, fully parenthesised rendering: two
//! spellings of one computation render alike, and the rendering parses back to
//! the same tree whenever it stays within [`MAX_EXPRESSION_CHARS`] and
//! [`MAX_DEPTH`] (it is longer, and `(-a)` nests one level deeper than `-a`).
//!
//! Anything else is a typed [`CalcError`] with a stable code and the character
//! position.

pub mod columns;
mod eval;
mod expr;
mod lex;
mod parse;

use std::cmp::Ordering;

use serde_json::{Value, json};

use super::{ToolError, ToolOutput, number_value};

pub use columns::{
    ColumnError, ColumnRef, ColumnSource, ColumnTable, NoColumns, ResolvedColumn, TableColumns,
    normalize_name,
};
pub use eval::{ColumnUse, Evaluation, eval, eval_with, limit_value};
pub use expr::{BinOp, CalcValue, Expr, Function, RowFilter, UnaryOp, ValueType};
pub use lex::reads_as_unit;
pub use parse::parse;

pub const TOOL_NAME: &str = "calculator";
/// Longest accepted expression, in characters (the registry says the same).
pub const MAX_EXPRESSION_CHARS: usize = 240;
/// Largest |exponent| accepted by `**`.
pub const MAX_EXPONENT: f64 = 64.0;
/// Largest |value| of any literal, intermediate or final result. Below 2^53, so
/// every integer in range is exact in f64.
pub const MAX_MAGNITUDE: f64 = 1e15;
/// Deepest nesting of parentheses, unary operators, `**` exponents and aggregate calls.
pub const MAX_DEPTH: usize = 48;
/// Most arguments one aggregate call accepts.
pub const MAX_ARGUMENTS: usize = 64;
// The comparison tolerance lives with the numbers: the rule reader compares with it too, and it must not
// import the calculator to do so (a circle through `tools`).
pub use forge_language::numbers::COMPARISON_TOLERANCE;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CalcError {
    #[error("expression is empty")]
    Empty,
    #[error("expression has {chars} characters, the limit is {limit}")]
    TooLong { chars: usize, limit: usize },
    #[error(
        "forbidden token {token:?} at position {position}: only numbers, true, false, + - * / **, \
         comparisons (>= > <= < == !=), and, or, not, parentheses, commas, the functions \
         sum, mean, min, max, count, column references [Name] and a unit after a limit (5 min) \
         are allowed"
    )]
    ForbiddenToken { token: String, position: usize },
    #[error("syntax error at position {position}: {message}")]
    Syntax { position: usize, message: String },
    #[error("{function} at position {position} takes 1 to {MAX_ARGUMENTS} arguments, got {given}")]
    Arity {
        function: Function,
        given: usize,
        position: usize,
    },
    #[error("type error at position {position}: '{operator}' needs {expected}, found {found}")]
    Type {
        /// The operator or function, as written (`>=`, `not`, `mean`).
        operator: &'static str,
        /// What it accepts, e.g. "numbers on both sides".
        expected: &'static str,
        /// What it was given, e.g. "number >= boolean".
        found: String,
        position: usize,
    },
    #[error("division by zero at position {position}")]
    DivisionByZero { position: usize },
    #[error("overflow at position {position}: {message}")]
    Overflow { position: usize, message: String },
    #[error("result is not a finite number (operator at position {position})")]
    NonFinite { position: usize },
    #[error(
        "column reference {reference} at position {position} stands for a list of values: \
         use it as the only argument of sum, mean, min, max or count, e.g. mean({reference})"
    )]
    ColumnNotAList { reference: String, position: usize },
    #[error("column reference at position {position}: {error}")]
    Column { error: ColumnError, position: usize },
    #[error(
        "a row filter at position {position} works only inside count, e.g. count([Rate] > 7); \
         {function} takes the column alone"
    )]
    FilterOutsideCount { function: Function, position: usize },
    #[error(
        "{quantity} at position {position} is a limit with a unit: compare a column's sum, mean, min or max \
         with it (mean([Wait]) <= 5 min) or count the rows past it (count([Wait] > 8 min)), so the \
         calculator can convert it into the column's unit"
    )]
    UnitWithoutColumn { quantity: String, position: usize },
    #[error("{quantity} at position {position} cannot be compared with {reference}: {error}")]
    UnitNotComparable {
        quantity: String,
        reference: String,
        /// Boxed: the other errors are small, and every `Result` carries the largest.
        error: Box<forge_language::units::UnitError>,
        position: usize,
    },
}

impl CalcError {
    /// The stable code carried by the tool error.
    pub fn code(&self) -> &'static str {
        match self {
            CalcError::Empty => "expression_empty",
            CalcError::TooLong { .. } => "expression_too_long",
            CalcError::ForbiddenToken { .. } => "forbidden_token",
            CalcError::Syntax { .. } => "syntax_error",
            CalcError::Arity { .. } => "arity_error",
            CalcError::Type { .. } => "type_error",
            CalcError::DivisionByZero { .. } => "division_by_zero",
            CalcError::Overflow { .. } => "overflow",
            CalcError::NonFinite { .. } => "non_finite",
            CalcError::ColumnNotAList { .. } => "column_not_a_list",
            CalcError::Column { error, .. } => error.code(),
            CalcError::FilterOutsideCount { .. } => "filter_outside_count",
            CalcError::UnitWithoutColumn { .. } => "unit_without_column",
            CalcError::UnitNotComparable { .. } => "unit_not_comparable",
        }
    }

    /// The character position the error points at, when it points at one.
    pub fn position(&self) -> Option<usize> {
        match self {
            CalcError::Empty | CalcError::TooLong { .. } => None,
            CalcError::ForbiddenToken { position, .. }
            | CalcError::Syntax { position, .. }
            | CalcError::Arity { position, .. }
            | CalcError::Type { position, .. }
            | CalcError::DivisionByZero { position }
            | CalcError::Overflow { position, .. }
            | CalcError::NonFinite { position }
            | CalcError::ColumnNotAList { position, .. }
            | CalcError::Column { position, .. }
            | CalcError::FilterOutsideCount { position, .. }
            | CalcError::UnitWithoutColumn { position, .. }
            | CalcError::UnitNotComparable { position, .. } => Some(*position),
        }
    }
}

impl From<CalcError> for ToolError {
    fn from(error: CalcError) -> Self {
        ToolError::permanent(error.code(), error.to_string())
    }
}

/// Parses and evaluates `input`; column references resolve to nothing (see [`evaluate_with`]).
pub fn evaluate(input: &str) -> Result<CalcValue, CalcError> {
    eval(&parse(input)?)
}

/// Parses and evaluates `input`, resolving column references through `columns`.
pub fn evaluate_with(input: &str, columns: &dyn ColumnSource) -> Result<Evaluation, CalcError> {
    eval_with(&parse(input)?, columns)
}

/// [`run_with`] where no table has been observed.
pub fn run(expression: &str) -> Result<ToolOutput, ToolError> {
    run_with(expression, &NoColumns)
}

/// The tool entry point: `{expression, value}`, the value a number (integer-valued
/// results as integers) or a boolean, plus `columns` (one entry per distinct
/// reference, only when the expression has any): `{reference, name, rows, used,
/// missing, values, lowest, highest}`, the ends as `{labels, value}` with every tied row. The digest renders each reference as the column it resolved
/// to (`[Clinic | Wait]`), so `mean([wait])` and `mean([Wait])` digest alike.
pub fn run_with(expression: &str, columns: &dyn ColumnSource) -> Result<ToolOutput, ToolError> {
    let ast = parse(expression)?;
    let evaluation = eval_with(&ast, columns)?;
    let value = evaluation.value.to_json();
    let mut result = json!({ "expression": expression, "value": value });
    let mut summary = format!("{} = {}", expression.trim(), value);
    if !evaluation.columns.is_empty() {
        let used: Vec<Value> = evaluation
            .columns
            .iter()
            .map(|u| {
                json!({
                    "reference": u.reference.to_string(),
                    "name": u.column.name,
                    "rows": u.column.rows_label,
                    "used": u.column.values.len(),
                    "missing": u.column.missing,
                    "values": u.column.values.iter().map(|&x| number_value(x)).collect::<Vec<_>>(),
                    "lowest": end_rows(&u.column, Ordering::Less),
                    "highest": end_rows(&u.column, Ordering::Greater),
                })
            })
            .collect();
        result["columns"] = Value::Array(used);
        for u in &evaluation.columns {
            summary.push_str(&format!(
                "; {} = {} of {} ({} values, {} missing)",
                u.reference,
                u.column.name,
                u.column.rows_label,
                u.column.values.len(),
                u.column.missing.len()
            ));
        }
    }
    let resolved = resolve_references(&ast, &evaluation.columns);
    Ok(ToolOutput {
        result,
        summary,
        citations: Vec::new(),
        artifacts: Vec::new(),
        digest_basis: json!({ "expression": resolved.to_string(), "value": value }),
    })
}

/// The rows at one end of a column the expression read (`Less`: the lowest), every tied row listed:
/// `{labels, value}`, or null for a column with no value. The calculator states what it read, so a model
/// that aggregated a column sees that column's ends beside its result.
fn end_rows(column: &ResolvedColumn, end: Ordering) -> Value {
    let best = column
        .values
        .iter()
        .copied()
        .reduce(|a, b| if b.total_cmp(&a) == end { b } else { a });
    let Some(best) = best else {
        return Value::Null;
    };
    let labels: Vec<&str> = column
        .labels
        .iter()
        .zip(&column.values)
        .filter(|(_, v)| **v == best)
        .map(|(l, _)| l.as_str())
        .collect();
    json!({ "labels": labels, "value": number_value(best) })
}

/// `ast` with every column reference replaced by the qualified reference of the column it resolved to.
fn resolve_references(ast: &Expr, used: &[ColumnUse]) -> Expr {
    let again = |e: &Expr| Box::new(resolve_references(e, used));
    match ast {
        Expr::Number(_) | Expr::Quantity { .. } | Expr::Boolean(_) => ast.clone(),
        Expr::Unary {
            op,
            operand,
            position,
        } => Expr::Unary {
            op: *op,
            operand: again(operand),
            position: *position,
        },
        Expr::Binary {
            op,
            left,
            right,
            position,
        } => Expr::Binary {
            op: *op,
            left: again(left),
            right: again(right),
            position: *position,
        },
        Expr::Call {
            function,
            arguments,
            position,
        } => Expr::Call {
            function: *function,
            arguments: arguments
                .iter()
                .map(|a| resolve_references(a, used))
                .collect(),
            position: *position,
        },
        Expr::ColumnCall {
            function,
            column,
            filter,
            position,
            column_position,
        } => Expr::ColumnCall {
            function: *function,
            filter: filter.as_ref().map(|f| RowFilter {
                op: f.op,
                limit: again(&f.limit),
            }),
            column: used.iter().find(|u| u.reference == *column).map_or_else(
                || column.clone(),
                |u| ColumnRef::qualified(&u.column.rows_label, &u.column.name),
            ),
            position: *position,
            column_position: *column_position,
        },
    }
}
