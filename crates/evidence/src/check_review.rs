//! Where a model's rule check parts from the rules the cited knowledge states, limit by limit: the words a
//! disputed verdict's repair note uses to name the check that failed — which limit, and how the model's
//! comparison treats it — never a value or a row the runtime computed.
//!
//! The model's expression is read as the calculator reads it (`forge_tools::calculator::parse`), its
//! comparisons joined by `and` taken one by one, and each rule's own calculator term (what
//! [`rules::calculator_terms`] would write) compared with them by their canonical rendering.

use forge_tools::calculator::{self, BinOp, CalcValue, Expr, TableColumns, normalize_name};
use serde_json::Value;

use crate::rules::{self, Comparison, FactRule, Measure};

/// One comparison of the model's check with a number on one side: what it measures (canonical text), the
/// comparison read with the measured side on the left, and the number.
struct Compared {
    /// Canonical, for matching: `mean([wait])`.
    measured: String,
    /// As the calculator renders it, for the note: `mean([Wait])`.
    shown: String,
    /// The measured side is a number written out (`32 <= 30`): what it measures cannot be told.
    written_out: bool,
    op: BinOp,
    limit: f64,
}

/// The model's comparisons joined by `and` (or `or`, which the returned value reports), each with its number
/// on the right (of two numbers, the right one). A limit written with its unit (`5 min`) is its number in the
/// unit of the column it is compared with, as the calculator converted it over `columns`.
fn comparisons(expr: &Expr, columns: &TableColumns, out: &mut Vec<Compared>) -> bool {
    match expr {
        Expr::Binary {
            op: op @ (BinOp::And | BinOp::Or),
            left,
            right,
            ..
        } => {
            let left_or = comparisons(left, columns, out);
            let right_or = comparisons(right, columns, out);
            *op == BinOp::Or || left_or || right_or
        }
        Expr::Binary {
            op, left, right, ..
        } if BinOp::COMPARISON.contains(op) => {
            let number = |e: &Expr, other: &Expr| match e {
                Expr::Quantity { .. } => calculator::limit_value(e, other, columns).ok(),
                _ => match calculator::eval(e) {
                    Ok(CalcValue::Number(n)) => Some(n),
                    _ => None,
                },
            };
            match (number(left, right), number(right, left)) {
                (measured, Some(limit)) => out.push(Compared {
                    measured: canonical(left),
                    shown: left.to_string(),
                    written_out: measured.is_some(),
                    op: *op,
                    limit,
                }),
                (Some(limit), None) => out.push(Compared {
                    measured: canonical(right),
                    shown: right.to_string(),
                    written_out: false,
                    op: mirrored(*op),
                    limit,
                }),
                (None, None) => {}
            }
            false
        }
        _ => false,
    }
}

/// `5 >= mean([Wait])` read as `mean([Wait]) <= 5`.
fn mirrored(op: BinOp) -> BinOp {
    match op {
        BinOp::Less => BinOp::Greater,
        BinOp::LessEqual => BinOp::GreaterEqual,
        BinOp::Greater => BinOp::Less,
        BinOp::GreaterEqual => BinOp::LessEqual,
        other => other,
    }
}

/// The rule comparison a calculator comparison is, if any (`==` and `!=` are none).
fn comparison_of(op: BinOp) -> Option<Comparison> {
    match op {
        BinOp::GreaterEqual => Some(Comparison::AtLeast),
        BinOp::Greater => Some(Comparison::Above),
        BinOp::LessEqual => Some(Comparison::AtMost),
        BinOp::Less => Some(Comparison::Below),
        _ => None,
    }
}

/// An expression as the calculator renders it, in lowercase with its spaces collapsed: `mean([wait])`.
fn canonical(expr: &Expr) -> String {
    normalize_name(&expr.to_string())
}

fn same(a: f64, b: f64) -> bool {
    (a - b).abs() <= forge_language::numbers::COMPARISON_TOLERANCE * a.abs().max(b.abs()).max(1.0)
}

/// What one rule limits, in words over the column reference: `the mean of [Wait]`, `every row of [Wait]
/// on its own`, `how many rows of [Wait] are > 7`.
fn limited(rule: &FactRule, written: &FactRule, reference: &str) -> String {
    let shown = forge_language::numbers::canonical;
    match (&rule.measure, &written.measure) {
        (Measure::Of(aggregate), _) => match aggregate.function() {
            "mean" => format!("the mean of {reference}"),
            "sum" => format!("the total of {reference}"),
            function => format!("the {function} of {reference}"),
        },
        (Measure::EachRow, _) => format!("every row of {reference} on its own"),
        (Measure::CountRows { row, .. }, Measure::CountRows { limit, .. }) => format!(
            "how many rows of {reference} are {} {}{}",
            row.symbol(),
            shown(*limit),
            written.unit.as_deref().unwrap_or_default()
        ),
        (Measure::CountRows { row, limit }, _) => {
            format!(
                "how many rows of {reference} are {} {}",
                row.symbol(),
                shown(*limit)
            )
        }
        (
            Measure::RatioOfTotals {
                numerator,
                denominator,
                ..
            },
            _,
        ) => format!("the total of [{numerator}] over the total of [{denominator}]"),
    }
}

