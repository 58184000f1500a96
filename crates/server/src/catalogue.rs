//! The model catalogue: the identity a run records (`ModelEntry`) and the scan of fetch manifests in `models/`.
//!
//! Axum-free and llama-free. `cargo xtask model fetch` writes `<name>.gguf` next to `<name>.manifest.json`;
//! a model is listed only when its manifest parses and the file it names exists with the manifest's byte
//! count. GGUF facts (quantization, parameters, context length) are added by the provider, which can read
//! the header; this module only reads JSON and file sizes.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Which model produced a run: stored in the run's request and result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelEntry {
    /// What `POST /agent/runs` takes as `model`.
    pub name: String,
    /// The GGUF file name (never a directory).
    pub file: String,
    pub bytes: u64,
    pub sha256: String,
    #[serde(default)]
    pub quantization: Option<String>,
    #[serde(default)]
    pub parameters: Option<u64>,
    #[serde(default)]
    pub context_length: Option<u64>,
    #[serde(default)]
    pub fetched_at: Option<String>,
    /// `models_dir` (a fetch manifest) or `gguf_flag` (`runner serve --gguf`).
    pub source: String,
    /// The model a run uses when the request names none.
    #[serde(default)]
    pub default: bool,
    /// Where the file is; never serialised (paths stay out of responses and traces).
    #[serde(skip)]
    pub path: PathBuf,
}

/// The fields of a fetch manifest this module needs (xtask writes more; unknown fields are ignored).
#[derive(Debug, Deserialize)]
struct ManifestFile {
    model: String,
    file: String,
    bytes: u64,
    sha256: String,
    #[serde(default)]
    fetched_at: Option<String>,
}

/// Why a manifest in `models/` is not listed (reported by [`scan_manifests`] next to the listed ones).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
#[error("{manifest}: {reason}")]
pub struct SkippedModel {
    pub manifest: String,
    pub reason: String,
}

/// Every `*.manifest.json` in `dir` whose model file is present with the manifest's size, sorted by name.
/// A missing `dir` lists nothing (no model fetched yet).
pub fn scan_manifests(dir: &Path) -> (Vec<ModelEntry>, Vec<SkippedModel>) {
    let mut listed = Vec::new();
    let mut skipped = Vec::new();
    let Ok(read) = std::fs::read_dir(dir) else {
        return (listed, skipped);
    };
    let mut manifests: Vec<PathBuf> = read
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.ends_with(".manifest.json"))
        })
        .collect();
    manifests.sort();
    for path in manifests {
        let shown = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let skip = |reason: String| SkippedModel {
            manifest: shown.clone(),
            reason,
        };
        let manifest: ManifestFile = match std::fs::read_to_string(&path)
            .map_err(|e| e.to_string())
            .and_then(|t| serde_json::from_str(&t).map_err(|e| e.to_string()))
        {
            Ok(m) => m,
            Err(e) => {
                skipped.push(skip(format!("not a readable fetch manifest: {e}")));
                continue;
            }
        };
        let plain = !manifest.file.is_empty()
            && !manifest.file.contains(['/', '\\'])
            && !manifest.file.starts_with('.');
        if !plain {
            skipped.push(skip(format!(
                "file {:?} is not a plain file name",
                manifest.file
            )));
            continue;
        }
        let file = dir.join(&manifest.file);
        match std::fs::metadata(&file) {
            Ok(m) if m.is_file() && m.len() == manifest.bytes => {}
            Ok(m) => {
                skipped.push(skip(format!(
                    "{} has {} bytes, the manifest says {}",
                    manifest.file,
                    m.len(),
                    manifest.bytes
                )));
                continue;
            }
            Err(_) => {
                skipped.push(skip(format!("{} is missing", manifest.file)));
                continue;
            }
        }
        listed.push(ModelEntry {
            name: manifest.model,
            file: manifest.file,
            bytes: manifest.bytes,
            sha256: manifest.sha256,
            quantization: None,
            parameters: None,
            context_length: None,
            fetched_at: manifest.fetched_at,
            source: "models_dir".into(),
            default: false,
            path: file,
        });
    }
    listed.sort_by(|a, b| a.name.cmp(&b.name));
    (listed, skipped)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest(dir: &Path, name: &str, bytes: u64) {
        let m = serde_json::json!({
            "model": name, "file": format!("{name}.gguf"), "bytes": bytes, "sha256": "ab".repeat(32),
            "hash_pinned": true, "source": "test", "parts": [], "fetched_at": "2026-12-01T00:00:00Z",
        });
        std::fs::write(dir.join(format!("{name}.manifest.json")), m.to_string()).unwrap();
    }

    #[test]
    fn only_manifests_with_their_file_at_the_right_size_are_listed() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        manifest(d, "b-model", 4);
        std::fs::write(d.join("b-model.gguf"), b"GGUF").unwrap();
        manifest(d, "a-short", 10);
        std::fs::write(d.join("a-short.gguf"), b"GGUF").unwrap();
        manifest(d, "c-missing", 4);
        std::fs::write(d.join("d.manifest.json"), "{not json").unwrap();
        let (listed, skipped) = scan_manifests(d);
        assert_eq!(
            listed.iter().map(|m| m.name.as_str()).collect::<Vec<_>>(),
            vec!["b-model"]
        );
        assert_eq!(
            listed[0].fetched_at.as_deref(),
            Some("2026-12-01T00:00:00Z")
        );
        let reasons: Vec<String> = skipped.iter().map(ToString::to_string).collect();
        assert_eq!(reasons.len(), 3, "{reasons:?}");
        assert!(
            reasons[0].contains("a-short.gguf has 4 bytes, the manifest says 10"),
            "{reasons:?}"
        );
        assert!(
            reasons[1].contains("c-missing.gguf is missing"),
            "{reasons:?}"
        );
        assert!(
            reasons[2].starts_with("d.manifest.json: not a readable fetch manifest"),
            "{reasons:?}"
        );
        assert!(scan_manifests(&d.join("nowhere")).0.is_empty());
    }

    #[test]
    fn the_path_never_reaches_json() {
        let tmp = tempfile::tempdir().unwrap();
        manifest(tmp.path(), "m", 4);
        std::fs::write(tmp.path().join("m.gguf"), b"GGUF").unwrap();
        let v = serde_json::to_value(&scan_manifests(tmp.path()).0[0]).unwrap();
        assert!(v.get("path").is_none());
        assert!(!v.to_string().contains(&tmp.path().display().to_string()));
    }
}
