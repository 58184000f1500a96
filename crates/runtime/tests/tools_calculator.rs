//! Calculator tool tests: the whitelist parser refuses everything but arithmetic,
//! bounds are enforced with typed errors, integer results come back as integers.

use pretty_assertions::assert_eq;
use runtime::tools::calculator::{self, CalcError};
use serde_json::json;

fn code_of(expression: &str) -> &'static str {
    calculator::run(expression).expect_err(expression).code
}

#[test]
fn average_of_the_four_batches_is_integer_79() {
    let out = calculator::run("(72 + 78 + 81 + 85) / 4").unwrap();
    assert_eq!(
        out.result,
        json!({ "expression": "(72 + 78 + 81 + 85) / 4", "value": 79 })
    );
    // An integer in the JSON, not 79.0.
    assert!(out.result["value"].is_i64());
    assert_eq!(out.result["value"].to_string(), "79");
}

#[test]
fn non_integer_results_stay_fractional() {
    let out = calculator::run("(72 + 78 + 81 + 85 + 1) / 4").unwrap();
    assert_eq!(out.result["value"], json!(79.25));
    assert_eq!(calculator::evaluate("7 / 2").unwrap(), 3.5);
}

#[test]
fn precedence_associativity_and_unary_minus() {
    let cases = [
        ("1 + 2 * 3", 7.0),
        ("(1 + 2) * 3", 9.0),
        ("10 - 4 - 3", 3.0),
        ("100 / 10 / 5", 2.0),
        ("2 ** 3 ** 2", 512.0),
        ("-2 ** 2", -4.0),
        ("(-2) ** 2", 4.0),
        ("2 ** -1", 0.5),
        ("--3", 3.0),
        ("-(4 - 6) * .5", 1.0),
        ("12.", 12.0),
    ];
    for (expression, expected) in cases {
        assert_eq!(
            calculator::evaluate(expression).unwrap(),
            expected,
            "{expression}"
        );
    }
}

#[test]
fn python_injection_is_a_forbidden_token_at_position_zero() {
    let error = calculator::evaluate("__import__('os')").unwrap_err();
    assert_eq!(
        error,
        CalcError::ForbiddenToken {
            token: "__import__".into(),
            position: 0
        }
    );
    assert_eq!(code_of("__import__('os').system('ls')"), "forbidden_token");
}

#[test]
fn names_functions_and_other_characters_are_forbidden() {
    for (expression, token, position) in [
        ("abs(-3)", "abs", 0),
        ("2 + x", "x", 4),
        ("1e5", "1e5", 0),
        ("2 % 3", "%", 2),
        ("(1).real", ".real", 3),
        ("7 // 2", "/", 3),
    ] {
        match calculator::evaluate(expression) {
            Err(CalcError::ForbiddenToken {
                token: t,
                position: p,
            }) => {
                assert_eq!((t.as_str(), p), (token, position), "{expression}")
            }
            // `//` is two whitelisted tokens; the parser refuses the second one.
            Err(CalcError::Syntax { position: 3, .. }) if expression == "7 // 2" => {}
            other => panic!("{expression}: {other:?}"),
        }
    }
}

#[test]
fn huge_exponent_is_overflow_not_a_hang() {
    assert_eq!(code_of("2**99999"), "overflow");
    assert_eq!(code_of("2 ** -65"), "overflow");
    // Within the exponent bound but beyond the magnitude bound.
    assert_eq!(code_of("10 ** 16"), "overflow");
    assert_eq!(code_of("99999999 * 99999999"), "overflow");
    assert_eq!(code_of("9999999999999999"), "overflow");
    assert_eq!(
        calculator::evaluate("2 ** 49").unwrap(),
        562_949_953_421_312.0
    );
}

#[test]
fn division_by_zero_is_typed_with_position() {
    assert_eq!(
        calculator::evaluate("1/0").unwrap_err(),
        CalcError::DivisionByZero { position: 1 }
    );
    assert_eq!(code_of("5 / (3 - 3)"), "division_by_zero");
    assert_eq!(code_of("0 ** -1"), "division_by_zero");
}

#[test]
fn non_finite_results_are_refused() {
    assert_eq!(code_of("(-8) ** 0.5"), "non_finite");
}

#[test]
fn length_limit_is_240_characters() {
    let at_limit = format!("1{}", "+1".repeat(119)); // 239 chars
    assert_eq!(at_limit.chars().count(), 239);
    assert_eq!(
        calculator::evaluate(&format!("{at_limit} ")).unwrap(),
        120.0
    );
    let too_long = format!("{at_limit}+1");
    assert_eq!(too_long.chars().count(), 241);
    assert_eq!(
        calculator::evaluate(&too_long).unwrap_err(),
        CalcError::TooLong {
            chars: 241,
            limit: 240
        }
    );
    assert_eq!(code_of(&too_long), "expression_too_long");
}

#[test]
fn syntax_errors_carry_positions() {
    assert_eq!(
        calculator::evaluate("(1 + 2").unwrap_err(),
        CalcError::Syntax {
            position: 6,
            message: "expected ')' to close '(' at position 0".into()
        }
    );
    assert!(matches!(
        calculator::evaluate("1 +").unwrap_err(),
        CalcError::Syntax { position: 3, .. }
    ));
    assert!(matches!(
        calculator::evaluate("1 2").unwrap_err(),
        CalcError::Syntax { position: 2, .. }
    ));
    assert!(matches!(
        calculator::evaluate("1..2").unwrap_err(),
        CalcError::Syntax { position: 0, .. }
    ));
    assert!(matches!(
        calculator::evaluate("+1").unwrap_err(),
        CalcError::Syntax { position: 0, .. }
    ));
    assert_eq!(code_of("   "), "expression_empty");
    let deep = format!("{}1{}", "(".repeat(60), ")".repeat(60));
    assert_eq!(code_of(&deep), "syntax_error");
}

#[test]
fn digest_basis_ignores_spacing() {
    let a = calculator::run("(72+78+81+85)/4").unwrap();
    let b = calculator::run(" ( 72 + 78 + 81 + 85 ) / 4 ").unwrap();
    assert_eq!(a.digest_basis, b.digest_basis);
    assert_eq!(
        a.digest_basis,
        json!({ "expression": "((((72 + 78) + 81) + 85) / 4)", "value": 79 })
    );
    assert_ne!(
        a.digest_basis,
        calculator::run("(72+78+81+85)/2").unwrap().digest_basis
    );
}
