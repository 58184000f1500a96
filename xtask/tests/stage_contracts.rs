//! The seven real stage contracts, checked statically (no builds): every stages/*/fixtures/failure.json
//! validates against schemas/failure.schema.json and names exactly the tests its targets contain.
//!
//! `cargo xtask verify` proves the contracts dynamically; this test catches a drifted contract in
//! plain `cargo test` without compiling any stage.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use pretty_assertions::assert_eq;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn schema(name: &str) -> jsonschema::Validator {
    let text = fs::read_to_string(root().join("schemas").join(name)).unwrap();
    jsonschema::validator_for(&serde_json::from_str(&text).unwrap()).unwrap()
}

/// `#[test]` functions in a Rust source (attributes may sit between `#[test]` and `fn`).
fn test_fns(source: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut pending = false;
    for line in source.lines().map(str::trim) {
        if line.starts_with("//") {
            continue;
        }
        if line.starts_with("#[test]") {
            pending = true;
        } else if pending && !line.starts_with("#[") && !line.is_empty() {
            if let Some((_, rest)) = line.split_once("fn ") {
                names.insert(
                    rest.chars()
                        .take_while(|c| c.is_alphanumeric() || *c == '_')
                        .collect(),
                );
            }
            pending = false;
        }
    }
    names
}

fn stage_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = fs::read_dir(root().join("stages"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.is_dir() && p.file_name().unwrap().to_string_lossy().as_bytes()[0].is_ascii_digit()
        })
        .collect();
    dirs.sort();
    dirs
}

#[test]
fn there_are_seven_stages() {
    let ids: Vec<String> = stage_dirs()
        .iter()
        .map(|d| d.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        ids,
        [
            "01-action-selection",
            "02-observation-state",
            "03-structured-tool-execution",
            "04-retry-policy",
            "05-idempotent-actions",
            "06-stop-conditions",
            "07-agent-loop-runner"
        ]
    );
}

#[test]
fn every_failure_json_validates_and_lists_exactly_the_fault_run_tests() {
    let validator = schema("failure.schema.json");
    let mut problems = Vec::new();
    for dir in stage_dirs() {
        let id = dir.file_name().unwrap().to_string_lossy().into_owned();
        let path = dir.join("fixtures/failure.json");
        let Ok(text) = fs::read_to_string(&path) else {
            problems.push(format!("{id}: fixtures/failure.json is missing"));
            continue;
        };
        let value: serde_json::Value = match serde_json::from_str(&text) {
            Ok(v) => v,
            Err(e) => {
                problems.push(format!("{id}: failure.json is not JSON: {e}"));
                continue;
            }
        };
        for error in validator.iter_errors(&value) {
            problems.push(format!("{id}: {} {error}", error.instance_path()));
        }
        if value["stage_id"] != id.as_str() {
            problems.push(format!("{id}: stage_id is {}", value["stage_id"]));
        }
        let mut present = BTreeSet::new();
        for target in value["fault_run_targets"].as_array().into_iter().flatten() {
            let file = dir
                .join("tests")
                .join(format!("{}.rs", target.as_str().unwrap_or_default()));
            match fs::read_to_string(&file) {
                Ok(source) => present.extend(test_fns(&source)),
                Err(e) => problems.push(format!("{id}: {}: {e}", file.display())),
            }
        }
        let mut listed: BTreeSet<String> = value["must_still_pass"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|t| t.as_str().map(str::to_owned))
            .collect();
        listed.insert(value["target_test"].as_str().unwrap_or_default().to_owned());
        if listed != present {
            problems.push(format!(
                "{id}: must_still_pass ∪ {{target_test}} = {listed:?}, but the fault_run_targets define {present:?}"
            ));
        }
        let fault = fs::read(dir.join(value["fault_file"].as_str().unwrap_or("?")));
        let solution = fs::read(dir.join(value["faulty_source_path"].as_str().unwrap_or("?")));
        match (fault, solution) {
            (Ok(f), Ok(s)) if f == s => {
                problems.push(format!("{id}: the fault file equals the solution file"))
            }
            (Ok(_), Ok(_)) => {}
            _ => problems.push(format!(
                "{id}: fault_file or faulty_source_path cannot be read"
            )),
        }
    }
    assert!(
        problems.is_empty(),
        "contract problems:\n{}",
        problems.join("\n")
    );
}

