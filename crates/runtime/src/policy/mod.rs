//! The `Policy` seam: whatever proposes the next decision (a real model, or a script in tests).
//!
//! The runtime owns everything else: validation, tools, budgets, guards, stopping.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

pub mod scripted;

pub use crate::grounding::{Grounding, Series};
pub use crate::registry::{ResultKind, ToolCard};
pub use crate::task::Gap;

/// What the runtime tells the policy for one decision. Everything here is safe
/// to show a model: it never contains expected values from the task's ground truth.
#[derive(Debug, Clone, serde::Serialize)]
pub struct DecisionRequest {
    pub step: u32,
    /// 0 for the first try of a step, 1.. for repairs of an invalid decision.
    pub attempt: u32,
    /// The task text (from the task folder).
    pub task: String,
    /// Tool cards rendered from schemas/tool_registry.json: name, description, arguments.
    pub tools: Vec<ToolCard>,
    /// Compact state: recent observations, feedback, budget snapshot (JSON, small).
    pub state: serde_json::Value,
    /// The runtime's gap analysis: what evidence is missing next.
    pub gap: Gap,
    /// Every required evidence item still missing, in causal order (`calculator (boolean): <hint>`),
    /// so a policy can show what the final-answer gate still needs.
    pub missing: Vec<String>,
    /// What the observations so far establish: the numbers and labels a decision may write and the
    /// ids it may cite (built from the ledger and the task's own text, never from ground truth).
    pub grounding: Grounding,
    /// The task's answer template (also in `Gap::Final`; free mode needs it on every step).
    pub answer_template: String,
    /// The task's verdict words (`verdict_phrases` in `task.json`, or the language data's): which option of a
    /// choice says the rule holds. Task data, as the template is; not the runtime's reading of the rule.
    pub verdict_phrases: forge_language::answer::VerdictPhrases,
    /// Actions already run successfully, as proposed (`{"tool", "arguments"}`), oldest first: running one
    /// again exactly can only repeat its observation, so a policy may refuse to write it.
    pub succeeded_actions: Vec<serde_json::Value>,
    /// Set when the previous output of this step was invalid: the error and the
    /// schema, never the invalid text itself.
    pub repair: Option<RepairNote>,
    /// min(per-decision cap, remaining output-token budget).
    pub max_new_tokens: u32,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct RepairNote {
    pub error_code: String,
    pub error: String,
    pub schema: serde_json::Value,
}

/// What came back from the policy. `raw_text` is hashed for the trace and then dropped.
#[derive(Debug, Clone, PartialEq)]
pub struct PolicyOutput {
    pub raw_text: String,
    pub input_tokens: u32,
    pub output_tokens: u32,
    /// Prompt tokens not re-decoded thanks to KV-cache prefix reuse.
    pub prefill_tokens_saved: u32,
    /// The sampling temperature this call used (repairs run at 0); `None` for policies that do not sample.
    pub temperature: Option<f32>,
    /// The start of `raw_text` the runtime wrote itself before the model's first token (guided mode's
    /// branch prefix; empty in free mode). The rest of `raw_text` is what the policy wrote.
    pub runtime_prefix: String,
    /// Of the tokens the policy wrote (`output_tokens`), how many the decoder's masks forced.
    pub share: TokenShare,
}

/// Who decided the tokens of one decision: counted per generated token where the decoder sees the masks it
/// applies, named as unknown where it does not (a server applies the grammar out of sight) — never estimated.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "status", rename_all = "snake_case", deny_unknown_fields)]
pub enum TokenShare {
    /// Every generated token classified when it was picked: `forced` when the tokens the masks allowed there
    /// all spell one text (exactly one token, or several spellings of one fixed text), `choice` otherwise.
    /// `forced + choice` is the decision's `output_tokens`; the runtime's prefix is in neither.
    Counted { forced: u32, choice: u32 },
    /// The share cannot be counted here, and why (`reason` names the backend or policy).
    Unknown { reason: String },
}

impl TokenShare {
    /// forced / (forced + choice); `None` when unknown or when nothing was generated.
    pub fn forced_share(&self) -> Option<f64> {
        match self {
            TokenShare::Counted { forced, choice } if forced + choice > 0 => {
                Some(f64::from(*forced) / f64::from(forced + choice))
            }
            _ => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PolicyError {
    #[error("model unavailable: {0}")]
    ModelUnavailable(String),
    #[error("cancelled during generation")]
    Cancelled,
    #[error("deadline reached during generation")]
    Timeout,
    #[error("policy failed: {0}")]
    Runtime(String),
    /// A scripted policy ran out of decisions (tests only).
    #[error("script exhausted after {0} decisions")]
    ScriptExhausted(usize),
}

/// How a model policy is asked: guided (the runtime names the gap and decoding is typed for it) or free
/// (the model writes the whole decision). Defined once here for the model policy, the server and the CLI.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    Guided,
    Free,
}

impl Mode {
    pub fn parse(s: &str) -> Option<Mode> {
        match s {
            "guided" => Some(Mode::Guided),
            "free" => Some(Mode::Free),
            _ => None,
        }
    }
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Guided => "guided",
            Mode::Free => "free",
        }
    }
}

impl std::str::FromStr for Mode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Mode::parse(s).ok_or_else(|| format!("unknown mode {s:?} (expected guided or free)"))
    }
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Cancellation and the wall-clock deadline, checked by the runtime between
/// steps and by a model policy between tokens.
#[derive(Debug, Clone)]
pub struct RunControl {
    pub cancel: Arc<AtomicBool>,
    /// Set (together with `cancel`) when the host is shutting down: the run then ends
    /// `cancelled/shutdown` instead of `cancelled/cancelled`, so a user's cancel and a service stop
    /// stay distinguishable in the trace.
    pub shutdown: Arc<AtomicBool>,
    pub deadline: Instant,
}

impl RunControl {
    pub fn new(deadline: Instant) -> Self {
        Self {
            cancel: Arc::new(AtomicBool::new(false)),
            shutdown: Arc::new(AtomicBool::new(false)),
            deadline,
        }
    }
    pub fn is_cancelled(&self) -> bool {
        self.cancel.load(Ordering::SeqCst)
    }
    pub fn is_shutdown(&self) -> bool {
        self.shutdown.load(Ordering::SeqCst)
    }
    pub fn cancel(&self) {
        self.cancel.store(true, Ordering::SeqCst);
    }
    pub fn past_deadline(&self) -> bool {
        Instant::now() >= self.deadline
    }
}

pub trait Policy: Send {
    /// A stable name for the trace and metrics ("scripted", "llama:guided", ...).
    fn name(&self) -> String;
    fn decide(
        &mut self,
        request: &DecisionRequest,
        control: &RunControl,
    ) -> Result<PolicyOutput, PolicyError>;
}
