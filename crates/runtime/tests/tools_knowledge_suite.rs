//! knowledge_search over the repository's task suite: every knowledge file parses, and for every
//! task, searching with the task's own knowledge hint returns what its `expected.json` requires
//! (the rows of the table the task is about, the rule's facts or the rule's section), in a result
//! that matches `schemas/knowledge_result.schema.json` and a view that stays small.

use std::fs;
use std::path::{Path, PathBuf};

use runtime::ledger::ObservationRecord;
use runtime::metrics::Expected;
use runtime::tools::knowledge::{self, SearchRequest};
use serde_json::Value;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&fs::read_to_string(path).unwrap())
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
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

#[test]
fn every_task_hint_retrieves_what_its_ground_truth_requires() {
    let schema: Value = serde_json::from_str(knowledge::RESULT_SCHEMA).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let mut checked = 0;
    let mut view_chars = Vec::new();
    for dir in task_dirs() {
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let task = read_json(&dir.join("task.json"));
        let files: Vec<String> = task["knowledge_files"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f.as_str().unwrap().to_owned())
            .collect();
        let hint = task["required_evidence"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["tool"] == "knowledge_search")
            .and_then(|e| e["hint"].as_str())
            .unwrap_or_else(|| panic!("{name}: no knowledge_search hint"));
        let request = SearchRequest::new(hint, knowledge::DEFAULT_TOP_K).unwrap();
        let out = knowledge::search(&request, &repo().join("knowledge"), &files)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(
            validator.is_valid(&out.result),
            "{name}: result does not match the schema"
        );
        // Judged by the scorer itself, in either expected.json format.
        let expected = Expected::load(&dir).unwrap_or_else(|e| panic!("{name}: {e}"));
        let record = ObservationRecord {
            id: "obs-knowledge_search-1".into(),
            tool: "knowledge_search".into(),
            ok: true,
            step: 1,
            result: Some(out.result.clone()),
            error: None,
            attempted_arguments: None,
            digest: None,
            artifacts: Vec::new(),
        };
        assert!(
            expected.matches(&record),
            "{name}: searching {hint:?} misses the expected knowledge\nview:\n{}",
            out.result["view"].as_str().unwrap()
        );
        view_chars.push((out.result["view"].as_str().unwrap().chars().count(), name));
        checked += 1;
    }
    assert!(checked >= 2, "the suite has tasks");
    // Compact: a typical note's view with top_k = 3 is a couple of hundred tokens, not thousands.
    view_chars.sort();
    let median = view_chars[view_chars.len() / 2].0;
    assert!(
        median < 1_500,
        "median view is {median} characters: {view_chars:?}"
    );
    assert!(
        view_chars.iter().all(|(chars, _)| *chars < 2_500),
        "{view_chars:?}"
    );
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
            assert!(
                table.has_numeric_column(),
                "{name}: table in {} has no numeric column",
                passage.heading()
            );
            assert!(!table.rows.is_empty(), "{name}");
        }
    }
}

/// Where the rules reader understands a task's rule (from `key: number` facts or from sentences), the
/// verdict it gives agrees with the task's ground truth: the claims gate and the rule-check grammar
/// build on it, so a misread rule would turn a right answer into a rejected one. Most tasks of the
/// suite must be understood at all, or the fallback is not earning its place.
#[test]
fn understood_rules_agree_with_every_tasks_ground_truth() {
    let mut understood = Vec::new();
    let mut not_understood = Vec::new();
    for dir in task_dirs() {
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let task = read_json(&dir.join("task.json"));
        let expected = read_json(&dir.join("expected.json"));
        let Some(truth) = expected["final_answer"]["verdict"].as_bool() else {
            continue;
        };
        let files: Vec<String> = task["knowledge_files"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f.as_str().unwrap().to_owned())
            .collect();
        let hint = task["required_evidence"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["tool"] == "knowledge_search")
            .unwrap()["hint"]
            .as_str()
            .unwrap()
            .to_owned();
        let request = SearchRequest::new(&hint, knowledge::DEFAULT_TOP_K).unwrap();
        let out = knowledge::search(&request, &repo().join("knowledge"), &files).unwrap();
        let context = task["text"].as_str().unwrap().to_owned();
        match runtime::rules::verdict(&out.result, &context) {
            Some(verdict) => {
                assert_eq!(
                    verdict.holds, truth,
                    "{name}: the rules read {:?} against ground truth {truth}",
                    verdict.explanation
                );
                let terms = runtime::rules::calculator_terms(&out.result, &context).join(" and ");
                let columns = runtime::tools::calculator::TableColumns::from_results([&out.result]);
                let computed = runtime::tools::calculator::evaluate_with(&terms, &columns)
                    .map(|e| e.value)
                    .unwrap_or_else(|e| panic!("{name}: {terms}: {e}"));
                assert_eq!(
                    computed,
                    runtime::tools::calculator::CalcValue::Boolean(truth),
                    "{name}: {terms}"
                );
                understood.push(name.clone());
            }
            None => not_understood.push(name.clone()),
        }
        // A model's query is often one word of the hint ("occupancy"), which can bring back a second
        // table with the same column (occupancy by month beside occupancy by hotel): whatever the
        // tables, a rule that is read at all must be read right.
        for word in hint
            .split(|c: char| c.is_whitespace() || "，。、；".contains(c))
            .filter(|w| w.chars().count() >= 3)
        {
            let request = SearchRequest::new(word, knowledge::DEFAULT_TOP_K).unwrap();
            // A stop word ("find") matches nothing: a typed error, nothing to read.
            let Ok(out) = knowledge::search(&request, &repo().join("knowledge"), &files) else {
                continue;
            };
            if let Some(verdict) = runtime::rules::verdict(&out.result, &context) {
                assert_eq!(
                    verdict.holds, truth,
                    "{name}, query {word:?}: the rules read {:?}",
                    verdict.explanation
                );
                let terms = runtime::rules::calculator_terms(&out.result, &context).join(" and ");
                let columns = runtime::tools::calculator::TableColumns::from_results([&out.result]);
                let computed = runtime::tools::calculator::evaluate_with(&terms, &columns)
                    .map(|e| e.value)
                    .unwrap_or_else(|e| panic!("{name}: {terms}: {e}"));
                assert_eq!(
                    computed,
                    runtime::tools::calculator::CalcValue::Boolean(truth),
                    "{name}, query {word:?}: {terms}"
                );
            }
        }
    }
    eprintln!("rules understood: {understood:?}\nnot understood: {not_understood:?}");
    assert!(
        understood.len() * 4 >= (understood.len() + not_understood.len()) * 3,
        "fewer than 3 in 4 tasks' rules understood: not {not_understood:?}"
    );
}
