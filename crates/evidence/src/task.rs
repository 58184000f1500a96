//! Task folders (`fixtures/tasks/<name>/task.json`) and the gap analysis they drive.
//!
//! A task says what to do, which evidence it needs and which knowledge files its tools may read.
//! This module never reads `expected.json`: ground truth belongs to `metrics` alone, so nothing
//! built from a `Task` (prompts, state views, tool contexts) can carry it.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::ledger::ObservationRecord;
use forge_tools::registry::ResultKind;

/// One tool whose successful observation the final answer must cite.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequiredEvidence {
    pub tool: String,
    /// What the evidence is for, in words a model can act on (never an expected value).
    pub hint: String,
    /// The kind of `value` the observation must carry. `boolean` marks the task's rule check (a
    /// comparison the calculator evaluates); absent means any result that is not a boolean.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<ResultKind>,
}

/// The next thing the run needs, as the runtime sees it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Gap {
    /// A tool still has to produce evidence; `hint` says what for (no expected values); `result`
    /// the kind of value wanted (`boolean` = the task's rule check).
    Tool {
        tool: String,
        hint: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        result: Option<ResultKind>,
    },
    /// All required evidence exists: write the final answer citing these ids.
    Final {
        evidence_ids: Vec<String>,
        answer_template: String,
    },
}

impl Gap {
    /// The public decision summary the runtime writes in a guided decision's prefix (the specification's
    /// shell: type, tool or evidence ids, summary): the tool and the kind of result wanted, or the evidence
    /// the answer cites — never the step's hint or any reading of the task.
    pub fn summary(&self) -> String {
        match self {
            Gap::Tool {
                tool,
                result: Some(kind),
                ..
            } => format!("run {tool} for a {} result", kind.as_str()),
            Gap::Tool { tool, .. } => format!("run {tool}"),
            Gap::Final { evidence_ids, .. } => {
                format!("answer citing {}", evidence_ids.join(", "))
            }
        }
    }
}

impl RequiredEvidence {
    /// Whether `record` is a successful observation this item accepts.
    pub fn accepts(&self, record: &ObservationRecord) -> bool {
        if !record.ok || record.tool != self.tool {
            return false;
        }
        let value = record.result.as_ref().map(|r| &r["value"]);
        match self.result {
            Some(ResultKind::Number) => value.is_some_and(Value::is_number),
            Some(ResultKind::Boolean) => value.is_some_and(Value::is_boolean),
            // A rule check (boolean) only counts where one is asked for.
            None => !value.is_some_and(Value::is_boolean),
        }
    }

    /// `calculator (boolean)` — how the item is named to a model and in messages.
    pub fn describe(&self) -> String {
        match self.result {
            Some(kind) => format!("{} ({})", self.tool, kind.as_str()),
            None => self.tool.clone(),
        }
    }
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
    /// How the final answer should be phrased (no expected values). `<a / b>` is a choice, any other
    /// `<slot>` a value (a grounded number or a row label).
    pub answer_template: String,
    /// The words that state the rule's verdict; defaults apply when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict_phrases: Option<forge_language::answer::VerdictPhrases>,
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
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{path} is not a valid task file: {source}")]
    Parse {
        path: String,
        source: serde_json::Error,
    },
    #[error("{path}: {message}")]
    Invalid { path: String, message: String },
    #[error("{path}: knowledge file {file}: {message}")]
    Knowledge {
        path: String,
        file: String,
        message: String,
    },
}

impl Task {
    /// Loads `<dir>/task.json` and checks it against the tool registry.
    pub fn load(dir: impl AsRef<Path>) -> Result<Task, TaskError> {
        let dir = dir.as_ref().to_path_buf();
        let path = dir.join("task.json");
        let shown = display_name(&dir, "task.json");
        let text = std::fs::read_to_string(&path).map_err(|source| TaskError::Read {
            path: shown.clone(),
            source,
        })?;
        let file: TaskFile = serde_json::from_str(&text).map_err(|source| TaskError::Parse {
            path: shown.clone(),
            source,
        })?;
        let task = Task { file, dir };
        task.check().map_err(|message| TaskError::Invalid {
            path: shown,
            message,
        })?;
        Ok(task)
    }

    /// [`Task::load`], then the task against its knowledge: every file exists, is safe to read and
    /// parses, and evidence that labels values (a chart) has a table with a numeric column to draw from.
    pub fn load_checked(
        dir: impl AsRef<Path>,
        knowledge_dir: impl AsRef<Path>,
    ) -> Result<Task, TaskError> {
        let task = Task::load(dir)?;
        task.check_knowledge(knowledge_dir.as_ref())?;
        Ok(task)
    }

    /// The knowledge half of [`Task::load_checked`].
    pub fn check_knowledge(&self, knowledge_dir: &Path) -> Result<(), TaskError> {
        let path = display_name(&self.dir, "task.json");
        let mut has_table = false;
        for file in &self.file.knowledge_files {
            let source =
                forge_tools::knowledge::parse_source(knowledge_dir, file).map_err(|e| {
                    TaskError::Knowledge {
                        path: path.clone(),
                        file: file.clone(),
                        message: e.to_string(),
                    }
                })?;
            has_table |= source.has_numeric_table();
        }
        let registry = forge_tools::registry::ToolRegistry::builtin();
        for item in &self.file.required_evidence {
            let labels_rows = registry
                .spec(&item.tool)
                .is_some_and(|spec| takes_labels(&spec.arguments_schema));
            if labels_rows && !has_table {
                return Err(TaskError::Invalid {
                    path,
                    message: format!(
                        "required_evidence asks for {} (labelled values), but no knowledge file has a table with a numeric column",
                        item.tool
                    ),
                });
            }
        }
        Ok(())
    }

