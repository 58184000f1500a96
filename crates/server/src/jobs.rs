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

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use crate::engine::{Executor, RunSpec};
use crate::error::ApiError;
use crate::redact::redacted;
use crate::store::{LoadedRun, RunMeta, RunState, RunStore, StoreError, is_valid_run_id};
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

    /// Seal a run the runtime did not finish, in the store's order: event, result, meta. The writes run
    /// outside the jobs lock and memory is updated after them, so no poller sees an unsaved seal; memory is
    /// updated even when the disk refuses (the run must not stay unfinished forever), the result then
    /// saying so with `persisted: false`, and the first store error is returned.
    fn seal(
        &self,
        id: &str,
        stop: StopReason,
        error: Option<(&str, String)>,
    ) -> Result<(), ApiError> {
        let (mut meta, event, mut result) = {
            let st = self.lock();
            let Some(run) = st.runs.get(id) else {
                return Ok(());
            };
            if run.result.is_some() {
                return Ok(());
            }
            let (event, result) =
                seal_values(&run.meta, &run.events, stop, error);
            (run.meta.clone(), event, result)
        };
        let store = &self.shared.store;
        let written = store
            .append_event(id, &event)
            .and_then(|()| store.write_result(id, &result))
            .map_err(|e| self.store_error(&e));
        if let Err(e) = &written {
            result["persisted"] = json!(false);
            result["store_error"] = json!(e.message);
        }
        meta.status = stop.status().into();
        meta.finished_at_ms = Some(now_ms());
        let meta_written = match &written {
            Ok(()) => store.write_meta(&meta).map_err(|e| self.store_error(&e)),
            Err(_) => Ok(()),
        };
        if let Some(run) = self.lock().runs.get_mut(id) {
            run.events.push(event);
            run.result = Some(result);
            run.meta.status = meta.status;
            run.meta.finished_at_ms = meta.finished_at_ms;
            run.sealing = false;
        }
        written.and(meta_written)
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
                eprintln!("forge-server: sealing queued run {id} at shutdown: {}", e.message);
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

    /// The supervised worker: each iteration (take a run, execute it, store its end) runs under
    /// `catch_unwind`. Whatever panics, `running` is reset, the run is finished or sealed exactly once, and
    /// the worker goes on with the next run — a panic never leaves the queue stuck behind a dead worker.
    fn worker_loop(&self) {
        loop {
            let mut current: Option<String> = None;
            let iteration = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                let Some((id, spec, cancel)) = self.next_run() else {
                    return false;
                };
                current = Some(id.clone());
                self.execute_one(&id, spec, cancel);
                true
            }));
            let running = self.lock().running.take();
            match iteration {
                Ok(false) => return,
                Ok(true) => {}
                Err(panic) => {
                    let message = panic_message(&*panic);
                    eprintln!(
                        "forge-server: the run worker panicked ({message}); it goes on with the next run"
                    );
                    if let Some(id) = current.or(running) {
                        let end = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                            self.finish_after_panic(&id, &message)
                        }));
                        if end.is_err() {
                            eprintln!(
                                "forge-server: sealing {id} after a worker panic panicked too; the next start-up seals it"
                            );
                        }
                    }
                }
            }
            if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.prune())).is_err() {
                eprintln!(
                    "forge-server: retention pruning panicked; it is retried after the next run"
                );
            }
        }
    }

    /// Wait for the next queued run and mark it running (its meta written outside the lock); None once
    /// shutting down.
    fn next_run(&self) -> Option<(String, Option<RunSpec>, Arc<AtomicBool>)> {
        let mut st = self.lock();
        let (id, meta, spec, cancel) = loop {
            if st.shutdown {
                return None;
            }
            if let Some(id) = st.queue.pop_front() {
                let run = st.runs.get_mut(&id).expect("queued runs exist");
                run.meta.status = RunState::Running;
                run.meta.started_at_ms = Some(now_ms());
                let picked = (id.clone(), run.meta.clone(), run.spec.clone(), run.cancel.clone());
                st.running = Some(id);
                break picked;
            }
            st = self.shared.wake.wait(st).unwrap_or_else(|p| p.into_inner());
        };
        drop(st);
        if let Err(e) = self.shared.store.write_meta(&meta) {
            // Not fatal: recovery treats a run without result as interrupted either way.
            eprintln!("forge-server: {e}");
        }
        Some((id, spec, cancel))
    }

    /// After a worker panic: a run that already has its result is left alone; one whose `run.finished` is
    /// saved gets its result from that event (never a second `run.finished`); any other is sealed
    /// `failed/runtime_error` with reason `worker_panicked`.
    fn finish_after_panic(&self, id: &str, message: &str) {
        let recovered = {
            let st = self.lock();
            let Some(run) = st.runs.get(id) else { return };
            if run.result.is_some() {
                return;
            }
            result_from_finished(id, &run.events, &run.meta.request).map(|result| (result, run.meta.clone()))
        };
        let store = &self.shared.store;
        if let Some((result, mut meta)) = recovered {
            meta.status = RunState::of_result(&result);
            meta.finished_at_ms = Some(now_ms());
            if let Err(e) = store.write_result(id, &result) {
                eprintln!("forge-server: {e}");
            }
            if let Err(e) = store.write_meta(&meta) {
                eprintln!("forge-server: {e}");
            }
            let mut st = self.lock();
            let State {
                runs, artifacts, ..
            } = &mut *st;
            if let Some(run) = runs.get_mut(id) {
                index_artifacts(artifacts, id, &result);
                run.result = Some(result);
                run.meta.status = meta.status;
                run.meta.finished_at_ms = meta.finished_at_ms;
            }
        } else {
            let message = redacted(
                Value::String(format!("the run worker panicked: {message}")),
                &self.shared.config.redact_roots,
            );
            let reason = Some((
                "worker_panicked",
                message.as_str().unwrap_or_default().to_string(),
            ));
            if let Err(e) = self.seal(id, StopReason::RuntimeError, reason) {
                eprintln!("forge-server: {}", e.message);
            }
        }
    }

    fn execute_one(&self, id: &str, spec: Option<RunSpec>, cancel: Arc<AtomicBool>) {
        let store = &self.shared.store;
        let roots = &self.shared.config.redact_roots;
        let artifact_dir = store.artifact_dir(id);
        let outcome = match spec {
            None => Err((
                "runtime_error".to_string(),
                "the run has no specification".to_string(),
            )),
            Some(spec) => {
                // The first event that cannot be written stops the run: it is not shown, no later event is
                // written or shown, and the run is asked to stop at its next check.
                let mut store_failure: Option<String> = None;
                let stop = cancel.clone();
                let gate = self.lock().runs.get(id).map(|r| r.gate.clone()).unwrap_or_default();
                let mut sink = |event: Value| {
                    if store_failure.is_some() {
                        return;
                    }
                    let closed = gate.lock().unwrap_or_else(|p| p.into_inner());
                    if *closed {
                        return;
                    }
                    let event = redacted(event, roots);
                    match store.append_event(id, &event) {
                        Ok(()) => {
                            if let Some(run) = self.lock().runs.get_mut(id) {
                                run.events.push(event);
                            }
                        }
                        Err(e) => {
                            store_failure = Some(self.store_error(&e).message);
                            stop.store(true, Ordering::SeqCst);
                        }
                    }
                };
                let executor = self.shared.executor.clone();
                let shutting_down = self.shared.shutting_down.clone();
                let call = std::panic::AssertUnwindSafe(|| {
                    executor.execute(id, &spec, &artifact_dir, cancel, shutting_down, &mut sink)
                });
                let outcome = match std::panic::catch_unwind(call) {
                    Ok(Ok(result)) => Ok(result),
                    Ok(Err(e)) => Err((e.code.to_string(), e.message)),
                    Err(panic) => Err((
                        "runtime_error".into(),
                        format!("the run worker panicked: {}", panic_message(&*panic)),
                    )),
                };
                if let Some(fault) = &self.shared.config.worker_fault {
                    (fault.0)(id);
                }
                match store_failure {
                    Some(message) => Err((
                        "store_write_failed".into(),
                        format!("an event could not be saved, so the run was stopped: {message}"),
                    )),
                    None => outcome,
                }
            }
        };
        match outcome {
            Ok(result) => {
                let result = redacted(result, roots);
                let status = RunState::of_result(&result);
                // Prepared under the lock; written without it (only this worker writes a running run).
                let (mut meta, missing_finish) = {
                    let st = self.lock();
                    let Some(run) = st.runs.get(id) else { return };
                    if run.result.is_some() {
                        return;
                    }
                    let finished = run
                        .events
                        .last()
                        .and_then(|e| e.get("phase"))
                        .and_then(Value::as_str)
                        == Some("run.finished");
                    // The runtime contract says every run ends with run.finished; if one did not, say so.
                    let missing = (!finished).then(|| {
                        let stop = result
                            .get("stop_reason")
                            .cloned()
                            .and_then(|v| serde_json::from_value::<StopReason>(v).ok())
                            .unwrap_or(StopReason::RuntimeError);
                        seal_values(
                            &run.meta,
                            &run.events,
                            stop,
                            Some((
                                "missing_run_finished",
                                "the runtime returned without a run.finished event".into(),
                            )),
                        )
                        .0
                    });
                    (run.meta.clone(), missing)
                };
                if let Some(event) = &missing_finish {
                    let _ = store
                        .append_event(id, event)
                        .map_err(|e| eprintln!("forge-server: {e}"));
                }
                // result.json before meta.json: recovery completes a stale meta from a complete result.
                let mut result = result;
                if let Err(e) = store.write_result(id, &result) {
                    eprintln!("forge-server: {e}");
                    result["persisted"] = json!(false);
                    result["store_error"] = json!(self.store_error(&e).message);
                }
                meta.status = status;
                meta.finished_at_ms = Some(now_ms());
                if let Err(e) = store.write_meta(&meta) {
                    eprintln!("forge-server: {e}");
                }
                let mut st = self.lock();
                let State {
                    runs, artifacts, ..
                } = &mut *st;
                let Some(run) = runs.get_mut(id) else { return };
                run.events.extend(missing_finish);
                index_artifacts(artifacts, id, &result);
                run.result = Some(result);
                run.meta.status = meta.status;
                run.meta.finished_at_ms = meta.finished_at_ms;
            }
            Err((code, message)) => {
                let message = redacted(Value::String(message), roots)
                    .as_str()
                    .unwrap_or_default()
                    .to_string();
                let reason = Some((code.as_str(), message));
                if let Err(e) = self.seal(id, StopReason::RuntimeError, reason) {
                    eprintln!("forge-server: {e}");
                }
            }
        }
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

/// The result of a run whose `run.finished` event is saved but whose result.json is not: the event's data
/// is the runtime's own result (minus the observations), so the run keeps its real outcome.
fn result_from_finished(id: &str, events: &[Value], request: &Value) -> Option<Value> {
    // Any `run.finished`, not only a last one: a run that has one is finished and never gets another.
    let finished = events
        .iter()
        .rev()
        .find(|e| e.get("phase").and_then(Value::as_str) == Some("run.finished"))?;
    let mut result = finished.get("data").cloned().filter(Value::is_object)?;
    result["run_id"] = json!(id);
    result["events"] = json!(events.len());
    result["recovered_from"] = json!("run.finished");
    // The event does not carry the model identity; the accepted request does (as the result would).
    if result.get("model").is_none_or(Value::is_null) {
        result["model"] = request.get("model").cloned().unwrap_or(Value::Null);
    }
    Some(result)
}

/// "could not repair <file>: <OS reason>" — the reason without the absolute path.
fn repair_note(what: &str, e: &StoreError) -> String {
    let reason = match e {
        StoreError::Io { source, .. } => source.to_string(),
        other => other.to_string(),
    };
    format!("could not repair {what}: {reason}")
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_default()
}

/// One reloaded run made whole, writing in the store's order (events, result, meta):
/// - a complete result.json: the run finished; a stale meta is completed from it;
/// - no usable result but `run.finished` on disk: the run finished; its result is rebuilt from that event;
/// - neither: the process stopped mid-run; it is sealed `failed/runtime_error` reason `interrupted`.
///
/// Write failures here are noted as damage, never fatal: the service starts and shows the run.
fn recover(store: &RunStore, found: LoadedRun, report: &mut RecoveryReport) -> Run {
    let LoadedRun {
        id,
        meta,
        mut events,
        result,
        dropped_lines,
        mut damage,
        ..
    } = found;
    report.torn_event_lines += dropped_lines;
    let meta_lost = meta.is_none();
    let mut meta = meta.unwrap_or_else(|| RunStore::placeholder_meta(&id));
    let repair_failed =
        |what: &str, e: StoreError, damage: &mut Vec<String>| damage.push(repair_note(what, &e));
    if dropped_lines > 0
        && let Err(e) = store.rewrite_events(&id, &events)
    {
        repair_failed("events.jsonl", e, &mut damage);
    }
    let mut meta_stale = meta_lost;
    let result = if let Some(result) = result {
        let status = RunState::of_result(&result);
        if meta.status != status || meta.finished_at_ms.is_none() {
            meta.status = status;
            meta_stale = true;
            report.completed_from_disk.push(id.clone());
        }
        result
    } else if let Some(result) = result_from_finished(&id, &events, &meta.request) {
        if let Err(e) = store.write_result(&id, &result) {
            repair_failed("result.json", e, &mut damage);
        }
        meta.status = RunState::of_result(&result);
        meta_stale = true;
        report.completed_from_disk.push(id.clone());
        result
    } else {
        let was = meta.status;
        let message = format!(
            "the runner process stopped while this run was {was}; it was sealed at the next start-up"
        );
        let (event, result) = seal_values(
            &meta,
            &events,
            StopReason::RuntimeError,
            Some(("interrupted", message)),
        );
        if let Err(e) = store
            .append_event(&id, &event)
            .and_then(|()| store.write_result(&id, &result))
        {
            repair_failed("the seal", e, &mut damage);
        }
        events.push(event);
        meta.status = RunState::Failed;
        meta_stale = true;
        report.interrupted.push(id.clone());
        result
    };
    if !damage.is_empty() {
        report.damaged.push((id.clone(), damage.clone()));
        meta.damage.extend(damage);
        meta_stale = true;
    }
    if meta_stale {
        meta.finished_at_ms = meta.finished_at_ms.or(Some(now_ms()));
        if let Err(e) = store.write_meta(&meta) {
            meta.damage.push(repair_note("meta.json", &e));
        }
    }
    Run {
        meta,
        spec: None,
        events,
        result: Some(result),
        cancel: Arc::new(AtomicBool::new(false)),
        sealing: false,
        gate: Arc::default(),
    }
}

/// Artifacts named by a result; file names must be plain names inside the run's artifacts/ folder.
fn index_artifacts(index: &mut HashMap<String, (String, String)>, run_id: &str, result: &Value) {
    let Some(list) = result.get("artifacts").and_then(Value::as_array) else {
        return;
    };
    for a in list {
        let (Some(aid), Some(file)) = (
            a.get("id").and_then(Value::as_str),
            a.get("file_name").and_then(Value::as_str),
        ) else {
            continue;
        };
        let plain = |s: &str| {
            !s.is_empty()
                && s.len() <= 128
                && s != "."
                && s != ".."
                && s.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
        };
        if plain(aid) && plain(file) && !file.starts_with('.') {
            index.insert(aid.to_string(), (run_id.to_string(), file.to_string()));
        }
    }
}

/// A budget snapshot with nothing used yet, for a run the runtime never started (the request's budgets,
/// the runtime's defaults for what it does not name).
fn unused_budget(budgets: &Value) -> runtime::BudgetSnapshot {
    let b: runtime::Budgets = serde_json::from_value(budgets.clone()).unwrap_or_default();
    runtime::BudgetSnapshot {
        max_steps: b.max_steps,
        max_tool_calls: b.max_tool_calls,
        wall_clock_ms: b.wall_clock_s * 1000,
        max_input_tokens: b.max_input_tokens,
        max_output_tokens: b.max_output_tokens,
        ..Default::default()
    }
}

/// The `run.finished` data and the result of a run the server seals itself: the runtime's `RunResult`
/// fields such a run can have, with the runtime's types; what it cannot have is null or empty.
#[derive(serde::Serialize)]
struct Sealed<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    run_id: Option<&'a str>,
    status: runtime::RunStatus,
    stop_reason: StopReason,
    final_answer: Option<String>,
    evidence_ids: Vec<String>,
    metrics: Option<runtime::Metrics>,
    artifacts: Vec<runtime::ArtifactRecord>,
    steps: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    events: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    sealed_by: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<runtime::RunError>,
    /// No answer was accepted, so nothing was verified (absent, as in every run without an answer).
    #[serde(skip_serializing_if = "Option::is_none")]
    verification: Option<runtime::claims::Verification>,
}

