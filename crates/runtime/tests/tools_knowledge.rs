//! knowledge_search tests: real BM25 retrieval over the shipped knowledge files,
//! data parsed from markdown (not hard-coded), typed errors for missing, corrupt
//! and path-like sources.

use std::fs;
use std::path::{Path, PathBuf};

use pretty_assertions::assert_eq;
use runtime::tools::knowledge::{self, SearchRequest};
use runtime::tools::{ArtifactStore, ToolContext, call_tool};
use serde_json::{Map, Value, json};

fn knowledge_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../knowledge")
}

fn sources(names: &[&str]) -> Vec<String> {
    names.iter().map(|n| (*n).to_owned()).collect()
}

fn search(
    dir: &Path,
    allowed: &[&str],
    query: &str,
    top_k: usize,
) -> Result<runtime::tools::ToolOutput, runtime::tools::ToolError> {
    knowledge::search(
        &SearchRequest::new(query, top_k).unwrap(),
        dir,
        &sources(allowed),
    )
}

#[test]
fn agent_eval_mini_batches_and_release_rule_are_found() {
    let out = search(
        &knowledge_dir(),
        &["agent_eval_mini.md"],
        "AgentEval Mini Task Success of each batch and the release rule",
        3,
    )
    .unwrap();
    assert_eq!(
        out.result["data"],
        json!({
            "metric": "Task Success",
            "unit": "%",
            "batches": [
                { "label": "Batch A", "value": 72 },
                { "label": "Batch B", "value": 78 },
                { "label": "Batch C", "value": 81 },
                { "label": "Batch D", "value": 85 },
            ],
            "release_rule": { "average_gte": 78, "every_batch_gte": 70 },
        })
    );
    assert_eq!(out.digest_basis, out.result["data"]);
    let ids: Vec<&str> = out.citations.iter().map(|c| c.id.as_str()).collect();
    assert!(
        ids.contains(&"kb-agent_eval_mini-task-success-by-batch"),
        "{ids:?}"
    );
    assert!(ids.contains(&"kb-agent_eval_mini-release-rule"), "{ids:?}");
    assert_eq!(out.citations.len(), 3);

    // Citations carry the file's blake3; the aggregate hash is a separate value.
    let file_hash = blake3::hash(&fs::read(knowledge_dir().join("agent_eval_mini.md")).unwrap())
        .to_hex()
        .to_string();
    for citation in &out.citations {
        assert_eq!(citation.source_id, "agent_eval_mini");
        assert_eq!(citation.source_blake3, file_hash);
        assert!(citation.score > 0.0);
    }
    let aggregate = out.result["source_blake3"].as_str().unwrap();
    assert_eq!(aggregate.len(), 64);
    assert_ne!(aggregate, file_hash);
    assert!(
        out.summary.contains("Batch A=72") && out.summary.contains("average_gte=78"),
        "{}",
        out.summary
    );
    // The observation shows the citations too, with the same ids.
    assert_eq!(out.result["citations"][0]["id"], json!(out.citations[0].id));
    assert_eq!(out.result["top_k"], json!(3));
}

#[test]
fn scores_are_ordered_and_top_k_is_respected() {
    let out = search(
        &knowledge_dir(),
        &["agent_eval_mini.md"],
        "batch task success",
        2,
    )
    .unwrap();
    assert_eq!(out.citations.len(), 2);
    assert!(out.citations[0].score >= out.citations[1].score);
    assert_eq!(out.citations[0].chunk_id, "task-success-by-batch");
}

#[test]
fn unrelated_query_ranks_the_unrelated_section_first() {
    let out = search(
        &knowledge_dir(),
        &["agent_eval_mini.md"],
        "how are reviewer disagreements settled",
        3,
    )
    .unwrap();
    assert_eq!(out.citations[0].chunk_id, "annotation-guidelines");
    let out = search(
        &knowledge_dir(),
        &["agent_eval_mini.md"],
        "memory GPU network machine",
        1,
    )
    .unwrap();
    assert_eq!(out.citations[0].chunk_id, "hardware-and-environment");
    // Neither section holds data, so the data is empty rather than invented.
    assert_eq!(out.result["data"]["batches"], json!([]));
    assert_eq!(out.result["data"]["release_rule"], Value::Null);
}

