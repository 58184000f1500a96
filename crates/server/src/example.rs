//! The runnable example package: this project's git-tracked files, enumerated live, hashed per file, zipped.
//!
//! The manifest, the single-file endpoint and the zip all come from one `Enumeration`, so what the page
//! shows, what a learner downloads file by file and what the zip holds cannot drift apart. This module is
//! the only user of the `zip` crate. It does not serve HTTP.
//!
//! Only files git tracks are candidates (`git ls-files`): an untracked `.env`, `*.pem`, `.npmrc`, or a
//! runs/model folder under another name never enters the package. Tracked symlinks are skipped, and
//! every file is read with no link followed (`safe_fs`).

use std::io::{Cursor, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::Serialize;

use crate::error::ApiError;

/// Directory names never included, wherever they appear.
const EXCLUDED_DIRS: &[&str] = &[
    ".git",
    "target",
    "models",
    ".runs",
    "learn",
    "node_modules",
    "__pycache__",
];
/// Top-level folders never included: the project's records (`evidence/`: verification, eval reports). Only at
/// the top: `crates/evidence/` is the evidence crate's source.
const EXCLUDED_TOP_DIRS: &[&str] = &["evidence"];
/// Top-level build-output folders with a prefix (e.g. `target-llama`).
const EXCLUDED_DIR_PREFIXES: &[&str] = &["target-", "target_"];
/// Larger files are listed under `skipped` rather than served (weights and data dumps do not belong here).
pub const MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;
/// The whole package may not exceed this; files past it are skipped in path order.
pub const MAX_TOTAL_BYTES: u64 = 64 * 1024 * 1024;
/// The folder every zip entry lives under.
pub const ZIP_ROOT: &str = "forge";

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileEntry {
    /// Relative, `/`-separated, normalised (no `.`/`..`, no leading `/`).
    pub path: String,
    pub bytes: u64,
    pub blake3: String,
    pub language: &'static str,
    pub download_path: String,
    /// What the file is for, in one line: its own opening comment (`//!` line, first comment, heading),
    /// else a generic description by kind (see `role_source`).
    pub role: String,
    /// `file` (read from the file itself) or `generic` (by name and kind).
    pub role_source: &'static str,
    /// The file's stage in the chain (`crates/server/chain.toml`), `None` outside the mapping.
    pub stage: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Skipped {
    pub path: String,
    pub reason: String,
}

/// One live walk of the tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Enumeration {
    pub files: Vec<FileEntry>,
    pub skipped: Vec<Skipped>,
    pub total_bytes: u64,
    /// blake3 over `path\0bytes\0blake3\n` lines in path order.
    pub tree_blake3: String,
}

#[derive(Debug, thiserror::Error)]
pub enum ExampleError {
    #[error("cannot read {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("zip failed: {0}")]
    Zip(String),
    #[error(transparent)]
    Chain(#[from] crate::sources::ChainError),
    #[error(
        "the example package is the git-tracked files of {root}, and git cannot list them: {reason}"
    )]
    NotTracked { root: String, reason: String },
}

impl From<ExampleError> for ApiError {
    fn from(e: ExampleError) -> Self {
        match e {
            ExampleError::NotTracked { .. } => {
                ApiError::new(503, "example_unavailable", e.to_string())
            }
            other => ApiError::internal(other.to_string()),
        }
    }
}

/// The paths git tracks below `root` (index entries, relative to `root`), as raw bytes.
fn tracked_files(root: &Path) -> Result<Vec<Vec<u8>>, ExampleError> {
    let not_tracked = |reason: String| ExampleError::NotTracked {
        root: root.display().to_string(),
        reason,
    };
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(root)
        .args(["ls-files", "-z", "--cached", "--"])
        // The tree's own repository, never one an environment variable points at.
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| not_tracked(e.to_string()))?;
    if !out.status.success() {
        return Err(not_tracked(
            String::from_utf8_lossy(&out.stderr).trim().to_owned(),
        ));
    }
    let mut paths: Vec<Vec<u8>> = out
        .stdout
        .split(|b| *b == 0)
        .filter(|p| !p.is_empty())
        .map(<[u8]>::to_vec)
        .collect();
    paths.sort();
    paths.dedup();
    Ok(paths)
}

/// The example package rooted at one directory, with a cache of the last zip (keyed by tree hash).
pub struct ExamplePackage {
    root: PathBuf,
    zip_cache: Mutex<Option<(String, std::sync::Arc<Vec<u8>>)>>,
}