/// The numbers a comparison may use for one rule: its limit in the column's unit and as written, and for a
/// count of rows the row condition's limit too.
fn limit_numbers(rule: &FactRule, as_written: &FactRule) -> Vec<f64> {
    let mut numbers = vec![rule.threshold, as_written.threshold];
    if let (Measure::CountRows { limit: a, .. }, Measure::CountRows { limit: b, .. }) =
        (&rule.measure, &as_written.measure)
    {
        numbers.extend([*a, *b]);
    }
    numbers
}

/// Where the rule check `expression` parts from the rules `result` states, one sentence per limit it
/// leaves out or compares otherwise than the rule (another quantity, a limit not converted to the column's
/// unit, another number, another direction). Empty when the rules are not read with one clear column, the
/// expression does not parse, or it follows every rule. `context` is the task's text (see
/// [`rules::column_values`]).
pub fn differences(result: &Value, context: &str, expression: &str) -> Vec<String> {
    let Ok(expr) = calculator::parse(expression) else {
        return Vec::new();
    };
    let written = rules::rules_in(result);
    let Some((aligned, column)) = rules::aligned_with_column(result, &written, context) else {
        return Vec::new();
    };
    let mut compared = Vec::new();
    let columns = TableColumns::from_results([result]);
    let joined_by_or = comparisons(&expr, &columns, &mut compared);
    let review = Review {
        result,
        reference: column
            .as_ref()
            .map(|name| rules::column_reference(result, name)),
        column,
        compared,
        numbers: aligned
            .iter()
            .zip(&written)
            .map(|((rule, _), as_written)| limit_numbers(rule, as_written))
            .collect(),
    };
    let mut out = Vec::new();
    if joined_by_or && written.len() > 1 {
        out.push(
            "it joins limits with `or`, where the rule needs every limit to hold (`and`)"
                .to_owned(),
        );
    }
    for (index, ((rule, note), as_written)) in aligned.iter().zip(&written).enumerate() {
        out.extend(review.of_limit(index, rule, !note.is_empty(), as_written));
    }
    out
}

/// What one review compares: the model's comparisons beside the rules' column and each rule's numbers.
struct Review<'a> {
    result: &'a Value,
    column: Option<String>,
    /// The column by reference (`[Wait]`), as the rules' calculator terms write it.
    reference: Option<String>,
    compared: Vec<Compared>,
    /// Per rule, in rule order: the numbers a comparison may use for it ([`limit_numbers`]).
    numbers: Vec<Vec<f64>>,
}

