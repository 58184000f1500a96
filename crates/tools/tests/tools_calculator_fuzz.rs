//! Calculator fuzz (proptest, 100,000 cases each): random strings over the
//! calculator's own alphabet plus arbitrary Unicode never panic and fail only
//! with a known code and an in-range position; random well-typed trees rendered
//! canonically parse back to the same value. Strings are evaluated against a
//! small ledger of observed columns, so column references are fuzzed too. Not a unit test of any one rule
//! (those are in `tools_calculator.rs`).

use forge_tools::calculator::{
    self, BinOp, CalcError, CalcValue, ColumnSource, ColumnTable, Expr, Function, MAX_DEPTH,
    MAX_EXPRESSION_CHARS, NoColumns, TableColumns, UnaryOp,
};
use proptest::prelude::*;

/// Every code a calculator error may carry; a new code must be added here on purpose.
const KNOWN_CODES: [&str; 16] = [
    "expression_empty",
    "expression_too_long",
    "forbidden_token",
    "syntax_error",
    "arity_error",
    "type_error",
    "division_by_zero",
    "overflow",
    "non_finite",
    "column_not_a_list",
    "unknown_column",
    "filter_outside_count",
    "unit_without_column",
    "unit_not_comparable",
    "ambiguous_column",
    "empty_column",
];

/// What the random strings' column references resolve against: `Wait` in minutes (one row
/// missing), `Occupancy` in two tables, an empty `Blank`.
fn ledger() -> TableColumns {
    let table = |rows: &str, labels: &[&str], columns: Vec<(&str, Vec<Option<f64>>)>| ColumnTable {
        rows_label: rows.to_owned(),
        // Waits in minutes: a limit in hours converts, one in kilograms is refused.
        units: vec![("Wait".to_owned(), "min".to_owned())],
        labels: labels.iter().map(|l| (*l).to_owned()).collect(),
        columns: columns
            .into_iter()
            .map(|(n, c)| (n.to_owned(), c))
            .collect(),
    };
    TableColumns {
        tables: vec![
            table(
                "Clinic",
                &["a", "b", "c"],
                vec![
                    ("Wait", vec![Some(12.0), Some(15.5), None]),
                    ("Blank", vec![None, None, None]),
                ],
            ),
            table("Hotel", &["d"], vec![("Occupancy", vec![Some(80.0)])]),
            table("Hostel", &["e"], vec![("Occupancy", vec![Some(60.0)])]),
        ],
    }
}

const CASES: u32 = 100_000;

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: CASES,
        // A failure is reported with its shrunk input; nothing is written into the source tree.
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// The calculator's own tokens, so random inputs get deep into the parser.
const TOKENS: [&str; 47] = [
    "+",
    "-",
    "*",
    "/",
    "**",
    "(",
    ")",
    "(",
    ")",
    ")",
    ",",
    ",",
    "<",
    ">",
    "<=",
    ">=",
    "==",
    "!=",
    " sum(",
    " mean(",
    " min(",
    " max(",
    " count(",
    " sum",
    " and ",
    " or ",
    " not ",
    " true ",
    " false ",
    "-",
    "*",
    "/",
    " ",
    " ",
    "[Wait]",
    " [ wait ]",
    " mean([Wait])",
    " max([Delay])",
    " sum([Occupancy])",
    " count([Blank])",
    " min([Hotel | Occupancy])",
    " min",
    " °C",
    "%",
    " kg",
    " sum([Wait] > 3)",
    " mean([Wait]) > 2 kg",
];

/// Near misses: names and symbols the calculator must refuse.
const NEAR_MISSES: [&str; 22] = [
    "avg(",
    "__import__",
    "os.system",
    "e",
    "x",
    "True",
    "&&",
    "|",
    "%",
    "//",
    "'",
    "\"",
    "[",
    "]",
    "=",
    "!",
    ".",
    "mean.",
    "\t",
    "\n",
    "\u{a0}",
    "\u{3000}",
];

