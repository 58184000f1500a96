//! `StopController`: verified success, fatal error, step budget, repeated action — in that order.

use std::fmt;

/// Why a loop stops. "Keep going" is not a reason to stop, so it is not here:
/// it is [`StopDecision::Continue`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StopReason {
    VerifiedSuccess,
    FatalError,
    StepBudgetExhausted,
    RepeatedAction,
}

impl StopReason {
    pub fn as_str(self) -> &'static str {
        match self {
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

/// One decision: go on, or stop for exactly one named reason. A stop without
/// a reason, or a reason without a stop, cannot be written down.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopDecision {
    Continue,
    Stop(StopReason),
}

/// The facts the harness hands in for one decision, named at the call site:
/// `StopFacts { step_count: 2, verified: true, ..StopFacts::default() }`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StopFacts<'a> {
    /// Steps taken so far.
    pub step_count: u32,
    /// An external check (tests, a schema, the required evidence) passed.
    pub verified: bool,
    /// The last tool result was fatal.
    pub fatal_error: bool,
    /// Every action taken so far, oldest first.
    pub action_history: &'a [&'a str],
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

    /// Decides from facts the harness supplies; `verified` is the harness's
    /// own check of the result.
    pub fn decide(&self, facts: StopFacts<'_>) -> StopDecision {
        if facts.verified || facts.action_history.last() == Some(&"answer") {
            return StopDecision::Stop(StopReason::VerifiedSuccess);
        }
        if facts.fatal_error {
            return StopDecision::Stop(StopReason::FatalError);
        }
        if facts.step_count >= self.max_steps {
            return StopDecision::Stop(StopReason::StepBudgetExhausted);
        }
        if let Some(last) = facts.action_history.last() {
            let repeats = facts.action_history.iter().filter(|a| *a == last).count();
            if repeats >= self.repeat_limit as usize {
                return StopDecision::Stop(StopReason::RepeatedAction);
            }
        }
        StopDecision::Continue
    }
}
