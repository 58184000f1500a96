//! Consistency of an action with the evidence it builds on, checked before the tool runs: a chart whose
//! average line is an aggregate computed over one observed column must draw that column's values, and a
//! comparison over observed columns must be one the data can decide (`mean([Wait]) <= max([Wait])` is true
//! whatever the column holds, so as a rule check it checks nothing).
//!
//! Read by shape, not by tool name: any action with a numeric `average` and a numeric `values` list (or a
//! `column` reference) is a chart with a reference line, and any successful result with a numeric `value` and exactly one entry in
//! `columns` (`{name, rows, values}`, what the calculator writes for `mean([Hotel | Occupancy])`) is an
//! aggregate of that column. Where the line's value comes from nowhere the ledger can trace (a target, a
//! calculation over listed numbers), nothing is claimed and nothing is checked.

use serde_json::{Map, Value};

use crate::observe::ObservationRecord;
use forge_tools::calculator::{
    self, CalcValue, ColumnError, ColumnRef, ColumnSource, ColumnUse, Expr, Function,
    ResolvedColumn, TableColumns,
};

/// Why an action contradicts the evidence it draws on; recoverable, the message says what would agree.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct Inconsistency {
    /// Stable snake_case code (`chart_average_of_other_column`).
    pub code: &'static str,
    pub message: String,
}

/// An aggregate the ledger traces to one column.
struct ColumnAggregate<'a> {
    observation: &'a str,
    expression: &'a str,
    rows: &'a str,
    name: &'a str,
    values: Vec<f64>,
}

/// Checks `arguments` against the successful observations in `records`.
pub fn check<'a>(
    arguments: &Map<String, Value>,
    records: impl IntoIterator<Item = &'a ObservationRecord>,
) -> Result<(), Inconsistency> {
    let records: Vec<&ObservationRecord> = records.into_iter().filter(|r| r.ok).collect();
    data_decides(arguments, &records)?;
    chart_line_agrees(arguments, &records)
}

/// A chart's average line, when the ledger traces it to one column, is drawn over that column's values.
fn chart_line_agrees(
    arguments: &Map<String, Value>,
    records: &[&ObservationRecord],
) -> Result<(), Inconsistency> {
    let Some(average) = arguments.get("average").and_then(Value::as_f64) else {
        return Ok(());
    };
    // The bars as listed, or the column they are drawn from by reference (`column: "[Hotel | Occupancy]"`).
    let bars = arguments
        .get("values")
        .and_then(Value::as_array)
        .and_then(|v| v.iter().map(Value::as_f64).collect::<Option<Vec<f64>>>());
    let referenced = arguments
        .get("column")
        .and_then(Value::as_str)
        .and_then(|text| ColumnRef::parse(text).ok());
    if bars.is_none() && referenced.is_none() {
        return Ok(());
    }
    let sources: Vec<ColumnAggregate> = records
        .iter()
        .filter_map(|r| column_aggregate(r, average))
        .collect();
    let agrees = |s: &ColumnAggregate| match (&bars, &referenced) {
        (Some(bars), _) => same_values(&s.values, bars),
        (None, Some(reference)) => {
            let fold = |t: &str| {
                t.split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" ")
                    .to_lowercase()
            };
            fold(&reference.name) == fold(s.name)
                && reference
                    .rows
                    .as_deref()
                    .is_none_or(|rows| fold(rows) == fold(s.rows))
        }
        (None, None) => true,
    };
    if sources.is_empty() || sources.iter().any(agrees) {
        return Ok(());
    }
    let source = &sources[0];
    Err(Inconsistency {
        code: "chart_average_of_other_column",
        message: format!(
            "the average line {average} is {} ({}), computed over the {} column of the {} rows, but the bars \
             are other values; chart that column's values or leave the average line out",
            source.expression, source.observation, source.name, source.rows
        ),
    })
}

