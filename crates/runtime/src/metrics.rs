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

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use crate::grounding::GroundedValues;

use crate::answer::{mentions_value, phrase_present, result_masks, verdict_of, Verdict, VerdictPhrases};
use crate::budget::Usage;
use crate::numbers;
use crate::observe::ObservationRecord;
use crate::{RunStatus, StopReason};

/// One required evidence item: the tool, and what its successful observation's result contains.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EvidenceExpectation {
    pub tool: String,
    /// Subset pattern on the result (see [`subset`]), on the current knowledge result shape.
    pub result: Value,
    /// From a v1 `data.batches` only: some table in `data.tables` has exactly these row labels, with
    /// these values in one column (v1 never named the column). Empty: no such check.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub labelled_column: Vec<(String, f64)>,
}

/// Checks on the accepted final answer. Entries of `words`, `any_of` and `none` that are numbers
/// ("79") are checked as numbers ([`mentions_value`]), the rest as phrases ([`phrase_present`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct AnswerExpectation {
    /// Values the answer must state (a printed rounding counts; a non-integer needs a decimal).
    pub numbers: Vec<f64>,
    /// Words or phrases that must be present, not negated.
    pub words: Vec<String>,
    /// v1 `contains_any`: at least one must be present (empty: no check).
    pub any_of: Vec<String>,
    /// The rule's truth (true = met), read with the task's verdict phrases.
    pub verdict: Option<bool>,
    /// Words or phrases that must not be present un-negated.
    pub none: Vec<String>,
}

/// `expected.json` read into one form, whichever version it was written in.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Expected {
    /// The version the file was written in (1 or 2).
    pub format_version: u32,
    /// In causal order.
    pub evidence: Vec<EvidenceExpectation>,
    pub final_answer: AnswerExpectation,
    /// Stop reasons that are a correct ending for this task (a solvable task: only `cancelled`).
    pub protected_stop_reasons: Vec<StopReason>,
    /// Whether a right run answers (verified) or abstains (names what it cannot verify).
    pub outcome: ExpectedOutcome,
}

