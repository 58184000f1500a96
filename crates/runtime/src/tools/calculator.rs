//! The calculator tool: a whitelisting tokenizer and recursive-descent parser for
//! plain arithmetic, evaluated over f64 with explicit bounds.
//!
//! Accepted: decimal numbers, `+ - * /`, unary minus, parentheses and `**` with
//! an exponent of magnitude ≤ [`MAX_EXPONENT`]. There are no names, no function
//! calls and no other syntax, so nothing here can reach the host. Anything else
//! is a typed [`CalcError`] with the character position.

use std::fmt;

use serde_json::json;

use super::{ToolError, ToolOutput, number_value};

pub const TOOL_NAME: &str = "calculator";
/// Longest accepted expression, in characters (the registry says the same).
pub const MAX_EXPRESSION_CHARS: usize = 240;
/// Largest |exponent| accepted by `**`.
pub const MAX_EXPONENT: f64 = 64.0;
/// Largest |value| of any literal, intermediate or final result. Below 2^53, so
/// every integer in range is exact in f64.
pub const MAX_MAGNITUDE: f64 = 1e15;
/// Deepest nesting of parentheses / unary operators.
pub const MAX_DEPTH: usize = 48;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CalcError {
    #[error("expression is empty")]
    Empty,
    #[error("expression has {chars} characters, the limit is {limit}")]
    TooLong { chars: usize, limit: usize },
    #[error(
        "forbidden token {token:?} at position {position}: only numbers, + - * / ** and parentheses are allowed"
    )]
    ForbiddenToken { token: String, position: usize },
    #[error("syntax error at position {position}: {message}")]
    Syntax { position: usize, message: String },
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
            CalcError::DivisionByZero { .. } => "division_by_zero",
            CalcError::Overflow { .. } => "overflow",
            CalcError::NonFinite { .. } => "non_finite",
        }
    }
}

impl From<CalcError> for ToolError {
    fn from(error: CalcError) -> Self {
        ToolError::permanent(error.code(), error.to_string())
    }
}

/// The parsed expression. Positions are character offsets into the input.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    Number(f64),
    Neg {
        operand: Box<Expr>,
        position: usize,
    },
    Binary {
        op: BinOp,
        left: Box<Expr>,
        right: Box<Expr>,
        position: usize,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Pow,
}

impl BinOp {
    fn symbol(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Pow => "**",
        }
    }
}

/// Canonical rendering: fully parenthesised, single spaces, so two spellings of
/// the same computation compare equal (used by the repeated-result guard).
impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Expr::Number(x) => write!(f, "{}", number_value(*x)),
            Expr::Neg { operand, .. } => write!(f, "(-{operand})"),
            Expr::Binary {
                op, left, right, ..
            } => write!(f, "({left} {} {right})", op.symbol()),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Token {
    Number(f64),
    Plus,
    Minus,
    Star,
    Slash,
    StarStar,
    LParen,
    RParen,
}

