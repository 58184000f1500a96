//! The run routes: create, list, poll (events after a sequence number), cancel, the trace export and a
//! run's artifacts.

use std::collections::HashMap;

use axum::body::Body;
use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::error::ApiError;
use crate::request;

use super::*;

pub(super) async fn create_run(
    State(s): Shared,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let body = json_body(&headers, body).await?.ok_or_else(|| {
        ApiError::bad_request(
            "invalid_request",
            "send a JSON object (use {} for all defaults)",
        )
    })?;
    let models = listed_models(&s).await?;
    let st = s.clone();
    let (spec, public) =
        blocking(move || request::parse_run_request(&body, &st.config, &models)).await?;
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

pub(super) async fn list_runs(
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

pub(super) async fn get_run(
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

pub(super) async fn cancel_run(
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

pub(super) async fn run_trace(
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

pub(super) async fn artifact(
    State(s): Shared,
    id: Result<Path<String>, PathRejection>,
) -> Result<Response, ApiError> {
    let id = path_param(id)?;
    let (path, _run) = s.jobs.artifact(&id)?;
    let runs_dir = s.config.runs_dir.clone();
    let shown = id.clone();
    let data = blocking(move || {
        // Below the runs directory, no link followed (a link planted in artifacts/ is never served).
        let rel = path
            .strip_prefix(&runs_dir)
            .map(std::path::Path::to_path_buf)
            .map_err(|_| ApiError::internal("artifact outside the runs directory"))?;
        crate::safe_fs::read_under(&runs_dir, &rel, crate::safe_fs::MAX_SERVED_BYTES).map_err(|e| {
            if e.is_not_found() {
                ApiError::not_found(
                    "artifact_missing",
                    format!("artifact {shown} is recorded but its file is gone"),
                )
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
