//! The `.runs/<id>/` directory: `meta.json`, append-only `events.jsonl`, `result.json`, `artifacts/`.
//!
//! Plain files, no database: a run is readable with `cat`. This module knows nothing of queues or HTTP;
//! `jobs.rs` decides when to write and what a reloaded run means.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("run store {path}: {source}")]
    Io { path: String, source: std::io::Error },
    #[error("run store {path}: invalid JSON: {source}")]
    Json { path: String, source: serde_json::Error },
}

/// What `meta.json` holds: identity, lifecycle and the accepted request (never the model's text).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunMeta {
    pub id: String,
    pub status: String,
    pub created_at_ms: u64,
    pub started_at_ms: Option<u64>,
    pub finished_at_ms: Option<u64>,
    pub request: Value,
}

/// A run as found on disk at start-up.
#[derive(Debug, Clone)]
pub struct LoadedRun {
    pub meta: RunMeta,
    pub events: Vec<Value>,
    pub result: Option<Value>,
    /// Lines of events.jsonl dropped because they were torn or out of sequence (a crash mid-write).
    pub dropped_lines: usize,
}

/// A run directory that could not be read: (run id, reason).
pub type Unreadable = (String, String);

pub struct RunStore {
    dir: PathBuf,
}

/// Run ids are generated here and only ever looked up, so the check is strict: `run-` + [0-9a-z-].
pub fn is_valid_run_id(id: &str) -> bool {
    id.len() <= 64
        && id.starts_with("run-")
        && id.len() > 4
        && id.bytes().all(|b| b.is_ascii_digit() || b.is_ascii_lowercase() || b == b'-')
}

