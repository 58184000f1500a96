//! Transfer challenge: the same contract gate, unchanged, in an office research
//! setting (looking up a memo by document id). Runs on the solution only.

use std::collections::BTreeMap;

use pretty_assertions::assert_eq;
use structured_tool_execution::{ContractError, ExecutionResult, ToolContract, execute_tool};

fn lookup_contract() -> ToolContract {
    ToolContract::new("lookup", &["doc_id"], &["version"])
}

fn lookup(args: &BTreeMap<String, String>) -> String {
    match args.get("version") {
        Some(version) => format!("content-{}@{version}", args["doc_id"]),
        None => format!("content-{}", args["doc_id"]),
    }
}

fn arguments<const N: usize>(pairs: [(&str, &str); N]) -> BTreeMap<String, String> {
    pairs
        .into_iter()
        .map(|(name, value)| (name.to_owned(), value.to_owned()))
        .collect()
}

#[test]
fn lookup_returns_the_memo_content() {
    let result = execute_tool(
        &lookup_contract(),
        lookup,
        &arguments([("doc_id", "memo-42")]),
    );

    assert_eq!(
        result,
        Ok(ExecutionResult {
            tool_name: "lookup".to_owned(),
            output: "content-memo-42".to_owned()
        })
    );
}

#[test]
fn lookup_accepts_the_declared_optional_version() {
    let result = execute_tool(
        &lookup_contract(),
        lookup,
        &arguments([("doc_id", "memo-42"), ("version", "2")]),
    );

    assert_eq!(
        result,
        Ok(ExecutionResult {
            tool_name: "lookup".to_owned(),
            output: "content-memo-42@2".to_owned()
        })
    );
}

#[test]
fn lookup_refuses_undeclared_sharing_before_touching_the_document() {
    let mut documents_read = 0;

    let outcome = execute_tool(
        &lookup_contract(),
        |args| {
            documents_read += 1;
            lookup(args)
        },
        &arguments([
            ("doc_id", "memo-42"),
            ("share_with", "everyone@example.com"),
            ("as_admin", "yes"),
        ]),
    );

    assert_eq!(
        outcome,
        Err(ContractError::Unexpected {
            tool: "lookup".to_owned(),
            names: vec!["as_admin".to_owned(), "share_with".to_owned()],
        })
    );
    assert_eq!(documents_read, 0);
}

#[test]
fn lookup_without_a_document_id_is_reported_missing() {
    let outcome = execute_tool(&lookup_contract(), lookup, &arguments([("version", "2")]));

    assert_eq!(
        outcome.map_err(|error| error.to_string()),
        Err("missing arguments for lookup: doc_id".to_owned())
    );
}
