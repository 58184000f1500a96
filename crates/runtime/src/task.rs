//! Task folders (`fixtures/tasks/<name>/task.json`) and the gap analysis they drive.
//!
//! A task says what to do, which evidence it needs and which knowledge files its tools may read.
//! This module never reads `expected.json`: ground truth belongs to `metrics` alone, so nothing
//! built from a `Task` (prompts, state views, tool contexts) can carry it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::policy::Gap;

/// One tool whose successful observation the final answer must cite.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequiredEvidence {
    pub tool: String,
    /// What the evidence is for, in words a model can act on (never an expected value).
    pub hint: String,
}

/// `task.json`, as written in the folder.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskFile {
    pub format_version: u32,
    pub name: String,
    pub title: String,
    /// The task text shown to the policy.
    pub text: String,
    /// File names under the knowledge directory that knowledge_search may read.
    pub knowledge_files: Vec<String>,
    /// In causal order: the gap analysis asks for the first one still missing.
    pub required_evidence: Vec<RequiredEvidence>,
    /// How the final answer should be phrased (no expected values).
    pub answer_template: String,
}

/// A loaded task folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Task {
    pub file: TaskFile,
    dir: PathBuf,
}

#[derive(Debug, thiserror::Error)]
pub enum TaskError {
    #[error("cannot read {path}: {source}")]
    Read { path: String, source: std::io::Error },
    #[error("{path} is not a valid task file: {source}")]
    Parse { path: String, source: serde_json::Error },
    #[error("{path}: {message}")]
    Invalid { path: String, message: String },
}

impl Task {
    /// Loads `<dir>/task.json` and checks it against the tool registry.
    pub fn load(dir: impl AsRef<Path>) -> Result<Task, TaskError> {
        let dir = dir.as_ref().to_path_buf();
        let path = dir.join("task.json");
        let shown = display_name(&dir, "task.json");
        let text = std::fs::read_to_string(&path).map_err(|source| TaskError::Read { path: shown.clone(), source })?;
        let file: TaskFile =
            serde_json::from_str(&text).map_err(|source| TaskError::Parse { path: shown.clone(), source })?;
        let task = Task { file, dir };
        task.check().map_err(|message| TaskError::Invalid { path: shown, message })?;
        Ok(task)
    }

    fn check(&self) -> Result<(), String> {
        let file = &self.file;
        if file.format_version != 1 {
            return Err(format!("format_version must be 1, got {}", file.format_version));
        }
        if file.text.trim().is_empty() {
            return Err("text must not be empty".into());
        }
        if file.required_evidence.is_empty() {
            return Err("required_evidence must name at least one tool".into());
        }
        let known = crate::registry::ToolRegistry::builtin().tool_names();
        let mut seen = Vec::new();
        for evidence in &file.required_evidence {
            if !known.contains(&evidence.tool.as_str()) {
                return Err(format!("required_evidence names unknown tool {:?}", evidence.tool));
            }
            if seen.contains(&evidence.tool) {
                return Err(format!("required_evidence names {:?} twice", evidence.tool));
            }
            seen.push(evidence.tool.clone());
        }
        for name in &file.knowledge_files {
            let plain = !name.is_empty()
                && !name.contains(['/', '\\'])
                && !name.starts_with('.')
                && name.ends_with(".md");
            if !plain {
                return Err(format!("knowledge_files entry {name:?} must be a plain .md file name"));
            }
        }
        Ok(())
    }

    pub fn name(&self) -> &str {
        &self.file.name
    }

    pub fn text(&self) -> &str {
        &self.file.text
    }

    /// The folder the task was loaded from (metrics reads `expected.json` there).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn required_tools(&self) -> Vec<&str> {
        self.file.required_evidence.iter().map(|e| e.tool.as_str()).collect()
    }

    /// What the run needs next, from the latest successful observation id of each tool.
    pub fn gap(&self, latest_success: &BTreeMap<String, String>) -> Gap {
        for evidence in &self.file.required_evidence {
            if !latest_success.contains_key(&evidence.tool) {
                return Gap::Tool { tool: evidence.tool.clone(), hint: evidence.hint.clone() };
            }
        }
        Gap::Final {
            evidence_ids: self.file.required_evidence.iter().map(|e| latest_success[&e.tool].clone()).collect(),
            answer_template: self.file.answer_template.clone(),
        }
    }
}

/// A path for messages: the folder's last component and the file, never an absolute path.
pub(crate) fn display_name(dir: &Path, file: &str) -> String {
    let last = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    if last.is_empty() { file.to_owned() } else { format!("{last}/{file}") }
}
