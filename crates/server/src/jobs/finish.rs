//! How a run ends: the one path that writes a run's ending in the store's order and publishes it
//! (`publish_finished`), the seal the service writes for a run the runtime did not finish (`seal_values`),
//! the result rebuilt from a saved `run.finished`, and the artifact index a result feeds.

use std::collections::HashMap;

use serde_json::{Value, json};

use runtime::StopReason;

use super::{Jobs, State, now_ms};
use crate::error::ApiError;
use crate::store::{RunMeta, RunState};

/// What ends a run.
pub(super) struct Ending {
    /// The `run.finished` the service writes itself (a seal, or one the runtime failed to write); `None`
    /// when the runtime's own is saved already.
    pub event: Option<Value>,
    pub result: Value,
}

impl Jobs {
    /// Seal a run the runtime did not finish: the service writes its `run.finished` and result
    /// (`seal_values`) and finishes it like any other run. Returns the first store error.
    pub(super) fn seal(
        &self,
        id: &str,
        stop: StopReason,
        error: Option<(&str, String)>,
    ) -> Result<(), ApiError> {
        let (event, result) = {
            let st = self.lock();
            let Some(run) = st.runs.get(id) else {
                return Ok(());
            };
            if run.result.is_some() {
                return Ok(());
            }
            seal_values(&run.meta, &run.events, stop, error)
        };
        self.publish_finished(
            id,
            Ending {
                event: Some(event),
                result,
            },
        )
    }

    /// Finish a run in the store's order — its last event (when the service writes it), `result.json`,
    /// `meta.json` — then publish it to pollers. The one place a run ends, whoever ends it (the worker, a
    /// cancel, a shutdown, a panic). The writes run outside the jobs lock and memory is updated after them,
    /// so no poller sees an unsaved ending; memory is updated even when the disk refuses (a run must not stay
    /// unfinished forever), the result then saying so with `persisted: false`. `meta.json` is written only
    /// after the result: a run whose result could not be saved keeps a running meta, and the next start-up
    /// completes it from its `run.finished` or seals it. A run that already has its result is left alone.
    /// Returns the first store error.
    pub(super) fn publish_finished(&self, id: &str, ending: Ending) -> Result<(), ApiError> {
        let Ending { event, mut result } = ending;
        let meta = {
            let st = self.lock();
            st.runs
                .get(id)
                .filter(|run| run.result.is_none())
                .map(|run| run.meta.clone())
        };
        let Some(mut meta) = meta else {
            return Ok(());
        };
        let store = &self.shared.store;
        let written = event
            .as_ref()
            .map_or(Ok(()), |event| store.append_event(id, event))
            .and_then(|()| store.write_result(id, &result))
            .map_err(|e| self.store_error(&e));
        if let Err(e) = &written {
            result["persisted"] = json!(false);
            result["store_error"] = json!(e.message);
        }
        meta.status = RunState::of_result(&result);
        meta.finished_at_ms = Some(now_ms());
        let meta_written = match &written {
            Ok(()) => store.write_meta(&meta).map_err(|e| self.store_error(&e)),
            Err(_) => Ok(()),
        };
        let mut st = self.lock();
        let State {
            runs, artifacts, ..
        } = &mut *st;
        if let Some(run) = runs.get_mut(id) {
            run.events.extend(event);
            index_artifacts(artifacts, id, &result);
            run.result = Some(result);
            run.meta.status = meta.status;
            run.meta.finished_at_ms = meta.finished_at_ms;
            run.sealing = false;
        }
        written.and(meta_written)
    }
}

/// The result of a run whose `run.finished` event is saved but whose result.json is not: the event's data
/// is the runtime's own result (minus the observations), so the run keeps its real outcome.
pub(super) fn result_from_finished(id: &str, events: &[Value], request: &Value) -> Option<Value> {
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

/// Artifacts named by a result; file names must be plain names inside the run's artifacts/ folder.
pub(super) fn index_artifacts(
    index: &mut HashMap<String, (String, String)>,
    run_id: &str,
    result: &Value,
) {
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

/// The `run.finished` event and result the service writes itself when the runtime never ran the run
/// (cancelled while queued) or could not finish it (interrupted, failed to start). Metrics are null. Both
/// come from the runtime's constructors: `UnfinishedResult` (the status is the stop reason's own) and
/// `TraceEvent::finishing`, which continues the run's last event.
pub(super) fn seal_values(
    meta: &RunMeta,
    events: &[Value],
    stop: StopReason,
    error: Option<(&str, String)>,
) -> (Value, Value) {
    let last: Option<runtime::TraceEvent> = events
        .last()
        .and_then(|e| serde_json::from_value(e.clone()).ok());
    let step = last.as_ref().map_or(0, |e| e.step);
    let error = error.map(|(code, message)| runtime::RunError {
        code: code.to_string(),
        message,
    });
    let seal = runtime::UnfinishedResult::new(stop, step, error, "server");
    let budgets: runtime::Budgets =
        serde_json::from_value(meta.request["budgets"].clone()).unwrap_or_default();
    let event = runtime::TraceEvent::finishing(
        events.len() as u64,
        last.as_ref(),
        to_value(&seal),
        runtime::BudgetSnapshot::unused(&budgets),
    );
    let result = to_value(&seal.for_run(&meta.id, event.seq));
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
