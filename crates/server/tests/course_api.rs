//! The course endpoints over real HTTP requests to the router: the real seven stages and guides,
//! and a temporary course root with a learner's progress file, a broken stage and bad requests.

mod common;

use std::fs;
use std::sync::Arc;

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use common::{HOST, Harness, Options, Reply, harness, project_root};
use forge_server::{ServerConfig, Service, UnavailableProvider};
use http_body_util::BodyExt;
use pretty_assertions::assert_eq;
use tower::ServiceExt;

async fn get(router: &axum::Router, path: &str) -> Reply {
    let request = Request::builder()
        .uri(path)
        .header(header::HOST, HOST)
        .body(Body::empty())
        .unwrap();
    let response = router.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let headers = response.headers().clone();
    let bytes = response
        .into_body()
        .collect()
        .await
        .unwrap()
        .to_bytes()
        .to_vec();
    Reply {
        status,
        headers,
        bytes,
    }
}

fn real() -> Harness {
    harness(Options::default())
}

#[tokio::test]
async fn the_seven_stages_come_with_titles_predictions_hints_and_contract_names() {
    let h = real();
    let reply = get(&h.router, "/course/stages").await;
    assert_eq!(reply.status, StatusCode::OK);
    let body = reply.json();
    let stages = body["stages"].as_array().unwrap();
    let ids: Vec<&str> = stages.iter().map(|s| s["id"].as_str().unwrap()).collect();
    assert_eq!(ids.len(), 7, "{ids:?}");
    assert_eq!(ids[5], "06-stop-conditions");
    let six = &stages[5];
    assert_eq!(six["title"]["zh-CN"], "停止条件");
    assert_eq!(six["prediction"]["answer"], "B");
    assert_eq!(six["hints"].as_array().unwrap().len(), 3);
    assert_eq!(
        six["contract"]["target_test"],
        "only_verified_success_stops_as_success"
    );
    assert!(
        six["contract"].get("repair").is_none(),
        "the repair stays in the guide"
    );
    let sections = body["guide_sections"].as_array().unwrap();
    assert_eq!(sections.len(), 17);
    assert!(
        sections
            .iter()
            .any(|s| s["key"] == "after_it_passes" && s["page"] == "after_pass")
    );
}

#[tokio::test]
async fn guides_are_served_in_both_languages_and_bad_requests_are_refused() {
    let h = real();
    let en = get(&h.router, "/course/stages/06-stop-conditions/guide?lang=en").await;
    assert_eq!(en.status, StatusCode::OK);
    let en = en.json();
    assert_eq!(en["file"], "stages/06-stop-conditions/README.md");
    let on_disk =
        fs::read_to_string(project_root().join("stages/06-stop-conditions/README.md")).unwrap();
    assert_eq!(en["markdown"], on_disk.as_str());
    let zh = get(
        &h.router,
        "/course/stages/06-stop-conditions/guide?lang=zh-CN",
    )
    .await
    .json();
    assert!(zh["markdown"].as_str().unwrap().starts_with("# 第 06 阶段"));

    let lang = get(&h.router, "/course/stages/06-stop-conditions/guide?lang=fr").await;
    assert_eq!(
        (lang.status, lang.code()),
        (StatusCode::BAD_REQUEST, "invalid_query".to_owned())
    );
    assert!(lang.json()["message"].as_str().unwrap().contains("\"fr\""));
    for id in ["09-nothing", "..%2F..%2FCargo.toml", "%2E%2E"] {
        let unknown = get(&h.router, &format!("/course/stages/{id}/guide?lang=en")).await;
        assert_eq!(
            (unknown.status, unknown.code()),
            (StatusCode::NOT_FOUND, "unknown_stage".to_owned()),
            "{id}"
        );
        assert!(
            unknown.json()["message"]
                .as_str()
                .unwrap()
                .contains("01-action-selection")
        );
    }
}

#[tokio::test]
async fn openapi_names_the_course_endpoints() {
    let h = real();
    let v = get(&h.router, "/openapi.json").await.json();
    for path in [
        "/course/stages",
        "/course/stages/{id}/guide",
        "/course/progress",
    ] {
        assert!(
            v["paths"][path]["get"].is_object(),
            "openapi.json lacks {path}"
        );
    }
}

