//! Calculator tool tests: arithmetic, aggregates, comparisons and boolean logic;
//! the whitelist refuses every other name; types, arity, bounds and syntax fail
//! with typed errors; the canonical rendering parses back to the same value.
//! (The proptest fuzz lives in `tools_calculator_fuzz.rs`.)

use forge_tools::calculator::{
    self, CalcError, CalcValue, Function, MAX_ARGUMENTS, MAX_DEPTH, MAX_EXPRESSION_CHARS,
};
use pretty_assertions::assert_eq;
use serde_json::json;

fn code_of(expression: &str) -> &'static str {
    calculator::run(expression).expect_err(expression).code
}

fn number(expression: &str) -> f64 {
    match calculator::evaluate(expression) {
        Ok(CalcValue::Number(x)) => x,
        other => panic!("{expression}: expected a number, got {other:?}"),
    }
}

fn boolean(expression: &str) -> bool {
    match calculator::evaluate(expression) {
        Ok(CalcValue::Boolean(b)) => b,
        other => panic!("{expression}: expected a boolean, got {other:?}"),
    }
}

fn canonical(expression: &str) -> String {
    calculator::parse(expression)
        .unwrap_or_else(|e| panic!("{expression}: {e}"))
        .to_string()
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
    assert_eq!(number("7 / 2"), 3.5);
}

#[test]
fn results_carry_no_float_noise() {
    // A ratio of totals came out 0.9900000000000001 and the model copied it into its answer (stop 52).
    assert_eq!(number("99 / 10000 * 100"), 0.99);
    assert_eq!(number("0.1 + 0.2"), 0.3);
    assert_eq!(number("1 / 3"), 0.333333333333);
    assert_eq!(number("2 ** 0.5 * 1000000"), 1414213.56237);
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
        assert_eq!(number(expression), expected, "{expression}");
    }
}

#[test]
fn aggregates_over_argument_lists() {
    let cases = [
        ("sum(72, 78, 81, 85)", 316.0),
        ("mean(72, 78, 81, 85)", 79.0),
        ("min(72, 78)", 72.0),
        ("max(72, 78)", 78.0),
        ("count(1, 2, 3)", 3.0),
        ("sum(5)", 5.0),
        ("mean(5)", 5.0),
        ("min(7)", 7.0),
        ("max(-7)", -7.0),
        ("count(0)", 1.0),
        ("mean(1, 2)", 1.5),
        ("min(3, -4, 2)", -4.0),
        ("max(-3, -4, -2)", -2.0),
        // Arguments are expressions; aggregates nest and take part in arithmetic.
        ("max(1 + 2, 2 * 2, 2 ** 2)", 4.0),
        ("mean(min(1, 2), max(3, 4))", 2.5),
        ("sum(1, 2) * count(9, 9) - 1", 5.0),
        ("-min(1, 2)", -1.0),
        ("mean ( 72 ,78 )", 75.0),
    ];
    for (expression, expected) in cases {
        assert_eq!(number(expression), expected, "{expression}");
    }
    let out = calculator::run("mean(72, 78, 81, 85)").unwrap();
    assert_eq!(
        out.result,
        json!({ "expression": "mean(72, 78, 81, 85)", "value": 79 })
    );
    assert!(out.result["value"].is_i64());
}

#[test]
fn mean_is_exactly_the_spelled_out_sum_divided_by_the_count() {
    for (aggregate, spelled) in [
        ("mean(72, 78, 81, 85)", "(72 + 78 + 81 + 85) / 4"),
        ("mean(0.1, 0.2, 0.4)", "(0.1 + 0.2 + 0.4) / 3"),
        ("mean(99.2, 97.1, 98.65)", "(99.2 + 97.1 + 98.65) / 3"),
        ("mean(1, 2, 2)", "(1 + 2 + 2) / 3"),
        ("sum(0.1, 0.2, 0.3)", "0.1 + 0.2 + 0.3"),
    ] {
        assert_eq!(
            number(aggregate).to_bits(),
            number(spelled).to_bits(),
            "{aggregate} vs {spelled}"
        );
        assert_eq!(
            calculator::run(aggregate).unwrap().result["value"],
            calculator::run(spelled).unwrap().result["value"]
        );
    }
}

