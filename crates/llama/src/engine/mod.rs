//! The llama.cpp engine — the only module that touches `llama-cpp-2`: llama.cpp's one-time
//! initialisation, process-wide model/session cache, chat templates, KV-cache prefix reuse and
//! token-by-token constrained decoding.
//!
//! It knows nothing about decisions, tools or prompts (that is `policy`/`prompt`/`grammar`); it turns text
//! plus an optional GBNF grammar into text, and reports exact token counts and timings.
//!
//! Here: the initialisation, the process-wide model cache and sessions. `decode` is the model's generation,
//! `uniform` the grammar-only baseline's, `sampling` the per-token choice under a grammar both share, `schema`
//! llama.cpp's JSON-Schema-to-GBNF converter.

use std::collections::HashMap;
use std::ffi::CStr;
use std::num::NonZeroU32;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::model::{LlamaChatMessage, LlamaChatTemplate, LlamaModel};
use llama_cpp_2::token::LlamaToken;
// The generation types are the seam's; the engine takes and returns them.
pub use forge_decoding::generation::{
    Chooser, EngineError, EngineSettings, Finish, GenerateRequest, Generation, GrammarMode,
    JsonScanner, Sampling, StopCause, stop_error,
};
use forge_model::inspect::{self, ModelUnavailable};

mod decode;
mod path;
mod sampling;
mod schema;
mod share;
mod uniform;

pub use schema::schema_to_gbnf;

/// llama.cpp itself, initialised once per process (the bindings call this handle `LlamaBackend`; Forge's
/// "backend" is the generation backend, not this).
fn llama_cpp() -> &'static LlamaBackend {
    static LLAMA_CPP: OnceLock<LlamaBackend> = OnceLock::new();
    LLAMA_CPP.get_or_init(|| {
        // llama.cpp logs every tensor at load time; keep stderr for our own messages.
        llama_cpp_2::send_logs_to_tracing(
            llama_cpp_2::LogOptions::default().with_logs_enabled(false),
        );
        LlamaBackend::init().expect("llama.cpp initialises once per process")
    })
}

/// Version of the bindings and llama.cpp's own system report (CPU features, threads backend).
pub fn runtime_info() -> inspect::RuntimeInfo {
    let _ = llama_cpp();
    // SAFETY: returns a pointer to a static, NUL-terminated buffer owned by llama.cpp.
    let info = unsafe { CStr::from_ptr(llama_cpp_sys_2::llama_print_system_info()) };
    inspect::RuntimeInfo {
        bindings: "llama-cpp-2 0.1.160".into(),
        system_info: info.to_string_lossy().trim().to_string(),
    }
}

/// The ggml version compiled into this process (llama.cpp's tensor library; bumps with llama.cpp releases).
pub fn ggml_version() -> String {
    // SAFETY: returns a pointer to a static, NUL-terminated string compiled into ggml.
    unsafe { CStr::from_ptr(llama_cpp_sys_2::ggml_version()) }
        .to_string_lossy()
        .into_owned()
}

type SessionKey = (PathBuf, EngineSettings);
struct Cache {
    models: HashMap<PathBuf, Arc<LlamaModel>>,
    sessions: HashMap<SessionKey, SharedSession>,
}
fn cache() -> &'static Mutex<Cache> {
    static CACHE: OnceLock<Mutex<Cache>> = OnceLock::new();
    CACHE.get_or_init(|| {
        Mutex::new(Cache {
            models: HashMap::new(),
            sessions: HashMap::new(),
        })
    })
}

pub type SharedSession = Arc<Mutex<Session>>;

/// A loaded model with one context whose KV cache persists between calls (and between runs: jobs run one at
/// a time and share the system prompt, so the next run starts with it already decoded).
pub struct Session {
    // Field order matters: the context borrows the model and must be dropped first.
    ctx: LlamaContext<'static>,
    batch: LlamaBatch<'static>,
    /// Tokens whose KV entries are in the cache for sequence 0, in position order.
    cached: Vec<LlamaToken>,
    template: LlamaChatTemplate,
    model: Arc<LlamaModel>,
    /// The vocabulary by first byte, read on the first grammar-constrained generation (the token share's
    /// shortcut past whole-vocabulary passes).
    first_bytes: Option<Arc<share::FirstBytes>>,
    pub file_name: String,
    pub config: EngineSettings,
}

/// The model file being loaded right now (file name only), for status pages. A separate lock from the
/// cache's, so asking never waits for a load.
fn loading_slot() -> &'static Mutex<Option<String>> {
    static LOADING: OnceLock<Mutex<Option<String>>> = OnceLock::new();
    LOADING.get_or_init(|| Mutex::new(None))
}

/// Serialises loads (one model built at a time) without holding the cache lock while llama.cpp reads the
/// file and builds the context: `loaded_models`, `loading_model` and cache hits answer during a cold load.
fn load_gate() -> &'static Mutex<()> {
    static GATE: OnceLock<Mutex<()>> = OnceLock::new();
    GATE.get_or_init(|| Mutex::new(()))
}

/// Clears the loading slot however the load ends (error or panic included).
struct LoadingMark;
impl LoadingMark {
    fn set(path: &Path) -> Self {
        *loading_slot().lock().unwrap_or_else(|p| p.into_inner()) = Some(inspect::redact(path));
        LoadingMark
    }
}
impl Drop for LoadingMark {
    fn drop(&mut self) {
        *loading_slot().lock().unwrap_or_else(|p| p.into_inner()) = None;
    }
}

