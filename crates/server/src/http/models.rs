//! The model routes: the models runs may name, inspection of a GGUF inside the allowed scope, unloading.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Response;
use serde_json::{Value, json};

use crate::AppState;
use crate::error::ApiError;

use super::*;

/// The models runs may name, read afresh from the provider.
pub(super) async fn list_models(State(s): Shared) -> Result<Response, ApiError> {
    let provider = s.provider.clone();
    let models = blocking(move || Ok(provider.models())).await?;
    let default = models.iter().find(|m| m.default).map(|m| m.name.clone());
    Ok(ok_json(
        json!({ "models": models, "default_model": default, "cache": crate::redact::redacted(s.provider.cache_state(), &s.config.jobs.redact_roots) }),
    ))
}

/// The models listed right now, for validating a request's `model`.
pub(super) async fn listed_models(s: &Arc<AppState>) -> Result<Vec<crate::ModelEntry>, ApiError> {
    let provider = s.provider.clone();
    blocking(move || Ok(provider.models())).await
}

pub(super) async fn agent_schema() -> Response {
    ok_json(crate::run_bridge::agent_schema())
}

pub(super) async fn models_inspect(
    State(s): Shared,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let body = json_body(&headers, body).await?.unwrap_or(json!({}));
    let obj = body.as_object().ok_or_else(|| {
        ApiError::bad_request("invalid_request", "the body must be a JSON object")
    })?;
    if let Some(k) = obj.keys().find(|k| *k != "path" && *k != "model") {
        return Err(ApiError::invalid_fields(vec![crate::FieldError {
            field: k.clone(),
            message: "unknown field; allowed: path, model".into(),
        }]));
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
    let provider = s.provider.clone();
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
        provider
            .inspect(path.as_deref())
            .map_err(|e| provider_error(e, &roots))
    })
    .await?;
    Ok(ok_json(
        json!({ "ok": true, "model": crate::redact::redacted(facts, &s.config.jobs.redact_roots) }),
    ))
}

pub(super) fn scope_error(e: crate::OutsideScope, roots: &[String]) -> ApiError {
    let message = crate::redact::redacted(Value::String(e.to_string()), roots)
        .as_str()
        .unwrap_or_default()
        .to_string();
    ApiError::new(403, "path_not_allowed", message)
}

pub(super) fn provider_error(e: crate::ProviderError, roots: &[String]) -> ApiError {
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

pub(super) async fn models_unload(
    State(s): Shared,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    json_body(&headers, body).await?;
    let provider = s.provider.clone();
    let roots = s.config.jobs.redact_roots.clone();
    let out = blocking(move || provider.unload().map_err(|e| provider_error(e, &roots))).await?;
    Ok(ok_json(out))
}
