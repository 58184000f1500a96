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
pub const FORBIDDEN_KEYS: [&str; 5] = ["thought", "thoughts", "reasoning", "analysis", "chain_of_thought"];

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
    pub fn new(started: Instant, sink: &'s mut dyn FnMut(&TraceEvent), redactions: Vec<(&Path, &'static str)>) -> Self {
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
        Self { started, events: Vec::new(), dropped: 0, sink, redactions: pairs }
    }

    /// Records one event unless the cap is reached. The last two slots are reserved for the
    /// truncation marker and `run.finished`, so the final event always survives.
    pub fn emit(&mut self, phase: &str, step: u32, attempt: u32, data: Value, observation_count: u32, budget: BudgetSnapshot) {
        let finishing = phase == "run.finished";
        if !finishing && self.events.len() >= MAX_TRACE_EVENTS - 2 {
            if self.dropped == 0 {
                let marker = serde_json::json!({ "reason": "event cap reached", "max_events": MAX_TRACE_EVENTS });
                self.push("trace.truncated", step, attempt, marker, observation_count, budget);
            }
            self.dropped += 1;
            return;
        }
        self.push(phase, step, attempt, data, observation_count, budget);
    }

    fn push(&mut self, phase: &str, step: u32, attempt: u32, data: Value, observation_count: u32, budget: BudgetSnapshot) {
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
        Value::Array(items) => Value::Array(items.into_iter().map(|v| sanitize(v, redactions)).collect()),
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
        if ch.is_whitespace() || matches!(ch, '"' | '\'' | '`' | '(' | ')' | ',' | ';' | '<' | '>' | '[' | ']' | '{' | '}') {
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
        .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '.' || c == '_') && rest.contains('/'));
    let bytes = word.as_bytes();
    let windows = bytes.len() > 3 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':' && (bytes[2] == b'\\' || bytes[2] == b'/');
    unix || windows
}
