//! HTTP tests for tasks and models as resources: `GET /agent/tasks` (broken folders listed with their error,
//! folders added while serving), `GET /agent/models` (fetch manifests in a real directory), the run
//! request's `task` default and `model` choice, and the model identity every run record carries.

mod common;

use axum::http::StatusCode;
use common::*;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

/// A tasks directory with two good folders, one without ground truth, and three broken ones.
fn task_tree() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    copy_task(d, "agent_eval_mini");
    copy_task(d, "clinic_wait_times");
    std::fs::remove_file(d.join("clinic_wait_times/expected.json")).unwrap();
    // Sorts first and does not load: the default must skip it.
    std::fs::create_dir(d.join("aaa_not_json")).unwrap();
    std::fs::write(d.join("aaa_not_json/task.json"), "{ \"format_version\": 1,").unwrap();
    copy_task(d, "wheat_plot_yield");
    let task = d.join("wheat_plot_yield/task.json");
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&task).unwrap()).unwrap();
    v["knowledge_files"] = json!(["no_such_file.md"]);
    std::fs::write(&task, v.to_string()).unwrap();
    std::fs::write(
        d.join("wheat_plot_yield/expected.json"),
        "{\"format_version\": 7}",
    )
    .unwrap();
    std::fs::create_dir(d.join("empty_folder")).unwrap();
    std::fs::write(d.join("README.md"), "not a task\n").unwrap();
    tmp
}

