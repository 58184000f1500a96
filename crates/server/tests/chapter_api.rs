//! HTTP tests of the chapter's routes: the chapter text (`GET /course/chapter`), the decision sandbox
//! (`POST /agent/decisions/validate`, a dry run through the runtime's validation) with its bad inputs, and the
//! run request's `tool_timeout_seconds` (validated like the budgets, and applied to every tool attempt).

mod common;

use axum::http::StatusCode;
use common::*;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

async fn validate(h: &Harness, text: &str) -> Value {
    let r = send(
        &h.router,
        post_json("/agent/decisions/validate", &json!({ "text": text })),
    )
    .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text());
    r.json()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_chapter_is_served_with_every_section_in_both_languages() {
    let h = harness(Options::default());
    let r = send(&h.router, get("/course/chapter")).await;
    assert_eq!(r.status, StatusCode::OK);
    let v = r.json();
    let sections = v["sections"].as_array().unwrap();
    assert_eq!(sections.len(), 21);
    for s in sections {
        assert!(s["en"]["title"].is_string() && s["zh"]["title"].is_string());
    }
    assert_eq!(v["lab"]["candidates"].as_array().unwrap().len(), 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sandbox_refuses_the_old_chart_shape_and_accepts_the_three_valid_candidates() {
    let h = harness(Options::default());
    let chapter = send(&h.router, get("/course/chapter")).await.json();
    for candidate in chapter["lab"]["candidates"].as_array().unwrap() {
        let dry = validate(&h, candidate["text"].as_str().unwrap()).await;
        assert_eq!(dry["tool_ran"], false);
        if candidate["key"] == "legacy_plot" {
            assert_eq!(dry["verdict"], "invalid_arguments", "{dry}");
            assert_eq!(dry["phase"], "tool.rejected");
            assert_eq!(dry["refusal"]["code"], "invalid_arguments");
            assert_eq!(dry["refusal"]["fields"], json!(["title"]));
            assert_eq!(dry["observation"]["ok"], false);
            assert_eq!(dry["observation"]["error"]["code"], "invalid_arguments");
            assert_eq!(dry["observation"]["attempted_arguments"]["kind"], "bar");
        } else {
            assert_eq!(
                dry["verdict"], "valid_action",
                "{}: {dry}",
                candidate["key"]
            );
            assert!(dry["validated_arguments"].is_object());
            assert!(dry["observation"].is_null());
        }
    }
    // Not a decision: the decision error with its code, no observation.
    let dry = validate(&h, "I think I should search first").await;
    assert_eq!(dry["verdict"], "invalid_decision");
    assert_eq!(dry["refusal"]["code"], "invalid_json");
    let dry = validate(
        &h,
        r#"{"type":"action","tool":"search","arguments":{"q":"x"}}"#,
    )
    .await;
    assert_eq!(dry["refusal"]["code"], "unknown_tool");
    // Nothing ran: no run was queued.
    assert_eq!(send(&h.router, get("/agent/runs")).await.json()["total"], 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_sandbox_requests_get_field_errors() {
    let h = harness(Options::default());
    let cases = [
        (json!([]), None),
        (json!({}), Some("text")),
        (json!({ "text": 5 }), Some("text")),
        (json!({ "text": "x".repeat(16_001) }), Some("text")),
        (json!({ "text": "{}", "tool": "plot" }), Some("tool")),
    ];
    for (body, field) in cases {
        let r = send(&h.router, post_json("/agent/decisions/validate", &body)).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{body}");
        assert_eq!(r.code(), "invalid_request", "{body}");
        if let Some(field) = field {
            assert_eq!(r.json()["fields"][0]["field"], field, "{body}");
        }
    }
    let r = send(&h.router, post_empty("/agent/decisions/validate")).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    let r = send(&h.router, get("/agent/decisions/validate")).await;
    assert_eq!(r.status, StatusCode::METHOD_NOT_ALLOWED);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_timeout_seconds_is_validated_and_bounds_every_tool_attempt() {
    let h = harness(Options::default());
    for bad in [json!(0), json!(121), json!("5"), json!(1.5), json!(-1)] {
        let r = send(
            &h.router,
            post_json("/agent/runs", &json!({ "tool_timeout_seconds": bad })),
        )
        .await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{bad}");
        assert_eq!(
            r.json()["fields"][0]["field"],
            "tool_timeout_seconds",
            "{bad}"
        );
        assert!(
            r.json()["message"]
                .as_str()
                .unwrap()
                .contains("between 1 and 120")
        );
    }
    let id = start_run(
        &h.router,
        json!({ "policy": "scripted:fixtures/happy.json", "tool_timeout_seconds": 1 }),
    )
    .await;
    let done = wait_terminal(&h.router, &id).await;
    assert_eq!(done["status"], "completed");
    assert_eq!(done["request"]["tool_timeout_seconds"], 1);
    let started: Vec<u64> = done["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["phase"] == "tool.started")
        .map(|e| e["data"]["timeout_ms"].as_u64().unwrap())
        .collect();
    assert!(!started.is_empty());
    assert!(started.iter().all(|&ms| ms <= 1000), "{started:?}");
}
