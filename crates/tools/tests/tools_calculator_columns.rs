//! Calculator column references: `[Name]` and `[Rows | Name]` resolve through a
//! `ColumnSource` to one observed column's values, as an aggregate's only
//! argument; the result lists the columns used; every failure is a typed error
//! with a stable code.

use forge_tools::calculator::{
    self, CalcError, CalcValue, ColumnError, ColumnRef, ColumnSource, ColumnTable, NoColumns,
    TableColumns,
};
use pretty_assertions::assert_eq;
use serde_json::json;

fn table(rows: &str, labels: &[&str], columns: &[(&str, Vec<Option<f64>>)]) -> ColumnTable {
    ColumnTable {
        rows_label: rows.to_owned(),
        units: Vec::new(),
        labels: labels.iter().map(|l| (*l).to_owned()).collect(),
        columns: columns
            .iter()
            .map(|(name, cells)| ((*name).to_owned(), cells.clone()))
            .collect(),
    }
}

/// Clinics with a `Wait` column (one row missing), hotels and hostels sharing `Occupancy`.
fn ledger() -> TableColumns {
    TableColumns {
        tables: vec![
            table(
                "Clinic",
                &["North", "South", "East", "West"],
                &[
                    ("Wait", vec![Some(12.0), Some(15.5), Some(18.0), None]),
                    (
                        "Output per line",
                        vec![Some(3.0), Some(4.0), Some(5.0), Some(6.0)],
                    ),
                    ("满意度", vec![Some(4.5), Some(3.9), Some(4.1), Some(4.8)]),
                    ("Blank", vec![None, None, None, None]),
                ],
            ),
            table(
                "Hotel",
                &["A", "B"],
                &[("Occupancy", vec![Some(80.0), Some(90.0)])],
            ),
            table(
                "Hostel",
                &["C", "D", "E"],
                &[("Occupancy", vec![Some(50.0), Some(60.0), Some(70.0)])],
            ),
        ],
    }
}

fn number(expression: &str, source: &dyn ColumnSource) -> f64 {
    match calculator::evaluate_with(expression, source) {
        Ok(evaluation) => match evaluation.value {
            CalcValue::Number(x) => x,
            other => panic!("{expression}: expected a number, got {other:?}"),
        },
        Err(error) => panic!("{expression}: {error}"),
    }
}

fn error(expression: &str, source: &dyn ColumnSource) -> CalcError {
    calculator::evaluate_with(expression, source).expect_err(expression)
}

#[test]
fn column_mean_equals_the_mean_of_its_literal_values() {
    let source = ledger();
    assert_eq!(
        number("mean([Wait])", &source),
        number("mean(12, 15.5, 18)", &source)
    );
    assert_eq!(number("sum([Output per line])", &source), 18.0);
    assert_eq!(number("count([Wait])", &source), 3.0);
    assert_eq!(number("min([满意度])", &source), 3.9);
    assert_eq!(number("max([Wait]) - min([Wait])", &source), 6.0);
}

#[test]
fn column_rule_check_is_a_boolean() {
    let evaluation =
        calculator::evaluate_with("mean([Wait]) <= 30 and max([Wait]) <= 45", &ledger()).unwrap();
    assert_eq!(evaluation.value, CalcValue::Boolean(true));
    // One entry per distinct reference, however often it is used.
    assert_eq!(evaluation.columns.len(), 1);
}

#[test]
fn names_match_exactly_then_case_and_whitespace_insensitively() {
    let source = ledger();
    assert_eq!(
        number("mean([ wait ])", &source),
        number("mean([Wait])", &source)
    );
    assert_eq!(
        number("sum([output   PER line])", &source),
        number("sum([Output per line])", &source)
    );
    // The exact spelling wins over a looser match in another table.
    let mixed = TableColumns {
        tables: vec![
            table("Site", &["x"], &[("wait", vec![Some(1.0)])]),
            table("Clinic", &["y"], &[("Wait", vec![Some(2.0)])]),
        ],
    };
    assert_eq!(number("max([Wait])", &mixed), 2.0);
    assert_eq!(number("max([wait])", &mixed), 1.0);
    assert_eq!(
        error("max([WAIT])", &mixed).code(),
        "ambiguous_column",
        "two loose matches"
    );
}

