//! Start-up: each run reloaded from disk made whole — completed from what it wrote, or sealed
//! `interrupted` — with every repair that failed kept as the run's damage, never fatal.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use runtime::StopReason;

use super::finish::{result_from_finished, seal_values};
use super::{RecoveryReport, Run, now_ms};
use crate::store::{LoadedRun, RunState, RunStore, StoreError};

/// One reloaded run made whole, writing in the store's order (events, result, meta):
/// - a complete result.json: the run finished; a stale meta is completed from it;
/// - no usable result but `run.finished` on disk: the run finished; its result is rebuilt from that event;
/// - neither: the process stopped mid-run; it is sealed `failed/runtime_error` reason `interrupted`.
///
/// Write failures here are noted as damage, never fatal: the service starts and shows the run.
pub(super) fn recover(store: &RunStore, found: LoadedRun, report: &mut RecoveryReport) -> Run {
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

/// "could not repair <file>: <OS reason>" — the reason without the absolute path.
fn repair_note(what: &str, e: &StoreError) -> String {
    let reason = match e {
        StoreError::Io { source, .. } => source.to_string(),
        other => other.to_string(),
    };
    format!("could not repair {what}: {reason}")
}
