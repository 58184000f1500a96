//! One test per `StopConfigError` variant (value and Display text), the reason
//! names, and the priority order of the stop checks. Not the seed tests.

use pretty_assertions::assert_eq;
use stop_conditions::{StopConfigError, StopController, StopDecision, StopReason};

fn stop(reason: StopReason) -> StopDecision {
    StopDecision { stop: true, reason }
}

const CONTINUE: StopDecision = StopDecision {
    stop: false,
    reason: StopReason::Continue,
};

#[test]
fn zero_step_budget_is_refused() {
    let error = StopController::new(0, 2).unwrap_err();
    assert_eq!(error, StopConfigError::ZeroSteps(0));
    assert_eq!(error.to_string(), "max_steps must be at least 1, got 0");
}

#[test]
fn repeat_limit_below_two_is_refused() {
    for limit in [0, 1] {
        let error = StopController::new(8, limit).unwrap_err();
        assert_eq!(error, StopConfigError::RepeatLimitTooSmall(limit));
        assert_eq!(
            error.to_string(),
            format!("repeat_limit must be at least 2, got {limit}")
        );
    }
}

#[test]
fn smallest_valid_configuration_is_accepted() {
    let controller = StopController::new(1, 2).unwrap();
    assert_eq!((controller.max_steps(), controller.repeat_limit()), (1, 2));
}

#[test]
fn defaults_are_eight_steps_and_repeat_limit_two() {
    let controller = StopController::default();
    assert_eq!((controller.max_steps(), controller.repeat_limit()), (8, 2));
}

#[test]
fn reasons_have_stable_snake_case_names() {
    let names: Vec<String> = [
        StopReason::Continue,
        StopReason::VerifiedSuccess,
        StopReason::FatalError,
        StopReason::StepBudgetExhausted,
        StopReason::RepeatedAction,
    ]
    .iter()
    .map(|reason| reason.to_string())
    .collect();
    assert_eq!(
        names,
        [
            "continue",
            "verified_success",
            "fatal_error",
            "step_budget_exhausted",
            "repeated_action"
        ]
    );
    assert_eq!(StopReason::FatalError.as_str(), "fatal_error");
}

#[test]
fn fatal_error_stops_the_loop() {
    let controller = StopController::default();
    assert_eq!(
        controller.decide(1, false, true, &["write_file"]),
        stop(StopReason::FatalError)
    );
}

#[test]
fn verified_success_wins_over_every_other_reason() {
    let controller = StopController::new(2, 2).unwrap();
    assert_eq!(
        controller.decide(2, true, true, &["search", "search"]),
        stop(StopReason::VerifiedSuccess)
    );
}

#[test]
fn fatal_error_wins_over_budget_and_repeat() {
    let controller = StopController::new(2, 2).unwrap();
    assert_eq!(
        controller.decide(2, false, true, &["search", "search"]),
        stop(StopReason::FatalError)
    );
}

#[test]
fn step_budget_wins_over_repeat() {
    let controller = StopController::new(2, 2).unwrap();
    assert_eq!(
        controller.decide(2, false, false, &["search", "search"]),
        stop(StopReason::StepBudgetExhausted)
    );
}

#[test]
fn step_count_past_the_budget_still_stops() {
    let controller = StopController::new(3, 2).unwrap();
    assert_eq!(
        controller.decide(7, false, false, &["search"]),
        stop(StopReason::StepBudgetExhausted)
    );
}

#[test]
fn empty_history_continues() {
    let controller = StopController::default();
    assert_eq!(controller.decide(0, false, false, &[] as &[&str]), CONTINUE);
}

#[test]
fn repeats_are_counted_across_the_whole_history_not_only_in_a_row() {
    let controller = StopController::default();
    assert_eq!(
        controller.decide(3, false, false, &["search", "read", "search"]),
        stop(StopReason::RepeatedAction)
    );
}

#[test]
fn only_the_last_action_is_checked_for_repeats() {
    let controller = StopController::default();
    // "search" appears twice, but the loop has moved on to a new action.
    assert_eq!(
        controller.decide(3, false, false, &["search", "search", "read"]),
        CONTINUE
    );
}

#[test]
fn higher_repeat_limit_allows_more_repeats() {
    let controller = StopController::new(8, 3).unwrap();
    assert_eq!(
        controller.decide(2, false, false, &["search", "search"]),
        CONTINUE
    );
    assert_eq!(
        controller.decide(3, false, false, &["search", "search", "search"]),
        stop(StopReason::RepeatedAction)
    );
}

#[test]
fn history_accepts_owned_strings() {
    let controller = StopController::default();
    let history = vec!["plot".to_owned(), "plot".to_owned()];
    assert_eq!(
        controller.decide(2, false, false, &history),
        stop(StopReason::RepeatedAction)
    );
}
