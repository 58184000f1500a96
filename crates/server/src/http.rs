//! The axum layer: routes, the loopback/origin/size guards, JSON errors. The only module that uses axum.
//!
//! Handlers are thin: they parse, call `jobs`/`example`/the model backend, and shape responses. Blocking
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
use crate::{AppState, MAX_BODY_BYTES, request, web};

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
    Router::new()
        .route("/", get(web::index))
        .route("/app.js", get(web::app_js))
        .route("/style.css", get(web::style_css))
        .route("/openapi.json", get(openapi))
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
        .route("/course.js", get(web::course_js))
        .route("/course.css", get(web::course_css))
        .route("/course/stages", get(course_stages))
        .route("/course/stages/{id}/guide", get(course_guide))
        .route("/course/progress", get(course_progress))
        // evaluation panel (evaluation.rs, web/eval.js)
        .route("/eval.js", get(web::eval_js))
        .route("/agent/evaluation", get(evaluation_reports))
        .route("/agent/evaluation/{model}/success.png", get(evaluation_chart))
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
    ApiError::new(408, "body_timeout", "the request body did not arrive in time")
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
        .map_err(|e| if is_body_timeout(&e) { body_timeout() } else { too_large() })?;
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
        include_str!("../../../schemas/openapi.json"),
    )
        .into_response()
}