/// One fragment of an input string, chosen by a random `u32` (cheap to generate
/// and to shrink): mostly tokens and numbers, sometimes near misses and any
/// Unicode character.
fn fragment(code: u32) -> String {
    let payload = code >> 6;
    match code % 64 {
        0..=33 => TOKENS[payload as usize % TOKENS.len()].to_owned(),
        34..=49 => (payload % 100).to_string(),
        50 | 51 => format!("{}.{}", payload % 1000, payload % 7),
        // Long integers (some beyond the magnitude limit), deep nesting, long padding.
        52 => {
            let run = (payload >> 2) as usize % 64;
            match payload % 4 {
                0 => (u64::from(payload) * 1_000_003).to_string(),
                1 => "(".repeat(run),
                2 => "-".repeat(run),
                _ => " ".repeat(run * 4),
            }
        }
        // `.5` and malformed `..5`.
        53 => ".".repeat(1 + payload as usize % 2) + &(payload % 10).to_string(),
        54..=61 => " ".to_owned(),
        62 => NEAR_MISSES[payload as usize % NEAR_MISSES.len()].to_owned(),
        _ => char::from_u32(payload % 0x11_0000)
            .unwrap_or('\u{fffd}')
            .to_string(),
    }
}

fn input() -> impl Strategy<Value = String> {
    // Mostly short inputs; the longest go over the length limit.
    prop::collection::vec(any::<u32>(), 0..48)
        .prop_map(|codes| codes.into_iter().map(fragment).collect())
}

/// The limits that may refuse the canonical text of a valid input or tree:
/// it is longer, and `(-x)` / `(not x)` nest one level deeper than `-x` / `not x`.
fn is_limit(error: &CalcError) -> bool {
    match error {
        CalcError::TooLong { .. } => true,
        CalcError::Syntax { message, .. } => *message == format!("nesting deeper than {MAX_DEPTH}"),
        _ => false,
    }
}

/// Evaluating the canonical rendering of `ast` gives `expected` (same value or same error code).
/// (`run` is compared with `evaluate` on every random string; here it would only double the cost.)
fn check_round_trip(
    ast: &Expr,
    expected: &Result<CalcValue, CalcError>,
    columns: &dyn ColumnSource,
) -> Result<(), TestCaseError> {
    let text = ast.to_string();
    match calculator::parse(&text) {
        Ok(again) => {
            prop_assert_eq!(
                again.to_string(),
                text.clone(),
                "the rendering is a fixed point"
            );
            let value = calculator::eval_with(&again, columns).map(|e| e.value);
            match (&value, expected) {
                (Ok(a), Ok(b)) => prop_assert_eq!(a, b, "{}", text),
                (Err(a), Err(b)) => prop_assert_eq!(a.code(), b.code(), "{}", text),
                _ => prop_assert!(false, "{text}: {value:?} vs {expected:?}"),
            }
        }
        Err(error) => prop_assert!(is_limit(&error), "{text}: {error}"),
    }
    Ok(())
}

/// Random `u32`s read one at a time; past the end every code is 0, which makes a
/// leaf, so every sequence builds a finite tree and shorter sequences (what
/// proptest shrinks to) build smaller ones.
struct Codes<'a> {
    codes: &'a [u32],
    next: usize,
}

impl Codes<'_> {
    fn take(&mut self) -> u32 {
        let code = self.codes.get(self.next).copied().unwrap_or(0);
        self.next += 1;
        code
    }
}

/// A non-negative literal (the parser only makes those; `-` is a node): small
/// integers, eighths and tenths, and a few edge values.
fn literal(payload: u32) -> f64 {
    const EDGES: [f64; 7] = [0.1, 0.2, 0.3, 1e-7, 1e14 + 0.5, 1e15, 999_999_999_999_999.0];
    match payload % 10 {
        0..=3 => f64::from(payload % 101),
        4 | 5 => f64::from(payload % 10_001) / 8.0,
        6 | 7 => f64::from(payload % 10_001) / 10.0,
        8 => 0.0,
        _ => EDGES[payload as usize % EDGES.len()],
    }
}

