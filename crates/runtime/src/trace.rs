//! Trace events: numbered, capped, and scrubbed before anyone sees them.
//!
//! Every event passes through [`sanitize`]: keys that would hold hidden reasoning are dropped and
//! absolute paths are replaced by placeholders. Raw model output never reaches this module (the
//! loop passes only its blake3). This module does not decide what happens; it records it.

use std::path::Path;
use std::time::Instant;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::budget::BudgetSnapshot;

/// Events kept per run, truncation marker and `run.finished` included.
pub const MAX_TRACE_EVENTS: usize = 800;

/// Keys never exported, at any depth (compared case-insensitively).
pub const FORBIDDEN_KEYS: [&str; 5] = [
    "thought",
    "thoughts",
    "reasoning",
    "analysis",
    "chain_of_thought",
];

/// One thing that happened in a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceEvent {
    /// 1, 2, 3, ... with no gaps (dropped events do not take a number).
    pub seq: u64,
    /// The outer step (0 before the first step).
    pub step: u32,
    /// 0 for a first try; repair number for model calls; tool attempt number (from 1) for tools.
    pub attempt: u32,
    pub phase: String,
    pub elapsed_ms: u64,
    pub data: Value,
    /// Observations recorded so far (the state delta).
    pub observation_count: u32,
    pub budget: BudgetSnapshot,
}

impl TraceEvent {
    /// The `run.finished` event that ends a trace the runtime did not finish itself (a run cancelled while
    /// queued, interrupted by a restart, or that failed to start). It follows the `kept` events already
    /// written and continues `last`, the last of them (its step, clock, observations and budget); without
    /// one it starts from step 0 with `budget`.
    pub fn finishing(
        kept: u64,
        last: Option<&TraceEvent>,
        data: Value,
        budget: BudgetSnapshot,
    ) -> TraceEvent {
        TraceEvent {
            seq: kept + 1,
            step: last.map_or(0, |e| e.step),
            attempt: 0,
            phase: "run.finished".into(),
            elapsed_ms: last.map_or(0, |e| e.elapsed_ms),
            data,
            observation_count: last.map_or(0, |e| e.observation_count),
            budget: last.map_or(budget, |e| e.budget.clone()),
        }
    }
}

/// Collects events, numbers them, applies the cap and forwards kept events to a sink.
pub struct Tracer<'s> {
    started: Instant,
    events: Vec<TraceEvent>,
    dropped: u64,
    sink: &'s mut dyn FnMut(&TraceEvent),
    redactions: Vec<(String, &'static str)>,
}