impl RunStore {
    pub fn open(dir: impl Into<PathBuf>) -> Result<Self, StoreError> {
        let dir = dir.into();
        std::fs::create_dir_all(&dir).map_err(|source| io(&dir, source))?;
        Ok(Self { dir })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn run_dir(&self, id: &str) -> PathBuf {
        debug_assert!(is_valid_run_id(id));
        self.dir.join(id)
    }

    pub fn artifact_dir(&self, id: &str) -> PathBuf {
        self.run_dir(id).join("artifacts")
    }

    pub fn create(&self, meta: &RunMeta) -> Result<(), StoreError> {
        let d = self.run_dir(&meta.id);
        std::fs::create_dir_all(d.join("artifacts")).map_err(|source| io(&d, source))?;
        self.write_meta(meta)
    }

    pub fn write_meta(&self, meta: &RunMeta) -> Result<(), StoreError> {
        write_atomic(&self.run_dir(&meta.id).join("meta.json"), meta)
    }

    pub fn write_result(&self, id: &str, result: &Value) -> Result<(), StoreError> {
        write_atomic(&self.run_dir(id).join("result.json"), result)
    }

    /// One line per event, flushed before the event is shown to pollers.
    pub fn append_event(&self, id: &str, event: &Value) -> Result<(), StoreError> {
        let path = self.run_dir(id).join("events.jsonl");
        let mut line = serde_json::to_vec(event).map_err(|source| StoreError::Json { path: path.display().to_string(), source })?;
        line.push(b'\n');
        let mut f = std::fs::OpenOptions::new().create(true).append(true).open(&path).map_err(|source| io(&path, source))?;
        f.write_all(&line).map_err(|source| io(&path, source))?;
        f.flush().map_err(|source| io(&path, source))
    }

    pub fn remove(&self, id: &str) -> Result<(), StoreError> {
        let d = self.run_dir(id);
        std::fs::remove_dir_all(&d).map_err(|source| io(&d, source))
    }

    /// Every run directory with a readable meta.json, oldest first. Unreadable directories are reported
    /// in the second list (path, reason) rather than silently ignored.
    pub fn load_all(&self) -> Result<(Vec<LoadedRun>, Vec<Unreadable>), StoreError> {
        let mut runs = Vec::new();
        let mut unreadable = Vec::new();
        let entries = std::fs::read_dir(&self.dir).map_err(|source| io(&self.dir, source))?;
        for entry in entries {
            let entry = entry.map_err(|source| io(&self.dir, source))?;
            let Some(name) = entry.file_name().to_str().map(str::to_owned) else { continue };
            if !is_valid_run_id(&name) || !entry.file_type().map(|t| t.is_dir()).unwrap_or(false) {
                continue;
            }
            match self.load_one(&name) {
                Ok(run) => runs.push(run),
                Err(e) => unreadable.push((name, e.to_string())),
            }
        }
        runs.sort_by(|a, b| (a.meta.created_at_ms, &a.meta.id).cmp(&(b.meta.created_at_ms, &b.meta.id)));
        Ok((runs, unreadable))
    }

    fn load_one(&self, id: &str) -> Result<LoadedRun, StoreError> {
        let d = self.run_dir(id);
        let meta: RunMeta = read_json(&d.join("meta.json"))?;
        let result = match read_json::<Value>(&d.join("result.json")) {
            Ok(v) => Some(v),
            Err(StoreError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(e),
        };
        let mut events = Vec::new();
        let mut dropped = 0;
        match std::fs::read_to_string(d.join("events.jsonl")) {
            Ok(text) => {
                for line in text.lines() {
                    let ok = serde_json::from_str::<Value>(line).ok().filter(|v| v.get("seq").and_then(Value::as_u64) == Some(events.len() as u64 + 1));
                    match ok {
                        Some(v) if dropped == 0 => events.push(v),
                        _ => dropped += 1,
                    }
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(source) => return Err(io(&d, source)),
        }
        Ok(LoadedRun { meta, events, result, dropped_lines: dropped })
    }

    /// Rewrite events.jsonl from memory (used only when torn lines were dropped at reload).
    pub fn rewrite_events(&self, id: &str, events: &[Value]) -> Result<(), StoreError> {
        let path = self.run_dir(id).join("events.jsonl");
        let mut text = Vec::new();
        for e in events {
            text.extend(serde_json::to_vec(e).map_err(|source| StoreError::Json { path: path.display().to_string(), source })?);
            text.push(b'\n');
        }
        let tmp = path.with_extension("jsonl.tmp");
        std::fs::write(&tmp, text).map_err(|source| io(&tmp, source))?;
        std::fs::rename(&tmp, &path).map_err(|source| io(&path, source))
    }
}

fn io(path: &Path, source: std::io::Error) -> StoreError {
    StoreError::Io { path: path.display().to_string(), source }
}

fn read_json<T: for<'de> Deserialize<'de>>(path: &Path) -> Result<T, StoreError> {
    let text = std::fs::read(path).map_err(|source| io(path, source))?;
    serde_json::from_slice(&text).map_err(|source| StoreError::Json { path: path.display().to_string(), source })
}

fn write_atomic<T: Serialize>(path: &Path, value: &T) -> Result<(), StoreError> {
    let text = serde_json::to_vec_pretty(value).map_err(|source| StoreError::Json { path: path.display().to_string(), source })?;
    let tmp = path.with_extension("json.tmp");
    std::fs::write(&tmp, text).map_err(|source| io(&tmp, source))?;
    std::fs::rename(&tmp, path).map_err(|source| io(path, source))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_ids_are_strict() {
        assert!(is_valid_run_id("run-1732917600000-0a1b2c3d"));
        for bad in ["", "run-", "../run-1", "run-1/..", "RUN-1", "run-1%2f", "x-1", "run-a.b"] {
            assert!(!is_valid_run_id(bad), "{bad:?}");
        }
    }

    #[test]
    fn torn_event_lines_are_dropped_not_invented() {
        let tmp = tempfile::tempdir().unwrap();
        let store = RunStore::open(tmp.path()).unwrap();
        let meta = RunMeta { id: "run-1-a".into(), status: "running".into(), created_at_ms: 1, started_at_ms: None, finished_at_ms: None, request: Value::Null };
        store.create(&meta).unwrap();
        store.append_event("run-1-a", &serde_json::json!({"seq": 1})).unwrap();
        store.append_event("run-1-a", &serde_json::json!({"seq": 2})).unwrap();
        let path = store.run_dir("run-1-a").join("events.jsonl");
        let mut f = std::fs::OpenOptions::new().append(true).open(path).unwrap();
        f.write_all(b"{\"seq\": 3, \"pha").unwrap();
        let (runs, bad) = store.load_all().unwrap();
        assert!(bad.is_empty());
        assert_eq!(runs[0].events.len(), 2);
        assert_eq!(runs[0].dropped_lines, 1);
    }
}
