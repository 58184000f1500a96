//! The course as data for the page: the stages under `<root>/stages/` (title, prediction, hints and
//! fault contract summary from each stage's files), each guide as raw markdown, the guide section
//! list, and the learner's `learn/progress.json` when the service runs where a learner works.
//!
//! Read-only and axum-free (`http/` serves it). It never renders markdown and never judges a
//! `verification.json`: the page does both in the browser, so a learner's file is never uploaded.

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

/// Why a course request cannot be answered; messages name paths relative to the project root.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CourseError {
    #[error("no stage {id:?}; the stages are: {known}")]
    UnknownStage { id: String, known: String },
    #[error("lang must be \"en\" or \"zh-CN\", got {0:?}")]
    UnknownLang(String),
    #[error("stages/{stage}/{file} cannot be read: {reason}")]
    Unreadable {
        stage: String,
        file: String,
        reason: String,
    },
    #[error("the course has no stages/ directory: {0}")]
    NoStages(String),
}

/// The guide section list (`schemas/guide_sections.json`), compiled in like the other schemas.
const GUIDE_SECTIONS: &str = include_str!("../../../schemas/guide_sections.json");

/// A stage directory: `NN-name` holding a `Cargo.toml`.
fn stage_dirs(root: &Path) -> Result<Vec<(String, PathBuf)>, CourseError> {
    let dir = root.join("stages");
    let entries = fs::read_dir(&dir).map_err(|e| CourseError::NoStages(e.to_string()))?;
    let mut stages: Vec<(String, PathBuf)> = entries
        .flatten()
        .filter_map(|entry| {
            let id = entry.file_name().to_string_lossy().into_owned();
            let bytes = id.as_bytes();
            let is_stage =
                bytes.len() > 3 && bytes[..2].iter().all(u8::is_ascii_digit) && bytes[2] == b'-';
            // A linked stage folder is not a stage folder (file_type does not follow links).
            let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
            (is_stage && is_dir && entry.path().join("Cargo.toml").is_file())
                .then(|| (id, entry.path()))
        })
        .collect();
    stages.sort();
    Ok(stages)
}

/// `GET /course/stages`: every stage with what the page shows about it. A stage whose files are
/// broken is listed with `error` instead of breaking the list.
pub fn stages(root: &Path) -> Result<Value, CourseError> {
    let sections: Value =
        serde_json::from_str(GUIDE_SECTIONS).expect("schemas/guide_sections.json is valid JSON");
    let mut out = Vec::new();
    for (id, dir) in stage_dirs(root)? {
        let entry = match stage_entry(&id, &dir) {
            Ok(entry) => entry,
            Err(error) => json!({ "id": id, "number": &id[..2], "error": error.to_string() }),
        };
        out.push(entry);
    }
    Ok(json!({ "stages": out, "guide_sections": sections["sections"] }))
}

/// `stages/<id>/<file>`, with no link followed below the stages folder and a size cap.
fn read(dir: &Path, id: &str, file: &str) -> Result<String, CourseError> {
    let unreadable = |reason: String| CourseError::Unreadable {
        stage: id.to_owned(),
        file: file.to_owned(),
        reason,
    };
    let stages = dir.parent().unwrap_or(dir);
    let bytes = crate::safe_fs::read_under(
        stages,
        &Path::new(id).join(file),
        crate::safe_fs::MAX_SERVED_BYTES,
    )
    .map_err(|e| unreadable(e.to_string()))?;
    String::from_utf8(bytes).map_err(|_| unreadable("not UTF-8 text".into()))
}

fn stage_entry(id: &str, dir: &Path) -> Result<Value, CourseError> {
    let malformed = |file: &str, reason: String| CourseError::Unreadable {
        stage: id.to_owned(),
        file: file.to_owned(),
        reason,
    };
    let meta: toml::Table = toml::from_str(&read(dir, id, "stage.toml")?)
        .map_err(|e| malformed("stage.toml", e.message().to_owned()))?;
    let meta = serde_json::to_value(&meta).map_err(|e| malformed("stage.toml", e.to_string()))?;
    for key in ["title", "prediction", "hints"] {
        if meta.get(key).is_none() {
            return Err(malformed("stage.toml", format!("missing `{key}`")));
        }
    }
    let contract: Value = serde_json::from_str(&read(dir, id, "fixtures/failure.json")?)
        .map_err(|e| malformed("fixtures/failure.json", e.to_string()))?;
    // The contract's names only: which test the fault breaks. Diagnosis and repair stay out (the
    // guide's "After it passes" section carries them, behind a click on the page).
    let contract = json!({
        "fault_id": contract["fault_id"],
        "target_test": contract["target_test"],
        "faulty_source_path": contract["faulty_source_path"],
        "must_still_pass": contract["must_still_pass"],
    });
    Ok(json!({
        "id": id,
        "number": &id[..2],
        "title": meta["title"],
        "prediction": meta["prediction"],
        "hints": meta["hints"],
        "contract": contract,
    }))
}

/// `GET /course/stages/{id}/guide?lang=en|zh-CN`: the guide's markdown, unrendered.
pub fn guide(root: &Path, id: &str, lang: &str) -> Result<Value, CourseError> {
    let file = match lang {
        "en" => "README.md",
        "zh-CN" => "README.zh-CN.md",
        other => return Err(CourseError::UnknownLang(other.to_owned())),
    };
    let stages = stage_dirs(root)?;
    // Only a listed directory name is ever joined to a path: no traversal through `id`.
    let Some((id, dir)) = stages.iter().find(|(s, _)| s == id) else {
        let known = stages
            .iter()
            .map(|(s, _)| s.as_str())
            .collect::<Vec<_>>()
            .join(", ");
        return Err(CourseError::UnknownStage {
            id: id.to_owned(),
            known,
        });
    };
    let markdown = read(dir, id, file)?;
    Ok(
        json!({ "stage_id": id, "lang": lang, "file": format!("stages/{id}/{file}"), "markdown": markdown }),
    )
}

/// `GET /course/progress`: `learn/progress.json` as written by `cargo xtask`, when present.
pub fn progress(root: &Path) -> Value {
    let read = crate::safe_fs::read_under(
        root,
        Path::new("learn/progress.json"),
        crate::safe_fs::MAX_SERVED_BYTES,
    )
    .and_then(|b| {
        String::from_utf8(b).map_err(|_| crate::safe_fs::SafeReadError::NotAFile {
            path: "learn/progress.json (not UTF-8)".into(),
        })
    });
    match read {
        Err(e) if e.is_not_found() => {
            json!({ "present": false, "progress": null, "error": null })
        }
        Err(e) => {
            json!({ "present": true, "progress": null, "error": format!("learn/progress.json cannot be read: {e}") })
        }
        Ok(text) => match serde_json::from_str::<Value>(&text) {
            Ok(value) if value["stages"].is_object() => {
                json!({ "present": true, "progress": value, "error": null })
            }
            Ok(_) => {
                json!({ "present": true, "progress": null, "error": "learn/progress.json has no `stages` object" })
            }
            Err(e) => {
                json!({ "present": true, "progress": null, "error": format!("learn/progress.json is not valid JSON: {e}") })
            }
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_language_and_stage_are_typed_errors() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        assert_eq!(
            guide(&root, "01-action-selection", "fr").unwrap_err(),
            CourseError::UnknownLang("fr".into())
        );
        let err = guide(&root, "../../etc", "en").unwrap_err();
        assert!(matches!(err, CourseError::UnknownStage { .. }), "{err}");
        assert!(err.to_string().contains("01-action-selection"), "{err}");
    }
}