#[test]
fn qualifier_picks_the_table_by_its_label_column() {
    let source = ledger();
    assert_eq!(number("mean([Hotel | Occupancy])", &source), 85.0);
    assert_eq!(number("mean([hostel|occupancy])", &source), 60.0);
    assert_eq!(number("count([Clinic | Wait])", &source), 3.0);
}

#[test]
fn ambiguous_column_lists_the_qualifiers() {
    let error = error("mean([Occupancy])", &ledger());
    assert_eq!(error.code(), "ambiguous_column");
    assert_eq!(
        error,
        CalcError::Column {
            error: ColumnError::Ambiguous {
                reference: "[Occupancy]".into(),
                qualifiers: vec!["[Hotel | Occupancy]".into(), "[Hostel | Occupancy]".into()],
            },
            position: 5,
        }
    );
    assert!(
        error
            .to_string()
            .contains("[Hotel | Occupancy], [Hostel | Occupancy]"),
        "{error}"
    );
}

#[test]
fn the_same_table_observed_twice_is_not_ambiguous() {
    let mut source = ledger();
    source.tables.push(source.tables[0].clone());
    assert_eq!(
        number("mean([Wait])", &source),
        number("mean(12, 15.5, 18)", &source)
    );
}

#[test]
fn unknown_column_lists_the_available_columns() {
    let error = error("mean([Delay])", &ledger());
    assert_eq!(error.code(), "unknown_column");
    let CalcError::Column {
        error: ColumnError::Unknown {
            reference,
            available,
        },
        position: 5,
    } = &error
    else {
        panic!("{error:?}");
    };
    assert_eq!(reference, "[Delay]");
    assert_eq!(
        available,
        &[
            "[Wait]",
            "[Output per line]",
            "[满意度]",
            "[Blank]",
            "[Hotel | Occupancy]",
            "[Hostel | Occupancy]"
        ]
    );
    assert!(
        error.to_string().contains("available columns: [Wait]"),
        "{error}"
    );
    // A qualifier naming no table is unknown too.
    assert_eq!(
        self::error("mean([Motel | Occupancy])", &ledger()).code(),
        "unknown_column"
    );
}

#[test]
fn no_columns_resolves_nothing() {
    let error = error("mean([Wait])", &NoColumns);
    assert_eq!(error.code(), "unknown_column");
    assert!(
        error.to_string().contains("no table has been observed"),
        "{error}"
    );
    assert_eq!(calculator::evaluate("mean([Wait])").unwrap_err(), error);
    assert_eq!(
        calculator::run("mean([Wait])").unwrap_err().code,
        "unknown_column"
    );
}

#[test]
fn empty_column_is_an_error() {
    let error = error("mean([Blank])", &ledger());
    assert_eq!(error.code(), "empty_column");
    assert_eq!(
        error,
        CalcError::Column {
            error: ColumnError::Empty {
                reference: "[Blank]".into()
            },
            position: 5,
        }
    );
}

#[test]
fn column_used_as_a_scalar_is_column_not_a_list() {
    let source = ledger();
    for (expression, position) in [
        ("[Wait]", 0),
        ("[Wait] + 1", 0),
        ("max([Wait]) <= 4 and [Wait] > 1", 21),
        ("mean([Wait], 3)", 5),
        ("mean(3, [Wait])", 8),
        ("mean([Wait] * 2)", 5),
        ("mean(([Wait]))", 6),
    ] {
        let error = error(expression, &source);
        assert_eq!(
            error,
            CalcError::ColumnNotAList {
                reference: "[Wait]".into(),
                position
            },
            "{expression}"
        );
        assert_eq!(error.code(), "column_not_a_list");
    }
    assert!(error("[Wait]", &source).to_string().contains(
        "use it as the only argument of sum, mean, min, max or count, e.g. mean([Wait])"
    ));
}

#[test]
fn malformed_references_are_syntax_errors() {
    for (expression, position) in [
        ("mean([Wait)", 11),
        ("mean([])", 5),
        ("mean([ | Wait])", 5),
        ("mean([a | b | c])", 5),
        ("mean(1])", 6),
        ("mean([a[b]])", 7),
        ("mean[1]", 4),
    ] {
        let error = calculator::evaluate_with(expression, &ledger()).unwrap_err();
        assert_eq!(error.code(), "syntax_error", "{expression}: {error}");
        assert_eq!(error.position(), Some(position), "{expression}: {error}");
    }
}

