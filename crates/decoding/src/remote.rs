//! Opening the server backends from their config. Kept apart from `backend` so the seam depends on no
//! backend and no backend on another (each server backend depends on the seam, this module on both).

use crate::backend::{Backend, BackendConfig, BackendError};
use crate::openai_backend::OpenAiBackend;
use crate::server_backend::LlamaServerBackend;

/// Open a server backend (`llama-server`, `openai-chat`), contacting the server once so one that is down is
/// reported before the first decision. `in-process` is refused with a config error: this crate has no
/// llama.cpp (`forge_llama::open_backend` opens that kind).
pub fn open(config: &BackendConfig) -> Result<Box<dyn Backend>, BackendError> {
    match config {
        BackendConfig::InProcess => Err(BackendError::Config(
            "in-process generation needs llama.cpp, which this build does not link (use forge_llama::open_backend)".into(),
        )),
        BackendConfig::LlamaServer(http) => Ok(Box::new(LlamaServerBackend::connect(http)?)),
        BackendConfig::OpenaiChat { http, model } => {
            Ok(Box::new(OpenAiBackend::connect(http, model.clone())?))
        }
    }
}
