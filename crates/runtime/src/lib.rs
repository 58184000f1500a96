//! Forge's agent runtime: the loop, decision contract, budgets, guards, trace, policy facade and metrics.
//!
//! No async, no HTTP, no model: a [`policy::Policy`] proposes decisions and [`run_task`] does the
//! rest. The seven stage crates supply the loop's parts (see ARCHITECTURE.md for which is where). The layers
//! below are re-exported under their old paths: `language`, `numbers`, `units`, `answer` (forge-language),
//! `tools`, `registry` (forge-tools), `task`, `ledger`, `grounding`, `rules`, `claims`, `chart_line`
//! (forge-evidence).

pub mod agent_loop;
pub mod budget;
pub mod decision;
pub mod dry_run;
pub mod fixture;
pub mod gate_probe;
pub mod guards;
pub mod metrics;
pub mod policy;
pub mod trace;

pub use forge_evidence::{chart_line, claims, grounding, ledger, rules, task};
pub use forge_language as language;
pub use forge_language::{answer, numbers, units};
pub use forge_tools as tools;
pub use forge_tools::registry;

use serde::{Deserialize, Serialize};

pub use agent_loop::{
    RunConfig, RunError, RunResult, ToolFault, ToolFaultError, UnfinishedResult, run_task,
};
pub use answer::{Verdict, VerdictPhrases};
pub use budget::{BudgetSnapshot, Budgets, FieldError};
pub use metrics::{GroundTruth, Metrics};
pub use task::Task;
pub use tools::ArtifactRecord;
pub use trace::TraceEvent;

/// How a run ended, at the top level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    Completed,
    Stopped,
    Failed,
    Cancelled,
}

/// Why a run ended. Each reason belongs to exactly one status (see [`StopReason::status`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    Completed,
    MaxSteps,
    ToolBudget,
    TokenBudget,
    Timeout,
    LoopDetected,
    InvalidDecision,
    Cancelled,
    /// The service running the loop is shutting down (SIGTERM/Ctrl-C); status `cancelled`.
    Shutdown,
    ModelUnavailable,
    RuntimeError,
}

impl StopReason {
    pub const ALL: [StopReason; 11] = [
        Self::Completed,
        Self::MaxSteps,
        Self::ToolBudget,
        Self::TokenBudget,
        Self::Timeout,
        Self::LoopDetected,
        Self::InvalidDecision,
        Self::Cancelled,
        Self::Shutdown,
        Self::ModelUnavailable,
        Self::RuntimeError,
    ];

    /// The only status this reason may appear with (the specification's table).
    pub fn status(self) -> RunStatus {
        match self {
            Self::Completed => RunStatus::Completed,
            Self::MaxSteps
            | Self::ToolBudget
            | Self::TokenBudget
            | Self::Timeout
            | Self::LoopDetected => RunStatus::Stopped,
            Self::InvalidDecision | Self::ModelUnavailable | Self::RuntimeError => {
                RunStatus::Failed
            }
            Self::Cancelled | Self::Shutdown => RunStatus::Cancelled,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Completed => "completed",
            Self::MaxSteps => "max_steps",
            Self::ToolBudget => "tool_budget",
            Self::TokenBudget => "token_budget",
            Self::Timeout => "timeout",
            Self::LoopDetected => "loop_detected",
            Self::InvalidDecision => "invalid_decision",
            Self::Cancelled => "cancelled",
            Self::Shutdown => "shutdown",
            Self::ModelUnavailable => "model_unavailable",
            Self::RuntimeError => "runtime_error",
        }
    }
}

impl RunStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Completed => "completed",
            Self::Stopped => "stopped",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
        }
    }
}
