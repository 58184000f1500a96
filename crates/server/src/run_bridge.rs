//! The bridge to `runtime::run_task`: task folders, budgets, policy choice, artifact directory.
//!
//! The only module that calls the runtime loop. It runs on the job worker thread (blocking), turns every
//! `TraceEvent` into JSON for the store and returns the serialised `RunResult`.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use runtime::policy::{Policy, RunControl};
use serde_json::{Map, Value, json};

use crate::catalogue::ModelEntry;
use crate::error::FieldError;
use crate::provider::{FailingPolicy, Mode, ModelProvider};

/// Where the next decision comes from.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum PolicyChoice {
    /// The model behind the `ModelProvider`.
    Model,
    /// A scripted fixture (tests only; accepted only with `--enable-test-policies`), relative to the root.
    Scripted { fixture: String },
}

/// An accepted run request, after validation.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RunSpec {
    pub task: String,
    pub mode: Mode,
    pub temperature: f32,
    /// The complete, validated budgets (defaults filled in).
    pub budgets: Value,
    pub policy: PolicyChoice,
    /// The model the request chose (or the provider's default), recorded in the request and the result.
    /// `None` when the provider lists no model: the run then uses the provider's own default, if any.
    #[serde(default)]
    pub model: Option<ModelEntry>,
    /// The request's one tool timeout, overriding every tool's registry timeout (also a scripted
    /// fixture's own); `None` keeps them.
    #[serde(default)]
    pub tool_timeout_seconds: Option<u64>,
}

/// A failure before the runtime could start (the run is then sealed `failed/runtime_error`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{code}: {message}")]
pub struct ExecError {
    pub code: &'static str,
    pub message: String,
}

pub trait Executor: Send + Sync + 'static {
    /// Run one task to a terminal result (the serialised `RunResult`). Blocking. `cancel` stops the run;
    /// `shutdown` (set before `cancel` when the service stops) makes that stop `cancelled/shutdown`.
    fn execute(
        &self,
        run_id: &str,
        spec: &RunSpec,
        artifact_dir: &Path,
        cancel: Arc<AtomicBool>,
        shutdown: Arc<AtomicBool>,
        sink: &mut dyn FnMut(Value),
    ) -> Result<Value, ExecError>;
}

/// The production executor: real task folders under `tasks_dir`, knowledge under `knowledge_dir`,
/// scripted fixtures relative to `root`, policies from the provider (or a scripted fixture when the
/// request chose one).
pub struct RuntimeExecutor {
    pub root: PathBuf,
    pub tasks_dir: PathBuf,
    pub knowledge_dir: PathBuf,
    pub provider: Arc<dyn ModelProvider>,
}

impl RuntimeExecutor {
    pub fn new(config: &crate::ServerConfig, provider: Arc<dyn ModelProvider>) -> Self {
        Self {
            root: config.root.clone(),
            tasks_dir: config.tasks_dir.clone(),
            knowledge_dir: config.knowledge_dir.clone(),
            provider,
        }
    }

    fn model_policy(&self, spec: &RunSpec) -> Box<dyn Policy> {
        let built = match &spec.model {
            // The file was there when the request was accepted; it may have gone since (deleted, re-fetched).
            Some(m) if !m.path.is_file() => {
                Err(runtime::policy::PolicyError::ModelUnavailable(format!(
                    "model {:?}: its file {} is gone since the run was accepted",
                    m.name, m.file
                )))
            }
            Some(m) => self.provider.policy_for(m, spec.mode, spec.temperature),
            None => self.provider.policy(spec.mode, spec.temperature),
        };
        built.unwrap_or_else(|e| Box::new(FailingPolicy(e)))
    }
}

