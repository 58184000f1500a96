//! Model inspection: is this GGUF usable, and what is it? Reads the header in pure Rust (no weights loaded).
//!
//! Errors are `ModelUnavailable` with the path reduced to its file name, so nothing here leaks a user's
//! directory layout into HTTP responses or traces. Not a loader: `engine` loads; this only checks and describes.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};
use std::time::UNIX_EPOCH;

use crate::fetch::{self, Manifest};
use crate::gguf::{self, GgufError};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("model unavailable ({file}): {reason}")]
pub struct ModelUnavailable {
    /// The file name only, never the directory.
    pub file: String,
    pub reason: String,
}

impl ModelUnavailable {
    pub fn new(path: &Path, reason: impl Into<String>) -> Self {
        Self {
            file: redact(path),
            reason: reason.into(),
        }
    }
}

/// A path as it may appear in public output: its file name.
pub fn redact(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "<model>".into())
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ModelInfo {
    pub file_name: String,
    pub bytes: u64,
    pub sha256: String,
    /// "computed" (this file's bytes, hashed now) or "cache" (the same file — path, size, mtime, inode and
    /// ctime all unchanged — was hashed earlier in this process). Never the manifest's claim: the identity
    /// is the hash of the file.
    pub sha256_source: String,
    pub gguf_version: u32,
    pub architecture: String,
    pub model_name: Option<String>,
    pub size_label: Option<String>,
    pub parameter_count: u64,
    pub quantization: Option<String>,
    pub context_length: Option<u64>,
    pub chat_template_present: bool,
    pub tensor_count: usize,
    /// Provenance from `<name>.manifest.json` next to the file, when present.
    pub manifest: Option<ManifestSummary>,
    /// llama.cpp bindings and system info of this build: `None` here (pure Rust); `forge_llama::inspect`
    /// fills it in.
    pub runtime: Option<RuntimeInfo>,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ManifestSummary {
    pub model: String,
    pub source: String,
    pub packages: Vec<String>,
    pub fetched_at: String,
    pub sha256_matches: bool,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct RuntimeInfo {
    pub bindings: String,
    pub system_info: String,
}

/// (path, size, mtime ns, device, inode, ctime ns): a file replaced by another of the same size — even
/// with its mtime put back, even renamed over it — changes at least one of them.
type HashKey = (PathBuf, u64, u128, u64, u64, i128);
fn hash_cache() -> &'static Mutex<HashMap<HashKey, String>> {
    static CACHE: OnceLock<Mutex<HashMap<HashKey, String>>> = OnceLock::new();
    CACHE.get_or_init(Default::default)
}

/// Inspect a GGUF file. Cheap after the first call for the same file (the sha256 is cached by size, mtime,
/// inode and ctime; any change recomputes it).
pub fn inspect(path: &Path) -> Result<ModelInfo, ModelUnavailable> {
    let meta = fs::metadata(path).map_err(|e| ModelUnavailable::new(path, describe_io(&e)))?;
    if !meta.is_file() {
        return Err(ModelUnavailable::new(path, "not a regular file"));
    }
    let header =
        gguf::read_header(path).map_err(|e| ModelUnavailable::new(path, gguf_reason(&e)))?;
    let bytes = meta.len();
    if let Some(needed) = header.required_file_size()
        && needed > bytes
    {
        return Err(ModelUnavailable::new(
            path,
            format!("file is truncated: tensors need {needed} bytes, the file has {bytes}"),
        ));
    }
    let architecture = header
        .architecture()
        .ok_or_else(|| ModelUnavailable::new(path, "GGUF metadata has no general.architecture"))?
        .to_string();

    let manifest = read_manifest(path);
    let mtime = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos());
    let canonical = fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let key = {
        use std::os::unix::fs::MetadataExt;
        let ctime = i128::from(meta.ctime()) * 1_000_000_000 + i128::from(meta.ctime_nsec());
        (canonical, bytes, mtime, meta.dev(), meta.ino(), ctime)
    };
    let cached = hash_cache()
        .lock()
        .expect("hash cache lock")
        .get(&key)
        .cloned();
    let (sha256, sha256_source) = if let Some(h) = cached {
        (h, "cache")
    } else {
        (
            fetch::sha256_file(path).map_err(|e| {
                ModelUnavailable::new(path, format!("cannot hash: {}", io_reason(&e)))
            })?,
            "computed",
        )
    };
    hash_cache()
        .lock()
        .expect("hash cache lock")
        .insert(key, sha256.clone());

    Ok(ModelInfo {
        file_name: redact(path),
        bytes,
        sha256: sha256.clone(),
        sha256_source: sha256_source.into(),
        gguf_version: header.version,
        architecture,
        model_name: header.str("general.name").map(str::to_string),
        size_label: header.str("general.size_label").map(str::to_string),
        parameter_count: header.parameter_count(),
        quantization: header.quantization().map(str::to_string),
        context_length: header.context_length(),
        chat_template_present: header
            .str("tokenizer.chat_template")
            .is_some_and(|t| !t.is_empty()),
        tensor_count: header.tensors.len(),
        manifest: manifest.map(|(m, _)| ManifestSummary {
            sha256_matches: m.sha256.eq_ignore_ascii_case(&sha256),
            model: m.model,
            source: m.source,
            packages: m
                .parts
                .iter()
                .map(|p| format!("{}=={}", p.package, p.version))
                .collect(),
            fetched_at: m.fetched_at,
        }),
        runtime: None,
    })
}

/// The structural part of `inspect` without hashing: GGUF header readable and the file long enough for
/// every tensor. Run before handing a file to llama.cpp, whose own failure message says nothing useful.
pub fn quick_check(path: &Path) -> Result<(), ModelUnavailable> {
    let meta = fs::metadata(path).map_err(|e| ModelUnavailable::new(path, describe_io(&e)))?;
    let header =
        gguf::read_header(path).map_err(|e| ModelUnavailable::new(path, gguf_reason(&e)))?;
    if let Some(needed) = header.required_file_size()
        && needed > meta.len()
    {
        return Err(ModelUnavailable::new(
            path,
            format!(
                "file is truncated: tensors need {needed} bytes, the file has {}",
                meta.len()
            ),
        ));
    }
    Ok(())
}

fn read_manifest(model: &Path) -> Option<(Manifest, u128)> {
    let stem = model.file_stem()?.to_string_lossy().into_owned();
    let path = model.with_file_name(format!("{stem}.manifest.json"));
    let mtime = fs::metadata(&path)
        .ok()?
        .modified()
        .ok()?
        .duration_since(UNIX_EPOCH)
        .ok()?
        .as_nanos();
    let manifest = serde_json::from_str(&fs::read_to_string(&path).ok()?).ok()?;
    Some((manifest, mtime))
}

fn describe_io(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => {
            "file not found (run `cargo xtask model fetch` or pass --gguf PATH)".into()
        }
        std::io::ErrorKind::PermissionDenied => "permission denied".into(),
        _ => format!("cannot read: {}", e.kind()),
    }
}

fn gguf_reason(e: &GgufError) -> String {
    match e {
        GgufError::Io(io) => describe_io(io),
        other => other.to_string(),
    }
}

fn io_reason(e: &fetch::FetchError) -> String {
    match e {
        fetch::FetchError::Io { source, .. } => describe_io(source),
        other => other.to_string(),
    }
}
