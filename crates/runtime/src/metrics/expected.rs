//! `expected.json`, the ground truth: its two file versions read into one form (`Expected`), what a
//! task's ground truth is when it is unavailable, and the structural match of an expected result.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::StopReason;
use crate::ledger::ObservationRecord;
use crate::numbers;
use forge_tools::knowledge::observed;

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
    /// The item is a rule check: its result is only a boolean `value` and the answer's verdict is expected.
    /// Such an item is met by any boolean result of its tool, whichever way round the check was written
    /// (`sum([Diesel]) <= 48000` true and `sum([Diesel]) > 48000` false check the same rule); the verdict
    /// itself is judged once, in the final answer. Set by [`Expected::parse`], never read from the file.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub rule_check: bool,
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

/// Why `expected.json` could not be used. Messages name the file as `<task>/expected.json`, never an
/// absolute path.
#[derive(Debug, thiserror::Error)]
pub enum ExpectedError {
    #[error("{path} does not exist")]
    Missing { path: String },
    #[error("cannot read {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{path} is not valid JSON: {source}")]
    Json {
        path: String,
        source: serde_json::Error,
    },
    #[error("{path} is not a valid format_version {version} file: {source}")]
    Shape {
        path: String,
        version: u32,
        source: serde_json::Error,
    },
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
    Unavailable {
        reason: UnavailableReason,
        message: String,
    },
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
            Err(error) => GroundTruth::Unavailable {
                reason: error.reason(),
                message: error.to_string(),
            },
        }
    }
}

