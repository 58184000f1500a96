//! The in-process backend: the `Backend` seam over a llama.cpp session from the engine's process-wide cache.

use std::path::{Path, PathBuf};

use forge_decoding::backend::{Backend, BackendError, BackendRequest};

use crate::engine::{
    self, Chooser, EngineSettings, GenerateRequest, Generation, SharedSession, StopCause,
};

/// The in-process llama.cpp session from the engine's process-wide cache.
pub struct InProcessBackend {
    session: SharedSession,
    model: PathBuf,
}

impl InProcessBackend {
    pub fn load(model_path: &Path, engine: EngineSettings) -> Result<Self, BackendError> {
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
        format!("in-process {}", forge_model::inspect::redact(&self.model))
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
        send::<forge_decoding::server_backend::LlamaServerBackend>();
        send::<forge_decoding::openai_backend::OpenAiBackend>();
        send::<Box<dyn Backend>>();
        send::<forge_decoding::BackendConfig>();
    }
}
