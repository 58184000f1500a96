//! The run store under crashes and disk errors: a crash injected before every single store write (with the
//! interrupted write torn), restart on what the crash left, and real and simulated disk failures.

mod common;

use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use axum::http::StatusCode;
use common::*;
use forge_server::store::{DiskIo, StoreIo};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

fn happy() -> Value {
    json!({ "policy": "scripted:fixtures/happy.json" })
}

/// The real disk, except that the process "dies" at write number `crash_at` (0-based): that write is
/// torn (half an appended line; a half-written temp file for a replace) and every later write is lost.
struct CrashAt {
    crash_at: usize,
    writes: AtomicUsize,
}

impl CrashAt {
    fn new(crash_at: usize) -> Arc<Self> {
        Arc::new(Self {
            crash_at,
            writes: AtomicUsize::new(0),
        })
    }
    /// Ok(true) when this write may happen; Ok(false) when it is the torn one; Err when the process is gone.
    fn next(&self) -> std::io::Result<bool> {
        let n = self.writes.fetch_add(1, Ordering::SeqCst);
        match n.cmp(&self.crash_at) {
            std::cmp::Ordering::Less => Ok(true),
            std::cmp::Ordering::Equal => Ok(false),
            std::cmp::Ordering::Greater => Err(std::io::Error::other(
                "simulated crash: the process is gone",
            )),
        }
    }
}

impl StoreIo for CrashAt {
    fn replace(&self, path: &Path, bytes: &[u8]) -> std::io::Result<()> {
        if self.next()? {
            return DiskIo.replace(path, bytes);
        }
        let name = path.file_name().unwrap().to_string_lossy();
        std::fs::write(
            path.with_file_name(format!(".{name}.999.0.tmp")),
            &bytes[..bytes.len() / 2],
        )?;
        Err(std::io::Error::other("simulated crash during a replace"))
    }
    fn append(&self, path: &Path, bytes: &[u8]) -> std::io::Result<()> {
        if self.next()? {
            return DiskIo.append(path, bytes);
        }
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)?
            .write_all(&bytes[..bytes.len() / 2])?;
        Err(std::io::Error::other("simulated crash during an append"))
    }
    fn create_dir(&self, path: &Path) -> std::io::Result<()> {
        if self.next()? {
            return DiskIo.create_dir(path);
        }
        Err(std::io::Error::other("simulated crash during mkdir"))
    }
}

/// The real disk that counts its writes.
#[derive(Default)]
struct Counting(AtomicUsize);

impl StoreIo for Counting {
    fn replace(&self, path: &Path, bytes: &[u8]) -> std::io::Result<()> {
        self.0.fetch_add(1, Ordering::SeqCst);
        DiskIo.replace(path, bytes)
    }
    fn append(&self, path: &Path, bytes: &[u8]) -> std::io::Result<()> {
        self.0.fetch_add(1, Ordering::SeqCst);
        DiskIo.append(path, bytes)
    }
    fn create_dir(&self, path: &Path) -> std::io::Result<()> {
        self.0.fetch_add(1, Ordering::SeqCst);
        DiskIo.create_dir(path)
    }
}

/// The real disk until `full` is set; then every write fails like a full disk (ENOSPC) after writing nothing.
#[derive(Default)]
struct FillingDisk {
    /// Writes allowed before the disk fills by itself (usize::MAX: only `full` fills it).
    allowed: AtomicUsize,
    full: AtomicBool,
}

impl FillingDisk {
    fn check(&self) -> std::io::Result<()> {
        let left = self.allowed.load(Ordering::SeqCst);
        if left == 0 {
            self.full.store(true, Ordering::SeqCst);
        } else if left != usize::MAX {
            self.allowed.store(left - 1, Ordering::SeqCst);
        }
        if self.full.load(Ordering::SeqCst) {
            Err(std::io::Error::from_raw_os_error(28))
        } else {
            Ok(())
        }
    }
}

