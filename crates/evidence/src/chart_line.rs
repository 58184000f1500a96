//! Consistency of an action with the evidence it builds on, checked before the tool runs: a chart whose
//! average line is an aggregate computed over one observed column must draw that column's values.
//!
//! Read by shape, not by tool name: any action with a numeric `average` and a numeric `values` list (or a
//! `column` reference) is a chart with a reference line, and any successful result with a numeric `value` and exactly one entry in
//! `columns` (`{name, rows, values}`, what the calculator writes for `mean([Hotel | Occupancy])`) is an
//! aggregate of that column. Where the line's value comes from nowhere the ledger can trace (a target, a
//! calculation over listed numbers), nothing is claimed and nothing is checked.

use serde_json::{Map, Value};

use crate::ledger::ObservationRecord;

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
        .and_then(|text| forge_tools::calculator::ColumnRef::parse(text).ok());
    if bars.is_none() && referenced.is_none() {
        return Ok(());
    }
    let sources: Vec<ColumnAggregate> = records
        .into_iter()
        .filter(|r| r.ok)
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

/// `78.33` agrees with 78.3333…, `78.4` with 78.43, `78` only with 78 itself: the one printed-rounding rule
/// of [`forge_language::numbers::stands_for`], the same the claims gate and the grammar's printed forms use.
fn agrees_at_written_precision(exact: f64, written: f64) -> bool {
    let decimals = forge_language::numbers::canonical(written)
        .split_once('.')
        .map_or(0, |(_, fraction)| fraction.len() as u32);
    forge_language::numbers::stands_for(written, decimals, exact)
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
        assert!(agrees_at_written_precision(78.43, 78.4));
        // A whole number stands only for itself (numbers::stands_for): 78 is not a rounding of 78.4.
        assert!(!agrees_at_written_precision(78.4, 78.0));
        assert!(agrees_at_written_precision(78.0, 78.0));
        assert!(!agrees_at_written_precision(81.33, 78.0));
        assert!(agrees_at_written_precision(-1.2, -1.2));
        assert!(!agrees_at_written_precision(-1.2, 1.2));
    }
}
