//! The chapter's routes: the chapter text as data (`GET /course/chapter`) and the decision sandbox
//! (`POST /agent/decisions/validate`, a dry run through the runtime's own validation; no tool runs).

use axum::body::Body;
use axum::http::HeaderMap;
use axum::response::Response;

use crate::error::ApiError;
use crate::request;

use super::*;

pub(super) async fn chapter_text() -> Response {
    ok_json(crate::chapter::chapter().clone())
}

pub(super) async fn validate_decision(
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let body = json_body(&headers, body).await?.ok_or_else(|| {
        ApiError::bad_request(
            "invalid_request",
            "send a JSON object {\"text\": \"<the proposed decision>\"}",
        )
    })?;
    let text = request::parse_proposal_request(&body)?;
    let dry =
        runtime::dry_run::validate_proposal(&text, runtime::registry::ToolRegistry::builtin());
    Ok(ok_json(serde_json::to_value(dry).map_err(|e| {
        ApiError::internal(format!("dry run not serialisable: {e}"))
    })?))
}
