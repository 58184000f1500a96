//! Task folders as a resource: every folder under the tasks directory, read afresh on each call, with its load error when broken.
//!
//! Axum-free. A folder is checked the way a run would load it (`Task::load_checked`), so the page never
//! offers a task a run cannot start. Ground truth is reported as a status only (`loaded` /
//! `unavailable`): its contents stay with `metrics`, never in a response.

use std::path::Path;

use runtime::metrics::{Expected, GroundTruth};
use runtime::task::Task;
use serde::Serialize;

/// Characters of each knowledge file shown as a preview (the page shows what the task reads, not all of it).
pub const PREVIEW_CHARS: usize = 1200;
/// Folders listed at most (a runaway directory cannot make the listing unbounded).
pub const MAX_TASKS: usize = 500;

/// One knowledge file a task may read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KnowledgePreview {
    pub file: String,
    pub bytes: Option<u64>,
    /// The first [`PREVIEW_CHARS`] characters; `None` when the file cannot be read.
    pub preview: Option<String>,
    pub truncated: bool,
}

/// One task folder as `GET /agent/tasks` lists it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TaskEntry {
    /// The folder name: what `POST /agent/runs` takes as `task`.
    pub name: String,
    /// `ok` when a run can load it, `invalid` otherwise (then `error` says why).
    pub status: &'static str,
    pub error: Option<String>,
    pub title: Option<String>,
    pub text: Option<String>,
    pub knowledge: Vec<KnowledgePreview>,
    /// `{"status": "loaded"}` or `{"status": "unavailable", "reason": "missing"|"invalid", "message"}`.
    pub ground_truth: GroundTruth,
}

impl TaskEntry {
    pub fn is_valid(&self) -> bool {
        self.status == "ok"
    }
}

/// Why the tasks directory itself cannot be listed.
#[derive(Debug, thiserror::Error)]
#[error("cannot list the tasks directory {shown}: {source}")]
pub struct TasksDirError {
    pub shown: String,
    pub source: std::io::Error,
}

/// Folder names under `tasks_dir`, sorted (plain directories only; files such as README.md are not tasks).
pub fn folder_names(tasks_dir: &Path) -> Result<Vec<String>, TasksDirError> {
    let shown = tasks_dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let read = std::fs::read_dir(tasks_dir).map_err(|source| TasksDirError {
        shown: shown.clone(),
        source,
    })?;
    let mut names: Vec<String> = read
        .filter_map(Result::ok)
        // DirEntry::file_type does not follow symlinks: a linked folder is not a task folder.
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| !n.starts_with('.'))
        .collect();
    names.sort();
    names.truncate(MAX_TASKS);
    Ok(names)
}

/// Every task folder, sorted by name; a broken folder is an `invalid` entry, never an error of the list.
pub fn list(tasks_dir: &Path, knowledge_dir: &Path) -> Result<Vec<TaskEntry>, TasksDirError> {
    Ok(folder_names(tasks_dir)?
        .into_iter()
        .map(|name| entry(tasks_dir, knowledge_dir, &name))
        .collect())
}

/// The task a run uses when the request names none: the first loadable folder in sorted order.
pub fn default_task(tasks_dir: &Path, knowledge_dir: &Path) -> Option<String> {
    folder_names(tasks_dir)
        .ok()?
        .into_iter()
        .find(|name| Task::load_checked(tasks_dir.join(name), knowledge_dir).is_ok())
}

/// One folder, loaded exactly as a run would load it.
pub fn entry(tasks_dir: &Path, knowledge_dir: &Path, name: &str) -> TaskEntry {
    let dir = tasks_dir.join(name);
    let ground_truth = GroundTruth::from_load(&Expected::load(&dir));
    match Task::load_checked(&dir, knowledge_dir) {
        Ok(task) => TaskEntry {
            name: name.to_string(),
            status: "ok",
            error: None,
            title: Some(task.file.title.clone()),
            text: Some(task.file.text.clone()),
            knowledge: task
                .file
                .knowledge_files
                .iter()
                .map(|f| preview(knowledge_dir, f))
                .collect(),
            ground_truth,
        },
        Err(e) => TaskEntry {
            name: name.to_string(),
            status: "invalid",
            error: Some(e.to_string()),
            title: None,
            text: None,
            knowledge: Vec::new(),
            ground_truth,
        },
    }
}

/// `file` was checked by `Task::load_checked` (a plain `.md` name inside the knowledge directory).
fn preview(knowledge_dir: &Path, file: &str) -> KnowledgePreview {
    match std::fs::read_to_string(knowledge_dir.join(file)) {
        Ok(text) => {
            let truncated = text.chars().count() > PREVIEW_CHARS;
            KnowledgePreview {
                file: file.to_string(),
                bytes: Some(text.len() as u64),
                preview: Some(text.chars().take(PREVIEW_CHARS).collect()),
                truncated,
            }
        }
        Err(_) => KnowledgePreview {
            file: file.to_string(),
            bytes: None,
            preview: None,
            truncated: false,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_tasks_directory_is_an_error_naming_it() {
        let tmp = tempfile::tempdir().unwrap();
        let err = list(&tmp.path().join("nowhere"), tmp.path()).unwrap_err();
        assert!(err.to_string().contains("nowhere"), "{err}");
        assert_eq!(default_task(&tmp.path().join("nowhere"), tmp.path()), None);
    }
}
