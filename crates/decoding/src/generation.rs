//! What one generation asks for and returns — settings, sampling, who chooses tokens, the finish and its
//! counts, the errors — as plain data shared by every backend (in-process llama.cpp, llama-server, OpenAI-
//! compatible), so decoding code and the remote backends build and test without llama.cpp.

use forge_model::inspect::ModelUnavailable;

/// The in-process llama.cpp engine's settings (CPU threads, context and batch sizes, prefill chunk). Part of
/// the engine's session cache key; the server backends do not read them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct EngineSettings {
    pub threads: i32,
    pub n_ctx: u32,
    pub n_batch: u32,
    /// Prompt tokens decoded per llama.cpp call. Cancellation and the deadline are checked between calls,
    /// so this bounds how long a cancel waits during a long prefill (64 tokens ≈ 0.7 s here).
    pub prefill_chunk: u32,
}

impl Default for EngineSettings {
    fn default() -> Self {
        let threads = std::thread::available_parallelism()
            .map_or(2, |n| n.get())
            .min(8) as i32;
        Self {
            threads,
            n_ctx: 4096,
            n_batch: 512,
            prefill_chunk: 64,
        }
    }
}

/// What the in-process llama.cpp engine fails with (a server backend has `BackendError`s of its own).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EngineError {
    #[error(transparent)]
    Unavailable(#[from] ModelUnavailable),
    #[error("cancelled after {generated} generated tokens")]
    Cancelled { generated: u32 },
    #[error("deadline reached after {generated} generated tokens")]
    Timeout { generated: u32 },
    #[error("prompt needs {needed} tokens (prompt + max new tokens) but the context holds {n_ctx}")]
    ContextFull { needed: usize, n_ctx: u32 },
    #[error("grammar error: {0}")]
    Grammar(String),
    #[error("chat template error: {0}")]
    Template(String),
    #[error("llama.cpp decode failed: {0}")]
    Decode(String),
}

/// Why a caller wants generation to stop early (polled before every decode).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopCause {
    Cancelled,
    Timeout,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sampling {
    /// 0 = greedy.
    pub temperature: f32,
    pub seed: u32,
    pub top_k: i32,
    pub top_p: f32,
    /// Who picks each token: the model's logits, or a uniform draw among what the grammar allows.
    pub chooser: Chooser,
}

impl Default for Sampling {
    fn default() -> Self {
        Self {
            temperature: 0.0,
            seed: 0x5eed,
            top_k: 40,
            top_p: 0.95,
            chooser: Chooser::Model,
        }
    }
}

/// Who picks each generated token.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum Chooser {
    /// The model: its logits, greedy or sampled at the request's temperature, filtered by the grammar.
    #[default]
    Model,
    /// No model at all: every token is drawn uniformly (seeded) among the tokens the grammar allows at that
    /// point. The baseline that says how much of a decision the grammar alone makes.
    GrammarUniform,
}

impl Chooser {
    pub fn as_str(self) -> &'static str {
        match self {
            Chooser::Model => "model",
            Chooser::GrammarUniform => "grammar-only",
        }
    }
}

/// How the grammar constrains each token.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GrammarMode {
    /// Sample unconstrained, check that one token against the grammar, and run the grammar over the whole
    /// vocabulary only when it is rejected (what llama.cpp's common sampler does). Same result, far faster.
    #[default]
    CheckFirst,
    /// Run the grammar over the whole vocabulary for every token (the reference for benchmarks).
    Full,
}

#[derive(Debug, Clone)]
pub struct GenerateRequest<'a> {
    /// Chat-formatted prompt up to and including the assistant header.
    pub prompt: &'a str,
    /// Assistant text the caller writes before the model continues (part of the output text).
    pub prefill: &'a str,
    /// GBNF grammar (root rule `root`) that prefill + generated text must follow.
    pub grammar: Option<&'a str>,
    pub grammar_mode: GrammarMode,
    pub sampling: Sampling,
    pub max_new_tokens: u32,
    /// Stop as soon as the first top-level JSON value (starting in the prefill or output) is complete.
    pub stop_at_json_end: bool,
    /// Texts the output (prefill included) must never start with: a token that would make it start with
    /// one is masked like a grammar-rejected token. Callers use it to forbid repeating an earlier output.
    pub banned_prefixes: &'a [String],
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Finish {
    EndOfGeneration,
    JsonComplete,
    MaxTokens,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Generation {
    /// Prefill followed by the generated text.
    pub text: String,
    /// Tokens of prompt + prefill (what the model read).
    pub input_tokens: u32,
    /// Tokens the model generated.
    pub output_tokens: u32,
    /// Input tokens whose KV entries were reused from the previous call (not decoded again).
    pub reused_tokens: u32,
    /// Input tokens decoded in this call.
    pub prefill_tokens: u32,
    pub prefill_ms: f64,
    pub decode_ms: f64,
    /// Tokens for which the grammar had to be applied to the whole vocabulary (to choose the token, or to
    /// learn whether any other token was allowed where the top candidates all spelled one text).
    pub full_grammar_passes: u32,
    pub finish: Finish,
    /// Of `output_tokens`, how many the masks forced (the prefill is in neither count); unknown for a backend
    /// that applies the grammar out of sight.
    pub share: crate::share::TokenShare,
}

pub fn stop_error(cause: StopCause, generated: u32) -> EngineError {
    match cause {
        StopCause::Cancelled => EngineError::Cancelled { generated },
        StopCause::Timeout => EngineError::Timeout { generated },
    }
}

/// Tracks JSON nesting over raw bytes so generation stops right after the first complete top-level value.
#[derive(Debug, Default)]
pub struct JsonScanner {
    depth: u32,
    started: bool,
    in_string: bool,
    escaped: bool,
    done: bool,
}

impl JsonScanner {
    pub fn feed(&mut self, b: u8) {
        if self.done {
            return;
        }
        if self.in_string {
            if self.escaped {
                self.escaped = false;
            } else if b == b'\\' {
                self.escaped = true;
            } else if b == b'"' {
                self.in_string = false;
            }
            return;
        }
        match b {
            b'"' if self.started => self.in_string = true,
            b'{' | b'[' => {
                self.started = true;
                self.depth += 1;
            }
            b'}' | b']' if self.started => {
                self.depth = self.depth.saturating_sub(1);
                if self.depth == 0 {
                    self.done = true;
                }
            }
            _ => {}
        }
    }
    pub fn complete(&self) -> bool {
        self.done
    }
}