impl ExamplePackage {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self {
            root: root.into(),
            zip_cache: Mutex::new(None),
        }
    }

    /// List the tracked files now. Symlinks are skipped (never followed), as are excluded folders.
    pub fn enumerate(&self) -> Result<Enumeration, ExampleError> {
        let mut found: Vec<(String, PathBuf, u64)> = Vec::new();
        let mut skipped = Vec::new();
        select(
            &self.root,
            tracked_files(&self.root)?,
            &mut found,
            &mut skipped,
        )?;
        found.sort_by(|a, b| a.0.cmp(&b.0));
        let mut files = Vec::new();
        let mut total = 0u64;
        let chain = crate::sources::chain()?;
        for (rel, abs, len) in found {
            if len > MAX_FILE_BYTES {
                skipped.push(Skipped {
                    path: rel,
                    reason: format!("larger than {MAX_FILE_BYTES} bytes"),
                });
                continue;
            }
            if total + len > MAX_TOTAL_BYTES {
                skipped.push(Skipped {
                    path: rel,
                    reason: format!("package limit of {MAX_TOTAL_BYTES} bytes reached"),
                });
                continue;
            }
            let data = match crate::safe_fs::read_under(&self.root, Path::new(&rel), MAX_FILE_BYTES)
            {
                Ok(data) => data,
                Err(e) => {
                    // Replaced by a link, grown past the limit or gone since the listing: not served.
                    skipped.push(Skipped {
                        path: rel,
                        reason: e.to_string(),
                    });
                    continue;
                }
            };
            let _ = abs;
            total += data.len() as u64;
            let (role, role_source) = role_of(&rel, &data);
            files.push(FileEntry {
                stage: chain.stage_of(&rel).map(|s| s.id.clone()),
                role,
                role_source,
                language: language_of(&rel),
                download_path: format!("/example/file?path={}&raw=1", encode_query(&rel)),
                blake3: blake3::hash(&data).to_hex().to_string(),
                bytes: data.len() as u64,
                path: rel,
            });
        }
        skipped.sort_by(|a, b| a.path.cmp(&b.path));
        let mut tree = blake3::Hasher::new();
        for f in &files {
            tree.update(f.path.as_bytes());
            tree.update(b"\0");
            tree.update(f.bytes.to_string().as_bytes());
            tree.update(b"\0");
            tree.update(f.blake3.as_bytes());
            tree.update(b"\n");
        }
        Ok(Enumeration {
            files,
            skipped,
            total_bytes: total,
            tree_blake3: tree.finalize().to_hex().to_string(),
        })
    }

    /// Read one file, accepted only if `requested` is exactly a path of a fresh enumeration.
    /// Returns the entry and its bytes; the bytes are re-hashed so a file changed since the walk is caught.
    pub fn read_file(&self, requested: &str) -> Result<(FileEntry, Vec<u8>), ApiError> {
        check_relative_path(requested)?;
        let listing = self.enumerate()?;
        let entry = listing
            .files
            .into_iter()
            .find(|f| f.path == requested)
            .ok_or_else(|| {
                ApiError::not_found(
                    "file_not_in_package",
                    format!("{requested:?} is not a file of the example package"),
                )
            })?;
        let data = crate::safe_fs::read_under(&self.root, Path::new(&entry.path), MAX_FILE_BYTES)
            .map_err(|e| ApiError::internal(format!("cannot read {}: {e}", entry.path)))?;
        let entry = FileEntry {
            bytes: data.len() as u64,
            blake3: blake3::hash(&data).to_hex().to_string(),
            ..entry
        };
        Ok((entry, data))
    }

    /// The zip of one enumeration, rooted at `forge/`, deterministic (fixed timestamps) so its hash is stable.
    pub fn zip(&self, listing: &Enumeration) -> Result<std::sync::Arc<Vec<u8>>, ExampleError> {
        if let Some((hash, bytes)) = self.zip_cache.lock().expect("zip cache lock").as_ref()
            && *hash == listing.tree_blake3
        {
            return Ok(bytes.clone());
        }
        let mut writer = zip::ZipWriter::new(Cursor::new(Vec::new()));
        let options = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated)
            .last_modified_time(zip::DateTime::default())
            .unix_permissions(0o644);
        for f in &listing.files {
            let data = crate::safe_fs::read_under(&self.root, Path::new(&f.path), MAX_FILE_BYTES)
                .map_err(|e| ExampleError::Zip(e.to_string()))?;
            if blake3::hash(&data).to_hex().as_str() != f.blake3 {
                return Err(ExampleError::Zip(format!(
                    "{} changed while the package was being built; retry",
                    f.path
                )));
            }
            writer
                .start_file(format!("{ZIP_ROOT}/{}", f.path), options)
                .map_err(|e| ExampleError::Zip(e.to_string()))?;
            writer
                .write_all(&data)
                .map_err(|e| ExampleError::Zip(e.to_string()))?;
        }
        let bytes = std::sync::Arc::new(
            writer
                .finish()
                .map_err(|e| ExampleError::Zip(e.to_string()))?
                .into_inner(),
        );
        *self.zip_cache.lock().expect("zip cache lock") =
            Some((listing.tree_blake3.clone(), bytes.clone()));
        Ok(bytes)
    }
}