/// A comparison over observed columns (`expression`) whose truth comes out the same for every data the
/// columns could hold is refused: it tests the expression, not the data. Decided by evaluating it again with
/// each referenced column's values replaced by synthetic ones (constants from -10⁴ to 10⁴, rising and falling
/// ramps, alternating signs; every pair of them over the first two columns): if no replacement changes the
/// truth, no data can. Comparisons of numbers written by value, and any that count a column's rows (a row
/// count does not move with the values), are left to the tool.
fn data_decides(
    arguments: &Map<String, Value>,
    records: &[&ObservationRecord],
) -> Result<(), Inconsistency> {
    let Some(text) = arguments.get("expression").and_then(Value::as_str) else {
        return Ok(());
    };
    // An expression the calculator cannot parse or evaluate is the tool's to report.
    let Ok(expr) = calculator::parse(text) else {
        return Ok(());
    };
    if counts_rows(&expr) {
        return Ok(());
    }
    let columns = TableColumns::from_results(records.iter().filter_map(|r| r.result.as_ref()));
    let Ok(real) = calculator::eval_with(&expr, &columns) else {
        return Ok(());
    };
    let CalcValue::Boolean(truth) = real.value else {
        return Ok(());
    };
    if real.columns.is_empty() {
        return Ok(());
    }
    for picks in synthetic_picks(real.columns.len()) {
        let source = Synthetic {
            real: &real.columns,
            picks: &picks,
        };
        if let Ok(again) = calculator::eval_with(&expr, &source)
            && again.value != CalcValue::Boolean(truth)
        {
            return Ok(());
        }
    }
    let references: Vec<String> = real
        .columns
        .iter()
        .map(|u| u.reference.to_string())
        .collect();
    Err(Inconsistency {
        code: "check_ignores_data",
        message: format!(
            "`{}` is {truth} whatever values {} hold, so it checks nothing about the data; a rule check \
             compares what the rule limits (an aggregate of a column) with the limit the knowledge states",
            text.trim(),
            references.join(" and ")
        ),
    })
}

/// Whether `expr` counts a column's rows without a row condition (`count([Wait])`).
fn counts_rows(expr: &Expr) -> bool {
    match expr {
        Expr::Number(_) | Expr::Boolean(_) => false,
        Expr::Unary { operand, .. } => counts_rows(operand),
        Expr::Binary { left, right, .. } => counts_rows(left) || counts_rows(right),
        Expr::Call { arguments, .. } => arguments.iter().any(counts_rows),
        Expr::ColumnCall {
            function, filter, ..
        } => *function == Function::Count && filter.is_none(),
    }
}

/// How many kinds of synthetic column [`synthetic_values`] makes.
const SYNTHETIC_KINDS: usize = 8;

/// Per trial, the synthetic kind of each referenced column: every kind for one column; every pair of kinds
/// over the first two (the rest cycling), so one column can be high while another is low.
fn synthetic_picks(columns: usize) -> Vec<Vec<usize>> {
    if columns == 1 {
        return (0..SYNTHETIC_KINDS).map(|k| vec![k]).collect();
    }
    let mut trials = Vec::new();
    for a in 0..SYNTHETIC_KINDS {
        for b in 0..SYNTHETIC_KINDS {
            let mut picks = vec![a, b];
            picks.extend((2..columns).map(|j| (a + b + j) % SYNTHETIC_KINDS));
            trials.push(picks);
        }
    }
    trials
}

/// `n` values of synthetic `kind`.
fn synthetic_values(kind: usize, n: usize) -> Vec<f64> {
    let constant = |c: f64| vec![c; n];
    match kind {
        0 => constant(-1e4),
        1 => constant(-1.0),
        2 => constant(0.0),
        3 => constant(1.0),
        4 => constant(1e4),
        5 => (1..=n).map(|i| i as f64).collect(),
        6 => (1..=n).rev().map(|i| i as f64).collect(),
        _ => (0..n)
            .map(|i| if i % 2 == 0 { 1e4 } else { -1e4 })
            .collect(),
    }
}

/// The observed columns with their values replaced by synthetic ones (same rows, same count).
struct Synthetic<'a> {
    real: &'a [ColumnUse],
    picks: &'a [usize],
}

