//! The `.runs/<id>/` directory: `meta.json`, append-only `events.jsonl`, `result.json`, `artifacts/`; one
//! durable writer for all of them, crash-tolerant reading, and the `.runs/.lock` that keeps a second server out.
//!
//! Plain files, no database: a run is readable with `cat`. Every write goes through the [`StoreIo`] seam
//! (tests put a crashing or failing double there). This module knows nothing of queues or HTTP; `jobs.rs`
//! decides when to write and what a reloaded run means.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use serde_json::Value;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("run store {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("run store {path}: invalid JSON: {source}")]
    Json {
        path: String,
        source: serde_json::Error,
    },
    #[error(
        "another runner{} is using the runs directory {dir} (it holds {dir}/.lock); stop it or start this one with a different --runs-dir",
        holder.as_ref().map(|p| format!(" (pid {p})")).unwrap_or_default()
    )]
    Locked { dir: String, holder: Option<String> },
}

/// Where every byte of the store goes to disk. The production [`DiskIo`] makes each call durable before it
/// returns; tests substitute doubles that crash after N writes or fail like a full disk.
pub trait StoreIo: Send + Sync + 'static {
    /// Replace `path` with `bytes` atomically and durably.
    fn replace(&self, path: &Path, bytes: &[u8]) -> io::Result<()>;
    /// Append `bytes` durably; on failure nothing of them remains in the file.
    fn append(&self, path: &Path, bytes: &[u8]) -> io::Result<()>;
    /// Create a directory (and parents) whose entry survives a power loss.
    fn create_dir(&self, path: &Path) -> io::Result<()>;
}

/// The real disk: unique temp name, write, `sync_all`, rename, fsync of the directory; appends `sync_data`
/// and are cut back to the old length when they fail half-way.
pub struct DiskIo;

fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

impl StoreIo for DiskIo {
    fn replace(&self, path: &Path, bytes: &[u8]) -> io::Result<()> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let dir = path
            .parent()
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "path has no directory"))?;
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        // Unique per process and call: two writers of one file never share a temp file.
        let tmp = dir.join(format!(
            ".{name}.{}.{}.tmp",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        let written = (|| {
            let mut f = OpenOptions::new().write(true).create_new(true).open(&tmp)?;
            f.write_all(bytes)?;
            f.sync_all()
        })();
        if let Err(e) = written.and_then(|()| std::fs::rename(&tmp, path)) {
            let _ = std::fs::remove_file(&tmp);
            return Err(e);
        }
        sync_dir(dir)
    }

    fn append(&self, path: &Path, bytes: &[u8]) -> io::Result<()> {
        let existed = path.exists();
        let mut f = OpenOptions::new()
            .read(true)
            .create(true)
            .append(true)
            .open(path)?;
        let before = f.seek(io::SeekFrom::End(0))?;
        // A torn last line (a crash mid-append) would swallow this one at the next load: end it first.
        let mut last = [0u8; 1];
        let torn = before > 0
            && std::os::unix::fs::FileExt::read_at(&f, &mut last, before - 1)? == 1
            && last[0] != b'\n';
        let mut bytes = std::borrow::Cow::Borrowed(bytes);
        if torn {
            let mut fixed = Vec::with_capacity(bytes.len() + 1);
            fixed.push(b'\n');
            fixed.extend_from_slice(&bytes);
            bytes = std::borrow::Cow::Owned(fixed);
        }
        if let Err(e) = f.write_all(&bytes).and_then(|()| f.sync_data()) {
            // A torn line would hide every later event at the next load: take it back.
            let _ = f.set_len(before).and_then(|()| f.sync_data());
            return Err(e);
        }
        if !existed && let Some(dir) = path.parent() {
            sync_dir(dir)?;
        }
        Ok(())
    }

    fn create_dir(&self, path: &Path) -> io::Result<()> {
        std::fs::create_dir_all(path)?;
        // The new entries live in the parent and, for `<run>/artifacts`, in the runs directory above it.
        for dir in path
            .ancestors()
            .skip(1)
            .take(2)
            .filter(|d| !d.as_os_str().is_empty())
        {
            sync_dir(dir)?;
        }
        Ok(())
    }
}

