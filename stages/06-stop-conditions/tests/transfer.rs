//! Transfer challenge (music production): the same stop rules on a mixing
//! session. The reference answer to the learner's transfer test; it must fail
//! on the stage's fault.

use pretty_assertions::assert_eq;
use stop_conditions::{StopController, StopDecision, StopFacts, StopReason};

#[test]
fn a_claimed_master_is_not_a_finished_track_until_the_loudness_check_passes() {
    let controller = StopController::new(5, 2).unwrap();

    // The agent says the track is done; the loudness check has not run yet.
    let claimed = controller.decide(StopFacts {
        step_count: 3,
        verified: false,
        fatal_error: false,
        action_history: &["compose", "mix", "answer"],
    });
    assert_eq!(claimed, StopDecision::Continue);

    // The check passed: now the session ends as a success.
    let checked = controller.decide(StopFacts {
        step_count: 4,
        verified: true,
        fatal_error: false,
        action_history: &["compose", "mix", "answer", "measure_loudness"],
    });
    assert_eq!(checked, StopDecision::Stop(StopReason::VerifiedSuccess));
}

#[test]
fn music_session_stops_when_the_three_step_budget_is_spent() {
    let controller = StopController::new(3, 2).unwrap();

    let decision = controller.decide(StopFacts {
        step_count: 3,
        action_history: &["compose", "mix", "master"],
        ..StopFacts::default()
    });

    assert_eq!(
        decision,
        StopDecision::Stop(StopReason::StepBudgetExhausted)
    );
}