impl ColumnSource for Synthetic<'_> {
    fn column(&self, reference: &ColumnRef) -> Result<ResolvedColumn, ColumnError> {
        let (i, used) = self
            .real
            .iter()
            .enumerate()
            .find(|(_, u)| u.reference == *reference)
            .ok_or_else(|| ColumnError::Unknown {
                reference: reference.to_string(),
                available: Vec::new(),
            })?;
        Ok(ResolvedColumn {
            values: synthetic_values(self.picks[i], used.column.values.len()),
            ..used.column.clone()
        })
    }
}

/// `record` as an aggregate of one column whose value is `average` (at the precision `average` is written to).
fn column_aggregate(record: &ObservationRecord, average: f64) -> Option<ColumnAggregate<'_>> {
    let result = record.result.as_ref()?;
    let value = result.get("value")?.as_f64()?;
    if !agrees_at_written_precision(value, average) {
        return None;
    }
    let [column] = result.get("columns")?.as_array()?.as_slice() else {
        return None;
    };
    let values = column["values"]
        .as_array()?
        .iter()
        .map(Value::as_f64)
        .collect::<Option<Vec<f64>>>()?;
    Some(ColumnAggregate {
        observation: &record.id,
        expression: result["expression"].as_str().unwrap_or_default(),
        rows: column["rows"].as_str().unwrap_or_default(),
        name: column["name"].as_str().unwrap_or_default(),
        values,
    })
}

/// `78.33` agrees with 78.3333…; `78` with 78.0 and 78.4 (a rounding), not with 81.33.
fn agrees_at_written_precision(exact: f64, written: f64) -> bool {
    let decimals = forge_language::numbers::canonical(written)
        .split_once('.')
        .map_or(0, |(_, fraction)| fraction.len() as i32);
    (exact - written).abs() <= 0.5 * 10f64.powi(-decimals) + 1e-9
}