/// What a right run of a task ends with (`expected.json` `outcome`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExpectedOutcome {
    #[default]
    Answer,
    Abstain,
}

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
pub fn outcome_of(expected: &Expected, answer: Option<&str>, verification: Option<crate::claims::VerificationStatus>, checks_pass: bool) -> Outcome {
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

/// Why `expected.json` could not be used. Messages name the file as `<task>/expected.json`, never an
/// absolute path.
#[derive(Debug, thiserror::Error)]
pub enum ExpectedError {
    #[error("{path} does not exist")]
    Missing { path: String },
    #[error("cannot read {path}: {source}")]
    Read { path: String, source: std::io::Error },
    #[error("{path} is not valid JSON: {source}")]
    Json { path: String, source: serde_json::Error },
    #[error("{path} is not a valid format_version {version} file: {source}")]
    Shape { path: String, version: u32, source: serde_json::Error },
    #[error("{path}: {message}")]
    Invalid { path: String, message: String },
}

impl ExpectedError {
    /// `missing` when there is no file, `invalid` for everything else.
    pub fn reason(&self) -> UnavailableReason {
        match self {
            ExpectedError::Missing { .. } => UnavailableReason::Missing,
            _ => UnavailableReason::Invalid,
        }
    }
}

/// Whether a run could be scored, as stored in the result and the `run.finished` event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum GroundTruth {
    Loaded,
    Unavailable { reason: UnavailableReason, message: String },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UnavailableReason {
    Missing,
    Invalid,
}

impl GroundTruth {
    /// What a load attempt means for the run's report.
    pub fn from_load(loaded: &Result<Expected, ExpectedError>) -> GroundTruth {
        match loaded {
            Ok(_) => GroundTruth::Loaded,
            Err(error) => GroundTruth::Unavailable { reason: error.reason(), message: error.to_string() },
        }
    }
}

// The two file formats, as written. `format_version` is read before choosing one; each struct still
// names it so that `deny_unknown_fields` accepts it.

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileV2 {
    #[serde(rename = "format_version")]
    _format_version: u32,
    evidence: Vec<EvidenceV2>,
    final_answer: FinalAnswerV2,
    protected_stop_reasons: Vec<StopReason>,
    #[serde(default)]
    outcome: ExpectedOutcome,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EvidenceV2 {
    tool: String,
    result: Value,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FinalAnswerV2 {
    #[serde(default)]
    numbers: Vec<f64>,
    #[serde(default)]
    words: Vec<String>,
    #[serde(default)]
    verdict: Option<bool>,
    #[serde(default)]
    none: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileV1 {
    #[serde(rename = "format_version")]
    _format_version: u32,
    tools: BTreeMap<String, ToolV1>,
    causal_order: Vec<String>,
    final_answer: AnswerV1,
    protected_stop_reasons: Vec<StopReason>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ToolV1 {
    result: Value,
}

#[derive(Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct AnswerV1 {
    contains_all: Vec<String>,
    contains_any: Vec<String>,
    contains_none: Vec<String>,
}

impl Expected {
    /// Reads `<task_dir>/expected.json` (either version).
    pub fn load(task_dir: &Path) -> Result<Expected, ExpectedError> {
        let path = crate::task::display_name(task_dir, "expected.json");
        let text = match std::fs::read_to_string(task_dir.join("expected.json")) {
            Ok(text) => text,
            Err(source) if source.kind() == std::io::ErrorKind::NotFound => return Err(ExpectedError::Missing { path }),
            Err(source) => return Err(ExpectedError::Read { path, source }),
        };
        Expected::parse(&text, &path)
    }

    /// Parses the text of an `expected.json`; `path` is only used in messages.
    pub fn parse(text: &str, path: &str) -> Result<Expected, ExpectedError> {
        let path = path.to_owned();
        let value: Value = serde_json::from_str(text).map_err(|source| ExpectedError::Json { path: path.clone(), source })?;
        let invalid = |message: String| ExpectedError::Invalid { path: path.clone(), message };
        let version = match value.get("format_version") {
            None => return Err(invalid("format_version is missing (1 or 2)".into())),
            Some(v) => match v.as_u64() {
                Some(n @ (1 | 2)) => n as u32,
                _ => return Err(invalid(format!("format_version must be 1 or 2, got {v}"))),
            },
        };
        let shape = |source| ExpectedError::Shape { path: path.clone(), version, source };
        let expected = if version == 2 {
            let file: FileV2 = serde_json::from_str(text).map_err(shape)?;
            Expected {
                format_version: 2,
                evidence: file
                    .evidence
                    .into_iter()
                    .map(|e| EvidenceExpectation { tool: e.tool, result: e.result, labelled_column: Vec::new() })
                    .collect(),
                final_answer: AnswerExpectation {
                    numbers: file.final_answer.numbers,
                    words: file.final_answer.words,
                    any_of: Vec::new(),
                    verdict: file.final_answer.verdict,
                    none: file.final_answer.none,
                },
                protected_stop_reasons: file.protected_stop_reasons,
                outcome: file.outcome,
            }
        } else {
            let file: FileV1 = serde_json::from_str(text).map_err(shape)?;
            from_v1(file).map_err(invalid)?
        };
        expected.check().map_err(invalid)?;
        Ok(expected)
    }

    /// Rules serde cannot state: known tools, object results, usable answer checks.
    fn check(&self) -> Result<(), String> {
        if self.evidence.is_empty() {
            return Err("evidence must list at least one item".into());
        }
        let known = crate::registry::ToolRegistry::builtin().tool_names();
        for (index, item) in self.evidence.iter().enumerate() {
            if !known.contains(&item.tool.as_str()) {
                return Err(format!("evidence[{index}] names unknown tool {:?}", item.tool));
            }
            if !item.result.is_object() {
                return Err(format!("evidence[{index}].result must be an object, got {}", crate::decision::json_type_name(&item.result)));
            }
        }
        let answer = &self.final_answer;
        for (field, list) in [("words", &answer.words), ("any_of", &answer.any_of), ("none", &answer.none)] {
            if list.iter().any(|s| s.trim().is_empty()) {
                return Err(format!("final_answer.{field} holds an empty entry"));
            }
        }
        Ok(())
    }

    /// Whether `record` is a successful observation of `item`'s tool whose result matches it.
    pub fn item_matches(item: &EvidenceExpectation, record: &ObservationRecord) -> bool {
        let (true, Some(result)) = (record.ok, record.result.as_ref()) else { return false };
        if record.tool != item.tool {
            return false;
        }
        let result = current_shape(result);
        subset(&item.result, &result) && (item.labelled_column.is_empty() || has_labelled_column(&result, &item.labelled_column))
    }

    /// Whether `record` matches any evidence item.
    pub fn matches(&self, record: &ObservationRecord) -> bool {
        self.evidence.iter().any(|item| Expected::item_matches(item, record))
    }
}

/// A v1 file in the internal form: `causal_order` names the evidence items, `tools` their results; a
/// knowledge expectation on the old result shape is translated (see [`translate_old_knowledge`]).
fn from_v1(file: FileV1) -> Result<Expected, String> {
    let mut evidence = Vec::new();
    for (index, tool) in file.causal_order.iter().enumerate() {
        if file.causal_order[..index].contains(tool) {
            return Err(format!("causal_order names {tool:?} twice"));
        }
        let Some(expectation) = file.tools.get(tool) else {
            return Err(format!("causal_order names {tool:?}, which has no entry in tools"));
        };
        let (result, labelled_column) =
            translate_old_knowledge(expectation.result.clone()).map_err(|message| format!("tools.{tool}.result: {message}"))?;
        evidence.push(EvidenceExpectation { tool: tool.clone(), result, labelled_column });
    }
    if let Some(extra) = file.tools.keys().find(|t| !file.causal_order.contains(t)) {
        return Err(format!("tools names {extra:?}, which causal_order does not list"));
    }
    let mut answer = AnswerExpectation::default();
    for entry in file.final_answer.contains_all {
        match number_term(&entry) {
            Some(value) => answer.numbers.push(value),
            None => answer.words.push(entry),
        }
    }
    answer.any_of = file.final_answer.contains_any;
    answer.none = file.final_answer.contains_none;
    Ok(Expected { format_version: 1, evidence, final_answer: answer, protected_stop_reasons: file.protected_stop_reasons, outcome: ExpectedOutcome::Answer })
}

/// A v1 knowledge expectation on the old result shape, restated for the current one:
/// `data.batches` [{label, value}] → "some table has exactly these labels with these values in one
/// column" (returned separately: a subset pattern cannot bind the unnamed column);
/// `data.release_rule` {key: value} → `data.facts` [{key, value}] ("facts have these keys with these values").
fn translate_old_knowledge(mut result: Value) -> Result<(Value, Vec<(String, f64)>), String> {
    let Some(data) = result.get_mut("data").and_then(Value::as_object_mut) else { return Ok((result, Vec::new())) };
    let mut column = Vec::new();
    if let Some(batches) = data.remove("batches") {
        let Value::Array(batches) = batches else { return Err("data.batches must be an array".into()) };
        for (index, batch) in batches.iter().enumerate() {
            let label = batch.get("label").and_then(Value::as_str);
            let value = batch.get("value").and_then(Value::as_f64);
            match (label, value, batch.as_object().map(Map::len)) {
                (Some(label), Some(value), Some(2)) => column.push((label.to_owned(), value)),
                _ => return Err(format!("data.batches[{index}] must be {{\"label\": string, \"value\": number}}")),
            }
        }
        if column.is_empty() {
            return Err("data.batches must not be empty".into());
        }
    }
    if let Some(rule) = data.remove("release_rule") {
        let Value::Object(rule) = rule else { return Err("data.release_rule must be an object".into()) };
        let mut facts = Vec::new();
        for (key, value) in rule {
            if !value.is_number() {
                return Err(format!("data.release_rule.{key} must be a number"));
            }
            facts.push(json!({ "key": key, "value": value }));
        }
        data.insert("facts".into(), Value::Array(facts));
    }
    Ok((result, column))
}

/// A knowledge result in the current shape (`data.tables[].rows[]`, `data.facts[]`). A result in the
/// old shape (`data.batches`, `data.release_rule`) is read as that shape: the batches are one table
/// whose column is `data.metric`, the rule's entries are facts. Anything else is returned as is.
fn current_shape(result: &Value) -> std::borrow::Cow<'_, Value> {
    let data = &result["data"];
    let old_rows = data.get("batches").and_then(Value::as_array);
    let old_rule = data.get("release_rule").and_then(Value::as_object);
    if (old_rows.is_none() || data.get("tables").is_some()) && (old_rule.is_none() || data.get("facts").is_some()) {
        return std::borrow::Cow::Borrowed(result);
    }
    let mut result = result.clone();
    let column = data.get("metric").and_then(Value::as_str).unwrap_or("value").to_owned();
    let data = result["data"].as_object_mut().expect("checked above: data is an object");
    if let Some(rows) = old_rows.filter(|_| !data.contains_key("tables")) {
        let rows: Vec<Value> =
            rows.iter().map(|row| json!({ "label": row["label"], "values": { column.as_str(): row["value"] } })).collect();
        let tables = if rows.is_empty() { json!([]) } else { json!([{ "rows": rows }]) };
        data.insert("tables".into(), tables);
    }
    if let Some(rule) = old_rule.filter(|_| !data.contains_key("facts")) {
        let facts: Vec<Value> = rule.iter().map(|(key, value)| json!({ "key": key, "value": value })).collect();
        data.insert("facts".into(), Value::Array(facts));
    }
    std::borrow::Cow::Owned(result)
}

/// Some table in `result.data.tables` has exactly `rows` (labels, order free) with their values in one column.
fn has_labelled_column(result: &Value, rows: &[(String, f64)]) -> bool {
    let Some(tables) = result["data"]["tables"].as_array() else { return false };
    tables.iter().any(|table| {
        let Some(actual) = table["rows"].as_array().filter(|a| a.len() == rows.len()) else { return false };
        let columns: Vec<&String> = actual.iter().filter_map(|r| r["values"].as_object()).flat_map(Map::keys).collect();
        columns.iter().any(|column| {
            rows.iter().all(|(label, value)| {
                actual.iter().any(|row| {
                    row["label"].as_str() == Some(label.as_str())
                        && row["values"][column.as_str()].as_f64().is_some_and(|v| same_number(*value, v))
                })
            })
        })
    })
}

fn same_number(expected: f64, actual: f64) -> bool {
    (expected - actual).abs() <= 1e-9 * expected.abs().max(1.0)
}

/// `expected ⊆ actual`: objects by key; arrays of objects — each expected element matches some actual
/// element, order free; other arrays (scalars, or empty) — same length and order, element-wise;
/// numbers by value (relative 1e-9); booleans, strings and null exactly.
pub fn subset(expected: &Value, actual: &Value) -> bool {
    match (expected, actual) {
        (Value::Object(e), Value::Object(a)) => e.iter().all(|(k, v)| a.get(k).is_some_and(|av| subset(v, av))),
        (Value::Array(e), Value::Array(a)) => {
            if !e.is_empty() && e.iter().all(Value::is_object) {
                e.iter().all(|x| a.iter().any(|y| subset(x, y)))
            } else {
                e.len() == a.len() && e.iter().zip(a).all(|(x, y)| subset(x, y))
            }
        }
        (Value::Number(e), Value::Number(a)) => match (e.as_f64(), a.as_f64()) {
            (Some(x), Some(y)) => same_number(x, y),
            _ => false,
        },
        (e, a) => e == a,
    }
}

/// A string that is one number ("79", "72.5", "79%") is checked as a number, not as a word.
fn number_term(entry: &str) -> Option<f64> {
    numbers::parse_quantity(entry).filter(|q| q.unit.is_none() || q.unit.as_deref() == Some("%")).map(|q| q.value)
}

/// Whether the answer states `term`: a number by value, anything else as a phrase.
fn term_present(answer: &str, term: &str, masks: &[&str]) -> bool {
    match number_term(term) {
        Some(value) => mentions_value(answer, value, masks),
        None => phrase_present(answer, term),
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

/// One evidence item and the observation that satisfied it in causal order (`None`: none did).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvidenceCheck {
    pub tool: String,
    pub observation: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NumberCheck {
    pub value: f64,
    pub stated: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TermCheck {
    pub term: String,
    /// Present and not negated (for `none`, present means the check failed).
    pub present: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VerdictCheck {
    pub expected: bool,
    pub found: Verdict,
    pub ok: bool,
}

/// Why Task Success is what it is: every check, and the failed ones in words.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SuccessChecks {
    pub final_accepted: bool,
    /// In causal order; matched greedily as a subsequence of the ledger.
    pub evidence: Vec<EvidenceCheck>,
    pub numbers: Vec<NumberCheck>,
    pub words: Vec<TermCheck>,
    /// v1 `contains_any` (empty for v2).
    pub any_of: Vec<TermCheck>,
    pub verdict: Option<VerdictCheck>,
    pub none: Vec<TermCheck>,
    /// One line per failed check; empty exactly when Task Success is true.
    pub failures: Vec<String>,
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
pub fn compute(input: &MetricsInput, expected: Option<&Expected>, phrases: &VerdictPhrases) -> Metrics {
    let counters = input.counters;
    let usage = input.usage;
    let accurate_actions = expected.map(|e| accurate_actions(e, input.observations));
    let checks = expected.map(|e| success_checks(e, input.accepted_answer, input.observations, phrases));
    let termination_correctness = expected.map(|e| termination_correct(e, input));
    let outcome = expected
        .zip(checks.as_ref())
        .map(|(e, c)| outcome_of(e, input.accepted_answer, input.verification, c.failures.is_empty()));
    Metrics {
        task_success: outcome.map(|o| o == Outcome::Correct),
        outcome,
        task_success_checks: checks,
        valid_action_rate: ratio(counters.valid_actions, counters.action_attempts),
        tool_argument_accuracy: accurate_actions.and_then(|n| ratio(n, counters.action_attempts)),
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
    for value in spec["values"].as_array().into_iter().flatten().chain([&spec["average"]]) {
        if let Some(x) = value.as_f64() {
            spelled.extend(crate::numbers::scan(&crate::numbers::canonical(x)).into_iter().map(|mut m| {
                m.value = x;
                m
            }));
        }
    }
    if spelled.is_empty() {
        return None;
    }
    let before = GroundedValues::collect(&observations[..index], &[]);
    let unestablished: Vec<&crate::numbers::NumberMention> = spelled.iter().filter(|m| !before.grounds(m)).collect();
    if unestablished.is_empty() {
        return None;
    }
    (index + 1..observations.len()).find_map(|later| {
        let then = GroundedValues::collect(&observations[..=later], &[]);
        unestablished.iter().find(|m| then.grounds(m)).map(|m| (m.value, observations[later].id.clone()))
    })
}

/// A successful observation is accurate when it matches an evidence item *and* uses no value only a later
/// observation established (a calculator result before any correct knowledge lookup is a guess, however
/// right the number).
pub fn accurate_actions(expected: &Expected, observations: &[ObservationRecord]) -> u32 {
    (0..observations.len())
        .filter(|&k| {
            expected.evidence.iter().any(|item| Expected::item_matches(item, &observations[k]))
                && guessed_value(observations, k).is_none()
        })
        .count() as u32
}

/// Strings whose digits are not claims: every observation id and the labels, keys and ids inside the
/// results (see [`crate::answer::result_masks`]; old-shape results are read in the current shape first).
pub fn answer_masks(observations: &[ObservationRecord]) -> Vec<String> {
    let mut out = Vec::new();
    for record in observations {
        out.push(record.id.clone());
        if let Some(result) = &record.result {
            out.extend(result_masks(&current_shape(result)));
        }
    }
    out.sort();
    out.dedup();
    out
}

/// Every Task Success check, with the reasons it fails.
pub fn success_checks(
    expected: &Expected,
    answer: Option<&str>,
    observations: &[ObservationRecord],
    phrases: &VerdictPhrases,
) -> SuccessChecks {
    let mut failures = Vec::new();
    // Every expected item is matched by a distinct observation that uses no value only a later observation
    // established: causal order as data dependency (data → calculation → chart; a rule check by column
    // reference and the average it does not use, in either order).
    let mut evidence: Vec<EvidenceCheck> =
        expected.evidence.iter().map(|item| EvidenceCheck { tool: item.tool.clone(), observation: None }).collect();
    let mut used: Vec<usize> = Vec::new();
    for (i, item) in expected.evidence.iter().enumerate() {
        let candidates: Vec<usize> = (0..observations.len())
            .filter(|k| !used.contains(k) && Expected::item_matches(item, &observations[*k]))
            .collect();
        match candidates.iter().find(|&&k| guessed_value(observations, k).is_none()) {
            Some(&k) => {
                evidence[i].observation = Some(observations[k].id.clone());
                used.push(k);
            }
            None => {
                let reason = match candidates.first().and_then(|&k| guessed_value(observations, k)) {
                    Some((value, id)) => format!("uses {} before {id} established it", crate::numbers::canonical(value)),
                    None => "has no matching observation".to_owned(),
                };
                failures.push(format!("evidence {} ({}) {reason}", i + 1, item.tool));
                break;
            }
        }
    }
    let mut checks = SuccessChecks {
        final_accepted: answer.is_some(),
        evidence,
        numbers: Vec::new(),
        words: Vec::new(),
        any_of: Vec::new(),
        verdict: None,
        none: Vec::new(),
        failures: Vec::new(),
    };
    let Some(answer) = answer else {
        failures.insert(0, "no accepted final answer".into());
        checks.failures = failures;
        return checks;
    };
    let masks = answer_masks(observations);
    let masks: Vec<&str> = masks.iter().map(String::as_str).collect();
    let wanted = &expected.final_answer;
    for &value in &wanted.numbers {
        let stated = mentions_value(answer, value, &masks);
        if !stated {
            failures.push(format!("the answer does not state {}", numbers::canonical(value)));
        }
        checks.numbers.push(NumberCheck { value, stated });
    }
    for term in &wanted.words {
        let present = term_present(answer, term, &masks);
        if !present {
            failures.push(format!("the answer does not say {term:?}"));
        }
        checks.words.push(TermCheck { term: term.clone(), present });
    }
    for term in &wanted.any_of {
        checks.any_of.push(TermCheck { term: term.clone(), present: term_present(answer, term, &masks) });
    }
    if !checks.any_of.is_empty() && !checks.any_of.iter().any(|c| c.present) {
        failures.push(format!("the answer says none of {:?}", wanted.any_of));
    }
    if let Some(truth) = wanted.verdict {
        let found = verdict_of(answer, phrases);
        let ok = found == if truth { Verdict::Met } else { Verdict::NotMet };
        if !ok {
            let want = if truth { "met" } else { "not met" };
            failures.push(format!("the verdict should be {want}; the answer says {}", verdict_words(found)));
        }
        checks.verdict = Some(VerdictCheck { expected: truth, found, ok });
    }
    for term in &wanted.none {
        let present = term_present(answer, term, &masks);
        if present {
            failures.push(format!("the answer says {term:?}, which it must not"));
        }
        checks.none.push(TermCheck { term: term.clone(), present });
    }
    checks.failures = failures;
    checks
}

fn verdict_words(verdict: Verdict) -> &'static str {
    match verdict {
        Verdict::Met => "met",
        Verdict::NotMet => "not met",
        Verdict::Both => "both met and not met",
        Verdict::Neither => "neither",
    }
}

/// Task Success alone (see [`success_checks`] for why).
pub fn task_success(expected: &Expected, answer: Option<&str>, observations: &[ObservationRecord], phrases: &VerdictPhrases) -> bool {
    success_checks(expected, answer, observations, phrases).failures.is_empty()
}
