//! The stage 07 seed tests: the loop returns at a verified output, at a
//! repeated action and at the step budget, and records what it ran.

use agent_loop_runner::{LoopResult, run_agent};
use observation_state::ObservationStatus;
use pretty_assertions::assert_eq;
use stop_conditions::StopReason;

/// The software-delivery output of one step: has the change been accepted?
#[derive(Debug, Clone, PartialEq)]
struct Progress {
    complete: bool,
}

fn summary<P>(result: &LoopResult<P>) -> Vec<(usize, String, ObservationStatus)> {
    result
        .observations
        .iter()
        .map(|o| (o.sequence(), o.tool_name().to_owned(), o.status()))
        .collect()
}

#[test]
fn runner_stops_immediately_after_verified_output() {
    let mut calls = Vec::new();
    let step = |number: u32| {
        calls.push(number);
        if number == 1 {
            ("inspect".to_owned(), Progress { complete: false })
        } else {
            ("answer".to_owned(), Progress { complete: true })
        }
    };

    let result = run_agent(step, |output: &Progress| output.complete, 5).unwrap();

    assert_eq!(
        (result.reason, result.steps, calls),
        (StopReason::VerifiedSuccess, 2, vec![1, 2]),
        "the loop must return at the first verified output and call step no more"
    );
    assert_eq!(
        summary(&result),
        [
            (1, "inspect".to_owned(), ObservationStatus::Ok),
            (2, "answer".to_owned(), ObservationStatus::Ok)
        ]
    );
    assert_eq!(
        result.observations[1].payload(),
        &Progress { complete: true }
    );
}

#[test]
fn runner_stops_repeated_actions() {
    let mut calls = Vec::new();
    let step = |number: u32| {
        calls.push(number);
        ("search".to_owned(), Progress { complete: false })
    };

    let result = run_agent(step, |output: &Progress| output.complete, 5).unwrap();

    assert_eq!(
        (result.reason, result.steps, calls),
        (StopReason::RepeatedAction, 2, vec![1, 2])
    );
    assert_eq!(result.observations.len(), 2);
}

#[test]
fn runner_obeys_step_budget() {
    let mut calls = Vec::new();
    let step = |number: u32| {
        calls.push(number);
        (format!("action-{number}"), Progress { complete: false })
    };

    let result = run_agent(step, |output: &Progress| output.complete, 3).unwrap();

    assert_eq!(
        (result.reason, result.steps, calls),
        (StopReason::StepBudgetExhausted, 3, vec![1, 2, 3])
    );
    assert_eq!(
        summary(&result),
        [
            (1, "action-1".to_owned(), ObservationStatus::Ok),
            (2, "action-2".to_owned(), ObservationStatus::Ok),
            (3, "action-3".to_owned(), ObservationStatus::Ok),
        ]
    );
}