fn binary(op: BinOp, left: Expr, right: Expr) -> Expr {
    Expr::Binary {
        op,
        left: Box::new(left),
        right: Box::new(right),
        position: 0,
    }
}

/// `**` is rarer: most random exponents overflow.
const ARITHMETIC: [BinOp; 9] = [
    BinOp::Add,
    BinOp::Add,
    BinOp::Sub,
    BinOp::Sub,
    BinOp::Mul,
    BinOp::Mul,
    BinOp::Div,
    BinOp::Div,
    BinOp::Pow,
];
const ORDERING: [BinOp; 6] = [
    BinOp::Less,
    BinOp::LessEqual,
    BinOp::Greater,
    BinOp::GreaterEqual,
    BinOp::Equal,
    BinOp::NotEqual,
];
const LOGIC: [BinOp; 4] = [BinOp::And, BinOp::Or, BinOp::Equal, BinOp::NotEqual];

/// A well-typed number-valued tree of at most `depth` levels.
fn number_tree(codes: &mut Codes, depth: u32) -> Expr {
    let code = codes.take();
    let payload = code >> 4;
    if depth == 0 {
        return Expr::Number(literal(payload));
    }
    match code % 16 {
        0..=4 => Expr::Number(literal(payload)),
        5..=10 => {
            let op = ARITHMETIC[payload as usize % ARITHMETIC.len()];
            let left = number_tree(codes, depth - 1);
            binary(op, left, number_tree(codes, depth - 1))
        }
        11 | 12 => Expr::Unary {
            op: UnaryOp::Neg,
            operand: Box::new(number_tree(codes, depth - 1)),
            position: 0,
        },
        _ => Expr::Call {
            function: Function::ALL[payload as usize % Function::ALL.len()],
            arguments: (0..1 + (payload >> 4) % 4)
                .map(|_| number_tree(codes, depth - 1))
                .collect(),
            position: 0,
        },
    }
}

/// A well-typed boolean-valued tree of at most `depth` levels.
fn boolean_tree(codes: &mut Codes, depth: u32) -> Expr {
    let code = codes.take();
    let payload = code >> 4;
    if depth == 0 {
        return Expr::Boolean(payload.is_multiple_of(2));
    }
    match code % 16 {
        0..=2 => Expr::Boolean(payload.is_multiple_of(2)),
        3..=8 => {
            let op = ORDERING[payload as usize % ORDERING.len()];
            let left = number_tree(codes, depth - 1);
            binary(op, left, number_tree(codes, depth - 1))
        }
        9..=13 => {
            let op = LOGIC[payload as usize % LOGIC.len()];
            let left = boolean_tree(codes, depth - 1);
            binary(op, left, boolean_tree(codes, depth - 1))
        }
        _ => Expr::Unary {
            op: UnaryOp::Not,
            operand: Box::new(boolean_tree(codes, depth - 1)),
            position: 0,
        },
    }
}