/// Where a run is in its life. The four terminal states are the runtime's `RunStatus`; `Unknown` is a
/// run whose meta.json was lost (or holds a state this version does not know) until recovery settles it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunState {
    Queued,
    Running,
    Completed,
    Stopped,
    Failed,
    Cancelled,
    #[serde(other)]
    Unknown,
}

impl RunState {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Queued => "queued",
            Self::Running => "running",
            Self::Completed => "completed",
            Self::Stopped => "stopped",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
            Self::Unknown => "unknown",
        }
    }

    /// The terminal state a result's `status` names; `Failed` for anything else (a result is terminal).
    pub fn of_result(result: &serde_json::Value) -> RunState {
        match result.get("status").and_then(serde_json::Value::as_str) {
            Some("completed") => Self::Completed,
            Some("stopped") => Self::Stopped,
            Some("cancelled") => Self::Cancelled,
            _ => Self::Failed,
        }
    }
}

impl From<runtime::RunStatus> for RunState {
    fn from(s: runtime::RunStatus) -> Self {
        match s {
            runtime::RunStatus::Completed => Self::Completed,
            runtime::RunStatus::Stopped => Self::Stopped,
            runtime::RunStatus::Failed => Self::Failed,
            runtime::RunStatus::Cancelled => Self::Cancelled,
        }
    }
}

impl std::fmt::Display for RunState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What `meta.json` holds: identity, lifecycle and the accepted request (never the model's text).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunMeta {
    pub id: String,
    pub status: RunState,
    pub created_at_ms: u64,
    pub started_at_ms: Option<u64>,
    pub finished_at_ms: Option<u64>,
    pub request: Value,
    /// What recovery found broken and how it repaired it (empty for an intact run).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub damage: Vec<String>,
}

/// A run directory as found on disk at start-up, damage included: nothing here is an error, so no run is
/// hidden because one of its files is empty or torn.
#[derive(Debug, Clone)]
pub struct LoadedRun {
    pub id: String,
    /// None when meta.json is missing or unreadable (the reason is in `damage`).
    pub meta: Option<RunMeta>,
    pub events: Vec<Value>,
    /// A complete result: a JSON object with a `status`. An empty or torn result.json is None (+ damage).
    pub result: Option<Value>,
    /// Lines of events.jsonl dropped because they were torn or out of sequence (a crash mid-write).
    pub dropped_lines: usize,
    pub damage: Vec<String>,
    /// Nothing at all was written (no meta, no events, no result): the run was never accepted.
    pub empty: bool,
}

pub struct RunStore {
    dir: PathBuf,
    io: Arc<dyn StoreIo>,
    /// The open, OS-locked `.lock`; `release_lock` drops it so a successor can start in this process.
    lock: Mutex<Option<File>>,
}

/// Run ids are generated here and only ever looked up, so the check is strict: `run-` + [0-9a-z-].
pub fn is_valid_run_id(id: &str) -> bool {
    id.len() <= 64
        && id.starts_with("run-")
        && id.len() > 4
        && id
            .bytes()
            .all(|b| b.is_ascii_digit() || b.is_ascii_lowercase() || b == b'-')
}

/// The creation time a run id carries (`run-<ms>-<hash>`), for a run whose meta.json is lost.
fn created_ms_of(id: &str) -> u64 {
    id.strip_prefix("run-")
        .and_then(|r| r.split('-').next())
        .and_then(|ms| ms.parse().ok())
        .unwrap_or(0)
}

impl RunStore {
    /// Open (creating) the runs directory on the real disk and take its lock.
    pub fn open(dir: impl Into<PathBuf>) -> Result<Self, StoreError> {
        Self::open_with(dir, Arc::new(DiskIo))
    }

