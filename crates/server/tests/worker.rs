//! The supervised run worker: a panic outside `execute` (injected on the worker thread after the runtime
//! returned, before the result is stored) neither kills the worker nor leaves `running` set, and the
//! panicked run is finished exactly once.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::http::StatusCode;
use common::*;
use forge_server::jobs::WorkerFault;
use pretty_assertions::assert_eq;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_panic_outside_execute_is_survived_and_the_next_runs_execute() {
    let faults_left = Arc::new(AtomicUsize::new(1));
    let left = faults_left.clone();
    let fault = WorkerFault(Arc::new(move |_id: &str| {
        if left
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok()
        {
            panic!("injected worker fault");
        }
    }));
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join(".runs");
    let h = harness(Options {
        worker_fault: Some(fault),
        runs_dir: Some(dir.clone()),
        ..Default::default()
    });
    let happy = json!({ "policy": "scripted:fixtures/happy.json" });
    // Queued behind the run that will panic: only a surviving worker ever runs them.
    let first = start_run(&h.router, happy.clone()).await;
    let second = start_run(&h.router, happy.clone()).await;
    let third = start_run(
        &h.router,
        json!({ "policy": "scripted:fixtures/policy_runtime_error.json" }),
    )
    .await;

    let s = wait_terminal(&h.router, &first).await;
    assert_eq!(faults_left.load(Ordering::SeqCst), 0, "the fault fired");
    // The runtime had saved run.finished before the panic: the run keeps its real outcome, once.
    assert_eq!(s["status"], "completed", "{s}");
    assert_eq!(s["result"]["recovered_from"], "run.finished");
    let events = s["events"].as_array().unwrap();
    assert_contiguous(events);
    assert_eq!(
        events
            .iter()
            .filter(|e| e["phase"] == "run.finished")
            .count(),
        1
    );

    assert_eq!(
        wait_terminal(&h.router, &second).await["status"],
        "completed"
    );
    let t = wait_terminal(&h.router, &third).await;
    assert_eq!(
        (t["status"].as_str(), t["result"]["stop_reason"].as_str()),
        (Some("failed"), Some("runtime_error"))
    );
    // `running` is reset right after a run's end is stored.
    let router = &h.router;
    eventually(
        std::time::Duration::from_secs(30),
        "running is reset",
        || async move {
            let status = send(router, get("/status")).await;
            assert_eq!(status.status, StatusCode::OK);
            if status.json()["queue"]["running"].is_null() {
                Ok(())
            } else {
                Err(status.text())
            }
        },
    )
    .await;

    // The panicked run's files agree with what was served: a restart finds nothing to repair.
    let served = s["result"].clone();
    drop(h);
    let again = harness(Options {
        runs_dir: Some(dir),
        ..Default::default()
    });
    assert!(
        again.service.recovery.interrupted.is_empty()
            && again.service.recovery.completed_from_disk.is_empty(),
        "{:?}",
        again.service.recovery
    );
    assert_eq!(snapshot(&again.router, &first, 0).await["result"], served);
}