impl Executor for RuntimeExecutor {
    fn execute(
        &self,
        run_id: &str,
        spec: &RunSpec,
        artifact_dir: &Path,
        cancel: Arc<AtomicBool>,
        shutdown: Arc<AtomicBool>,
        sink: &mut dyn FnMut(Value),
    ) -> Result<Value, ExecError> {
        // A scripted fixture brings its own task, budgets and injected tool faults (that is what makes
        // it reproduce a given outcome); a model run uses the request's task and budgets.
        let (task_name, mut config, mut policy): (String, runtime::RunConfig, Box<dyn Policy>) =
            match &spec.policy {
                PolicyChoice::Model => {
                    let budgets = budgets_from_json(&spec.budgets).map_err(|errs| ExecError {
                        code: "invalid_budgets",
                        message: format!("{errs:?}"),
                    })?;
                    let mut config =
                        runtime::RunConfig::new(run_id, &self.knowledge_dir, artifact_dir);
                    config.budgets = budgets;
                    (spec.task.clone(), config, self.model_policy(spec))
                }
                PolicyChoice::Scripted { fixture } => {
                    let f =
                        runtime::fixture::Fixture::load(self.root.join(fixture)).map_err(|e| {
                            ExecError {
                                code: "invalid_fixture",
                                message: format!("scripted fixture {fixture:?}: {e}"),
                            }
                        })?;
                    let config = f.config(run_id, &self.knowledge_dir, artifact_dir);
                    (f.task.clone(), config, Box::new(f.policy()))
                }
            };
        if let Some(seconds) = spec.tool_timeout_seconds {
            config.tool_timeout_ms = Some(seconds * 1000);
        }
        let task_dir = self.tasks_dir.join(&task_name);
        let task = runtime::task::Task::load(&task_dir).map_err(|e| ExecError {
            code: "invalid_task",
            message: format!("task {task_name:?}: {e}"),
        })?;
        let wall = Duration::from_secs(config.budgets.wall_clock_s);
        let control = RunControl {
            cancel,
            shutdown,
            deadline: Instant::now() + wall,
        };
        let mut forward = |event: &runtime::trace::TraceEvent| match serde_json::to_value(event) {
            Ok(v) => sink(v),
            Err(e) => eprintln!("forge-server: trace event not serialisable: {e}"),
        };
        let result = runtime::run_task(&task, policy.as_mut(), &config, &control, &mut forward);
        let mut value = serde_json::to_value(&result).map_err(|e| ExecError {
            code: "runtime_error",
            message: format!("result not serialisable: {e}"),
        })?;
        // Which model produced (or was to produce) this run; a scripted run names none.
        if spec.policy == PolicyChoice::Model {
            value["model"] = spec
                .model
                .as_ref()
                .map(|m| serde_json::to_value(m).unwrap_or(Value::Null))
                .unwrap_or(Value::Null);
        }
        Ok(value)
    }
}

/// The budget fields a request may set, in display order, with their inclusive ranges (the runtime's).
pub fn budget_fields() -> impl Iterator<Item = &'static str> {
    runtime::Budgets::RANGES.iter().map(|(f, _, _)| *f)
}

/// Build `runtime::Budgets` from a partial JSON object (defaults for what is missing) and validate it
/// with the runtime's own ranges. Every bad field is reported, not just the first.
pub fn budgets_from_json(value: &Value) -> Result<runtime::Budgets, Vec<FieldError>> {
    let empty = Map::new();
    let obj = match value {
        Value::Null => &empty,
        Value::Object(m) => m,
        other => {
            return Err(vec![fe(
                "budgets",
                format!(
                    "must be an object, got {}",
                    runtime::decision::json_type_name(other)
                ),
            )]);
        }
    };
    let allowed: Vec<&str> = budget_fields().collect();
    let mut errors = Vec::new();
    for (key, v) in obj {
        let field = format!("budgets.{key}");
        if !allowed.contains(&key.as_str()) {
            errors.push(fe(
                &field,
                format!("unknown budget; allowed: {}", allowed.join(", ")),
            ));
        } else if v.as_u64().is_none() {
            errors.push(fe(
                &field,
                format!("must be a non-negative integer, got {v}"),
            ));
        } else if let Some(&(_, min, max)) =
            runtime::Budgets::RANGES.iter().find(|(f, _, _)| f == key)
        {
            let n = v.as_u64().unwrap_or(0);
            if n < min || n > max {
                errors.push(fe(
                    &field,
                    format!("must be between {min} and {max}, got {n}"),
                ));
            }
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let b: runtime::Budgets = serde_json::from_value(Value::Object(obj.clone()))
        .map_err(|e| vec![fe("budgets", format!("not a valid budgets object: {e}"))])?;
    b.validate().map_err(|errs| {
        errs.into_iter()
            .map(|e| fe(&format!("budgets.{}", e.field), e.message))
            .collect::<Vec<_>>()
    })?;
    Ok(b)
}

/// The validated budgets as the JSON object stored with the run and shown by the page.
pub fn budgets_json(b: &runtime::Budgets) -> Value {
    serde_json::to_value(b).unwrap_or(Value::Null)
}

/// The decision schema and tool registry the runtime validates with (for `GET /agent/schema`).
pub fn agent_schema() -> Value {
    json!({
        "decision": runtime::decision::decision_schema(),
        "tool_registry": runtime::registry::ToolRegistry::builtin().as_json(),
        "budgets": {
            "defaults": budgets_json(&runtime::Budgets::default()),
            "ranges": runtime::Budgets::RANGES.iter().map(|(f, min, max)| json!({"field": f, "min": min, "max": max})).collect::<Vec<_>>(),
        },
        "tool_timeout_seconds": {
            "min": runtime::RunConfig::TOOL_TIMEOUT_SECONDS.0,
            "max": runtime::RunConfig::TOOL_TIMEOUT_SECONDS.1,
            "default": null,
        },
    })
}

fn fe(field: &str, message: String) -> FieldError {
    FieldError {
        field: field.to_string(),
        message,
    }
}
