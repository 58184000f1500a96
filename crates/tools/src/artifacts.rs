//! Artifact records and the write-once artifact store (stage 05's idempotency
//! registry keyed by the canonical-argument fingerprint).
//!
//! The store guarantees one file per distinct request: the same tool with the
//! same canonical arguments replays the stored record instead of rendering
//! again, files are written under a temporary name and renamed into place, and
//! a failed write leaves nothing behind. It does not render anything itself and
//! keeps its index in memory for the life of one run.

use std::fs;
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use idempotent_actions::{IdempotencyError, IdempotencyRegistry};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::ToolError;

/// Metadata of one file written by a tool. The file lives at
/// `<artifact_dir>/<file_name>`; `id` is opaque and never a path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArtifactRecord {
    /// `art-` + 16 hex digits of the request fingerprint: same request, same id.
    pub id: String,
    pub media_type: String,
    /// Size of the file in bytes.
    pub bytes: u64,
    /// blake3 of the file contents, hex.
    pub blake3: String,
    /// Plain file name inside the artifact directory.
    pub file_name: String,
}

/// Write-once artifact store shared by every attempt of a run.
///
/// Cloning shares the same index, so a tool attempt running on another thread
/// (e.g. under a timeout) and its retry see each other: the mutex is held for
/// the whole render-and-write, so a retry of a still-running write waits for it
/// and then replays its record instead of producing a second file.
#[derive(Debug, Clone, Default)]
pub struct ArtifactStore {
    inner: Arc<Mutex<IdempotencyRegistry<ArtifactRecord>>>,
}

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

impl ArtifactStore {
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of distinct artifacts written (or adopted) through this store.
    pub fn len(&self) -> usize {
        self.inner.lock().map_or(0, |registry| registry.len())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Returns the record for `(tool, arguments)`, calling `render` only the
    /// first time. The second element is `true` when the record was replayed.
    ///
    /// `arguments` should be the validated, defaults-applied arguments; they are
    /// canonicalised here, so key order and `79` vs `79.0` do not matter.
    pub fn write_once(
        &self,
        artifact_dir: &Path,
        tool: &str,
        arguments: &Value,
        media_type: &str,
        extension: &str,
        render: impl FnOnce() -> Result<Vec<u8>, ToolError>,
    ) -> Result<(ArtifactRecord, bool), ToolError> {
        let request = fingerprint(tool, arguments);
        // Stage 05's guard: one key may only ever mean one request. The key is the
        // request; the fingerprint also binds the directory, so the same store
        // cannot silently point one id at two different places.
        let bound = blake3::hash(format!("{request}\0{}", artifact_dir.display()).as_bytes())
            .to_hex()
            .to_string();
        let id = format!("art-{}", &request[..16]);
        let file_name = format!("{id}.{extension}");

        let mut registry = self.inner.lock().map_err(|_| {
            ToolError::permanent(
                "artifact_store_poisoned",
                "an earlier artifact write panicked",
            )
        })?;
        let outcome = registry.try_execute_once(&request, &bound, || {
            let bytes = render()?;
            write_atomically(artifact_dir, &file_name, &bytes)?;
            Ok::<_, ToolError>(ArtifactRecord {
                id: id.clone(),
                media_type: media_type.to_owned(),
                bytes: bytes.len() as u64,
                blake3: blake3::hash(&bytes).to_hex().to_string(),
                file_name: file_name.clone(),
            })
        });
        match outcome {
            Ok((record, replayed)) => {
                if replayed {
                    verify_on_disk(artifact_dir, &record)?;
                }
                Ok((record, replayed))
            }
            Err(IdempotencyError::Operation(error)) => Err(error),
            Err(IdempotencyError::FingerprintMismatch { .. }) => Err(ToolError::permanent(
                "artifact_conflict",
                format!(
                    "artifact {id} was already written to a different artifact directory by this store"
                ),
            )),
            Err(other) => Err(ToolError::permanent(
                "artifact_store_failed",
                other.to_string(),
            )),
        }
    }
}

/// blake3 (hex) of the canonical JSON of `{"tool": .., "arguments": ..}`.
pub fn fingerprint(tool: &str, arguments: &Value) -> String {
    let request = serde_json::json!({ "tool": tool, "arguments": arguments });
    blake3::hash(canonical_json(&request).as_bytes())
        .to_hex()
        .to_string()
}

/// Deterministic JSON text: object keys sorted, integer-valued floats written as
/// integers, no whitespace. Two requests that mean the same thing get the same text.
pub fn canonical_json(value: &Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Null | Value::Bool(_) | Value::String(_) => out.push_str(&value.to_string()),
        Value::Number(n) => match n.as_f64() {
            Some(x) if n.is_f64() => out.push_str(&super::number_value(x).to_string()),
            _ => out.push_str(&n.to_string()),
        },
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                write_canonical(&map[key], out);
            }
            out.push('}');
        }
    }
}

/// Writes `bytes` to `dir/file_name` via a unique temporary name and a rename,
/// so readers never see a half-written file and a failure leaves no file.
fn write_atomically(dir: &Path, file_name: &str, bytes: &[u8]) -> Result<(), ToolError> {
    let io_error = |what: &str, error: std::io::Error| {
        // Only the file name: absolute paths never reach observations or traces.
        ToolError::transient(
            "artifact_write_failed",
            format!("{what} {file_name}: {error}"),
        )
    };
    fs::create_dir_all(dir).map_err(|e| io_error("creating the artifact directory for", e))?;
    let temp_name = format!(
        ".{file_name}.tmp-{}-{}",
        std::process::id(),
        TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)
    );
    let temp_path = dir.join(&temp_name);
    let result = (|| {
        let mut file = fs::File::create(&temp_path)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        fs::rename(&temp_path, dir.join(file_name))
    })();
    if let Err(error) = result {
        let _ = fs::remove_file(&temp_path);
        return Err(io_error("writing", error));
    }
    Ok(())
}

/// A replayed record must still describe the file on disk.
fn verify_on_disk(dir: &Path, record: &ArtifactRecord) -> Result<(), ToolError> {
    let bytes = fs::read(dir.join(&record.file_name)).map_err(|e| {
        ToolError::permanent(
            "artifact_missing",
            format!(
                "artifact {} ({}) can no longer be read: {e}",
                record.id, record.file_name
            ),
        )
    })?;
    if blake3::hash(&bytes).to_hex().as_str() != record.blake3 {
        return Err(ToolError::permanent(
            "artifact_modified",
            format!(
                "artifact {} ({}) changed on disk after it was written",
                record.id, record.file_name
            ),
        ));
    }
    Ok(())
}