impl<'s> Tracer<'s> {
    /// `redactions` maps known directories (knowledge, artifacts, task) to placeholders.
    pub fn new(
        started: Instant,
        sink: &'s mut dyn FnMut(&TraceEvent),
        redactions: Vec<(&Path, &'static str)>,
    ) -> Self {
        let mut pairs: Vec<(String, &'static str)> = Vec::new();
        for (path, label) in redactions {
            let text = path.to_string_lossy().into_owned();
            if !text.is_empty() {
                pairs.push((text, label));
            }
            if let Ok(canonical) = std::fs::canonicalize(path) {
                pairs.push((canonical.to_string_lossy().into_owned(), label));
            }
        }
        // Longest first so a nested directory wins over its parent.
        pairs.sort_by_key(|pair| std::cmp::Reverse(pair.0.len()));
        Self {
            started,
            events: Vec::new(),
            dropped: 0,
            sink,
            redactions: pairs,
        }
    }

    /// Records one event unless the cap is reached. The last two slots are reserved for the
    /// truncation marker and `run.finished`, so the final event always survives.
    pub fn emit(
        &mut self,
        phase: &str,
        step: u32,
        attempt: u32,
        data: Value,
        observation_count: u32,
        budget: BudgetSnapshot,
    ) {
        let finishing = phase == "run.finished";
        if !finishing && self.events.len() >= MAX_TRACE_EVENTS - 2 {
            if self.dropped == 0 {
                let marker = serde_json::json!({ "reason": "event cap reached", "max_events": MAX_TRACE_EVENTS });
                self.push(
                    "trace.truncated",
                    step,
                    attempt,
                    marker,
                    observation_count,
                    budget,
                );
            }
            self.dropped += 1;
            return;
        }
        self.push(phase, step, attempt, data, observation_count, budget);
    }

    fn push(
        &mut self,
        phase: &str,
        step: u32,
        attempt: u32,
        data: Value,
        observation_count: u32,
        budget: BudgetSnapshot,
    ) {
        let event = TraceEvent {
            seq: self.events.len() as u64 + 1,
            step,
            attempt,
            phase: phase.to_owned(),
            elapsed_ms: self.started.elapsed().as_millis() as u64,
            data: sanitize(data, &self.redactions),
            observation_count,
            budget,
        };
        (self.sink)(&event);
        self.events.push(event);
    }

    /// Events not kept because of the cap.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    pub fn len(&self) -> usize {
        self.events.len()
    }

    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    pub fn into_events(self) -> Vec<TraceEvent> {
        self.events
    }

    /// Scrubs a JSON value with this run's redactions (for results returned outside the trace).
    pub fn scrub_value(&self, value: Value) -> Value {
        sanitize(value, &self.redactions)
    }

    /// Scrubs text with this run's redactions (for error messages in results).
    pub fn scrub_text(&self, text: &str) -> String {
        redact_text(text, &self.redactions)
    }
}

/// Drops reasoning-like keys and redacts absolute paths, recursively.
pub fn sanitize(value: Value, redactions: &[(String, &'static str)]) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .filter(|(key, _)| !is_forbidden_key(key))
                .map(|(key, value)| (key, sanitize(value, redactions)))
                .collect(),
        ),
        Value::Array(items) => {
            Value::Array(items.into_iter().map(|v| sanitize(v, redactions)).collect())
        }
        Value::String(text) => Value::String(redact_text(&text, redactions)),
        other => other,
    }
}

pub fn is_forbidden_key(key: &str) -> bool {
    let lower = key.to_ascii_lowercase();
    FORBIDDEN_KEYS.contains(&lower.as_str())
}

/// Replaces known directories by their labels, then any remaining absolute-path-looking word
/// (`/a/b...`, `C:\...`, `~/...`) by `<path>`.
pub fn redact_text(text: &str, redactions: &[(String, &'static str)]) -> String {
    let mut out = text.to_owned();
    for (path, label) in redactions {
        if out.contains(path.as_str()) {
            out = out.replace(path.as_str(), label);
        }
    }
    if !out.contains(['/', '\\']) {
        return out;
    }
    let mut result = String::with_capacity(out.len());
    let mut word = String::new();
    let flush = |word: &mut String, result: &mut String| {
        if looks_like_absolute_path(word) {
            result.push_str("<path>");
        } else {
            result.push_str(word);
        }
        word.clear();
    };
    for ch in out.chars() {
        if ch.is_whitespace()
            || matches!(
                ch,
                '"' | '\'' | '`' | '(' | ')' | ',' | ';' | '<' | '>' | '[' | ']' | '{' | '}'
            )
        {
            flush(&mut word, &mut result);
            result.push(ch);
        } else {
            word.push(ch);
        }
    }
    flush(&mut word, &mut result);
    result
}

fn looks_like_absolute_path(word: &str) -> bool {
    let unix = word
        .strip_prefix('/')
        .or_else(|| word.strip_prefix("~/"))
        .is_some_and(|rest| {
            rest.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '.' || c == '_')
                && rest.contains('/')
        });
    let bytes = word.as_bytes();
    let windows = bytes.len() > 3
        && bytes[0].is_ascii_alphabetic()
        && bytes[1] == b':'
        && (bytes[2] == b'\\' || bytes[2] == b'/');
    unix || windows
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::StopReason;
    use crate::agent_loop::{RunError, UnfinishedResult};
    use crate::budget::Budgets;
    use pretty_assertions::assert_eq;

    fn event(seq: u64, step: u32, observation_count: u32) -> TraceEvent {
        let budget = BudgetSnapshot {
            steps: step,
            elapsed_ms: 40,
            ..Default::default()
        };
        TraceEvent {
            seq,
            step,
            attempt: 1,
            phase: "tool.finished".into(),
            elapsed_ms: 40,
            data: Value::Null,
            observation_count,
            budget,
        }
    }

    /// A seal written by the service continues the trace where the runtime left it (number, step, clock,
    /// observations, budget); on an empty trace it is event 1 with the request's budgets unused.
    #[test]
    fn a_finishing_event_continues_the_last_kept_event_or_starts_the_trace() {
        let last = event(7, 3, 2);
        let next = TraceEvent::finishing(7, Some(&last), Value::Null, BudgetSnapshot::default());
        assert_eq!(
            (next.seq, next.step, next.attempt, next.phase.as_str()),
            (8, 3, 0, "run.finished")
        );
        assert_eq!(
            (next.elapsed_ms, next.observation_count, next.budget),
            (40, 2, last.budget)
        );

        let budgets = Budgets {
            max_steps: 5,
            wall_clock_s: 30,
            ..Budgets::default()
        };
        let first = TraceEvent::finishing(0, None, Value::Null, BudgetSnapshot::unused(&budgets));
        assert_eq!((first.seq, first.step, first.observation_count), (1, 0, 0));
        assert_eq!(
            (
                first.budget.max_steps,
                first.budget.wall_clock_ms,
                first.budget.steps
            ),
            (5, 30_000, 0)
        );
    }

    /// The event's data says who sealed the run; the result file says which run and how many events instead.
    #[test]
    fn an_unfinished_result_is_event_data_or_a_result_file() {
        let error = RunError {
            code: "interrupted".into(),
            message: "the service restarted".into(),
        };
        let seal = UnfinishedResult::new(StopReason::RuntimeError, 2, Some(error), "server");
        let data = serde_json::to_value(&seal).unwrap();
        assert_eq!(data["status"], "failed");
        assert_eq!(
            (data["sealed_by"].as_str(), data["reason"].as_str()),
            (Some("server"), Some("interrupted"))
        );
        assert!(
            data.get("run_id").is_none()
                && data.get("events").is_none()
                && data.get("verification").is_none()
        );
        assert!(data["final_answer"].is_null() && data["metrics"].is_null());
        let result = serde_json::to_value(seal.for_run("run-1", 9)).unwrap();
        assert_eq!(
            (result["run_id"].as_str(), result["events"].as_u64()),
            (Some("run-1"), Some(9))
        );
        assert!(result.get("sealed_by").is_none());
    }
}
