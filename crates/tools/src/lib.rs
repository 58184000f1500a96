//! Forge's tools: the three built-in tools (knowledge_search, calculator, plot), their shared types and
//! `call_tool`, the artifact store, and the tool registry that validates their arguments.
//!
//! Below the evidence and the loop, above `forge_language` (numbers, units, a fact key read as a rule): nothing
//! here reads a task, the ledger or ground truth. `runtime::tools` and `runtime::registry` re-export it.
//!
//! Arguments reaching [`call_tool`] have already been validated by
//! [`crate::registry::ToolRegistry::validate_arguments`]; this module does not
//! validate names or JSON types again, it only re-checks what the tool itself
//! depends on (a tool must never panic or write a file on input it cannot handle).
//! Budgets, retries and timeouts belong to the loop, not here.

use std::path::Path;

use serde::Serialize;
use serde_json::{Map, Value};

pub mod artifacts;
pub mod calculator;
pub mod knowledge;
pub mod plot;
pub mod registry;

pub use artifacts::{ArtifactRecord, ArtifactStore};
pub use calculator::{ColumnSource, NoColumns};
pub use knowledge::Citation;

/// What a tool may touch during one call. The model never supplies any of it:
/// the knowledge files come from the task folder, the directories from the run.
pub struct ToolContext<'a> {
    /// Directory holding the knowledge markdown files.
    pub knowledge_dir: &'a Path,
    /// Plain file names (e.g. `quarterly_sales.md`) this task may read.
    pub allowed_sources: &'a [String],
    /// Where this run's artifacts (PNG charts) are written.
    pub artifact_dir: &'a Path,
    /// Deduplicates artifact writes by argument fingerprint (stage 05).
    pub artifacts: &'a mut ArtifactStore,
    /// Resolves the calculator's column references (`mean([Wait])`) against the
    /// tables observed so far; [`calculator::NoColumns`] where there is no ledger.
    pub columns: &'a dyn calculator::ColumnSource,
}

/// A successful tool call.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolOutput {
    /// Structured data shown to the model in the observation (never image bytes).
    pub result: Value,
    /// One line for humans and the trace.
    pub summary: String,
    /// Knowledge passages backing the result (knowledge_search only).
    pub citations: Vec<Citation>,
    /// Files written (plot only); the bytes stay on disk.
    pub artifacts: Vec<ArtifactRecord>,
    /// What the repeated-result guard hashes: knowledge → data,
    /// calculator → expression + value, plot → spec. Excludes latency and artifact ids.
    pub digest_basis: Value,
}

/// A failed tool call. `code` is stable snake_case; `message` names the offending
/// input but never an absolute path.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{code}: {message}")]
pub struct ToolError {
    pub code: &'static str,
    pub message: String,
    /// True when running the same call again may succeed (I/O hiccup, timeout).
    pub retryable: bool,
}

impl ToolError {
    /// An error that the same arguments will hit again.
    pub fn permanent(code: &'static str, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            retryable: false,
        }
    }

    /// An error worth retrying with the same arguments.
    pub fn transient(code: &'static str, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            retryable: true,
        }
    }
}

/// Runs one tool. `arguments` must come from `ToolRegistry::validate_arguments`
/// (defaults applied); a shape the tool cannot read is reported as
/// `invalid_arguments`, never a panic.
pub fn call_tool(
    name: &str,
    arguments: &Map<String, Value>,
    ctx: &mut ToolContext,
) -> Result<ToolOutput, ToolError> {
    match name {
        knowledge::TOOL_NAME => {
            let request = knowledge::SearchRequest::from_arguments(arguments)?;
            knowledge::search(&request, ctx.knowledge_dir, ctx.allowed_sources)
        }
        calculator::TOOL_NAME => {
            let expression = string_argument(arguments, "expression")?;
            calculator::run_with(expression, ctx.columns)
        }
        plot::TOOL_NAME => {
            let request = plot::PlotRequest::from_arguments(arguments, ctx.columns)?;
            plot::run(&request, ctx.artifact_dir, ctx.artifacts)
        }
        other => Err(ToolError::permanent(
            "unknown_tool",
            format!("no tool named {other:?}"),
        )),
    }
}

pub(crate) fn string_argument<'a>(
    arguments: &'a Map<String, Value>,
    field: &str,
) -> Result<&'a str, ToolError> {
    arguments.get(field).and_then(Value::as_str).ok_or_else(|| {
        ToolError::permanent("invalid_arguments", format!("{field}: expected a string"))
    })
}

/// JSON for a number, integer-valued results as integers (79, not 79.0).
pub(crate) fn number_value(x: f64) -> Value {
    // 2^53: beyond it f64 no longer represents every integer.
    const EXACT_INT_LIMIT: f64 = 9_007_199_254_740_992.0;
    if x.fract() == 0.0 && x.abs() <= EXACT_INT_LIMIT {
        // `as` is exact here; adding 0 folds -0.0 into 0.
        Value::from((x + 0.0) as i64)
    } else {
        serde_json::Number::from_f64(x)
            .map(Value::Number)
            .unwrap_or(Value::Null)
    }
}