#[test]
fn aggregate_arity_is_one_to_sixty_four() {
    assert_eq!(
        calculator::evaluate("mean()").unwrap_err(),
        CalcError::Arity {
            function: Function::Mean,
            given: 0,
            position: 0
        }
    );
    // `count()` is an arity error like the others, not 0.
    for function in Function::ALL {
        let expression = format!("1 + {function}()");
        assert_eq!(
            calculator::evaluate(&expression).unwrap_err(),
            CalcError::Arity {
                function,
                given: 0,
                position: 4
            },
            "{expression}"
        );
        assert_eq!(code_of(&expression), "arity_error");
    }
    let at_limit = format!("count({})", vec!["1"; MAX_ARGUMENTS].join(","));
    assert_eq!(number(&at_limit), 64.0);
    let over = format!("sum({})", vec!["1"; MAX_ARGUMENTS + 1].join(","));
    assert_eq!(
        calculator::evaluate(&over).unwrap_err(),
        CalcError::Arity {
            function: Function::Sum,
            given: 65,
            position: 0
        }
    );
    assert_eq!(
        calculator::evaluate("mean()").unwrap_err().to_string(),
        "mean at position 0 takes 1 to 64 arguments, got 0"
    );
}

#[test]
fn aggregate_call_syntax_errors() {
    for (expression, position, message) in [
        ("mean", 4, "expected '(' after 'mean'"),
        ("sum + 1", 4, "expected '(' after 'sum'"),
        (
            "mean(1,)",
            7,
            "expected a number, true, false, a function or '(', found ')'",
        ),
        (
            "mean(1 2)",
            7,
            "expected ',' or ')' to close 'mean(' at position 4, found number 2",
        ),
        ("max(1, 2", 8, "expected ')' to close 'max(' at position 3"),
        ("(1, 2)", 2, "expected ')' to close '(' at position 0"),
        ("1, 2", 1, "unexpected ',' after a complete expression"),
    ] {
        assert_eq!(
            calculator::evaluate(expression).unwrap_err(),
            CalcError::Syntax {
                position,
                message: message.into()
            },
            "{expression}"
        );
    }
}

#[test]
fn comparisons_give_booleans() {
    let cases = [
        ("79 >= 75", true),
        ("75 >= 75", true),
        ("74 >= 75", false),
        ("76 > 75", true),
        ("75 > 75", false),
        ("75 <= 75", true),
        ("76 <= 75", false),
        ("74 < 75", true),
        ("75 < 75", false),
        ("75 == 75", true),
        ("75 == 75.5", false),
        ("75 != 75.5", true),
        ("75 != 75", false),
        ("true == true", true),
        ("true != false", true),
        ("false == true", false),
        ("mean(72, 78) >= 75", true),
        ("min(72, 78) >= 75", false),
        ("(72 + 78) / 2 == mean(72, 78)", true),
        // Float noise does not flip a rule check …
        ("0.1 + 0.2 == 0.3", true),
        ("0.1 + 0.2 > 0.3", false),
        ("0.1 + 0.2 <= 0.3", true),
        ("mean(80.1, 80.2) >= 80.15", true),
        ("0.1 + 0.2 - 0.3 == 0", true),
        // … but whole numbers compare exactly, even near the magnitude limit …
        ("999999999999999 > 999999999999998", true),
        ("999999999999999 == 999999999999998", false),
        // … and a real difference is never noise.
        ("83.3 == 83.33", false),
        ("83.33 > 83.3", true),
        ("0.000001 > 0", true),
    ];
    for (expression, expected) in cases {
        assert_eq!(boolean(expression), expected, "{expression}");
    }
    let out = calculator::run("mean(72, 78) >= 75").unwrap();
    assert_eq!(
        out.result,
        json!({ "expression": "mean(72, 78) >= 75", "value": true })
    );
    assert_eq!(out.summary, "mean(72, 78) >= 75 = true");
}

#[test]
fn and_or_not_and_literals() {
    let cases = [
        ("true", true),
        ("false", false),
        ("not true", false),
        ("not not true", true),
        ("true and true", true),
        ("true and false", false),
        ("false and true", false),
        ("false or false", false),
        ("false or true", true),
        ("true or false", true),
        ("mean(72, 78) >= 75 and min(72, 78) >= 70", true),
        ("mean(72, 78) >= 75 and min(72, 78) >= 73", false),
        ("max(1, 2) > 5 or count(1, 2) == 2", true),
        ("not (1 > 2)", true),
    ];
    for (expression, expected) in cases {
        assert_eq!(boolean(expression), expected, "{expression}");
    }
    let out = calculator::run(" mean(72, 78) >= 75 and min(72, 78) >= 70 ").unwrap();
    assert_eq!(out.result["value"], json!(true));
    assert_eq!(
        out.summary,
        "mean(72, 78) >= 75 and min(72, 78) >= 70 = true"
    );
}

