//! Loop guards: repeated invalid arguments, repeated valid actions, repeated results, repeated
//! rejected finals — each a signature history judged by stage 06's `StopController`.
//!
//! Signatures are canonical JSON (sorted keys) so argument order and `79.0` vs `79` do not hide a
//! repeat. This module only counts; the loop emits the guard event and stops.

use serde_json::{Map, Value};
use stop_conditions::{
    StopConfigError, StopController, StopDecision, StopFacts, StopReason as StageStopReason,
};

use crate::tools::artifacts::canonical_json;

/// Which guard fired.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GuardKind {
    /// The same invalid arguments were proposed `repeated_action_limit` times.
    RepeatedInvalidArguments,
    /// The same valid action was proposed `repeated_action_limit` times (checked before dispatch).
    RepeatedAction,
    /// The same rejected final was proposed `repeated_action_limit` times.
    RepeatedFinal,
    /// The same successful result digest appeared `no_progress_limit` times.
    RepeatedResult,
}

impl GuardKind {
    pub fn code(self) -> &'static str {
        match self {
            Self::RepeatedInvalidArguments => "repeated_invalid_arguments",
            Self::RepeatedAction => "repeated_action",
            Self::RepeatedFinal => "repeated_final",
            Self::RepeatedResult => "repeated_result",
        }
    }

    /// `guard.loop_detected` for repeated proposals, `guard.no_progress` for repeats that
    /// produced nothing new (invalid arguments, same result) — the seed's split.
    pub fn phase(self) -> &'static str {
        match self {
            Self::RepeatedAction | Self::RepeatedFinal => "guard.loop_detected",
            Self::RepeatedInvalidArguments | Self::RepeatedResult => "guard.no_progress",
        }
    }
}

#[derive(Debug, Clone)]
pub struct Guards {
    /// Judges proposal repeats (stage 06 rule: the latest entry's count ≥ limit).
    proposals: StopController,
    /// Judges result repeats with the no-progress limit.
    results: StopController,
    invalid_history: Vec<String>,
    action_history: Vec<String>,
    final_history: Vec<String>,
    result_history: Vec<String>,
}

impl Guards {
    pub fn new(
        repeated_action_limit: u32,
        no_progress_limit: u32,
    ) -> Result<Self, StopConfigError> {
        // The step budget is the loop's own controller's business; these controllers get an
        // unreachable step limit so only the repeat rule can fire.
        Ok(Self {
            proposals: StopController::new(u32::MAX, repeated_action_limit)?,
            results: StopController::new(u32::MAX, no_progress_limit)?,
            invalid_history: Vec::new(),
            action_history: Vec::new(),
            final_history: Vec::new(),
            result_history: Vec::new(),
        })
    }

    fn repeated(controller: &StopController, history: &[String]) -> bool {
        let actions: Vec<&str> = history.iter().map(String::as_str).collect();
        let facts = StopFacts {
            action_history: &actions,
            ..StopFacts::default()
        };
        controller.decide(facts) == StopDecision::Stop(StageStopReason::RepeatedAction)
    }

    /// Records rejected arguments as proposed (before defaults); true when the guard fires.
    pub fn record_invalid(&mut self, tool: &str, raw_arguments: &Map<String, Value>) -> bool {
        self.invalid_history.push(signature(tool, raw_arguments));
        Self::repeated(&self.proposals, &self.invalid_history)
    }

    /// Records a validated action (defaults applied); true when it must not be dispatched.
    pub fn record_action(&mut self, tool: &str, arguments: &Map<String, Value>) -> bool {
        self.action_history.push(signature(tool, arguments));
        Self::repeated(&self.proposals, &self.action_history)
    }

    /// Whether rejecting this final answer would fire the guard (a repeat of rejected ones), without
    /// recording it: a disputed answer the model repeats is accepted as an abstention instead of a stop.
    pub fn repeats_rejected_final(&self, answer: &str, evidence_ids: &[String]) -> bool {
        let value = serde_json::json!({ "answer": answer.trim(), "evidence_ids": evidence_ids });
        let mut history = self.final_history.clone();
        history.push(canonical_json(&value));
        Self::repeated(&self.proposals, &history)
    }

    /// Records a rejected final answer; true when the guard fires.
    pub fn record_rejected_final(&mut self, answer: &str, evidence_ids: &[String]) -> bool {
        let value = serde_json::json!({ "answer": answer.trim(), "evidence_ids": evidence_ids });
        self.final_history.push(canonical_json(&value));
        Self::repeated(&self.proposals, &self.final_history)
    }

    /// Records a successful result digest; true when the guard fires.
    pub fn record_result(&mut self, digest: &str) -> bool {
        self.result_history.push(digest.to_owned());
        Self::repeated(&self.results, &self.result_history)
    }
}

/// Canonical `{tool, arguments}` text.
pub fn signature(tool: &str, arguments: &Map<String, Value>) -> String {
    canonical_json(
        &serde_json::json!({ "tool": tool, "arguments": Value::Object(arguments.clone()) }),
    )
}

/// blake3 of a tool's digest basis, tagged with the tool so two tools never collide.
pub fn result_digest(tool: &str, digest_basis: &Value) -> String {
    let text = canonical_json(&serde_json::json!({ "tool": tool, "basis": digest_basis }));
    blake3::hash(text.as_bytes()).to_hex().to_string()
}
