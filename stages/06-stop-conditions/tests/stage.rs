//! The stage 06 seed tests: only an external verification ends a run as a
//! success, a repeated action stops it, and so does the step budget.

use pretty_assertions::assert_eq;
use stop_conditions::{StopController, StopDecision, StopReason};

fn stop(reason: StopReason) -> StopDecision {
    StopDecision { stop: true, reason }
}

const CONTINUE: StopDecision = StopDecision {
    stop: false,
    reason: StopReason::Continue,
};

#[test]
fn only_verified_success_stops_as_success() {
    let controller = StopController::default();

    assert_eq!(
        controller.decide(1, false, false, &["answer"]),
        CONTINUE,
        "an unverified \"answer\" action is output, not proof: the loop must continue"
    );
    assert_eq!(
        controller.decide(2, true, false, &["answer"]),
        stop(StopReason::VerifiedSuccess)
    );
}

#[test]
fn repeated_action_stops_the_loop() {
    let controller = StopController::new(8, 2).unwrap();

    assert_eq!(controller.decide(1, false, false, &["search"]), CONTINUE);
    assert_eq!(
        controller.decide(2, false, false, &["search", "search"]),
        stop(StopReason::RepeatedAction)
    );
}

#[test]
fn step_budget_stops_the_loop() {
    let controller = StopController::new(3, 2).unwrap();

    assert_eq!(
        controller.decide(2, false, false, &["inspect", "edit"]),
        CONTINUE
    );
    assert_eq!(
        controller.decide(3, false, false, &["inspect", "edit", "test"]),
        stop(StopReason::StepBudgetExhausted)
    );
}
