//! Transfer challenge (music production): compose, mix, master with a
//! three-step budget. Runs on the solution only.

use pretty_assertions::assert_eq;
use stop_conditions::{StopController, StopDecision, StopReason};

#[test]
fn music_session_stops_when_the_three_step_budget_is_spent() {
    let controller = StopController::new(3, 2).unwrap();

    let decision = controller.decide(3, false, false, &["compose", "mix", "master"]);

    assert_eq!(
        decision,
        StopDecision {
            stop: true,
            reason: StopReason::StepBudgetExhausted
        }
    );
    assert_eq!(decision.reason.to_string(), "step_budget_exhausted");
}

#[test]
fn music_session_continues_before_the_budget_is_spent() {
    let controller = StopController::new(3, 2).unwrap();
    assert_eq!(
        controller.decide(2, false, false, &["compose", "mix"]),
        StopDecision {
            stop: false,
            reason: StopReason::Continue
        }
    );
}
