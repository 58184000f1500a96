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

use std::fmt;

use serde_json::{Value, json};

use super::{ToolError, ToolOutput, number_value};

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

    fn from_name(word: &str) -> Option<Function> {
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
}

impl Expr {
    /// The type this node produces, read off the node alone (operands are
    /// checked when the node is built by the parser, and again by [`eval`]).
    pub fn value_type(&self) -> ValueType {
        match self {
            Expr::Number(_) | Expr::Call { .. } => ValueType::Number,
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

    fn operand_type(self) -> ValueType {
        match self {
            UnaryOp::Neg => ValueType::Number,
            UnaryOp::Not => ValueType::Boolean,
        }
    }

    fn result_type(self) -> ValueType {
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

    fn result_type(self) -> ValueType {
        match self {
            BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div | BinOp::Pow => ValueType::Number,
            _ => ValueType::Boolean,
        }
    }

    /// The type rule: arithmetic and ordering need numbers, `and`/`or` booleans,
    /// `==`/`!=` two operands of one type.
    fn accepts(self, left: ValueType, right: ValueType) -> bool {
        match self {
            BinOp::Equal | BinOp::NotEqual => left == right,
            BinOp::And | BinOp::Or => left == ValueType::Boolean && right == ValueType::Boolean,
            _ => left == ValueType::Number && right == ValueType::Number,
        }
    }

    fn expected(self) -> &'static str {
        match self {
            BinOp::Equal | BinOp::NotEqual => "both sides of one type",
            BinOp::And | BinOp::Or => "booleans on both sides",
            _ => "numbers on both sides",
        }
    }
}

fn binary_type_error(op: BinOp, left: ValueType, right: ValueType, position: usize) -> CalcError {
    CalcError::Type {
        operator: op.symbol(),
        expected: op.expected(),
        found: format!("{left} {} {right}", op.symbol()),
        position,
    }
}

fn unary_type_error(op: UnaryOp, operand: ValueType, position: usize) -> CalcError {
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

fn argument_type_error(
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

fn check_arity(function: Function, given: usize, position: usize) -> Result<(), CalcError> {
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
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Token {
    Number(f64),
    True,
    False,
    Function(Function),
    Plus,
    Minus,
    Star,
    Slash,
    StarStar,
    LParen,
    RParen,
    Comma,
    Compare(BinOp),
    And,
    Or,
    Not,
}

/// Splits the input into whitelisted tokens with their character positions.
fn tokenize(input: &str) -> Result<Vec<(Token, usize)>, CalcError> {
    let chars: Vec<char> = input.chars().collect();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let start = i;
        let next = chars.get(i + 1).copied();
        match c {
            c if c.is_whitespace() => {
                i += 1;
                continue;
            }
            '0'..='9' | '.' => {
                while i < chars.len() && (chars[i].is_ascii_digit() || chars[i] == '.') {
                    i += 1;
                }
                let text: String = chars[start..i].iter().collect();
                // Digits glued to a name (`2e5`, `3x`) are a forbidden name, not a number.
                if i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                    return Err(forbidden_word(&chars, start));
                }
                let value = parse_number(&text).ok_or_else(|| CalcError::Syntax {
                    position: start,
                    message: format!("malformed number {text:?}"),
                })?;
                if value.abs() > MAX_MAGNITUDE {
                    return Err(CalcError::Overflow {
                        position: start,
                        message: format!("literal {text} exceeds {MAX_MAGNITUDE:e}"),
                    });
                }
                tokens.push((Token::Number(value), start));
                continue;
            }
            c if c.is_alphanumeric() || c == '_' => {
                while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                    i += 1;
                }
                // A dotted name (`os.system`, `mean.x`) is refused whole.
                if chars.get(i) == Some(&'.') {
                    return Err(forbidden_word(&chars, start));
                }
                let word: String = chars[start..i].iter().collect();
                let token = match word.as_str() {
                    "true" => Token::True,
                    "false" => Token::False,
                    "and" => Token::And,
                    "or" => Token::Or,
                    "not" => Token::Not,
                    other => match Function::from_name(other) {
                        Some(function) => Token::Function(function),
                        None => {
                            return Err(CalcError::ForbiddenToken {
                                token: word,
                                position: start,
                            });
                        }
                    },
                };
                tokens.push((token, start));
                continue;
            }
            '+' => tokens.push((Token::Plus, start)),
            '-' => tokens.push((Token::Minus, start)),
            '*' if next == Some('*') => {
                tokens.push((Token::StarStar, start));
                i += 1;
            }
            '*' => tokens.push((Token::Star, start)),
            '/' => tokens.push((Token::Slash, start)),
            '(' => tokens.push((Token::LParen, start)),
            ')' => tokens.push((Token::RParen, start)),
            ',' => tokens.push((Token::Comma, start)),
            '<' | '>' | '=' | '!' if next == Some('=') => {
                let op = match c {
                    '<' => BinOp::LessEqual,
                    '>' => BinOp::GreaterEqual,
                    '=' => BinOp::Equal,
                    _ => BinOp::NotEqual,
                };
                tokens.push((Token::Compare(op), start));
                i += 1;
            }
            '<' => tokens.push((Token::Compare(BinOp::Less), start)),
            '>' => tokens.push((Token::Compare(BinOp::Greater), start)),
            // Halves of `==` / `!=`: say what was probably meant.
            '=' => {
                return Err(CalcError::Syntax {
                    position: start,
                    message: "'=' is not an operator: compare with '=='".to_owned(),
                });
            }
            '!' => {
                return Err(CalcError::Syntax {
                    position: start,
                    message: "'!' is not an operator: negate with 'not', compare with '!='"
                        .to_owned(),
                });
            }
            other => {
                return Err(CalcError::ForbiddenToken {
                    token: other.to_string(),
                    position: start,
                });
            }
        }
        i += 1;
    }
    Ok(tokens)
}

/// The whole identifier-like word starting at `start` (e.g. `__import__`, `1e5`, `.real`, `os.system`).
fn forbidden_word(chars: &[char], start: usize) -> CalcError {
    let end = chars[start..]
        .iter()
        .position(|c| !(c.is_alphanumeric() || *c == '_' || *c == '.'))
        .map_or(chars.len(), |n| start + n);
    CalcError::ForbiddenToken {
        token: chars[start..end].iter().collect(),
        position: start,
    }
}

/// `12`, `12.5`, `.5`, `12.` — one dot at most, at least one digit.
fn parse_number(text: &str) -> Option<f64> {
    if text.matches('.').count() > 1 || !text.bytes().any(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse::<f64>().ok().filter(|x| x.is_finite())
}

struct Parser {
    tokens: Vec<(Token, usize)>,
    next: usize,
    end_position: usize,
    depth: usize,
}

impl Parser {
    fn peek(&self) -> Option<Token> {
        self.tokens.get(self.next).map(|(t, _)| *t)
    }

    fn position(&self) -> usize {
        self.tokens
            .get(self.next)
            .map_or(self.end_position, |(_, p)| *p)
    }

    fn descend(&mut self) -> Result<(), CalcError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(CalcError::Syntax {
                position: self.position(),
                message: format!("nesting deeper than {MAX_DEPTH}"),
            });
        }
        Ok(())
    }

    fn syntax<T>(&self, message: String) -> Result<T, CalcError> {
        Err(CalcError::Syntax {
            position: self.position(),
            message,
        })
    }

    /// Builds a binary node after checking its operand types.
    fn binary(op: BinOp, left: Expr, right: Expr, position: usize) -> Result<Expr, CalcError> {
        let (l, r) = (left.value_type(), right.value_type());
        if !op.accepts(l, r) {
            return Err(binary_type_error(op, l, r, position));
        }
        Ok(Expr::Binary {
            op,
            left: Box::new(left),
            right: Box::new(right),
            position,
        })
    }

    /// Builds a unary node after checking its operand type.
    fn unary_node(op: UnaryOp, operand: Expr, position: usize) -> Result<Expr, CalcError> {
        if operand.value_type() != op.operand_type() {
            return Err(unary_type_error(op, operand.value_type(), position));
        }
        Ok(Expr::Unary {
            op,
            operand: Box::new(operand),
            position,
        })
    }

    // expr := conjunction ('or' conjunction)*
    fn expr(&mut self) -> Result<Expr, CalcError> {
        let mut left = self.conjunction()?;
        while self.peek() == Some(Token::Or) {
            let position = self.position();
            self.next += 1;
            let right = self.conjunction()?;
            left = Self::binary(BinOp::Or, left, right, position)?;
        }
        Ok(left)
    }

    // conjunction := negation ('and' negation)*
    fn conjunction(&mut self) -> Result<Expr, CalcError> {
        let mut left = self.negation()?;
        while self.peek() == Some(Token::And) {
            let position = self.position();
            self.next += 1;
            let right = self.negation()?;
            left = Self::binary(BinOp::And, left, right, position)?;
        }
        Ok(left)
    }

    // negation := 'not' negation | comparison
    fn negation(&mut self) -> Result<Expr, CalcError> {
        if self.peek() == Some(Token::Not) {
            let position = self.position();
            self.next += 1;
            self.descend()?;
            let operand = self.negation()?;
            self.depth -= 1;
            return Self::unary_node(UnaryOp::Not, operand, position);
        }
        self.comparison()
    }

    // comparison := sum (compare_op sum)?      (non-associative)
    fn comparison(&mut self) -> Result<Expr, CalcError> {
        let left = self.sum()?;
        let Some(Token::Compare(op)) = self.peek() else {
            return Ok(left);
        };
        let position = self.position();
        self.next += 1;
        let right = self.sum()?;
        if let Some(Token::Compare(second)) = self.peek() {
            return self.syntax(format!(
                "comparisons do not chain: '{}' follows '{}' at position {position}; \
                 join two comparisons with 'and' (a < b and b < c)",
                second.symbol(),
                op.symbol()
            ));
        }
        Self::binary(op, left, right, position)
    }

    // sum := term (('+' | '-') term)*
    fn sum(&mut self) -> Result<Expr, CalcError> {
        let mut left = self.term()?;
        while let Some(op @ (Token::Plus | Token::Minus)) = self.peek() {
            let position = self.position();
            self.next += 1;
            let right = self.term()?;
            let op = if op == Token::Plus {
                BinOp::Add
            } else {
                BinOp::Sub
            };
            left = Self::binary(op, left, right, position)?;
        }
        Ok(left)
    }

    // term := unary (('*' | '/') unary)*
    fn term(&mut self) -> Result<Expr, CalcError> {
        let mut left = self.unary()?;
        while let Some(op @ (Token::Star | Token::Slash)) = self.peek() {
            let position = self.position();
            self.next += 1;
            let right = self.unary()?;
            let op = if op == Token::Star {
                BinOp::Mul
            } else {
                BinOp::Div
            };
            left = Self::binary(op, left, right, position)?;
        }
        Ok(left)
    }

    // unary := '-' unary | power      (so -2**2 is -(2**2), as in Python)
    fn unary(&mut self) -> Result<Expr, CalcError> {
        if self.peek() == Some(Token::Minus) {
            let position = self.position();
            self.next += 1;
            self.descend()?;
            let operand = self.unary()?;
            self.depth -= 1;
            return Self::unary_node(UnaryOp::Neg, operand, position);
        }
        self.power()
    }

    // power := primary ('**' unary)?   (right-associative through unary)
    fn power(&mut self) -> Result<Expr, CalcError> {
        let base = self.primary()?;
        if self.peek() == Some(Token::StarStar) {
            let position = self.position();
            self.next += 1;
            self.descend()?;
            let exponent = self.unary()?;
            self.depth -= 1;
            return Self::binary(BinOp::Pow, base, exponent, position);
        }
        Ok(base)
    }

    // primary := number | 'true' | 'false' | function '(' arguments ')' | '(' expr ')'
    fn primary(&mut self) -> Result<Expr, CalcError> {
        let position = self.position();
        match self.peek() {
            Some(Token::Number(x)) => {
                self.next += 1;
                Ok(Expr::Number(x))
            }
            Some(Token::True) => {
                self.next += 1;
                Ok(Expr::Boolean(true))
            }
            Some(Token::False) => {
                self.next += 1;
                Ok(Expr::Boolean(false))
            }
            Some(Token::Function(function)) => {
                self.next += 1;
                self.call(function, position)
            }
            Some(Token::LParen) => {
                self.next += 1;
                self.descend()?;
                let inner = self.expr()?;
                self.depth -= 1;
                if self.peek() != Some(Token::RParen) {
                    return self
                        .syntax(format!("expected ')' to close '(' at position {position}"));
                }
                self.next += 1;
                Ok(inner)
            }
            Some(other) => self.syntax(format!(
                "expected a number, true, false, a function or '(', found {}",
                describe(other)
            )),
            None => self.syntax("unexpected end of expression".to_owned()),
        }
    }

    // arguments := expr (',' expr)*     (after the function name; checked: numbers, 1..=MAX_ARGUMENTS)
    fn call(&mut self, function: Function, position: usize) -> Result<Expr, CalcError> {
        if self.peek() != Some(Token::LParen) {
            return self.syntax(format!("expected '(' after '{function}'"));
        }
        let open = self.position();
        self.next += 1;
        self.descend()?;
        let mut arguments = Vec::new();
        if self.peek() != Some(Token::RParen) {
            loop {
                let argument = self.expr()?;
                if argument.value_type() != ValueType::Number {
                    return Err(argument_type_error(
                        function,
                        arguments.len(),
                        argument.value_type(),
                        position,
                    ));
                }
                arguments.push(argument);
                match self.peek() {
                    Some(Token::Comma) => self.next += 1,
                    Some(Token::RParen) => break,
                    Some(other) => {
                        return self.syntax(format!(
                            "expected ',' or ')' to close '{function}(' at position {open}, found {}",
                            describe(other)
                        ));
                    }
                    None => {
                        return self.syntax(format!(
                            "expected ')' to close '{function}(' at position {open}"
                        ));
                    }
                }
            }
        }
        self.next += 1; // the ')'
        self.depth -= 1;
        check_arity(function, arguments.len(), position)?;
        Ok(Expr::Call {
            function,
            arguments,
            position,
        })
    }
}

fn describe(token: Token) -> String {
    match token {
        Token::Number(x) => format!("number {x}"),
        Token::True => "'true'".into(),
        Token::False => "'false'".into(),
        Token::Function(function) => format!("'{function}'"),
        Token::Plus => "'+'".into(),
        Token::Minus => "'-'".into(),
        Token::Star => "'*'".into(),
        Token::Slash => "'/'".into(),
        Token::StarStar => "'**'".into(),
        Token::LParen => "'('".into(),
        Token::RParen => "')'".into(),
        Token::Comma => "','".into(),
        Token::Compare(op) => format!("'{}'", op.symbol()),
        Token::And => "'and'".into(),
        Token::Or => "'or'".into(),
        Token::Not => "'not'".into(),
    }
}

/// Tokenizes, parses and type-checks `input` into an AST without evaluating it.
pub fn parse(input: &str) -> Result<Expr, CalcError> {
    let chars = input.chars().count();
    if chars > MAX_EXPRESSION_CHARS {
        return Err(CalcError::TooLong {
            chars,
            limit: MAX_EXPRESSION_CHARS,
        });
    }
    if input.trim().is_empty() {
        return Err(CalcError::Empty);
    }
    let tokens = tokenize(input)?;
    let mut parser = Parser {
        tokens,
        next: 0,
        end_position: chars,
        depth: 0,
    };
    let expr = parser.expr()?;
    if let Some(token) = parser.peek() {
        return parser.syntax(format!(
            "unexpected {} after a complete expression",
            describe(token)
        ));
    }
    Ok(expr)
}

/// A number result within bounds, or the error for the operator at `position`.
fn bounded(value: f64, position: usize) -> Result<f64, CalcError> {
    if value.is_nan() {
        // Finite operands within bounds can only leave the reals via powf
        // (negative base, fractional exponent).
        return Err(CalcError::NonFinite { position });
    }
    if value.abs() > MAX_MAGNITUDE {
        return Err(CalcError::Overflow {
            position,
            message: format!("result exceeds {MAX_MAGNITUDE:e}"),
        });
    }
    Ok(value)
}

/// Equality up to float noise; see [`COMPARISON_TOLERANCE`].
fn same_number(a: f64, b: f64) -> bool {
    if a == b {
        return true;
    }
    if a.fract() == 0.0 && b.fract() == 0.0 {
        return false;
    }
    (a - b).abs() <= COMPARISON_TOLERANCE * a.abs().max(b.abs()).max(1.0)
}

fn arithmetic(op: BinOp, a: f64, b: f64, position: usize) -> Result<f64, CalcError> {
    let value = match op {
        BinOp::Add => a + b,
        BinOp::Sub => a - b,
        BinOp::Mul => a * b,
        BinOp::Div => {
            if b == 0.0 {
                return Err(CalcError::DivisionByZero { position });
            }
            a / b
        }
        BinOp::Pow => {
            if b.abs() > MAX_EXPONENT {
                return Err(CalcError::Overflow {
                    position,
                    message: format!(
                        "exponent {} exceeds the limit of ±{MAX_EXPONENT}",
                        number_value(b)
                    ),
                });
            }
            if a == 0.0 && b < 0.0 {
                return Err(CalcError::DivisionByZero { position });
            }
            a.powf(b)
        }
        _ => {
            return Err(binary_type_error(
                op,
                ValueType::Number,
                ValueType::Number,
                position,
            ));
        }
    };
    bounded(value, position)
}

/// `sum`, `mean`, `min`, `max`, `count` over already evaluated arguments.
fn aggregate(function: Function, values: &[f64], position: usize) -> Result<f64, CalcError> {
    let Some((&first, rest)) = values.split_first() else {
        return Err(CalcError::Arity {
            function,
            given: 0,
            position,
        });
    };
    // Left to right, each partial sum bounded: `mean(a, b, c)` is exactly `(a + b + c) / 3`.
    let total = || {
        rest.iter()
            .try_fold(first, |acc, &x| bounded(acc + x, position))
    };
    match function {
        Function::Sum => total(),
        Function::Mean => bounded(total()? / values.len() as f64, position),
        Function::Min => Ok(rest.iter().fold(first, |acc, &x| acc.min(x))),
        Function::Max => Ok(rest.iter().fold(first, |acc, &x| acc.max(x))),
        Function::Count => Ok(values.len() as f64),
    }
}

/// Evaluates an expression with every intermediate result bounded. Types are
/// checked again here, so a hand-built tree that mixes types gets a
/// `type_error` too, never a panic.
pub fn eval(expr: &Expr) -> Result<CalcValue, CalcError> {
    use CalcValue::{Boolean, Number};
    match expr {
        // Literal positions are not kept: an out-of-range literal can only come
        // from a hand-built tree (the tokenizer refuses it with its position).
        Expr::Number(x) => Ok(Number(bounded(*x, 0)?)),
        Expr::Boolean(b) => Ok(Boolean(*b)),
        Expr::Unary {
            op,
            operand,
            position,
        } => match (op, eval(operand)?) {
            (UnaryOp::Neg, Number(x)) => Ok(Number(-x)),
            (UnaryOp::Not, Boolean(b)) => Ok(Boolean(!b)),
            (op, value) => Err(unary_type_error(*op, value.value_type(), *position)),
        },
        Expr::Binary {
            op,
            left,
            right,
            position,
        } => {
            let (a, b) = (eval(left)?, eval(right)?);
            let position = *position;
            Ok(match (op, a, b) {
                (BinOp::And, Boolean(a), Boolean(b)) => Boolean(a && b),
                (BinOp::Or, Boolean(a), Boolean(b)) => Boolean(a || b),
                (BinOp::Equal, Boolean(a), Boolean(b)) => Boolean(a == b),
                (BinOp::NotEqual, Boolean(a), Boolean(b)) => Boolean(a != b),
                (BinOp::Equal, Number(a), Number(b)) => Boolean(same_number(a, b)),
                (BinOp::NotEqual, Number(a), Number(b)) => Boolean(!same_number(a, b)),
                (BinOp::Less, Number(a), Number(b)) => Boolean(a < b && !same_number(a, b)),
                (BinOp::LessEqual, Number(a), Number(b)) => Boolean(a < b || same_number(a, b)),
                (BinOp::Greater, Number(a), Number(b)) => Boolean(a > b && !same_number(a, b)),
                (BinOp::GreaterEqual, Number(a), Number(b)) => Boolean(a > b || same_number(a, b)),
                (
                    BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div | BinOp::Pow,
                    Number(a),
                    Number(b),
                ) => Number(arithmetic(*op, a, b, position)?),
                (op, a, b) => {
                    return Err(binary_type_error(
                        *op,
                        a.value_type(),
                        b.value_type(),
                        position,
                    ));
                }
            })
        }
        Expr::Call {
            function,
            arguments,
            position,
        } => {
            check_arity(*function, arguments.len(), *position)?;
            let mut values = Vec::with_capacity(arguments.len());
            for (index, argument) in arguments.iter().enumerate() {
                match eval(argument)? {
                    Number(x) => values.push(x),
                    Boolean(_) => {
                        return Err(argument_type_error(
                            *function,
                            index,
                            ValueType::Boolean,
                            *position,
                        ));
                    }
                }
            }
            Ok(Number(aggregate(*function, &values, *position)?))
        }
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
