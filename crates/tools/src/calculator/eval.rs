//! The calculator's evaluator: f64 arithmetic with every intermediate result
//! bounded, aggregates left to right, comparisons up to float noise.

use super::columns::{ColumnError, ColumnRef, ColumnSource, NoColumns, ResolvedColumn};
use super::expr::{
    BinOp, CalcValue, Expr, Function, RowFilter, UnaryOp, ValueType, argument_type_error,
    binary_type_error, check_arity, unary_type_error,
};
use super::{COMPARISON_TOLERANCE, CalcError, MAX_EXPONENT, MAX_MAGNITUDE};
use crate::number_value;

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

/// One column reference an evaluation used, with what it resolved to.
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnUse {
    /// The reference as written (whitespace collapsed).
    pub reference: ColumnRef,
    pub column: ResolvedColumn,
}

/// A value and the columns it was computed from (each distinct reference once,
/// in order of first use; empty for a literal expression).
#[derive(Debug, Clone, PartialEq)]
pub struct Evaluation {
    pub value: CalcValue,
    pub columns: Vec<ColumnUse>,
}

/// Evaluates an expression with every intermediate result bounded. Types are
/// checked again here, so a hand-built tree that mixes types gets a
/// `type_error` too, never a panic. Column references resolve to nothing
/// (`unknown_column`); see [`eval_with`].
pub fn eval(expr: &Expr) -> Result<CalcValue, CalcError> {
    eval_with(expr, &NoColumns).map(|evaluation| evaluation.value)
}

/// [`eval`] with column references resolved through `columns`. A reference is
/// resolved once per evaluation however often it is used.
pub fn eval_with(expr: &Expr, columns: &dyn ColumnSource) -> Result<Evaluation, CalcError> {
    let mut evaluator = Evaluator {
        source: columns,
        used: Vec::new(),
    };
    // The result as a reader should copy it: a ratio of totals (`sum([A]) / sum([B]) * 100`) came out
    // 0.9900000000000001 and the 1.5B wrote that into its answer (stop 52).
    let value = match evaluator.eval(expr)? {
        CalcValue::Number(x) => {
            CalcValue::Number(forge_language::precision::without_float_noise(x))
        }
        other => other,
    };
    Ok(Evaluation {
        value,
        columns: evaluator.used,
    })
}

/// The number the limit side of a comparison stands for beside its measured side: a quantity (`5 min`)
/// converted into the unit of the column `measured` aggregates, anything else evaluated as it is. How a
/// reader of a rule check compares its limits with a rule's, as the calculator compared them.
pub fn limit_value(
    limit: &Expr,
    measured: &Expr,
    columns: &dyn ColumnSource,
) -> Result<f64, CalcError> {
    let mut evaluator = Evaluator {
        source: columns,
        used: Vec::new(),
    };
    match measured {
        Expr::ColumnCall {
            function,
            column,
            filter: None,
            ..
        } => evaluator.limit(limit, column, *function, BinOp::LessEqual, 0),
        _ => evaluator.number(limit, BinOp::LessEqual, 0),
    }
}

struct Evaluator<'a> {
    source: &'a dyn ColumnSource,
    used: Vec<ColumnUse>,
}

