//! Forge's llama.cpp engine: a GGUF model run in this process through `llama-cpp-2` (process-wide session
//! cache, chat templates, KV-cache prefix reuse, token-by-token constrained decoding), the in-process
//! `Backend`, and what runs a task or a suite on it (`task_run`, `eval`). What to decode and how to ask lives in
//! `forge-decoding`; model files in `forge-model`. This is the only crate that compiles llama.cpp.

pub mod engine;
pub mod eval;
pub mod in_process;
pub mod task_run;

use std::path::Path;

use forge_decoding::backend::{Backend, BackendError};
use forge_decoding::generation::EngineSettings;
use runtime::policy::PolicyError;

pub use forge_decoding::{
    BackendConfig, DEFAULT_MODEL_PATH, Mode, ModelPolicy, ModelPolicySettings,
};

/// Open the backend `config` names: llama.cpp in this process (with `model_path` and `engine`), or a server
/// (contacted once here, so one that is down is reported before the first decision).
pub fn open_backend(
    config: &BackendConfig,
    model_path: &Path,
    engine: EngineSettings,
) -> Result<Box<dyn Backend>, BackendError> {
    match config {
        BackendConfig::InProcess => Ok(Box::new(in_process::InProcessBackend::load(
            model_path, engine,
        )?)),
        remote => forge_decoding::remote::open(remote),
    }
}

/// A policy that loads its model on the first decision, through any backend (in process included).
pub fn policy(config: ModelPolicySettings) -> ModelPolicy {
    ModelPolicy::new(config, open_backend)
}

/// A policy with its model loaded now (or reused from the process-wide cache).
pub fn load_policy(config: ModelPolicySettings) -> Result<ModelPolicy, PolicyError> {
    ModelPolicy::load(config, open_backend)
}

/// `forge_model::inspect` with this build's llama.cpp information filled in.
pub fn inspect(path: &Path) -> Result<forge_model::ModelInfo, forge_model::ModelUnavailable> {
    let mut info = forge_model::inspect(path)?;
    info.runtime = Some(engine::runtime_info());
    Ok(info)
}
