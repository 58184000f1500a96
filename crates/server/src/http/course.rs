//! The course and evaluation routes: thin handlers over `course.rs` and `evaluation.rs`.

use std::collections::HashMap;

use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};

use crate::error::ApiError;

use super::*;

// ---------- course view: thin handlers over course.rs ----------

pub(super) fn course_error(e: crate::course::CourseError) -> ApiError {
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

pub(super) async fn evaluation_reports(State(s): Shared) -> Result<Response, ApiError> {
    let root = s.config.root.clone();
    Ok(ok_json(
        blocking(move || Ok(crate::evaluation::reports(&root))).await?,
    ))
}

pub(super) async fn evaluation_chart(
    State(s): Shared,
    model: Result<Path<String>, PathRejection>,
) -> Result<Response, ApiError> {
    let model = path_param(model)?;
    let root = s.config.root.clone();
    let png = blocking(move || {
        crate::evaluation::chart(&root, &model).map_err(|e| match e {
            crate::evaluation::EvaluationError::UnknownModel(_) => {
                ApiError::not_found("evaluation_unknown", e.to_string())
            }
            crate::evaluation::EvaluationError::Read(ref r) if r.is_not_found() => {
                ApiError::not_found("evaluation_chart_missing", e.to_string())
            }
            crate::evaluation::EvaluationError::Read(_) => {
                ApiError::new(403, "file_refused", e.to_string())
            }
        })
    })
    .await?;
    Ok((
        [
            (header::CONTENT_TYPE, "image/png"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        png,
    )
        .into_response())
}

pub(super) async fn course_stages(State(s): Shared) -> Result<Response, ApiError> {
    let root = s.config.root.clone();
    Ok(ok_json(
        blocking(move || crate::course::stages(&root).map_err(course_error)).await?,
    ))
}

pub(super) async fn course_guide(
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

pub(super) async fn course_progress(State(s): Shared) -> Result<Response, ApiError> {
    let root = s.config.root.clone();
    Ok(ok_json(
        blocking(move || Ok(crate::course::progress(&root))).await?,
    ))
}
