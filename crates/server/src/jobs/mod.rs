//! Runs: a bounded queue, one worker thread (one model, one run at a time), per-run state and cancellation.
//!
//! Every event is durably written to `.runs/<id>/events.jsonl` before pollers can see it; an event that
//! cannot be written stops the run (`failed/runtime_error`, reason `store_write_failed`) instead of being
//! shown. A run finishes in a fixed order — events (ending with `run.finished`), `result.json`, `meta.json`
//! — so recovery can tell a finished run with stale meta (completed from its result or its `run.finished`,
//! never sealed twice) from one the process left unfinished (sealed `failed/runtime_error`, reason
//! `interrupted`). Nothing silently lost, nothing duplicated. No HTTP here.
//!
//! Store I/O never happens under the jobs mutex: a write is prepared under the lock, done without it, and
//! its outcome published under the lock again, so polling and `/status` never wait for a disk.
//!
//! Here: the queue and the API over it. `worker` runs the runs, `finish` is the one way a run ends
//! (`publish_finished`), `recovery` makes runs found on disk at start-up whole.

mod finish;
mod recovery;
mod worker;

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use crate::error::ApiError;
use crate::redact::redacted;
use crate::run_bridge::{Executor, RunSpec};
use crate::store::{RunMeta, RunState, RunStore, StoreError, is_valid_run_id};
use finish::index_artifacts;
use recovery::recover;
use runtime::StopReason;

/// Tests only: called on the worker thread after a run's executor has returned and before its result is
/// stored, with the run id. A panic here is a panic outside `execute`, which the worker's supervisor must
/// survive. Production never sets it.
#[derive(Clone)]
pub struct WorkerFault(pub Arc<dyn Fn(&str) + Send + Sync>);

impl std::fmt::Debug for WorkerFault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WorkerFault(..)")
    }
}

#[derive(Debug, Clone)]
pub struct JobsConfig {
    /// Runs waiting behind the running one; one more is refused with 429.
    pub queue_capacity: usize,
    /// Terminal runs kept on disk and in memory; older ones are deleted.
    pub retention: usize,
    /// Absolute directories shown relative in anything served (project root, runs dir).
    pub redact_roots: Vec<String>,
    /// Fault injection for the supervisor's tests (None in production).
    pub worker_fault: Option<WorkerFault>,
}

impl Default for JobsConfig {
    fn default() -> Self {
        Self {
            queue_capacity: 8,
            retention: 200,
            redact_roots: Vec::new(),
            worker_fault: None,
        }
    }
}

struct Run {
    meta: RunMeta,
    spec: Option<RunSpec>,
    events: Vec<Value>,
    result: Option<Value>,
    cancel: Arc<AtomicBool>,
    /// Taken off the queue and being sealed by a cancel or a shutdown (the writes run outside the lock).
    sealing: bool,
    /// Held while one of the run's events is appended; `true` once the exit seal closed the run, after
    /// which the runtime's late events (a model load that ignored the shutdown) are dropped, never
    /// appended after `run.finished`.
    gate: Arc<Mutex<bool>>,
}

#[derive(Default)]
struct State {
    runs: HashMap<String, Run>,
    /// Creation order (oldest first).
    order: Vec<String>,
    queue: VecDeque<String>,
    running: Option<String>,
    /// Accepted runs whose directory is being created (outside the lock); they count against the queue.
    reserved: usize,
    /// artifact id → (run id, file name inside the run's artifacts/).
    artifacts: HashMap<String, (String, String)>,
    shutdown: bool,
}

struct Shared {
    state: Mutex<State>,
    /// The worker thread, joined by `close`.
    worker: Mutex<Option<std::thread::JoinHandle<()>>>,
    wake: Condvar,
    /// Set once the service shuts down, before the running run's cancel flag: the runtime then ends it
    /// `cancelled/shutdown` rather than as a user's cancel.
    shutting_down: Arc<AtomicBool>,
    store: RunStore,
    executor: Arc<dyn Executor>,
    config: JobsConfig,
}

/// Handle to the job system; cheap to clone.
#[derive(Clone)]
pub struct Jobs {
    shared: Arc<Shared>,
}

/// What start-up found on disk.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct RecoveryReport {
    pub loaded: usize,
    /// Runs the process left unfinished, sealed `failed/runtime_error` reason `interrupted`.
    pub interrupted: Vec<String>,
    /// Runs that had finished (result.json or `run.finished` on disk) whose meta.json was stale; their
    /// meta (and result) were completed from what they had written, without a second `run.finished`.
    pub completed_from_disk: Vec<String>,
    /// Runs with damaged files, shown with their damage: (run id, what was wrong and repaired).
    pub damaged: Vec<(String, Vec<String>)>,
    /// Directories with nothing written (a crash inside `submit`, never accepted), removed.
    pub discarded: Vec<String>,
    pub torn_event_lines: usize,
}

pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

fn new_run_id(created_ms: u64) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let mut h = blake3::Hasher::new();
    h.update(&created_ms.to_le_bytes());
    h.update(&n.to_le_bytes());
    h.update(&std::process::id().to_le_bytes());
    h.update(
        &SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0)
            .to_le_bytes(),
    );
    format!("run-{created_ms}-{}", &h.finalize().to_hex()[..8])
}

impl Jobs {
    /// Open the store, reload history, complete or seal unfinished runs and start the worker thread.
    pub fn start(
        store: RunStore,
        executor: Arc<dyn Executor>,
        config: JobsConfig,
    ) -> Result<(Jobs, RecoveryReport), ApiError> {
        let loaded = store
            .load_all()
            .map_err(|e| store_error(&e, &config.redact_roots))?;
        let mut state = State::default();
        let mut report = RecoveryReport::default();
        for found in loaded {
            if found.empty {
                let _ = store.remove(&found.id);
                report.discarded.push(found.id);
                continue;
            }
            report.loaded += 1;
            let mut run = recover(&store, found, &mut report);
            let id = run.meta.id.clone();
            if let Some(result) = &run.result {
                index_artifacts(&mut state.artifacts, &id, result);
            }
            run.meta.damage.sort();
            run.meta.damage.dedup();
            state.order.push(id.clone());
            state.runs.insert(id, run);
        }
        let shared = Arc::new(Shared {
            state: Mutex::new(state),
            worker: Mutex::new(None),
            wake: Condvar::new(),
            shutting_down: Arc::new(AtomicBool::new(false)),
            store,
            executor,
            config,
        });
        let jobs = Jobs { shared };
        jobs.prune();
        let worker = jobs.clone();
        let handle = std::thread::Builder::new()
            .name("forge-run-worker".into())
            .spawn(move || worker.worker_loop())
            .map_err(|e| ApiError::internal(format!("cannot start the run worker: {e}")))?;
        *jobs.shared.worker.lock().unwrap_or_else(|p| p.into_inner()) = Some(handle);
        Ok((jobs, report))
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock is caught in the worker; the state stays consistent enough to serve.
        self.shared.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn queue_capacity(&self) -> usize {
        self.shared.config.queue_capacity
    }

    pub fn queue_len(&self) -> usize {
        self.lock().queue.len()
    }

    pub fn running(&self) -> Option<String> {
        self.lock().running.clone()
    }

    /// Accept a run (status `queued`) or refuse with 429 when the queue is full. Blocking (creates the run's
    /// directory); the slot is reserved under the lock and the directory created outside it.
    pub fn submit(&self, spec: RunSpec, public_request: Value) -> Result<Value, ApiError> {
        let shutting_down = || ApiError::new(503, "shutting_down", "the runner is shutting down");
        {
            let mut st = self.lock();
            if st.shutdown {
                return Err(shutting_down());
            }
            let waiting = st.queue.len() + st.reserved;
            if waiting >= self.shared.config.queue_capacity {
                return Err(ApiError::new(
                    429,
                    "queue_full",
                    format!(
                        "{waiting} runs are already waiting (capacity {}); retry when one finishes",
                        self.shared.config.queue_capacity
                    ),
                ));
            }
            st.reserved += 1;
        }
        let created = now_ms();
        let id = new_run_id(created);
        let meta = RunMeta {
            id: id.clone(),
            status: RunState::Queued,
            created_at_ms: created,
            started_at_ms: None,
            finished_at_ms: None,
            request: public_request,
            damage: Vec::new(),
        };
        let written = self.shared.store.create(&meta);
        let mut st = self.lock();
        st.reserved -= 1;
        written.map_err(|e| self.store_error(&e))?;
        if st.shutdown {
            // Shutdown began while the directory was written: the run was never accepted, so it goes.
            drop(st);
            let _ = self.shared.store.remove(&id);
            return Err(shutting_down());
        }
        st.order.push(id.clone());
        st.runs.insert(
            id.clone(),
            Run {
                meta,
                spec: Some(spec),
                events: Vec::new(),
                result: None,
                cancel: Arc::new(AtomicBool::new(false)),
                sealing: false,
                gate: Arc::default(),
            },
        );
        st.queue.push_back(id.clone());
        let position = st.queue.len();
        drop(st);
        self.shared.wake.notify_all();
        Ok(json!({ "id": id, "status": "queued", "queue_position": position }))
    }

    fn get_run<'a>(st: &'a State, id: &str) -> Result<&'a Run, ApiError> {
        if !is_valid_run_id(id) {
            return Err(ApiError::not_found(
                "run_not_found",
                format!("no run with id {id:?}"),
            ));
        }
        st.runs
            .get(id)
            .ok_or_else(|| ApiError::not_found("run_not_found", format!("no run with id {id:?}")))
    }

    /// Status, events with `seq > after_seq`, and the result once terminal.
    pub fn snapshot(&self, id: &str, after_seq: u64) -> Result<Value, ApiError> {
        let st = self.lock();
        let run = Self::get_run(&st, id)?;
        let start = usize::try_from(after_seq)
            .unwrap_or(usize::MAX)
            .min(run.events.len());
        let events: Vec<Value> = run.events[start..].to_vec();
        let queue_position = st.queue.iter().position(|q| q == id).map(|p| p + 1);
        Ok(json!({
            "id": run.meta.id,
            "status": run.meta.status,
            "created_at_ms": run.meta.created_at_ms,
            "started_at_ms": run.meta.started_at_ms,
            "finished_at_ms": run.meta.finished_at_ms,
            "request": run.meta.request,
            "queue_position": queue_position,
            "after_seq": after_seq,
            "last_seq": run.events.len(),
            "events": events,
            "terminal": run.result.is_some(),
            "result": run.result,
            "damage": run.meta.damage,
        }))
    }

    /// Recent runs, newest first.
    pub fn list(&self, limit: usize) -> Value {
        let st = self.lock();
        let runs: Vec<Value> = st
            .order
            .iter()
            .rev()
            .take(limit)
            .filter_map(|id| st.runs.get(id))
            .map(|r| {
                json!({
                    "id": r.meta.id,
                    "status": r.meta.status,
                    "stop_reason": r.result.as_ref().and_then(|x| x.get("stop_reason")).cloned(),
                    "task": r.meta.request.get("task").cloned(),
                    "mode": r.meta.request.get("mode").cloned(),
                    "model": r.meta.request.get("model").and_then(|m| m.get("name")).cloned(),
                    "policy": r.meta.request.get("policy").cloned(),
                    "created_at_ms": r.meta.created_at_ms,
                    "finished_at_ms": r.meta.finished_at_ms,
                    "events": r.events.len(),
                    "damaged": !r.meta.damage.is_empty(),
                })
            })
            .collect();
        json!({ "runs": runs, "total": st.order.len(), "queue_length": st.queue.len(), "running": st.running })
    }

    /// Cancel: a queued run is sealed at once; a running run is asked to stop and returns its own result.
    /// Blocking (a queued run's seal is written before the answer).
    pub fn cancel(&self, id: &str) -> Result<Value, ApiError> {
        let mut st = self.lock();
        let status = Self::get_run(&st, id)?.meta.status;
        match status {
            RunState::Queued => {
                let cancelled = json!({ "id": id, "status": "cancelled", "cancelled": "queued" });
                let run = st.runs.get_mut(id).expect("checked above");
                if run.sealing {
                    return Ok(cancelled);
                }
                run.sealing = true;
                st.queue.retain(|q| q != id);
                drop(st);
                self.seal(id, StopReason::Cancelled, None)?;
                Ok(cancelled)
            }
            RunState::Running => {
                let run = st.runs.get(id).expect("checked above");
                run.cancel.store(true, Ordering::SeqCst);
                Ok(json!({ "id": id, "status": "running", "cancelled": "requested" }))
            }
            terminal => Err(ApiError::new(
                409,
                "run_finished",
                format!("run {id} is already {terminal}; nothing to cancel"),
            )),
        }
    }

    /// A store failure as the API shows it: 503 `store_unavailable`, absolute paths redacted.
    fn store_error(&self, e: &StoreError) -> ApiError {
        store_error(e, &self.shared.config.redact_roots)
    }

    /// The full export: run metadata, every event, the result; redacted again on the way out.
    pub fn trace(&self, id: &str) -> Result<Value, ApiError> {
        let st = self.lock();
        let run = Self::get_run(&st, id)?;
        // Copied under the lock, redacted (the slow part) after it.
        let export = json!({
            "format": "forge.trace.v1",
            "id": run.meta.id,
            "status": run.meta.status,
            "created_at_ms": run.meta.created_at_ms,
            "started_at_ms": run.meta.started_at_ms,
            "finished_at_ms": run.meta.finished_at_ms,
            "request": run.meta.request,
            "events": run.events,
            "result": run.result,
            "damage": run.meta.damage,
        });
        drop(st);
        Ok(redacted(export, &self.shared.config.redact_roots))
    }

    /// The file of an artifact id that a known run produced. Ids are looked up, never joined as paths.
    pub fn artifact(&self, artifact_id: &str) -> Result<(PathBuf, String), ApiError> {
        let st = self.lock();
        let (run_id, file_name) = st.artifacts.get(artifact_id).ok_or_else(|| {
            ApiError::not_found(
                "artifact_not_found",
                format!("no artifact with id {artifact_id:?}"),
            )
        })?;
        Ok((
            self.shared.store.artifact_dir(run_id).join(file_name),
            run_id.clone(),
        ))
    }

    /// Stop taking work (new runs get 503 `shutting_down`); the running run is cancelled with stop reason
    /// `shutdown` and seals itself through the runtime; every queued run, which never started, is sealed
    /// `cancelled/shutdown` here (not left for the next start-up to call `interrupted`). Idempotent.
    /// Blocking (store writes): call it off the async workers.
    pub fn shutdown(&self) {
        let mut st = self.lock();
        st.shutdown = true;
        // Before the cancel flag, so the runtime never sees a cancel without knowing it is a shutdown.
        self.shared.shutting_down.store(true, Ordering::SeqCst);
        if let Some(run) = st.running.clone().and_then(|id| st.runs.get(&id)) {
            run.cancel.store(true, Ordering::SeqCst);
        }
        let queued: Vec<String> = st.queue.drain(..).collect();
        for id in &queued {
            if let Some(run) = st.runs.get_mut(id) {
                run.sealing = true;
            }
        }
        drop(st);
        self.shared.wake.notify_all();
        for id in queued {
            if let Err(e) = self.seal(&id, StopReason::Shutdown, None) {
                eprintln!(
                    "forge-server: sealing queued run {id} at shutdown: {}",
                    e.message
                );
            }
        }
    }

    /// The exit path for a run that did not stop in time (a model load has no cancellation point): seal
    /// it `cancelled/shutdown` now, closing its gate first so nothing the worker writes later lands after
    /// `run.finished`, and the worker's own finishing writes find the run finished and do nothing. Returns
    /// the run sealed. Blocking (store writes).
    pub fn seal_running_for_exit(&self) -> Option<String> {
        let (id, gate) = {
            let st = self.lock();
            let id = st.running.clone()?;
            let gate = st.runs.get(&id)?.gate.clone();
            (id, gate)
        };
        let mut closed = gate.lock().unwrap_or_else(|p| p.into_inner());
        *closed = true;
        if let Err(e) = self.seal(&id, StopReason::Shutdown, None) {
            eprintln!("forge-server: sealing run {id} at exit: {}", e.message);
        }
        Some(id)
    }

    /// Whether the worker thread has ended (after `shutdown`, once its current run has sealed itself).
    pub fn worker_finished(&self) -> bool {
        self.shared
            .worker
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
            .is_none_or(|h| h.is_finished())
    }

    /// Shut down, join the worker (after its current run has sealed itself) and release `.runs/.lock`, so a
    /// successor may open the directory. Idempotent.
    pub fn close(&self) {
        self.shutdown();
        let handle = self
            .shared
            .worker
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(h) = handle {
            let _ = h.join();
        }
        self.shared.store.release_lock();
    }

    /// Keep at most `retention` terminal runs; the oldest go first. Chosen under the lock, their files
    /// deleted outside it, then dropped from memory (so a run gone from the list is gone from disk).
    fn prune(&self) {
        let chosen: Vec<String> = {
            let st = self.lock();
            let terminal: Vec<&String> = st
                .order
                .iter()
                .filter(|id| st.runs.get(*id).is_some_and(|r| r.result.is_some()))
                .collect();
            let excess = terminal.len().saturating_sub(self.shared.config.retention);
            terminal.into_iter().take(excess).cloned().collect()
        };
        if chosen.is_empty() {
            return;
        }
        for id in &chosen {
            if let Err(e) = self.shared.store.remove(id) {
                eprintln!("forge-server: retention: {e}");
            }
        }
        let mut st = self.lock();
        for id in &chosen {
            st.runs.remove(id);
            st.order.retain(|o| o != id);
            st.artifacts.retain(|_, (run, _)| run != id);
        }
    }
}

fn store_error(e: &StoreError, roots: &[String]) -> ApiError {
    let message = redacted(Value::String(e.to_string()), roots)
        .as_str()
        .unwrap_or_default()
        .to_string();
    ApiError::new(503, "store_unavailable", message)
}
