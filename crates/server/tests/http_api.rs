//! HTTP tests for every endpoint and every refusal of the runner service, through the axum router.
//! Runs use the runtime's scripted fixtures (no model); the hold provider keeps a run in `running`.

mod common;

use std::io::Read;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use common::*;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

fn happy() -> Value {
    json!({ "policy": "scripted:fixtures/happy.json" })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_reports_version_queue_model_and_uptime() {
    let h = harness(Options::default());
    let r = send(&h.router, get("/status")).await;
    assert_eq!(r.status, StatusCode::OK);
    let v = r.json();
    assert_eq!(v["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(v["queue"]["length"], 0);
    assert_eq!(v["queue"]["capacity"], 8);
    assert_eq!(v["model"]["available"], false);
    assert!(v["uptime_s"].is_u64());
    assert!(
        v["capabilities"]
            .as_array()
            .unwrap()
            .contains(&json!("agent"))
    );
    assert_eq!(r.headers[header::CACHE_CONTROL], "no-store");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openapi_document_is_served_and_names_every_route() {
    let h = harness(Options::default());
    let r = send(&h.router, get("/openapi.json")).await;
    assert_eq!(r.status, StatusCode::OK);
    let v = r.json();
    assert!(v["openapi"].as_str().unwrap().starts_with("3."));
    let paths: Vec<&str> = v["paths"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    for p in [
        "/status",
        "/agent/schema",
        "/agent/tasks",
        "/agent/models",
        "/models/inspect",
        "/models/unload",
        "/agent/runs",
        "/agent/runs/{id}",
        "/agent/runs/{id}/cancel",
        "/agent/runs/{id}/trace",
        "/artifacts/{id}",
        "/example/manifest",
        "/example/file",
        "/example/chain",
        "/agent/runs/{id}/follow",
        "/example.zip",
        "/openapi.json",
        "/agent/evaluation",
        "/agent/evaluation/{model}/success.png",
    ] {
        assert!(paths.contains(&p), "openapi.json lacks {p}");
    }
    // The documented budget ranges and defaults are the runtime's.
    let props = &v["components"]["schemas"]["Budgets"]["properties"];
    let defaults = serde_json::to_value(runtime::Budgets::default()).unwrap();
    for (field, min, max) in runtime::Budgets::RANGES {
        assert_eq!(props[field]["minimum"], min, "{field}");
        assert_eq!(props[field]["maximum"], max, "{field}");
        assert_eq!(props[field]["default"], defaults[field], "{field}");
    }
    assert_eq!(
        props.as_object().unwrap().len(),
        runtime::Budgets::RANGES.len()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agent_schema_is_the_runtimes_own() {
    let h = harness(Options::default());
    let v = send(&h.router, get("/agent/schema")).await.json();
    assert_eq!(&v["decision"], runtime::decision::decision_schema());
    assert_eq!(
        &v["tool_registry"],
        runtime::registry::ToolRegistry::builtin().as_json()
    );
    assert_eq!(v["budgets"]["defaults"]["max_steps"], 12);
    assert_eq!(v["budgets"]["defaults"]["max_tool_calls"], 10);
    assert_eq!(v["budgets"]["defaults"]["wall_clock_s"], 300);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn model_inspect_without_a_model_is_model_unavailable_and_unload_is_harmless() {
    let h = harness(Options::default());
    let r = send(&h.router, post_json("/models/inspect", &json!({}))).await;
    assert_eq!(r.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(r.code(), "model_unavailable");
    let r = send(&h.router, post_empty("/models/inspect")).await;
    assert_eq!(r.status, StatusCode::SERVICE_UNAVAILABLE);
    let r = send(&h.router, post_json("/models/inspect", &json!({"path": 7}))).await;
    assert_eq!(
        (r.status, r.code()),
        (StatusCode::BAD_REQUEST, "invalid_request".into())
    );
    let r = send(
        &h.router,
        post_json("/models/inspect", &json!({"model": "x"})),
    )
    .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(r.json()["fields"][0]["field"], "model");
    let r = send(&h.router, post_empty("/models/unload")).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text());
}

/// A provider that records which paths it was asked to inspect (it never opens them).
struct RecordingProvider(std::sync::Mutex<Vec<Option<String>>>);

impl forge_server::ModelProvider for RecordingProvider {
    fn inspect(&self, path: Option<&str>) -> Result<Value, forge_server::ProviderError> {
        self.0.lock().unwrap().push(path.map(str::to_owned));
        Ok(
            json!({ "file_name": path.and_then(|p| std::path::Path::new(p).file_name()).map(|n| n.to_string_lossy().into_owned()) }),
        )
    }
    fn unload(&self) -> Result<Value, forge_server::ProviderError> {
        Ok(json!({}))
    }
    fn cache_state(&self) -> Value {
        json!({})
    }
    fn policy(
        &self,
        _m: forge_server::Mode,
        _t: f32,
    ) -> Result<Box<dyn runtime::policy::Policy>, runtime::policy::PolicyError> {
        Err(runtime::policy::PolicyError::ModelUnavailable(
            "recording provider".into(),
        ))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn model_inspect_reads_only_the_models_directory_and_named_files() {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().canonicalize().unwrap();
    std::fs::create_dir_all(base.join("models")).unwrap();
    std::fs::write(base.join("models/in.gguf"), b"GGUF").unwrap();
    std::fs::write(base.join("named.gguf"), b"GGUF").unwrap();
    std::fs::write(base.join("secret.txt"), b"root:x:0:0").unwrap();
    std::os::unix::fs::symlink(base.join("secret.txt"), base.join("models/link.gguf")).unwrap();
    let mut config = forge_server::ServerConfig::new(project_root());
    config.runs_dir = base.join(".runs");
    config.inspect_scope = forge_server::InspectScope {
        models_dir: base.join("models"),
        files: vec![base.join("named.gguf")],
    };
    let provider = std::sync::Arc::new(RecordingProvider(Default::default()));
    let service = forge_server::Service::start(config, provider.clone()).unwrap();
    let router = service.router();
    let inspect = |p: &str| post_json("/models/inspect", &json!({ "path": p }));

    for allowed in [
        base.join("models/in.gguf"),
        base.join("named.gguf"),
        base.join("models/absent.gguf"),
    ] {
        let r = send(&router, inspect(allowed.to_str().unwrap())).await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.text());
    }
    let r = send(&router, post_json("/models/inspect", &json!({}))).await;
    assert_eq!(
        r.status,
        StatusCode::OK,
        "no path means the configured default model"
    );
    let forbidden = [
        "/etc/passwd".to_string(),
        base.join("secret.txt").display().to_string(),
        base.join("models/../secret.txt").display().to_string(),
        base.join("models/link.gguf").display().to_string(),
        "../../../../../../etc/passwd".to_string(),
        "Cargo.toml".to_string(),
    ];
    for p in &forbidden {
        let r = send(&router, inspect(p)).await;
        assert_eq!(
            (r.status, r.code()),
            (StatusCode::FORBIDDEN, "path_not_allowed".to_string()),
            "{p}: {}",
            r.text()
        );
        assert!(
            r.json()["message"].as_str().unwrap().contains("--gguf"),
            "{}",
            r.text()
        );
        assert!(!r.text().contains("root:x"), "{}", r.text());
    }
    let seen = provider.0.lock().unwrap().clone();
    assert_eq!(
        seen,
        vec![
            Some(base.join("models/in.gguf").display().to_string()),
            Some(base.join("named.gguf").display().to_string()),
            Some(base.join("models/absent.gguf").display().to_string()),
            None,
        ],
        "refused paths never reach the provider"
    );
    service.state.jobs.shutdown();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scripted_happy_run_completes_with_metrics_chart_and_redacted_trace() {
    let h = harness(Options::default());
    let id = start_run(&h.router, happy()).await;
    let done = wait_terminal(&h.router, &id).await;
    assert_eq!(done["status"], "completed");
    let result = &done["result"];
    assert_eq!(result["stop_reason"], "completed");
    assert!(result["final_answer"].as_str().unwrap().contains("79"));
    assert!(result["metrics"].is_object(), "{result}");
    assert_eq!(result["metrics"]["task_success"], true);
    let events = done["events"].as_array().unwrap();
    assert_contiguous(events);
    assert_eq!(done["last_seq"].as_u64().unwrap() as usize, events.len());
    assert_eq!(done["request"]["policy"], "scripted:fixtures/happy.json");

    // The chart: a real PNG served by artifact id.
    let art = result["artifacts"][0]["id"]
        .as_str()
        .expect("an artifact id")
        .to_string();
    let r = send(&h.router, get(&format!("/artifacts/{art}"))).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.headers[header::CONTENT_TYPE], "image/png");
    assert!(r.bytes.starts_with(b"\x89PNG\r\n\x1a\n"));
    assert_eq!(
        r.bytes.len() as u64,
        result["artifacts"][0]["bytes"].as_u64().unwrap()
    );

    // Persisted: events.jsonl has the same events, result.json the same result.
    let dir = h.runs.path().join(".runs").join(&id);
    let lines: Vec<Value> = std::fs::read_to_string(dir.join("events.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(&lines, events);
    let on_disk: Value =
        serde_json::from_slice(&std::fs::read(dir.join("result.json")).unwrap()).unwrap();
    assert_eq!(&on_disk, result);

    // The export: attachment, same events, no reasoning keys, no raw text, no absolute paths.
    let r = send(&h.router, get(&format!("/agent/runs/{id}/trace"))).await;
    assert_eq!(r.status, StatusCode::OK);
    assert!(
        r.headers[header::CONTENT_DISPOSITION]
            .to_str()
            .unwrap()
            .starts_with("attachment")
    );
    let trace = r.json();
    assert_eq!(trace["events"].as_array().unwrap().len(), events.len());
    let text = r.text();
    for forbidden in [
        "\"reasoning\"",
        "\"thought\"",
        "\"analysis\"",
        "\"raw_text\"",
        "\"chain_of_thought\"",
    ] {
        assert!(!text.contains(forbidden), "trace contains {forbidden}");
    }
    let root = project_root().display().to_string();
    assert!(
        !text.contains(&root),
        "trace contains the project root path"
    );
    assert!(
        !text.contains(&h.runs.path().display().to_string()),
        "trace contains the runs path"
    );
    assert!(
        !text.contains("/tmp/"),
        "trace contains an absolute temp path"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_list_is_newest_first() {
    let h = harness(Options::default());
    let a = start_run(&h.router, happy()).await;
    wait_terminal(&h.router, &a).await;
    let b = start_run(&h.router, happy()).await;
    wait_terminal(&h.router, &b).await;
    let v = send(&h.router, get("/agent/runs")).await.json();
    let ids: Vec<&str> = v["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, vec![b.as_str(), a.as_str()]);
    assert_eq!(v["runs"][0]["status"], "completed");
    assert_eq!(v["runs"][0]["stop_reason"], "completed");
    let r = send(&h.router, get("/agent/runs?limit=0")).await;
    assert_eq!(
        (r.status, r.code()),
        (StatusCode::BAD_REQUEST, "invalid_query".into())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scripted_policy_is_refused_unless_enabled() {
    let h = harness(Options {
        test_policies: false,
        ..Default::default()
    });
    let r = send(&h.router, post_json("/agent/runs", &happy())).await;
    assert_eq!(
        (r.status, r.code()),
        (StatusCode::FORBIDDEN, "test_policies_disabled".into())
    );
    assert_eq!(send(&h.router, get("/agent/runs")).await.json()["total"], 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scripted_fixture_paths_cannot_escape() {
    let h = harness(Options::default());
    for bad in [
        "scripted:../Cargo.toml",
        "scripted:/etc/passwd",
        "scripted:fixtures/../Cargo.toml",
        "scripted:fixtures/nope.json",
        "scripted:fixtures/tasks/agent_eval_mini/task.toml",
        "scripted:Cargo.toml",
        "scripted:fixtures/%2e%2e/x.json",
        "scripted:",
    ] {
        let r = send(
            &h.router,
            post_json("/agent/runs", &json!({ "policy": bad })),
        )
        .await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{bad}: {}", r.text());
        assert_eq!(r.json()["fields"][0]["field"], "policy", "{bad}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_bodies_are_refused_with_413() {
    let h = harness(Options::default());
    let big = json!({ "task": "x".repeat(300 * 1024) });
    let r = send(&h.router, post_json("/agent/runs", &big)).await;
    assert_eq!(
        (r.status, r.code()),
        (StatusCode::PAYLOAD_TOO_LARGE, "body_too_large".into())
    );
    // Without a Content-Length (a streamed body): the reader stops at the limit.
    let chunks = (0..40)
        .map(|_| axum::body::Bytes::from(vec![b' '; 8 * 1024]))
        .collect();
    let req = Request::post("/agent/runs")
        .header(header::HOST, HOST)
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::new(Chunked(chunks)))
        .unwrap();
    let r = send(&h.router, req).await;
    assert_eq!(
        (r.status, r.code()),
        (StatusCode::PAYLOAD_TOO_LARGE, "body_too_large".into())
    );
    let r = send(
        &h.router,
        post_json("/models/inspect", &json!({"path": "y".repeat(257 * 1024)})),
    )
    .await;
    assert_eq!(r.status, StatusCode::PAYLOAD_TOO_LARGE);
}

/// A body of chunks with no declared length (like chunked transfer encoding).
struct Chunked(std::collections::VecDeque<axum::body::Bytes>);

impl http_body::Body for Chunked {
    type Data = axum::body::Bytes;
    type Error = std::io::Error;
    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        std::task::Poll::Ready(self.0.pop_front().map(|b| Ok(http_body::Frame::data(b))))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_content_type_is_415_and_bad_json_is_400() {
    let h = harness(Options::default());
    for ctype in [
        Some("text/plain"),
        Some("application/x-www-form-urlencoded"),
        None,
    ] {
        let mut b = Request::post("/agent/runs").header(header::HOST, HOST);
        if let Some(c) = ctype {
            b = b.header(header::CONTENT_TYPE, c);
        }
        let r = send(&h.router, b.body(Body::from("{}")).unwrap()).await;
        assert_eq!(
            (r.status, r.code()),
            (
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "unsupported_media_type".into()
            ),
            "{ctype:?}"
        );
    }
    let ok_ctype = Request::post("/agent/runs")
        .header(header::HOST, HOST)
        .header(header::CONTENT_TYPE, "application/json; charset=utf-8")
        .body(Body::from("{\"task\": "))
        .unwrap();
    let r = send(&h.router, ok_ctype).await;
    assert_eq!(
        (r.status, r.code()),
        (StatusCode::BAD_REQUEST, "invalid_json".into())
    );
    let r = send(&h.router, post_json("/agent/runs", &json!([1, 2]))).await;
    assert_eq!(
        (r.status, r.code()),
        (StatusCode::BAD_REQUEST, "invalid_request".into())
    );
    let r = send(&h.router, post_empty("/agent/runs")).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_budgets_mode_temperature_and_task_get_field_errors() {
    let h = harness(Options::default());
    let body = json!({
        "budgets": { "max_steps": 0, "max_retries": 9, "wall_clock_s": "300", "max_cookies": 1, "repeated_action_limit": 1 },
        "mode": "fast", "temperature": 5, "task": "../etc", "colour": "red"
    });
    let r = send(&h.router, post_json("/agent/runs", &body)).await;
    assert_eq!(
        (r.status, r.code()),
        (StatusCode::BAD_REQUEST, "invalid_request".into())
    );
    let mut fields: Vec<String> = r.json()["fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["field"].as_str().unwrap().to_string())
        .collect();
    fields.sort();
    assert_eq!(
        fields,
        vec![
            "budgets.max_cookies",
            "budgets.max_retries",
            "budgets.max_steps",
            "budgets.repeated_action_limit",
            "budgets.wall_clock_s",
            "colour",
            "mode",
            "task",
            "temperature",
        ]
    );
    // Field messages name the allowed range.
    let msg = r.json()["message"].as_str().unwrap().to_string();
    assert!(
        msg.contains("budgets.max_retries: must be between 0 and 3, got 9"),
        "{msg}"
    );
    for task in ["nope", "Agent", "", "a/b"] {
        let r = send(
            &h.router,
            post_json("/agent/runs", &json!({ "task": task })),
        )
        .await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{task}");
    }
    let r = send(
        &h.router,
        post_json("/agent/runs", &json!({ "budgets": [] })),
    )
    .await;
    assert_eq!(r.json()["fields"][0]["field"], "budgets");
    assert_eq!(
        send(&h.router, get("/agent/runs")).await.json()["total"],
        0,
        "nothing was queued"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_runs_and_artifacts_are_404() {
    let h = harness(Options::default());
    for uri in [
        "/agent/runs/run-1-deadbeef",
        "/agent/runs/run-1-deadbeef/trace",
        "/agent/runs/..%2F..%2Fetc",
        "/agent/runs/RUN-1",
        "/artifacts/art-0000",
        "/artifacts/..%2F..%2FCargo.toml",
        "/artifacts/%2Fetc%2Fpasswd",
        "/nope",
    ] {
        let r = send(&h.router, get(uri)).await;
        assert_eq!(r.status, StatusCode::NOT_FOUND, "{uri}: {}", r.text());
        r.code();
    }
    let r = send(&h.router, post_empty("/agent/runs/run-1-deadbeef/cancel")).await;
    assert_eq!(
        (r.status, r.code()),
        (StatusCode::NOT_FOUND, "run_not_found".into())
    );
    let r = send(
        &h.router,
        Request::delete("/status")
            .header(header::HOST, HOST)
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(
        (r.status, r.code()),
        (StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed".into())
    );
    let r = send(&h.router, get("/agent/runs/run-1-deadbeef?after_seq=-1")).await;
    assert_eq!(
        (r.status, r.code()),
        (StatusCode::BAD_REQUEST, "invalid_query".into())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn non_loopback_host_is_refused() {
    let h = harness(Options::default());
    for host in [
        "evil.example",
        "evil.example:4890",
        "192.168.1.5:4890",
        "127.0.0.1.evil.example",
        "localhost.evil:4890",
        "0.0.0.0:4890",
    ] {
        let req = Request::get("/status")
            .header(header::HOST, host)
            .body(Body::empty())
            .unwrap();
        let r = send(&h.router, req).await;
        assert_eq!(
            (r.status, r.code()),
            (StatusCode::FORBIDDEN, "host_not_allowed".into()),
            "{host}"
        );
    }
    let r = send(
        &h.router,
        Request::get("/status").body(Body::empty()).unwrap(),
    )
    .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "no Host header");
    for host in [
        "localhost:4890",
        "127.0.0.1",
        "[::1]:4890",
        "127.0.0.2:80",
        "LOCALHOST",
    ] {
        let req = Request::get("/status")
            .header(header::HOST, host)
            .body(Body::empty())
            .unwrap();
        assert_eq!(send(&h.router, req).await.status, StatusCode::OK, "{host}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cross_origin_requests_are_refused_unless_allowed() {
    let h = harness(Options::default());
    let with_origin = |origin: &str| {
        Request::post("/agent/runs")
            .header(header::HOST, HOST)
            .header(header::ORIGIN, origin)
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from("{\"task\": \"nope\"}"))
            .unwrap()
    };
    for origin in [
        "https://evil.example",
        "http://localhost:4890",
        "null",
        "http://127.0.0.1:9999",
    ] {
        let r = send(&h.router, with_origin(origin)).await;
        assert_eq!(
            (r.status, r.code()),
            (StatusCode::FORBIDDEN, "cross_origin".into()),
            "{origin}"
        );
    }
    let r = send(
        &h.router,
        Request::get("/status")
            .header(header::HOST, HOST)
            .header("sec-fetch-site", "cross-site")
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    // Same origin passes the guard (and then fails validation on the bad task, proving it got through).
    let r = send(&h.router, with_origin("http://127.0.0.1:4890")).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);

    let h = harness(Options {
        allowed_origins: vec!["https://course.example".into()],
        ..Default::default()
    });
    let r = send(&h.router, with_origin("https://course.example")).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(
        r.headers[header::ACCESS_CONTROL_ALLOW_ORIGIN],
        "https://course.example"
    );
    let pre = Request::options("/agent/runs")
        .header(header::HOST, HOST)
        .header(header::ORIGIN, "https://course.example")
        .header("access-control-request-method", "POST")
        .body(Body::empty())
        .unwrap();
    let r = send(&h.router, pre).await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    assert_eq!(
        r.headers[header::ACCESS_CONTROL_ALLOW_ORIGIN],
        "https://course.example"
    );
    assert_eq!(
        send(&h.router, with_origin("https://other.example"))
            .await
            .status,
        StatusCode::FORBIDDEN
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queue_full_is_429_and_cancel_queued_and_running() {
    let h = harness(Options {
        hold: true,
        queue_capacity: 2,
        ..Default::default()
    });
    let running = start_run(&h.router, json!({})).await;
    wait_status(&h.router, &running, "running").await;
    let q1 = start_run(&h.router, json!({})).await;
    let q2 = start_run(&h.router, json!({})).await;
    let r = send(&h.router, post_json("/agent/runs", &json!({}))).await;
    assert_eq!(
        (r.status, r.code()),
        (StatusCode::TOO_MANY_REQUESTS, "queue_full".into())
    );
    let st = send(&h.router, get("/status")).await.json();
    assert_eq!(st["queue"]["length"], 2);
    assert_eq!(st["queue"]["running"], running.as_str());
    assert_eq!(snapshot(&h.router, &q2, 0).await["queue_position"], 2);

    // Cancel a queued run: sealed at once with run.finished, metrics null.
    let r = send(&h.router, post_empty(&format!("/agent/runs/{q1}/cancel"))).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text());
    let s = snapshot(&h.router, &q1, 0).await;
    assert_eq!(s["status"], "cancelled");
    assert_eq!(s["result"]["stop_reason"], "cancelled");
    assert_eq!(s["result"]["metrics"], Value::Null);
    assert_contiguous(s["events"].as_array().unwrap());
    assert_eq!(snapshot(&h.router, &q2, 0).await["queue_position"], 1);

    // Cancel the running run: the runtime stops and returns its own full result.
    let r = send(
        &h.router,
        post_json(&format!("/agent/runs/{running}/cancel"), &json!({})),
    )
    .await;
    assert_eq!(r.status, StatusCode::OK);
    let s = wait_terminal(&h.router, &running).await;
    assert_eq!(s["status"], "cancelled", "{s}");
    assert_eq!(s["result"]["stop_reason"], "cancelled");
    let events = s["events"].as_array().unwrap();
    assert_contiguous(events);
    assert!(
        events.iter().any(|e| e["phase"] == "run.started"),
        "the runtime, not the server, ran this one"
    );
    assert_ne!(events.last().unwrap()["data"]["sealed_by"], "server");

    // A finished run cannot be cancelled again.
    let r = send(
        &h.router,
        post_empty(&format!("/agent/runs/{running}/cancel")),
    )
    .await;
    assert_eq!(
        (r.status, r.code()),
        (StatusCode::CONFLICT, "run_finished".into())
    );
    // The next queued one runs now.
    wait_status(&h.router, &q2, "running").await;
    send(&h.router, post_empty(&format!("/agent/runs/{q2}/cancel"))).await;
    assert_eq!(wait_terminal(&h.router, &q2).await["status"], "cancelled");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_run_without_a_model_fails_model_unavailable_through_the_runtime() {
    let h = harness(Options::default());
    let id = start_run(&h.router, json!({"mode": "free"})).await;
    let s = wait_terminal(&h.router, &id).await;
    assert_eq!(s["status"], "failed");
    assert_eq!(s["result"]["stop_reason"], "model_unavailable");
    assert_eq!(s["result"]["final_answer"], Value::Null);
    assert_contiguous(s["events"].as_array().unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_seq_polling_has_no_gaps_and_no_duplicates() {
    let h = harness(Options::default());
    let id = start_run(
        &h.router,
        json!({"policy": "scripted:crates/server/tests/fixtures/paced_happy.json"}),
    )
    .await;
    let mut seen: Vec<Value> = Vec::new();
    let mut seen_unfinished = false;
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        assert!(
            Instant::now() < deadline,
            "run {id} did not finish: {} events",
            seen.len()
        );
        let after = seen.last().map(|e| e["seq"].as_u64().unwrap()).unwrap_or(0);
        let s = snapshot(&h.router, &id, after).await;
        seen_unfinished |= s["terminal"] == false;
        for e in s["events"].as_array().unwrap() {
            assert!(
                e["seq"].as_u64().unwrap() > after,
                "event at or before after_seq={after}"
            );
            seen.push(e.clone());
        }
        if s["terminal"] == true && seen.len() as u64 == s["last_seq"].as_u64().unwrap() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(15)).await;
    }
    // The first poll follows the submit at once and the fixture takes 4 × 150 ms of model time.
    assert!(seen_unfinished, "the run was never observed before its end");
    assert_contiguous(&seen);
    let full = snapshot(&h.router, &id, 0).await;
    assert_eq!(full["events"].as_array().unwrap(), &seen);
    let beyond = snapshot(&h.router, &id, 10_000).await;
    assert_eq!(beyond["events"], json!([]));
    let last = seen.len() as u64;
    let tail = snapshot(&h.router, &id, last - 1).await;
    assert_eq!(tail["events"].as_array().unwrap().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fifty_concurrent_pollers_see_the_same_ordered_events() {
    let h = harness(Options::default());
    let id = start_run(
        &h.router,
        json!({"policy": "scripted:crates/server/tests/fixtures/paced_happy.json"}),
    )
    .await;
    let mut tasks = Vec::new();
    for i in 0..50u64 {
        let router = h.router.clone();
        let id = id.clone();
        tasks.push(tokio::spawn(async move {
            let mut seen: Vec<Value> = Vec::new();
            let deadline = Instant::now() + Duration::from_secs(60);
            loop {
                assert!(
                    Instant::now() < deadline,
                    "poller {i}: the run did not finish"
                );
                let after = seen.last().map(|e| e["seq"].as_u64().unwrap()).unwrap_or(0);
                let s = snapshot(&router, &id, after).await;
                seen.extend(s["events"].as_array().unwrap().iter().cloned());
                if s["terminal"] == true && seen.len() as u64 == s["last_seq"].as_u64().unwrap() {
                    return seen;
                }
                tokio::time::sleep(std::time::Duration::from_millis(5 + i % 7)).await;
            }
        }));
    }
    let mut all = Vec::new();
    for t in tasks {
        all.push(t.await.unwrap());
    }
    let reference = snapshot(&h.router, &id, 0).await["events"]
        .as_array()
        .unwrap()
        .clone();
    assert_contiguous(&reference);
    for (i, seen) in all.iter().enumerate() {
        assert_eq!(seen, &reference, "poller {i} saw a different sequence");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn history_survives_a_restart() {
    let runs = tempfile::tempdir().unwrap();
    let dir = runs.path().join(".runs");
    let (id, before) = {
        let h = harness(Options {
            runs_dir: Some(dir.clone()),
            ..Default::default()
        });
        let id = start_run(&h.router, happy()).await;
        let s = wait_terminal(&h.router, &id).await;
        (id, s)
    };
    let h = harness(Options {
        runs_dir: Some(dir.clone()),
        ..Default::default()
    });
    assert_eq!(h.service.recovery.loaded, 1);
    assert!(h.service.recovery.interrupted.is_empty());
    let after = snapshot(&h.router, &id, 0).await;
    assert_eq!(after["events"], before["events"]);
    assert_eq!(after["result"], before["result"]);
    assert_eq!(after["status"], "completed");
    let art = after["result"]["artifacts"][0]["id"].as_str().unwrap();
    assert_eq!(
        send(&h.router, get(&format!("/artifacts/{art}")))
            .await
            .status,
        StatusCode::OK,
        "artifacts reload too"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_that_was_running_when_the_process_died_is_sealed_interrupted() {
    let runs = tempfile::tempdir().unwrap();
    let dir = runs.path().join(".runs");
    // Process A holds a run in `running` (its files say so) ...
    let a = harness(Options {
        runs_dir: Some(dir.clone()),
        hold: true,
        ..Default::default()
    });
    let id = start_run(&a.router, json!({})).await;
    let queued = start_run(&a.router, json!({})).await;
    wait_status(&a.router, &id, "running").await;
    let seen_before = snapshot(&a.router, &id, 0).await["events"]
        .as_array()
        .unwrap()
        .len();
    // ... and "dies": process B starts on what A left on disk and finds the unfinished runs. (B cannot
    // open A's live directory: `.runs/.lock` refuses a second server.)
    let crashed = runs.path().join("crashed");
    copy_as_crashed(&dir, &crashed);
    let b = harness(Options {
        runs_dir: Some(crashed),
        ..Default::default()
    });
    let mut interrupted = b.service.recovery.interrupted.clone();
    interrupted.sort();
    let mut expected = vec![id.clone(), queued.clone()];
    expected.sort();
    assert_eq!(interrupted, expected);
    for run in [&id, &queued] {
        let s = snapshot(&b.router, run, 0).await;
        assert_eq!(s["status"], "failed");
        assert_eq!(s["result"]["stop_reason"], "runtime_error");
        assert_eq!(s["result"]["reason"], "interrupted");
        assert_eq!(s["result"]["metrics"], Value::Null);
        let events = s["events"].as_array().unwrap();
        assert_contiguous(events);
        assert_eq!(events.last().unwrap()["data"]["reason"], "interrupted");
    }
    assert!(
        snapshot(&b.router, &id, 0).await["events"]
            .as_array()
            .unwrap()
            .len()
            > seen_before
    );
    drop(b);
    drop(a);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn torn_event_lines_from_a_crash_are_dropped_and_the_run_sealed() {
    let runs = tempfile::tempdir().unwrap();
    let dir = runs.path().join(".runs");
    let id = "run-1700000000000-0badc0de";
    std::fs::create_dir_all(dir.join(id).join("artifacts")).unwrap();
    std::fs::write(
        dir.join(id).join("meta.json"),
        serde_json::to_vec(&json!({"id": id, "status": "running", "created_at_ms": 1_700_000_000_000u64, "started_at_ms": 1_700_000_000_001u64, "finished_at_ms": null, "request": {"task": "agent_eval_mini"}})).unwrap(),
    )
    .unwrap();
    std::fs::write(
        dir.join(id).join("events.jsonl"),
        "{\"seq\":1,\"step\":0,\"attempt\":0,\"phase\":\"run.started\",\"elapsed_ms\":0,\"data\":{},\"observation_count\":0,\"budget\":{\"steps\":0,\"max_steps\":12,\"tool_calls\":0,\"max_tool_calls\":10,\"elapsed_ms\":0,\"wall_clock_ms\":300000,\"input_tokens\":0,\"max_input_tokens\":32000,\"output_tokens\":0,\"max_output_tokens\":4000}}\n{\"seq\":2,\"st",
    )
    .unwrap();
    let h = harness(Options {
        runs_dir: Some(dir.clone()),
        ..Default::default()
    });
    assert_eq!(h.service.recovery.torn_event_lines, 1);
    let s = snapshot(&h.router, id, 0).await;
    let events = s["events"].as_array().unwrap();
    assert_eq!(events.len(), 2);
    assert_contiguous(events);
    assert_eq!(s["result"]["reason"], "interrupted");
    let lines = std::fs::read_to_string(dir.join(id).join("events.jsonl")).unwrap();
    assert_eq!(
        lines.lines().count(),
        2,
        "the torn line is gone from disk too"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retention_keeps_the_newest_runs() {
    let h = harness(Options {
        retention: 2,
        ..Default::default()
    });
    let mut ids = Vec::new();
    for _ in 0..3 {
        let id = start_run(&h.router, happy()).await;
        wait_terminal(&h.router, &id).await;
        ids.push(id);
    }
    // Pruning happens after the worker records a result.
    let router = &h.router;
    eventually(
        Duration::from_secs(30),
        "retention prunes to 2 runs",
        || async move {
            let list = send(router, get("/agent/runs")).await.json();
            if list["total"] == 2 {
                Ok(())
            } else {
                Err(list.to_string())
            }
        },
    )
    .await;
    assert_eq!(
        send(&h.router, get(&format!("/agent/runs/{}", ids[0])))
            .await
            .status,
        StatusCode::NOT_FOUND
    );
    assert!(!h.runs.path().join(".runs").join(&ids[0]).exists());
    assert!(h.runs.path().join(".runs").join(&ids[2]).exists());
}

// ---------- example package ----------

fn example_tree() -> tempfile::TempDir {
    let t = tempfile::tempdir().unwrap();
    let r = t.path();
    std::fs::create_dir_all(r.join("src")).unwrap();
    std::fs::create_dir_all(r.join("target/debug")).unwrap();
    std::fs::create_dir_all(r.join("models")).unwrap();
    std::fs::create_dir_all(r.join(".runs/run-1-a")).unwrap();
    std::fs::write(r.join("Cargo.toml"), "[package]\nname = \"demo\"\n").unwrap();
    std::fs::write(r.join("src/main.rs"), "fn main() {}\n").unwrap();
    std::fs::write(r.join("README.md"), "# demo\n").unwrap();
    std::fs::write(r.join("target/debug/bin"), "x").unwrap();
    std::fs::write(r.join("models/m.gguf"), "x").unwrap();
    std::fs::write(r.join(".runs/run-1-a/meta.json"), "{}").unwrap();
    std::os::unix::fs::symlink("/etc/passwd", r.join("src/passwd")).unwrap();
    std::os::unix::fs::symlink(r.join("src"), r.join("linked_dir")).unwrap();
    git(r, &["init", "-q"]);
    git(r, &["add", "-A"]);
    // After `git add`: untracked, so never part of the package.
    std::fs::write(r.join(".env"), "SECRET=1\n").unwrap();
    t
}

/// Run git in `dir` (the example package is the tracked files).
fn git(dir: &std::path::Path, args: &[&str]) {
    let st = std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .status()
        .expect("git runs");
    assert!(st.success(), "git {args:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn example_manifest_file_and_zip_come_from_one_enumeration() {
    let tree = example_tree();
    let h = harness(Options {
        example_root: Some(tree.path().to_path_buf()),
        ..Default::default()
    });
    let m = send(&h.router, get("/example/manifest")).await.json();
    let paths: Vec<&str> = m["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, vec!["Cargo.toml", "README.md", "src/main.rs"]);
    let skipped: Vec<&str> = m["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert_eq!(skipped, vec!["linked_dir", "src/passwd"]);
    assert_eq!(
        m["files"][2]["blake3"],
        blake3::hash(b"fn main() {}\n").to_hex().as_str()
    );
    assert_eq!(m["files"][2]["bytes"], 13);
    assert_eq!(m["file_count"], 3);

    let f = send(&h.router, get("/example/file?path=src/main.rs")).await;
    assert_eq!(f.status, StatusCode::OK);
    let f = f.json();
    assert_eq!(f["content"], "fn main() {}\n");
    assert_eq!(f["blake3"], m["files"][2]["blake3"]);
    let raw = send(
        &h.router,
        get(m["files"][2]["download_path"].as_str().unwrap()),
    )
    .await;
    assert_eq!(raw.bytes, b"fn main() {}\n");
    assert_eq!(
        raw.headers["x-blake3"],
        m["files"][2]["blake3"].as_str().unwrap()
    );

    let z = send(&h.router, get("/example.zip")).await;
    assert_eq!(z.status, StatusCode::OK);
    assert_eq!(z.headers[header::CONTENT_TYPE], "application/zip");
    assert_eq!(
        blake3::hash(&z.bytes).to_hex().as_str(),
        m["zip"]["blake3"].as_str().unwrap()
    );
    assert_eq!(
        z.headers["x-tree-blake3"],
        m["tree_blake3"].as_str().unwrap()
    );
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(z.bytes.clone())).unwrap();
    let mut names: Vec<String> = archive.file_names().map(str::to_owned).collect();
    names.sort();
    assert_eq!(
        names,
        vec!["forge/Cargo.toml", "forge/README.md", "forge/src/main.rs"]
    );
    let mut content = String::new();
    archive
        .by_name("forge/src/main.rs")
        .unwrap()
        .read_to_string(&mut content)
        .unwrap();
    assert_eq!(content, "fn main() {}\n");
    // Deterministic: a second zip of the unchanged tree is byte-identical.
    let z2 = send(&h.router, get("/example.zip")).await;
    assert_eq!(z2.bytes, z.bytes);
    // A change shows up live.
    std::fs::write(tree.path().join("src/lib.rs"), "pub fn f() {}\n").unwrap();
    git(tree.path(), &["add", "src/lib.rs"]);
    let m2 = send(&h.router, get("/example/manifest")).await.json();
    assert_eq!(m2["file_count"], 4);
    assert_ne!(m2["tree_blake3"], m["tree_blake3"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn example_file_refuses_traversal_absolute_encoded_and_symlinks() {
    let tree = example_tree();
    let h = harness(Options {
        example_root: Some(tree.path().to_path_buf()),
        ..Default::default()
    });
    for q in [
        "../Cargo.toml",
        "..%2FCargo.toml",
        "%2E%2E%2FCargo.toml",
        "src%2F..%2F..%2Fetc%2Fpasswd",
        "/etc/passwd",
        "%2Fetc%2Fpasswd",
        "%252e%252e%252fCargo.toml",
        "src//main.rs",
        "./Cargo.toml",
        "src\\main.rs",
        "C:%5Cwindows",
        "",
    ] {
        let r = send(&h.router, get(&format!("/example/file?path={q}"))).await;
        assert_eq!(
            (r.status, r.code()),
            (StatusCode::BAD_REQUEST, "invalid_path".into()),
            "{q}"
        );
    }
    for q in [
        "src/passwd",
        "linked_dir/main.rs",
        "target/debug/bin",
        ".git/config",
        ".env",
        "models/m.gguf",
        ".runs/run-1-a/meta.json",
        "nope.rs",
    ] {
        let r = send(&h.router, get(&format!("/example/file?path={q}"))).await;
        assert_eq!(
            (r.status, r.code()),
            (StatusCode::NOT_FOUND, "file_not_in_package".into()),
            "{q}"
        );
    }
    let r = send(&h.router, get("/example/file")).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn example_package_of_this_project_holds_its_sources_and_no_build_output() {
    let h = harness(Options::default());
    let m = send(&h.router, get("/example/manifest")).await.json();
    let paths: Vec<&str> = m["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    for must in [
        "Cargo.toml",
        "crates/server/src/lib.rs",
        // `evidence/` is left out only at the top: the evidence crate's source is in the package
        "crates/evidence/src/lib.rs",
        "crates/server/web/app.js",
        "schemas/openapi.json",
        "fixtures/happy.json",
    ] {
        assert!(
            paths.contains(&must),
            "{must} missing from the example package"
        );
    }
    for p in &paths {
        let first = p.split('/').next().unwrap();
        assert!(
            !["target", ".git", "models", ".runs", "evidence", "learn"].contains(&first)
                && !first.starts_with("target-"),
            "{p} should be excluded"
        );
        assert!(!p.contains("node_modules/"), "{p}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_and_its_assets_are_embedded() {
    let h = harness(Options::default());
    let r = send(&h.router, get("/")).await;
    assert_eq!(r.status, StatusCode::OK);
    assert!(
        r.headers[header::CONTENT_TYPE]
            .to_str()
            .unwrap()
            .starts_with("text/html")
    );
    assert!(
        r.headers[header::CONTENT_SECURITY_POLICY]
            .to_str()
            .unwrap()
            .contains("default-src 'self'")
    );
    let html = r.text();
    assert!(html.contains("/app.js") && html.contains("/style.css"));
    assert!(
        !html.contains("http://") && !html.contains("https://"),
        "no CDN or remote asset"
    );
    let js = send(&h.router, get("/app.js")).await;
    assert!(
        js.headers[header::CONTENT_TYPE]
            .to_str()
            .unwrap()
            .starts_with("text/javascript")
    );
    assert!(js.text().contains("after_seq"));
    assert_eq!(
        send(&h.router, get("/style.css")).await.status,
        StatusCode::OK
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_listener_on_loopback_serves_a_run_end_to_end() {
    let h = harness(Options::default());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let router = h.router.clone();
    let server = tokio::spawn(async move { axum::serve(listener, router).await });
    let base = format!("http://{addr}");
    let client = reqwest::Client::new();
    let st: Value = client
        .get(format!("{base}/status"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(st["name"], "forge-runner");
    let resp = client
        .post(format!("{base}/agent/runs"))
        .json(&happy())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 202);
    let id = resp.json::<Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let mut after = 0;
    let mut events = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        assert!(
            Instant::now() < deadline,
            "run {id} did not finish over TCP"
        );
        let s: Value = client
            .get(format!("{base}/agent/runs/{id}?after_seq={after}"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        events.extend(s["events"].as_array().unwrap().iter().cloned());
        after = events.len() as u64;
        if s["terminal"] == true && after == s["last_seq"].as_u64().unwrap() {
            assert_eq!(s["status"], "completed");
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_contiguous(&events);
    // A DNS-rebinding request (right socket, foreign Host) is refused on the wire too.
    let r = client
        .get(format!("{base}/status"))
        .header("host", "attacker.example")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 403);
    server.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn evaluation_reports_are_listed_and_only_their_charts_are_served() {
    let h = harness(Options::default());
    let r = send(&h.router, get("/agent/evaluation")).await;
    assert_eq!(r.status, StatusCode::OK);
    let reports = r.json()["reports"].as_array().cloned().unwrap();
    // The committed suite evidence: at least one model, each report with its configurations.
    assert!(
        !reports.is_empty(),
        "evidence/eval/ holds the suite reports"
    );
    for report in &reports {
        let model = report["model"].as_str().unwrap();
        assert!(report["error"].is_null(), "{model}: {}", report["error"]);
        let configs = report["configs"].as_array().unwrap();
        assert!(!configs.is_empty(), "{model}");
        for c in configs {
            assert!(c["runs"].as_u64().unwrap() >= c["scored"].as_u64().unwrap());
            assert_eq!(c["wilson_95"].as_array().unwrap().len(), 2);
        }
        let chart = report["chart"].as_str().unwrap();
        let png = send(&h.router, get(chart)).await;
        assert_eq!(png.status, StatusCode::OK, "{chart}");
        assert_eq!(png.headers[header::CONTENT_TYPE], "image/png");
        assert!(png.bytes.starts_with(b"\x89PNG\r\n\x1a\n"));
    }
    for bad in [
        "/agent/evaluation/nope/success.png",
        "/agent/evaluation/..%2F..%2Fschemas/success.png",
        "/agent/evaluation/%2Fetc/success.png",
    ] {
        let r = send(&h.router, get(bad)).await;
        assert_eq!(r.status, StatusCode::NOT_FOUND, "{bad}");
        assert_eq!(r.code(), "evaluation_unknown", "{bad}");
    }
}

// ---------- hostile neighbours (issue 23) ----------

fn with_host(uri: &str, host: &str, origin: Option<&str>) -> Request<Body> {
    let mut b = Request::post(uri)
        .header(header::HOST, host)
        .header(header::CONTENT_TYPE, "application/json");
    if let Some(o) = origin {
        b = b.header(header::ORIGIN, o);
    }
    b.body(Body::from(serde_json::to_vec(&happy()).unwrap()))
        .unwrap()
}

/// 1. `--allow-remote` no longer skips the Host check: a page on a rebound name (evil.example resolving
/// to 127.0.0.1), which sends its own name as Host and as Origin, can neither start runs nor read them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allow_remote_still_refuses_a_rebinding_host() {
    let h = harness(Options {
        allow_remote: true,
        allowed_hosts: vec!["forge.lan".into()],
        ..Default::default()
    });
    for (host, origin) in [
        ("evil.example:4890", Some("http://evil.example:4890")),
        ("evil.example", None),
        (
            "forge.lan.evil.example:4890",
            Some("http://forge.lan.evil.example:4890"),
        ),
        ("192.168.1.9:4890", None),
    ] {
        let r = send(&h.router, with_host("/agent/runs", host, origin)).await;
        assert_eq!(
            (r.status, r.code()),
            (StatusCode::FORBIDDEN, "host_not_allowed".into()),
            "{host}"
        );
        let trace = Request::get("/agent/runs")
            .header(header::HOST, host)
            .body(Body::empty())
            .unwrap();
        assert_eq!(
            send(&h.router, trace).await.status,
            StatusCode::FORBIDDEN,
            "{host}"
        );
    }
    // The names it does answer to: loopback, and those given with --allow-host (any case, any port).
    for host in [
        "127.0.0.1:4890",
        "localhost:4890",
        "forge.lan:4890",
        "FORGE.LAN",
    ] {
        let r = send(&h.router, get_with_host("/status", host)).await;
        assert_eq!(r.status, StatusCode::OK, "{host}");
    }
    let r = send(
        &h.router,
        with_host(
            "/agent/runs",
            "forge.lan:4890",
            Some("http://forge.lan:4890"),
        ),
    )
    .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.text());
}

fn get_with_host(uri: &str, host: &str) -> Request<Body> {
    Request::get(uri)
        .header(header::HOST, host)
        .body(Body::empty())
        .unwrap()
}

/// 1, on the wire: `Service::serve` with `--allow-remote` answers to the address it is bound to and
/// refuses a rebinding name over the same socket.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_with_allow_remote_answers_its_bound_address_and_refuses_rebinding() {
    let runs = tempfile::tempdir().unwrap();
    let mut config = forge_server::ServerConfig::new(project_root());
    config.runs_dir = runs.path().join(".runs");
    config.allow_remote = true;
    let provider: std::sync::Arc<dyn forge_server::ModelProvider> =
        std::sync::Arc::new(forge_server::UnavailableProvider {
            reason: "none".into(),
        });
    let service = forge_server::Service::start(config, provider).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let served = tokio::spawn(service.serve(listener, async {
        let _ = stop_rx.await;
    }));
    let client = reqwest::Client::new();
    let ok = client
        .get(format!("http://{addr}/status"))
        .send()
        .await
        .unwrap();
    assert_eq!(ok.status().as_u16(), 200);
    for host in [
        "evil.example:4890",
        &format!("evil.example:{}", addr.port()),
    ] {
        let r = client
            .get(format!("http://{addr}/agent/runs"))
            .header("host", host)
            .header("origin", format!("http://{host}"))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 403, "{host}");
    }
    let _ = stop_tx.send(());
    served.await.unwrap().unwrap();
}

/// 7. `--allow-origin null` is refused (any sandboxed frame or local file sends `Origin: null`).
#[test]
fn allow_origin_null_is_refused() {
    assert!(forge_server::check_allowed_origin("null").is_err());
    assert!(forge_server::check_allowed_origin("https://course.example").is_ok());
}

/// 2. The example package is the git-tracked files: untracked secrets and a runs or model folder under
/// another name are neither listed, served one by one, nor zipped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn example_package_holds_only_tracked_files_never_an_untracked_env() {
    let tree = example_tree();
    let r = tree.path();
    std::fs::write(r.join("server.pem"), "-----BEGIN PRIVATE KEY-----\n").unwrap();
    std::fs::write(r.join(".npmrc"), "//registry/:_authToken=x\n").unwrap();
    std::fs::create_dir_all(r.join("old-runs/run-1")).unwrap();
    std::fs::write(r.join("old-runs/run-1/events.jsonl"), "{}\n").unwrap();
    std::fs::create_dir_all(r.join("weights")).unwrap();
    std::fs::write(r.join("weights/m.bin"), "w").unwrap();
    let h = harness(Options {
        example_root: Some(r.to_path_buf()),
        ..Default::default()
    });
    let m = send(&h.router, get("/example/manifest")).await.json();
    let paths: Vec<&str> = m["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, vec!["Cargo.toml", "README.md", "src/main.rs"]);
    for q in [
        ".env",
        "server.pem",
        ".npmrc",
        "old-runs/run-1/events.jsonl",
        "weights/m.bin",
    ] {
        let f = send(&h.router, get(&format!("/example/file?path={q}&raw=1"))).await;
        assert_eq!(
            (f.status, f.code()),
            (StatusCode::NOT_FOUND, "file_not_in_package".into()),
            "{q}"
        );
    }
    let z = send(&h.router, get("/example.zip")).await;
    let archive = zip::ZipArchive::new(std::io::Cursor::new(z.bytes)).unwrap();
    let names: Vec<&str> = archive.file_names().collect();
    assert!(
        !names.iter().any(|n| n.contains(".env")
            || n.contains("pem")
            || n.contains("npmrc")
            || n.contains("old-runs")
            || n.contains("weights")),
        "{names:?}"
    );
    // A tree git cannot list is refused, not walked.
    let bare = tempfile::tempdir().unwrap();
    std::fs::write(bare.path().join(".env"), "SECRET=1\n").unwrap();
    let h = harness(Options {
        example_root: Some(bare.path().to_path_buf()),
        ..Default::default()
    });
    let r = send(&h.router, get("/example/manifest")).await;
    assert_eq!(
        (r.status, r.code()),
        (
            StatusCode::SERVICE_UNAVAILABLE,
            "example_unavailable".into()
        )
    );
    let r = send(&h.router, get("/example/file?path=.env")).await;
    assert_eq!(r.status, StatusCode::SERVICE_UNAVAILABLE);
}

/// 5. The evaluation chart, the course guide and the artifact routes never follow a symbolic link:
/// a committed `evidence/eval/x/success.png -> /proc/self/environ` serves nothing of the environment.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn file_routes_never_follow_symlinks() {
    let root = tempfile::tempdir().unwrap();
    let r = root.path();
    let eval = r.join("evidence/eval");
    std::fs::create_dir_all(eval.join("x")).unwrap();
    std::fs::write(eval.join("x/summary.json"), r#"{"configs": []}"#).unwrap();
    std::os::unix::fs::symlink("/proc/self/environ", eval.join("x/success.png")).unwrap();
    // A report folder that is itself a link, to a folder with a real chart.
    std::fs::create_dir_all(r.join("elsewhere")).unwrap();
    std::fs::write(r.join("elsewhere/summary.json"), r#"{"configs": []}"#).unwrap();
    std::fs::write(r.join("elsewhere/success.png"), b"\x89PNG\r\n\x1a\nsecret").unwrap();
    std::os::unix::fs::symlink(r.join("elsewhere"), eval.join("y")).unwrap();
    // A stage whose guide is a link to the environment.
    let stage = r.join("stages/01-demo");
    std::fs::create_dir_all(stage.join("fixtures")).unwrap();
    std::fs::write(stage.join("Cargo.toml"), "[package]\n").unwrap();
    std::os::unix::fs::symlink("/proc/self/environ", stage.join("README.md")).unwrap();
    let h = harness(Options {
        root: Some(r.to_path_buf()),
        ..Default::default()
    });
    let environ = std::fs::read("/proc/self/environ").unwrap_or_default();
    let x = send(&h.router, get("/agent/evaluation/x/success.png")).await;
    assert_eq!(x.status, StatusCode::FORBIDDEN, "{}", x.text());
    assert_eq!(x.code(), "file_refused");
    let listed = send(&h.router, get("/agent/evaluation")).await.json();
    assert_eq!(listed["reports"].as_array().unwrap().len(), 1, "{listed}");
    assert_eq!(listed["reports"][0]["chart"], Value::Null, "{listed}");
    let y = send(&h.router, get("/agent/evaluation/y/success.png")).await;
    assert_eq!(y.status, StatusCode::NOT_FOUND);
    let g = send(&h.router, get("/course/stages/01-demo/guide")).await;
    assert_eq!(g.status, StatusCode::NOT_FOUND, "{}", g.text());
    assert!(g.text().contains("symbolic link"), "{}", g.text());
    for reply in [&x, &y, &g] {
        assert!(
            environ.is_empty()
                || !reply
                    .bytes
                    .windows(environ.len().min(32))
                    .any(|w| w == &environ[..environ.len().min(32)])
        );
    }

    // An artifact file replaced by a link after the run recorded it.
    let h = harness(Options::default());
    let id = start_run(&h.router, happy()).await;
    let done = wait_terminal(&h.router, &id).await;
    let artifact = done["result"]["artifacts"][0]["id"]
        .as_str()
        .or_else(|| done["artifacts"][0]["id"].as_str())
        .map(str::to_owned);
    let artifact = artifact.unwrap_or_else(|| panic!("the happy run records an artifact: {done}"));
    let dir = h.runs.path().join(".runs").join(&id).join("artifacts");
    let file = std::fs::read_dir(&dir)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    std::fs::remove_file(&file).unwrap();
    std::os::unix::fs::symlink("/proc/self/environ", &file).unwrap();
    let a = send(&h.router, get(&format!("/artifacts/{artifact}"))).await;
    assert_eq!(
        (a.status, a.code()),
        (StatusCode::FORBIDDEN, "file_refused".into())
    );
}

/// A run stuck where nothing can cancel it (a model load): it emits `run.started`, then ignores the
/// cancel for 30 s and finally tries to append one more event.
struct UncancellableLoad;

impl forge_server::Executor for UncancellableLoad {
    fn execute(
        &self,
        run_id: &str,
        _spec: &forge_server::RunSpec,
        _artifact_dir: &std::path::Path,
        _cancel: std::sync::Arc<std::sync::atomic::AtomicBool>,
        _shutdown: std::sync::Arc<std::sync::atomic::AtomicBool>,
        sink: &mut dyn FnMut(Value),
    ) -> Result<Value, forge_server::run_bridge::ExecError> {
        sink(json!({ "seq": 1, "run_id": run_id, "t_ms": 0, "phase": "run.started", "data": {} }));
        std::thread::sleep(Duration::from_secs(30));
        sink(json!({ "seq": 2, "run_id": run_id, "t_ms": 1, "phase": "model.loaded", "data": {} }));
        Err(forge_server::run_bridge::ExecError {
            code: "runtime_error",
            message: "late".into(),
        })
    }
}

/// 4. Shutdown while the running run sits in a model load that cannot be cancelled: `serve` returns
/// within 5 s and the run is sealed `cancelled/shutdown` on disk (before: left `running`, and the next
/// start-up sealed it `failed/interrupted`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_during_an_uncancellable_load_seals_the_run_cancelled_shutdown() {
    let runs = tempfile::tempdir().unwrap();
    let dir = runs.path().join(".runs");
    let mut config = forge_server::ServerConfig::new(project_root());
    config.runs_dir = dir.clone();
    config.enable_test_policies = true;
    let provider: std::sync::Arc<dyn forge_server::ModelProvider> =
        std::sync::Arc::new(forge_server::UnavailableProvider {
            reason: "none".into(),
        });
    let service = forge_server::Service::start_with_executor(
        config,
        provider,
        std::sync::Arc::new(UncancellableLoad),
    )
    .unwrap();
    let router = service.router();
    let id = start_run(&router, happy()).await;
    wait_status(&router, &id, "running").await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let started = Instant::now();
    service.serve(listener, async {}).await.unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "serve took {:?}",
        started.elapsed()
    );
    let meta: Value =
        serde_json::from_slice(&std::fs::read(dir.join(&id).join("meta.json")).unwrap()).unwrap();
    assert_eq!(meta["status"], "cancelled", "{meta}");
    let result: Value =
        serde_json::from_slice(&std::fs::read(dir.join(&id).join("result.json")).unwrap()).unwrap();
    assert_eq!(result["stop_reason"], "shutdown", "{result}");
    let events = std::fs::read_to_string(dir.join(&id).join("events.jsonl")).unwrap();
    let last: Value = serde_json::from_str(events.lines().last().unwrap()).unwrap();
    assert_eq!(last["phase"], "run.finished", "{events}");
    assert_eq!(
        events
            .lines()
            .filter(|l| l.contains("run.finished"))
            .count(),
        1
    );
}

struct CredentialedProvider;

impl forge_server::ModelProvider for CredentialedProvider {
    fn inspect(&self, _path: Option<&str>) -> Result<Value, forge_server::ProviderError> {
        Err(forge_server::ProviderError::unavailable("test provider"))
    }
    fn unload(&self) -> Result<Value, forge_server::ProviderError> {
        Ok(json!({"unloaded": 0}))
    }
    fn cache_state(&self) -> Value {
        json!({ "loaded": [], "generation": { "kind": "llama-server", "url": "http://alice:s3cret@gpu.lan:8080" } })
    }
    fn policy(
        &self,
        _mode: forge_server::Mode,
        _t: f32,
    ) -> Result<Box<dyn runtime::policy::Policy>, runtime::policy::PolicyError> {
        Err(runtime::policy::PolicyError::ModelUnavailable(
            "none".into(),
        ))
    }
}

/// 7. `/status` and `/agent/models` never show a generation backend URL's credentials.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_never_shows_backend_url_credentials() {
    let runs = tempfile::tempdir().unwrap();
    let mut config = forge_server::ServerConfig::new(project_root());
    config.runs_dir = runs.path().join(".runs");
    let service =
        forge_server::Service::start(config, std::sync::Arc::new(CredentialedProvider)).unwrap();
    let router = service.router();
    for route in ["/status", "/agent/models"] {
        let r = send(&router, get(route)).await;
        assert_eq!(r.status, StatusCode::OK);
        assert!(
            !r.text().contains("s3cret") && !r.text().contains("alice"),
            "{route}: {}",
            r.text()
        );
        assert!(r.text().contains("gpu.lan:8080"), "{route}: {}", r.text());
    }
    service.state.jobs.close();
}
