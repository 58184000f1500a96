//! The calculator's tree and types: [`Expr`], its operators and aggregate
//! [`Function`]s, the value types and the canonical `Display` rendering.

use std::fmt;

use serde_json::Value;

use super::columns::ColumnRef;
use super::{CalcError, MAX_ARGUMENTS};
use crate::number_value;

/// The aggregate functions: the only names the calculator knows besides its keywords.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Function {
    Sum,
    Mean,
    Min,
    Max,
    Count,
}

impl Function {
    pub const ALL: [Function; 5] = [
        Function::Sum,
        Function::Mean,
        Function::Min,
        Function::Max,
        Function::Count,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Function::Sum => "sum",
            Function::Mean => "mean",
            Function::Min => "min",
            Function::Max => "max",
            Function::Count => "count",
        }
    }

    pub(super) fn from_name(word: &str) -> Option<Function> {
        Function::ALL.into_iter().find(|f| f.name() == word)
    }
}

impl fmt::Display for Function {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The two types a value can have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueType {
    Number,
    Boolean,
}

impl fmt::Display for ValueType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ValueType::Number => "number",
            ValueType::Boolean => "boolean",
        })
    }
}

/// What an expression evaluates to.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum CalcValue {
    Number(f64),
    Boolean(bool),
}

impl CalcValue {
    pub fn value_type(self) -> ValueType {
        match self {
            CalcValue::Number(_) => ValueType::Number,
            CalcValue::Boolean(_) => ValueType::Boolean,
        }
    }

    /// JSON for the observation: integer-valued numbers as integers (79, not 79.0).
    pub fn to_json(self) -> Value {
        match self {
            CalcValue::Number(x) => number_value(x),
            CalcValue::Boolean(b) => Value::Bool(b),
        }
    }
}

/// The parsed expression. Positions are character offsets into the input.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    Number(f64),
    /// A limit written with its unit (`5 min`), as the knowledge states it: compared with a column's
    /// aggregate (or a row filter's column), it is converted into that column's unit first.
    Quantity {
        value: f64,
        /// The unit as written (`minutes`, `升`, `%`).
        unit: String,
        /// Of the number.
        position: usize,
    },
    Boolean(bool),
    Unary {
        op: UnaryOp,
        operand: Box<Expr>,
        position: usize,
    },
    Binary {
        op: BinOp,
        left: Box<Expr>,
        right: Box<Expr>,
        position: usize,
    },
    Call {
        function: Function,
        arguments: Vec<Expr>,
        position: usize,
    },
    /// An aggregate over the values of one observed column, `mean([Wait])`,
    /// resolved through the [`super::ColumnSource`] at evaluation.
    ColumnCall {
        function: Function,
        column: ColumnRef,
        /// `count([Rate] > 7)`: only the rows passing the comparison (count only).
        filter: Option<RowFilter>,
        /// Of the function name.
        position: usize,
        /// Of the reference's `[`.
        column_position: usize,
    },
}

/// A comparison each row of a column reference must pass to be counted (`[Rate] > 7`).
#[derive(Debug, Clone, PartialEq)]
pub struct RowFilter {
    /// A comparison operator (`<`, `<=`, `>`, `>=`, `==`, `!=`).
    pub op: BinOp,
    /// A number expression without column references.
    pub limit: Box<Expr>,
}

