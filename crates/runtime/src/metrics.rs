//! Run metrics, computed once after the run from counters, observations and the task's
//! `expected.json` (ground truth the policy, prompts and tools never see).
//!
//! Formulas follow the runner specification; a zero denominator gives `None` (shown as N/A),
//! never 0. Nothing here names a particular task's numbers: they all come from `expected.json`.

use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::budget::Usage;
use crate::observe::ObservationRecord;
use crate::{RunStatus, StopReason};

/// What a correct result of one tool contains (a subset match on the observation result).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolExpectation {
    /// Every key/value here must appear in the observation's result (numbers compare by value).
    pub result: Value,
}

/// Checks on the accepted final answer (case-insensitive substring tests).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AnswerExpectation {
    pub contains_all: Vec<String>,
    pub contains_any: Vec<String>,
    pub contains_none: Vec<String>,
}

/// `expected.json`: the ground truth for one task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expected {
    pub format_version: u32,
    /// tool name → what its correct result contains.
    pub tools: std::collections::BTreeMap<String, ToolExpectation>,
    /// The order in which correct observations must appear for Task Success.
    pub causal_order: Vec<String>,
    pub final_answer: AnswerExpectation,
    /// Stop reasons that count as a correct (protective) termination.
    pub protected_stop_reasons: Vec<StopReason>,
}

#[derive(Debug, thiserror::Error)]
pub enum ExpectedError {
    #[error("cannot read {path}: {source}")]
    Read { path: String, source: std::io::Error },
    #[error("{path} is not a valid expected file: {source}")]
    Parse { path: String, source: serde_json::Error },
}

impl Expected {
    /// Reads `<task_dir>/expected.json`.
    pub fn load(task_dir: &Path) -> Result<Expected, ExpectedError> {
        let shown = crate::task::display_name(task_dir, "expected.json");
        let text = std::fs::read_to_string(task_dir.join("expected.json"))
            .map_err(|source| ExpectedError::Read { path: shown.clone(), source })?;
        serde_json::from_str(&text).map_err(|source| ExpectedError::Parse { path: shown, source })
    }

    /// Whether `record` is a successful observation whose result matches this task's truth.
    pub fn matches(&self, record: &ObservationRecord) -> bool {
        let (true, Some(result)) = (record.ok, record.result.as_ref()) else { return false };
        self.tools.get(&record.tool).is_some_and(|expectation| subset(&expectation.result, result))
    }
}

/// `expected ⊆ actual`: objects by key, arrays element-wise (same length), numbers by value.
pub fn subset(expected: &Value, actual: &Value) -> bool {
    match (expected, actual) {
        (Value::Object(e), Value::Object(a)) => e.iter().all(|(k, v)| a.get(k).is_some_and(|av| subset(v, av))),
        (Value::Array(e), Value::Array(a)) => e.len() == a.len() && e.iter().zip(a).all(|(x, y)| subset(x, y)),
        (Value::Number(e), Value::Number(a)) => match (e.as_f64(), a.as_f64()) {
            (Some(x), Some(y)) => (x - y).abs() <= 1e-9 * x.abs().max(1.0),
            _ => false,
        },
        (Value::String(e), Value::String(a)) => e == a,
        (e, a) => e == a,
    }
}

/// Counters the loop keeps for scoring.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Counters {
    /// Parsed non-final actions (including ones a guard then stopped).
    pub action_attempts: u32,
    /// Actions whose arguments passed the registry.
    pub valid_actions: u32,
    /// Outputs that failed to parse as a decision.
    pub invalid_decisions: u32,
    /// Registered recoverable failures (invalid decision in a step, invalid arguments,
    /// premature final, retryable tool attempt).
    pub recoverable_failures: u32,
    pub recovered: u32,
    /// Any loop guard fired.
    pub loop_guard_fired: bool,
    /// Finals rejected by the evidence gate.
    pub rejected_finals: u32,
}

/// The numbers reported after a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Metrics {
    /// Accepted final + correct observations in causal order + answer checks. `None` without ground truth.
    pub task_success: Option<bool>,
    /// valid_actions / action_attempts.
    pub valid_action_rate: Option<f64>,
    /// accurate_actions / action_attempts.
    pub tool_argument_accuracy: Option<f64>,
    /// recovered / recoverable_failures.
    pub recovery_rate: Option<f64>,
    /// (1 if any guard fired else 0) / action_attempts.
    pub loop_rate: Option<f64>,
    pub termination_correctness: Option<bool>,
    pub steps: u32,
    pub model_calls: u32,
    pub tool_calls: u32,
    pub action_attempts: u32,
    pub valid_actions: u32,
    pub accurate_actions: u32,
    pub invalid_decisions: u32,
    pub recoverable_failures: u32,
    pub recovered: u32,
    pub model_latency_ms: u64,
    pub tool_latency_ms: u64,
    pub total_latency_ms: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub prefill_tokens_saved: u64,
    /// (input_tokens + 2 × output_tokens) / 1000 — a relative compute measure, not money.
    pub cost_units: f64,
}