async fn status(State(s): Shared) -> Result<Response, ApiError> {
    let st = s.clone();
    // Both read the disk (task folders, the model file); neither waits for a model load.
    let (default_task, model) = blocking(move || {
        Ok((
            crate::tasks::default_task(&st.config.tasks_dir, &st.config.knowledge_dir),
            st.backend.cache_state(),
        ))
    })
    .await?;
    let jobs = &s.jobs;
    Ok(ok_json(json!({
        "name": "forge-runner",
        "version": env!("CARGO_PKG_VERSION"),
        "capabilities": ["agent", "agent.cancel", "agent.trace", "agent.tasks", "agent.models", "models.inspect", "models.unload", "artifacts", "example"],
        "test_policies_enabled": s.config.enable_test_policies,
        // The backend URL may carry credentials (`http://user:token@host`); never shown.
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

/// The models runs may name, read afresh from the backend.
async fn list_models(State(s): Shared) -> Result<Response, ApiError> {
    let backend = s.backend.clone();
    let models = blocking(move || Ok(backend.models())).await?;
    let default = models.iter().find(|m| m.default).map(|m| m.name.clone());
    Ok(ok_json(
        json!({ "models": models, "default_model": default, "cache": crate::redact::redacted(s.backend.cache_state(), &s.config.jobs.redact_roots) }),
    ))
}

/// The models listed right now, for validating a request's `model`.
async fn listed_models(s: &Arc<AppState>) -> Result<Vec<crate::ModelEntry>, ApiError> {
    let backend = s.backend.clone();
    blocking(move || Ok(backend.models())).await
}

async fn agent_schema() -> Response {
    ok_json(crate::engine::agent_schema())
}

async fn models_inspect(
    State(s): Shared,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let body = json_body(&headers, body).await?.unwrap_or(json!({}));
    let obj = body.as_object().ok_or_else(|| ApiError::bad_request("invalid_request", "the body must be a JSON object"))?;
    if let Some(k) = obj.keys().find(|k| *k != "path" && *k != "model") {
        return Err(ApiError::invalid_fields(vec![crate::FieldError { field: k.clone(), message: "unknown field; allowed: path, model".into() }]));
    }
    let mut path = match obj.get("path") {
        None | Some(Value::Null) => None,
        Some(Value::String(p)) if !p.is_empty() && p.len() <= 4096 => Some(p.clone()),
        Some(other) => {
            return Err(ApiError::invalid_fields(vec![crate::FieldError {
                field: "path".into(),
                message: format!("must be a non-empty path string, got {other}"),
            }]));
        }
    };
    // `model`: a listed name (GET /agent/models) — inspect exactly the file a run on it would load.
    match obj.get("model") {
        None | Some(Value::Null) => {}
        Some(Value::String(name)) if path.is_none() => {
            let models = listed_models(&s).await?;
            let Some(m) = models.iter().find(|m| m.name == *name) else {
                let listed: Vec<&str> = models.iter().map(|m| m.name.as_str()).collect();
                return Err(ApiError::invalid_fields(vec![crate::FieldError {
                    field: "model".into(),
                    message: format!("no model named {name:?}; listed: [{}]", listed.join(", ")),
                }]));
            };
            path = Some(m.path.display().to_string());
        }
        Some(other) => {
            return Err(ApiError::invalid_fields(vec![crate::FieldError {
                field: "model".into(),
                message: format!(
                    "must be a listed model name and not combined with path, got {other}"
                ),
            }]));
        }
    }
    let backend = s.backend.clone();
    let roots = s.config.jobs.redact_roots.clone();
    let (scope, root) = (s.config.inspect_scope.clone(), s.config.root.clone());
    let facts = blocking(move || {
        // The scope check comes first: a path outside it is refused before anything opens it.
        let path = match path {
            None => None,
            Some(p) => Some(
                scope
                    .resolve(&root, &p)
                    .map_err(|e| scope_error(e, &roots))?
                    .display()
                    .to_string(),
            ),
        };
        backend
            .inspect(path.as_deref())
            .map_err(|e| backend_error(e, &roots))
    })
    .await?;
    Ok(ok_json(
        json!({ "ok": true, "model": crate::redact::redacted(facts, &s.config.jobs.redact_roots) }),
    ))
}

fn scope_error(e: crate::OutsideScope, roots: &[String]) -> ApiError {
    let message = crate::redact::redacted(Value::String(e.to_string()), roots)
        .as_str()
        .unwrap_or_default()
        .to_string();
    ApiError::new(403, "path_not_allowed", message)
}

fn backend_error(e: crate::BackendError, roots: &[String]) -> ApiError {
    let message = crate::redact::redacted(Value::String(e.message), roots)
        .as_str()
        .unwrap_or_default()
        .to_string();
    let status = if e.code == "model_unavailable" {
        503
    } else {
        400
    };
    ApiError::new(status, e.code, message)
}

async fn models_unload(
    State(s): Shared,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    json_body(&headers, body).await?;
    let backend = s.backend.clone();
    let roots = s.config.jobs.redact_roots.clone();
    let out = blocking(move || backend.unload().map_err(|e| backend_error(e, &roots))).await?;
    Ok(ok_json(out))
}

async fn create_run(State(s): Shared, headers: HeaderMap, body: Body) -> Result<Response, ApiError> {
    let body = json_body(&headers, body)
        .await?
        .ok_or_else(|| ApiError::bad_request("invalid_request", "send a JSON object (use {} for all defaults)"))?;
    let models = listed_models(&s).await?;
    let st = s.clone();
    let (spec, public) = blocking(move || request::parse_run_request(&body, &st.config, &models)).await?;
    // Store I/O (the run's directory) stays off the async workers.
    let jobs = s.jobs.clone();
    let accepted = blocking(move || jobs.submit(spec, public)).await?;
    Ok((
        StatusCode::ACCEPTED,
        [(header::CACHE_CONTROL, "no-store")],
        axum::Json(accepted),
    )
        .into_response())
}

async fn list_runs(
    State(s): Shared,
    q: Result<Query<HashMap<String, String>>, QueryRejection>,
) -> Result<Response, ApiError> {
    let q = query(q)?;
    let limit = match q.get("limit") {
        None => 50,
        Some(v) => v
            .parse::<usize>()
            .ok()
            .filter(|n| (1..=500).contains(n))
            .ok_or_else(|| {
                ApiError::bad_request(
                    "invalid_query",
                    format!("limit must be an integer in 1..=500, got {v:?}"),
                )
            })?,
    };
    Ok(ok_json(s.jobs.list(limit)))
}

async fn get_run(
    State(s): Shared,
    id: Result<Path<String>, PathRejection>,
    q: Result<Query<HashMap<String, String>>, QueryRejection>,
) -> Result<Response, ApiError> {
    let id = path_param(id)?;
    let q = query(q)?;
    let after = match q.get("after_seq") {
        None => 0,
        Some(v) => v.parse::<u64>().map_err(|_| {
            ApiError::bad_request(
                "invalid_query",
                format!("after_seq must be a non-negative integer, got {v:?}"),
            )
        })?,
    };
    Ok(ok_json(s.jobs.snapshot(&id, after)?))
}

async fn cancel_run(
    State(s): Shared,
    id: Result<Path<String>, PathRejection>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let id = path_param(id)?;
    json_body(&headers, body).await?;
    let jobs = s.jobs.clone();
    Ok(ok_json(blocking(move || jobs.cancel(&id)).await?))
}

async fn run_trace(
    State(s): Shared,
    id: Result<Path<String>, PathRejection>,
) -> Result<Response, ApiError> {
    let id = path_param(id)?;
    let jobs = s.jobs.clone();
    let traced = id.clone();
    // Redaction and serialisation walk every event: a blocking thread's work, not an async worker's.
    let body = blocking(move || {
        let trace = jobs.trace(&traced)?;
        serde_json::to_vec_pretty(&trace).map_err(|e| ApiError::internal(e.to_string()))
    })
    .await?;
    let disposition = format!("attachment; filename=\"{id}.trace.json\"");
    Ok((
        [
            (header::CONTENT_TYPE, "application/json".to_string()),
            (header::CONTENT_DISPOSITION, disposition),
            (header::CACHE_CONTROL, "no-store".into()),
        ],
        body,
    )
        .into_response())
}

async fn artifact(
    State(s): Shared,
    id: Result<Path<String>, PathRejection>,
) -> Result<Response, ApiError> {
    let id = path_param(id)?;
    let (path, _run) = s.jobs.artifact(&id)?;
    let runs_dir = s.config.runs_dir.clone();
    let shown = id.clone();
    let data = blocking(move || {
        // Below the runs directory, no link followed (a link planted in artifacts/ is never served).
        let rel = path.strip_prefix(&runs_dir).map(std::path::Path::to_path_buf).map_err(|_| ApiError::internal("artifact outside the runs directory"))?;
        crate::safe_fs::read_under(&runs_dir, &rel, crate::safe_fs::MAX_SERVED_BYTES).map_err(|e| {
            if e.is_not_found() {
                ApiError::not_found("artifact_missing", format!("artifact {shown} is recorded but its file is gone"))
            } else {
                ApiError::new(403, "file_refused", format!("artifact {shown}: {e}"))
            }
        })
    })
    .await?;
    if !data.starts_with(b"\x89PNG\r\n\x1a\n") {
        return Err(ApiError::internal(format!(
            "artifact {id} is not a PNG file"
        )));
    }
    Ok((
        [
            (header::CONTENT_TYPE, "image/png"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        data,
    )
        .into_response())
}

async fn example_manifest(State(s): Shared) -> Result<Response, ApiError> {
    let st = s.clone();
    let v = blocking(move || {
        let listing = st.example.enumerate()?;
        let zip = st.example.zip(&listing)?;
        Ok(json!({
            "version": env!("CARGO_PKG_VERSION"),
            "root_folder": crate::example::ZIP_ROOT,
            "generated_at_ms": crate::jobs::now_ms(),
            "file_count": listing.files.len(),
            "bytes": listing.total_bytes,
            "tree_blake3": listing.tree_blake3,
            "zip": { "bytes": zip.len(), "blake3": blake3::hash(&zip).to_hex().to_string(), "download_path": "/example.zip" },
            "files": listing.files,
            "skipped": listing.skipped,
        }))
    })
    .await?;
    Ok(ok_json(v))
}

async fn example_file(
    State(s): Shared,
    q: Result<Query<HashMap<String, String>>, QueryRejection>,
) -> Result<Response, ApiError> {
    let q = query(q)?;
    let path = q.get("path").cloned().ok_or_else(|| {
        ApiError::bad_request("invalid_query", "the path query parameter is required")
    })?;
    let raw = q.get("raw").is_some_and(|v| v == "1" || v == "true");
    let st = s.clone();
    let (entry, data) = blocking(move || st.example.read_file(&path)).await?;
    if raw {
        let ctype = match entry.language {
            "image" if entry.path.ends_with(".png") => "image/png",
            "image" => "application/octet-stream",
            _ if std::str::from_utf8(&data).is_ok() => "text/plain; charset=utf-8",
            _ => "application/octet-stream",
        };
        let name = entry
            .path
            .rsplit('/')
            .next()
            .unwrap_or("file")
            .replace('"', "");
        return Ok((
            [
                (header::CONTENT_TYPE, ctype.to_string()),
                (
                    header::CONTENT_DISPOSITION,
                    format!("attachment; filename=\"{name}\""),
                ),
                (
                    "x-blake3".parse().expect("static header name"),
                    entry.blake3.clone(),
                ),
            ],
            data,
        )
            .into_response());
    }
    let text = String::from_utf8(data).ok();
    // Public items only for Rust text; every other file has an empty list, not a guess.
    let items = match (&text, entry.language) {
        (Some(t), "rust") => crate::sources::public_items(t),
        _ => Vec::new(),
    };
    Ok(ok_json(json!({
        "path": entry.path, "bytes": entry.bytes, "blake3": entry.blake3, "language": entry.language,
        "download_path": entry.download_path, "role": entry.role, "role_source": entry.role_source,
        "stage": entry.stage, "items": items,
        "binary": text.is_none(), "content": text,
    })))
}

/// The chain as data: stages in order (with their files and patterns) and where each trace phase comes from.
async fn example_chain() -> Result<Response, ApiError> {
    let chain = crate::sources::chain()?;
    Ok(ok_json(json!({ "stages": chain.stages, "events": chain.events })))
}

/// "Follow one decision": a finished run's events in order, each linked to the files that produced it.
async fn follow_run(
    State(s): Shared,
    id: Result<Path<String>, PathRejection>,
) -> Result<Response, ApiError> {
    let id = path_param(id)?;
    let snap = s.jobs.snapshot(&id, 0)?;
    if snap["terminal"] != json!(true) {
        return Err(ApiError::new(
            409,
            "run_not_finished",
            format!("run {id} is {}; follow it once it has finished", snap["status"].as_str().unwrap_or("not finished")),
        ));
    }
    let chain = crate::sources::chain()?;
    let events = snap["events"].as_array().map(Vec::as_slice).unwrap_or(&[]);
    let result = &snap["result"];
    Ok(ok_json(json!({
        "id": id,
        "status": snap["status"],
        "stop_reason": result["stop_reason"],
        "task": snap["request"]["task"],
        "events": crate::sources::follow(chain, events),
    })))
}

async fn example_zip(State(s): Shared) -> Result<Response, ApiError> {
    let st = s.clone();
    let (zip, tree) = blocking(move || {
        let listing = st.example.enumerate()?;
        Ok((st.example.zip(&listing)?, listing.tree_blake3))
    })
    .await?;
    let hash = blake3::hash(&zip).to_hex().to_string();
    Ok((
        [
            (header::CONTENT_TYPE, "application/zip".to_string()),
            (
                header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"{}.zip\"", crate::example::ZIP_ROOT),
            ),
            ("x-blake3".parse().expect("static header name"), hash),
            ("x-tree-blake3".parse().expect("static header name"), tree),
        ],
        zip.as_ref().clone(),
    )
        .into_response())
}

// ---------- course view: thin handlers over course.rs ----------

fn course_error(e: crate::course::CourseError) -> ApiError {
    use crate::course::CourseError;
    match e {
        CourseError::UnknownStage { .. } => ApiError::not_found("unknown_stage", e.to_string()),
        CourseError::UnknownLang(_) => ApiError::bad_request("invalid_query", e.to_string()),
        CourseError::Unreadable { .. } => {
            ApiError::not_found("course_file_unreadable", e.to_string())
        }
        CourseError::NoStages(_) => ApiError::not_found("no_course", e.to_string()),
    }
}

async fn evaluation_reports(State(s): Shared) -> Result<Response, ApiError> {
    let root = s.config.root.clone();
    Ok(ok_json(blocking(move || Ok(crate::evaluation::reports(&root))).await?))
}

async fn evaluation_chart(State(s): Shared, model: Result<Path<String>, PathRejection>) -> Result<Response, ApiError> {
    let model = path_param(model)?;
    let root = s.config.root.clone();
    let png = blocking(move || {
        crate::evaluation::chart(&root, &model).map_err(|e| match e {
            crate::evaluation::EvaluationError::UnknownModel(_) => ApiError::not_found("evaluation_unknown", e.to_string()),
            crate::evaluation::EvaluationError::Read(ref r) if r.is_not_found() => ApiError::not_found("evaluation_chart_missing", e.to_string()),
            crate::evaluation::EvaluationError::Read(_) => ApiError::new(403, "file_refused", e.to_string()),
        })
    })
    .await?;
    Ok(([(header::CONTENT_TYPE, "image/png"), (header::CACHE_CONTROL, "no-store")], png).into_response())
}

async fn course_stages(State(s): Shared) -> Result<Response, ApiError> {
    let root = s.config.root.clone();
    Ok(ok_json(
        blocking(move || crate::course::stages(&root).map_err(course_error)).await?,
    ))
}

async fn course_guide(
    State(s): Shared,
    id: Result<Path<String>, PathRejection>,
    q: Result<Query<HashMap<String, String>>, QueryRejection>,
) -> Result<Response, ApiError> {
    let id = path_param(id)?;
    let lang = query(q)?
        .get("lang")
        .cloned()
        .unwrap_or_else(|| "en".to_owned());
    let root = s.config.root.clone();
    Ok(ok_json(
        blocking(move || crate::course::guide(&root, &id, &lang).map_err(course_error)).await?,
    ))
}

async fn course_progress(State(s): Shared) -> Result<Response, ApiError> {
    let root = s.config.root.clone();
    Ok(ok_json(
        blocking(move || Ok(crate::course::progress(&root))).await?,
    ))
}
