//! One test per `SelectionError` variant (value and Display text), plus edge cases of the ranking.
//!
//! These also run with the fault swapped in, so none of them depends on the tie check
//! inside `select_action`; the `Ambiguous` text is checked on a constructed value.

use std::collections::BTreeSet;

use action_selection::{Action, SelectionError, ToolSpec, select_action};
use pretty_assertions::assert_eq;

fn caps(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|name| (*name).to_owned()).collect()
}

fn editor_tools() -> [ToolSpec; 2] {
    [
        ToolSpec::new("reader", &["read"]),
        ToolSpec::new("editor", &["read", "write"]),
    ]
}

#[test]
fn empty_goal_is_rejected() {
    let error = select_action("", &caps(&["read"]), &editor_tools())
        .expect_err("an empty goal has nothing to serve");

    assert_eq!(error, SelectionError::EmptyGoal);
    assert_eq!(error.to_string(), "goal is required");
}

#[test]
fn whitespace_only_goal_is_rejected() {
    let error = select_action(" \t\n ", &caps(&["read"]), &editor_tools())
        .expect_err("a goal of only whitespace is still empty");

    assert_eq!(error, SelectionError::EmptyGoal);
}

#[test]
fn goal_is_checked_before_the_tools() {
    // Both inputs are bad; the goal is reported because without a goal no ranking means anything.
    let error = select_action("", &caps(&["read"]), &[]).expect_err("empty goal and no tools");

    assert_eq!(error, SelectionError::EmptyGoal);
}

#[test]
fn no_tool_display_names_the_problem() {
    let error = select_action("deploy the app", &caps(&["deploy"]), &editor_tools())
        .expect_err("nothing can deploy");

    assert_eq!(error, SelectionError::NoTool);
    assert_eq!(
        error.to_string(),
        "no tool satisfies the required capabilities"
    );
}

#[test]
fn empty_tool_list_is_no_tool() {
    let error = select_action("update the file", &caps(&["read"]), &[])
        .expect_err("there is nothing to choose from");

    assert_eq!(error, SelectionError::NoTool);
}

#[test]
fn empty_required_set_is_no_tool() {
    // Every score is zero, so no tool is evidence for anything.
    let error = select_action("update the file", &BTreeSet::new(), &editor_tools())
        .expect_err("no capability was asked for");

    assert_eq!(error, SelectionError::NoTool);
}

#[test]
fn ambiguous_display_lists_every_tied_tool_and_the_score() {
    let error = SelectionError::Ambiguous {
        tied: vec!["a".to_owned(), "b".to_owned(), "c".to_owned()],
        score: 2,
    };

    assert_eq!(
        error.to_string(),
        "ambiguous tool choice requires clarification: a, b, c tie with 2 matching capabilities"
    );
}

#[test]
fn tie_below_the_top_does_not_matter() {
    let tools = [
        ToolSpec::new("viewer", &["read"]),
        ToolSpec::new("editor", &["read", "write"]),
        ToolSpec::new("cat", &["read"]),
    ];

    let action = select_action("update the file", &caps(&["read", "write"]), &tools)
        .expect("viewer and cat tie for second place, editor is alone at the top");

    assert_eq!(action.tool_name, "editor");
}

#[test]
fn input_order_does_not_change_the_choice() {
    let mut tools = editor_tools().to_vec();
    let forward =
        select_action("update the file", &caps(&["read", "write"]), &tools).expect("editor wins");
    tools.reverse();
    let backward = select_action("update the file", &caps(&["read", "write"]), &tools)
        .expect("editor still wins");

    assert_eq!(forward, backward);
}

#[test]
fn capabilities_outside_the_requirement_do_not_score() {
    // "admin" has many capabilities, but only one of them is asked for.
    let tools = [
        ToolSpec::new("admin", &["delete", "deploy", "read", "shutdown"]),
        ToolSpec::new("editor", &["read", "write"]),
    ];

    let action = select_action("update the file", &caps(&["read", "write"]), &tools)
        .expect("editor matches two");

    assert_eq!(
        action,
        Action {
            tool_name: "editor".to_owned(),
            reason: "matches 2 required capabilities".to_owned()
        }
    );
}

#[test]
fn tool_spec_new_deduplicates_capabilities() {
    let tool = ToolSpec::new("reader", &["read", "read"]);

    assert_eq!(tool.capabilities, caps(&["read"]));
}
