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

mod eval;
mod expr;
mod lex;
mod parse;

use serde_json::json;

use super::{ToolError, ToolOutput};

pub use eval::eval;
pub use expr::{BinOp, CalcValue, Expr, Function, UnaryOp, ValueType};
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
/// Comparisons treat two numbers as equal when they differ by at most this
/// fraction of the larger magnitude (at least 1), so float noise such as
/// `0.1 + 0.2 == 0.3` cannot flip a rule check. Two whole numbers always compare
/// exactly (every integer within [`MAX_MAGNITUDE`] is exact in f64).
pub const COMPARISON_TOLERANCE: f64 = 1e-12;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CalcError {
    #[error("expression is empty")]
    Empty,
    #[error("expression has {chars} characters, the limit is {limit}")]
    TooLong { chars: usize, limit: usize },
    #[error(
        "forbidden token {token:?} at position {position}: only numbers, true, false, + - * / **, \
         comparisons (>= > <= < == !=), and, or, not, parentheses, commas and the functions \
         sum, mean, min, max, count are allowed"
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
            | CalcError::NonFinite { position } => Some(*position),
        }
    }
}

impl From<CalcError> for ToolError {
    fn from(error: CalcError) -> Self {
        ToolError::permanent(error.code(), error.to_string())
    }
}

/// Parses and evaluates `input`.
pub fn evaluate(input: &str) -> Result<CalcValue, CalcError> {
    eval(&parse(input)?)
}

/// The tool entry point: `{expression, value}`, the value a number (integer-valued
/// results as integers) or a boolean.
pub fn run(expression: &str) -> Result<ToolOutput, ToolError> {
    let ast = parse(expression)?;
    let value = eval(&ast)?.to_json();
    Ok(ToolOutput {
        result: json!({ "expression": expression, "value": value }),
        summary: format!("{} = {}", expression.trim(), value),
        citations: Vec::new(),
        artifacts: Vec::new(),
        digest_basis: json!({ "expression": ast.to_string(), "value": value }),
    })
}
