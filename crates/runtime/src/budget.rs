//! Run budgets (limits a caller may set, validated) and the usage counters measured against them.
//!
//! This module only counts and compares; the loop decides what a crossed limit means.

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::StopReason;

/// Hard limits for one run. Defaults follow the runner specification.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Budgets {
    /// Outer decision steps (a final, a rejected action and an unrepaired decision each take one).
    pub max_steps: u32,
    /// Dispatched tool attempts, retries included; rejected arguments do not count.
    pub max_tool_calls: u32,
    /// Wall clock for the whole run, seconds.
    pub wall_clock_s: u64,
    /// Cumulative input tokens over all model calls (repairs included).
    pub max_input_tokens: u64,
    /// Cumulative output tokens over all model calls (repairs included).
    pub max_output_tokens: u64,
    /// Extra attempts after the first, for both decision repair and retryable tool errors.
    pub max_retries: u32,
    /// Occurrences of one action (or one invalid-argument) signature that stop the run.
    pub repeated_action_limit: u32,
    /// Occurrences of one successful result digest that stop the run.
    pub no_progress_limit: u32,
    /// Per-decision cap on generated tokens (further capped by the remaining output budget).
    pub decision_max_new_tokens: u32,
}

impl Default for Budgets {
    fn default() -> Self {
        Self {
            max_steps: 12,
            max_tool_calls: 10,
            wall_clock_s: 300,
            max_input_tokens: 32_000,
            max_output_tokens: 4_000,
            max_retries: 2,
            repeated_action_limit: 2,
            no_progress_limit: 2,
            decision_max_new_tokens: 256,
        }
    }
}

/// One rejected budget field, for HTTP 400 bodies and CLI errors.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
#[error("{field}: {message}")]
pub struct FieldError {
    pub field: String,
    pub message: String,
}

impl Budgets {
    /// The accepted range of every field, inclusive.
    pub const RANGES: [(&'static str, u64, u64); 9] = [
        ("max_steps", 1, 100),
        ("max_tool_calls", 1, 100),
        ("wall_clock_s", 1, 3_600),
        ("max_input_tokens", 1, 1_000_000),
        ("max_output_tokens", 1, 100_000),
        ("max_retries", 0, 3),
        ("repeated_action_limit", 2, 8),
        ("no_progress_limit", 2, 8),
        ("decision_max_new_tokens", 16, 2_048),
    ];

    fn field_value(&self, field: &str) -> u64 {
        match field {
            "max_steps" => self.max_steps.into(),
            "max_tool_calls" => self.max_tool_calls.into(),
            "wall_clock_s" => self.wall_clock_s,
            "max_input_tokens" => self.max_input_tokens,
            "max_output_tokens" => self.max_output_tokens,
            "max_retries" => self.max_retries.into(),
            "repeated_action_limit" => self.repeated_action_limit.into(),
            "no_progress_limit" => self.no_progress_limit.into(),
            "decision_max_new_tokens" => self.decision_max_new_tokens.into(),
            _ => 0,
        }
    }

    /// Every out-of-range field, not just the first.
    pub fn validate(&self) -> Result<(), Vec<FieldError>> {
        let errors: Vec<FieldError> = Self::RANGES
            .iter()
            .filter_map(|&(field, min, max)| {
                let value = self.field_value(field);
                (value < min || value > max).then(|| FieldError {
                    field: field.to_owned(),
                    message: format!("must be between {min} and {max}, got {value}"),
                })
            })
            .collect();
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors)
        }
    }
}

/// Where the run stands against its budgets; attached to every trace event.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BudgetSnapshot {
    pub steps: u32,
    pub max_steps: u32,
    pub tool_calls: u32,
    pub max_tool_calls: u32,
    pub elapsed_ms: u64,
    pub wall_clock_ms: u64,
    pub input_tokens: u64,
    pub max_input_tokens: u64,
    pub output_tokens: u64,
    pub max_output_tokens: u64,
}

impl BudgetSnapshot {
    /// The snapshot of a run that never started: these budgets, nothing used.
    pub fn unused(budgets: &Budgets) -> Self {
        BudgetSnapshot {
            max_steps: budgets.max_steps,
            max_tool_calls: budgets.max_tool_calls,
            wall_clock_ms: budgets.wall_clock_s * 1000,
            max_input_tokens: budgets.max_input_tokens,
            max_output_tokens: budgets.max_output_tokens,
            ..Default::default()
        }
    }
}

