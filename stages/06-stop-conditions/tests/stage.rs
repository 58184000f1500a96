//! The stage 06 seed tests: only an external verification ends a run as a
//! success, a repeated action stops it, and so does the step budget.

use pretty_assertions::assert_eq;
use stop_conditions::{StopController, StopDecision, StopFacts, StopReason};

#[test]
fn only_verified_success_stops_as_success() {
    let controller = StopController::default();

    assert_eq!(
        controller.decide(StopFacts {
            step_count: 1,
            verified: false,
            fatal_error: false,
            action_history: &["answer"],
        }),
        StopDecision::Continue,
        "an unverified \"answer\" action is output, not proof: the loop must continue"
    );
    assert_eq!(
        controller.decide(StopFacts {
            step_count: 2,
            verified: true,
            fatal_error: false,
            action_history: &["answer"],
        }),
        StopDecision::Stop(StopReason::VerifiedSuccess)
    );
}

#[test]
fn repeated_action_stops_the_loop() {
    let controller = StopController::new(8, 2).unwrap();

    assert_eq!(
        controller.decide(StopFacts {
            step_count: 1,
            action_history: &["search"],
            ..StopFacts::default()
        }),
        StopDecision::Continue
    );
    assert_eq!(
        controller.decide(StopFacts {
            step_count: 2,
            action_history: &["search", "search"],
            ..StopFacts::default()
        }),
        StopDecision::Stop(StopReason::RepeatedAction)
    );
}

#[test]
fn step_budget_stops_the_loop() {
    let controller = StopController::new(3, 2).unwrap();

    assert_eq!(
        controller.decide(StopFacts {
            step_count: 2,
            action_history: &["inspect", "edit"],
            ..StopFacts::default()
        }),
        StopDecision::Continue
    );
    assert_eq!(
        controller.decide(StopFacts {
            step_count: 3,
            action_history: &["inspect", "edit", "test"],
            ..StopFacts::default()
        }),
        StopDecision::Stop(StopReason::StepBudgetExhausted)
    );
}
