//! Validation of `POST /agent/runs` bodies into a [`RunSpec`]: every bad field is reported with its name.
//!
//! Pure checks against the configuration and the file system (task folders, scripted fixtures); no HTTP.

use std::path::Path;

use serde_json::{Value, json};

use crate::catalogue::ModelEntry;
use crate::error::{ApiError, FieldError};
use crate::example::check_relative_path;
use crate::provider::Mode;
use crate::run_bridge::{PolicyChoice, RunSpec, budgets_from_json, budgets_json};
use crate::{ServerConfig, tasks};

/// Where scripted fixtures may live (relative to the root): the runtime's and this crate's test fixtures.
pub const FIXTURE_DIRS: &[&str] = &["fixtures/", "crates/server/tests/fixtures/"];
const FIELDS: &[&str] = &[
    "task",
    "model",
    "mode",
    "budgets",
    "temperature",
    "policy",
    "tool_timeout_seconds",
];
pub const MAX_TEMPERATURE: f64 = 2.0;

/// Returns the spec to execute and the public form stored with the run. `models` is what the provider
/// lists right now (`GET /agent/models`): `model` must name one of them.
///
/// Without `task`, the run uses the first loadable task folder in sorted order (`tasks::default_task`);
/// without `model`, the listed model marked `default` (or none when nothing is listed).
pub fn parse_run_request(
    body: &Value,
    config: &ServerConfig,
    models: &[ModelEntry],
) -> Result<(RunSpec, Value), ApiError> {
    let obj = body.as_object().ok_or_else(|| {
        ApiError::bad_request("invalid_request", "the body must be a JSON object")
    })?;
    let mut errors = Vec::new();
    let fe = |field: &str, message: String| FieldError {
        field: field.into(),
        message,
    };
    for key in obj.keys() {
        if !FIELDS.contains(&key.as_str()) {
            errors.push(fe(
                key,
                format!("unknown field; allowed: {}", FIELDS.join(", ")),
            ));
        }
    }
    let task = task_field(obj.get("task"), config, &mut errors);
    let model = model_field(obj.get("model"), models, &mut errors);
    let mode = mode_field(obj.get("mode"), &mut errors);
    let temperature = match obj.get("temperature") {
        None | Some(Value::Null) => 0.0,
        Some(v) => match v.as_f64() {
            Some(t) if t.is_finite() && (0.0..=MAX_TEMPERATURE).contains(&t) => t,
            _ => {
                errors.push(fe(
                    "temperature",
                    format!("must be a number in 0..={MAX_TEMPERATURE}, got {v}"),
                ));
                0.0
            }
        },
    };
    let tool_timeout_seconds = match tool_timeout_from_json(obj.get("tool_timeout_seconds")) {
        Ok(seconds) => seconds,
        Err(error) => {
            errors.push(error);
            None
        }
    };
    let budgets = match budgets_from_json(obj.get("budgets").unwrap_or(&Value::Null)) {
        Ok(b) => Some(b),
        Err(errs) => {
            errors.extend(errs);
            None
        }
    };
    let policy = match obj.get("policy") {
        None | Some(Value::Null) => PolicyChoice::Model,
        Some(Value::String(s)) if s == "model" => PolicyChoice::Model,
        Some(Value::String(s)) if s.starts_with("scripted:") => {
            if !config.enable_test_policies {
                return Err(ApiError::new(
                    403,
                    "test_policies_disabled",
                    "scripted policies are for tests; start the runner with --enable-test-policies to use them",
                ));
            }
            let fixture = &s["scripted:".len()..];
            match check_fixture(&config.root, fixture) {
                Ok(()) => PolicyChoice::Scripted {
                    fixture: fixture.to_string(),
                },
                Err(msg) => {
                    errors.push(fe("policy", msg));
                    PolicyChoice::Model
                }
            }
        }
        Some(other) => {
            errors.push(fe(
                "policy",
                format!("must be \"model\" or \"scripted:fixtures/<file>.json\", got {other}"),
            ));
            PolicyChoice::Model
        }
    };
    if !errors.is_empty() {
        return Err(ApiError::invalid_fields(errors));
    }
    let budgets = budgets_json(&budgets.expect("no errors means budgets parsed"));
    let policy_label = match &policy {
        PolicyChoice::Model => "model".to_string(),
        PolicyChoice::Scripted { fixture } => format!("scripted:{fixture}"),
    };
    let public = json!({
        "task": task, "model": model, "mode": mode.as_str(), "temperature": temperature, "budgets": budgets, "policy": policy_label,
        "tool_timeout_seconds": tool_timeout_seconds,
    });
    Ok((
        RunSpec {
            task,
            mode,
            temperature: temperature as f32,
            budgets,
            policy,
            model,
            tool_timeout_seconds,
        },
        public,
    ))
}

