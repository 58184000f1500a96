//! The stage's three core tests: one clear winner, a tie that must be refused, no matching tool.
//!
//! These run with the fault swapped in; only `ambiguous_tools_require_clarification` may fail then.

use std::collections::BTreeSet;

use action_selection::{Action, SelectionError, ToolSpec, select_action};
use pretty_assertions::assert_eq;

fn caps(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|name| (*name).to_owned()).collect()
}

#[test]
fn selects_the_only_best_matching_tool() {
    let tools = [
        ToolSpec::new("reader", &["read"]),
        ToolSpec::new("editor", &["read", "write"]),
    ];

    let action = select_action("update the file", &caps(&["read", "write"]), &tools)
        .expect("editor covers both required capabilities, reader only one");

    assert_eq!(
        action,
        Action {
            tool_name: "editor".to_owned(),
            reason: "matches 2 required capabilities".to_owned()
        }
    );
}

#[test]
fn ambiguous_tools_require_clarification() {
    let tools = [ToolSpec::new("a", &["read"]), ToolSpec::new("b", &["read"])];

    let error = select_action("read the file", &caps(&["read"]), &tools)
        .expect_err("two tools tie at the top score, so the selector must ask for clarification instead of picking one");

    assert_eq!(
        error,
        SelectionError::Ambiguous {
            tied: vec!["a".to_owned(), "b".to_owned()],
            score: 1
        }
    );
}

#[test]
fn missing_capability_is_rejected() {
    let tools = [ToolSpec::new("reader", &["read"])];

    let error = select_action("deploy the app", &caps(&["deploy"]), &tools)
        .expect_err("no tool has the deploy capability");

    assert_eq!(error, SelectionError::NoTool);
}