/// Refuse anything that is not a plain relative `/`-separated path before looking it up.
pub fn check_relative_path(p: &str) -> Result<(), ApiError> {
    let refuse = |why: &str| {
        Err(ApiError::bad_request(
            "invalid_path",
            format!("path {p:?} refused: {why}"),
        ))
    };
    if p.is_empty() {
        return refuse("empty");
    }
    if p.starts_with('/') || p.starts_with('\\') || p.contains(':') {
        return refuse("absolute paths are not accepted");
    }
    if p.contains('\\') || p.contains('\0') || p.contains('%') {
        return refuse("backslashes, NUL and percent-escapes are not accepted");
    }
    if p.split('/')
        .any(|seg| seg.is_empty() || seg == "." || seg == "..")
    {
        return refuse("empty, '.' or '..' segments are not accepted");
    }
    Ok(())
}

/// From the tracked paths, the files of the package: excluded folders and kinds dropped, symlinks (at
/// any depth), non-UTF-8 names, submodules and files missing from the working tree listed as skipped.
fn select(
    root: &Path,
    tracked: Vec<Vec<u8>>,
    found: &mut Vec<(String, PathBuf, u64)>,
    skipped: &mut Vec<Skipped>,
) -> Result<(), ExampleError> {
    'paths: for raw in tracked {
        let Ok(rel) = String::from_utf8(raw) else {
            skipped.push(Skipped {
                path: "?".into(),
                reason: "file name is not UTF-8".into(),
            });
            continue;
        };
        if check_relative_path(&rel).is_err() {
            skipped.push(Skipped {
                path: rel,
                reason: "not a plain relative path".into(),
            });
            continue;
        }
        let segments: Vec<&str> = rel.split('/').collect();
        let (name, dirs) = segments.split_last().expect("split yields one segment");
        if dirs.iter().any(|d| EXCLUDED_DIRS.contains(d))
            || dirs.first().is_some_and(|top| {
                EXCLUDED_TOP_DIRS.contains(top)
                    || EXCLUDED_DIR_PREFIXES.iter().any(|p| top.starts_with(p))
            })
        {
            continue;
        }
        if name.ends_with(".pyc")
            || name.ends_with(".gguf")
            || *name == ".DS_Store"
            || *name == ".git"
        {
            continue;
        }
        // symlink_metadata on every component: a link is reported as a link, never followed.
        let mut at = root.to_path_buf();
        for (i, seg) in segments.iter().enumerate() {
            at.push(seg);
            let meta = match std::fs::symlink_metadata(&at) {
                Ok(m) => m,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    skipped.push(Skipped {
                        path: rel,
                        reason: "tracked but missing from the working tree".into(),
                    });
                    continue 'paths;
                }
                Err(source) => return Err(ExampleError::Io { path: rel, source }),
            };
            if meta.file_type().is_symlink() {
                let link = segments[..=i].join("/");
                if !skipped.iter().any(|s| s.path == link) {
                    skipped.push(Skipped {
                        path: link,
                        reason: "symbolic link".into(),
                    });
                }
                continue 'paths;
            }
            if i + 1 == segments.len() {
                if meta.is_file() {
                    found.push((rel.clone(), at.clone(), meta.len()));
                } else {
                    skipped.push(Skipped {
                        path: rel.clone(),
                        reason: "not a regular file (a submodule?)".into(),
                    });
                }
            }
        }
    }
    Ok(())
}

/// One line saying what a file is for. Rust files open with a `//!` line (a project rule); other text files
/// with their first comment or heading; anything else gets a generic description by kind, never nothing.
pub fn role_of(path: &str, data: &[u8]) -> (String, &'static str) {
    let name = path.rsplit('/').next().unwrap_or(path);
    let ext = name.rsplit_once('.').map(|(_, e)| e).unwrap_or("");
    if let Ok(text) = std::str::from_utf8(data)
        && let Some(line) = first_comment(ext, text)
    {
        let line: String = line.trim().chars().take(300).collect();
        if !line.is_empty() {
            return (line, "file");
        }
    }
    let generic = match (name, ext) {
        ("Cargo.toml", _) => {
            "Cargo manifest: this package's name, dependencies and targets".to_string()
        }
        ("Cargo.lock", _) => {
            "Exact versions of every dependency (kept so builds are reproducible)".to_string()
        }
        ("package.json" | "package-lock.json", _) => {
            "npm manifest for the browser tests (playwright-core only)".to_string()
        }
        (_, "snap") => "Snapshot (insta): the reviewed output a test compares against".to_string(),
        (_, "json") if path.starts_with("fixtures/") || path.contains("/fixtures/") => {
            "Test fixture: data a test or a scripted run reads".to_string()
        }
        (_, "json") => "JSON data read by the code or the tests".to_string(),
        (_, "md") => "Documentation".to_string(),
        (_, "ttf" | "otf") => "Font bundled so charts render the same everywhere".to_string(),
        (_, "png" | "jpg" | "jpeg" | "gif" | "webp") => "Image".to_string(),
        _ if name.contains("LICENSE") => "Licence text of a bundled asset".to_string(),
        _ => format!(
            "{} file (no opening comment to explain it)",
            language_of(path)
        ),
    };
    (generic, "generic")
}