/// The model file a load is reading right now, if any (file name only).
pub fn loading_model() -> Option<String> {
    loading_slot()
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone()
}

/// Load (or reuse) the model at `path` with `config`. Only local files; never downloads. The cache lock
/// is held only to look up and to insert, never across `load_from_file`/`new_context`.
pub fn load(path: &Path, config: EngineSettings) -> Result<SharedSession, EngineError> {
    let canonical = std::fs::canonicalize(path).map_err(|e| {
        ModelUnavailable::new(
            path,
            if e.kind() == std::io::ErrorKind::NotFound {
                "file not found (run `cargo xtask model fetch` or pass --gguf PATH)".to_string()
            } else {
                format!("cannot resolve path: {}", e.kind())
            },
        )
    })?;
    let key = (canonical.clone(), config);
    let cached = |key: &SessionKey| {
        let cache = cache().lock().unwrap_or_else(|p| p.into_inner());
        cache.sessions.get(key).cloned()
    };
    if let Some(s) = cached(&key) {
        return Ok(s);
    }
    let _gate = load_gate().lock().unwrap_or_else(|p| p.into_inner());
    // Another caller may have built it while this one waited at the gate.
    if let Some(s) = cached(&key) {
        return Ok(s);
    }
    let _mark = LoadingMark::set(path);
    let known = cache()
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .models
        .get(&canonical)
        .cloned();
    let model = match known {
        Some(m) => m,
        None => {
            // Cheap structural check first: llama.cpp's own error for a bad file is just "null result".
            inspect::quick_check(&canonical)?;
            let m =
                LlamaModel::load_from_file(llama_cpp(), &canonical, &LlamaModelParams::default())
                    .map_err(|e| {
                    ModelUnavailable::new(path, format!("llama.cpp could not load it: {e}"))
                })?;
            let m = Arc::new(m);
            cache()
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .models
                .insert(canonical.clone(), m.clone());
            m
        }
    };
    let template = model.chat_template(None).map_err(|e| {
        ModelUnavailable::new(
            path,
            format!("no usable chat template in GGUF metadata: {e}"),
        )
    })?;
    let params = LlamaContextParams::default()
        .with_n_ctx(NonZeroU32::new(config.n_ctx))
        .with_n_batch(config.n_batch)
        .with_n_ubatch(config.n_batch)
        .with_n_threads(config.threads)
        .with_n_threads_batch(config.threads);
    let ctx = model
        .new_context(llama_cpp(), params)
        .map_err(|e| EngineError::Decode(format!("context: {e}")))?;
    // SAFETY: the context borrows the model. The model lives in an Arc stored in the same Session, declared
    // after `ctx`, so it outlives the context; the 'static lifetime never escapes this struct.
    let ctx: LlamaContext<'static> =
        unsafe { std::mem::transmute::<LlamaContext<'_>, LlamaContext<'static>>(ctx) };
    let session = Session {
        ctx,
        batch: LlamaBatch::new(config.n_batch as usize, 1),
        cached: Vec::new(),
        template,
        model,
        first_bytes: None,
        file_name: inspect::redact(path),
        config,
    };
    let shared = Arc::new(Mutex::new(session));
    cache()
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .sessions
        .insert(key, shared.clone());
    Ok(shared)
}

/// Drop every cached session and model not used elsewhere; returns how many sessions were dropped.
pub fn unload_all() -> usize {
    let mut cache = cache().lock().unwrap_or_else(|p| p.into_inner());
    let n = cache.sessions.len();
    cache.sessions.clear();
    cache.models.clear();
    n
}

/// Lock a session for generation. A session whose last user panicked mid-generation is poisoned: its token
/// list may no longer match its KV cache, so it is not trusted — its KV cache and token list are cleared, it
/// is dropped from the process cache (the next load builds a fresh one) and the poison is cleared.
pub fn lock_session(shared: &SharedSession) -> std::sync::MutexGuard<'_, Session> {
    match shared.lock() {
        Ok(guard) => guard,
        Err(poisoned) => {
            let mut guard = poisoned.into_inner();
            guard.clear_cache();
            shared.clear_poison();
            let mut cache = cache().lock().unwrap_or_else(|p| p.into_inner());
            cache.sessions.retain(|_, s| !Arc::ptr_eq(s, shared));
            eprintln!(
                "forge-llama: a generation panicked; its session's KV cache was cleared and the session dropped"
            );
            guard
        }
    }
}

/// File names of the models currently loaded in this process.
pub fn loaded_models() -> Vec<String> {
    let cache = cache().lock().unwrap_or_else(|p| p.into_inner());
    cache.models.keys().map(|p| inspect::redact(p)).collect()
}

impl Session {
    /// The model's own chat template applied to a system and a user message, ending with the assistant header.
    pub fn chat_prompt(&self, system: &str, user: &str) -> Result<String, EngineError> {
        let msgs = [("system", system), ("user", user)]
            .into_iter()
            .map(|(r, c)| LlamaChatMessage::new(r.into(), c.into()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| EngineError::Template(e.to_string()))?;
        self.model
            .apply_chat_template(&self.template, &msgs, true)
            .map_err(|e| EngineError::Template(e.to_string()))
    }

    pub fn count_tokens(&self, text: &str) -> usize {
        self.model
            .vocab()
            .tokenize(text.as_bytes(), false, true)
            .len()
    }

    /// Forget the KV cache (benchmarks use this to measure cold prefill).
    pub fn clear_cache(&mut self) {
        self.ctx.clear_kv_cache();
        self.cached.clear();
    }
}
