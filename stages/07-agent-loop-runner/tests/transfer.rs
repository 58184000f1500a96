//! Transfer challenge (office research): research, then a draft brief that the
//! check accepts. Runs on the solution only.

use std::collections::HashMap;

use agent_loop_runner::run_agent;
use pretty_assertions::assert_eq;
use stop_conditions::StopReason;

#[test]
fn research_brief_stops_when_the_draft_is_done() {
    let mut calls = Vec::new();
    let step = |number: u32| {
        calls.push(number);
        match number {
            1 => ("research".to_owned(), HashMap::from([("done", false)])),
            _ => ("draft".to_owned(), HashMap::from([("done", true)])),
        }
    };

    let result = run_agent(step, |output| output["done"], 5).unwrap();

    assert_eq!(
        (result.reason, result.steps),
        (StopReason::VerifiedSuccess, 2)
    );
    assert_eq!(result.observations.len(), 2);
    assert_eq!(
        result
            .observations
            .iter()
            .map(|o| o.tool_name())
            .collect::<Vec<_>>(),
        ["research", "draft"]
    );
    assert_eq!(calls, [1, 2]);
}
