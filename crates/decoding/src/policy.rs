//! `ModelPolicy`: the runtime's `Policy` backed by a GGUF model behind the `Backend` seam (llama.cpp in
//! process through `forge-llama`, or an inference server).
//!
//! Per decision it builds the prompt (`prompt`), the step's grounded grammar (`grammar`, rendered to GBNF) and —
//! in guided mode — the JSON prefix the runtime writes for the model. Repairs run at temperature 0. It does not parse or
//! validate the decision (the runtime does), and it never falls back to a scripted decision.

use std::path::{Path, PathBuf};
use std::time::Instant;

use runtime::policy::{DecisionRequest, Gap, Policy, PolicyError, PolicyOutput, RunControl};

use crate::backend::{Backend, BackendConfig, BackendError, BackendRequest};
use crate::gbnf::Grammar;
use crate::generation::{
    self, Chooser, EngineError, EngineSettings, Finish, GrammarMode, Sampling, StopCause,
};
use crate::grammar::{self, AnswerForm, Caps};
use crate::prompt;
pub use crate::prompt::Mode;

/// Hard cap on tokens per decision (the runtime also passes the remaining output budget).
pub const PER_DECISION_CAP: u32 = 256;

/// Default model location relative to the workspace root.
pub const DEFAULT_MODEL_PATH: &str = "models/qwen2.5-coder-0.5b.gguf";

#[derive(Debug, Clone, PartialEq)]
pub struct ModelPolicySettings {
    pub model_path: PathBuf,
    pub mode: Mode,
    /// 0 = greedy (the default).
    pub temperature: f32,
    pub seed: u32,
    pub engine: EngineSettings,
    /// False disables the grammar entirely (robustness experiments; invalid output is then possible).
    pub constrained: bool,
    pub grammar_mode: GrammarMode,
    pub caps: Caps,
    /// Where generation happens (in process by default, or an inference server).
    pub backend: BackendConfig,
    /// Who picks tokens: the model, or (the grammar-only baseline) a uniform draw among what the grammar allows.
    pub chooser: Chooser,
    /// How the model writes a final answer with a template (the catalogue's measured choice for the model).
    pub answer_form: AnswerForm,
}

impl ModelPolicySettings {
    pub fn new(model_path: impl Into<PathBuf>, mode: Mode) -> Self {
        let model_path = model_path.into();
        Self {
            answer_form: AnswerForm::for_model(&model_path),
            model_path,
            mode,
            temperature: 0.0,
            seed: 0x5eed,
            engine: EngineSettings::default(),
            constrained: true,
            grammar_mode: GrammarMode::CheckFirst,
            caps: Caps::default(),
            backend: BackendConfig::InProcess,
            chooser: Chooser::Model,
        }
    }
}

/// Measurements of one decision (for benchmarks and the closing report; the trace gets PolicyOutput).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct DecisionStats {
    pub step: u32,
    pub attempt: u32,
    pub gap: String,
    pub input_tokens: u32,
    pub reused_tokens: u32,
    pub prefill_tokens: u32,
    pub output_tokens: u32,
    pub prefill_ms: f64,
    pub decode_ms: f64,
    pub latency_ms: f64,
    pub full_grammar_passes: u32,
    /// Of `output_tokens`, how many the masks forced (unknown for a server backend).
    pub share: crate::share::TokenShare,
    /// Characters of the prefix the runtime wrote before the model's first token (not part of `output_tokens`).
    pub prefix_chars: usize,
    /// Time to build and render this step's grammar (it changes with every observation).
    pub grammar_ms: f64,
    pub grammar_bytes: usize,
    pub finish: Finish,
}

/// How a policy opens the backend its config names. `forge_llama::open_backend` opens every kind (llama.cpp
/// in process included); [`crate::remote::open`] opens the server kinds where llama.cpp is not linked.
/// A function, not a dependency, so this crate builds without llama.cpp.
pub type OpenBackend =
    fn(&BackendConfig, &Path, EngineSettings) -> Result<Box<dyn Backend>, BackendError>;

pub struct ModelPolicy {
    config: ModelPolicySettings,
    open: OpenBackend,
    backend: Option<Box<dyn Backend>>,
    stats: Vec<DecisionStats>,
}

impl ModelPolicy {
    /// A policy that opens its backend (loads the model) on its first decision (a load failure becomes
    /// `model_unavailable`).
    pub fn new(config: ModelPolicySettings, open: OpenBackend) -> Self {
        Self {
            config,
            open,
            backend: None,
            stats: Vec::new(),
        }
    }

    /// A policy with the model loaded now (or reused from the process-wide cache).
    pub fn load(config: ModelPolicySettings, open: OpenBackend) -> Result<Self, PolicyError> {
        let mut p = Self::new(config, open);
        p.backend()?;
        Ok(p)
    }

