//! `StopController`: verified success, fatal error, step budget, repeated action — in that order.

use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StopReason {
    Continue,
    VerifiedSuccess,
    FatalError,
    StepBudgetExhausted,
    RepeatedAction,
}

impl StopReason {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Continue => "continue",
            Self::VerifiedSuccess => "verified_success",
            Self::FatalError => "fatal_error",
            Self::StepBudgetExhausted => "step_budget_exhausted",
            Self::RepeatedAction => "repeated_action",
        }
    }
}

impl fmt::Display for StopReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StopDecision {
    pub stop: bool,
    pub reason: StopReason,
}

impl StopDecision {
    fn stop(reason: StopReason) -> Self {
        Self { stop: true, reason }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StopConfigError {
    #[error("max_steps must be at least 1, got {0}")]
    ZeroSteps(u32),
    #[error("repeat_limit must be at least 2, got {0}")]
    RepeatLimitTooSmall(u32),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StopController {
    max_steps: u32,
    repeat_limit: u32,
}

impl Default for StopController {
    /// The course defaults: 8 steps, stop when an action appears twice.
    fn default() -> Self {
        Self {
            max_steps: 8,
            repeat_limit: 2,
        }
    }
}

impl StopController {
    pub fn new(max_steps: u32, repeat_limit: u32) -> Result<Self, StopConfigError> {
        if max_steps < 1 {
            return Err(StopConfigError::ZeroSteps(max_steps));
        }
        // A limit of 1 would stop on every first action.
        if repeat_limit < 2 {
            return Err(StopConfigError::RepeatLimitTooSmall(repeat_limit));
        }
        Ok(Self {
            max_steps,
            repeat_limit,
        })
    }

    pub fn max_steps(&self) -> u32 {
        self.max_steps
    }

    pub fn repeat_limit(&self) -> u32 {
        self.repeat_limit
    }

    /// Decides from facts the harness supplies. `verified` must come from an
    /// external check: an action named "answer" proves nothing by itself.
    pub fn decide<S: AsRef<str>>(
        &self,
        step_count: u32,
        verified: bool,
        fatal_error: bool,
        action_history: &[S],
    ) -> StopDecision {
        if verified {
            return StopDecision::stop(StopReason::VerifiedSuccess);
        }
        if fatal_error {
            return StopDecision::stop(StopReason::FatalError);
        }
        if step_count >= self.max_steps {
            return StopDecision::stop(StopReason::StepBudgetExhausted);
        }
        if let Some(last) = action_history.last() {
            let repeats = action_history
                .iter()
                .filter(|a| a.as_ref() == last.as_ref())
                .count();
            if repeats >= self.repeat_limit as usize {
                return StopDecision::stop(StopReason::RepeatedAction);
            }
        }
        StopDecision {
            stop: false,
            reason: StopReason::Continue,
        }
    }
}
