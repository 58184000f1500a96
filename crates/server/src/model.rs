//! The seam between the service and whatever provides the model: inspection, cache state and policies.
//!
//! The server never depends on llama.cpp: the `runner` binary hands it a `ModelBackend` (the llama one in
//! production). A backend that cannot provide a model says so with `model_unavailable`; nothing here
//! makes up a decision.

use runtime::policy::{Policy, PolicyError};
use serde_json::Value;

use crate::models::ModelEntry;

/// guided: the runtime's typed, state-specific decoding; free: the model writes the whole decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    Guided,
    Free,
}

impl Mode {
    pub fn parse(s: &str) -> Option<Mode> {
        match s {
            "guided" => Some(Mode::Guided),
            "free" => Some(Mode::Free),
            _ => None,
        }
    }
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Guided => "guided",
            Mode::Free => "free",
        }
    }
}

/// A model-side refusal: `code` is stable snake_case (`model_unavailable`, `invalid_model_path`, ...).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{code}: {message}")]
pub struct BackendError {
    pub code: &'static str,
    pub message: String,
}

impl BackendError {
    pub fn unavailable(message: impl Into<String>) -> Self {
        Self { code: "model_unavailable", message: message.into() }
    }
}

pub trait ModelBackend: Send + Sync + 'static {
    /// Facts about a GGUF file (`path` or the configured default): name, architecture, parameters,
    /// quantisation, context length, file bytes/hash... Messages never carry absolute paths.
    fn inspect(&self, path: Option<&str>) -> Result<Value, BackendError>;
    /// Drop the process-wide cached model (no-op when nothing is loaded).
    fn unload(&self) -> Result<Value, BackendError>;
    /// What is loaded right now (for `/status`).
    fn cache_state(&self) -> Value;
    /// A fresh policy for one run. Errors become a `failed/model_unavailable` run through the runtime.
    fn policy(&self, mode: Mode, temperature: f32) -> Result<Box<dyn Policy>, PolicyError>;
    /// The models a run may name (`GET /agent/models`), with their identity facts. Read on every call,
    /// so a model fetched while the service runs appears. At most one entry is `default`.
    fn models(&self) -> Vec<ModelEntry> {
        Vec::new()
    }
    /// A fresh policy for one run on `model` (an entry of [`ModelBackend::models`]).
    fn policy_for(
        &self,
        model: &ModelEntry,
        _mode: Mode,
        _temperature: f32,
    ) -> Result<Box<dyn Policy>, PolicyError> {
        Err(PolicyError::ModelUnavailable(format!(
            "this backend cannot run model {:?}",
            model.name
        )))
    }
}

/// The backend when no model provider is wired in: every call says `model_unavailable` with the reason.
pub struct UnavailableBackend {
    pub reason: String,
}

impl ModelBackend for UnavailableBackend {
    fn inspect(&self, _path: Option<&str>) -> Result<Value, BackendError> {
        Err(BackendError::unavailable(self.reason.clone()))
    }
    fn unload(&self) -> Result<Value, BackendError> {
        Ok(serde_json::json!({ "unloaded": false, "loaded": false }))
    }
    fn cache_state(&self) -> Value {
        serde_json::json!({ "loaded": false, "available": false, "reason": self.reason })
    }
    fn policy(&self, _mode: Mode, _temperature: f32) -> Result<Box<dyn Policy>, PolicyError> {
        Err(PolicyError::ModelUnavailable(self.reason.clone()))
    }
}

/// Stands in for a policy that could not be built, so the failure still travels through the runtime and
/// ends as a proper `failed/model_unavailable` result with `run.finished`. It never returns a decision.
pub(crate) struct FailingPolicy(pub PolicyError);

impl Policy for FailingPolicy {
    fn name(&self) -> String {
        "unavailable".into()
    }
    fn decide(
        &mut self,
        _request: &runtime::policy::DecisionRequest,
        _control: &runtime::policy::RunControl,
    ) -> Result<runtime::policy::PolicyOutput, PolicyError> {
        Err(self.0.clone())
    }
}