/// The `run.finished` event and result the service writes itself when the runtime never ran the run
/// (cancelled while queued) or could not finish it (interrupted, failed to start). Metrics are null. The
/// pair comes from the runtime's table: the status is the stop reason's own (`StopReason::status`); the
/// event is a `runtime::TraceEvent` continuing the run's last one.
fn seal_values(
    meta: &RunMeta,
    events: &[Value],
    stop: StopReason,
    error: Option<(&str, String)>,
) -> (Value, Value) {
    let last: Option<runtime::TraceEvent> = events
        .last()
        .and_then(|e| serde_json::from_value(e.clone()).ok());
    let seq = events.len() as u64 + 1;
    let step = last.as_ref().map_or(0, |e| e.step);
    let error = error.map(|(code, message)| runtime::RunError {
        code: code.to_string(),
        message,
    });
    let sealed = |run_id, events, sealed_by| Sealed {
        run_id,
        status: stop.status(),
        stop_reason: stop,
        final_answer: None,
        evidence_ids: Vec::new(),
        metrics: None,
        artifacts: Vec::new(),
        steps: step,
        events,
        sealed_by,
        reason: error.as_ref().map(|e| e.code.clone()),
        error: error.clone(),
        verification: None,
    };
    let event = runtime::TraceEvent {
        seq,
        step,
        attempt: 0,
        phase: "run.finished".into(),
        elapsed_ms: last.as_ref().map_or(0, |e| e.elapsed_ms),
        data: to_value(&sealed(None, None, Some("server"))),
        observation_count: last.as_ref().map_or(0, |e| e.observation_count),
        budget: last
            .map(|e| e.budget)
            .unwrap_or_else(|| unused_budget(&meta.request["budgets"])),
    };
    let result = to_value(&sealed(Some(meta.id.as_str()), Some(seq), None));
    (to_value(&event), result)
}

/// Serialising the sealed values cannot fail (plain data, string keys); `Null` would show if it did.
fn to_value(v: &impl serde::Serialize) -> Value {
    serde_json::to_value(v).unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 23, item 7: a result recovered from `run.finished` keeps the model identity of the request,
    /// and a `run.finished` that is not the last event still counts (no second one is appended).
    #[test]
    fn a_result_recovered_from_run_finished_keeps_the_model_and_finds_any_run_finished() {
        let request = json!({ "task": "t", "model": { "name": "m", "sha256": "ab" } });
        let events = vec![
            json!({ "seq": 1, "phase": "run.started", "data": {} }),
            json!({ "seq": 2, "phase": "run.finished", "data": { "status": "completed", "stop_reason": "completed" } }),
            json!({ "seq": 3, "phase": "note", "data": {} }),
        ];
        let r = result_from_finished("run-1", &events, &request).expect("finished");
        assert_eq!(r["model"], request["model"]);
        assert_eq!(r["status"], "completed");
        assert!(result_from_finished("run-1", &events[..1], &request).is_none());
    }
}
