//! The llama.cpp model provider handed to the server: inspection, the process-wide cache, `ModelPolicy`.
//!
//! This is the one place the service meets `forge_llama`. It never produces a decision itself: a
//! missing or broken model reaches the runtime as `model_unavailable`.

use std::path::{Path, PathBuf};

use forge_server::{Mode, ModelEntry, ModelProvider, ProviderError};
use runtime::policy::{Policy, PolicyError};
use serde_json::{Value, json};

pub struct LlamaProvider {
    /// Project root: relative model paths are resolved against it.
    pub root: PathBuf,
    /// The model runs use (`--gguf`, or `<model-dir>/<default file>`).
    pub default_model: PathBuf,
    /// Where runs generate: in process (the model above) or on an inference server.
    pub backend: forge_llama::BackendConfig,
    /// Where `cargo xtask model fetch` writes models and their manifests (listed by `models()`).
    pub models_dir: PathBuf,
    /// `--gguf FILE`, listed as a model of its own when it is not one of the fetched ones.
    pub gguf_flag: Option<PathBuf>,
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

/// GGUF header facts into the identity; `None` when the header does not describe a usable model.
fn with_facts(mut entry: ModelEntry) -> Option<ModelEntry> {
    let info = forge_llama::inspect(&entry.path).ok()?;
    if !info.sha256.eq_ignore_ascii_case(&entry.sha256) && entry.source == "models_dir" {
        return None;
    }
    entry.sha256 = info.sha256;
    entry.bytes = info.bytes;
    entry.quantization = info.quantization;
    entry.parameters = Some(info.parameter_count);
    entry.context_length = info.context_length;
    Some(entry)
}

impl LlamaProvider {
    fn resolve(&self, path: Option<&str>) -> PathBuf {
        match path {
            None => self.default_model.clone(),
            Some(p) if Path::new(p).is_absolute() => PathBuf::from(p),
            Some(p) => self.root.join(p),
        }
    }
}

impl ModelProvider for LlamaProvider {
    fn inspect(&self, path: Option<&str>) -> Result<Value, ProviderError> {
        let p = self.resolve(path);
        let info =
            forge_llama::inspect(&p).map_err(|e| ProviderError::unavailable(e.to_string()))?;
        let mut v = serde_json::to_value(&info).map_err(|e| {
            ProviderError::unavailable(format!("model facts not serialisable: {e}"))
        })?;
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

    fn unload(&self) -> Result<Value, ProviderError> {
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
            // The file a run is loading right now (null otherwise): a cold load takes seconds and the
            // API keeps answering meanwhile.
            "loading": forge_llama::engine::loading_model()
                .map(|m| Path::new(&m).file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()),
            "backend": "llama.cpp",
            // policy_for drops a cached model before another one loads.
            "max_loaded_models": 1,
            "generation": { "kind": self.backend.kind(), "url": self.backend.url() },
        })
    }

    fn models(&self) -> Vec<ModelEntry> {
        let (fetched, _skipped) = forge_server::catalogue::scan_manifests(&self.models_dir);
        let mut listed: Vec<ModelEntry> = fetched.into_iter().filter_map(with_facts).collect();
        if let Some(flag) = &self.gguf_flag
            && !listed.iter().any(|m| same_file(&m.path, flag))
        {
            let name = flag
                .file_stem()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| "gguf".into());
            let entry = ModelEntry {
                name: if listed.iter().any(|m| m.name == name) {
                    format!("{name} (--gguf)")
                } else {
                    name
                },
                file: forge_model::inspect::redact(flag),
                bytes: 0,
                sha256: String::new(),
                quantization: None,
                parameters: None,
                context_length: None,
                fetched_at: None,
                source: "gguf_flag".into(),
                default: false,
                path: flag.clone(),
            };
            listed.extend(with_facts(entry));
        }
        for m in &mut listed {
            m.default = same_file(&m.path, &self.default_model);
        }
        listed
    }

    fn policy_for(
        &self,
        model: &ModelEntry,
        mode: Mode,
        temperature: f32,
    ) -> Result<Box<dyn Policy>, PolicyError> {
        // One model in memory at a time: runs execute one after another, so a different model cached by an
        // earlier run is dropped before this one loads.
        if forge_llama::engine::loaded_models()
            .iter()
            .any(|f| *f != model.file)
        {
            forge_llama::engine::unload_all();
        }
        let mut config = forge_llama::ModelPolicySettings::new(model.path.clone(), mode);
        config.temperature = temperature;
        config.backend = self.backend.clone();
        Ok(Box::new(forge_llama::policy(config)))
    }

    fn policy(&self, mode: Mode, temperature: f32) -> Result<Box<dyn Policy>, PolicyError> {
        let mut config = forge_llama::ModelPolicySettings::new(self.default_model.clone(), mode);
        config.temperature = temperature;
        config.backend = self.backend.clone();
        // Loads on the first decision (or reuses the cached model); a failure becomes model_unavailable.
        Ok(Box::new(forge_llama::policy(config)))
    }
}
