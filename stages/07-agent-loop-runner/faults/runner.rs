//! `run_agent`: a loop that returns the moment any stop decision says so.

use observation_state::{LoopState, Observation, ObservationStatus, StateError};
use stop_conditions::{StopConfigError, StopController, StopDecision, StopFacts, StopReason};

/// What one step produced: the action taken, how it ended, and its output.
#[derive(Debug, Clone, PartialEq)]
pub struct Step<P> {
    pub action: String,
    pub status: ObservationStatus,
    pub output: P,
}

impl<P> Step<P> {
    pub fn ok(action: &str, output: P) -> Self {
        Self {
            action: action.to_owned(),
            status: ObservationStatus::Ok,
            output,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct LoopResult<P> {
    pub reason: StopReason,
    /// Steps actually run (the `step` callback was called this many times).
    pub steps: u32,
    pub observations: Vec<Observation<P>>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LoopError {
    #[error("invalid loop configuration: {0}")]
    Config(#[from] StopConfigError),
    #[error("observation state refused a record: {0}")]
    State(#[from] StateError),
}

/// The course's loop: at most `max_steps` steps, repeat limit 2.
pub fn run_agent<P>(
    mut step: impl FnMut(u32) -> (String, P),
    verify: impl FnMut(&P) -> bool,
    max_steps: u32,
) -> Result<LoopResult<P>, LoopError> {
    let controller = StopController::new(max_steps, 2)?;
    run_agent_with(
        controller,
        |number| {
            let (action, output) = step(number);
            Step::ok(&action, output)
        },
        verify,
    )
}

/// The same loop with a caller-chosen controller and per-step status, so a
/// fatal tool result stops the run.
pub fn run_agent_with<P>(
    controller: StopController,
    mut step: impl FnMut(u32) -> Step<P>,
    mut verify: impl FnMut(&P) -> bool,
) -> Result<LoopResult<P>, LoopError> {
    let mut state = LoopState::new();
    let mut history: Vec<String> = Vec::new();
    for number in 1..=controller.max_steps() {
        let Step {
            action,
            status,
            output,
        } = step(number);
        let verified = verify(&output);
        history.push(action.clone());
        state.record(&action, status, output)?;
        let actions: Vec<&str> = history.iter().map(String::as_str).collect();
        let decision = controller.decide(StopFacts {
            step_count: number,
            verified,
            fatal_error: status == ObservationStatus::FatalError,
            action_history: &actions,
        });
        // What the controller decided after this step.
        if let StopDecision::Stop(reason) = decision
            && reason != StopReason::VerifiedSuccess
        {
            return Ok(LoopResult {
                reason,
                steps: number,
                observations: state.into_observations(),
            });
        }
    }
    Ok(LoopResult {
        reason: StopReason::StepBudgetExhausted,
        steps: controller.max_steps(),
        observations: state.into_observations(),
    })
}