/// Random well-typed trees (numbers and booleans), built from random codes.
fn tree() -> impl Strategy<Value = Expr> {
    (any::<bool>(), prop::collection::vec(any::<u32>(), 0..48)).prop_map(|(boolean, codes)| {
        let mut codes = Codes {
            codes: &codes,
            next: 0,
        };
        if boolean {
            boolean_tree(&mut codes, 5)
        } else {
            number_tree(&mut codes, 5)
        }
    })
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn random_strings_never_panic_and_fail_with_known_codes(text in input()) {
        let chars = text.chars().count();
        let columns = ledger();
        let evaluated = calculator::evaluate_with(&text, &columns).map(|e| e.value);
        match &evaluated {
            Err(error) => {
                prop_assert!(KNOWN_CODES.contains(&error.code()), "{text:?}: {error:?}");
                if let Some(position) = error.position() {
                    prop_assert!(position <= chars, "{text:?}: {error:?}");
                }
                prop_assert!(!error.to_string().is_empty());
            }
            Ok(_) => {
                prop_assert!(chars <= MAX_EXPRESSION_CHARS);
                check_round_trip(&calculator::parse(&text).unwrap(), &evaluated, &columns)?;
            }
        }
        // The tool entry point agrees with `evaluate`.
        match (calculator::run_with(&text, &columns), &evaluated) {
            (Ok(out), Ok(value)) => {
                prop_assert_eq!(&out.result["value"], &value.to_json());
                prop_assert_eq!(&out.result["expression"], &serde_json::json!(text));
            }
            (Err(tool), Err(error)) => {
                prop_assert_eq!(tool.code, error.code());
                prop_assert!(!tool.retryable);
            }
            (run, _) => prop_assert!(false, "{text:?}: run {run:?} vs evaluate {evaluated:?}"),
        }
    }

    #[test]
    fn random_trees_render_and_parse_back_to_the_same_value(
        ast in tree()
    ) {
        let direct = calculator::eval(&ast);
        if let Err(error) = &direct {
            prop_assert!(KNOWN_CODES.contains(&error.code()), "{error:?}");
        }
        check_round_trip(&ast, &direct, &NoColumns)?;
    }
}

/// The generators reach what the fuzz is meant to reach: every error code from
/// strings, successes of both types, and mostly round-trippable trees.
#[test]
fn generators_cover_every_outcome() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    use std::collections::BTreeMap;

    const SAMPLES: usize = 10_000;
    let mut runner = TestRunner::deterministic();
    let mut outcomes: BTreeMap<&str, usize> = BTreeMap::new();
    let strategy = input();
    let columns = ledger();
    for _ in 0..SAMPLES {
        let text = strategy.new_tree(&mut runner).unwrap().current();
        let outcome = match calculator::evaluate_with(&text, &columns).map(|e| e.value) {
            Ok(CalcValue::Number(_)) => "ok_number",
            Ok(CalcValue::Boolean(_)) => "ok_boolean",
            Err(error) => error.code(),
        };
        *outcomes.entry(outcome).or_default() += 1;
    }
    let mut trees: BTreeMap<&str, usize> = BTreeMap::new();
    let strategy = tree();
    for _ in 0..SAMPLES {
        let ast = strategy.new_tree(&mut runner).unwrap().current();
        let outcome = match (calculator::parse(&ast.to_string()), calculator::eval(&ast)) {
            (Err(_), _) => "beyond_limits",
            (Ok(_), Ok(CalcValue::Number(_))) => "ok_number",
            (Ok(_), Ok(CalcValue::Boolean(_))) => "ok_boolean",
            (Ok(_), Err(error)) => error.code(),
        };
        *trees.entry(outcome).or_default() += 1;
    }
    println!("strings: {outcomes:?}\ntrees: {trees:?}");
    for code in KNOWN_CODES {
        assert!(
            outcomes.contains_key(code) || trees.contains_key(code),
            "no generated case ends in {code}: strings {outcomes:?}, trees {trees:?}"
        );
    }
    let share = |counts: &BTreeMap<&str, usize>, key| counts.get(key).copied().unwrap_or(0);
    // Random strings are rarely well-formed, but some must get all the way through.
    assert!(
        share(&outcomes, "ok_number") >= SAMPLES / 200,
        "{outcomes:?}"
    );
    assert!(
        share(&outcomes, "ok_boolean") >= SAMPLES / 1000,
        "{outcomes:?}"
    );
    // Trees mostly evaluate, of both types, and mostly stay within the limits when rendered.
    assert!(share(&trees, "ok_number") >= SAMPLES / 5, "{trees:?}");
    assert!(share(&trees, "ok_boolean") >= SAMPLES / 5, "{trees:?}");
    assert!(share(&trees, "beyond_limits") <= SAMPLES / 20, "{trees:?}");
}
