//! The supervised worker thread: takes the next queued run, executes it through the `Executor` (events
//! saved before they are shown; the first unsaved one stops the run), and ends it through
//! `publish_finished` — also after a panic, so the queue never stalls behind a dead worker.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::Value;

use runtime::StopReason;

use super::finish::{Ending, result_from_finished, seal_values};
use super::{Jobs, RunSpec, now_ms};
use crate::redact::redacted;
use crate::store::RunState;

impl Jobs {
    /// The supervised worker: each iteration (take a run, execute it, store its end) runs under
    /// `catch_unwind`. Whatever panics, `running` is reset, the run is finished or sealed exactly once, and
    /// the worker goes on with the next run — a panic never leaves the queue stuck behind a dead worker.
    pub(super) fn worker_loop(&self) {
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
                let picked = (
                    id.clone(),
                    run.meta.clone(),
                    run.spec.clone(),
                    run.cancel.clone(),
                );
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
            result_from_finished(id, &run.events, &run.meta.request)
        };
        if let Some(result) = recovered {
            if let Err(e) = self.publish_finished(
                id,
                Ending {
                    event: None,
                    result,
                },
            ) {
                eprintln!("forge-server: {}", e.message);
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
                let gate = self
                    .lock()
                    .runs
                    .get(id)
                    .map(|r| r.gate.clone())
                    .unwrap_or_default();
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
                // The runtime contract says every run ends with run.finished; if one did not, say so.
                let missing_finish = {
                    let st = self.lock();
                    let Some(run) = st.runs.get(id) else { return };
                    let finished = run
                        .events
                        .last()
                        .and_then(|e| e.get("phase"))
                        .and_then(Value::as_str)
                        == Some("run.finished");
                    (!finished && run.result.is_none()).then(|| {
                        let stop = result
                            .get("stop_reason")
                            .cloned()
                            .and_then(|v| serde_json::from_value::<StopReason>(v).ok())
                            .unwrap_or(StopReason::RuntimeError);
                        let reason = Some((
                            "missing_run_finished",
                            "the runtime returned without a run.finished event".into(),
                        ));
                        seal_values(&run.meta, &run.events, stop, reason).0
                    })
                };
                if let Err(e) = self.publish_finished(
                    id,
                    Ending {
                        event: missing_finish,
                        result,
                    },
                ) {
                    eprintln!("forge-server: {}", e.message);
                }
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
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_default()
}