/// The same numbers, in any order (a chart may sort its bars).
fn same_values(column: &[f64], bars: &[f64]) -> bool {
    let sorted = |v: &[f64]| {
        let mut v = v.to_vec();
        v.sort_by(f64::total_cmp);
        v
    };
    column.len() == bars.len()
        && sorted(column)
            .iter()
            .zip(sorted(bars))
            .all(|(a, b)| (a - b).abs() < 1e-9)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn record(id: &str, result: Value) -> ObservationRecord {
        ObservationRecord::for_test(id, "calculator", true, result)
    }

    fn hotels_mean() -> ObservationRecord {
        record(
            "obs-calculator-2",
            json!({"expression": "mean([Hotel | Occupancy])", "value": 78,
                   "columns": [{"reference": "[Hotel | Occupancy]", "name": "Occupancy", "rows": "Hotel",
                                "used": 5, "missing": [], "values": [82, 78.5, 63.5, 80, 86]}]}),
        )
    }

    fn chart(values: Value, average: f64) -> Map<String, Value> {
        json!({"labels": ["a"], "values": values, "title": "t", "average": average})
            .as_object()
            .unwrap()
            .clone()
    }

    fn clinic_table() -> ObservationRecord {
        ObservationRecord::for_test(
            "obs-knowledge_search-1",
            "knowledge_search",
            true,
            json!({"data": {"tables": [{"label_column": "Clinic",
                "columns": [{"name": "Wait"}, {"name": "Staff"}], "rows": [
                {"label": "A", "values": {"Wait": 28, "Staff": 6}},
                {"label": "B", "values": {"Wait": 38, "Staff": 4}},
                {"label": "C", "values": {"Wait": 31.5, "Staff": 5}}]}]}}),
        )
    }

    fn expression(text: &str) -> Map<String, Value> {
        json!({ "expression": text }).as_object().unwrap().clone()
    }

    #[test]
    fn a_comparison_no_data_can_change_is_refused_naming_the_columns() {
        let table = clinic_table();
        for vacuous in [
            "mean([Wait]) <= max([Wait])",
            "min([Wait]) <= mean([Wait]) and max([Wait]) >= min([Wait])",
            "mean([Wait]) <= 30 or mean([Wait]) > 30",
        ] {
            let refused = check(&expression(vacuous), [&table]).expect_err(vacuous);
            assert_eq!(refused.code, "check_ignores_data", "{vacuous}");
            assert!(refused.message.contains("[Wait]"), "{}", refused.message);
        }
    }

    #[test]
    fn comparisons_the_data_decides_pass_and_so_do_counts_and_numbers_written_by_value() {
        let table = clinic_table();
        for decided in [
            "mean([Wait]) <= 30 and max([Wait]) <= 40",
            "mean([Wait]) >= 1310",
            "mean([Wait]) <= mean([Staff])",
            "max([Wait]) - min([Wait]) <= 12",
            "count([Wait] > 35) <= 1",
            // A row count does not move with the values: not judged here.
            "count([Wait]) >= 3",
            // Numbers by value: the calculator's to evaluate, nothing to judge here.
            "32 <= 30 and 38 <= 40",
            "mean([Wait])",
        ] {
            assert_eq!(check(&expression(decided), [&table]), Ok(()), "{decided}");
        }
    }

    #[test]
    fn a_chart_by_reference_must_reference_the_column_its_average_was_computed_over() {
        let records = [hotels_mean()];
        let by_reference = |column: &str| {
            json!({"column": column, "title": "t", "average": 78})
                .as_object()
                .unwrap()
                .clone()
        };
        assert_eq!(
            check(&by_reference("[Hotel | Occupancy]"), &records),
            Ok(())
        );
        assert_eq!(check(&by_reference("[occupancy]"), &records), Ok(()));
        let error = check(&by_reference("[Month | Occupancy]"), &records).unwrap_err();
        assert_eq!(error.code, "chart_average_of_other_column");
        assert!(check(&by_reference("[Rooms]"), &records).is_err());
    }

    #[test]
    fn a_chart_of_the_column_its_average_was_computed_over_agrees() {
        let records = [hotels_mean()];
        assert_eq!(
            check(&chart(json!([82, 78.5, 63.5, 80, 86]), 78.0), &records),
            Ok(())
        );
        // Sorted bars are the same column.
        assert_eq!(
            check(&chart(json!([63.5, 78.5, 80, 82, 86]), 78.0), &records),
            Ok(())
        );
    }

    #[test]
    fn a_chart_of_another_column_under_that_average_is_refused_naming_the_calculation() {
        // Occupancy by month under the hotels' average: the chart a 0.5B model drew, once certified.
        let error = check(&chart(json!([84.5, 88.0, 71.5]), 78.0), &[hotels_mean()]).unwrap_err();
        assert_eq!(error.code, "chart_average_of_other_column");
        assert!(
            error
                .message
                .contains("mean([Hotel | Occupancy]) (obs-calculator-2)"),
            "{}",
            error.message
        );
    }

    #[test]
    fn a_line_the_ledger_cannot_trace_is_not_checked() {
        // A target line, and an average of listed numbers: no column is claimed.
        let listed = record(
            "obs-calculator-1",
            json!({"expression": "mean(1, 2)", "value": 1.5}),
        );
        assert_eq!(
            check(&chart(json!([84.5, 88.0]), 75.0), &[hotels_mean()]),
            Ok(())
        );
        assert_eq!(check(&chart(json!([84.5, 88.0]), 1.5), &[listed]), Ok(()));
        // No average line, or values that are not numbers: nothing to check.
        let mut no_line = chart(json!([84.5]), 78.0);
        no_line.remove("average");
        assert_eq!(check(&no_line, &[hotels_mean()]), Ok(()));
        assert_eq!(check(&chart(json!(["x"]), 78.0), &[hotels_mean()]), Ok(()));
    }

    #[test]
    fn precision_is_the_written_one() {
        assert!(agrees_at_written_precision(78.3333, 78.33));
        assert!(agrees_at_written_precision(78.4, 78.0));
        assert!(!agrees_at_written_precision(81.33, 78.0));
        assert!(agrees_at_written_precision(-1.2, -1.2));
        assert!(!agrees_at_written_precision(-1.2, 1.2));
    }
}