#[test]
fn a_query_matching_nothing_is_a_typed_error() {
    let error = search(
        &knowledge_dir(),
        &["agent_eval_mini.md"],
        "zebra xylophone",
        3,
    )
    .unwrap_err();
    assert_eq!(error.code, "knowledge_no_match");
    assert!(!error.retryable);
}

#[test]
fn second_task_has_its_own_data_and_only_allowed_files_are_read() {
    let out = search(
        &knowledge_dir(),
        &["tool_router_bench.md"],
        "routing accuracy per batch and release rule",
        3,
    )
    .unwrap();
    assert_eq!(out.result["data"]["metric"], json!("Routing Accuracy"));
    let values: Vec<i64> = out.result["data"]["batches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["value"].as_i64().unwrap())
        .collect();
    assert_eq!(values, [82, 74, 67, 88, 79]);
    assert_eq!(
        out.result["data"]["release_rule"],
        json!({ "average_gte": 80, "every_batch_gte": 70 })
    );
    // The AgentEval Mini file is not allowed for this task, so none of its sections appear.
    assert!(
        out.citations
            .iter()
            .all(|c| c.source_id == "tool_router_bench")
    );
    let other = search(
        &knowledge_dir(),
        &["tool_router_bench.md"],
        "reviewer annotation guidelines adjudicated",
        3,
    );
    assert!(
        other
            .map(|o| o
                .citations
                .iter()
                .all(|c| c.source_id == "tool_router_bench"))
            .unwrap_or(true)
    );
}

#[test]
fn data_follows_the_file_not_the_code() {
    let dir = tempfile::tempdir().unwrap();
    let original = fs::read_to_string(knowledge_dir().join("agent_eval_mini.md")).unwrap();
    fs::write(
        dir.path().join("agent_eval_mini.md"),
        original.replace("| Batch C | 81 |", "| Batch C | 91.5 |"),
    )
    .unwrap();
    let out = search(
        dir.path(),
        &["agent_eval_mini.md"],
        "task success by batch",
        1,
    )
    .unwrap();
    assert_eq!(
        out.result["data"]["batches"][2],
        json!({ "label": "Batch C", "value": 91.5 })
    );
}

#[test]
fn missing_file_is_knowledge_missing() {
    let dir = tempfile::tempdir().unwrap();
    let error = search(dir.path(), &["agent_eval_mini.md"], "batch", 3).unwrap_err();
    assert_eq!(error.code, "knowledge_missing");
    assert!(!error.retryable);
    assert!(
        error.message.contains("agent_eval_mini.md"),
        "{}",
        error.message
    );
    // No absolute path leaks into the message.
    assert!(
        !error.message.contains(&dir.path().display().to_string()),
        "{}",
        error.message
    );

    let error = search(
        &dir.path().join("nope"),
        &["agent_eval_mini.md"],
        "batch",
        3,
    )
    .unwrap_err();
    assert_eq!(error.code, "knowledge_missing");
}

fn corrupt_code(contents: &[u8]) -> (String, String) {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("broken.md"), contents).unwrap();
    let error = search(dir.path(), &["broken.md"], "batch release rule", 3).unwrap_err();
    (error.code.to_owned(), error.message)
}

