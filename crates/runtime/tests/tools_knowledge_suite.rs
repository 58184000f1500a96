//! knowledge_search over the repository's task suite: every knowledge file parses, and for every
//! task, searching with the task's own knowledge hint returns what its `expected.json` requires
//! (the rows of the table the task is about, the rule's facts or the rule's section), in a result
//! that matches `schemas/knowledge_result.schema.json` and a view that stays small.

use std::fs;
use std::path::{Path, PathBuf};

use runtime::tools::knowledge::{self, SearchRequest};
use serde_json::Value;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&fs::read_to_string(path).unwrap()).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// `expected ⊆ actual` as task-format.md defines it: objects by key, arrays of objects order-free
/// (each expected element matches some actual element), arrays of scalars equal, numbers by value.
fn contains(expected: &Value, actual: &Value) -> bool {
    match (expected, actual) {
        (Value::Object(e), Value::Object(a)) => e.iter().all(|(k, v)| a.get(k).is_some_and(|av| contains(v, av))),
        (Value::Array(e), Value::Array(a)) if e.iter().all(Value::is_object) => {
            e.iter().all(|x| a.iter().any(|y| contains(x, y)))
        }
        (Value::Array(e), Value::Array(a)) => e.len() == a.len() && e.iter().zip(a).all(|(x, y)| contains(x, y)),
        (Value::Number(e), Value::Number(a)) => e.as_f64() == a.as_f64(),
        (e, a) => e == a,
    }
}

fn task_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = fs::read_dir(repo().join("fixtures/tasks"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("task.json").is_file())
        .collect();
    dirs.sort();
    dirs
}

/// The knowledge part of a task's ground truth, in either expected.json format.
fn expected_knowledge(expected: &Value) -> &Value {
    match expected["format_version"].as_u64() {
        Some(1) => &expected["tools"]["knowledge_search"]["result"],
        _ => {
            let evidence = expected["evidence"].as_array().expect("evidence");
            &evidence.iter().find(|e| e["tool"] == "knowledge_search").expect("knowledge evidence")["result"]
        }
    }
}

#[test]
fn every_task_hint_retrieves_what_its_ground_truth_requires() {
    let schema: Value = serde_json::from_str(knowledge::RESULT_SCHEMA).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let mut checked = 0;
    let mut view_chars = Vec::new();
    for dir in task_dirs() {
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let task = read_json(&dir.join("task.json"));
        let files: Vec<String> =
            task["knowledge_files"].as_array().unwrap().iter().map(|f| f.as_str().unwrap().to_owned()).collect();
        let hint = task["required_evidence"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["tool"] == "knowledge_search")
            .and_then(|e| e["hint"].as_str())
            .unwrap_or_else(|| panic!("{name}: no knowledge_search hint"));
        let request = SearchRequest::new(hint, knowledge::DEFAULT_TOP_K).unwrap();
        let out = knowledge::search(&request, &repo().join("knowledge"), &files).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(validator.is_valid(&out.result), "{name}: result does not match the schema");
        let expected = read_json(&dir.join("expected.json"));
        let wanted = expected_knowledge(&expected);
        assert!(
            contains(wanted, &out.result),
            "{name}: searching {hint:?} misses the expected knowledge\nexpected: {wanted:#}\nview:\n{}",
            out.result["view"].as_str().unwrap()
        );
        view_chars.push((out.result["view"].as_str().unwrap().chars().count(), name));
        checked += 1;
    }
    assert!(checked >= 2, "the suite has tasks");
    // Compact: a typical note's view with top_k = 3 is a couple of hundred tokens, not thousands.
    view_chars.sort();
    let median = view_chars[view_chars.len() / 2].0;
    assert!(median < 1_500, "median view is {median} characters: {view_chars:?}");
    assert!(view_chars.iter().all(|(chars, _)| *chars < 2_500), "{view_chars:?}");
}

#[test]
fn every_knowledge_file_parses_and_tables_have_numbers() {
    let dir = repo().join("knowledge");
    let mut names: Vec<String> = fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".md"))
        .collect();
    names.sort();
    assert!(!names.is_empty());
    for name in names {
        let parsed = knowledge::parse_source(&dir, &name).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(!parsed.passages().is_empty(), "{name}");
        for (passage, table) in parsed.tables() {
            assert!(table.has_numeric_column(), "{name}: table in {} has no numeric column", passage.heading());
            assert!(!table.rows.is_empty(), "{name}");
        }
    }
}
