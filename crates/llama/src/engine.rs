//! The llama.cpp engine — the only module that touches `llama-cpp-2`: backend, process-wide model/session
//! cache, chat templates, KV-cache prefix reuse and token-by-token constrained decoding.
//!
//! It knows nothing about decisions, tools or prompts (that is `policy`/`prompt`/`grammar`); it turns text
//! plus an optional GBNF grammar into text, and reports exact token counts and timings.

use std::collections::HashMap;
use std::ffi::CStr;
use std::num::NonZeroU32;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::model::{LlamaChatMessage, LlamaChatTemplate, LlamaModel};
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::LlamaToken;
use llama_cpp_2::token::data::LlamaTokenData;
use llama_cpp_2::token::data_array::LlamaTokenDataArray;
// The generation types are the seam's; the engine takes and returns them.
pub use forge_decoding::generation::{
    Chooser, EngineConfig, EngineError, Finish, GenerateRequest, Generation, GrammarMode, Sampling, StopCause,
    JsonScanner, stop_error,
};
use forge_model::inspect::{self, ModelUnavailable};


fn backend() -> &'static LlamaBackend {
    static BACKEND: OnceLock<LlamaBackend> = OnceLock::new();
    BACKEND.get_or_init(|| {
        // llama.cpp logs every tensor at load time; keep stderr for our own messages.
        llama_cpp_2::send_logs_to_tracing(
            llama_cpp_2::LogOptions::default().with_logs_enabled(false),
        );
        LlamaBackend::init().expect("llama.cpp backend initialises once per process")
    })
}

/// Version of the bindings and llama.cpp's own system report (CPU features, threads backend).
pub fn runtime_info() -> inspect::RuntimeInfo {
    let _ = backend();
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

type SessionKey = (PathBuf, EngineConfig);
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
    pub file_name: String,
    pub config: EngineConfig,
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
    loading_slot().lock().unwrap_or_else(|p| p.into_inner()).clone()
}