#[test]
fn a_500_row_column_costs_one_short_expression() {
    let labels: Vec<String> = (0..500).map(|i| format!("row {i}")).collect();
    let cells: Vec<Option<f64>> = (0..500).map(|i| Some(f64::from(i % 50) + 0.5)).collect();
    let source = TableColumns {
        tables: vec![ColumnTable {
            rows_label: "Line".into(),
            units: Vec::new(),
            labels,
            columns: vec![("Output".into(), cells.clone())],
        }],
    };
    let expected = cells.iter().flatten().sum::<f64>() / 500.0;
    assert_eq!(number("mean([Output])", &source), expected);
    assert_eq!(number("count([Output])", &source), 500.0);
    let out = calculator::run_with("sum([Output]) > 100", &source).unwrap();
    assert_eq!(out.result["value"], json!(true));
    assert_eq!(out.result["columns"][0]["used"], json!(500));
    assert_eq!(
        out.result["columns"][0]["values"].as_array().unwrap().len(),
        500
    );
}

#[test]
fn each_column_read_states_its_ends_with_every_tied_row() {
    let source = TableColumns {
        tables: vec![ColumnTable {
            rows_label: "Ward".into(),
            units: Vec::new(),
            labels: vec!["Ash".into(), "Beech".into(), "Elm".into(), "Oak".into()],
            columns: vec![(
                "Compliance".into(),
                vec![Some(92.0), Some(85.0), Some(85.0), None],
            )],
        }],
    };
    let out = calculator::run_with("mean([Compliance])", &source).unwrap();
    let column = &out.result["columns"][0];
    assert_eq!(
        (&column["lowest"], &column["highest"]),
        (
            &json!({"labels": ["Beech", "Elm"], "value": 85}),
            &json!({"labels": ["Ash"], "value": 92})
        )
    );
}

#[test]
fn result_lists_each_column_used() {
    let out = calculator::run_with("mean([Wait]) <= 30 and max([wait]) <= 45", &ledger()).unwrap();
    assert_eq!(
        out.result,
        json!({
            "expression": "mean([Wait]) <= 30 and max([wait]) <= 45",
            "value": true,
            "columns": [
                {"reference": "[Wait]", "name": "Wait", "rows": "Clinic", "used": 3,
                 "missing": ["West"], "values": [12, 15.5, 18],
                 "lowest": {"labels": ["North"], "value": 12}, "highest": {"labels": ["East"], "value": 18}},
                {"reference": "[wait]", "name": "Wait", "rows": "Clinic", "used": 3,
                 "missing": ["West"], "values": [12, 15.5, 18],
                 "lowest": {"labels": ["North"], "value": 12}, "highest": {"labels": ["East"], "value": 18}},
            ],
        })
    );
    assert!(
        out.summary
            .contains("[Wait] = Wait of Clinic (3 values, 1 missing)"),
        "{}",
        out.summary
    );
    // Literal expressions keep their result shape.
    let literal = calculator::run_with("mean(12, 15.5, 18)", &ledger()).unwrap();
    assert_eq!(
        literal.result,
        json!({"expression": "mean(12, 15.5, 18)", "value": 15.1666666667})
    );
}

#[test]
fn digest_names_the_resolved_column() {
    let source = ledger();
    let a = calculator::run_with("mean([Wait])", &source).unwrap();
    let b = calculator::run_with("mean( [ wait ] )", &source).unwrap();
    assert_eq!(a.digest_basis, b.digest_basis);
    assert_eq!(a.digest_basis["expression"], json!("mean([Clinic | Wait])"));
    // The canonical rendering keeps the reference as written and parses back.
    let ast = calculator::parse("mean( [ Hotel |  Occupancy ] ) >= 80").unwrap();
    assert_eq!(ast.to_string(), "(mean([Hotel | Occupancy]) >= 80)");
    assert_eq!(
        calculator::parse(&ast.to_string()).unwrap().to_string(),
        ast.to_string()
    );
}

