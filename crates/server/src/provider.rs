//! The seam between the service and whatever provides the model: inspection, cache state and policies.
//!
//! The server never depends on llama.cpp: the `runner` binary hands it a `ModelProvider` (the llama one in
//! production). A provider that cannot provide a model says so with `model_unavailable`; nothing here
//! makes up a decision.

use std::path::{Path, PathBuf};

use runtime::policy::{Policy, PolicyError};
use serde_json::Value;

use crate::catalogue::ModelEntry;

/// guided: the runtime's typed, state-specific decoding; free: the model writes the whole decision.
pub use runtime::policy::Mode;

/// A model-side refusal: `code` is stable snake_case (`model_unavailable`, `invalid_model_path`, ...).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{code}: {message}")]
pub struct ProviderError {
    pub code: &'static str,
    pub message: String,
}

impl ProviderError {
    pub fn unavailable(message: impl Into<String>) -> Self {
        Self {
            code: "model_unavailable",
            message: message.into(),
        }
    }
}

pub trait ModelProvider: Send + Sync + 'static {
    /// Facts about a GGUF file (`path` or the configured default): name, architecture, parameters,
    /// quantisation, context length, file bytes/hash... Messages never carry absolute paths.
    fn inspect(&self, path: Option<&str>) -> Result<Value, ProviderError>;
    /// Drop the process-wide cached model (no-op when nothing is loaded).
    fn unload(&self) -> Result<Value, ProviderError>;
    /// What is loaded right now (for `/status`).
    fn cache_state(&self) -> Value;
    /// A fresh policy for one run. Errors become a `failed/model_unavailable` run through the runtime.
    fn policy(&self, mode: Mode, temperature: f32) -> Result<Box<dyn Policy>, PolicyError>;
    /// The models a run may name (`GET /agent/models`), with their identity facts. Read on every call,
    /// so a model fetched while the service runs appears. At most one entry is `default`.
    fn models(&self) -> Vec<ModelEntry> {
        Vec::new()
    }
    /// A fresh policy for one run on `model` (an entry of [`ModelProvider::models`]).
    fn policy_for(
        &self,
        model: &ModelEntry,
        _mode: Mode,
        _temperature: f32,
    ) -> Result<Box<dyn Policy>, PolicyError> {
        Err(PolicyError::ModelUnavailable(format!(
            "this provider cannot run model {:?}",
            model.name
        )))
    }
}

/// The provider when none is wired in (no model at all): every call says `model_unavailable` with the reason.
pub struct UnavailableProvider {
    pub reason: String,
}

impl ModelProvider for UnavailableProvider {
    fn inspect(&self, _path: Option<&str>) -> Result<Value, ProviderError> {
        Err(ProviderError::unavailable(self.reason.clone()))
    }
    fn unload(&self) -> Result<Value, ProviderError> {
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

/// Where `POST /models/inspect` may read: the models directory and the files named on the command line
/// (`--gguf`). Anything else on the machine is refused before a byte of it is opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InspectScope {
    pub models_dir: PathBuf,
    pub files: Vec<PathBuf>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{requested:?} is outside the models directory and the files given on the command line (--gguf); inspection reads nothing else"
)]
pub struct OutsideScope {
    /// The path as the caller sent it.
    pub requested: String,
}

impl InspectScope {
    /// Resolve a requested path (relative to `root`, as runs resolve model paths) to the canonical file
    /// it names, symlinks followed, and accept it only inside the scope. A missing file inside the models
    /// directory is accepted, so the provider can answer "file not found" for it.
    pub fn resolve(&self, root: &Path, requested: &str) -> Result<PathBuf, OutsideScope> {
        let outside = || OutsideScope {
            requested: requested.to_string(),
        };
        let path = Path::new(requested);
        let joined = if path.is_absolute() {
            path.to_path_buf()
        } else {
            root.join(path)
        };
        let canonical = match std::fs::canonicalize(&joined) {
            Ok(c) => c,
            Err(_) => {
                let name = joined.file_name().ok_or_else(outside)?;
                let parent = joined.parent().ok_or_else(outside)?;
                std::fs::canonicalize(parent)
                    .map_err(|_| outside())?
                    .join(name)
            }
        };
        let in_models = std::fs::canonicalize(&self.models_dir)
            .is_ok_and(|dir| canonical.starts_with(&dir) && canonical != dir);
        let named = self
            .files
            .iter()
            .any(|f| std::fs::canonicalize(f).is_ok_and(|f| f == canonical));
        if in_models || named {
            Ok(canonical)
        } else {
            Err(outside())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inspection_scope_is_the_models_directory_and_named_files() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("models")).unwrap();
        std::fs::write(root.join("models/a.gguf"), b"x").unwrap();
        std::fs::write(root.join("elsewhere.gguf"), b"x").unwrap();
        std::fs::write(root.join("named.gguf"), b"x").unwrap();
        std::os::unix::fs::symlink("/etc/passwd", root.join("models/link.gguf")).unwrap();
        let scope = InspectScope {
            models_dir: root.join("models"),
            files: vec![root.join("named.gguf")],
        };
        assert_eq!(
            scope.resolve(&root, "models/a.gguf").unwrap(),
            root.join("models/a.gguf")
        );
        assert_eq!(
            scope
                .resolve(&root, root.join("models/a.gguf").to_str().unwrap())
                .unwrap(),
            root.join("models/a.gguf")
        );
        assert_eq!(
            scope.resolve(&root, "models/absent.gguf").unwrap(),
            root.join("models/absent.gguf")
        );
        assert_eq!(
            scope.resolve(&root, "named.gguf").unwrap(),
            root.join("named.gguf")
        );
        for bad in [
            "/etc/passwd",
            "elsewhere.gguf",
            "models/../elsewhere.gguf",
            "models/link.gguf",
            "models",
            "models/..",
            "/",
            "nowhere/x.gguf",
        ] {
            assert_eq!(
                scope.resolve(&root, bad),
                Err(OutsideScope {
                    requested: bad.into()
                }),
                "{bad}"
            );
        }
    }
}