/// Load (or reuse) the model at `path` with `config`. Only local files; never downloads. The cache lock
/// is held only to look up and to insert, never across `load_from_file`/`new_context`.
pub fn load(path: &Path, config: EngineConfig) -> Result<SharedSession, EngineError> {
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
            let m = LlamaModel::load_from_file(backend(), &canonical, &LlamaModelParams::default())
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
        .new_context(backend(), params)
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

    /// Generate. `check(generated)` is polled before every llama.cpp decode (prefill chunks and each new
    /// token), so cancellation and deadlines take effect within one token.
    pub fn generate(
        &mut self,
        req: &GenerateRequest<'_>,
        check: &mut dyn FnMut(u32) -> Option<StopCause>,
    ) -> Result<Generation, EngineError> {
        let vocab = self.model.vocab();
        let mut input = vocab.tokenize(req.prompt.as_bytes(), false, true);
        let prefill_tokens = vocab.tokenize(req.prefill.as_bytes(), false, false);
        input.extend_from_slice(&prefill_tokens);
        let needed = input.len() + req.max_new_tokens as usize;
        if needed > self.config.n_ctx as usize {
            return Err(EngineError::ContextFull {
                needed,
                n_ctx: self.config.n_ctx,
            });
        }
        if input.is_empty() {
            return Err(EngineError::Template("empty prompt".into()));
        }

        let mut grammar = match req.grammar {
            Some(g) => Some(
                LlamaSampler::grammar(&self.model, g, "root")
                    .map_err(|e| EngineError::Grammar(e.to_string()))?,
            ),
            None => None,
        };
        if let Some(g) = grammar.as_mut() {
            for &t in &prefill_tokens {
                g.try_accept(t).map_err(|e| {
                    EngineError::Grammar(format!("the prefill does not fit the grammar: {e}"))
                })?;
            }
        }

        // --- prefill with KV reuse ---
        let started = Instant::now();
        let mut keep = common_prefix(&self.cached, &input);
        if keep == input.len() {
            keep -= 1; // the last input token must be decoded again to get its logits
        }
        if keep < self.cached.len() {
            if self
                .ctx
                .kv_cache_seq_rm(0, Some(keep as u32), None)
                .is_err()
            {
                self.ctx.clear_kv_cache();
                keep = 0;
            }
            self.cached.truncate(keep);
        }
        let reused = keep as u32;
        let mut pos = keep;
        while pos < input.len() {
            if let Some(cause) = check(0) {
                return Err(stop_error(cause, 0));
            }
            let chunk = self.config.prefill_chunk.clamp(1, self.config.n_batch) as usize;
            let end = (pos + chunk).min(input.len());
            self.batch.clear();
            for (i, &t) in input[pos..end].iter().enumerate() {
                let p = pos + i;
                self.batch
                    .add(t, p as i32, &[0], p + 1 == input.len())
                    .map_err(|e| EngineError::Decode(e.to_string()))?;
            }
            if let Err(e) = self.ctx.decode(&mut self.batch) {
                self.clear_cache();
                return Err(EngineError::Decode(e.to_string()));
            }
            self.cached.extend_from_slice(&input[pos..end]);
            pos = end;
        }
        let prefill_ms = started.elapsed().as_secs_f64() * 1e3;

        // --- decode ---
        let started = Instant::now();
        let mut chain = (req.sampling.temperature > 0.0).then(|| {
            LlamaSampler::chain_simple([
                LlamaSampler::top_k(req.sampling.top_k),
                LlamaSampler::top_p(req.sampling.top_p, 1),
                LlamaSampler::temp(req.sampling.temperature),
                LlamaSampler::dist(req.sampling.seed),
            ])
        });
        let mut scanner = JsonScanner::default();
        for b in req.prefill.bytes() {
            scanner.feed(b);
        }
        let mut out: Vec<u8> = Vec::new();
        let mut generated: u32 = 0;
        let mut full_passes: u32 = 0;
        let mut logits_idx = self.batch.n_tokens() - 1;
        // Banned prefixes mask tokens one at a time, so a path can run into a point where every token the
        // grammar allows is masked (the only way on is a banned repeat). Then generation steps back one token,
        // refuses that token at that position, and goes on: a depth-first search over the grammar's paths,
        // which finds an unbanned decision whenever the grammar has one (bounded by MAX_BACKTRACKS).
        let mut picked: Vec<(LlamaToken, usize)> = Vec::new();
        let mut refused: Vec<Vec<LlamaToken>> = vec![Vec::new()];
        let mut backtracks: u32 = 0;
        let finish = loop {
            if generated >= req.max_new_tokens {
                break Finish::MaxTokens;
            }
            let logits = self.ctx.get_logits_ith(logits_idx);
            if debug_tokens() {
                eprintln!("{}", top_candidates(&self.model, logits, 5));
            }
            let position = picked.len();
            let banned = |token: LlamaToken| {
                if refused.get(position).is_some_and(|r| r.contains(&token)) {
                    return true;
                }
                if req.banned_prefixes.is_empty() {
                    return false;
                }
                let mut text = req.prefill.as_bytes().to_vec();
                text.extend_from_slice(&out);
                text.extend_from_slice(&vocab.token_to_piece(token, false, None));
                req.banned_prefixes
                    .iter()
                    .any(|p| text.starts_with(p.as_bytes()))
            };
            let choice = pick(
                logits,
                chain.as_mut(),
                grammar.as_mut(),
                req.grammar_mode,
                &banned,
                &mut full_passes,
            );
            let token = match choice {
                Ok(token) => token,
                Err(e) if is_dead_end(&e) && !picked.is_empty() && backtracks < MAX_BACKTRACKS => {
                    backtracks += 1;
                    let (last, len) = picked.pop().expect("not empty");
                    out.truncate(out.len() - len);
                    generated -= 1;
                    refused.truncate(picked.len() + 1);
                    refused[picked.len()].push(last);
                    // The KV cache holds input + every picked token. Drop the refused token and the one before
                    // it, then decode that one again: its logits are the ones to choose from now.
                    let keep = self.cached.len() - 2;
                    if self.ctx.kv_cache_seq_rm(0, Some(keep as u32), None).is_err() {
                        self.clear_cache();
                        return Err(EngineError::Decode("could not step back in the KV cache".into()));
                    }
                    let previous = self.cached[keep];
                    self.cached.truncate(keep);
                    self.batch.clear();
                    self.batch
                        .add(previous, keep as i32, &[0], true)
                        .map_err(|e| EngineError::Decode(e.to_string()))?;
                    if let Err(e) = self.ctx.decode(&mut self.batch) {
                        self.clear_cache();
                        return Err(EngineError::Decode(e.to_string()));
                    }
                    self.cached.push(previous);
                    logits_idx = 0;
                    if let Some(text) = req.grammar {
                        let accepted: Vec<LlamaToken> =
                            prefill_tokens.iter().copied().chain(picked.iter().map(|(t, _)| *t)).collect();
                        grammar = Some(grammar_after(&self.model, text, &accepted)?);
                    }
                    scanner = JsonScanner::default();
                    for &b in req.prefill.as_bytes().iter().chain(&out) {
                        scanner.feed(b);
                    }
                    continue;
                }
                Err(e) => return Err(e),
            };
            if let Some(g) = grammar.as_mut() {
                g.try_accept(token)
                    .map_err(|e| EngineError::Grammar(format!("token rejected on accept: {e}")))?;
            }
            if vocab.is_eog(token) {
                break Finish::EndOfGeneration;
            }
            let piece = vocab.token_to_piece(token, false, None);
            for &b in &piece {
                scanner.feed(b);
            }
            out.extend_from_slice(&piece);
            picked.push((token, piece.len()));
            refused.push(Vec::new());
            generated += 1;
            if req.stop_at_json_end && scanner.complete() {
                break Finish::JsonComplete;
            }
            if generated >= req.max_new_tokens {
                break Finish::MaxTokens;
            }
            if let Some(cause) = check(generated) {
                return Err(stop_error(cause, generated));
            }
            self.batch.clear();
            self.batch
                .add(token, self.cached.len() as i32, &[0], true)
                .map_err(|e| EngineError::Decode(e.to_string()))?;
            if let Err(e) = self.ctx.decode(&mut self.batch) {
                self.clear_cache();
                return Err(EngineError::Decode(e.to_string()));
            }
            self.cached.push(token);
            logits_idx = 0;
        };
        let decode_ms = started.elapsed().as_secs_f64() * 1e3;
        let mut text = req.prefill.as_bytes().to_vec();
        text.extend_from_slice(&out);
        Ok(Generation {
            text: String::from_utf8_lossy(&text).into_owned(),
            input_tokens: input.len() as u32,
            output_tokens: generated,
            reused_tokens: reused,
            prefill_tokens: input.len() as u32 - reused,
            prefill_ms,
            decode_ms,
            full_grammar_passes: full_passes,
            finish,
        })
    }
}