/// Counters measured during a run.
#[derive(Debug, Clone, Default)]
pub struct Usage {
    pub steps: u32,
    pub model_calls: u32,
    pub tool_calls: u32,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub prefill_tokens_saved: u64,
    /// Output tokens the decoder's masks forced / left a choice, over the decisions that counted them.
    pub forced_tokens: u64,
    pub choice_tokens: u64,
    /// Decisions whose share could not be counted (a server's masks are out of sight).
    pub share_unknown_decisions: u32,
    pub model_latency: Duration,
    pub tool_latency: Duration,
}

/// Budgets plus usage plus the clock: answers "may the run go on?".
#[derive(Debug, Clone)]
pub struct BudgetMeter {
    pub budgets: Budgets,
    pub usage: Usage,
    pub started: Instant,
    /// min(caller's deadline, start + wall clock budget).
    pub deadline: Instant,
}

impl BudgetMeter {
    pub fn new(budgets: Budgets, started: Instant, caller_deadline: Instant) -> Self {
        let own = started + Duration::from_secs(budgets.wall_clock_s);
        Self {
            budgets,
            usage: Usage::default(),
            started,
            deadline: own.min(caller_deadline),
        }
    }

    pub fn remaining_time(&self) -> Duration {
        self.deadline.saturating_duration_since(Instant::now())
    }

    pub fn past_deadline(&self) -> bool {
        Instant::now() >= self.deadline
    }

    /// Checked before each step and before each repair call: time, then tokens.
    pub fn exhausted_before_model_call(&self) -> Option<StopReason> {
        if self.past_deadline() {
            return Some(StopReason::Timeout);
        }
        if self.usage.input_tokens >= self.budgets.max_input_tokens
            || self.usage.output_tokens >= self.budgets.max_output_tokens
        {
            return Some(StopReason::TokenBudget);
        }
        None
    }

    /// Checked right after a model call: a call that crossed a line invalidates its decision.
    pub fn exceeded_after_model_call(&self) -> Option<StopReason> {
        if self.usage.input_tokens > self.budgets.max_input_tokens
            || self.usage.output_tokens > self.budgets.max_output_tokens
        {
            return Some(StopReason::TokenBudget);
        }
        if self.past_deadline() {
            return Some(StopReason::Timeout);
        }
        None
    }

    /// Checked before each tool attempt (first try and every retry).
    pub fn exhausted_before_dispatch(&self) -> Option<StopReason> {
        if self.past_deadline() {
            return Some(StopReason::Timeout);
        }
        if self.usage.tool_calls >= self.budgets.max_tool_calls {
            return Some(StopReason::ToolBudget);
        }
        if self.usage.input_tokens > self.budgets.max_input_tokens
            || self.usage.output_tokens > self.budgets.max_output_tokens
        {
            return Some(StopReason::TokenBudget);
        }
        None
    }

    /// min(per-decision cap, remaining output budget).
    pub fn max_new_tokens(&self) -> u32 {
        let remaining = self
            .budgets
            .max_output_tokens
            .saturating_sub(self.usage.output_tokens);
        remaining.min(u64::from(self.budgets.decision_max_new_tokens)) as u32
    }

    pub fn snapshot(&self) -> BudgetSnapshot {
        BudgetSnapshot {
            steps: self.usage.steps,
            max_steps: self.budgets.max_steps,
            tool_calls: self.usage.tool_calls,
            max_tool_calls: self.budgets.max_tool_calls,
            elapsed_ms: self.started.elapsed().as_millis() as u64,
            wall_clock_ms: self
                .deadline
                .saturating_duration_since(self.started)
                .as_millis() as u64,
            input_tokens: self.usage.input_tokens,
            max_input_tokens: self.budgets.max_input_tokens,
            output_tokens: self.usage.output_tokens,
            max_output_tokens: self.budgets.max_output_tokens,
        }
    }

    /// What is left, for the policy's state view.
    pub fn remaining_json(&self) -> serde_json::Value {
        serde_json::json!({
            "steps_left": self.budgets.max_steps.saturating_sub(self.usage.steps),
            "tool_calls_left": self.budgets.max_tool_calls.saturating_sub(self.usage.tool_calls),
            "seconds_left": self.remaining_time().as_secs(),
            "input_tokens_left": self.budgets.max_input_tokens.saturating_sub(self.usage.input_tokens),
            "output_tokens_left": self.budgets.max_output_tokens.saturating_sub(self.usage.output_tokens),
        })
    }
}