impl StoreIo for FillingDisk {
    fn replace(&self, path: &Path, bytes: &[u8]) -> std::io::Result<()> {
        self.check()?;
        DiskIo.replace(path, bytes)
    }
    fn append(&self, path: &Path, bytes: &[u8]) -> std::io::Result<()> {
        self.check()?;
        DiskIo.append(path, bytes)
    }
    fn create_dir(&self, path: &Path) -> std::io::Result<()> {
        self.check()?;
        DiskIo.create_dir(path)
    }
}

/// Metrics without their latencies (`*_ms`), which differ from run to run.
fn without_timings(metrics: &Value) -> Value {
    let mut m = metrics.clone();
    if let Some(map) = m.as_object_mut() {
        map.retain(|k, _| !k.ends_with("_ms"));
    }
    m
}

fn finished_count(events: &[Value]) -> usize {
    events
        .iter()
        .filter(|e| e["phase"] == "run.finished")
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_crash_point_recovers_without_losing_or_duplicating_run_finished() {
    // The uninterrupted run: how many store writes it makes, and what it ends with.
    let counting = Arc::new(Counting::default());
    let (total, reference) = {
        let h = harness(Options {
            store_io: Some(counting.clone()),
            ..Default::default()
        });
        let id = start_run(&h.router, happy()).await;
        let s = wait_terminal(&h.router, &id).await;
        h.service.state.jobs.close();
        (counting.0.load(Ordering::SeqCst), s)
    };
    let n_events = reference["events"].as_array().unwrap().len();
    assert_eq!(reference["status"], "completed");
    // mkdir + meta(queued) + meta(running) + one append per event + result + meta(final).
    assert_eq!(
        total,
        n_events + 5,
        "the store's write sequence changed; update this test's model of it"
    );
    let finished_write = total - 3; // the runtime's run.finished append (0-based write index)

    for crash_at in 0..=total {
        let tmp = tempfile::tempdir().unwrap();
        let live = tmp.path().join("live");
        let accepted = {
            let h = harness(Options {
                runs_dir: Some(live.clone()),
                store_io: Some(CrashAt::new(crash_at)),
                ..Default::default()
            });
            let r = send(&h.router, post_json("/agent/runs", &happy())).await;
            let id = if r.status == StatusCode::ACCEPTED {
                let id = r.json()["id"].as_str().unwrap().to_string();
                wait_terminal(&h.router, &id).await;
                Some(id)
            } else {
                assert_eq!(
                    (r.status, r.code()),
                    (StatusCode::SERVICE_UNAVAILABLE, "store_unavailable".into()),
                    "crash at {crash_at}"
                );
                assert!(
                    crash_at < 2,
                    "only the two submit writes can refuse the request (crash at {crash_at})"
                );
                None
            };
            // What is on disk now is what a kill -9 at this point would have left.
            copy_as_crashed(&live, &tmp.path().join("after"));
            id
        };
        let h = harness(Options {
            runs_dir: Some(tmp.path().join("after")),
            ..Default::default()
        });
        let rec = h.service.recovery.clone();
        let Some(id) = accepted else {
            assert_eq!(
                rec.loaded, 0,
                "crash at {crash_at}: a run that was never accepted does not appear"
            );
            assert_eq!(send(&h.router, get("/agent/runs")).await.json()["total"], 0);
            continue;
        };
        let s = snapshot(&h.router, &id, 0).await;
        let events = s["events"].as_array().unwrap();
        assert_contiguous(events);
        assert_eq!(
            finished_count(events),
            1,
            "crash at {crash_at}: exactly one run.finished: {s}"
        );
        if crash_at > finished_write {
            // The run finished before the crash: its real outcome survives, whatever meta.json said.
            assert_eq!(s["status"], "completed", "crash at {crash_at}: {s}");
            assert_eq!(s["result"]["stop_reason"], "completed");
            assert_eq!(
                s["result"]["final_answer"],
                reference["result"]["final_answer"]
            );
            assert_eq!(
                without_timings(&s["result"]["metrics"]),
                without_timings(&reference["result"]["metrics"]),
                "crash at {crash_at}"
            );
            assert_eq!(
                events.len(),
                n_events,
                "crash at {crash_at}: no event added"
            );
            assert!(rec.interrupted.is_empty(), "crash at {crash_at}: {rec:?}");
            assert_eq!(
                rec.completed_from_disk.contains(&id),
                crash_at < total,
                "crash at {crash_at}: {rec:?}"
            );
        } else {
            assert_eq!(
                (s["status"].as_str(), s["result"]["reason"].as_str()),
                (Some("failed"), Some("interrupted")),
                "crash at {crash_at}: {s}"
            );
            assert_eq!(rec.interrupted, vec![id.clone()], "crash at {crash_at}");
            // Every event written before the crash is kept, the torn one is not.
            assert_eq!(
                events.len(),
                crash_at.saturating_sub(3).min(n_events) + 1,
                "crash at {crash_at}"
            );
        }
        // A second restart finds a whole run and changes nothing.
        let dir = tmp.path().join("after");
        drop(h);
        let again = harness(Options {
            runs_dir: Some(dir),
            ..Default::default()
        });
        assert!(
            again.service.recovery.interrupted.is_empty()
                && again.service.recovery.completed_from_disk.is_empty(),
            "crash at {crash_at}: {:?}",
            again.service.recovery
        );
        assert_eq!(
            snapshot(&again.router, &id, 0).await["events"],
            s["events"],
            "crash at {crash_at}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_stops_the_run_with_runtime_error_and_the_service_stays_up() {
    let disk = Arc::new(FillingDisk {
        allowed: AtomicUsize::new(5),
        full: AtomicBool::new(false),
    });
    let h = harness(Options {
        store_io: Some(disk.clone()),
        ..Default::default()
    });
    let id = start_run(&h.router, happy()).await;
    let s = wait_terminal(&h.router, &id).await;
    // Writes 0-2 are mkdir and two metas; events 1 and 2 were saved; event 3 hit the full disk.
    assert_eq!(
        (s["status"].as_str(), s["result"]["stop_reason"].as_str()),
        (Some("failed"), Some("runtime_error")),
        "{s}"
    );
    assert_eq!(s["result"]["error"]["code"], "store_write_failed");
    let message = s["result"]["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("No space left on device")
            && !message.contains(&h.runs.path().display().to_string()),
        "{message}"
    );
    let events = s["events"].as_array().unwrap();
    assert_contiguous(events);
    assert_eq!(
        events.len(),
        3,
        "two saved events and the seal; nothing unsaved in between: {s}"
    );
    assert_eq!(
        s["result"]["persisted"], false,
        "the seal itself could not be saved, and says so"
    );
    let on_disk =
        std::fs::read_to_string(h.runs.path().join(".runs").join(&id).join("events.jsonl"))
            .unwrap();
    assert_eq!(
        on_disk.lines().count(),
        2,
        "no torn or unsaved line on disk"
    );

    // The service stays up: status answers, a new run is refused with a typed error while the disk is full ...
    assert_eq!(send(&h.router, get("/status")).await.status, StatusCode::OK);
    let r = send(&h.router, post_json("/agent/runs", &happy())).await;
    assert_eq!(
        (r.status, r.code()),
        (StatusCode::SERVICE_UNAVAILABLE, "store_unavailable".into())
    );
    // ... and works again once space is freed.
    disk.allowed.store(usize::MAX, Ordering::SeqCst);
    disk.full.store(false, Ordering::SeqCst);
    let next = start_run(&h.router, happy()).await;
    assert_eq!(wait_terminal(&h.router, &next).await["status"], "completed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_where_a_directory_should_be_is_a_typed_error_and_the_service_stays_up() {
    // Mid-run: events.jsonl becomes a directory while the run is held in `running`.
    let h = harness(Options {
        hold: true,
        ..Default::default()
    });
    let id = start_run(&h.router, json!({})).await;
    wait_status(&h.router, &id, "running").await;
    let run_dir = h.runs.path().join(".runs").join(&id);
    // The hold policy blocks in its first decision (events are saved, then shown).
    let (router, run) = (&h.router, id.as_str());
    // Its last event before blocking is model.started: once that is shown, no event comes until release.
    let saved = eventually(
        std::time::Duration::from_secs(30),
        "model.started is shown",
        || async move {
            let snap = snapshot(router, run, 0).await;
            let events = snap["events"].as_array().unwrap();
            match events.last() {
                Some(e) if e["phase"] == "model.started" => Ok(events.len()),
                _ => Err(snap.to_string()),
            }
        },
    )
    .await;
    std::fs::remove_file(run_dir.join("events.jsonl")).unwrap();
    std::fs::create_dir(run_dir.join("events.jsonl")).unwrap();
    h.release.store(true, Ordering::SeqCst);
    let s = wait_terminal(&h.router, &id).await;
    assert_eq!(
        (s["status"].as_str(), s["result"]["stop_reason"].as_str()),
        (Some("failed"), Some("runtime_error")),
        "{s}"
    );
    assert_eq!(s["result"]["error"]["code"], "store_write_failed", "{s}");
    assert_eq!(
        s["events"].as_array().unwrap().len(),
        saved + 1,
        "only the seal follows the saved events: {s}"
    );

    // Submit: the runs directory itself replaced by a file.
    let runs = h.runs.path().join(".runs");
    std::fs::rename(&runs, h.runs.path().join("moved")).unwrap();
    std::fs::write(&runs, b"not a directory").unwrap();
    let r = send(&h.router, post_json("/agent/runs", &json!({}))).await;
    assert_eq!(
        (r.status, r.code()),
        (StatusCode::SERVICE_UNAVAILABLE, "store_unavailable".into()),
        "{}",
        r.text()
    );
    assert!(
        r.json()["message"]
            .as_str()
            .unwrap()
            .contains("Not a directory"),
        "{}",
        r.text()
    );
    assert!(
        !r.text().contains(&h.runs.path().display().to_string()),
        "absolute path leaked: {}",
        r.text()
    );
    assert_eq!(send(&h.router, get("/status")).await.status, StatusCode::OK);
    assert_eq!(
        send(&h.router, get(&format!("/agent/runs/{id}")))
            .await
            .status,
        StatusCode::OK,
        "history is still served"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn empty_or_torn_files_never_hide_a_run() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join(".runs");
    // A finished run, then damage: (a) result.json zero-length, (b) meta.json zero-length, (c) meta.json torn.
    let mut ids = Vec::new();
    {
        let h = harness(Options {
            runs_dir: Some(dir.clone()),
            ..Default::default()
        });
        for _ in 0..3 {
            let id = start_run(&h.router, happy()).await;
            assert_eq!(wait_terminal(&h.router, &id).await["status"], "completed");
            ids.push(id);
        }
    }
    std::fs::write(dir.join(&ids[0]).join("result.json"), b"").unwrap();
    std::fs::write(dir.join(&ids[1]).join("meta.json"), b"").unwrap();
    std::fs::write(dir.join(&ids[2]).join("meta.json"), b"{\"id\": \"run-").unwrap();
    let h = harness(Options {
        runs_dir: Some(dir.clone()),
        ..Default::default()
    });
    assert_eq!(h.service.recovery.loaded, 3);
    assert!(
        h.service.recovery.interrupted.is_empty(),
        "{:?}",
        h.service.recovery
    );
    let list = send(&h.router, get("/agent/runs")).await.json();
    assert_eq!(list["total"], 3, "{list}");
    for (id, file) in ids.iter().zip(["result.json", "meta.json", "meta.json"]) {
        let s = snapshot(&h.router, id, 0).await;
        assert_eq!(s["status"], "completed", "{id}: {s}");
        assert_eq!(finished_count(s["events"].as_array().unwrap()), 1);
        let damage = s["damage"].as_array().unwrap();
        assert!(
            damage.iter().any(|d| d
                .as_str()
                .unwrap()
                .starts_with(&format!("{file} empty or cut short"))),
            "{id}: {damage:?}"
        );
    }
    // Repaired on disk: the next start finds nothing to do, and the damage stays visible.
    drop(h);
    let h = harness(Options {
        runs_dir: Some(dir.clone()),
        ..Default::default()
    });
    assert!(
        h.service.recovery.damaged.is_empty() && h.service.recovery.completed_from_disk.is_empty(),
        "{:?}",
        h.service.recovery
    );
    assert!(
        !snapshot(&h.router, &ids[0], 0).await["damage"]
            .as_array()
            .unwrap()
            .is_empty()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_server_on_the_same_runs_directory_refuses_to_start() {
    let h = harness(Options::default());
    let mut config = forge_server::ServerConfig::new(project_root());
    config.runs_dir = h.runs.path().join(".runs");
    let provider = Arc::new(forge_server::UnavailableProvider {
        reason: "test".into(),
    });
    let err = forge_server::Service::start(config.clone(), provider.clone())
        .err()
        .expect("the second server is refused");
    assert_eq!(err.code, "runs_dir_locked");
    assert!(
        err.message.contains("another runner") && err.message.contains("--runs-dir"),
        "{}",
        err.message
    );
    // The first one is untouched and still serves.
    let id = start_run(&h.router, happy()).await;
    assert_eq!(wait_terminal(&h.router, &id).await["status"], "completed");
    // Once it has closed, the directory is free.
    h.service.state.jobs.close();
    let second =
        forge_server::Service::start(config, provider).expect("free after the first closed");
    second.state.jobs.close();
}

/// A disk that refuses `result.json` while `refuse` is set (every other write goes through).
struct NoResultDisk {
    refuse: AtomicBool,
}

impl StoreIo for NoResultDisk {
    fn replace(&self, path: &Path, bytes: &[u8]) -> std::io::Result<()> {
        if self.refuse.load(Ordering::SeqCst)
            && path.file_name().is_some_and(|n| n == "result.json")
        {
            return Err(std::io::Error::from_raw_os_error(28));
        }
        DiskIo.replace(path, bytes)
    }
    fn append(&self, path: &Path, bytes: &[u8]) -> std::io::Result<()> {
        DiskIo.append(path, bytes)
    }
    fn create_dir(&self, path: &Path) -> std::io::Result<()> {
        DiskIo.create_dir(path)
    }
}

/// Every run ends through one path (`publish_finished`), in the store's order: when `result.json` cannot
/// be written, `meta.json` is not marked finished either — so the next start-up completes the run from its
/// saved `run.finished` (its real outcome), instead of finding a finished meta with no result behind it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_result_the_disk_refused_leaves_meta_unfinished_and_the_next_start_completes_the_run() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join(".runs");
    let disk = Arc::new(NoResultDisk {
        refuse: AtomicBool::new(true),
    });
    let id = {
        let h = harness(Options {
            runs_dir: Some(dir.clone()),
            store_io: Some(disk.clone()),
            ..Default::default()
        });
        let id = start_run(&h.router, happy()).await;
        let s = wait_terminal(&h.router, &id).await;
        assert_eq!(
            s["status"], "completed",
            "memory shows the real outcome: {s}"
        );
        assert_eq!(
            s["result"]["persisted"], false,
            "and says it was not saved: {s}"
        );
        let meta: Value = serde_json::from_str(
            &std::fs::read_to_string(dir.join(&id).join("meta.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(
            meta["status"], "running",
            "meta is not finished before its result is saved"
        );
        assert!(!dir.join(&id).join("result.json").exists());
        id
    };
    disk.refuse.store(false, Ordering::SeqCst);
    let h = harness(Options {
        runs_dir: Some(dir),
        ..Default::default()
    });
    assert_eq!(h.service.recovery.completed_from_disk, vec![id.clone()]);
    assert!(h.service.recovery.interrupted.is_empty());
    let s = snapshot(&h.router, &id, 0).await;
    assert_eq!(
        (s["status"].as_str(), s["result"]["stop_reason"].as_str()),
        (Some("completed"), Some("completed")),
        "{s}"
    );
    assert_eq!(finished_count(s["events"].as_array().unwrap()), 1);
}
