//! The stage's three core tests: a valid call is wrapped, an undeclared argument is
//! refused before the handler runs, a missing argument is reported. Not edge cases
//! (those are in errors.rs) and not the transfer scenario (transfer.rs).

use std::collections::BTreeMap;

use pretty_assertions::assert_eq;
use structured_tool_execution::{ContractError, ExecutionResult, ToolContract, execute_tool};

/// A tool argument as a caller might send it: text or a flag.
#[derive(Debug, Clone, PartialEq)]
enum Arg {
    Text(&'static str),
    Flag(bool),
}

fn arguments<V, const N: usize>(pairs: [(&str, V); N]) -> BTreeMap<String, V> {
    pairs
        .into_iter()
        .map(|(name, value)| (name.to_owned(), value))
        .collect()
}

#[test]
fn valid_arguments_return_a_wrapped_result() {
    let contract = ToolContract::new("sum", &["a", "b"], &[]);

    let result = execute_tool(
        &contract,
        |args| args["a"] + args["b"],
        &arguments([("a", 2), ("b", 3)]),
    )
    .expect("a and b are exactly the declared arguments");

    assert_eq!(
        result,
        ExecutionResult {
            tool_name: "sum".to_owned(),
            output: 5
        }
    );
}

#[test]
fn unexpected_arguments_are_rejected_before_execution() {
    let contract = ToolContract::new("read", &["path"], &[]);
    let mut handler_ran = false;

    let outcome = execute_tool(
        &contract,
        |_args| {
            handler_ran = true;
            "file contents"
        },
        &arguments([("path", Arg::Text("a.txt")), ("sudo", Arg::Flag(true))]),
    );

    let error =
        outcome.expect_err("an undeclared argument must be refused before the handler runs");
    assert_eq!(
        error,
        ContractError::Unexpected {
            tool: "read".to_owned(),
            names: vec!["sudo".to_owned()]
        }
    );
    assert!(
        !handler_ran,
        "the handler ran although the call carried an undeclared argument"
    );
}

#[test]
fn missing_arguments_are_reported() {
    let contract = ToolContract::new("read", &["path"], &[]);
    let mut handler_ran = false;

    let outcome = execute_tool(
        &contract,
        |_args| {
            handler_ran = true;
        },
        &BTreeMap::<String, Arg>::new(),
    );

    assert_eq!(
        outcome,
        Err(ContractError::Missing {
            tool: "read".to_owned(),
            names: vec!["path".to_owned()]
        })
    );
    assert!(
        !handler_ran,
        "the handler ran although a required argument was missing"
    );
}