/// A per-field error.
fn field_error(field: &str, message: String) -> FieldError {
    FieldError {
        field: field.into(),
        message,
    }
}

/// `task`: a loadable task folder's name, or the first loadable one when absent (an error pushed otherwise).
fn task_field(
    value: Option<&Value>,
    config: &ServerConfig,
    errors: &mut Vec<FieldError>,
) -> String {
    match value {
        None | Some(Value::Null) => {
            match tasks::default_task(&config.tasks_dir, &config.knowledge_dir) {
                Some(name) => name,
                None => {
                    errors.push(field_error(
                        "task",
                        "no task given, and no task folder loads (see GET /agent/tasks)".into(),
                    ));
                    String::new()
                }
            }
        }
        Some(Value::String(s)) => {
            if let Err(msg) = check_task(config, s) {
                errors.push(field_error("task", msg));
            }
            s.clone()
        }
        Some(other) => {
            errors.push(field_error(
                "task",
                format!("must be a task name string, got {other}"),
            ));
            String::new()
        }
    }
}

/// `model`: a listed model's entry, or the listed default when absent (an error pushed for a name not listed).
fn model_field(
    value: Option<&Value>,
    models: &[ModelEntry],
    errors: &mut Vec<FieldError>,
) -> Option<ModelEntry> {
    match value {
        None | Some(Value::Null) => models.iter().find(|m| m.default).cloned(),
        Some(Value::String(s)) => match models.iter().find(|m| m.name == *s) {
            Some(m) => Some(m.clone()),
            None => {
                let listed: Vec<&str> = models.iter().map(|m| m.name.as_str()).collect();
                let listed = if listed.is_empty() {
                    "none (cargo xtask model fetch, or runner serve --gguf FILE)".to_string()
                } else {
                    listed.join(", ")
                };
                errors.push(field_error(
                    "model",
                    format!("no model named {s:?}; listed: {listed}"),
                ));
                None
            }
        },
        Some(other) => {
            errors.push(field_error(
                "model",
                format!("must be a model name string (GET /agent/models), got {other}"),
            ));
            None
        }
    }
}

/// `mode`: `guided` (also when absent) or `free` (an error pushed otherwise).
fn mode_field(value: Option<&Value>, errors: &mut Vec<FieldError>) -> Mode {
    match value {
        None | Some(Value::Null) => Mode::Guided,
        Some(Value::String(s)) => Mode::parse(s).unwrap_or_else(|| {
            errors.push(field_error(
                "mode",
                format!("{s:?} is not a mode; use \"guided\" or \"free\""),
            ));
            Mode::Guided
        }),
        Some(other) => {
            errors.push(field_error(
                "mode",
                format!("must be \"guided\" or \"free\", got {other}"),
            ));
            Mode::Guided
        }
    }
}

