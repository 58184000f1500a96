//! The backends behind the `Backend` seam that need more than the seam itself: the in-process llama.cpp
//! session from the engine's process-wide cache, and `open`, which builds whichever backend a
//! `BackendConfig` names (in process, llama-server, OpenAI-compatible). Kept apart from `backend` so the seam
//! depends on no backend and no backend on another.

use std::path::{Path, PathBuf};

use crate::backend::{Backend, BackendConfig, BackendError, BackendRequest};
use crate::engine::{self, Chooser, EngineConfig, GenerateRequest, Generation, SharedSession, StopCause};
use crate::openai_backend::OpenAiBackend;
use crate::server_backend::LlamaServerBackend;

/// Open the backend `config` names; `model_path` and `engine` are used by the in-process one. Remote backends
/// contact their server once here, so a server that is down is reported before the first decision.
pub fn open(
    config: &BackendConfig,
    model_path: &Path,
    engine: EngineConfig,
) -> Result<Box<dyn Backend>, BackendError> {
    match config {
        BackendConfig::InProcess => Ok(Box::new(InProcessBackend::load(model_path, engine)?)),
        BackendConfig::LlamaServer(http) => Ok(Box::new(LlamaServerBackend::connect(http)?)),
        BackendConfig::OpenaiChat { http, model } => {
            Ok(Box::new(OpenAiBackend::connect(http, model.clone())?))
        }
    }
}

/// The in-process llama.cpp session from the engine's process-wide cache.
pub struct InProcessBackend {
    session: SharedSession,
    model: PathBuf,
}

impl InProcessBackend {
    pub fn load(model_path: &Path, engine: EngineConfig) -> Result<Self, BackendError> {
        Ok(Self {
            session: engine::load(model_path, engine)?,
            model: model_path.to_path_buf(),
        })
    }

    pub fn session(&self) -> &SharedSession {
        &self.session
    }
}

impl Backend for InProcessBackend {
    fn describe(&self) -> String {
        format!("in-process {}", crate::inspect::redact(&self.model))
    }

    fn generate(
        &mut self,
        req: &BackendRequest<'_>,
        check: &mut dyn FnMut(u32) -> Option<StopCause>,
    ) -> Result<Generation, BackendError> {
        let mut session = engine::lock_session(&self.session);
        let chat = session.chat_prompt(req.system, req.user)?;
        let request = GenerateRequest {
            prompt: &chat,
            prefill: req.prefill,
            grammar: req.grammar,
            grammar_mode: req.grammar_mode,
            sampling: req.sampling,
            max_new_tokens: req.max_new_tokens,
            stop_at_json_end: req.stop_at_json_end,
            banned_prefixes: req.banned_prefixes,
        };
        Ok(match req.sampling.chooser {
            Chooser::Model => session.generate(&request, check)?,
            Chooser::GrammarUniform => session.generate_uniform(&request, check)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_backend_is_send() {
        fn send<T: Send>() {}
        send::<InProcessBackend>();
        send::<LlamaServerBackend>();
        send::<OpenAiBackend>();
        send::<Box<dyn Backend>>();
        send::<BackendConfig>();
    }
}