#[test]
fn corrupt_files_are_knowledge_corrupt_with_a_reason() {
    let table = "# T\n\n## Scores\n\n| Batch | Score |\n|---|---|\n";
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (
            format!("{table}| Batch A | seventy-two |\n").into_bytes(),
            "not a finite number",
        ),
        (
            format!("{table}| Batch A | 72 | extra |\n").into_bytes(),
            "cells",
        ),
        (
            "# T\n\n## Scores\n\n| Batch | Score |\n| Batch A | 72 |\n".into(),
            "separator",
        ),
        (
            "# T\n\n## Release rule\n\n- average_gte: high\n".into(),
            "non-numeric",
        ),
        (
            "# T\n\n## Release rule\n\nNo numbers here.\n".into(),
            "rule lines",
        ),
        (
            "# Just prose\n\nNothing structured at all.\n".into(),
            "no structured data",
        ),
        (b"# T\n\n\xff\xfe garbage\n".to_vec(), "not UTF-8"),
        (Vec::new(), "no section"),
        (
            format!("{table}| Batch A | 72 |\n| Batch A | 73 |\n").into_bytes(),
            "twice",
        ),
    ];
    for (contents, reason) in cases {
        let (code, message) = corrupt_code(&contents);
        assert_eq!(code, "knowledge_corrupt", "{message}");
        assert!(
            message.contains(reason),
            "expected {reason:?} in {message:?}"
        );
        assert!(message.starts_with("broken.md"), "{message}");
    }
}

#[test]
fn path_like_sources_are_refused_before_any_read() {
    for name in [
        "../Cargo.toml",
        "../knowledge/agent_eval_mini.md",
        "/etc/passwd",
        "sub/agent_eval_mini.md",
        ".hidden.md",
        "notes.txt",
    ] {
        let error = search(&knowledge_dir(), &[name], "batch", 3).unwrap_err();
        assert_eq!(error.code, "knowledge_source_invalid", "{name}");
    }
}

#[cfg(unix)]
#[test]
fn symlinks_pointing_outside_are_refused_inside_are_allowed() {
    let outside = tempfile::tempdir().unwrap();
    fs::write(
        outside.path().join("secret.md"),
        "# S\n\n## Release rule\n\n- average_gte: 1\n",
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(
        outside.path().join("secret.md"),
        dir.path().join("escape.md"),
    )
    .unwrap();
    let error = search(dir.path(), &["escape.md"], "release rule", 3).unwrap_err();
    assert_eq!(error.code, "knowledge_source_outside");

    fs::copy(
        knowledge_dir().join("agent_eval_mini.md"),
        dir.path().join("real.md"),
    )
    .unwrap();
    std::os::unix::fs::symlink(dir.path().join("real.md"), dir.path().join("alias.md")).unwrap();
    let out = search(dir.path(), &["alias.md"], "release rule", 1).unwrap();
    assert_eq!(out.result["data"]["release_rule"]["average_gte"], json!(78));
}

#[test]
fn no_allowed_sources_is_an_error() {
    let error = search(&knowledge_dir(), &[], "batch", 3).unwrap_err();
    assert_eq!(error.code, "knowledge_no_sources");
}

#[test]
fn citation_ids_are_stable_across_calls() {
    let a = search(&knowledge_dir(), &["agent_eval_mini.md"], "release rule", 2).unwrap();
    let b = search(&knowledge_dir(), &["agent_eval_mini.md"], "release rule", 2).unwrap();
    assert_eq!(a, b);
}

#[test]
fn call_tool_dispatches_with_registry_defaults() {
    let mut store = ArtifactStore::new();
    let allowed = sources(&["agent_eval_mini.md"]);
    let artifact_dir = tempfile::tempdir().unwrap();
    let dir = knowledge_dir();
    let mut ctx = ToolContext {
        knowledge_dir: &dir,
        allowed_sources: &allowed,
        artifact_dir: artifact_dir.path(),
        artifacts: &mut store,
    };
    let raw: Map<String, Value> = json!({ "query": "release rule" })
        .as_object()
        .unwrap()
        .clone();
    let args = runtime::registry::ToolRegistry::builtin()
        .validate_arguments("knowledge_search", &raw)
        .unwrap();
    assert_eq!(args["top_k"], json!(3));
    let out = call_tool("knowledge_search", &args, &mut ctx).unwrap();
    assert_eq!(out.citations[0].chunk_id, "release-rule");
    assert_eq!(
        call_tool("shell", &args, &mut ctx).unwrap_err().code,
        "unknown_tool"
    );
}