/// The request's one tool timeout (the specification's `tool_timeout_seconds`): absent or null keeps each
/// tool's registry timeout; otherwise a whole number of seconds in the runtime's range.
pub fn tool_timeout_from_json(value: Option<&Value>) -> Result<Option<u64>, FieldError> {
    let (min, max) = runtime::RunConfig::TOOL_TIMEOUT_SECONDS;
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(v) => match v.as_u64() {
            Some(n) if (min..=max).contains(&n) => Ok(Some(n)),
            _ => Err(FieldError {
                field: "tool_timeout_seconds".into(),
                message: format!("must be an integer between {min} and {max} (seconds), got {v}"),
            }),
        },
    }
}

/// The longest proposal the decision sandbox checks, in characters (a model's decision is far shorter).
pub const MAX_PROPOSAL_CHARS: usize = 16_000;

/// `POST /agent/decisions/validate` bodies: `{"text": "<one model output>"}`, nothing else. The text is what a
/// model would write, so any string (not JSON, trailing prose) is a proposal the runtime answers.
pub fn parse_proposal_request(body: &Value) -> Result<String, ApiError> {
    let obj = body.as_object().ok_or_else(|| {
        ApiError::bad_request(
            "invalid_request",
            "the body must be a JSON object {\"text\": …}",
        )
    })?;
    let mut errors: Vec<FieldError> = obj
        .keys()
        .filter(|k| k.as_str() != "text")
        .map(|k| FieldError {
            field: k.clone(),
            message: "unknown field; allowed: text".into(),
        })
        .collect();
    let text = match obj.get("text") {
        Some(Value::String(s)) if s.chars().count() <= MAX_PROPOSAL_CHARS => Some(s.clone()),
        Some(Value::String(_)) => {
            errors.push(FieldError {
                field: "text".into(),
                message: format!("at most {MAX_PROPOSAL_CHARS} characters"),
            });
            None
        }
        Some(other) => {
            errors.push(FieldError {
                field: "text".into(),
                message: format!(
                    "must be a string holding the model's output, got {}",
                    runtime::decision::json_type_name(other)
                ),
            });
            None
        }
        None => {
            errors.push(FieldError {
                field: "text".into(),
                message: "required: the proposed decision as the model would write it".into(),
            });
            None
        }
    };
    match text {
        Some(text) if errors.is_empty() => Ok(text),
        _ => Err(ApiError::invalid_fields(errors)),
    }
}

/// Task names are folder names under the tasks directory that load as a run would load them.
fn check_task(config: &ServerConfig, task: &str) -> Result<(), String> {
    let valid = !task.is_empty()
        && task.len() <= 64
        && task
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-');
    if !valid {
        return Err(format!(
            "{task:?} is not a task name (lower-case letters, digits, '_' and '-')"
        ));
    }
    let dir = config.tasks_dir.join(task);
    match std::fs::symlink_metadata(&dir) {
        Ok(m) if m.is_dir() => {}
        _ => return Err(format!("no task named {task:?} (see GET /agent/tasks)")),
    }
    let entry = tasks::entry(&config.tasks_dir, &config.knowledge_dir, task);
    match entry.error {
        None => Ok(()),
        Some(e) => Err(format!("task {task:?} cannot be loaded: {e}")),
    }
}

/// Scripted fixtures: a plain relative path under fixtures/, ending in .json, a regular file (no symlink).
fn check_fixture(root: &Path, fixture: &str) -> Result<(), String> {
    check_relative_path(fixture).map_err(|e| e.message)?;
    if !FIXTURE_DIRS.iter().any(|d| fixture.starts_with(d)) || !fixture.ends_with(".json") {
        return Err(format!(
            "scripted fixture {fixture:?} must be a .json file under {}",
            FIXTURE_DIRS.join(" or ")
        ));
    }
    let mut p = root.to_path_buf();
    for seg in fixture.split('/') {
        p.push(seg);
        match std::fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => {
                return Err(format!(
                    "scripted fixture {fixture:?} goes through a symbolic link"
                ));
            }
            Ok(_) => {}
            Err(_) => return Err(format!("no scripted fixture at {fixture:?}")),
        }
    }
    if !p.is_file() {
        return Err(format!("scripted fixture {fixture:?} is not a file"));
    }
    Ok(())
}