impl Evaluator<'_> {
    /// The values of `reference`, each checked like a literal; `empty_column` when there are none.
    fn column(&mut self, reference: &ColumnRef, position: usize) -> Result<Vec<f64>, CalcError> {
        if let Some(used) = self.used.iter().find(|u| u.reference == *reference) {
            return Ok(used.column.values.clone());
        }
        let column = self
            .source
            .column(reference)
            .map_err(|error| CalcError::Column { error, position })?;
        if column.values.is_empty() {
            return Err(CalcError::Column {
                error: ColumnError::Empty {
                    reference: reference.to_string(),
                },
                position,
            });
        }
        for &value in &column.values {
            bounded(value, position)?;
        }
        let values = column.values.clone();
        self.used.push(ColumnUse {
            reference: reference.clone(),
            column,
        });
        Ok(values)
    }

    fn eval(&mut self, expr: &Expr) -> Result<CalcValue, CalcError> {
        use CalcValue::{Boolean, Number};
        match expr {
            // Literal positions are not kept: an out-of-range literal can only come
            // from a hand-built tree (the tokenizer refuses it with its position).
            Expr::Number(x) => Ok(Number(bounded(*x, 0)?)),
            // Placed by the parser beside a column only (see `parse`); a hand-built tree that puts it
            // elsewhere has no unit to convert it into.
            Expr::Quantity { position, .. } => Err(CalcError::UnitWithoutColumn {
                quantity: expr.to_string(),
                position: *position,
            }),
            Expr::Boolean(b) => Ok(Boolean(*b)),
            Expr::Unary {
                op,
                operand,
                position,
            } => match (op, self.eval(operand)?) {
                (UnaryOp::Neg, Number(x)) => Ok(Number(-x)),
                (UnaryOp::Not, Boolean(b)) => Ok(Boolean(!b)),
                (op, value) => Err(unary_type_error(*op, value.value_type(), *position)),
            },
            Expr::Binary {
                op, left, right, ..
            } if BinOp::COMPARISON.contains(op)
                && (matches!(**left, Expr::Quantity { .. })
                    || matches!(**right, Expr::Quantity { .. })) =>
            {
                self.compare_with_quantity(*op, left, right)
            }
            Expr::Binary {
                op,
                left,
                right,
                position,
            } => self.binary(*op, left, right, *position),
            Expr::Call {
                function,
                arguments,
                position,
            } => {
                check_arity(*function, arguments.len(), *position)?;
                let mut values = Vec::with_capacity(arguments.len());
                for (index, argument) in arguments.iter().enumerate() {
                    match self.eval(argument)? {
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
            Expr::ColumnCall {
                function,
                column,
                filter,
                position,
                column_position,
            } => {
                let values = self.column(column, *column_position)?;
                match filter {
                    None => Ok(Number(aggregate(*function, &values, *position)?)),
                    Some(filter) => self.rows_passing(&values, filter, column, *position),
                }
            }
        }
    }
}

impl Evaluator<'_> {
    /// A binary node whose operands are numbers or booleans (a comparison with a quantity is
    /// [`Self::compare_with_quantity`]).
    fn binary(
        &mut self,
        op: BinOp,
        left: &Expr,
        right: &Expr,
        position: usize,
    ) -> Result<CalcValue, CalcError> {
        use CalcValue::{Boolean, Number};
        let (a, b) = (self.eval(left)?, self.eval(right)?);
        Ok(match (op, a, b) {
            (BinOp::And, Boolean(a), Boolean(b)) => Boolean(a && b),
            (BinOp::Or, Boolean(a), Boolean(b)) => Boolean(a || b),
            (BinOp::Equal, Boolean(a), Boolean(b)) => Boolean(a == b),
            (BinOp::NotEqual, Boolean(a), Boolean(b)) => Boolean(a != b),
            (
                BinOp::Equal
                | BinOp::NotEqual
                | BinOp::Less
                | BinOp::LessEqual
                | BinOp::Greater
                | BinOp::GreaterEqual,
                Number(a),
                Number(b),
            ) => Boolean(compare(op, a, b)),
            (
                BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div | BinOp::Pow,
                Number(a),
                Number(b),
            ) => Number(arithmetic(op, a, b, position)?),
            (op, a, b) => {
                return Err(binary_type_error(
                    op,
                    a.value_type(),
                    b.value_type(),
                    position,
                ));
            }
        })
    }

    /// `count([Wait] > 8 min)`: how many of the column's `values` pass the filter, its limit converted into the
    /// column's unit when written with one.
    fn rows_passing(
        &mut self,
        values: &[f64],
        filter: &RowFilter,
        column: &ColumnRef,
        position: usize,
    ) -> Result<CalcValue, CalcError> {
        let limit = self.limit(&filter.limit, column, Function::Count, filter.op, position)?;
        // Each row compared as a comparison node compares, float noise included.
        let passing = values
            .iter()
            .filter(|&&v| compare(filter.op, v, limit))
            .count();
        Ok(CalcValue::Number(passing as f64))
    }

    /// `mean([Wait]) <= 5 min` (either side): the measured side evaluated, the limit converted into its
    /// column's unit, then compared as numbers are.
    fn compare_with_quantity(
        &mut self,
        op: BinOp,
        left: &Expr,
        right: &Expr,
    ) -> Result<CalcValue, CalcError> {
        let (measured, quantity, limit_on_right) = match (left, right) {
            (_, Expr::Quantity { .. }) => (left, right, true),
            _ => (right, left, false),
        };
        let Expr::ColumnCall {
            function,
            column,
            filter: None,
            ..
        } = measured
        else {
            // The parser places a quantity beside a column's aggregate only.
            return Err(CalcError::UnitWithoutColumn {
                quantity: quantity.to_string(),
                position: quantity_position(quantity),
            });
        };
        let CalcValue::Number(value) = self.eval(measured)? else {
            return Err(binary_type_error(
                op,
                ValueType::Boolean,
                ValueType::Number,
                quantity_position(quantity),
            ));
        };
        let limit = self.limit(quantity, column, *function, op, quantity_position(quantity))?;
        let (a, b) = if limit_on_right {
            (value, limit)
        } else {
            (limit, value)
        };
        Ok(CalcValue::Boolean(compare(op, a, b)))
    }

    /// The number a limit stands for beside `column` as `function` measures it: a quantity (`5 min`) converted
    /// into the column's unit, anything else evaluated as it is.
    fn limit(
        &mut self,
        limit: &Expr,
        column: &ColumnRef,
        function: Function,
        op: BinOp,
        position: usize,
    ) -> Result<f64, CalcError> {
        match limit {
            Expr::Quantity {
                value,
                unit,
                position,
            } => self.quantity_in_unit_of(limit, *value, unit, *position, column, function),
            _ => self.number(limit, op, position),
        }
    }

    /// The number `expr` evaluates to; a boolean where `op` needs a number is its type error.
    fn number(&mut self, expr: &Expr, op: BinOp, position: usize) -> Result<f64, CalcError> {
        match self.eval(expr)? {
            CalcValue::Number(x) => Ok(x),
            CalcValue::Boolean(_) => Err(binary_type_error(
                op,
                ValueType::Number,
                ValueType::Boolean,
                position,
            )),
        }
    }

    /// `quantity` (`value` `unit`, written at `position`) in the unit of `column` (resolved here if it was
    /// not yet) as `function` measures it: a total of an offset unit (a temperature) converts otherwise than
    /// one value, so it is refused. A column that states no unit takes the quantity's, as a bare limit beside
    /// a unit is read.
    fn quantity_in_unit_of(
        &mut self,
        quantity: &Expr,
        value: f64,
        unit: &str,
        position: usize,
        column: &ColumnRef,
        function: Function,
    ) -> Result<f64, CalcError> {
        self.column(column, position)?;
        let column_unit = self
            .used
            .iter()
            .find(|u| u.reference == *column)
            .and_then(|u| u.column.unit.clone());
        let aligned = forge_language::units::align_limit(
            value,
            Some(unit),
            column_unit.as_deref(),
            function == Function::Sum,
        )
        .map_err(|error| CalcError::UnitNotComparable {
            quantity: quantity.to_string(),
            reference: column.to_string(),
            error: Box::new(error),
            position,
        })?;
        bounded(aligned.value, position)
    }
}

/// Where a quantity was written (0 for any other node).
fn quantity_position(expr: &Expr) -> usize {
    match expr {
        Expr::Quantity { position, .. } => *position,
        _ => 0,
    }
}

/// A number comparison with float noise ignored (see [`super::COMPARISON_TOLERANCE`]); `op` is one of the
/// six comparison operators (anything else is false).
fn compare(op: BinOp, a: f64, b: f64) -> bool {
    match op {
        BinOp::Equal => same_number(a, b),
        BinOp::NotEqual => !same_number(a, b),
        BinOp::Less => a < b && !same_number(a, b),
        BinOp::LessEqual => a < b || same_number(a, b),
        BinOp::Greater => a > b && !same_number(a, b),
        BinOp::GreaterEqual => a > b || same_number(a, b),
        _ => false,
    }
}
