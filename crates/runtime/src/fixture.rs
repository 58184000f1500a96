//! Scripted-run fixtures (`fixtures/*.json`): which task, which budgets, which injected tool
//! faults, the scripted model outputs, and the outcome the fixture is meant to produce.
//!
//! Used by tests and by `runner run --policy scripted --fixture …`. A fixture never carries
//! ground truth (that stays in the task folder's expected.json) and is never used as a fallback
//! for a real model.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::policy::RunControl;
use crate::policy::scripted::{ScriptError, ScriptedDecision, ScriptedPolicy};
use crate::task::{Task, TaskError};
use crate::{Budgets, RunConfig, RunResult, RunStatus, StopReason, ToolFault, TraceEvent};

/// What a fixture is written to produce (checked by the fixture tests).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FixtureExpectation {
    pub status: RunStatus,
    pub stop_reason: StopReason,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fixture {
    pub format_version: u32,
    pub description: String,
    /// Task folder name under `<fixtures>/tasks/`.
    pub task: String,
    /// Budget overrides; unspecified fields keep their defaults.
    #[serde(default)]
    pub budgets: Budgets,
    #[serde(default)]
    pub tool_timeout_ms: Option<u64>,
    #[serde(default)]
    pub tool_faults: Vec<ToolFault>,
    pub decisions: Vec<ScriptedDecision>,
    pub expect: FixtureExpectation,
    /// Directory the fixture was loaded from (its `tasks/` folder holds the task).
    #[serde(skip)]
    pub source_dir: PathBuf,
}

#[derive(Debug, thiserror::Error)]
pub enum FixtureError {
    #[error(transparent)]
    Script(#[from] ScriptError),
    #[error(transparent)]
    Task(#[from] TaskError),
}

impl Fixture {
    pub fn load(path: impl AsRef<Path>) -> Result<Fixture, ScriptError> {
        let path = path.as_ref();
        let shown = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let text = std::fs::read_to_string(path).map_err(|source| ScriptError::Read {
            path: shown.clone(),
            source,
        })?;
        let mut fixture: Fixture =
            serde_json::from_str(&text).map_err(|source| ScriptError::Parse {
                path: shown,
                source,
            })?;
        fixture.source_dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        Ok(fixture)
    }

    pub fn policy(&self) -> ScriptedPolicy {
        ScriptedPolicy::new(self.decisions.clone())
    }

    pub fn task_dir(&self) -> PathBuf {
        self.source_dir.join("tasks").join(&self.task)
    }

    /// `<fixtures>/../knowledge`: the repository's knowledge directory next to `fixtures/`.
    pub fn default_knowledge_dir(&self) -> PathBuf {
        self.source_dir.join("..").join("knowledge")
    }

    pub fn load_task(&self) -> Result<Task, TaskError> {
        Task::load(self.task_dir())
    }

    /// A run configuration with this fixture's budgets, timeout override and faults.
    pub fn config(
        &self,
        run_id: &str,
        knowledge_dir: impl Into<PathBuf>,
        artifact_dir: impl Into<PathBuf>,
    ) -> RunConfig {
        let mut config = RunConfig::new(run_id, knowledge_dir, artifact_dir);
        config.budgets = self.budgets.clone();
        config.tool_timeout_ms = self.tool_timeout_ms;
        config.tool_faults = self.tool_faults.clone();
        config
    }

    /// Loads the task, builds the policy and runs it (the `runner run --policy scripted` path).
    pub fn run(
        &self,
        run_id: &str,
        knowledge_dir: impl Into<PathBuf>,
        artifact_dir: impl Into<PathBuf>,
        sink: &mut dyn FnMut(&TraceEvent),
    ) -> Result<RunResult, FixtureError> {
        let task = self.load_task()?;
        let config = self.config(run_id, knowledge_dir, artifact_dir);
        let control =
            RunControl::new(Instant::now() + Duration::from_secs(config.budgets.wall_clock_s));
        let mut policy = self.policy();
        Ok(crate::run_task(&task, &mut policy, &config, &control, sink))
    }
}

/// Every `*.json` fixture directly under `dir`, sorted by name.
pub fn fixture_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|e| e == "json") && path.is_file())
        .collect();
    files.sort();
    Ok(files)
}
