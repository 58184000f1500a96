//! The llama.cpp model backend handed to the server: inspection, the process-wide cache, `LlamaPolicy`.
//!
//! This is the one place the service meets `forge_llama`. It never produces a decision itself: a
//! missing or broken model reaches the runtime as `model_unavailable`.

use std::path::{Path, PathBuf};

use forge_server::{BackendError, Mode, ModelBackend};
use runtime::policy::{Policy, PolicyError};
use serde_json::{Value, json};

pub struct LlamaBackend {
    /// Project root: relative model paths are resolved against it.
    pub root: PathBuf,
    /// The model runs use (`--gguf`, or `<model-dir>/<default file>`).
    pub default_model: PathBuf,
    /// Where runs generate: in process (the model above) or on an inference server.
    pub backend: forge_llama::BackendConfig,
}

impl LlamaBackend {
    fn resolve(&self, path: Option<&str>) -> PathBuf {
        match path {
            None => self.default_model.clone(),
            Some(p) if Path::new(p).is_absolute() => PathBuf::from(p),
            Some(p) => self.root.join(p),
        }
    }
}

pub fn llama_mode(mode: Mode) -> forge_llama::Mode {
    match mode {
        Mode::Guided => forge_llama::Mode::Guided,
        Mode::Free => forge_llama::Mode::Free,
    }
}

impl ModelBackend for LlamaBackend {
    fn inspect(&self, path: Option<&str>) -> Result<Value, BackendError> {
        let p = self.resolve(path);
        let info =
            forge_llama::inspect(&p).map_err(|e| BackendError::unavailable(e.to_string()))?;
        let mut v = serde_json::to_value(&info)
            .map_err(|e| BackendError::unavailable(format!("model facts not serialisable: {e}")))?;
        // The server hands over canonical paths; compare canonical forms so a symlinked root still matches.
        let same = |a: &Path, b: &Path| {
            a == b
                || std::fs::canonicalize(a)
                    .ok()
                    .zip(std::fs::canonicalize(b).ok())
                    .is_some_and(|(a, b)| a == b)
        };
        v["used_for_runs"] = json!(same(&p, &self.default_model));
        Ok(v)
    }

    fn unload(&self) -> Result<Value, BackendError> {
        let n = forge_llama::engine::unload_all();
        Ok(json!({ "unloaded": n, "loaded": forge_llama::engine::loaded_models().len() }))
    }

    fn cache_state(&self) -> Value {
        let file = self
            .default_model
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        json!({
            "available": self.default_model.is_file(),
            "default_model": file,
            "loaded": forge_llama::engine::loaded_models().iter()
                .map(|m| Path::new(m).file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default())
                .collect::<Vec<_>>(),
            "backend": "llama.cpp",
            "generation": { "kind": self.backend.kind(), "url": self.backend.url() },
        })
    }

    fn policy(&self, mode: Mode, temperature: f32) -> Result<Box<dyn Policy>, PolicyError> {
        let mut config =
            forge_llama::LlamaConfig::new(self.default_model.clone(), llama_mode(mode));
        config.temperature = temperature;
        config.backend = self.backend.clone();
        // Loads on the first decision (or reuses the cached model); a failure becomes model_unavailable.
        Ok(Box::new(forge_llama::LlamaPolicy::new(config)))
    }
}
