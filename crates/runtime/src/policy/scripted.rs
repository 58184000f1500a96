//! Scripted policy (tests and `runner run --policy scripted` only): replays recorded decision
//! texts in order, with optional token counts, delays and simulated policy errors.
//!
//! It never looks at the request to choose what to say — a script is a script — and it is not a
//! fallback for a missing model: the server reaches it only behind an explicit flag.

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::{DecisionRequest, Policy, PolicyError, PolicyOutput, RunControl, TokenShare};

/// A simulated policy failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ScriptedErrorKind {
    ModelUnavailable,
    Cancelled,
    Timeout,
    Runtime,
}

/// One scripted model call.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedDecision {
    /// The raw model text to return (may be deliberately invalid).
    #[serde(default)]
    pub text: String,
    /// Reported token counts; estimated (≈ 4 characters per token) when absent.
    #[serde(default)]
    pub input_tokens: Option<u32>,
    #[serde(default)]
    pub output_tokens: Option<u32>,
    #[serde(default)]
    pub prefill_tokens_saved: u32,
    /// Simulated generation time; interrupted by cancellation or the deadline.
    #[serde(default)]
    pub sleep_ms: u64,
    /// Fail this call instead of returning text.
    #[serde(default)]
    pub error: Option<ScriptedErrorKind>,
    /// Message for `error` (e.g. a model path, to test redaction).
    #[serde(default)]
    pub message: Option<String>,
    /// Set the run's cancel flag after returning this decision (a user pressing cancel).
    #[serde(default)]
    pub cancel_after: bool,
    /// The start of `text` a guided runtime would have written itself (replayed as the runtime's prefix).
    #[serde(default)]
    pub runtime_prefix: String,
    /// The token share to report; unknown when absent (a script has no decoder masks to count).
    #[serde(default)]
    pub share: Option<TokenShare>,
}

impl ScriptedDecision {
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            ..Self::default()
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ScriptError {
    #[error("cannot read script {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("script {path} is not valid: {source}")]
    Parse {
        path: String,
        source: serde_json::Error,
    },
}

/// Replays [`ScriptedDecision`]s one per `decide` call.
#[derive(Debug, Clone)]
pub struct ScriptedPolicy {
    decisions: Vec<ScriptedDecision>,
    next: usize,
}

impl ScriptedPolicy {
    pub fn new(decisions: Vec<ScriptedDecision>) -> Self {
        Self { decisions, next: 0 }
    }

    /// Convenience: plain texts with estimated token counts.
    pub fn from_texts<S: Into<String>>(texts: impl IntoIterator<Item = S>) -> Self {
        Self::new(texts.into_iter().map(ScriptedDecision::text).collect())
    }

    /// Calls made so far.
    pub fn calls(&self) -> usize {
        self.next
    }

    fn wait(duration: Duration, control: &RunControl) -> Result<(), PolicyError> {
        let until = Instant::now() + duration;
        while Instant::now() < until {
            if control.is_cancelled() {
                return Err(PolicyError::Cancelled);
            }
            if control.past_deadline() {
                return Err(PolicyError::Timeout);
            }
            std::thread::sleep(
                Duration::from_millis(5).min(until.saturating_duration_since(Instant::now())),
            );
        }
        Ok(())
    }
}

fn estimate_tokens(chars: usize) -> u32 {
    chars.div_ceil(4) as u32
}

impl Policy for ScriptedPolicy {
    fn name(&self) -> String {
        "scripted".to_owned()
    }

    fn decide(
        &mut self,
        request: &DecisionRequest,
        control: &RunControl,
    ) -> Result<PolicyOutput, PolicyError> {
        let Some(decision) = self.decisions.get(self.next).cloned() else {
            return Err(PolicyError::ScriptExhausted(self.next));
        };
        self.next += 1;
        if control.is_cancelled() {
            return Err(PolicyError::Cancelled);
        }
        if decision.sleep_ms > 0 {
            Self::wait(Duration::from_millis(decision.sleep_ms), control)?;
        }
        if let Some(kind) = decision.error {
            let message = decision
                .message
                .clone()
                .unwrap_or_else(|| "scripted failure".to_owned());
            return Err(match kind {
                ScriptedErrorKind::ModelUnavailable => PolicyError::ModelUnavailable(message),
                ScriptedErrorKind::Cancelled => PolicyError::Cancelled,
                ScriptedErrorKind::Timeout => PolicyError::Timeout,
                ScriptedErrorKind::Runtime => PolicyError::Runtime(message),
            });
        }
        let input_tokens = decision.input_tokens.unwrap_or_else(|| {
            let prompt_chars = serde_json::to_string(request)
                .map(|s| s.chars().count())
                .unwrap_or(0);
            estimate_tokens(prompt_chars)
        });
        let output_tokens = decision
            .output_tokens
            .unwrap_or_else(|| estimate_tokens(decision.text.chars().count()));
        if decision.cancel_after {
            control.cancel();
        }
        Ok(PolicyOutput {
            raw_text: decision.text,
            input_tokens,
            output_tokens,
            prefill_tokens_saved: decision.prefill_tokens_saved,
            temperature: None,
            runtime_prefix: decision.runtime_prefix,
            share: decision.share.unwrap_or_else(|| TokenShare::Unknown {
                reason: "scripted policy: replayed text, no decoder masks".into(),
            }),
        })
    }
}
