//! Run metrics and the honest scorer, computed once after the run from counters, observations and the
//! task's `expected.json` (ground truth the policy, prompts and tools never see).
//!
//! `expected.json` comes in two versions (`schemas/expected.schema.json`): v2 lists the evidence in causal
//! order and checks the final answer by numbers, words and verdict; v1 (`tools` + `causal_order` +
//! `contains_*`) is read into the same internal form. Answers are read with [`crate::answer`] (whole
//! words, negation-aware, numbers by value), never as substrings. Formulas follow the runner
//! specification; a zero denominator gives `None` (shown as N/A), never 0, and every metric that needs
//! ground truth is `None` when it is unavailable — which [`GroundTruth`] says, never silently.
//! Nothing here names a particular task's numbers: they all come from `expected.json`.
//!
//! Here: the counters and the run metrics. `expected` reads the ground truth; `success` checks an answer
//! against it.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::answer::VerdictPhrases;
use crate::budget::Usage;
use crate::grounding::GroundedValues;
use crate::ledger::ObservationRecord;
use crate::{RunStatus, StopReason};

mod expected;
mod success;

pub use expected::*;
pub use success::*;

/// How a run ended, scored: the four classes every success figure is reported with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// A verified answer that passes the checks, or a right abstention on a task that cannot be verified.
    Correct,
    /// An accepted answer with claims the runtime could not verify, on a task that could be answered.
    Abstained,
    /// A fully verified answer that fails the checks, or one on a task that cannot be verified.
    WrongAccepted,
    /// No accepted answer.
    NoAnswer,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Correct => "correct",
            Self::Abstained => "abstained",
            Self::WrongAccepted => "wrong_accepted",
            Self::NoAnswer => "no_answer",
        }
    }
}

/// The outcome of a run with `answer` accepted (or not), its verification status and its checks.
pub fn outcome_of(
    expected: &Expected,
    answer: Option<&str>,
    verification: Option<crate::claims::VerificationStatus>,
    checks_pass: bool,
) -> Outcome {
    use crate::claims::VerificationStatus;
    if answer.is_none() {
        return Outcome::NoAnswer;
    }
    let verified = verification.is_none_or(|v| v == VerificationStatus::Verified);
    match (expected.outcome, verified) {
        (ExpectedOutcome::Answer, true) if checks_pass => Outcome::Correct,
        (ExpectedOutcome::Answer, true) => Outcome::WrongAccepted,
        (ExpectedOutcome::Answer, false) => Outcome::Abstained,
        (ExpectedOutcome::Abstain, true) => Outcome::WrongAccepted,
        (ExpectedOutcome::Abstain, false) => Outcome::Correct,
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
    /// The checks behind `task_success` (`None` without ground truth).
    pub task_success_checks: Option<SuccessChecks>,
    /// Correct, abstained, wrong-accepted or no answer (`None` without ground truth); `task_success` is
    /// `outcome == correct`.
    #[serde(default)]
    pub outcome: Option<Outcome>,
    /// valid_actions / action_attempts.
    pub valid_action_rate: Option<f64>,
    /// accurate_actions / action_attempts. `None` without ground truth.
    pub tool_argument_accuracy: Option<f64>,
    /// recovered / recoverable_failures.
    pub recovery_rate: Option<f64>,
    /// (1 if any guard fired else 0) / action_attempts.
    pub loop_rate: Option<f64>,
    /// Completed with an accepted final, or stopped for a reason the task protects. `None` without ground truth.
    pub termination_correctness: Option<bool>,
    pub steps: u32,
    pub model_calls: u32,
    pub tool_calls: u32,
    pub action_attempts: u32,
    pub valid_actions: u32,
    /// `None` without ground truth.
    pub accurate_actions: Option<u32>,
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
    /// Output tokens the decoder's masks forced (the allowed tokens spelled one text), over every decision
    /// that counted its share; the runtime's own prefix is not an output token and is in neither count.
    #[serde(default)]
    pub forced_tokens: u64,
    /// Output tokens where the masks left a real choice.
    #[serde(default)]
    pub choice_tokens: u64,
    /// Decisions whose share is unknown (generated by a server, which applies the grammar out of sight).
    #[serde(default)]
    pub share_unknown_decisions: u32,
    /// forced / (forced + choice), only when every decision was counted (`None`: unknown, or no tokens).
    #[serde(default)]
    pub forced_share: Option<f64>,
}

fn ratio(numerator: u32, denominator: u32) -> Option<f64> {
    (denominator > 0).then(|| f64::from(numerator) / f64::from(denominator))
}

/// Everything the formulas need from a finished run.
pub struct MetricsInput<'a> {
    pub status: RunStatus,
    pub stop_reason: StopReason,
    pub accepted_answer: Option<&'a str>,
    /// The claims gate's status for the accepted answer.
    pub verification: Option<crate::claims::VerificationStatus>,
    pub observations: &'a [ObservationRecord],
    pub counters: &'a Counters,
    pub usage: &'a Usage,
    pub total_latency: Duration,
}

