//! One test per `LoopError` variant (value and Display text), plus the stops
//! that only `run_agent_with` can reach: fatal results and custom controllers.

use agent_loop_runner::{LoopError, Step, run_agent, run_agent_with};
use observation_state::{ObservationStatus, StateError};
use pretty_assertions::assert_eq;
use stop_conditions::{StopConfigError, StopController, StopReason};

#[test]
fn zero_step_budget_is_a_config_error_and_runs_nothing() {
    let mut calls = 0;
    let error = run_agent(
        |_| {
            calls += 1;
            ("search".to_owned(), ())
        },
        |_| false,
        0,
    )
    .unwrap_err();

    assert_eq!(error, LoopError::Config(StopConfigError::ZeroSteps(0)));
    assert_eq!(
        error.to_string(),
        "invalid loop configuration: max_steps must be at least 1, got 0"
    );
    assert_eq!(calls, 0);
}

#[test]
fn state_error_message_names_the_refused_tool() {
    let error = LoopError::from(StateError::Terminal {
        tool_name: "write_file".to_owned(),
    });
    assert_eq!(
        error.to_string(),
        "observation state refused a record: loop state is terminal: cannot record write_file after a fatal error"
    );
}

#[test]
fn fatal_step_stops_the_run_with_fatal_error() {
    let mut calls = Vec::new();
    let result = run_agent_with(
        StopController::default(),
        |number| {
            calls.push(number);
            if number == 1 {
                Step::ok("search", "found")
            } else {
                Step {
                    action: "write_file".to_owned(),
                    status: ObservationStatus::FatalError,
                    output: "denied",
                }
            }
        },
        |_| false,
    )
    .unwrap();

    assert_eq!(
        (result.reason, result.steps, calls),
        (StopReason::FatalError, 2, vec![1, 2])
    );
    assert_eq!(
        result.observations[1].status(),
        ObservationStatus::FatalError
    );
}

#[test]
fn retryable_step_does_not_stop_the_run() {
    let result = run_agent_with(
        StopController::new(3, 2).unwrap(),
        |number| match number {
            1 => Step {
                action: "fetch".to_owned(),
                status: ObservationStatus::RetryableError,
                output: (),
            },
            _ => Step::ok(&format!("parse-{number}"), ()),
        },
        |_| false,
    )
    .unwrap();

    assert_eq!(
        (result.reason, result.steps),
        (StopReason::StepBudgetExhausted, 3)
    );
    assert_eq!(
        result
            .observations
            .iter()
            .map(|o| o.status())
            .collect::<Vec<_>>(),
        [
            ObservationStatus::RetryableError,
            ObservationStatus::Ok,
            ObservationStatus::Ok
        ]
    );
}

#[test]
fn custom_repeat_limit_allows_one_more_repeat() {
    let mut calls = Vec::new();
    let result = run_agent_with(
        StopController::new(8, 3).unwrap(),
        |number| {
            calls.push(number);
            Step::ok("search", ())
        },
        |_| false,
    )
    .unwrap();

    assert_eq!(
        (result.reason, result.steps, calls),
        (StopReason::RepeatedAction, 3, vec![1, 2, 3])
    );
}

#[test]
fn single_step_budget_runs_exactly_one_step() {
    let result = run_agent(|_| ("search".to_owned(), 0), |_| false, 1).unwrap();
    assert_eq!(
        (result.reason, result.steps, result.observations.len()),
        (StopReason::StepBudgetExhausted, 1, 1)
    );
}

#[test]
fn verify_sees_each_output_once_in_order() {
    let mut seen = Vec::new();
    let result = run_agent(
        |number| (format!("step-{number}"), number * 10),
        |output| {
            seen.push(*output);
            false
        },
        3,
    )
    .unwrap();

    assert_eq!(seen, [10, 20, 30]);
    assert_eq!(result.reason, StopReason::StepBudgetExhausted);
}
