//! The page's Evaluation panel: the latest suite report of each model, read from
//! `evidence/eval/<model>/summary.json` (written by `cargo xtask eval`), and its chart. Read-only; a
//! damaged report is listed with its error instead of hiding the others.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

/// Where `cargo xtask eval` writes one folder per model.
pub const EVAL_DIR: &str = "evidence/eval";

#[derive(Debug, thiserror::Error)]
pub enum EvaluationError {
    #[error("no evaluation report for model {0:?} (known: the folders of {EVAL_DIR}/)")]
    UnknownModel(String),
    #[error("{EVAL_DIR}/{0}")]
    Read(#[source] crate::safe_fs::SafeReadError),
}

/// `evidence/eval/<model>/<file>`, read with no link followed (a committed link to `/proc/self/environ`
/// is refused) and size-capped.
fn read_report_file(
    root: &Path,
    model: &str,
    file: &str,
) -> Result<Vec<u8>, crate::safe_fs::SafeReadError> {
    crate::safe_fs::read_under(
        &root.join(EVAL_DIR),
        &Path::new(model).join(file),
        crate::safe_fs::MAX_SERVED_BYTES,
    )
}

/// Every model's report: `{"reports": [{"model", "configs", "note", "chart"} | {"model", "error"}]}`,
/// models in name order.
pub fn reports(root: &Path) -> Value {
    let mut out = Vec::new();
    for model in model_dirs(root) {
        let parsed = read_report_file(root, &model, "summary.json")
            .map_err(|e| e.to_string())
            .and_then(|bytes| serde_json::from_slice::<Value>(&bytes).map_err(|e| e.to_string()))
            .and_then(|v| {
                if v["configs"].is_array() {
                    Ok(v)
                } else {
                    Err("no `configs` list".to_owned())
                }
            });
        let chart = std::fs::symlink_metadata(root.join(EVAL_DIR).join(&model).join("success.png"))
            .is_ok_and(|m| m.is_file());
        out.push(match parsed {
            Ok(summary) => json!({
                "model": model,
                "note": summary["note"],
                "configs": summary["configs"],
                "chart": chart.then(|| format!("/agent/evaluation/{model}/success.png")),
            }),
            Err(error) => json!({ "model": model, "error": format!("{EVAL_DIR}/{model}/summary.json: {error}") }),
        });
    }
    json!({ "reports": out })
}

/// The chart of one model's report; `model` must be one of the report folders (never a path).
pub fn chart(root: &Path, model: &str) -> Result<Vec<u8>, EvaluationError> {
    if !model_dirs(root).iter().any(|m| m == model) {
        return Err(EvaluationError::UnknownModel(model.to_owned()));
    }
    read_report_file(root, model, "success.png").map_err(EvaluationError::Read)
}

/// Report folders: plain directory names under `evidence/eval/` holding a `summary.json`.
fn model_dirs(root: &Path) -> Vec<String> {
    let dir: PathBuf = root.join(EVAL_DIR);
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .into_iter()
        .flatten()
        .flatten()
        // `file_type` does not follow links: a linked report folder is not a report folder.
        .filter(|entry| entry.file_type().is_ok_and(|t| t.is_dir()))
        .filter(|entry| {
            std::fs::symlink_metadata(entry.path().join("summary.json")).is_ok_and(|m| m.is_file())
        })
        .filter_map(|entry| entry.file_name().into_string().ok())
        .filter(|name| !name.starts_with('.'))
        .collect();
    names.sort();
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_reports_flags_damaged_ones_and_serves_only_known_charts() {
        let root = tempfile::tempdir().unwrap();
        let eval = root.path().join(EVAL_DIR);
        std::fs::create_dir_all(eval.join("good")).unwrap();
        std::fs::create_dir_all(eval.join("broken")).unwrap();
        std::fs::write(
            eval.join("good/summary.json"),
            r#"{"note": "n", "configs": [{"mode": "guided", "runs": 2}]}"#,
        )
        .unwrap();
        std::fs::write(eval.join("good/success.png"), b"\x89PNG").unwrap();
        std::fs::write(eval.join("broken/summary.json"), "{ not json").unwrap();
        std::fs::write(eval.join("stray.json"), "{}").unwrap();
        let listed = reports(root.path());
        let reports = listed["reports"].as_array().unwrap();
        assert_eq!(reports.len(), 2);
        assert_eq!(reports[0]["model"], "broken");
        assert!(
            reports[0]["error"]
                .as_str()
                .unwrap()
                .contains("broken/summary.json")
        );
        assert_eq!(reports[1]["configs"][0]["runs"], 2);
        assert_eq!(reports[1]["chart"], "/agent/evaluation/good/success.png");
        assert_eq!(chart(root.path(), "good").unwrap(), b"\x89PNG");
        for bad in ["../good", "nope", "", "good/../good"] {
            assert!(
                matches!(
                    chart(root.path(), bad),
                    Err(EvaluationError::UnknownModel(_))
                ),
                "{bad}"
            );
        }
        assert!(matches!(
            chart(root.path(), "broken"),
            Err(EvaluationError::Read(_))
        ));
    }
}