#[test]
fn precedence_table_low_to_high() {
    // or < and < not < comparison < + - < * / < unary minus < **
    let table = [
        ("true or false and false", "(true or (false and false))"),
        ("false and true or true", "((false and true) or true)"),
        ("not true and false", "((not true) and false)"),
        ("not true or true", "((not true) or true)"),
        ("not 1 < 2", "(not (1 < 2))"),
        ("not true == false", "(not (true == false))"),
        ("1 + 2 >= 3 * 1", "((1 + 2) >= (3 * 1))"),
        ("1 < 2 and 2 < 3", "((1 < 2) and (2 < 3))"),
        ("1 + 2 * 3", "(1 + (2 * 3))"),
        ("1 - 2 - 3", "((1 - 2) - 3)"),
        ("-2 * 3", "((-2) * 3)"),
        ("-2 ** 2", "(-(2 ** 2))"),
        ("2 ** 3 ** 2", "(2 ** (3 ** 2))"),
        ("2 ** -1", "(2 ** (-1))"),
    ];
    for (expression, expected) in table {
        assert_eq!(canonical(expression), expected, "{expression}");
    }
    assert!(boolean("true or false and false"));
    assert!(!boolean("false and true or false"));
    assert!(!boolean("not 1 < 2"));
}

#[test]
fn chained_comparisons_are_a_syntax_error() {
    assert_eq!(
        calculator::evaluate("1 < 2 < 3").unwrap_err(),
        CalcError::Syntax {
            position: 6,
            message: "comparisons do not chain: '<' follows '<' at position 2; \
                      join two comparisons with 'and' (a < b and b < c)"
                .into()
        }
    );
    for expression in ["1 == 1 == 1", "1 >= 0 != true", "mean(1) < 2 > 1"] {
        assert_eq!(code_of(expression), "syntax_error", "{expression}");
    }
    // Parenthesised, it is one comparison of booleans.
    assert!(boolean("(1 < 2) == true"));
    assert!(boolean("1 < 2 and 2 < 3"));
}

#[test]
fn types_are_checked_with_operator_and_types_named() {
    let cases = [
        (
            "1 >= true",
            ">=",
            "numbers on both sides",
            "number >= boolean",
            2,
        ),
        (
            "true + 1",
            "+",
            "numbers on both sides",
            "boolean + number",
            5,
        ),
        ("not 3", "not", "a boolean", "number", 0),
        (
            "mean(true)",
            "mean",
            "numbers as arguments",
            "boolean as argument 1",
            0,
        ),
        (
            "min(true, 1)",
            "min",
            "numbers as arguments",
            "boolean as argument 1",
            0,
        ),
        (
            "2 * max(1, 2 > 1)",
            "max",
            "numbers as arguments",
            "boolean as argument 2",
            4,
        ),
        (
            "1 == true",
            "==",
            "both sides of one type",
            "number == boolean",
            2,
        ),
        (
            "false != 0",
            "!=",
            "both sides of one type",
            "boolean != number",
            6,
        ),
        (
            "1 and 2",
            "and",
            "booleans on both sides",
            "number and number",
            2,
        ),
        (
            "true or 0",
            "or",
            "booleans on both sides",
            "boolean or number",
            5,
        ),
        ("-true", "-", "a number", "boolean", 0),
        (
            "2 ** (1 < 2)",
            "**",
            "numbers on both sides",
            "number ** boolean",
            2,
        ),
        (
            "(1 < 2) / 2",
            "/",
            "numbers on both sides",
            "boolean / number",
            8,
        ),
    ];
    for (expression, operator, expected, found, position) in cases {
        let error = calculator::evaluate(expression).unwrap_err();
        assert_eq!(
            error,
            CalcError::Type {
                operator,
                expected,
                found: found.into(),
                position
            },
            "{expression}"
        );
        assert_eq!(code_of(expression), "type_error");
    }
    assert_eq!(
        calculator::evaluate("1 >= true").unwrap_err().to_string(),
        "type error at position 2: '>=' needs numbers on both sides, found number >= boolean"
    );
    // Types are checked before anything is evaluated.
    assert_eq!(code_of("1 / 0 + true"), "type_error");
}

