//! Transfer challenge: the same selector, office-research data instead of software delivery.
//!
//! Runs on the solution only.

use std::collections::BTreeSet;

use action_selection::{Action, SelectionError, ToolSpec, select_action};
use pretty_assertions::assert_eq;

fn caps(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|name| (*name).to_owned()).collect()
}

#[test]
fn office_research_selects_the_finder() {
    let tools = [
        ToolSpec::new("finder", &["search"]),
        ToolSpec::new("reader", &["read"]),
    ];

    let action = select_action("search the spreadsheet", &caps(&["search"]), &tools)
        .expect("finder matches search, reader matches nothing");

    assert_eq!(
        action,
        Action {
            tool_name: "finder".to_owned(),
            reason: "matches 1 required capabilities".to_owned()
        }
    );
}

#[test]
fn office_research_with_two_searchers_asks_which_one() {
    // A second search tool arrives; the selector must not prefer one by its name.
    let tools = [
        ToolSpec::new("sheet_search", &["search"]),
        ToolSpec::new("finder", &["search"]),
        ToolSpec::new("reader", &["read"]),
    ];

    let error = select_action("search the spreadsheet", &caps(&["search"]), &tools)
        .expect_err("finder and sheet_search tie");

    assert_eq!(
        error,
        SelectionError::Ambiguous {
            tied: vec!["finder".to_owned(), "sheet_search".to_owned()],
            score: 1
        }
    );
}

#[test]
fn office_research_without_a_searcher_reports_the_gap() {
    let tools = [
        ToolSpec::new("reader", &["read"]),
        ToolSpec::new("printer", &["print"]),
    ];

    let error = select_action("search the spreadsheet", &caps(&["search"]), &tools)
        .expect_err("nothing can search");

    assert_eq!(error, SelectionError::NoTool);
}
