//! The axum layer: routes, the loopback/origin/size guards, JSON errors. The only module that uses axum.
//! Here: the router, the guards and the helpers every handler uses; the handlers by resource in `runs`,
//! `models`, `example`, `course` and `lab` (the chapter and the decision sandbox).
//!
//! Handlers are thin: they parse, call `jobs`/`example`/the model provider, and shape responses. Blocking
//! work (file walks, zips, model inspection) runs on tokio's blocking pool.

use std::collections::HashMap;
use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{Path, Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};

use crate::error::ApiError;
use crate::{AppState, MAX_BODY_BYTES, web};

mod course;
mod example;
mod lab;
mod models;
mod runs;

use course::*;
use example::*;
use lab::*;
use models::*;
use runs::*;

type Shared = State<Arc<AppState>>;

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = StatusCode::from_u16(self.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        (
            status,
            [(header::CACHE_CONTROL, "no-store")],
            axum::Json(self.body()),
        )
            .into_response()
    }
}

fn ok_json(v: Value) -> Response {
    ([(header::CACHE_CONTROL, "no-store")], axum::Json(v)).into_response()
}

pub fn router(state: Arc<AppState>) -> Router {
    // The page's files (web.rs), then the API.
    let page = web::ASSETS.iter().fold(Router::new(), |router, asset| {
        router.route(asset.path, get(move || async move { asset.response() }))
    });
    page.route("/openapi.json", get(openapi))
        .route("/status", get(status))
        .route("/agent/schema", get(agent_schema))
        .route("/agent/tasks", get(list_tasks))
        .route("/agent/models", get(list_models))
        .route("/models/inspect", post(models_inspect))
        .route("/models/unload", post(models_unload))
        .route("/agent/runs", post(create_run).get(list_runs))
        .route("/agent/runs/{id}", get(get_run))
        .route("/agent/runs/{id}/cancel", post(cancel_run))
        .route("/agent/runs/{id}/trace", get(run_trace))
        .route("/agent/runs/{id}/follow", get(follow_run))
        .route("/artifacts/{id}", get(artifact))
        .route("/example/manifest", get(example_manifest))
        .route("/example/file", get(example_file))
        .route("/example/chain", get(example_chain))
        .route("/example.zip", get(example_zip))
        // course view (course.rs, web/course.js)
        .route("/course/stages", get(course_stages))
        .route("/course/stages/{id}/guide", get(course_guide))
        .route("/course/progress", get(course_progress))
        // the chapter and its decision sandbox (chapter.rs, dry_run.rs; web/chapter.js, web/lab.js)
        .route("/course/chapter", get(chapter_text))
        .route("/agent/decisions/validate", post(validate_decision))
        // evaluation panel (evaluation.rs, web/eval.js)
        .route("/agent/evaluation", get(evaluation_reports))
        .route(
            "/agent/evaluation/{model}/success.png",
            get(evaluation_chart),
        )
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(middleware::from_fn_with_state(state.clone(), guard))
        .with_state(state)
}

async fn not_found(uri: axum::http::Uri) -> ApiError {
    ApiError::not_found("not_found", format!("no route for {}", uri.path()))
}

async fn method_not_allowed(method: Method, uri: axum::http::Uri) -> ApiError {
    ApiError::new(
        405,
        "method_not_allowed",
        format!("{method} is not allowed on {}", uri.path()),
    )
}

/// Allowed `Host` (loopback, bound address, `--allow-host`; defeats DNS rebinding, also with `--allow-remote`), origin policy (CORS only for `--allow-origin`), body size.
async fn guard(State(state): Shared, req: Request, next: Next) -> Response {
    let headers = req.headers();
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("")
        .to_string();
    // Always, `--allow-remote` or not: a page on a rebound name (evil.example → 127.0.0.1) sends its own
    // name as Host, which is none of the names this service answers to.
    if !state.host_allowed(host_name(&host)) {
        return ApiError::new(
            403,
            "host_not_allowed",
            format!("Host {host:?} is not a name this runner answers to; use http://127.0.0.1:<port>/ or start it with --allow-host NAME (DNS-rebinding protection)"),
        )
        .into_response();
    }
    let origin = headers
        .get(header::ORIGIN)
        .and_then(|o| o.to_str().ok())
        .map(str::to_owned);
    let mut cors_origin = None;
    if let Some(origin) = &origin {
        let same = *origin == format!("http://{host}");
        if !same {
            if state.config.allowed_origins.iter().any(|a| a == origin) {
                cors_origin = Some(origin.clone());
            } else {
                return ApiError::new(
                    403,
                    "cross_origin",
                    format!("requests from origin {origin:?} are refused; start the runner with --allow-origin {origin} to allow it"),
                )
                .into_response();
            }
        }
    } else if headers.get("sec-fetch-site").and_then(|v| v.to_str().ok()) == Some("cross-site") {
        return ApiError::new(403, "cross_origin", "cross-site requests are refused")
            .into_response();
    }
    if let Some(origin) = &cors_origin
        && req.method() == Method::OPTIONS
    {
        let mut resp = StatusCode::NO_CONTENT.into_response();
        add_cors(resp.headers_mut(), origin);
        return resp;
    }
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > MAX_BODY_BYTES as u64) {
        return too_large().into_response();
    }
    let mut resp = next.run(req).await;
    let h = resp.headers_mut();
    h.insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
    h.insert("referrer-policy", HeaderValue::from_static("no-referrer"));
    if let Some(origin) = &cors_origin {
        add_cors(h, origin);
    }
    resp
}