    /// Same, writing through `io`. Fails with `Locked` when another process (or another open store in
    /// this one) holds `.lock`: two servers on one directory would seal and prune each other's runs.
    pub fn open_with(dir: impl Into<PathBuf>, io: Arc<dyn StoreIo>) -> Result<Self, StoreError> {
        let dir = dir.into();
        std::fs::create_dir_all(&dir).map_err(|source| self::io(&dir, source))?;
        let path = dir.join(".lock");
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|source| self::io(&path, source))?;
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                let mut holder = String::new();
                let _ = file.read_to_string(&mut holder);
                let holder = Some(holder.trim().to_string()).filter(|h| !h.is_empty());
                return Err(StoreError::Locked {
                    dir: dir.display().to_string(),
                    holder,
                });
            }
            Err(std::fs::TryLockError::Error(source)) => return Err(self::io(&path, source)),
        }
        // Informational only (the OS lock is what counts): who holds it, for the refusal message.
        let _ = file
            .set_len(0)
            .and_then(|()| file.write_all(std::process::id().to_string().as_bytes()));
        Ok(Self {
            dir,
            io,
            lock: Mutex::new(Some(file)),
        })
    }

    /// Give up `.lock` (after the worker has stopped), so another store may open this directory.
    pub fn release_lock(&self) {
        if let Some(f) = self.lock.lock().unwrap_or_else(|p| p.into_inner()).take() {
            let _ = f.unlock();
        }
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

    /// The run directory with `artifacts/`, then `meta.json` (a directory without meta was never accepted).
    pub fn create(&self, meta: &RunMeta) -> Result<(), StoreError> {
        let d = self.artifact_dir(&meta.id);
        self.io.create_dir(&d).map_err(|source| io(&d, source))?;
        self.write_meta(meta)
    }

    pub fn write_meta(&self, meta: &RunMeta) -> Result<(), StoreError> {
        self.write_json(&self.run_dir(&meta.id).join("meta.json"), meta)
    }

    pub fn write_result(&self, id: &str, result: &Value) -> Result<(), StoreError> {
        self.write_json(&self.run_dir(id).join("result.json"), result)
    }

    /// The one JSON writer: every JSON file of the store is replaced through it.
    fn write_json<T: Serialize>(&self, path: &Path, value: &T) -> Result<(), StoreError> {
        let text = serde_json::to_vec_pretty(value).map_err(|source| StoreError::Json {
            path: path.display().to_string(),
            source,
        })?;
        self.io
            .replace(path, &text)
            .map_err(|source| io(path, source))
    }

    /// One line per event, durable before the event is shown to pollers.
    pub fn append_event(&self, id: &str, event: &Value) -> Result<(), StoreError> {
        let path = self.run_dir(id).join("events.jsonl");
        let mut line = serde_json::to_vec(event).map_err(|source| StoreError::Json {
            path: path.display().to_string(),
            source,
        })?;
        line.push(b'\n');
        self.io
            .append(&path, &line)
            .map_err(|source| io(&path, source))
    }

    pub fn remove(&self, id: &str) -> Result<(), StoreError> {
        let d = self.run_dir(id);
        std::fs::remove_dir_all(&d).map_err(|source| io(&d, source))
    }

    /// Every run directory, oldest first, each with whatever could be read and a note of what could not.
    pub fn load_all(&self) -> Result<Vec<LoadedRun>, StoreError> {
        let mut runs = Vec::new();
        let entries = std::fs::read_dir(&self.dir).map_err(|source| io(&self.dir, source))?;
        for entry in entries {
            let entry = entry.map_err(|source| io(&self.dir, source))?;
            let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
                continue;
            };
            if !is_valid_run_id(&name) || !entry.file_type().map(|t| t.is_dir()).unwrap_or(false) {
                continue;
            }
            runs.push(self.load_one(&name));
        }
        let created = |r: &LoadedRun| {
            r.meta
                .as_ref()
                .map_or_else(|| created_ms_of(&r.id), |m| m.created_at_ms)
        };
        runs.sort_by(|a, b| (created(a), &a.id).cmp(&(created(b), &b.id)));
        Ok(runs)
    }

    fn load_one(&self, id: &str) -> LoadedRun {
        let d = self.run_dir(id);
        let mut damage = Vec::new();
        // Temp files of a write the crash interrupted: the real file is the old or the new version, never these.
        if let Ok(entries) = std::fs::read_dir(&d) {
            for e in entries.flatten() {
                let n = e.file_name().to_string_lossy().into_owned();
                if n.starts_with('.') && n.ends_with(".tmp") {
                    let _ = std::fs::remove_file(e.path());
                }
            }
        }
        let mut present = false;
        let meta = match read_json::<RunMeta>(&d.join("meta.json")) {
            Ok(m) => {
                present = true;
                Some(m)
            }
            Err(e) => {
                present |= !is_not_found(&e);
                damage.push(format!("meta.json {}", describe(&e)));
                None
            }
        };
        let result = match read_json::<Value>(&d.join("result.json")) {
            Ok(v) if v.get("status").and_then(Value::as_str).is_some() => {
                present = true;
                Some(v)
            }
            Ok(_) => {
                present = true;
                damage.push("result.json has no status (incomplete)".into());
                None
            }
            Err(e) if is_not_found(&e) => None,
            Err(e) => {
                present = true;
                damage.push(format!("result.json {}", describe(&e)));
                None
            }
        };
        let mut events = Vec::new();
        let mut dropped = 0;
        match std::fs::read(d.join("events.jsonl")) {
            Ok(bytes) => {
                present |= !bytes.is_empty();
                for line in bytes.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
                    // A line is kept when it is the next event in sequence; a torn line is skipped without
                    // hiding the events after it.
                    let next = serde_json::from_slice::<Value>(line).ok().filter(|v| {
                        v.get("seq").and_then(Value::as_u64) == Some(events.len() as u64 + 1)
                    });
                    match next {
                        Some(v) => events.push(v),
                        None => dropped += 1,
                    }
                }
                if dropped > 0 {
                    damage.push(format!(
                        "events.jsonl: {dropped} torn or out-of-sequence line(s) dropped"
                    ));
                }
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => {
                present = true;
                damage.push(format!("events.jsonl unreadable: {}", e.kind()));
            }
        }
        LoadedRun {
            id: id.to_string(),
            meta,
            events,
            result,
            dropped_lines: dropped,
            damage,
            empty: !present,
        }
    }

    /// A meta for a run whose meta.json is lost: identity and creation time from the id, request unknown.
    pub fn placeholder_meta(id: &str) -> RunMeta {
        RunMeta {
            id: id.into(),
            status: RunState::Unknown,
            created_at_ms: created_ms_of(id),
            started_at_ms: None,
            finished_at_ms: None,
            request: Value::Object(Default::default()),
            damage: Vec::new(),
        }
    }

    /// Rewrite events.jsonl from memory (used only when torn lines were dropped at reload).
    pub fn rewrite_events(&self, id: &str, events: &[Value]) -> Result<(), StoreError> {
        let path = self.run_dir(id).join("events.jsonl");
        let mut text = Vec::new();
        for e in events {
            text.extend(serde_json::to_vec(e).map_err(|source| StoreError::Json {
                path: path.display().to_string(),
                source,
            })?);
            text.push(b'\n');
        }
        self.io
            .replace(&path, &text)
            .map_err(|source| io(&path, source))
    }
}