    pub fn config(&self) -> &ModelPolicySettings {
        &self.config
    }

    pub fn stats(&self) -> &[DecisionStats] {
        &self.stats
    }

    pub fn take_stats(&mut self) -> Vec<DecisionStats> {
        std::mem::take(&mut self.stats)
    }

    fn backend(&mut self) -> Result<&mut dyn Backend, PolicyError> {
        if self.backend.is_none() {
            self.backend = Some((self.open)(
                &self.config.backend,
                &self.config.model_path,
                self.config.engine,
            )?);
        }
        Ok(self.backend.as_deref_mut().expect("opened above"))
    }

    /// The grammar and the prefix the runtime writes, for this request and mode (see [`plan`]).
    fn plan(&self, req: &DecisionRequest) -> Result<(Grammar, String), PolicyError> {
        plan(
            self.config.mode,
            self.config.caps,
            self.config.answer_form,
            req,
        )
        .map_err(|e| PolicyError::Runtime(e.to_string()))
    }
}

/// The grammar one decision is constrained by, and the prefix the runtime writes for the model, for a request
/// and mode. Built per step: the grounding changes with every observation. Pure: no model, no engine — the
/// policy, the grammar-only baseline and the property tests all plan through here.
pub fn plan(
    mode: Mode,
    caps: Caps,
    answer_form: AnswerForm,
    req: &DecisionRequest,
) -> Result<(Grammar, String), grammar::GrammarError> {
    let summary = req.gap.summary();
    let inputs = grammar::Inputs {
        tools: &req.tools,
        grounding: &req.grounding,
        answer_template: &req.answer_template,
        verdict_phrases: &req.verdict_phrases,
        decision_summary: (mode == Mode::Guided).then_some(summary.as_str()),
        caps,
        answer_form,
        done: &req.succeeded_actions,
    };
    match (mode, &req.gap) {
        (Mode::Guided, Gap::Tool { tool, result, .. }) => {
            grammar::guided_tool(&inputs, tool, *result)
                .and_then(|g| Ok((g, grammar::guided_tool_prefix(&inputs, tool)?)))
        }
        (Mode::Guided, Gap::Final { evidence_ids, .. }) => {
            grammar::guided_final(&inputs, evidence_ids)
                .map(|g| (g, grammar::guided_final_prefix(&inputs, evidence_ids)))
        }
        // The final answer is offered once the gate could accept one: nothing required is missing.
        (Mode::Free, gap) => {
            let final_ids = match gap {
                Gap::Final { evidence_ids, .. } => Some(evidence_ids.as_slice()),
                Gap::Tool { .. } => None,
            };
            grammar::free(&inputs, runtime::decision::decision_schema(), final_ids)
                .map(|g| (g, String::new()))
        }
    }
}

/// For each successful action, the decision text the grammar would write for it, up to the end of its last
/// argument (`{"type":"action","tool":"t","arguments":{"a":1` — past that point the repeat is certain).
pub fn repeat_prefixes(req: &DecisionRequest) -> Vec<String> {
    req.succeeded_actions
        .iter()
        .filter_map(|action| {
            let tool = action["tool"].as_str()?;
            let card = req.tools.iter().find(|c| c.name == tool)?;
            let mut text = format!(
                "{{\"type\":\"action\",\"tool\":{},\"arguments\":{{",
                serde_json::json!(tool)
            );
            let mut written = 0;
            for (name, _) in grammar::generation_properties(&card.arguments_schema) {
                // Of a tool's alternative argument groups, the action gave one: the others are not written.
                let alternative = card.alternatives.iter().flatten().any(|f| f == name);
                let value = match action["arguments"].get(name.as_str()) {
                    Some(value) => value,
                    None if alternative => continue,
                    None => return None,
                };
                if written > 0 {
                    text.push(',');
                }
                written += 1;
                text.push_str(&format!(
                    "{}:{}",
                    serde_json::json!(name),
                    serde_json::to_string(value).ok()?
                ));
            }
            Some(text)
        })
        .collect()
}

fn policy_error(e: EngineError) -> PolicyError {
    match e {
        EngineError::Unavailable(u) => PolicyError::ModelUnavailable(u.to_string()),
        EngineError::Cancelled { .. } => PolicyError::Cancelled,
        EngineError::Timeout { .. } => PolicyError::Timeout,
        other => PolicyError::Runtime(other.to_string()),
    }
}

/// Poll the run's cancel flag and deadline (cancel wins when both hold).
pub fn control_check(control: &RunControl) -> Option<StopCause> {
    if control.is_cancelled() {
        Some(StopCause::Cancelled)
    } else if control.past_deadline() {
        Some(StopCause::Timeout)
    } else {
        None
    }
}