#[test]
fn hand_built_trees_are_type_checked_when_evaluated() {
    use calculator::{BinOp, Expr, UnaryOp};
    let mixed = Expr::Binary {
        op: BinOp::Add,
        left: Box::new(Expr::Boolean(true)),
        right: Box::new(Expr::Number(1.0)),
        position: 3,
    };
    assert_eq!(calculator::eval(&mixed).unwrap_err().code(), "type_error");
    let not_number = Expr::Unary {
        op: UnaryOp::Not,
        operand: Box::new(Expr::Number(3.0)),
        position: 0,
    };
    assert_eq!(
        calculator::eval(&not_number).unwrap_err().code(),
        "type_error"
    );
    let empty_call = Expr::Call {
        function: Function::Count,
        arguments: vec![],
        position: 0,
    };
    assert_eq!(
        calculator::eval(&empty_call).unwrap_err().code(),
        "arity_error"
    );
    let bool_argument = Expr::Call {
        function: Function::Sum,
        arguments: vec![Expr::Boolean(false)],
        position: 0,
    };
    assert_eq!(
        calculator::eval(&bool_argument).unwrap_err().code(),
        "type_error"
    );
    assert_eq!(
        calculator::eval(&Expr::Number(f64::NAN))
            .unwrap_err()
            .code(),
        "non_finite"
    );
    assert_eq!(
        calculator::eval(&Expr::Number(1e300)).unwrap_err().code(),
        "overflow"
    );
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
fn names_other_than_the_five_aggregates_are_forbidden() {
    for (expression, token, position) in [
        ("avg(1)", "avg", 0),
        ("average(72, 78)", "average", 0),
        ("abs(-3)", "abs", 0),
        ("len(1)", "len", 0),
        ("os.system('ls')", "os.system", 0),
        ("mean.__class__", "mean.__class__", 0),
        ("Mean(1)", "Mean", 0),
        ("True", "True", 0),
        ("sum(1) + pow(2, 3)", "pow", 9),
        ("1 if true else 2", "if", 2),
        ("lambda", "lambda", 0),
        ("2 + x", "x", 4),
        ("1e5", "1e5", 0),
        ("2 % 3", "%", 2),
        ("(1).real", ".real", 3),
        ("1 && 2", "&", 2),
        ("true || false", "|", 5),
        ("'a'", "'", 0),
        ("2 × 3", "×", 2),
        ("平均(1)", "平均", 0),
    ] {
        assert_eq!(
            calculator::evaluate(expression).unwrap_err(),
            CalcError::ForbiddenToken {
                token: token.into(),
                position
            },
            "{expression}"
        );
    }
}

#[test]
fn half_operators_name_the_real_one() {
    assert_eq!(
        calculator::evaluate("mean(1, 2) = 1.5").unwrap_err(),
        CalcError::Syntax {
            position: 11,
            message: "'=' is not an operator: compare with '=='".into()
        }
    );
    assert_eq!(
        calculator::evaluate("!true").unwrap_err(),
        CalcError::Syntax {
            position: 0,
            message: "'!' is not an operator: negate with 'not', compare with '!='".into()
        }
    );
    // `//` is two whitelisted tokens; the parser refuses the second one.
    assert!(matches!(
        calculator::evaluate("7 // 2").unwrap_err(),
        CalcError::Syntax { position: 3, .. }
    ));
}

#[test]
fn huge_exponent_is_overflow_not_a_hang() {
    assert_eq!(code_of("2**99999"), "overflow");
    assert_eq!(code_of("2 ** -65"), "overflow");
    // Within the exponent bound but beyond the magnitude bound.
    assert_eq!(code_of("10 ** 16"), "overflow");
    assert_eq!(code_of("99999999 * 99999999"), "overflow");
    assert_eq!(code_of("9999999999999999"), "overflow");
    assert_eq!(number("2 ** 49"), 562_949_953_421_312.0);
}

#[test]
fn aggregate_intermediates_are_bounded() {
    // The partial sum leaves the bound even though the mean would not.
    assert_eq!(
        calculator::evaluate("mean(900000000000000, 900000000000000)").unwrap_err(),
        CalcError::Overflow {
            position: 0,
            message: "result exceeds 1e15".into()
        }
    );
    assert_eq!(code_of("sum(1, 999999999999999 + 1)"), "overflow");
    assert_eq!(code_of("max(1, 1 / 0)"), "division_by_zero");
    assert_eq!(number("max(999999999999999, 1)"), 999_999_999_999_999.0);
}

#[test]
fn division_by_zero_is_typed_with_position() {
    assert_eq!(
        calculator::evaluate("1/0").unwrap_err(),
        CalcError::DivisionByZero { position: 1 }
    );
    assert_eq!(code_of("5 / (3 - 3)"), "division_by_zero");
    assert_eq!(code_of("0 ** -1"), "division_by_zero");
    // No short circuit: the right side of `and`/`or` is always evaluated.
    assert_eq!(code_of("false and 1 / 0 > 0"), "division_by_zero");
}

#[test]
fn non_finite_results_are_refused() {
    assert_eq!(code_of("(-8) ** 0.5"), "non_finite");
}

#[test]
fn length_limit_is_240_characters() {
    let at_limit = format!("1{}", "+1".repeat(119)); // 239 chars
    assert_eq!(at_limit.chars().count(), 239);
    assert_eq!(number(&format!("{at_limit} ")), 120.0);
    let too_long = format!("{at_limit}+1");
    assert_eq!(too_long.chars().count(), 241);
    assert_eq!(
        calculator::evaluate(&too_long).unwrap_err(),
        CalcError::TooLong {
            chars: 241,
            limit: MAX_EXPRESSION_CHARS
        }
    );
    assert_eq!(code_of(&too_long), "expression_too_long");
    // Characters, not bytes: 240 CJK characters are at the limit, not over it.
    let wide = "平".repeat(240);
    assert_eq!(code_of(&wide), "forbidden_token");
}

#[test]
fn nesting_is_limited_for_every_kind_of_nesting() {
    let within = format!("{}1{}", "(".repeat(MAX_DEPTH), ")".repeat(MAX_DEPTH));
    assert_eq!(number(&within), 1.0);
    for deep in [
        format!(
            "{}1{}",
            "(".repeat(MAX_DEPTH + 1),
            ")".repeat(MAX_DEPTH + 1)
        ),
        format!("{}1", "-".repeat(MAX_DEPTH + 1)),
        format!("{}true", "not ".repeat(MAX_DEPTH + 1)),
        // An aggregate call is one level too.
        format!("sum({}1{})", "(".repeat(MAX_DEPTH), ")".repeat(MAX_DEPTH)),
        format!("2{}", "**2".repeat(MAX_DEPTH + 1)),
    ] {
        match calculator::evaluate(&deep) {
            Err(CalcError::Syntax { message, .. }) => {
                assert_eq!(
                    message,
                    format!("nesting deeper than {MAX_DEPTH}"),
                    "{deep}"
                )
            }
            other => panic!("{deep}: {other:?}"),
        }
    }
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
    for (expression, position) in [
        ("1 +", 3),
        ("1 2", 2),
        ("1..2", 0),
        ("+1", 0),
        ("1 >=", 4),
        ("and true", 0),
        ("true not", 5),
        ("1 < not true", 4),
        ("true true", 5),
    ] {
        match calculator::evaluate(expression) {
            Err(CalcError::Syntax { position: p, .. }) => {
                assert_eq!(p, position, "{expression}")
            }
            other => panic!("{expression}: {other:?}"),
        }
    }
    assert_eq!(code_of("   "), "expression_empty");
    assert_eq!(code_of(""), "expression_empty");
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
    let rule = calculator::run("mean(72,78)>=75 and min(72,78)>=70").unwrap();
    assert_eq!(
        rule.digest_basis,
        json!({
            "expression": "((mean(72, 78) >= 75) and (min(72, 78) >= 70))",
            "value": true
        })
    );
    assert_eq!(
        rule.digest_basis,
        calculator::run("((mean(72, 78) >= 75)) and (min( 72 , 78 ) >= 70)")
            .unwrap()
            .digest_basis
    );
}

#[test]
fn canonical_rendering_parses_back_to_the_same_value() {
    for expression in [
        "(72 + 78 + 81 + 85) / 4",
        "mean(72, 78, 81, 85)",
        "mean(72, 78) >= 75 and min(72, 78) >= 70",
        "not 1 < 2 or -max(1, 2) ** 2 != -4",
        "-2 ** 2",
        "(-2) ** 2",
        "2 ** -0.5",
        "--3 - -3",
        "0.1 + 0.2 == 0.3",
        "0.0000001 * 3",
        "count(1, 2, 3) * sum(0.25, 0.125)",
        "true == (false or not false)",
        "999999999999999 - 0.5",
    ] {
        let ast = calculator::parse(expression).unwrap();
        let text = ast.to_string();
        let again = calculator::parse(&text).unwrap_or_else(|e| panic!("{text}: {e}"));
        assert_eq!(again.to_string(), text, "the rendering is a fixed point");
        assert_eq!(
            calculator::eval(&again).unwrap(),
            calculator::eval(&ast).unwrap(),
            "{expression} → {text}"
        );
    }
    // Shortest decimals, never exponents (which would be forbidden tokens).
    assert_eq!(canonical("0.0000001"), "0.0000001");
    assert_eq!(canonical("100000000000000.5"), "100000000000000.5");
}

#[test]
fn error_messages_at_a_glance() {
    let too_long = "1+".repeat(121);
    let inputs = [
        "",
        too_long.as_str(),
        "avg(72, 78)",
        "os.system('ls')",
        "1 < 2 < 3",
        "mean()",
        "mean(true)",
        "1 >= true",
        "not 3",
        "mean(1, 2) = 1.5",
        "1 / (2 - 2)",
        "2 ** 65",
        "(-8) ** 0.5",
        "mean(1, 2",
        "5 min * 60 > 1",
    ];
    let table: Vec<String> = inputs
        .iter()
        .map(|input| {
            let error = calculator::run(input).unwrap_err();
            let shown: String = input.chars().take(24).collect();
            let shown = format!("{shown:?}");
            format!("{shown:<26} | {:<19} | {}", error.code, error.message)
        })
        .collect();
    insta::assert_snapshot!("calculator_errors", table.join("\n"));
}

#[test]
fn registry_card_examples_evaluate_and_limits_agree() {
    let card = forge_tools::registry::ToolRegistry::builtin()
        .cards()
        .into_iter()
        .find(|card| card.name == calculator::TOOL_NAME)
        .unwrap();
    let example = |label: &str| -> String {
        let start = card.description.find(label).expect(label) + label.len();
        let rest = &card.description[start..];
        rest[..rest.find(". ").unwrap_or(rest.len())].to_owned()
    };
    let aggregate = example("Aggregate: ");
    assert!(aggregate.starts_with("mean("), "{aggregate}");
    assert!(matches!(
        calculator::evaluate(&aggregate),
        Ok(CalcValue::Number(_))
    ));
    let rule = example("Rule check: ");
    assert!(rule.contains(" and "), "{rule}");
    assert!(matches!(
        calculator::evaluate(&rule),
        Ok(CalcValue::Boolean(_))
    ));
    let argument = &card.arguments_schema["properties"]["expression"];
    assert_eq!(argument["maxLength"], json!(MAX_EXPRESSION_CHARS));
    let examples = argument["description"].as_str().unwrap();
    let examples = examples
        .split("e.g. ")
        .nth(1)
        .unwrap()
        .trim_end_matches('.');
    for example in examples.split(" or ") {
        calculator::evaluate(example).unwrap_or_else(|e| panic!("{example}: {e}"));
    }
}

/// The operator tables the decision grammar builds expressions from are the parser's own levels: each
/// symbol parses as that operator, and `a op b op c` groups as the level says (sums and products chain
/// left to right; comparisons refuse to chain).
#[test]
fn operator_tables_are_the_parsers_levels() {
    use calculator::{BinOp, Expr};
    let top = |text: &str| match calculator::parse(text).unwrap_or_else(|e| panic!("{text}: {e}")) {
        Expr::Binary { op, .. } => op,
        other => panic!("{text}: not a binary expression: {other:?}"),
    };
    for op in BinOp::SUM.into_iter().chain(BinOp::PRODUCT) {
        assert_eq!(top(&format!("6 {} 3", op.symbol())), op);
        assert_eq!(
            top(&format!("6 {} 3 {} 2", op.symbol(), op.symbol())),
            op,
            "chains"
        );
    }
    for op in BinOp::COMPARISON {
        assert_eq!(top(&format!("6 {} 3", op.symbol())), op);
        assert_eq!(
            code_of(&format!("6 {} 3 {} 2", op.symbol(), op.symbol())),
            "syntax_error",
            "does not chain"
        );
    }
    // A product binds tighter than a sum: the sum is on top whichever comes first.
    for sum in BinOp::SUM {
        for product in BinOp::PRODUCT {
            assert_eq!(
                top(&format!("6 {} 3 {} 2", sum.symbol(), product.symbol())),
                sum
            );
            assert_eq!(
                top(&format!("6 {} 3 {} 2", product.symbol(), sum.symbol())),
                sum
            );
        }
    }
}