/// Splits the input into whitelisted tokens with their character positions.
fn tokenize(input: &str) -> Result<Vec<(Token, usize)>, CalcError> {
    let chars: Vec<char> = input.chars().collect();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let start = i;
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
            '+' => tokens.push((Token::Plus, start)),
            '-' => tokens.push((Token::Minus, start)),
            '*' if chars.get(i + 1) == Some(&'*') => {
                tokens.push((Token::StarStar, start));
                i += 1;
            }
            '*' => tokens.push((Token::Star, start)),
            '/' => tokens.push((Token::Slash, start)),
            '(' => tokens.push((Token::LParen, start)),
            ')' => tokens.push((Token::RParen, start)),
            c if c.is_alphanumeric() || c == '_' => return Err(forbidden_word(&chars, start)),
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

/// The whole identifier-like word starting at `start` (e.g. `__import__`, `1e5`, `.real`).
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

    // expr := term (('+' | '-') term)*
    fn expr(&mut self) -> Result<Expr, CalcError> {
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
            left = Expr::Binary {
                op,
                left: Box::new(left),
                right: Box::new(right),
                position,
            };
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
            left = Expr::Binary {
                op,
                left: Box::new(left),
                right: Box::new(right),
                position,
            };
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
            return Ok(Expr::Neg {
                operand: Box::new(operand),
                position,
            });
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
            return Ok(Expr::Binary {
                op: BinOp::Pow,
                left: Box::new(base),
                right: Box::new(exponent),
                position,
            });
        }
        Ok(base)
    }

    // primary := number | '(' expr ')'
    fn primary(&mut self) -> Result<Expr, CalcError> {
        let position = self.position();
        match self.peek() {
            Some(Token::Number(x)) => {
                self.next += 1;
                Ok(Expr::Number(x))
            }
            Some(Token::LParen) => {
                self.next += 1;
                self.descend()?;
                let inner = self.expr()?;
                self.depth -= 1;
                if self.peek() != Some(Token::RParen) {
                    return Err(CalcError::Syntax {
                        position: self.position(),
                        message: format!("expected ')' to close '(' at position {position}"),
                    });
                }
                self.next += 1;
                Ok(inner)
            }
            Some(other) => Err(CalcError::Syntax {
                position,
                message: format!("expected a number or '(', found {}", describe(other)),
            }),
            None => Err(CalcError::Syntax {
                position,
                message: "unexpected end of expression".to_owned(),
            }),
        }
    }
}

fn describe(token: Token) -> String {
    match token {
        Token::Number(x) => format!("number {}", number_value(x)),
        Token::Plus => "'+'".into(),
        Token::Minus => "'-'".into(),
        Token::Star => "'*'".into(),
        Token::Slash => "'/'".into(),
        Token::StarStar => "'**'".into(),
        Token::LParen => "'('".into(),
        Token::RParen => "')'".into(),
    }
}

/// Tokenizes and parses `input` into an AST without evaluating it.
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
        return Err(CalcError::Syntax {
            position: parser.position(),
            message: format!("unexpected {} after a complete expression", describe(token)),
        });
    }
    Ok(expr)
}

/// Evaluates a parsed expression with every intermediate result bounded.
pub fn eval(expr: &Expr) -> Result<f64, CalcError> {
    match expr {
        Expr::Number(x) => Ok(*x),
        Expr::Neg { operand, .. } => Ok(-eval(operand)?),
        Expr::Binary {
            op,
            left,
            right,
            position,
        } => {
            let (a, b) = (eval(left)?, eval(right)?);
            let position = *position;
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
            };
            if !value.is_finite() {
                // Finite operands within bounds can only leave the reals via powf
                // (negative base, fractional exponent) or a huge product.
                return Err(if value.is_nan() {
                    CalcError::NonFinite { position }
                } else {
                    CalcError::Overflow {
                        position,
                        message: format!("result exceeds {MAX_MAGNITUDE:e}"),
                    }
                });
            }
            if value.abs() > MAX_MAGNITUDE {
                return Err(CalcError::Overflow {
                    position,
                    message: format!("result exceeds {MAX_MAGNITUDE:e}"),
                });
            }
            Ok(value)
        }
    }
}

/// Parses and evaluates `input`.
pub fn evaluate(input: &str) -> Result<f64, CalcError> {
    eval(&parse(input)?)
}

/// The tool entry point: `{expression, value}` with integer-valued results as integers.
pub fn run(expression: &str) -> Result<ToolOutput, ToolError> {
    let ast = parse(expression)?;
    let value = eval(&ast)?;
    let value_json = number_value(value);
    Ok(ToolOutput {
        result: json!({ "expression": expression, "value": value_json }),
        summary: format!("{} = {}", expression.trim(), value_json),
        citations: Vec::new(),
        artifacts: Vec::new(),
        digest_basis: json!({ "expression": ast.to_string(), "value": value_json }),
    })
}
