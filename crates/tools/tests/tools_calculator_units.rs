//! Calculator limits written with their unit: `mean([Wait]) <= 5 min` converts the limit into the unit the
//! table states for the column before comparing, either side of the comparison and in a row filter; a limit
//! whose unit measures something else, a total of temperatures, or a unit with no column beside it is a
//! typed error with a stable code, never a raw comparison.

use forge_tools::calculator::{self, CalcError, CalcValue, ColumnTable, TableColumns};
use pretty_assertions::assert_eq;

/// Stores with waits in seconds (270, 250, 240, 420, 285: mean 293), fridges in °F, a count without a unit.
fn ledger() -> TableColumns {
    let table = |rows: &str, name: &str, unit: Option<&str>, values: &[f64]| ColumnTable {
        rows_label: rows.to_owned(),
        labels: (0..values.len()).map(|i| format!("{rows} {i}")).collect(),
        columns: vec![(name.to_owned(), values.iter().map(|v| Some(*v)).collect())],
        units: unit
            .map(|u| vec![(name.to_owned(), u.to_owned())])
            .unwrap_or_default(),
    };
    TableColumns {
        tables: vec![
            table(
                "Store",
                "Queue wait",
                Some("s"),
                &[270.0, 250.0, 240.0, 420.0, 285.0],
            ),
            table("Fridge", "Temperature", Some("°F"), &[39.2, 41.0, 44.6]),
            table("Depot", "Tills", None, &[8.0, 11.0, 7.0]),
        ],
    }
}

fn holds(expression: &str) -> bool {
    match calculator::evaluate_with(expression, &ledger()) {
        Ok(evaluation) => match evaluation.value {
            CalcValue::Boolean(b) => b,
            other => panic!("{expression}: expected a boolean, got {other:?}"),
        },
        Err(error) => panic!("{expression}: {error}"),
    }
}

fn error(expression: &str) -> CalcError {
    calculator::evaluate_with(expression, &ledger()).expect_err(expression)
}

#[test]
fn a_limit_in_minutes_is_compared_with_seconds_after_conversion() {
    // 293 s is 4.9 min: within 5 minutes; 420 s is 7 min: within 8 minutes. Compared raw, both fail.
    assert!(holds(
        "mean([Queue wait]) <= 5 min and max([Queue wait]) <= 8 minutes"
    ));
    assert!(!holds("mean([Queue wait]) <= 5 and max([Queue wait]) <= 8"));
    assert!(!holds("mean([Queue wait]) <= 4.5 min"));
    // Either side, any spelling the vocabulary knows, glued or spaced.
    assert!(holds("5 min >= mean([Queue wait])"));
    assert!(holds("mean([Queue wait]) <= 5分钟"));
    assert!(holds("mean([Queue wait]) < 0.1 h"));
}

#[test]
fn a_row_filter_converts_its_limit_into_the_column_s_unit() {
    // Only Old Town (420 s = 7 min) waits more than 6 minutes.
    assert!(holds("count([Queue wait] > 6 min) <= 1"));
    assert!(!holds("count([Queue wait] > 4 min) <= 1"));
}

#[test]
fn a_temperature_limit_converts_with_its_offset() {
    // 8 °C is 46.4 °F: the warmest fridge (44.6 °F) is below it; 5 °C is 41 °F, the mean is 41.6 °F.
    assert!(holds("max([Temperature]) <= 8 °C"));
    assert!(!holds("mean([Temperature]) <= 5 °C"));
    assert!(holds("min([Temperature]) >= -1 °C"));
}

#[test]
fn units_that_measure_different_things_are_refused_by_name() {
    let e = error("mean([Queue wait]) <= 5 kg");
    assert_eq!(e.code(), "unit_not_comparable");
    assert!(e.to_string().contains("[Queue wait]"), "{e}");
    // A total of temperatures converts otherwise than one temperature.
    assert_eq!(
        error("sum([Temperature]) <= 20 °C").code(),
        "unit_not_comparable"
    );
}

#[test]
fn a_unit_without_a_column_beside_it_is_refused() {
    for expression in [
        "5 min <= 6",
        "mean([Queue wait]) <= 5 min * 60",
        "mean(5 min, 6) > 1",
        "count([Queue wait]) <= 2 min",
        "sum([Queue wait]) / 5 <= 2 min",
    ] {
        let e = calculator::parse(expression).expect_err(expression);
        assert_eq!(e.code(), "unit_without_column", "{expression}: {e}");
    }
}

#[test]
fn a_column_without_a_unit_takes_the_limit_s_as_a_bare_limit_would() {
    assert!(holds("max([Tills]) <= 11 %"));
}

#[test]
fn a_word_that_is_no_unit_is_still_a_forbidden_token() {
    for expression in ["mean([Queue wait]) <= 5 parsecs", "1e5", "5 min2 > 1"] {
        let e = calculator::parse(expression).expect_err(expression);
        assert_eq!(e.code(), "forbidden_token", "{expression}: {e}");
    }
    // The calculator's own words after a number are read as themselves.
    assert!(holds(
        "mean([Queue wait]) <= 300 and max([Queue wait]) <= 480"
    ));
}

#[test]
fn a_quantity_renders_with_its_unit_s_symbol_and_parses_back() {
    let expr = calculator::parse("mean([Queue wait]) <= 5 minutes and min([Temperature]) >= -1 °C")
        .unwrap();
    let rendered = expr.to_string();
    assert_eq!(
        rendered,
        "((mean([Queue wait]) <= 5 min) and (min([Temperature]) >= (-1 °C)))"
    );
    assert_eq!(
        calculator::parse(&rendered).unwrap(),
        calculator::parse(&rendered).unwrap()
    );
    assert_eq!(calculator::parse(&rendered).unwrap().to_string(), rendered);
}

#[test]
fn the_units_a_grammar_may_offer_are_the_ones_read_as_one_word() {
    for unit in ["min", "minutes", "克", "%", "°C", "£", "‰"] {
        assert!(calculator::reads_as_unit(unit), "{unit}");
    }
    for text in ["mg/L", "per cent", "parsecs", "and", "min2", ""] {
        assert!(!calculator::reads_as_unit(text), "{text}");
    }
}