#[test]
fn every_stage_toml_has_titles_a_labelled_prediction_and_three_hints() {
    for dir in stage_dirs() {
        let id = dir.file_name().unwrap().to_string_lossy().into_owned();
        let text = fs::read_to_string(dir.join("stage.toml"))
            .unwrap_or_else(|e| panic!("{id}/stage.toml: {e}"));
        let meta: toml::Table =
            toml::from_str(&text).unwrap_or_else(|e| panic!("{id}/stage.toml: {e}"));
        assert_eq!(meta["id"].as_str(), Some(id.as_str()), "{id}: id");
        assert!(
            meta["title"]["en"].is_str() && meta["title"]["zh-CN"].is_str(),
            "{id}: title"
        );
        let hints = meta["hints"]
            .as_array()
            .unwrap_or_else(|| panic!("{id}: hints"));
        assert_eq!(hints.len(), 3, "{id}: hint count");
        for hint in hints {
            assert!(
                hint["en"].is_str() && hint["zh-CN"].is_str(),
                "{id}: hint languages"
            );
        }
        for lang in ["en", "zh-CN"] {
            let options = meta["prediction"]["options"][lang]
                .as_array()
                .unwrap_or_else(|| panic!("{id}: options.{lang}"));
            assert_eq!(options.len(), 4, "{id}: four options (A-D) in {lang}");
            assert!(
                meta["prediction"]["explanation"][lang].is_str(),
                "{id}: explanation.{lang}"
            );
        }
        let answer = meta["prediction"]["answer"].as_str().unwrap_or_default();
        assert!(
            ["A", "B", "C", "D"].contains(&answer),
            "{id}: answer {answer:?} is not a label A-D"
        );
    }
}

#[test]
fn the_test_fn_scanner_sees_attributes_and_skips_comments() {
    let names = test_fns(
        "#[test]\n#[should_panic]\nfn a() {}\n// #[test]\nfn b() {}\n#[test]\nfn c_2() {}",
    );
    assert_eq!(names, BTreeSet::from(["a".to_owned(), "c_2".to_owned()]));
}

/// blake3 over `<path>\n<blake3 of file>\n` for every file under `dir`, in path order (the tree
/// hash of docs/xtask.md, computed independently of the xtask).
fn tree_blake3(dir: &Path) -> String {
    let mut files = std::collections::BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let rel = path
                    .strip_prefix(dir)
                    .unwrap()
                    .to_string_lossy()
                    .replace('\\', "/");
                files.insert(
                    rel,
                    blake3::hash(&fs::read(&path).unwrap()).to_hex().to_string(),
                );
            }
        }
    }
    let mut hasher = blake3::Hasher::new();
    for (path, hash) in &files {
        hasher.update(path.as_bytes());
        hasher.update(b"\n");
        hasher.update(hash.as_bytes());
        hasher.update(b"\n");
    }
    hasher.finalize().to_hex().to_string()
}

/// Test strength as a contract: every stage has cargo-mutants figures measured on its current
/// `src/` and `tests/`, and every surviving mutant carries a reason from stage.toml.
#[test]
fn every_stage_has_current_mutants_figures_and_every_survivor_is_explained() {
    let mut problems = Vec::new();
    for dir in stage_dirs() {
        let id = dir.file_name().unwrap().to_string_lossy().into_owned();
        let n = &id[..2];
        let path = root().join("evidence/mutants").join(format!("{id}.json"));
        let Ok(text) = fs::read_to_string(&path) else {
            problems.push(format!(
                "{id}: no evidence/mutants/{id}.json; run `cargo xtask mutants {n}`"
            ));
            continue;
        };
        let evidence: serde_json::Value = serde_json::from_str(&text).unwrap();
        for (field, sub) in [("src_tree_blake3", "src"), ("tests_tree_blake3", "tests")] {
            if evidence[field] != tree_blake3(&dir.join(sub)).as_str() {
                problems.push(format!(
                    "{id}: {sub}/ changed since the mutants were measured; run `cargo xtask mutants {n}`"
                ));
            }
        }
        if evidence["unexplained"] != 0 {
            problems.push(format!(
                "{id}: {} unexplained surviving mutant(s)",
                evidence["unexplained"]
            ));
        }
        for survivor in evidence["survivors"].as_array().unwrap() {
            if !survivor["reason"].is_string() {
                problems.push(format!(
                    "{id}: survivor without a reason: {}",
                    survivor["mutant"]
                ));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "mutants evidence:\n{}",
        problems.join("\n")
    );
}

/// The committed verify logs are the deterministic kind (see docs/xtask.md, "Evidence is
/// deterministic"): no colour codes, no timings, no thread ids.
#[test]
fn committed_logs_hold_no_colour_codes_timings_or_thread_ids() {
    for dir in stage_dirs() {
        let id = dir.file_name().unwrap().to_string_lossy().into_owned();
        for log in ["solution.log", "fault.log"] {
            let path = root()
                .join("evidence/single-agent-loop")
                .join(&id)
                .join(log);
            let text =
                fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            assert!(!text.contains('\u{1b}'), "{id}/{log} holds colour codes");
            assert!(
                !text.contains(" ms)") && !text.contains("finished in"),
                "{id}/{log} holds timings"
            );
            assert!(!text.contains("' ("), "{id}/{log} holds a thread id");
        }
    }
}