impl Policy for ModelPolicy {
    fn name(&self) -> String {
        match self.config.chooser {
            Chooser::Model => format!("llama:{}", self.config.mode),
            Chooser::GrammarUniform => format!("grammar-only:{}", self.config.mode),
        }
    }

    fn decide(
        &mut self,
        req: &DecisionRequest,
        control: &RunControl,
    ) -> Result<PolicyOutput, PolicyError> {
        if let Some(cause) = control_check(control) {
            return Err(policy_error(generation::stop_error(cause, 0)));
        }
        let started = Instant::now();
        self.backend()?;
        let grammar_started = Instant::now();
        let (grammar, prefix) = self.plan(req)?;
        let gbnf = self.config.constrained.then(|| grammar.render());
        // Diagnostics: FORGE_DUMP_GBNF=PREFIX writes each step's grammar to PREFIX.STEP.ATTEMPT, so a choice the
        // model (or the grammar-only policy) made can be traced to what the grammar allowed. A failed write is
        // said on stderr and never fails the run.
        if let (Ok(path), Some(g)) = (std::env::var("FORGE_DUMP_GBNF"), gbnf.as_ref()) {
            let file = format!("{path}.{}.{}", req.step, req.attempt);
            if let Err(e) = std::fs::write(&file, g) {
                eprintln!("FORGE_DUMP_GBNF: cannot write {file}: {e}");
            }
        }
        // Backends that take a JSON Schema instead of GBNF get the same decision shape, ungrounded.
        let schema = grammar::json_schema(
            &req.tools,
            runtime::decision::decision_schema(),
            self.config.mode,
            &req.gap,
        )
        .map_err(|e| PolicyError::Runtime(e.to_string()))?;
        // Free mode: an exact repeat of a successful action can only repeat its observation; mask it as
        // the grammar masks anything else, instead of letting a loop guard end the run.
        let banned = if self.config.mode == Mode::Free {
            repeat_prefixes(req)
        } else {
            Vec::new()
        };
        let grammar_ms = grammar_started.elapsed().as_secs_f64() * 1e3;
        let system = prompt::system_prompt(&req.tools);
        let user = prompt::user_message(req, self.config.mode, self.config.answer_form);
        if std::env::var("FORGE_LLAMA_DEBUG_PROMPT").is_ok_and(|v| v == "1") {
            eprintln!(
                "--- system ---\n{system}\n--- prompt (step {}, attempt {}) ---\n{user}---",
                req.step, req.attempt
            );
        }
        // Repairs run greedy (the specification): a repair should fix the reported error, not explore.
        let temperature = if req.attempt > 0 {
            0.0
        } else {
            self.config.temperature
        };
        let sampling = Sampling {
            temperature,
            // A different stream per step and attempt, reproducible for a given run seed.
            seed: self
                .config
                .seed
                .wrapping_add(req.step.wrapping_mul(7919))
                .wrapping_add(req.attempt),
            chooser: self.config.chooser,
            ..Sampling::default()
        };
        let request = BackendRequest {
            system: &system,
            user: &user,
            prefill: &prefix,
            grammar: gbnf.as_deref(),
            json_schema: self.config.constrained.then_some(&schema),
            grammar_mode: self.config.grammar_mode,
            sampling,
            max_new_tokens: req.max_new_tokens.min(PER_DECISION_CAP),
            stop_at_json_end: true,
            banned_prefixes: &banned,
        };
        let generation = self
            .backend()?
            .generate(&request, &mut |_| control_check(control))?;
        if std::env::var("FORGE_LLAMA_DEBUG_PROMPT").is_ok_and(|v| v == "1") {
            eprintln!(
                "--- output ({:?}, {} tokens) ---\n{}\n---",
                generation.finish, generation.output_tokens, generation.text
            );
        }
        self.stats.push(DecisionStats {
            step: req.step,
            attempt: req.attempt,
            gap: match &req.gap {
                Gap::Tool { tool, .. } => tool.clone(),
                Gap::Final { .. } => "final".into(),
            },
            input_tokens: generation.input_tokens,
            reused_tokens: generation.reused_tokens,
            prefill_tokens: generation.prefill_tokens,
            output_tokens: generation.output_tokens,
            prefill_ms: generation.prefill_ms,
            decode_ms: generation.decode_ms,
            latency_ms: started.elapsed().as_secs_f64() * 1e3,
            full_grammar_passes: generation.full_grammar_passes,
            share: generation.share.clone(),
            prefix_chars: prefix.chars().count(),
            grammar_ms,
            grammar_bytes: gbnf.as_ref().map_or(0, String::len),
            finish: generation.finish,
        });
        Ok(PolicyOutput {
            raw_text: generation.text,
            input_tokens: generation.input_tokens,
            output_tokens: generation.output_tokens,
            prefill_tokens_saved: generation.reused_tokens,
            temperature: Some(temperature),
            runtime_prefix: prefix,
            share: generation.share,
        })
    }
}
