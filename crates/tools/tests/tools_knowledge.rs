//! knowledge_search tests over the shipped knowledge files: real BM25 retrieval, data parsed from
//! the markdown (not hard-coded), typed errors for missing, corrupt and path-like sources.
//! Generic markdown shapes are in `tools_knowledge_markdown.rs`, the task suite in
//! `tools_knowledge_suite.rs`.

use std::fs;
use std::path::{Path, PathBuf};

use forge_tools::knowledge::{self, SearchRequest};
use forge_tools::{ArtifactStore, ToolContext, call_tool};
use pretty_assertions::assert_eq;
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
) -> Result<forge_tools::ToolOutput, forge_tools::ToolError> {
    knowledge::search(
        &SearchRequest::new(query, top_k).unwrap(),
        dir,
        &sources(allowed),
    )
}

#[test]
fn agent_eval_mini_table_and_rule_facts_are_found() {
    let out = search(
        &knowledge_dir(),
        &["agent_eval_mini.md"],
        "AgentEval Mini Task Success of each batch and the release rule",
        3,
    )
    .unwrap();
    let table = "kb-agent_eval_mini-task-success-by-batch";
    let rule = "kb-agent_eval_mini-release-rule";
    let row =
        |label: &str, value: i64| json!({ "label": label, "values": { "Task Success": value } });
    assert_eq!(
        out.result["data"],
        json!({
            "tables": [{
                "citation_id": table,
                "heading": "AgentEval Mini > Task Success by batch",
                "label_column": "Batch",
                "columns": [{ "name": "Task Success", "unit": "%", "count": 4, "missing": [] }],
                "rows": [row("Batch A", 72), row("Batch B", 78), row("Batch C", 81), row("Batch D", 85)],
                "summary_rows": [],
                "stats": { "Task Success": {
                    "count": 4,
                    "lowest": { "label": "Batch A", "value": 72 },
                    "highest": { "label": "Batch D", "value": 85 },
                } },
            }],
            "facts": [
                { "citation_id": rule, "key": "average_gte", "value": 78, "unit": null },
                { "citation_id": rule, "key": "every_batch_gte", "value": 70, "unit": null },
            ],
        })
    );
    assert_eq!(out.digest_basis, out.result["data"]);
    let ids: Vec<&str> = out.citations.iter().map(|c| c.id.as_str()).collect();
    assert!(ids.contains(&table), "{ids:?}");
    assert!(ids.contains(&rule), "{ids:?}");
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
    assert_eq!(
        out.summary,
        format!(
            "3 passage(s): {}; 1 table(s) (4 rows), 2 fact(s)",
            ids.join(", ")
        )
    );
    assert_eq!(out.result["summary"], json!(out.summary));
    // The view the model reads has the rows as `label = value` and the rule's facts.
    let view = out.result["view"].as_str().unwrap();
    assert!(
        view.contains(
            "Task Success (%): Batch A = 72, Batch B = 78, Batch C = 81, Batch D = 85 (4 rows)"
        ),
        "{view}"
    );
    assert!(
        view.contains("Facts: average_gte = 78; every_batch_gte = 70"),
        "{view}"
    );
    assert!(
        view.contains(&format!("[{rule}] AgentEval Mini > Release rule")),
        "{view}"
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
    assert_eq!(out.result["data"], json!({ "tables": [], "facts": [] }));
    assert!(
        out.summary.ends_with("0 table(s) (0 rows), 0 fact(s)"),
        "{}",
        out.summary
    );
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
    let table = &out.result["data"]["tables"][0];
    assert_eq!(
        table["columns"],
        json!([{ "name": "Routing Accuracy", "unit": "%", "count": 5, "missing": [] }])
    );
    let values: Vec<i64> = table["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["values"]["Routing Accuracy"].as_i64().unwrap())
        .collect();
    assert_eq!(values, [82, 74, 67, 88, 79]);
    let facts: Vec<(&str, i64)> = out.result["data"]["facts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["key"].as_str().unwrap(), f["value"].as_i64().unwrap()))
        .collect();
    assert_eq!(facts, [("average_gte", 80), ("every_batch_gte", 70)]);
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
        out.result["data"]["tables"][0]["rows"][2],
        json!({ "label": "Batch C", "values": { "Task Success": 91.5 } })
    );
    assert!(
        out.result["view"]
            .as_str()
            .unwrap()
            .contains("Batch C = 91.5")
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
    let many_rows: String = (0..201).map(|i| format!("| r{i} | {i} |\n")).collect();
    let wide_header: String = (0..33).map(|i| format!("| c{i} ")).collect();
    let wide_rule: String = (0..33).map(|_| "|---").collect();
    let many_facts: String = (0..101).map(|i| format!("- limit {i}: {i}\n")).collect();
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (b"# T\n\n\xff\xfe garbage\n".to_vec(), "not UTF-8"),
        (Vec::new(), "no section"),
        (b"  \n\n\t\n".to_vec(), "no section"),
        (b"---\n\n***\n".to_vec(), "no section"),
        (
            format!("# T\n\n| Row | Value |\n|---|---|\n{many_rows}").into_bytes(),
            "201 rows; at most 200",
        ),
        (
            format!("# T\n\n{wide_header}|\n{wide_rule}|\n").into_bytes(),
            "33 columns; at most 32",
        ),
        (
            format!("# T\n\n{many_facts}").into_bytes(),
            "101 `key: number` lines; at most 100",
        ),
        (vec![b'a'; 1024 * 1024 + 1], "larger than"),
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
    // The line of the offending table is named.
    let (_, message) =
        corrupt_code(format!("# T\n\nintro\n\n| Row | Value |\n|---|---|\n{many_rows}").as_bytes());
    assert!(message.contains("table at line 5"), "{message}");
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
    assert_eq!(out.result["data"]["facts"][0]["key"], json!("average_gte"));
    assert_eq!(out.result["data"]["facts"][0]["value"], json!(78));
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
        columns: &forge_tools::NoColumns,
    };
    let raw: Map<String, Value> = json!({ "query": "release rule" })
        .as_object()
        .unwrap()
        .clone();
    let args = forge_tools::registry::ToolRegistry::builtin()
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
