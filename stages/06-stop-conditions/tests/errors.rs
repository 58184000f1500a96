//! One test per `StopConfigError` variant (value and Display text), the reason
//! names, and the priority order of the stop checks. Not the seed tests.

use pretty_assertions::assert_eq;
use stop_conditions::{StopConfigError, StopController, StopDecision, StopFacts, StopReason};

/// Facts for an unverified step without a fatal error.
fn after(step_count: u32, action_history: &'static [&'static str]) -> StopFacts<'static> {
    StopFacts {
        step_count,
        action_history,
        ..StopFacts::default()
    }
}

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
        controller.decide(StopFacts {
            fatal_error: true,
            ..after(1, &["write_file"])
        }),
        StopDecision::Stop(StopReason::FatalError)
    );
}

#[test]
fn verified_success_wins_over_every_other_reason() {
    let controller = StopController::new(2, 2).unwrap();
    assert_eq!(
        controller.decide(StopFacts {
            verified: true,
            fatal_error: true,
            ..after(2, &["search", "search"])
        }),
        StopDecision::Stop(StopReason::VerifiedSuccess)
    );
}

#[test]
fn fatal_error_wins_over_budget_and_repeat() {
    let controller = StopController::new(2, 2).unwrap();
    assert_eq!(
        controller.decide(StopFacts {
            fatal_error: true,
            ..after(2, &["search", "search"])
        }),
        StopDecision::Stop(StopReason::FatalError)
    );
}

#[test]
fn step_budget_wins_over_repeat() {
    let controller = StopController::new(2, 2).unwrap();
    assert_eq!(
        controller.decide(after(2, &["search", "search"])),
        StopDecision::Stop(StopReason::StepBudgetExhausted)
    );
}

#[test]
fn step_count_past_the_budget_still_stops() {
    let controller = StopController::new(3, 2).unwrap();
    assert_eq!(
        controller.decide(after(7, &["search"])),
        StopDecision::Stop(StopReason::StepBudgetExhausted)
    );
}

#[test]
fn one_step_below_the_budget_continues() {
    let controller = StopController::new(3, 2).unwrap();
    assert_eq!(
        controller.decide(after(2, &["search"])),
        StopDecision::Continue
    );
}

#[test]
fn empty_history_continues() {
    let controller = StopController::default();
    assert_eq!(controller.decide(after(0, &[])), StopDecision::Continue);
}

#[test]
fn repeats_are_counted_across_the_whole_history_not_only_in_a_row() {
    let controller = StopController::default();
    assert_eq!(
        controller.decide(after(3, &["search", "read", "search"])),
        StopDecision::Stop(StopReason::RepeatedAction)
    );
}

#[test]
fn only_the_last_action_is_checked_for_repeats() {
    let controller = StopController::default();
    // "search" appears twice, but the loop has moved on to a new action.
    assert_eq!(
        controller.decide(after(3, &["search", "search", "read"])),
        StopDecision::Continue
    );
}

#[test]
fn higher_repeat_limit_allows_more_repeats() {
    let controller = StopController::new(8, 3).unwrap();
    assert_eq!(
        controller.decide(after(2, &["search", "search"])),
        StopDecision::Continue
    );
    assert_eq!(
        controller.decide(after(3, &["search", "search", "search"])),
        StopDecision::Stop(StopReason::RepeatedAction)
    );
}

#[test]
fn histories_built_at_run_time_are_accepted() {
    let controller = StopController::default();
    let owned = ["plot".to_owned(), "plot".to_owned()];
    let history: Vec<&str> = owned.iter().map(String::as_str).collect();
    assert_eq!(
        controller.decide(StopFacts {
            step_count: 2,
            action_history: &history,
            ..StopFacts::default()
        }),
        StopDecision::Stop(StopReason::RepeatedAction)
    );
}