fn names(list: &Value) -> Vec<String> {
    list["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect()
}

fn task<'a>(list: &'a Value, name: &str) -> &'a Value {
    list["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("{name} not listed: {list}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_are_listed_with_text_knowledge_ground_truth_and_broken_folders_with_their_error() {
    let tree = task_tree();
    let h = harness(Options {
        tasks_dir: Some(tree.path().to_path_buf()),
        ..Default::default()
    });
    let r = send(&h.router, get("/agent/tasks")).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text());
    let list = r.json();
    assert_eq!(
        names(&list),
        vec![
            "aaa_not_json",
            "agent_eval_mini",
            "clinic_wait_times",
            "empty_folder",
            "wheat_plot_yield"
        ]
    );
    assert_eq!(
        list["default_task"], "agent_eval_mini",
        "the first folder that loads, in sorted order"
    );

    let good = task(&list, "agent_eval_mini");
    assert_eq!(good["status"], "ok");
    assert_eq!(good["error"], Value::Null);
    assert_eq!(good["title"], "AgentEval Mini release check");
    assert!(good["text"].as_str().unwrap().starts_with("Decide whether"));
    assert_eq!(good["ground_truth"], json!({"status": "loaded"}));
    let k = &good["knowledge"][0];
    assert_eq!(k["file"], "agent_eval_mini.md");
    let on_disk =
        std::fs::read_to_string(project_root().join("knowledge/agent_eval_mini.md")).unwrap();
    assert_eq!(k["bytes"], on_disk.len());
    assert!(
        on_disk.starts_with(k["preview"].as_str().unwrap()),
        "the preview is the file's beginning"
    );

    let no_truth = task(&list, "clinic_wait_times");
    assert_eq!(no_truth["status"], "ok");
    assert_eq!(no_truth["ground_truth"]["status"], "unavailable");
    assert_eq!(no_truth["ground_truth"]["reason"], "missing");

    let not_json = task(&list, "aaa_not_json");
    assert_eq!(not_json["status"], "invalid");
    assert!(
        not_json["error"]
            .as_str()
            .unwrap()
            .contains("is not a valid task file"),
        "{not_json}"
    );
    let bad_knowledge = task(&list, "wheat_plot_yield");
    assert_eq!(bad_knowledge["status"], "invalid");
    assert!(
        bad_knowledge["error"]
            .as_str()
            .unwrap()
            .contains("no_such_file.md"),
        "{bad_knowledge}"
    );
    assert_eq!(bad_knowledge["ground_truth"]["reason"], "invalid");
    assert!(
        task(&list, "empty_folder")["error"]
            .as_str()
            .unwrap()
            .contains("cannot read")
    );

    // Nothing absolute leaks (the temp directory, the project root).
    let text = r.text();
    assert!(!text.contains(&tree.path().display().to_string()), "{text}");
    assert!(!text.contains(&project_root().display().to_string()));

    // The status endpoint names the same default.
    assert_eq!(
        send(&h.router, get("/status")).await.json()["default_task"],
        "agent_eval_mini"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_folder_added_while_serving_is_listed_and_runnable_without_a_restart() {
    let tree = task_tree();
    let h = harness(Options {
        tasks_dir: Some(tree.path().to_path_buf()),
        ..Default::default()
    });
    assert!(
        !names(&send(&h.router, get("/agent/tasks")).await.json())
            .contains(&"pit_stop_times".to_string())
    );
    let r = send(
        &h.router,
        post_json("/agent/runs", &json!({ "task": "pit_stop_times" })),
    )
    .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(r.json()["fields"][0]["field"], "task");

    copy_task(tree.path(), "pit_stop_times");
    let list = send(&h.router, get("/agent/tasks")).await.json();
    assert_eq!(task(&list, "pit_stop_times")["status"], "ok");
    let id = start_run(&h.router, json!({ "task": "pit_stop_times" })).await;
    let done = wait_terminal(&h.router, &id).await;
    assert_eq!(done["request"]["task"], "pit_stop_times");
    // No model in this harness: the run reached the runtime with that task and ended model_unavailable.
    assert_eq!(done["result"]["stop_reason"], "model_unavailable");
    assert!(
        done["events"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["phase"] == "run.started" && e["data"]["task"] == "pit_stop_times"),
        "{done}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_task_is_refused_with_its_load_error_and_a_run_without_task_takes_the_default() {
    let tree = task_tree();
    let h = harness(Options {
        tasks_dir: Some(tree.path().to_path_buf()),
        ..Default::default()
    });
    for (name, says) in [
        ("aaa_not_json", "is not a valid task file"),
        ("wheat_plot_yield", "no_such_file.md"),
        ("nope", "no task named"),
    ] {
        let r = send(
            &h.router,
            post_json("/agent/runs", &json!({ "task": name })),
        )
        .await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{name}");
        let f = &r.json()["fields"][0];
        assert_eq!(f["field"], "task");
        assert!(f["message"].as_str().unwrap().contains(says), "{name}: {f}");
    }
    let id = start_run(&h.router, json!({})).await;
    assert_eq!(
        snapshot(&h.router, &id, 0).await["request"]["task"],
        "agent_eval_mini"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_any_loadable_task_a_run_request_is_a_task_field_error() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir(tmp.path().join("broken")).unwrap();
    let h = harness(Options {
        tasks_dir: Some(tmp.path().to_path_buf()),
        ..Default::default()
    });
    let list = send(&h.router, get("/agent/tasks")).await.json();
    assert_eq!(list["default_task"], Value::Null);
    assert_eq!(names(&list), vec!["broken"]);
    let r = send(&h.router, post_json("/agent/runs", &json!({}))).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(r.json()["fields"][0]["field"], "task");
    assert_eq!(
        send(&h.router, get("/status")).await.json()["default_task"],
        Value::Null
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_says_whether_test_policies_are_allowed() {
    for allowed in [false, true] {
        let h = harness(Options {
            test_policies: allowed,
            ..Default::default()
        });
        let v = send(&h.router, get("/status")).await.json();
        assert_eq!(v["test_policies_enabled"], allowed);
        let caps = v["capabilities"].as_array().unwrap();
        assert!(caps.contains(&json!("agent.tasks")) && caps.contains(&json!("agent.models")));
    }
}

fn model_names(v: &Value) -> Vec<&str> {
    v["models"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn models_are_listed_from_fetch_manifests_and_every_run_records_the_chosen_identity() {
    let models = tempfile::tempdir().unwrap();
    write_model(models.path(), "alpha-0.5b", 64);
    write_model(models.path(), "beta-1.5b", 96);
    // A fetch that did not finish: the manifest names more bytes than the file has.
    write_model(models.path(), "gamma-truncated", 32);
    std::fs::write(models.path().join("gamma-truncated.gguf"), b"GGUF").unwrap();
    let h = harness(Options {
        models_dir: Some(models.path().to_path_buf()),
        ..Default::default()
    });
    let r = send(&h.router, get("/agent/models")).await;
    assert_eq!(r.status, StatusCode::OK);
    let listed = r.json();
    assert_eq!(model_names(&listed), vec!["alpha-0.5b", "beta-1.5b"]);
    assert_eq!(listed["default_model"], "alpha-0.5b");
    let beta = &listed["models"][1];
    assert_eq!(beta["file"], "beta-1.5b.gguf");
    assert_eq!(beta["bytes"], 96);
    assert_eq!(beta["fetched_at"], "2026-12-01T10:00:00Z");
    assert_eq!(beta["source"], "models_dir");
    assert!(beta.get("path").is_none(), "no paths in the listing");
    assert!(!r.text().contains(&models.path().display().to_string()));

    for m in listed["models"].as_array().unwrap() {
        let name = m["name"].as_str().unwrap();
        let id = start_run(&h.router, json!({ "model": name })).await;
        let done = wait_terminal(&h.router, &id).await;
        assert_eq!(
            &done["request"]["model"], m,
            "the job record carries the listed identity"
        );
        assert_eq!(
            &done["result"]["model"], m,
            "the result names the model that ran"
        );
        assert_eq!(done["result"]["stop_reason"], "model_unavailable");
        let message = done["result"]["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        assert!(
            message.contains(&format!("{name} has no weights")),
            "the provider was asked for {name}: {done}"
        );
        // Persisted with the run, and shown in the run list.
        let meta: Value = serde_json::from_slice(
            &std::fs::read(h.runs.path().join(".runs").join(&id).join("meta.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(&meta["request"]["model"], m);
        let runs = send(&h.router, get("/agent/runs")).await.json();
        assert_eq!(runs["runs"][0]["model"], name);
    }
    // No model named: the default is recorded.
    let id = start_run(&h.router, json!({})).await;
    assert_eq!(
        snapshot(&h.router, &id, 0).await["request"]["model"]["name"],
        "alpha-0.5b"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_model_is_a_400_field_error_and_nothing_is_queued() {
    let models = tempfile::tempdir().unwrap();
    write_model(models.path(), "alpha-0.5b", 64);
    let h = harness(Options {
        models_dir: Some(models.path().to_path_buf()),
        ..Default::default()
    });
    for bad in [
        json!("nope"),
        json!("alpha-0.5b.gguf"),
        json!("models/alpha-0.5b.gguf"),
        json!(7),
        json!({"name": "alpha-0.5b"}),
    ] {
        let r = send(
            &h.router,
            post_json("/agent/runs", &json!({ "model": bad })),
        )
        .await;
        assert_eq!(
            (r.status, r.code()),
            (StatusCode::BAD_REQUEST, "invalid_request".into()),
            "{bad}"
        );
        let f = &r.json()["fields"][0];
        assert_eq!(f["field"], "model", "{bad}");
    }
    let r = send(
        &h.router,
        post_json("/agent/runs", &json!({ "model": "nope" })),
    )
    .await;
    assert!(
        r.json()["fields"][0]["message"]
            .as_str()
            .unwrap()
            .contains("listed: alpha-0.5b"),
        "{}",
        r.text()
    );
    assert_eq!(send(&h.router, get("/agent/runs")).await.json()["total"], 0);
    // Without a models directory nothing is listed and any name is refused the same way.
    let h = harness(Options::default());
    assert_eq!(
        send(&h.router, get("/agent/models")).await.json()["models"],
        json!([])
    );
    let r = send(
        &h.router,
        post_json("/agent/runs", &json!({ "model": "alpha-0.5b" })),
    )
    .await;
    assert_eq!(r.json()["fields"][0]["field"], "model");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_deleted_after_listing_fails_its_run_model_unavailable_and_the_service_goes_on() {
    let models = tempfile::tempdir().unwrap();
    write_model(models.path(), "alpha-0.5b", 64);
    let beta = write_model(models.path(), "beta-1.5b", 96);
    let h = harness(Options {
        models_dir: Some(models.path().to_path_buf()),
        ..Default::default()
    });
    // A slow scripted run holds the worker so the next run is accepted while its model still exists.
    let first = start_run(
        &h.router,
        json!({ "policy": "scripted:crates/server/tests/fixtures/slow_happy.json" }),
    )
    .await;
    wait_status(&h.router, &first, "running").await;
    let queued = start_run(&h.router, json!({ "model": "beta-1.5b" })).await;
    std::fs::remove_file(&beta).unwrap();
    let done = wait_terminal(&h.router, &queued).await;
    assert_eq!(done["status"], "failed");
    assert_eq!(done["result"]["stop_reason"], "model_unavailable");
    assert!(
        done["result"]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("is gone"),
        "{done}"
    );
    assert_eq!(done["result"]["model"]["name"], "beta-1.5b");
    assert_contiguous(done["events"].as_array().unwrap());
    // The service goes on: the listing drops the model and the other one still runs.
    assert_eq!(
        wait_terminal(&h.router, &first).await["status"],
        "completed"
    );
    assert_eq!(
        model_names(&send(&h.router, get("/agent/models")).await.json()),
        vec!["alpha-0.5b"]
    );
    let again = start_run(&h.router, json!({ "model": "alpha-0.5b" })).await;
    assert_eq!(
        wait_terminal(&h.router, &again).await["result"]["model"]["name"],
        "alpha-0.5b"
    );
    let r = send(
        &h.router,
        post_json("/agent/runs", &json!({ "model": "beta-1.5b" })),
    )
    .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inspect_by_model_name_reads_the_listed_file() {
    let models = tempfile::tempdir().unwrap();
    write_model(models.path(), "alpha-0.5b", 64);
    let h = harness(Options {
        models_dir: Some(models.path().to_path_buf()),
        ..Default::default()
    });
    let r = send(
        &h.router,
        post_json("/models/inspect", &json!({ "model": "alpha-0.5b" })),
    )
    .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text());
    assert_eq!(r.json()["model"]["file_name"], "alpha-0.5b.gguf");
    assert_eq!(r.json()["model"]["bytes"], 64);
    let r = send(
        &h.router,
        post_json("/models/inspect", &json!({ "model": "zeta" })),
    )
    .await;
    assert_eq!(
        (r.status, r.code()),
        (StatusCode::BAD_REQUEST, "invalid_request".into())
    );
    assert_eq!(r.json()["fields"][0]["field"], "model");
    let r = send(
        &h.router,
        post_json(
            "/models/inspect",
            &json!({ "model": "alpha-0.5b", "path": "x.gguf" }),
        ),
    )
    .await;
    assert_eq!(r.json()["fields"][0]["field"], "model");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_source_browser_gives_every_file_under_crates_a_role_and_rust_files_their_own() {
    let h = harness(Options::default());
    let m = send(&h.router, get("/example/manifest")).await.json();
    let files: Vec<&Value> = m["files"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["path"].as_str().unwrap().starts_with("crates/"))
        .collect();
    assert!(files.len() > 50, "{} files under crates/", files.len());
    for f in &files {
        let path = f["path"].as_str().unwrap();
        let role = f["role"].as_str().unwrap_or_default();
        assert!(!role.trim().is_empty(), "{path} has no role");
        if path.ends_with(".rs") {
            // The project rule: a `//!` line opens every Rust file, and that line is what the browser shows.
            assert_eq!(f["role_source"], "file", "{path} has no //! line");
            let text = std::fs::read_to_string(project_root().join(path)).unwrap();
            let first: String = text
                .lines()
                .find_map(|l| l.trim().strip_prefix("//!"))
                .unwrap()
                .trim()
                .chars()
                .take(300)
                .collect();
            assert_eq!(role, first, "{path}");
        }
    }
    let lib = files
        .iter()
        .find(|f| f["path"] == "crates/server/src/tasks.rs")
        .unwrap();
    assert!(
        lib["role"]
            .as_str()
            .unwrap()
            .starts_with("Task folders as a resource"),
        "{lib}"
    );
    // The single-file answer carries the same role.
    let one = send(
        &h.router,
        get("/example/file?path=crates/server/web/app.js"),
    )
    .await
    .json();
    assert_eq!(one["role_source"], "file");
    assert!(
        one["role"]
            .as_str()
            .unwrap()
            .starts_with("Forge runner page"),
        "{one}"
    );
}