#[tokio::test]
async fn the_page_loads_the_course_assets() {
    let h = real();
    let page = get(&h.router, "/").await.text();
    assert!(
        page.contains("<script type=\"module\" src=\"/course.js\"></script>")
            && page.contains("/course.css"),
        "{page}"
    );
    let js = get(&h.router, "/course.js").await;
    assert_eq!(js.status, StatusCode::OK);
    assert_eq!(
        js.headers[header::CONTENT_TYPE],
        "text/javascript; charset=utf-8"
    );
    assert!(js.text().contains("never uploaded"));
    let css = get(&h.router, "/course.css").await;
    assert_eq!(css.headers[header::CONTENT_TYPE], "text/css; charset=utf-8");
}

/// A course root of one good and one broken stage, with or without a learner's progress file.
fn small_course(progress: Option<&str>) -> (tempfile::TempDir, axum::Router, Service) {
    let root = tempfile::tempdir().unwrap();
    let real = project_root().join("stages/01-action-selection");
    let good = root.path().join("stages/01-action-selection");
    fs::create_dir_all(good.join("fixtures")).unwrap();
    for file in [
        "Cargo.toml",
        "stage.toml",
        "README.md",
        "README.zh-CN.md",
        "fixtures/failure.json",
    ] {
        fs::copy(real.join(file), good.join(file)).unwrap();
    }
    let broken = root.path().join("stages/02-broken");
    fs::create_dir_all(&broken).unwrap();
    fs::write(broken.join("Cargo.toml"), "[package]\nname = \"broken\"\n").unwrap();
    fs::write(broken.join("stage.toml"), "title = [not toml").unwrap();
    if let Some(progress) = progress {
        fs::create_dir_all(root.path().join("learn")).unwrap();
        fs::write(root.path().join("learn/progress.json"), progress).unwrap();
    }
    let mut config = ServerConfig::new(root.path());
    config.runs_dir = root.path().join(".runs");
    let service = Service::start(
        config,
        Arc::new(UnavailableProvider {
            reason: "no model in tests".into(),
        }),
    )
    .unwrap();
    let router = service.router();
    (root, router, service)
}

#[tokio::test]
async fn a_broken_stage_is_listed_with_its_error_instead_of_breaking_the_list() {
    let (_root, router, service) = small_course(None);
    let body = get(&router, "/course/stages").await.json();
    let stages = body["stages"].as_array().unwrap();
    assert_eq!(stages.len(), 2);
    assert_eq!(stages[0]["id"], "01-action-selection");
    assert!(stages[0]["error"].is_null());
    let error = stages[1]["error"].as_str().unwrap();
    assert!(
        error.starts_with("stages/02-broken/stage.toml cannot be read"),
        "{error}"
    );
    let missing = get(&router, "/course/stages/02-broken/guide?lang=en").await;
    assert_eq!(
        (missing.status, missing.code()),
        (StatusCode::NOT_FOUND, "course_file_unreadable".to_owned())
    );
    assert!(
        !missing.text().contains(_root.path().to_str().unwrap()),
        "no absolute paths in messages"
    );
    service.state.jobs.shutdown();
}

#[tokio::test]
async fn the_learners_progress_is_served_when_present_and_its_damage_is_named() {
    let (_root, router, service) = small_course(None);
    let absent = get(&router, "/course/progress").await.json();
    assert_eq!(
        absent,
        serde_json::json!({"present": false, "progress": null, "error": null})
    );
    service.state.jobs.shutdown();

    let record = r#"{"format_version": 2, "stages": {"01-action-selection": {"started_at": "2026-01-01T00:00:00.000Z",
        "checks": 3, "last_check_at": null, "last_result": "passed", "passed_at": "2026-01-01T00:10:00.000Z", "hints_shown": 2}}}"#;
    let (_root, router, service) = small_course(Some(record));
    let present = get(&router, "/course/progress").await.json();
    assert_eq!(present["present"], true);
    assert_eq!(
        present["progress"]["stages"]["01-action-selection"]["hints_shown"],
        2
    );
    service.state.jobs.shutdown();

    let (_root, router, service) = small_course(Some("{\"stages\": ["));
    let damaged = get(&router, "/course/progress").await.json();
    assert_eq!(damaged["present"], true);
    assert!(
        damaged["error"]
            .as_str()
            .unwrap()
            .starts_with("learn/progress.json is not valid JSON"),
        "{damaged}"
    );
    service.state.jobs.shutdown();
}