#[test]
fn column_values_are_bounded_like_literals() {
    let source = TableColumns {
        tables: vec![
            table("Row", &["a", "b"], &[("Huge", vec![Some(1e16), Some(1.0)])]),
            table("Row2", &["a"], &[("Nan", vec![Some(f64::NAN)])]),
            table(
                "Row3",
                &["a", "b"],
                &[("Big", vec![Some(9e14), Some(9e14)])],
            ),
        ],
    };
    assert_eq!(error("max([Huge])", &source).code(), "overflow");
    assert_eq!(error("max([Nan])", &source).code(), "non_finite");
    assert_eq!(error("sum([Big])", &source).code(), "overflow");
    assert_eq!(
        number(
            "mean([Row3 | Big])",
            &TableColumns {
                tables: vec![table("Row3", &["a"], &[("Big", vec![Some(9e14)])])]
            }
        ),
        9e14
    );
}

#[test]
fn column_ref_renders_its_canonical_spelling() {
    assert_eq!(ColumnRef::new("Wait").to_string(), "[Wait]");
    assert_eq!(
        ColumnRef::qualified("Hotel", "Occupancy").to_string(),
        "[Hotel | Occupancy]"
    );
}

#[test]
fn tool_context_passes_its_columns_to_the_calculator() {
    let dir = std::env::temp_dir();
    let mut store = forge_tools::ArtifactStore::default();
    let source = ledger();
    let mut ctx = forge_tools::ToolContext {
        knowledge_dir: &dir,
        allowed_sources: &[],
        artifact_dir: &dir,
        artifacts: &mut store,
        columns: &source,
    };
    let arguments = json!({"expression": "count([Wait])"});
    let out =
        forge_tools::call_tool("calculator", arguments.as_object().unwrap(), &mut ctx).unwrap();
    assert_eq!(out.result["value"], json!(3));
}

#[test]
fn a_filtered_count_counts_the_rows_passing_one_comparison() {
    let source = ledger();
    // Wait has 12, 15.5, 18 and one missing row: the missing row is never counted.
    assert_eq!(number("count([Wait] > 15)", &source), 2.0);
    assert_eq!(number("count([Wait] >= 18)", &source), 1.0);
    assert_eq!(number("count([Wait] < 12)", &source), 0.0);
    assert_eq!(number("count([Wait] <= 12)", &source), 1.0);
    assert_eq!(number("count([Wait] == 15.5)", &source), 1.0);
    // The limit is any number expression, an aggregate of the column included.
    assert_eq!(number("count([Wait] > mean([Wait]))", &source), 2.0);
    assert_eq!(number("count([Wait] > 10 + 5)", &source), 2.0);
    // Float noise does not flip a row at its limit: 0.1 + 0.2 is 0.3.
    let noisy = TableColumns {
        tables: vec![table("Site", &["A"], &[("Rate", vec![Some(0.3)])])],
    };
    assert_eq!(number("count([Rate] > 0.1 + 0.2)", &noisy), 0.0);
    let check = calculator::evaluate_with("count([Wait] > 15) <= 1", &source).unwrap();
    assert_eq!(check.value, CalcValue::Boolean(false));
    // The canonical rendering keeps the filter, so two spellings digest alike.
    assert_eq!(
        calculator::parse("count( [Wait]>15 )").unwrap().to_string(),
        calculator::parse("count([Wait] > 15)").unwrap().to_string()
    );
}

#[test]
fn a_filter_outside_count_or_malformed_is_a_typed_error() {
    let source = ledger();
    let code = |expression: &str| {
        calculator::evaluate_with(expression, &source)
            .unwrap_err()
            .code()
    };
    assert_eq!(code("mean([Wait] > 15)"), "filter_outside_count");
    assert_eq!(code("sum([Wait] < 3)"), "filter_outside_count");
    // One comparison only, a number after it, and the call closed.
    assert_eq!(code("count([Wait] > 15 > 3)"), "syntax_error");
    assert_eq!(code("count([Wait] > true)"), "type_error");
    assert_eq!(code("count([Wait] >)"), "syntax_error");
    assert_eq!(code("count([Wait] > 15"), "syntax_error");
    assert_eq!(code("count([Nope] > 15)"), "unknown_column");
    assert!(matches!(
        calculator::parse("max([Wait] > 1)"),
        Err(CalcError::FilterOutsideCount { .. })
    ));
}