/// The run's metrics; `phrases` are the task's verdict phrases (its own or [`VerdictPhrases::default`]).
pub fn compute(
    input: &MetricsInput,
    expected: Option<&Expected>,
    phrases: &VerdictPhrases,
) -> Metrics {
    let counters = input.counters;
    let usage = input.usage;
    let accurate_actions = expected.map(|e| accurate_actions(e, input.observations));
    let checks =
        expected.map(|e| success_checks(e, input.accepted_answer, input.observations, phrases));
    let termination_correctness = expected.map(|e| termination_correct(e, input));
    let outcome = expected.zip(checks.as_ref()).map(|(e, c)| {
        outcome_of(
            e,
            input.accepted_answer,
            input.verification,
            c.failures.is_empty(),
        )
    });
    Metrics {
        task_success: outcome.map(|o| o == Outcome::Correct),
        outcome,
        task_success_checks: checks,
        valid_action_rate: ratio(counters.valid_actions, counters.action_attempts),
        tool_argument_accuracy: accurate_actions.and_then(|n| ratio(n, counters.action_attempts)),
        recovery_rate: ratio(counters.recovered, counters.recoverable_failures),
        loop_rate: ratio(
            u32::from(counters.loop_guard_fired),
            counters.action_attempts,
        ),
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
        forced_tokens: usage.forced_tokens,
        choice_tokens: usage.choice_tokens,
        share_unknown_decisions: usage.share_unknown_decisions,
        forced_share: forced_share(usage),
    }
}

/// The run's forced share: a share over part of the decisions would be a guess about the rest, so one
/// unknown decision makes the run's share unknown (its counts stay, with the number of unknown decisions).
fn forced_share(usage: &Usage) -> Option<f64> {
    let counted = usage.forced_tokens + usage.choice_tokens;
    (usage.share_unknown_decisions == 0 && counted > 0)
        .then(|| usage.forced_tokens as f64 / counted as f64)
}

pub fn cost_units(input_tokens: u64, output_tokens: u64) -> f64 {
    (input_tokens as f64 + 2.0 * output_tokens as f64) / 1000.0
}

/// Completed with an accepted final, or stopped for a reason this task protects. A solvable task that
/// ends `loop_detected` (or out of steps) ended wrongly.
pub fn termination_correct(expected: &Expected, input: &MetricsInput) -> bool {
    (input.status == RunStatus::Completed && input.accepted_answer.is_some())
        || expected.protected_stop_reasons.contains(&input.stop_reason)
}

/// A number the observation at `index` spells in its own arguments (a calculation's expression, a chart's
/// bars and line) that no earlier observation established but a later one did — what it guessed ahead of the
/// evidence (`(72 + 78) / 2` before the lookup, `27.75 <= 30` before `mean(…) = 27.75` came back, a chart's
/// line before its average was computed), with the id of the observation that established it. Causal order
/// is this data dependency: a check written by column reference (`mean([Wait]) <= 30`) uses no calculation
/// and may come before or after the average.
pub fn guessed_value(observations: &[ObservationRecord], index: usize) -> Option<(f64, String)> {
    let result = observations[index].result.as_ref()?;
    let mut spelled: Vec<crate::numbers::NumberMention> = result["expression"]
        .as_str()
        .map(|e| crate::numbers::scan(&crate::grounding::strip_references(e)))
        .unwrap_or_default();
    let spec = &result["spec"];
    for value in spec["values"]
        .as_array()
        .into_iter()
        .flatten()
        .chain([&spec["average"]])
    {
        if let Some(x) = value.as_f64() {
            spelled.extend(
                crate::numbers::scan(&crate::numbers::canonical(x))
                    .into_iter()
                    .map(|mut m| {
                        m.value = x;
                        m
                    }),
            );
        }
    }
    if spelled.is_empty() {
        return None;
    }
    let before = GroundedValues::collect(&observations[..index], &[]);
    let unestablished: Vec<&crate::numbers::NumberMention> =
        spelled.iter().filter(|m| !before.grounds(m)).collect();
    if unestablished.is_empty() {
        return None;
    }
    (index + 1..observations.len()).find_map(|later| {
        let then = GroundedValues::collect(&observations[..=later], &[]);
        unestablished
            .iter()
            .find(|m| then.grounds(m))
            .map(|m| (m.value, observations[later].id.clone()))
    })
}

/// A successful observation is accurate when it matches an evidence item *and* uses no value only a later
/// observation established (a calculator result before any correct knowledge lookup is a guess, however
/// right the number).
pub fn accurate_actions(expected: &Expected, observations: &[ObservationRecord]) -> u32 {
    (0..observations.len())
        .filter(|&k| {
            expected
                .evidence
                .iter()
                .any(|item| Expected::item_matches(item, &observations[k]))
                && guessed_value(observations, k).is_none()
        })
        .count() as u32
}