impl Expr {
    /// The type this node produces, read off the node alone (operands are
    /// checked when the node is built by the parser, and again by [`eval`]).
    pub fn value_type(&self) -> ValueType {
        match self {
            Expr::Number(_)
            | Expr::Quantity { .. }
            | Expr::Call { .. }
            | Expr::ColumnCall { .. } => ValueType::Number,
            Expr::Boolean(_) => ValueType::Boolean,
            Expr::Unary { op, .. } => op.result_type(),
            Expr::Binary { op, .. } => op.result_type(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnaryOp {
    Neg,
    Not,
}

impl UnaryOp {
    pub fn symbol(self) -> &'static str {
        match self {
            UnaryOp::Neg => "-",
            UnaryOp::Not => "not",
        }
    }

    pub(super) fn operand_type(self) -> ValueType {
        match self {
            UnaryOp::Neg => ValueType::Number,
            UnaryOp::Not => ValueType::Boolean,
        }
    }

    pub(super) fn result_type(self) -> ValueType {
        self.operand_type()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Pow,
    Less,
    LessEqual,
    Greater,
    GreaterEqual,
    Equal,
    NotEqual,
    And,
    Or,
}

impl BinOp {
    /// The operators of the sum level (`a + b`, `a - b`), as the parser groups them.
    pub const SUM: [BinOp; 2] = [BinOp::Add, BinOp::Sub];
    /// The operators of the product level (`a * b`, `a / b`).
    pub const PRODUCT: [BinOp; 2] = [BinOp::Mul, BinOp::Div];
    /// The comparisons (one per expression level: they do not chain).
    pub const COMPARISON: [BinOp; 6] = [
        BinOp::GreaterEqual,
        BinOp::LessEqual,
        BinOp::Equal,
        BinOp::NotEqual,
        BinOp::Greater,
        BinOp::Less,
    ];

    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Pow => "**",
            BinOp::Less => "<",
            BinOp::LessEqual => "<=",
            BinOp::Greater => ">",
            BinOp::GreaterEqual => ">=",
            BinOp::Equal => "==",
            BinOp::NotEqual => "!=",
            BinOp::And => "and",
            BinOp::Or => "or",
        }
    }

    pub(super) fn result_type(self) -> ValueType {
        match self {
            BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div | BinOp::Pow => ValueType::Number,
            _ => ValueType::Boolean,
        }
    }

    /// The type rule: arithmetic and ordering need numbers, `and`/`or` booleans,
    /// `==`/`!=` two operands of one type.
    pub(super) fn accepts(self, left: ValueType, right: ValueType) -> bool {
        match self {
            BinOp::Equal | BinOp::NotEqual => left == right,
            BinOp::And | BinOp::Or => left == ValueType::Boolean && right == ValueType::Boolean,
            _ => left == ValueType::Number && right == ValueType::Number,
        }
    }

    pub(super) fn expected(self) -> &'static str {
        match self {
            BinOp::Equal | BinOp::NotEqual => "both sides of one type",
            BinOp::And | BinOp::Or => "booleans on both sides",
            _ => "numbers on both sides",
        }
    }
}

pub(super) fn binary_type_error(
    op: BinOp,
    left: ValueType,
    right: ValueType,
    position: usize,
) -> CalcError {
    CalcError::Type {
        operator: op.symbol(),
        expected: op.expected(),
        found: format!("{left} {} {right}", op.symbol()),
        position,
    }
}

pub(super) fn unary_type_error(op: UnaryOp, operand: ValueType, position: usize) -> CalcError {
    CalcError::Type {
        operator: op.symbol(),
        expected: match op {
            UnaryOp::Neg => "a number",
            UnaryOp::Not => "a boolean",
        },
        found: operand.to_string(),
        position,
    }
}

pub(super) fn argument_type_error(
    function: Function,
    index: usize,
    found: ValueType,
    position: usize,
) -> CalcError {
    CalcError::Type {
        operator: function.name(),
        expected: "numbers as arguments",
        found: format!("{found} as argument {}", index + 1),
        position,
    }
}

pub(super) fn check_arity(
    function: Function,
    given: usize,
    position: usize,
) -> Result<(), CalcError> {
    if (1..=MAX_ARGUMENTS).contains(&given) {
        Ok(())
    } else {
        Err(CalcError::Arity {
            function,
            given,
            position,
        })
    }
}

/// Canonical rendering: fully parenthesised, single spaces, shortest decimal
/// literals without exponents, so two spellings of the same computation compare
/// equal (used by the repeated-result guard) and the text parses back to the
/// same tree.
impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            // Rust prints f64 as the shortest decimal that reads back exactly, never with an exponent.
            Expr::Number(x) if x.is_sign_negative() => write!(f, "(-{})", -x),
            Expr::Number(x) => write!(f, "{x}"),
            // The unit's canonical symbol (`minutes` → `min`): two spellings of one limit render alike.
            Expr::Quantity { value, unit, .. } => {
                let symbol = forge_language::units::read(unit).map_or(unit.clone(), |u| u.symbol);
                if value.is_sign_negative() {
                    write!(f, "(-{} {symbol})", -value)
                } else {
                    write!(f, "{value} {symbol}")
                }
            }
            Expr::Boolean(b) => write!(f, "{b}"),
            Expr::Unary {
                op: UnaryOp::Neg,
                operand,
                ..
            } => write!(f, "(-{operand})"),
            Expr::Unary {
                op: UnaryOp::Not,
                operand,
                ..
            } => write!(f, "(not {operand})"),
            Expr::Binary {
                op, left, right, ..
            } => write!(f, "({left} {} {right})", op.symbol()),
            Expr::Call {
                function,
                arguments,
                ..
            } => {
                write!(f, "{function}(")?;
                for (i, argument) in arguments.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{argument}")?;
                }
                f.write_str(")")
            }
            Expr::ColumnCall {
                function,
                column,
                filter: None,
                ..
            } => write!(f, "{function}({column})"),
            Expr::ColumnCall {
                function,
                column,
                filter: Some(filter),
                ..
            } => write!(
                f,
                "{function}({column} {} {})",
                filter.op.symbol(),
                filter.limit
            ),
        }
    }
}