impl Session {
    /// Grammar-only generation: the prompt is never evaluated and the model's logits never computed. From the
    /// prefill on, each token is drawn uniformly among the tokens the grammar allows (banned prefixes masked
    /// as in [`Session::generate`]), with a generator seeded by `req.sampling.seed`, until the grammar ends,
    /// the JSON value completes or the cap is reached. Input-token counts are 0: nothing was read.
    pub fn generate_uniform(
        &mut self,
        req: &GenerateRequest<'_>,
        check: &mut dyn FnMut(u32) -> Option<StopCause>,
    ) -> Result<Generation, EngineError> {
        let vocab = self.model.vocab();
        let Some(text) = req.grammar else {
            return Err(EngineError::Grammar(
                "grammar-only generation needs a grammar (it has no model to choose tokens)".into(),
            ));
        };
        let prefill_tokens = vocab.tokenize(req.prefill.as_bytes(), false, false);
        let mut grammar = grammar_after(&self.model, text, &prefill_tokens).map_err(|e| match e {
            EngineError::Grammar(m) => EngineError::Grammar(format!("the prefill does not fit the grammar: {m}")),
            other => other,
        })?;
        let n_vocab = self.model.n_vocab();
        let mut rng = SplitMix64(u64::from(req.sampling.seed) ^ 0x9e37_79b9_7f4a_7c15);
        let mut scanner = JsonScanner::default();
        for b in req.prefill.bytes() {
            scanner.feed(b);
        }
        let started = Instant::now();
        let mut out: Vec<u8> = Vec::new();
        let mut generated: u32 = 0;
        // Steps back from dead ends the banned prefixes make, exactly as `generate` does.
        let mut picked: Vec<(LlamaToken, usize)> = Vec::new();
        let mut refused: Vec<Vec<LlamaToken>> = vec![Vec::new()];
        let mut backtracks: u32 = 0;
        let finish = loop {
            if generated >= req.max_new_tokens {
                break Finish::MaxTokens;
            }
            if let Some(cause) = check(generated) {
                return Err(stop_error(cause, generated));
            }
            // Equal logits: whatever the grammar leaves finite is equally likely.
            let mut arr = LlamaTokenDataArray::new(
                (0..n_vocab)
                    .map(|i| LlamaTokenData::new(LlamaToken(i), 0.0, 0.0))
                    .collect(),
                false,
            );
            arr.apply_sampler(&mut grammar);
            let here = refused.get(picked.len());
            let allowed: Vec<LlamaToken> = arr
                .data
                .iter()
                .filter(|d| d.logit().is_finite())
                .map(|d| d.id())
                .filter(|token| !here.is_some_and(|r| r.contains(token)))
                .filter(|&token| {
                    req.banned_prefixes.is_empty() || {
                        let mut text = req.prefill.as_bytes().to_vec();
                        text.extend_from_slice(&out);
                        text.extend_from_slice(&vocab.token_to_piece(token, false, None));
                        !req.banned_prefixes.iter().any(|p| text.starts_with(p.as_bytes()))
                    }
                })
                .collect();
            if allowed.is_empty() {
                if picked.is_empty() || backtracks >= MAX_BACKTRACKS {
                    return Err(EngineError::Grammar(NO_TOKEN.into()));
                }
                backtracks += 1;
                let (last, len) = picked.pop().expect("not empty");
                out.truncate(out.len() - len);
                generated -= 1;
                refused.truncate(picked.len() + 1);
                refused[picked.len()].push(last);
                let accepted: Vec<LlamaToken> =
                    prefill_tokens.iter().copied().chain(picked.iter().map(|(t, _)| *t)).collect();
                grammar = grammar_after(&self.model, text, &accepted)?;
                scanner = JsonScanner::default();
                for &b in req.prefill.as_bytes().iter().chain(&out) {
                    scanner.feed(b);
                }
                continue;
            }
            let token = allowed[rng.below(allowed.len())];
            if debug_tokens() {
                eprintln!("uniform pick {} of {}: {:?} {:?}", token.0, allowed.len(), String::from_utf8_lossy(&vocab.token_to_piece(token, false, None)), String::from_utf8_lossy(&vocab.token_to_piece(token, true, None)));
            }
            grammar
                .try_accept(token)
                .map_err(|e| EngineError::Grammar(format!("token rejected on accept: {e}")))?;
            if vocab.is_eog(token) {
                break Finish::EndOfGeneration;
            }
            let piece = vocab.token_to_piece(token, false, None);
            for &b in &piece {
                scanner.feed(b);
            }
            out.extend_from_slice(&piece);
            picked.push((token, piece.len()));
            refused.push(Vec::new());
            generated += 1;
            if req.stop_at_json_end && scanner.complete() {
                break Finish::JsonComplete;
            }
        };
        let mut text = req.prefill.as_bytes().to_vec();
        text.extend_from_slice(&out);
        Ok(Generation {
            text: String::from_utf8_lossy(&text).into_owned(),
            input_tokens: 0,
            output_tokens: generated,
            reused_tokens: 0,
            prefill_tokens: 0,
            prefill_ms: 0.0,
            decode_ms: started.elapsed().as_secs_f64() * 1e3,
            full_grammar_passes: generated,
            finish,
        })
    }
}