impl Review<'_> {
    /// How the model's check treats rule `index` (`rule` in the column's unit, `converted` when its limit was
    /// brought there, `as_written` as the knowledge states it), if otherwise than the rule.
    fn of_limit(
        &self,
        index: usize,
        rule: &FactRule,
        converted: bool,
        as_written: &FactRule,
    ) -> Option<String> {
        let term = rules::measured_term(self.result, rule, self.reference.as_deref())?;
        let term = calculator::parse(&term).map_or(normalize_name(&term), |e| canonical(&e));
        let reference = self.reference.as_deref().unwrap_or("the column");
        let what = limited(rule, as_written, reference);
        let key = &rule.key;
        let numbers = &self.numbers[index];
        // Of the comparisons measuring what the rule does, the one with its number (a range is two rules
        // on one term: `mean >= 60` and `mean <= 75`).
        let on_term = || self.compared.iter().filter(|c| c.measured == term);
        let by_term = on_term()
            .find(|c| numbers.iter().any(|n| same(c.limit, *n)))
            .or_else(|| on_term().next());
        let by_number = self
            .compared
            .iter()
            .find(|c| numbers.iter().any(|n| same(c.limit, *n)));
        let another_limits = |n: f64| {
            self.numbers
                .iter()
                .enumerate()
                .any(|(i, own)| i != index && own.iter().any(|m| same(n, *m)))
        };
        match (by_term, by_number) {
            (None, None) => Some(format!(
                "it leaves out the limit \"{key}\", a limit on {what}"
            )),
            // A number compared with the limit's number: the limit is there, what it limits cannot be told.
            (None, Some(c)) if c.written_out => None,
            (None, Some(c)) => Some(format!(
                "it compares `{}` with the limit \"{key}\", a limit on {what}",
                c.shown
            )),
            (Some(c), _) if !same(c.limit, rule.threshold) => {
                Some(if same(c.limit, as_written.threshold) && converted {
                    let column_unit = self
                        .column
                        .as_ref()
                        .and_then(|name| rules::column_unit(self.result, name))
                        .unwrap_or_default();
                    let unit = as_written.unit.as_deref().unwrap_or_default();
                    // How to write it so: the limit as the knowledge states it, with its unit, which the
                    // calculator converts — the knowledge's own words, never the runtime's conversion.
                    format!(
                        "it compares {reference} (in {column_unit}) with the limit \"{key}\" as written (in {unit}), not converted to one unit; write the limit with its unit (`{} {unit}`) and the calculator converts it",
                        forge_language::numbers::canonical(as_written.threshold)
                    )
                } else if another_limits(c.limit) {
                    format!(
                        "it compares `{}` with the number of another limit, not with the one \"{key}\" sets",
                        c.shown
                    )
                } else {
                    format!(
                        "it compares `{}` with {}, which is not the limit \"{key}\" sets (a limit stated as a share of a quantity the knowledge gives, or as a change from one, is that share or change of it)",
                        c.shown,
                        forge_language::numbers::canonical(c.limit)
                    )
                })
            }
            (Some(c), _) if comparison_of(c.op) != Some(rule.comparison) => Some(format!(
                "it compares `{}` with {} where \"{key}\" is {} its limit",
                c.shown,
                c.op.symbol(),
                rule.comparison.symbol()
            )),
            (Some(_), _) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A knowledge result with one table of waits in seconds and the rule sentences given.
    fn result(rules: &[&str]) -> Value {
        let rows: Vec<Value> = [("Ash", 240.0), ("Birch", 330.0), ("Cedar", 270.0)]
            .iter()
            .map(|(l, v)| json!({"label": l, "values": {"Wait": v}}))
            .collect();
        json!({"data": {"tables": [{"label_column": "Store", "columns": [{"name": "Wait", "unit": "s"}], "rows": rows}],
            "facts": []},
            "citations": rules.iter().map(|r| json!({"text": r})).collect::<Vec<_>>()})
    }

    #[test]
    fn a_check_that_follows_every_limit_has_no_difference() {
        let r = result(&["The average wait must be at most 5 minutes."]);
        assert!(differences(&r, "the wait of each store", "mean([Wait]) <= 300").is_empty());
    }

    #[test]
    fn a_limit_compared_in_another_unit_is_named_without_the_converted_value() {
        let r = result(&["The average wait must be at most 5 minutes."]);
        let found = differences(&r, "the wait of each store", "mean([Wait]) <= 5");
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].contains("not converted"), "{found:?}");
        assert!(!found[0].contains("300"), "{found:?}");
        // The repair it names: the limit as the knowledge writes it, with its unit, for the calculator.
        assert!(found[0].contains("`5 minutes`"), "{found:?}");
    }

    #[test]
    fn a_limit_written_with_its_unit_is_read_as_the_calculator_converts_it() {
        let r = result(&[
            "The average wait must be at most 5 minutes.",
            "No store may have a wait above 6 minutes.",
        ]);
        let context = "the wait of each store";
        let check = "mean([Wait]) <= 5 minutes and max([Wait]) <= 6 min";
        assert!(differences(&r, context, check).is_empty());
        // Converted, a limit with another number is still another limit.
        let found = differences(
            &r,
            context,
            "mean([Wait]) <= 4 min and max([Wait]) <= 6 min",
        );
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].contains("`mean([Wait])` with 240"), "{found:?}");
    }

    #[test]
    fn a_limit_on_every_row_compared_with_the_mean_is_named() {
        let r = result(&["No store may have a wait above 6 minutes."]);
        let found = differences(&r, "the wait of each store", "mean([Wait]) <= 360");
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0].contains("a limit on every row of [Wait]"),
            "{found:?}"
        );
    }

    #[test]
    fn a_limit_left_out_and_a_direction_turned_are_each_named() {
        let r = result(&[
            "The average wait must be at most 5 minutes.",
            "No store may have a wait above 6 minutes.",
        ]);
        let found = differences(&r, "the wait of each store", "mean([Wait]) >= 300");
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(found[0].contains(">= where"), "{found:?}");
        assert!(found[1].contains("leaves out"), "{found:?}");
    }

    #[test]
    fn an_expression_the_calculator_cannot_parse_has_no_difference_to_name() {
        let r = result(&["The average wait must be at most 5 minutes."]);
        assert!(differences(&r, "the wait of each store", "mean([Wait] <= 5").is_empty());
    }
}
