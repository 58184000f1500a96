//! The calculator's recursive-descent parser: precedence levels as in the
//! module table, types checked while each node is built.

use super::columns::ColumnRef;
use super::expr::{
    BinOp, Expr, Function, RowFilter, UnaryOp, ValueType, argument_type_error, binary_type_error,
    check_arity, unary_type_error,
};
use super::lex::{Token, describe, tokenize};
use super::{CalcError, MAX_DEPTH, MAX_EXPRESSION_CHARS};

struct Parser {
    tokens: Vec<(Token, usize)>,
    next: usize,
    end_position: usize,
    depth: usize,
    columns: Vec<ColumnRef>,
    /// The units written after numbers, indexed by [`Token::Unit`].
    units: Vec<String>,
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
            // `-5 °C` is one limit, as a negative number literal is one number.
            if let Expr::Quantity {
                value,
                unit,
                position,
            } = operand
            {
                return Ok(Expr::Quantity {
                    value: -value,
                    unit,
                    position,
                });
            }
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
                if let Some(Token::Unit(index)) = self.peek() {
                    self.next += 1;
                    return Ok(Expr::Quantity {
                        value: x,
                        unit: self.units[index].clone(),
                        position,
                    });
                }
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
            Some(Token::Column(index)) => Err(CalcError::ColumnNotAList {
                reference: self.columns[index].to_string(),
                position,
            }),
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
        // `mean([Wait])`: a column reference as the only argument.
        if let (Some(Token::Column(index)), Some((Token::RParen, _))) =
            (self.peek(), self.tokens.get(self.next + 1))
        {
            let column_position = self.position();
            self.next += 2;
            self.depth -= 1;
            return Ok(Expr::ColumnCall {
                function,
                column: self.columns[index].clone(),
                filter: None,
                position,
                column_position,
            });
        }
        // `count([Rate] > 7)`: the rows of a column whose value passes one comparison.
        if let (Some(Token::Column(index)), Some((Token::Compare(_), _))) =
            (self.peek(), self.tokens.get(self.next + 1))
        {
            return self.filtered_count(function, index, position, open);
        }
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

impl Parser {
    /// `count([Name] <op> limit)` after `count(`: the limit is a number expression without column
    /// references; any other function with a filter is `filter_outside_count`.
    fn filtered_count(
        &mut self,
        function: Function,
        index: usize,
        position: usize,
        open: usize,
    ) -> Result<Expr, CalcError> {
        let column_position = self.position();
        if function != Function::Count {
            return Err(CalcError::FilterOutsideCount {
                function,
                position: column_position,
            });
        }
        self.next += 1;
        let Some(Token::Compare(op)) = self.peek() else {
            return self.syntax("expected a comparison after the column reference".to_owned());
        };
        let op_position = self.position();
        self.next += 1;
        let limit = self.sum()?;
        if limit.value_type() != ValueType::Number {
            return Err(binary_type_error(
                op,
                ValueType::Number,
                limit.value_type(),
                op_position,
            ));
        }
        if self.peek() != Some(Token::RParen) {
            return self.syntax(format!(
                "expected ')' to close '{function}(' at position {open}: a filter is one comparison"
            ));
        }
        self.next += 1;
        self.depth -= 1;
        Ok(Expr::ColumnCall {
            function,
            column: self.columns[index].clone(),
            filter: Some(RowFilter {
                op,
                limit: Box::new(limit),
            }),
            position,
            column_position,
        })
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
    let (tokens, columns, units) = tokenize(input)?;
    let mut parser = Parser {
        tokens,
        columns,
        units,
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
    placed_quantities(&expr)?;
    Ok(expr)
}

/// Whether `expr` measures one column in that column's own unit: an aggregate of it other than `count`
/// (a count has no unit), without a row filter.
fn measures_a_column(expr: &Expr) -> bool {
    matches!(
        expr,
        Expr::ColumnCall {
            function,
            filter: None,
            ..
        } if *function != Function::Count
    )
}

/// A limit written with a unit stands where it can be converted: as one side of a comparison whose other
/// side measures a column (`mean([Wait]) <= 5 min`), or as a row filter's whole limit (`count([Wait] > 8
/// min)`). Anywhere else it is refused: `5 min * 2` or `mean(5 min, 6)` has no column to take a unit from.
fn placed_quantities(expr: &Expr) -> Result<(), CalcError> {
    match expr {
        Expr::Quantity { position, .. } => Err(CalcError::UnitWithoutColumn {
            quantity: expr.to_string(),
            position: *position,
        }),
        Expr::Number(_) | Expr::Boolean(_) => Ok(()),
        Expr::Unary { operand, .. } => placed_quantities(operand),
        Expr::Binary {
            op, left, right, ..
        } if BinOp::COMPARISON.contains(op) => {
            for (side, other) in [(left, right), (right, left)] {
                match side.as_ref() {
                    Expr::Quantity { .. } if measures_a_column(other) => {}
                    side => placed_quantities(side)?,
                }
            }
            Ok(())
        }
        Expr::Binary { left, right, .. } => {
            placed_quantities(left)?;
            placed_quantities(right)
        }
        Expr::Call { arguments, .. } => arguments.iter().try_for_each(placed_quantities),
        Expr::ColumnCall { filter, .. } => match filter.as_ref().map(|f| f.limit.as_ref()) {
            Some(Expr::Quantity { .. }) | None => Ok(()),
            Some(limit) => placed_quantities(limit),
        },
    }
}
