//! The example package routes: the manifest of tracked files, one file with its stage and outline, the chain,
//! a run's events followed to their sources, the zip.

use std::collections::HashMap;

use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::error::ApiError;

use super::*;

pub(super) async fn example_manifest(State(s): Shared) -> Result<Response, ApiError> {
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

pub(super) async fn example_file(
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
pub(super) async fn example_chain() -> Result<Response, ApiError> {
    let chain = crate::sources::chain()?;
    Ok(ok_json(
        json!({ "stages": chain.stages, "events": chain.events }),
    ))
}

/// "Follow one decision": a finished run's events in order, each linked to the files that produced it.
pub(super) async fn follow_run(
    State(s): Shared,
    id: Result<Path<String>, PathRejection>,
) -> Result<Response, ApiError> {
    let id = path_param(id)?;
    let snap = s.jobs.snapshot(&id, 0)?;
    if snap["terminal"] != json!(true) {
        return Err(ApiError::new(
            409,
            "run_not_finished",
            format!(
                "run {id} is {}; follow it once it has finished",
                snap["status"].as_str().unwrap_or("not finished")
            ),
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

pub(super) async fn example_zip(State(s): Shared) -> Result<Response, ApiError> {
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