    fn check(&self) -> Result<(), String> {
        let file = &self.file;
        if file.format_version != 1 {
            return Err(format!(
                "format_version must be 1, got {}",
                file.format_version
            ));
        }
        if file.text.trim().is_empty() {
            return Err("text must not be empty".into());
        }
        if file.required_evidence.is_empty() {
            return Err("required_evidence must name at least one tool".into());
        }
        let registry = forge_tools::registry::ToolRegistry::builtin();
        let known = registry.tool_names();
        let mut seen: Vec<String> = Vec::new();
        for evidence in &file.required_evidence {
            if !known.contains(&evidence.tool.as_str()) {
                return Err(format!(
                    "required_evidence names unknown tool {:?}",
                    evidence.tool
                ));
            }
            let name = evidence.describe();
            if seen.contains(&name) {
                return Err(format!("required_evidence names {name:?} twice"));
            }
            if let Some(kind) = evidence.result
                && !registry.result_kinds(&evidence.tool).contains(&kind)
            {
                return Err(format!(
                    "required_evidence asks {:?} for a {} result, which that tool never returns",
                    evidence.tool,
                    kind.as_str()
                ));
            }
            seen.push(name);
        }
        if let Some(phrases) = &file.verdict_phrases {
            phrases
                .check()
                .map_err(|e| format!("verdict_phrases: {e}"))?;
        }
        for name in &file.knowledge_files {
            let plain = !name.is_empty()
                && !name.contains(['/', '\\'])
                && !name.starts_with('.')
                && [".md", ".csv", ".tsv"]
                    .iter()
                    .any(|ext| name.ends_with(ext));
            if !plain {
                return Err(format!(
                    "knowledge_files entry {name:?} must be a plain .md, .csv or .tsv file name"
                ));
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

    /// The answer template a final fills, when the task has one (a final given slot by slot is written into it).
    pub fn answer_template(&self) -> Option<&str> {
        Some(self.file.answer_template.as_str()).filter(|t| !t.trim().is_empty())
    }

    /// The folder the task was loaded from (metrics reads `expected.json` there).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn required_tools(&self) -> Vec<&str> {
        self.file
            .required_evidence
            .iter()
            .map(|e| e.tool.as_str())
            .collect()
    }

    pub fn required_evidence(&self) -> &[RequiredEvidence] {
        &self.file.required_evidence
    }

    /// The words that state this task's verdict (the task's own, or the defaults).
    pub fn verdict_phrases(&self) -> forge_language::answer::VerdictPhrases {
        self.file.verdict_phrases.clone().unwrap_or_default()
    }

    /// The index of the rule check (the `boolean` evidence item), if the task declares one.
    pub fn rule_check(&self) -> Option<usize> {
        self.file
            .required_evidence
            .iter()
            .position(|e| e.result == Some(ResultKind::Boolean))
    }

    /// For each required item, the id of the latest observation it accepts (in ledger order).
    pub fn evidence<'a>(
        &self,
        records: impl IntoIterator<Item = &'a ObservationRecord> + Clone,
    ) -> Vec<Option<String>> {
        self.file
            .required_evidence
            .iter()
            .map(|item| {
                records
                    .clone()
                    .into_iter()
                    .filter(|r| item.accepts(r))
                    .last()
                    .map(|r| r.id.clone())
            })
            .collect()
    }

    /// What the run needs next: the first required item without an accepted observation, or the final.
    pub fn gap<'a>(&self, records: impl IntoIterator<Item = &'a ObservationRecord> + Clone) -> Gap {
        let found = self.evidence(records);
        for (item, id) in self.file.required_evidence.iter().zip(&found) {
            if id.is_none() {
                return Gap::Tool {
                    tool: item.tool.clone(),
                    hint: item.hint.clone(),
                    result: item.result,
                };
            }
        }
        Gap::Final {
            evidence_ids: found.into_iter().flatten().collect(),
            answer_template: self.file.answer_template.clone(),
        }
    }

    /// Every required item still without an accepted observation, in causal order.
    pub fn missing<'a>(
        &self,
        records: impl IntoIterator<Item = &'a ObservationRecord> + Clone,
    ) -> Vec<&RequiredEvidence> {
        let found = self.evidence(records);
        self.file
            .required_evidence
            .iter()
            .zip(found)
            .filter(|(_, id)| id.is_none())
            .map(|(item, _)| item)
            .collect()
    }
}

/// Whether an argument schema takes row labels (`x-grammar: label`, directly or as array items).
fn takes_labels(schema: &Value) -> bool {
    schema["properties"].as_object().is_some_and(|props| {
        props
            .values()
            .any(|p| p["x-grammar"] == "label" || p["items"]["x-grammar"] == "label")
    })
}

/// A path for messages: the folder's last component and the file, never an absolute path.
pub fn display_name(dir: &Path, file: &str) -> String {
    let last = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if last.is_empty() {
        file.to_owned()
    } else {
        format!("{last}/{file}")
    }
}