fn add_cors(h: &mut HeaderMap, origin: &str) {
    if let Ok(v) = HeaderValue::from_str(origin) {
        h.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, v);
    }
    h.insert(header::VARY, HeaderValue::from_static("Origin"));
    h.insert(
        header::ACCESS_CONTROL_ALLOW_METHODS,
        HeaderValue::from_static("GET, POST"),
    );
    h.insert(
        header::ACCESS_CONTROL_ALLOW_HEADERS,
        HeaderValue::from_static("content-type"),
    );
}

/// `127.0.0.1:4890` → `127.0.0.1`; `[::1]:4890` → `::1`.
fn host_name(host: &str) -> &str {
    if let Some(rest) = host.strip_prefix('[') {
        return rest.split(']').next().unwrap_or("");
    }
    host.rsplit_once(':').map(|(h, _)| h).unwrap_or(host)
}

/// The body did not arrive within `ServerConfig::body_timeout` (tower-http's `TimeoutBody`).
fn is_body_timeout(e: &axum::Error) -> bool {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = cur {
        if err.is::<tower_http::timeout::TimeoutError>() {
            return true;
        }
        cur = err.source();
    }
    false
}

fn body_timeout() -> ApiError {
    ApiError::new(
        408,
        "body_timeout",
        "the request body did not arrive in time",
    )
}

fn too_large() -> ApiError {
    ApiError::new(
        413,
        "body_too_large",
        format!("request bodies are limited to {MAX_BODY_BYTES} bytes"),
    )
}

/// Read a JSON body: `application/json` required when a body is present (415), at most 256 KiB (413),
/// valid JSON (400). An empty body is `None` (the caller decides whether that is allowed).
async fn json_body(headers: &HeaderMap, body: Body) -> Result<Option<Value>, ApiError> {
    let bytes = axum::body::to_bytes(body, MAX_BODY_BYTES)
        .await
        .map_err(|e| {
            if is_body_timeout(&e) {
                body_timeout()
            } else {
                too_large()
            }
        })?;
    let ctype = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let is_json = ctype
        .split(';')
        .next()
        .map(str::trim)
        .is_some_and(|m| m.eq_ignore_ascii_case("application/json"));
    if bytes.is_empty() && ctype.is_empty() {
        return Ok(None);
    }
    if !is_json {
        return Err(ApiError::new(
            415,
            "unsupported_media_type",
            format!(
                "the body must be sent as application/json, not {:?}",
                if ctype.is_empty() { "(none)" } else { ctype }
            ),
        ));
    }
    if bytes.is_empty() {
        return Ok(None);
    }
    serde_json::from_slice(&bytes).map(Some).map_err(|e| {
        ApiError::bad_request("invalid_json", format!("the body is not valid JSON: {e}"))
    })
}

fn path_param(p: Result<Path<String>, PathRejection>) -> Result<String, ApiError> {
    p.map(|Path(s)| s)
        .map_err(|e| ApiError::bad_request("invalid_path_parameter", e.body_text()))
}

fn query(
    q: Result<Query<HashMap<String, String>>, QueryRejection>,
) -> Result<HashMap<String, String>, ApiError> {
    q.map(|Query(m)| m)
        .map_err(|e| ApiError::bad_request("invalid_query", e.body_text()))
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| ApiError::internal(format!("worker task failed: {e}")))?
}

async fn openapi() -> Response {
    (
        [(header::CONTENT_TYPE, "application/json")],
        include_str!("../../../../schemas/openapi.json"),
    )
        .into_response()
}

async fn status(State(s): Shared) -> Result<Response, ApiError> {
    let st = s.clone();
    // Both read the disk (task folders, the model file); neither waits for a model load.
    let (default_task, model) = blocking(move || {
        Ok((
            crate::tasks::default_task(&st.config.tasks_dir, &st.config.knowledge_dir),
            st.provider.cache_state(),
        ))
    })
    .await?;
    let jobs = &s.jobs;
    Ok(ok_json(json!({
        "name": "forge-runner",
        "version": env!("CARGO_PKG_VERSION"),
        "capabilities": ["agent", "agent.cancel", "agent.trace", "agent.tasks", "agent.models", "models.inspect", "models.unload", "artifacts", "example"],
        "test_policies_enabled": s.config.enable_test_policies,
        // The generation backend URL may carry credentials (`http://user:token@host`); never shown.
        "model": crate::redact::redacted(model, &s.config.jobs.redact_roots),
        "queue": { "length": jobs.queue_len(), "capacity": jobs.queue_capacity(), "running": jobs.running() },
        "uptime_s": s.started.elapsed().as_secs(),
        "default_task": default_task,
        "max_body_bytes": MAX_BODY_BYTES,
    })))
}

/// The task folders, read afresh (a folder added while the service runs is listed at once).
async fn list_tasks(State(s): Shared) -> Result<Response, ApiError> {
    let st = s.clone();
    let listed = blocking(move || {
        let tasks = crate::tasks::list(&st.config.tasks_dir, &st.config.knowledge_dir)
            .map_err(|e| ApiError::internal(e.to_string()))?;
        let default = tasks.iter().find(|t| t.is_valid()).map(|t| t.name.clone());
        Ok(json!({ "tasks": tasks, "default_task": default }))
    })
    .await?;
    Ok(ok_json(crate::redact::redacted(
        listed,
        &s.config.jobs.redact_roots,
    )))
}