/// The first comment or heading of a text file, by the comment syntax of its kind.
fn first_comment<'a>(ext: &str, text: &'a str) -> Option<&'a str> {
    let mut lines = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("#!"));
    match ext {
        "rs" => text
            .lines()
            .map(str::trim)
            .find_map(|l| l.strip_prefix("//!")),
        // Only an opening comment explains the file; a comment further down explains a line.
        "js" | "mjs" | "cjs" => lines.next()?.strip_prefix("//"),
        "css" => lines
            .next()?
            .strip_prefix("/*")
            .map(|l| l.trim_end_matches("*/")),
        "html" => lines
            .find(|l| !l.to_ascii_lowercase().starts_with("<!doctype"))?
            .strip_prefix("<!--")
            .map(|l| l.trim_end_matches("-->")),
        "sh" | "toml" | "py" | "yml" | "yaml" => lines.next()?.strip_prefix('#'),
        "md" => lines
            .find_map(|l| l.strip_prefix('#'))
            .map(|l| l.trim_start_matches('#')),
        _ => None,
    }
}

fn language_of(path: &str) -> &'static str {
    let ext = path.rsplit_once('.').map(|(_, e)| e).unwrap_or("");
    match ext {
        "rs" => "rust",
        "toml" => "toml",
        "json" => "json",
        "md" => "markdown",
        "js" | "mjs" | "cjs" => "javascript",
        "html" => "html",
        "css" => "css",
        "sh" => "shell",
        "py" => "python",
        "txt" => "text",
        "yml" | "yaml" => "yaml",
        "lock" => "toml",
        "png" | "jpg" | "jpeg" | "gif" | "webp" => "image",
        _ => "text",
    }
}

/// Percent-encode a path for a query string (only what a browser would not pass through unchanged).
pub fn encode_query(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' | b'/' => {
                out.push(b as char)
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_come_from_the_opening_line_or_a_generic_description() {
        let role = |p: &str, t: &str| role_of(p, t.as_bytes());
        assert_eq!(
            role("a/b.rs", "//! Parses things.\n//! More.\nfn x() {}"),
            ("Parses things.".into(), "file")
        );
        assert_eq!(
            role("a/b.rs", "fn x() {} // no doc"),
            (
                "rust file (no opening comment to explain it)".into(),
                "generic"
            )
        );
        assert_eq!(
            role("w/app.js", "// The page.\n'use strict';"),
            ("The page.".into(), "file")
        );
        assert_eq!(
            role("w/app.js", "'use strict';\n// later"),
            (
                "javascript file (no opening comment to explain it)".into(),
                "generic"
            )
        );
        assert_eq!(
            role("w/i.html", "<!doctype html>\n<!-- The page. -->\n<html>"),
            ("The page.".into(), "file")
        );
        assert_eq!(
            role("w/s.css", "/* Plain CSS. */\nbody{}"),
            ("Plain CSS.".into(), "file")
        );
        assert_eq!(
            role("s/run.sh", "#!/bin/sh\n# Runs it.\n"),
            ("Runs it.".into(), "file")
        );
        assert_eq!(
            role("x/Cargo.toml", "[package]\n# a comment\n").1,
            "generic"
        );
        assert_eq!(
            role("README.md", "\n## Forge\ntext"),
            ("Forge".into(), "file")
        );
        assert_eq!(role("f.ttf", "\u{0}\u{1}").1, "generic");
        assert_eq!(role("x/snapshots/a.snap", "---\nsource: x\n").1, "generic");
    }

    #[test]
    fn relative_path_check_refuses_escapes() {
        for bad in [
            "",
            "/etc/passwd",
            "../Cargo.toml",
            "a/../b",
            "a//b",
            "./a",
            "a\\b",
            "C:/x",
            "a%2e%2e/b",
            "a/.",
        ] {
            assert!(
                check_relative_path(bad).is_err(),
                "{bad:?} should be refused"
            );
        }
        for good in ["Cargo.toml", "crates/server/src/lib.rs", ".ci/run"] {
            assert!(check_relative_path(good).is_ok(), "{good:?} should pass");
        }
    }
}