// The two file formats, as written. `format_version` is read before choosing one; each struct still
// names it so that `deny_unknown_fields` accepts it.

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileV2 {
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
pub(super) struct EvidenceV2 {
    tool: String,
    result: Value,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FinalAnswerV2 {
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
pub(super) struct FileV1 {
    #[serde(rename = "format_version")]
    _format_version: u32,
    tools: BTreeMap<String, ToolV1>,
    causal_order: Vec<String>,
    final_answer: AnswerV1,
    protected_stop_reasons: Vec<StopReason>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ToolV1 {
    result: Value,
}

#[derive(Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(super) struct AnswerV1 {
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
            Err(source) if source.kind() == std::io::ErrorKind::NotFound => {
                return Err(ExpectedError::Missing { path });
            }
            Err(source) => return Err(ExpectedError::Read { path, source }),
        };
        Expected::parse(&text, &path)
    }

    /// Parses the text of an `expected.json`; `path` is only used in messages.
    pub fn parse(text: &str, path: &str) -> Result<Expected, ExpectedError> {
        let path = path.to_owned();
        let value: Value = serde_json::from_str(text).map_err(|source| ExpectedError::Json {
            path: path.clone(),
            source,
        })?;
        let invalid = |message: String| ExpectedError::Invalid {
            path: path.clone(),
            message,
        };
        let version = match value.get("format_version") {
            None => return Err(invalid("format_version is missing (1 or 2)".into())),
            Some(v) => match v.as_u64() {
                Some(n @ (1 | 2)) => n as u32,
                _ => return Err(invalid(format!("format_version must be 1 or 2, got {v}"))),
            },
        };
        let shape = |source| ExpectedError::Shape {
            path: path.clone(),
            version,
            source,
        };
        let expected = if version == 2 {
            let file: FileV2 = serde_json::from_str(text).map_err(shape)?;
            Expected {
                format_version: 2,
                evidence: file
                    .evidence
                    .into_iter()
                    .map(|e| EvidenceExpectation {
                        tool: e.tool,
                        result: e.result,
                        labelled_column: Vec::new(),
                        rule_check: false,
                    })
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
        Ok(expected.with_rule_checks())
    }

    /// Rules serde cannot state: known tools, object results, usable answer checks.
    fn check(&self) -> Result<(), String> {
        if self.evidence.is_empty() {
            return Err("evidence must list at least one item".into());
        }
        let known = crate::registry::ToolRegistry::builtin().tool_names();
        for (index, item) in self.evidence.iter().enumerate() {
            if !known.contains(&item.tool.as_str()) {
                return Err(format!(
                    "evidence[{index}] names unknown tool {:?}",
                    item.tool
                ));
            }
            if !item.result.is_object() {
                return Err(format!(
                    "evidence[{index}].result must be an object, got {}",
                    crate::decision::json_type_name(&item.result)
                ));
            }
        }
        let answer = &self.final_answer;
        for (field, list) in [
            ("words", &answer.words),
            ("any_of", &answer.any_of),
            ("none", &answer.none),
        ] {
            if list.iter().any(|s| s.trim().is_empty()) {
                return Err(format!("final_answer.{field} holds an empty entry"));
            }
        }
        Ok(())
    }

    /// Marks the rule checks (see [`EvidenceExpectation::rule_check`]): only where the answer's verdict is
    /// expected, so a check's polarity is still judged, once, by the verdict the answer states.
    fn with_rule_checks(mut self) -> Expected {
        if self.final_answer.verdict.is_some() {
            for item in &mut self.evidence {
                item.rule_check = item
                    .result
                    .as_object()
                    .is_some_and(|r| r.len() == 1 && r.get("value").is_some_and(Value::is_boolean));
            }
        }
        self
    }

    /// Whether `record` is a successful observation of `item`'s tool whose result matches it (a rule check:
    /// whose result is a boolean).
    pub fn item_matches(item: &EvidenceExpectation, record: &ObservationRecord) -> bool {
        let (true, Some(result)) = (record.ok, record.result.as_ref()) else {
            return false;
        };
        if record.tool != item.tool {
            return false;
        }
        if item.rule_check {
            return result.get("value").is_some_and(Value::is_boolean);
        }
        let result = current_shape(result);
        subset(&item.result, &result)
            && (item.labelled_column.is_empty()
                || has_labelled_column(&result, &item.labelled_column))
    }

    /// Whether `record` matches any evidence item.
    pub fn matches(&self, record: &ObservationRecord) -> bool {
        self.evidence
            .iter()
            .any(|item| Expected::item_matches(item, record))
    }
}

/// A v1 file in the internal form: `causal_order` names the evidence items, `tools` their results; a
/// knowledge expectation on the old result shape is translated (see [`translate_old_knowledge`]).
pub(super) fn from_v1(file: FileV1) -> Result<Expected, String> {
    let mut evidence = Vec::new();
    for (index, tool) in file.causal_order.iter().enumerate() {
        if file.causal_order[..index].contains(tool) {
            return Err(format!("causal_order names {tool:?} twice"));
        }
        let Some(expectation) = file.tools.get(tool) else {
            return Err(format!(
                "causal_order names {tool:?}, which has no entry in tools"
            ));
        };
        let (result, labelled_column) = translate_old_knowledge(expectation.result.clone())
            .map_err(|message| format!("tools.{tool}.result: {message}"))?;
        evidence.push(EvidenceExpectation {
            rule_check: false,
            tool: tool.clone(),
            result,
            labelled_column,
        });
    }
    if let Some(extra) = file.tools.keys().find(|t| !file.causal_order.contains(t)) {
        return Err(format!(
            "tools names {extra:?}, which causal_order does not list"
        ));
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
    Ok(Expected {
        format_version: 1,
        evidence,
        final_answer: answer,
        protected_stop_reasons: file.protected_stop_reasons,
        outcome: ExpectedOutcome::Answer,
    })
}

/// A v1 knowledge expectation on the old result shape, restated for the current one:
/// `data.batches` [{label, value}] → "some table has exactly these labels with these values in one
/// column" (returned separately: a subset pattern cannot bind the unnamed column);
/// `data.release_rule` {key: value} → `data.facts` [{key, value}] ("facts have these keys with these values").
pub(super) fn translate_old_knowledge(
    mut result: Value,
) -> Result<(Value, Vec<(String, f64)>), String> {
    let Some(data) = result.get_mut("data").and_then(Value::as_object_mut) else {
        return Ok((result, Vec::new()));
    };
    let mut column = Vec::new();
    if let Some(batches) = data.remove("batches") {
        let Value::Array(batches) = batches else {
            return Err("data.batches must be an array".into());
        };
        for (index, batch) in batches.iter().enumerate() {
            let label = batch.get("label").and_then(Value::as_str);
            let value = batch.get("value").and_then(Value::as_f64);
            match (label, value, batch.as_object().map(Map::len)) {
                (Some(label), Some(value), Some(2)) => column.push((label.to_owned(), value)),
                _ => {
                    return Err(format!(
                        "data.batches[{index}] must be {{\"label\": string, \"value\": number}}"
                    ));
                }
            }
        }
        if column.is_empty() {
            return Err("data.batches must not be empty".into());
        }
    }
    if let Some(rule) = data.remove("release_rule") {
        let Value::Object(rule) = rule else {
            return Err("data.release_rule must be an object".into());
        };
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
pub(super) fn current_shape(result: &Value) -> std::borrow::Cow<'_, Value> {
    let data = &result["data"];
    let old_rows = data.get("batches").and_then(Value::as_array);
    let old_rule = data.get("release_rule").and_then(Value::as_object);
    let holds_tables = data.as_object().is_some_and(observed::holds_tables);
    if (old_rows.is_none() || holds_tables) && (old_rule.is_none() || data.get("facts").is_some()) {
        return std::borrow::Cow::Borrowed(result);
    }
    let mut result = result.clone();
    let column = data
        .get("metric")
        .and_then(Value::as_str)
        .unwrap_or("value")
        .to_owned();
    let data = result["data"]
        .as_object_mut()
        .expect("checked above: data is an object");
    if let Some(rows) = old_rows.filter(|_| !observed::holds_tables(data)) {
        let rows: Vec<Value> = rows
            .iter()
            .map(
                |row| json!({ "label": row["label"], "values": { column.as_str(): row["value"] } }),
            )
            .collect();
        let tables = if rows.is_empty() {
            json!([])
        } else {
            json!([{ "rows": rows }])
        };
        observed::set_tables(data, tables);
    }
    if let Some(rule) = old_rule.filter(|_| !data.contains_key("facts")) {
        let facts: Vec<Value> = rule
            .iter()
            .map(|(key, value)| json!({ "key": key, "value": value }))
            .collect();
        data.insert("facts".into(), Value::Array(facts));
    }
    std::borrow::Cow::Owned(result)
}

/// Some table of `result` has exactly `rows` (labels, order free) with their values in one column.
pub(super) fn has_labelled_column(result: &Value, rows: &[(String, f64)]) -> bool {
    observed::tables_in(result).iter().any(|table| {
        let actual = &table.rows;
        if actual.len() != rows.len() {
            return false;
        }
        let columns: Vec<&String> = actual
            .iter()
            .flat_map(|r| r.values.iter().map(|(column, _)| column))
            .collect();
        columns.iter().any(|column| {
            rows.iter().all(|(label, value)| {
                actual.iter().any(|row| {
                    row.label == *label && row.value(column).is_some_and(|v| same_number(*value, v))
                })
            })
        })
    })
}

pub(super) fn same_number(expected: f64, actual: f64) -> bool {
    (expected - actual).abs() <= 1e-9 * expected.abs().max(1.0)
}

/// `expected ⊆ actual`: objects by key; arrays of objects — each expected element matches some actual
/// element, order free; other arrays (scalars, or empty) — same length and order, element-wise;
/// numbers by value (relative 1e-9); booleans, strings and null exactly.
pub fn subset(expected: &Value, actual: &Value) -> bool {
    match (expected, actual) {
        (Value::Object(e), Value::Object(a)) => e
            .iter()
            .all(|(k, v)| a.get(k).is_some_and(|av| subset(v, av))),
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
pub(super) fn number_term(entry: &str) -> Option<f64> {
    numbers::parse_quantity(entry)
        .filter(|q| q.unit.is_none() || q.unit.as_deref() == Some("%"))
        .map(|q| q.value)
}