fn io(path: &Path, source: std::io::Error) -> StoreError {
    StoreError::Io {
        path: path.display().to_string(),
        source,
    }
}

fn is_not_found(e: &StoreError) -> bool {
    matches!(e, StoreError::Io { source, .. } if source.kind() == io::ErrorKind::NotFound)
}

/// A damage note without the absolute path (it is shown to clients).
fn describe(e: &StoreError) -> String {
    match e {
        StoreError::Io { source, .. } if source.kind() == io::ErrorKind::NotFound => {
            "missing".into()
        }
        StoreError::Io { source, .. } => format!("unreadable ({})", source.kind()),
        StoreError::Json { source, .. } if source.is_eof() => {
            format!("empty or cut short ({source})")
        }
        StoreError::Json { source, .. } => format!("not valid JSON ({source})"),
        StoreError::Locked { .. } => e.to_string(),
    }
}

fn read_json<T: for<'de> Deserialize<'de>>(path: &Path) -> Result<T, StoreError> {
    let text = std::fs::read(path).map_err(|source| io(path, source))?;
    serde_json::from_slice(&text).map_err(|source| StoreError::Json {
        path: path.display().to_string(),
        source,
    })
}

#[cfg(test)]
mod tests {
    /// Issue 23, item 7: an append after a torn last line starts on a line of its own, so the next load
    /// drops only the torn line, never the event (a seal) appended after it.
    #[test]
    fn an_append_after_a_torn_line_survives_the_next_load() {
        let t = tempfile::tempdir().unwrap();
        let path = t.path().join("events.jsonl");
        std::fs::write(&path, b"{\"seq\":1}\n{\"seq\":2,\"pha").unwrap();
        DiskIo.append(&path, b"{\"seq\":3}\n").unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines,
            vec!["{\"seq\":1}", "{\"seq\":2,\"pha", "{\"seq\":3}"]
        );
        DiskIo.append(&path, b"{\"seq\":4}\n").unwrap();
        assert!(
            std::fs::read_to_string(&path)
                .unwrap()
                .ends_with("{\"seq\":3}\n{\"seq\":4}\n")
        );
    }

    use super::*;

    #[test]
    fn run_state_is_a_typed_enum_on_disk_and_matches_the_runtime_statuses() {
        for state in [
            RunState::Queued,
            RunState::Running,
            RunState::Completed,
            RunState::Stopped,
            RunState::Failed,
            RunState::Cancelled,
            RunState::Unknown,
        ] {
            let text = serde_json::to_value(state).unwrap();
            assert_eq!(text, serde_json::json!(state.as_str()));
            assert_eq!(serde_json::from_value::<RunState>(text).unwrap(), state);
        }
        for status in [
            runtime::RunStatus::Completed,
            runtime::RunStatus::Stopped,
            runtime::RunStatus::Failed,
            runtime::RunStatus::Cancelled,
        ] {
            assert_eq!(RunState::from(status).as_str(), status.as_str());
        }
        // A state this version does not know loads as `unknown` instead of making the meta unreadable.
        let meta: RunMeta = serde_json::from_value(serde_json::json!({
            "id": "run-1732917600000-0a1b2c3d", "status": "paused", "created_at_ms": 1,
            "started_at_ms": null, "finished_at_ms": null, "request": {}
        }))
        .unwrap();
        assert_eq!(meta.status, RunState::Unknown);
        assert_eq!(
            RunState::of_result(&serde_json::json!({"status": "stopped"})),
            RunState::Stopped
        );
        assert_eq!(
            RunState::of_result(&serde_json::json!({"status": "queued"})),
            RunState::Failed,
            "a result is terminal"
        );
    }

    #[test]
    fn run_ids_are_strict() {
        assert!(is_valid_run_id("run-1732917600000-0a1b2c3d"));
        for bad in [
            "", "run-", "../run-1", "run-1/..", "RUN-1", "run-1%2f", "x-1", "run-a.b",
        ] {
            assert!(!is_valid_run_id(bad), "{bad:?}");
        }
    }

    fn meta(id: &str) -> RunMeta {
        RunMeta {
            id: id.into(),
            status: RunState::Running,
            created_at_ms: 1,
            started_at_ms: None,
            finished_at_ms: None,
            request: Value::Null,
            damage: vec![],
        }
    }

    #[test]
    fn torn_event_lines_are_dropped_not_invented_and_later_events_survive() {
        let tmp = tempfile::tempdir().unwrap();
        let store = RunStore::open(tmp.path()).unwrap();
        store.create(&meta("run-1-a")).unwrap();
        store
            .append_event("run-1-a", &serde_json::json!({"seq": 1}))
            .unwrap();
        store
            .append_event("run-1-a", &serde_json::json!({"seq": 2}))
            .unwrap();
        let path = store.run_dir("run-1-a").join("events.jsonl");
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(b"{\"seq\": 3, \"pha\n{\"seq\": 3}\n{\"seq\": 9}\n{\"seq\": 4}")
            .unwrap();
        let runs = store.load_all().unwrap();
        let seqs: Vec<u64> = runs[0]
            .events
            .iter()
            .map(|e| e["seq"].as_u64().unwrap())
            .collect();
        assert_eq!(seqs, [1, 2, 3, 4]);
        assert_eq!(runs[0].dropped_lines, 2);
        assert!(runs[0].damage[0].contains("2 torn"), "{:?}", runs[0].damage);
    }

    #[test]
    fn empty_and_torn_json_files_are_damage_not_a_hidden_run() {
        let tmp = tempfile::tempdir().unwrap();
        let store = RunStore::open(tmp.path()).unwrap();
        store.create(&meta("run-5-a")).unwrap();
        std::fs::write(store.run_dir("run-5-a").join("result.json"), b"").unwrap();
        std::fs::create_dir_all(store.run_dir("run-7-b")).unwrap();
        std::fs::write(
            store.run_dir("run-7-b").join("meta.json"),
            b"{\"id\": \"run-7",
        )
        .unwrap();
        std::fs::write(store.run_dir("run-7-b").join(".meta.json.1.2.tmp"), b"{}").unwrap();
        std::fs::create_dir_all(store.run_dir("run-9-c")).unwrap();
        let runs = store.load_all().unwrap();
        assert_eq!(
            runs.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(),
            ["run-5-a", "run-7-b", "run-9-c"]
        );
        assert!(runs[0].meta.is_some() && runs[0].result.is_none());
        assert!(
            runs[0].damage[0].starts_with("result.json empty or cut short"),
            "{:?}",
            runs[0].damage
        );
        assert!(runs[1].meta.is_none() && !runs[1].empty);
        assert!(
            runs[1].damage[0].starts_with("meta.json empty or cut short"),
            "{:?}",
            runs[1].damage
        );
        assert!(
            !store.run_dir("run-7-b").join(".meta.json.1.2.tmp").exists(),
            "stale temp files are removed"
        );
        assert!(
            runs[2].empty,
            "a directory with nothing written was never accepted"
        );
        assert!(
            !runs.iter().any(|r| r
                .damage
                .iter()
                .any(|d| d.contains(&tmp.path().display().to_string()))),
            "damage notes hold no paths"
        );
    }

    #[test]
    fn a_second_store_on_one_directory_is_refused_until_the_first_releases() {
        let tmp = tempfile::tempdir().unwrap();
        let first = RunStore::open(tmp.path()).unwrap();
        let err = RunStore::open(tmp.path()).err().expect("the lock is held");
        let message = err.to_string();
        assert!(matches!(err, StoreError::Locked { .. }), "{message}");
        assert!(
            message.contains(&format!("pid {}", std::process::id()))
                && message.contains("--runs-dir"),
            "{message}"
        );
        first.release_lock();
        RunStore::open(tmp.path()).expect("free after release");
    }

    #[test]
    fn durable_replace_leaves_no_temp_files_and_a_failed_append_leaves_no_torn_line() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("x.json");
        DiskIo.replace(&p, b"1").unwrap();
        DiskIo.replace(&p, b"22").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"22");
        let names: Vec<String> = std::fs::read_dir(tmp.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["x.json"]);
        // Replacing a path that is a directory fails with a typed error and cleans its temp file.
        std::fs::create_dir(tmp.path().join("d")).unwrap();
        assert!(DiskIo.replace(&tmp.path().join("d"), b"1").is_err());
        assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 2);
    }
}
