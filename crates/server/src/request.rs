//! Validation of `POST /agent/runs` bodies into a [`RunSpec`]: every bad field is reported with its name.
//!
//! Pure checks against the configuration and the file system (task folders, scripted fixtures); no HTTP.

use std::path::Path;

use serde_json::{Value, json};

use crate::engine::{PolicyChoice, RunSpec, budgets_from_json, budgets_json};
use crate::error::{ApiError, FieldError};
use crate::example::check_relative_path;
use crate::model::Mode;
use crate::{DEFAULT_TASK, ServerConfig};

/// Where scripted fixtures may live (relative to the root): the runtime's and this crate's test fixtures.
pub const FIXTURE_DIRS: &[&str] = &["fixtures/", "crates/server/tests/fixtures/"];
const FIELDS: &[&str] = &["task", "mode", "budgets", "temperature", "policy"];
pub const MAX_TEMPERATURE: f64 = 2.0;

/// Returns the spec to execute and the public form stored with the run.
pub fn parse_run_request(body: &Value, config: &ServerConfig) -> Result<(RunSpec, Value), ApiError> {
    let obj = body.as_object().ok_or_else(|| ApiError::bad_request("invalid_request", "the body must be a JSON object"))?;
    let mut errors = Vec::new();
    let fe = |field: &str, message: String| FieldError { field: field.into(), message };
    for key in obj.keys() {
        if !FIELDS.contains(&key.as_str()) {
            errors.push(fe(key, format!("unknown field; allowed: {}", FIELDS.join(", "))));
        }
    }
    let task = match obj.get("task") {
        None | Some(Value::Null) => DEFAULT_TASK.to_string(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => {
            errors.push(fe("task", format!("must be a task name string, got {other}")));
            String::new()
        }
    };
    let task_given_as_string = !task.is_empty() || obj.get("task").is_some_and(Value::is_string);
    if task_given_as_string && let Err(msg) = check_task(&config.root, &task) {
        errors.push(fe("task", msg));
    }
    let mode = match obj.get("mode") {
        None | Some(Value::Null) => Mode::Guided,
        Some(Value::String(s)) => Mode::parse(s).unwrap_or_else(|| {
            errors.push(fe("mode", format!("{s:?} is not a mode; use \"guided\" or \"free\"")));
            Mode::Guided
        }),
        Some(other) => {
            errors.push(fe("mode", format!("must be \"guided\" or \"free\", got {other}")));
            Mode::Guided
        }
    };
    let temperature = match obj.get("temperature") {
        None | Some(Value::Null) => 0.0,
        Some(v) => match v.as_f64() {
            Some(t) if t.is_finite() && (0.0..=MAX_TEMPERATURE).contains(&t) => t,
            _ => {
                errors.push(fe("temperature", format!("must be a number in 0..={MAX_TEMPERATURE}, got {v}")));
                0.0
            }
        },
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
                Ok(()) => PolicyChoice::Scripted { fixture: fixture.to_string() },
                Err(msg) => {
                    errors.push(fe("policy", msg));
                    PolicyChoice::Model
                }
            }
        }
        Some(other) => {
            errors.push(fe("policy", format!("must be \"model\" or \"scripted:fixtures/<file>.json\", got {other}")));
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
        "task": task, "mode": mode.as_str(), "temperature": temperature, "budgets": budgets, "policy": policy_label,
    });
    Ok((RunSpec { task, mode, temperature: temperature as f32, budgets, policy }, public))
}

/// Task names are folder names under fixtures/tasks/ holding a task.json.
fn check_task(root: &Path, task: &str) -> Result<(), String> {
    let valid = !task.is_empty() && task.len() <= 64 && task.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-');
    if !valid {
        return Err(format!("{task:?} is not a task name (lower-case letters, digits, '_' and '-')"));
    }
    let file = root.join("fixtures").join("tasks").join(task).join("task.json");
    match std::fs::symlink_metadata(&file) {
        Ok(m) if m.is_file() => Ok(()),
        _ => Err(format!("no task named {task:?} (expected fixtures/tasks/{task}/task.json)")),
    }
}

/// Scripted fixtures: a plain relative path under fixtures/, ending in .json, a regular file (no symlink).
fn check_fixture(root: &Path, fixture: &str) -> Result<(), String> {
    check_relative_path(fixture).map_err(|e| e.message)?;
    if !FIXTURE_DIRS.iter().any(|d| fixture.starts_with(d)) || !fixture.ends_with(".json") {
        return Err(format!("scripted fixture {fixture:?} must be a .json file under {}", FIXTURE_DIRS.join(" or ")));
    }
    let mut p = root.to_path_buf();
    for seg in fixture.split('/') {
        p.push(seg);
        match std::fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => return Err(format!("scripted fixture {fixture:?} goes through a symbolic link")),
            Ok(_) => {}
            Err(_) => return Err(format!("no scripted fixture at {fixture:?}")),
        }
    }
    if !p.is_file() {
        return Err(format!("scripted fixture {fixture:?} is not a file"));
    }
    Ok(())
}