/// A small seeded generator for grammar-only draws (SplitMix64: one state word, good enough to pick among
/// at most a vocabulary's worth of tokens, identical on every platform).
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Uniform in `0..n` (rejection sampling: no modulo bias).
    fn below(&mut self, n: usize) -> usize {
        let n = n as u64;
        let zone = u64::MAX - u64::MAX % n;
        loop {
            let x = self.next();
            if x < zone {
                return (x % n) as usize;
            }
        }
    }
}
/// `FORGE_LLAMA_DEBUG_TOKENS=1` prints the top candidates of every generated token (prompt experiments).
fn debug_tokens() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| std::env::var("FORGE_LLAMA_DEBUG_TOKENS").is_ok_and(|v| v == "1"))
}

fn top_candidates(model: &LlamaModel, logits: &[f32], n: usize) -> String {
    let mut idx: Vec<usize> = (0..logits.len()).collect();
    idx.select_nth_unstable_by(n, |a, b| logits[*b].total_cmp(&logits[*a]));
    let mut top: Vec<usize> = idx[..n].to_vec();
    top.sort_by(|a, b| logits[*b].total_cmp(&logits[*a]));
    top.iter()
        .map(|&i| {
            let piece = model
                .vocab()
                .token_to_piece(LlamaToken(i as i32), false, None);
            format!("{:?}:{:.1}", String::from_utf8_lossy(&piece), logits[i])
        })
        .collect::<Vec<_>>()
        .join("  ")
}

