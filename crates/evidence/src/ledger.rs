//! The observation ledger (stage 02's `LoopState`) and the compact state view shown to the policy.
//!
//! Observations are what tools actually returned (or why an action was refused); ids are
//! `obs-<tool>-<n>` with `n` the global position. This module records and projects; it never
//! decides what to run next and never sees ground truth.

use std::collections::BTreeMap;

use observation_state::{LoopState, ObservationStatus, StateError};
use serde::Serialize;
use serde_json::{Map, Value};

use forge_tools::{ArtifactRecord, ToolOutput};

/// Observations shown to the policy.
pub const VIEW_OBSERVATIONS: usize = 10;
/// Characters of one observation's serialized result shown to the policy.
pub const VIEW_RESULT_CHARS: usize = 3000;
/// Feedback messages shown to the policy.
pub const VIEW_FEEDBACK: usize = 4;

/// Why an observation failed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ObservationError {
    pub code: String,
    pub message: String,
    /// Set for errors from a dispatched tool; absent for refused arguments (never dispatched).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retryable: Option<bool>,
}

/// One observation's payload: `ok` with a result, or not ok with an error.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ObservationRecord {
    pub id: String,
    pub tool: String,
    pub ok: bool,
    pub step: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<ObservationError>,
    /// The arguments as proposed, for refused actions (the model's next step can fix them).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attempted_arguments: Option<Value>,
    #[serde(skip)]
    pub digest: Option<String>,
    #[serde(skip)]
    pub artifacts: Vec<ArtifactRecord>,
}

impl ObservationRecord {
    /// A record as the ledger would hold it, for unit tests that read records by shape.
    #[cfg(test)]
    pub(crate) fn for_test(id: &str, tool: &str, ok: bool, result: Value) -> Self {
        Self {
            id: id.into(),
            tool: tool.into(),
            ok,
            step: 1,
            result: Some(result),
            error: None,
            attempted_arguments: None,
            digest: None,
            artifacts: Vec::new(),
        }
    }

    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

/// The run's observations, in order, on top of stage 02's append-only state.
#[derive(Debug, Default)]
pub struct Ledger {
    state: LoopState<ObservationRecord>,
}

impl Ledger {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn len(&self) -> usize {
        self.state.observations().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn next_id(&self, tool: &str) -> String {
        format!("obs-{tool}-{}", self.len() + 1)
    }

    /// Records a successful tool result.
    pub fn record_success(
        &mut self,
        tool: &str,
        step: u32,
        output: &ToolOutput,
        digest: String,
        latency_ms: u64,
    ) -> Result<&ObservationRecord, StateError> {
        let mut result = match &output.result {
            Value::Object(map) => map.clone(),
            other => {
                let mut map = Map::new();
                map.insert("value".into(), other.clone());
                map
            }
        };
        // Tools usually put these in `result` themselves; add them only when they did not.
        result
            .entry("summary")
            .or_insert_with(|| Value::String(output.summary.clone()));
        if !output.citations.is_empty() && !result.contains_key("citations") {
            result.insert(
                "citations".into(),
                serde_json::to_value(&output.citations).unwrap_or(Value::Null),
            );
        }
        if !output.artifacts.is_empty()
            && !result.contains_key("artifact")
            && !result.contains_key("artifacts")
        {
            result.insert(
                "artifacts".into(),
                serde_json::to_value(&output.artifacts).unwrap_or(Value::Null),
            );
        }
        result.insert("tool_latency_ms".into(), Value::from(latency_ms));
        let record = ObservationRecord {
            id: self.next_id(tool),
            tool: tool.to_owned(),
            ok: true,
            step,
            result: Some(Value::Object(result)),
            error: None,
            attempted_arguments: None,
            digest: Some(digest),
            artifacts: output.artifacts.clone(),
        };
        self.push(record, ObservationStatus::Ok)
    }

    /// Records a failure: refused arguments (`retryable: None`) or a dispatched tool's error.
    pub fn record_failure(
        &mut self,
        tool: &str,
        step: u32,
        error: ObservationError,
        attempted_arguments: Option<Value>,
    ) -> Result<&ObservationRecord, StateError> {
        let record = ObservationRecord {
            id: self.next_id(tool),
            tool: tool.to_owned(),
            ok: false,
            step,
            result: None,
            error: Some(error),
            attempted_arguments,
            digest: None,
            artifacts: Vec::new(),
        };
        // A failed observation lets the loop replan; it is not terminal for the run.
        self.push(record, ObservationStatus::RetryableError)
    }

    fn push(
        &mut self,
        record: ObservationRecord,
        status: ObservationStatus,
    ) -> Result<&ObservationRecord, StateError> {
        let tool = record.tool.clone();
        self.state
            .record(&tool, status, record)
            .map(|observation| observation.payload())
    }

    pub fn records(&self) -> impl Iterator<Item = &ObservationRecord> + Clone {
        self.state.observations().iter().map(|o| o.payload())
    }

    pub fn get(&self, id: &str) -> Option<&ObservationRecord> {
        self.records().find(|r| r.id == id)
    }

    /// tool → id of its latest successful observation.
    pub fn latest_success(&self) -> BTreeMap<String, String> {
        let mut latest = BTreeMap::new();
        for record in self.records().filter(|r| r.ok) {
            latest.insert(record.tool.clone(), record.id.clone());
        }
        latest
    }

    /// The last [`VIEW_OBSERVATIONS`] observations, each result capped at [`VIEW_RESULT_CHARS`].
    pub fn compact_view(&self) -> Vec<Value> {
        let records: Vec<&ObservationRecord> = self.records().collect();
        let start = records.len().saturating_sub(VIEW_OBSERVATIONS);
        records[start..]
            .iter()
            .map(|record| compact(record))
            .collect()
    }

    pub fn into_records(self) -> Vec<ObservationRecord> {
        self.state
            .into_observations()
            .into_iter()
            .map(|o| o.payload().clone())
            .collect()
    }
}

fn compact(record: &ObservationRecord) -> Value {
    let mut value = record.to_json();
    if let Some(result) = value.get_mut("result") {
        if let Some(map) = result.as_object_mut() {
            // Latency is noise to the policy and costs tokens.
            map.remove("tool_latency_ms");
            // A tool that writes its own `view` (what a model should read) is shown as that view: the
            // structured data and citations behind it stay in the full observation.
            if map.get("view").is_some_and(Value::is_string) {
                map.retain(|key, _| key == "view" || key == "summary");
            }
        }
        let text = result.to_string();
        // Too long to show whole: its short scalar fields (a calculation's expression and value, a tool's
        // one-line summary — "bar chart … with 200 bars of [Depot | Fuel use] …"), dropping the bulky lists
        // behind them; with none, the start of the JSON.
        let long = text.chars().count() > VIEW_RESULT_CHARS;
        let scalars: Map<String, Value> = result
            .as_object()
            .map(|m| {
                m.iter()
                    .filter(|(_, v)| match v {
                        Value::String(s) => s.chars().count() <= 400,
                        Value::Number(_) | Value::Bool(_) => true,
                        _ => false,
                    })
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect()
            })
            .unwrap_or_default();
        if long && !scalars.is_empty() {
            *result = Value::Object(scalars);
        } else if long {
            let preview: String = text.chars().take(VIEW_RESULT_CHARS).collect();
            *result = serde_json::json!({ "truncated": true, "preview": preview });
        }
    }
    value
}