fn ratio(numerator: u32, denominator: u32) -> Option<f64> {
    (denominator > 0).then(|| f64::from(numerator) / f64::from(denominator))
}

/// Everything the formulas need from a finished run.
pub struct MetricsInput<'a> {
    pub status: RunStatus,
    pub stop_reason: StopReason,
    pub accepted_answer: Option<&'a str>,
    pub observations: &'a [ObservationRecord],
    pub counters: &'a Counters,
    pub usage: &'a Usage,
    pub total_latency: Duration,
}

pub fn compute(input: &MetricsInput, expected: Option<&Expected>) -> Metrics {
    let counters = input.counters;
    let usage = input.usage;
    let accurate_actions = expected.map_or(0, |e| accurate_actions(e, input.observations));
    let task_success = expected.map(|e| task_success(e, input.accepted_answer, input.observations));
    let termination_correctness = expected.map(|e| {
        (input.status == RunStatus::Completed && input.accepted_answer.is_some())
            || e.protected_stop_reasons.contains(&input.stop_reason)
    });
    Metrics {
        task_success,
        valid_action_rate: ratio(counters.valid_actions, counters.action_attempts),
        tool_argument_accuracy: if expected.is_some() { ratio(accurate_actions, counters.action_attempts) } else { None },
        recovery_rate: ratio(counters.recovered, counters.recoverable_failures),
        loop_rate: ratio(u32::from(counters.loop_guard_fired), counters.action_attempts),
        termination_correctness,
        steps: usage.steps,
        model_calls: usage.model_calls,
        tool_calls: usage.tool_calls,
        action_attempts: counters.action_attempts,
        valid_actions: counters.valid_actions,
        accurate_actions,
        invalid_decisions: counters.invalid_decisions,
        recoverable_failures: counters.recoverable_failures,
        recovered: counters.recovered,
        model_latency_ms: usage.model_latency.as_millis() as u64,
        tool_latency_ms: usage.tool_latency.as_millis() as u64,
        total_latency_ms: input.total_latency.as_millis() as u64,
        input_tokens: usage.input_tokens,
        output_tokens: usage.output_tokens,
        prefill_tokens_saved: usage.prefill_tokens_saved,
        cost_units: cost_units(usage.input_tokens, usage.output_tokens),
    }
}

pub fn cost_units(input_tokens: u64, output_tokens: u64) -> f64 {
    (input_tokens as f64 + 2.0 * output_tokens as f64) / 1000.0
}

/// A successful observation is accurate when its result matches the truth *and* every tool
/// before it in the causal order already has an earlier matching observation (a calculator
/// result before any correct knowledge lookup is a guess, however right the number).
pub fn accurate_actions(expected: &Expected, observations: &[ObservationRecord]) -> u32 {
    let mut count = 0;
    for (index, record) in observations.iter().enumerate() {
        if !expected.matches(record) {
            continue;
        }
        let predecessors: &[String] = match expected.causal_order.iter().position(|t| *t == record.tool) {
            Some(position) => &expected.causal_order[..position],
            None => &[],
        };
        let grounded = predecessors
            .iter()
            .all(|tool| observations[..index].iter().any(|earlier| earlier.tool == *tool && expected.matches(earlier)));
        if grounded {
            count += 1;
        }
    }
    count
}

pub fn task_success(expected: &Expected, answer: Option<&str>, observations: &[ObservationRecord]) -> bool {
    let Some(answer) = answer else { return false };
    // Correct observations must appear in causal order (a subsequence of the ledger).
    let mut next = 0;
    for record in observations {
        if next < expected.causal_order.len() && record.tool == expected.causal_order[next] && expected.matches(record) {
            next += 1;
        }
    }
    let in_order = next == expected.causal_order.len();
    let lower = answer.to_lowercase();
    let checks = &expected.final_answer;
    let all = checks.contains_all.iter().all(|s| lower.contains(&s.to_lowercase()));
    let any = checks.contains_any.is_empty() || checks.contains_any.iter().any(|s| lower.contains(&s.to_lowercase()));
    let none = checks.contains_none.iter().all(|s| !lower.contains(&s.to_lowercase()));
    in_order && all && any && none
}