fn common_prefix(a: &[LlamaToken], b: &[LlamaToken]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

fn argmax(logits: &[f32]) -> usize {
    let mut best = 0;
    let mut best_v = f32::NEG_INFINITY;
    for (i, &v) in logits.iter().enumerate() {
        if v > best_v {
            best_v = v;
            best = i;
        }
    }
    best
}

fn full_array(logits: &[f32]) -> LlamaTokenDataArray {
    LlamaTokenDataArray::new(
        logits
            .iter()
            .enumerate()
            .map(|(i, &l)| LlamaTokenData::new(LlamaToken(i as i32), l, 0.0))
            .collect(),
        false,
    )
}

/// Choose the next token. With a grammar in `CheckFirst` mode the unconstrained choice is tried first and
/// the whole-vocabulary grammar pass runs only when the grammar rejects it.
fn pick(
    logits: &[f32],
    mut chain: Option<&mut LlamaSampler>,
    mut grammar: Option<&mut LlamaSampler>,
    mode: GrammarMode,
    banned: &dyn Fn(LlamaToken) -> bool,
    full_passes: &mut u32,
) -> Result<LlamaToken, EngineError> {
    // Banned tokens are masked exactly as a grammar masks: out of the candidate arrays before selection.
    let unban = |arr: &mut LlamaTokenDataArray| {
        for d in arr.data.iter_mut() {
            if d.logit().is_finite() && banned(d.id()) {
                d.set_logit(f32::NEG_INFINITY);
            }
        }
    };
    let unconstrained = |chain: Option<&mut LlamaSampler>| -> Result<LlamaToken, EngineError> {
        match chain {
            None => Ok(LlamaToken(argmax(logits) as i32)),
            Some(c) => {
                let mut arr = full_array(logits);
                arr.apply_sampler(c);
                arr.selected_token()
                    .ok_or_else(|| EngineError::Decode("sampler selected no token".into()))
            }
        }
    };
    let Some(g) = grammar.as_deref_mut() else {
        return unconstrained(chain);
    };
    if mode == GrammarMode::CheckFirst {
        let candidate = unconstrained(chain.as_deref_mut())?;
        let mut one = LlamaTokenDataArray::new(
            vec![LlamaTokenData::new(
                candidate,
                logits[candidate.0 as usize],
                0.0,
            )],
            false,
        );
        one.apply_sampler(g);
        if one.data[0].logit().is_finite() && !banned(candidate) {
            return Ok(candidate);
        }
        // Rejected: the grammar's choice is almost always among the most likely tokens. Filter the top
        // SHORTLIST first; for greedy decoding this is exactly the full pass's answer whenever any shortlisted
        // token is allowed (the best allowed token overall is then the best allowed shortlisted one).
        let mut short = shortlist(logits, SHORTLIST);
        short.apply_sampler(g);
        unban(&mut short);
        if short.data.iter().any(|d| d.logit().is_finite()) {
            return select(short, chain);
        }
    }
    *full_passes += 1;
    let mut arr = full_array(logits);
    arr.apply_sampler(g);
    unban(&mut arr);
    if !arr.data.iter().any(|d| d.logit().is_finite()) {
        return Err(EngineError::Grammar(
            NO_TOKEN.into(),
        ));
    }
    select(arr, chain)
}

/// The grammar error when no token is allowed at a point (every candidate rejected or masked).
const NO_TOKEN: &str = "the grammar allows no token here";

/// How many times one generation may step back from a dead end its masks made (see [`Session::generate`]).
const MAX_BACKTRACKS: u32 = 256;

fn is_dead_end(e: &EngineError) -> bool {
    matches!(e, EngineError::Grammar(m) if m == NO_TOKEN)
}

/// A grammar sampler for `text` that has accepted `tokens` (rebuilt when generation steps back: llama.cpp's
/// grammar sampler cannot un-accept a token).
fn grammar_after(model: &LlamaModel, text: &str, tokens: &[LlamaToken]) -> Result<LlamaSampler, EngineError> {
    let mut g = LlamaSampler::grammar(model, text, "root").map_err(|e| EngineError::Grammar(e.to_string()))?;
    for &t in tokens {
        g.try_accept(t).map_err(|e| EngineError::Grammar(format!("replaying an accepted token: {e}")))?;
    }
    Ok(g)
}

/// How many top tokens the check-first path tries before a whole-vocabulary grammar pass.
const SHORTLIST: usize = 128;

fn shortlist(logits: &[f32], n: usize) -> LlamaTokenDataArray {
    let n = n.min(logits.len());
    let mut idx: Vec<u32> = (0..logits.len() as u32).collect();
    if n < idx.len() {
        idx.select_nth_unstable_by(n, |a, b| {
            logits[*b as usize].total_cmp(&logits[*a as usize])
        });
        idx.truncate(n);
    }
    LlamaTokenDataArray::new(
        idx.into_iter()
            .map(|i| LlamaTokenData::new(LlamaToken(i as i32), logits[i as usize], 0.0))
            .collect(),
        false,
    )
}

/// Pick from grammar-filtered candidates: the best allowed token (greedy) or a sample via the chain.
fn select(
    mut arr: LlamaTokenDataArray,
    chain: Option<&mut LlamaSampler>,
) -> Result<LlamaToken, EngineError> {
    match chain {
        None => arr
            .data
            .iter()
            .filter(|d| d.logit().is_finite())
            .max_by(|a, b| a.logit().total_cmp(&b.logit()))
            .map(|d| d.id())
            .ok_or_else(|| EngineError::Grammar(NO_TOKEN.into())),
        Some(c) => {
            arr.data.retain(|d| d.logit().is_finite());
            arr.apply_sampler(c);
            arr.selected_token()
                .ok_or_else(|| EngineError::Decode("sampler selected no token".into()))
        }
    }
}

/// Convert a JSON Schema to GBNF with llama.cpp's converter, compacted (benchmarks use it for a grammar
/// that does not depend on a run; decisions use `grammar`, which builds GBNF itself).
pub fn schema_to_gbnf(schema: &serde_json::Value) -> Result<String, EngineError> {
    let text = serde_json::to_string(schema).expect("schema serialises");
    let gbnf = llama_cpp_2::json_schema_to_grammar(&text)
        .map_err(|e| EngineError::Grammar(e.to_string()))?;
    Ok(compact_gbnf(&gbnf))
}

/// No optional whitespace between JSON tokens, no escapes inside strings, at most four decimals: the
/// converter's defaults cost tokens a small model wanders into.
fn compact_gbnf(gbnf: &str) -> String {
    gbnf.lines()
        .map(|line| {
            let rule = line.trim_start();
            if rule.starts_with("space ::=") {
                "space ::= \"\"".to_string()
            } else if rule.starts_with("char ::=") {
                r#"char ::= [^"\\\x7F\x00-\x1F]"#.to_string()
            } else if rule.starts_with("decimal-part ::=") {
                "decimal-part ::= [0-9]{1,4}".to_string()
            } else {
                line.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}
