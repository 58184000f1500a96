//! One test per `ContractError` variant (value and Display text), plus the edges of
//! the contract check that hold with or without the unexpected-argument branch:
//! ordering of reports, optional and empty contracts, case and duplicate names.

use std::collections::BTreeMap;

use pretty_assertions::assert_eq;
use structured_tool_execution::{ContractError, ExecutionResult, ToolContract, execute_tool};

fn arguments<const N: usize>(pairs: [(&str, &'static str); N]) -> BTreeMap<String, &'static str> {
    pairs
        .into_iter()
        .map(|(name, value)| (name.to_owned(), value))
        .collect()
}

#[test]
fn missing_error_lists_every_absent_argument_sorted() {
    let contract = ToolContract::new("plot", &["y", "x", "title"], &[]);

    let error = contract.check(["x"]).expect_err("y and title are required");

    assert_eq!(
        error,
        ContractError::Missing {
            tool: "plot".to_owned(),
            names: vec!["title".to_owned(), "y".to_owned()]
        }
    );
    assert_eq!(error.to_string(), "missing arguments for plot: title, y");
}

#[test]
fn unexpected_error_display_names_the_tool_and_each_argument() {
    let error = ContractError::Unexpected {
        tool: "read".to_owned(),
        names: vec!["force".to_owned(), "sudo".to_owned()],
    };

    assert_eq!(
        error.to_string(),
        "unexpected arguments for read: force, sudo"
    );
}

#[test]
fn contract_error_is_a_std_error() {
    let error: Box<dyn std::error::Error> = Box::new(ContractError::Missing {
        tool: "sum".to_owned(),
        names: vec!["b".to_owned()],
    });

    assert_eq!(error.to_string(), "missing arguments for sum: b");
    assert!(error.source().is_none());
}

#[test]
fn missing_is_reported_before_unexpected() {
    let contract = ToolContract::new("read", &["path"], &[]);

    let outcome = execute_tool(
        &contract,
        |_args| unreachable!("must not run"),
        &arguments([("sudo", "true")]),
    );

    assert_eq!(
        outcome,
        Err::<ExecutionResult<()>, _>(ContractError::Missing {
            tool: "read".to_owned(),
            names: vec!["path".to_owned()],
        })
    );
}

#[test]
fn optional_argument_may_be_given_or_left_out() {
    let contract = ToolContract::new("search", &["query"], &["limit"]);
    let echo = |args: &BTreeMap<String, &'static str>| args.keys().cloned().collect::<Vec<_>>();

    let with_limit = execute_tool(
        &contract,
        echo,
        &arguments([("query", "retry"), ("limit", "3")]),
    );
    let without_limit = execute_tool(&contract, echo, &arguments([("query", "retry")]));

    assert_eq!(
        with_limit,
        Ok(ExecutionResult {
            tool_name: "search".to_owned(),
            output: vec!["limit".to_owned(), "query".to_owned()]
        })
    );
    assert_eq!(
        without_limit,
        Ok(ExecutionResult {
            tool_name: "search".to_owned(),
            output: vec!["query".to_owned()]
        })
    );
}

#[test]
fn optional_argument_cannot_stand_in_for_a_required_one() {
    let contract = ToolContract::new("search", &["query"], &["limit"]);

    assert_eq!(
        contract.check(["limit"]),
        Err(ContractError::Missing {
            tool: "search".to_owned(),
            names: vec!["query".to_owned()]
        })
    );
}

#[test]
fn contract_without_arguments_accepts_an_empty_call() {
    let contract = ToolContract::new("clock", &[], &[]);

    let result = execute_tool(&contract, |args| args.len(), &BTreeMap::<String, u8>::new());

    assert_eq!(
        result,
        Ok(ExecutionResult {
            tool_name: "clock".to_owned(),
            output: 0
        })
    );
}

#[test]
fn argument_names_are_case_sensitive() {
    let contract = ToolContract::new("read", &["path"], &[]);

    // "Path" is not "path": the required name is still absent.
    assert_eq!(
        contract.check(["Path"]),
        Err(ContractError::Missing {
            tool: "read".to_owned(),
            names: vec!["path".to_owned()]
        })
    );
}

#[test]
fn a_name_given_twice_counts_once() {
    let contract = ToolContract::new("read", &["path"], &[]);

    assert_eq!(contract.check(["path", "path"]), Ok(()));
}
