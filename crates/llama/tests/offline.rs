//! Tests that need no model file: GGUF header parsing on synthetic files, inspection errors and redaction,
//! generation schemas and guided prefixes against the runtime's own decision parser, the JSON stop scanner.

use std::io::Write;
use std::path::Path;

use forge_llama::engine::JsonScanner;
use forge_llama::grammar::{self, Caps};
use forge_llama::prompt::{self, Mode};
use pretty_assertions::assert_eq;
use runtime::policy::{DecisionRequest, Gap};
use runtime::registry::ToolRegistry;
use serde_json::{Value, json};

fn gguf_string(out: &mut Vec<u8>, s: &str) {
    out.extend((s.len() as u64).to_le_bytes());
    out.extend(s.as_bytes());
}

/// A minimal GGUF v3: a few metadata keys and one F32 tensor of `elements` values.
fn synthetic_gguf(elements: u64, data_bytes: usize) -> Vec<u8> {
    let mut b = b"GGUF".to_vec();
    b.extend(3u32.to_le_bytes());
    b.extend(1u64.to_le_bytes()); // tensors
    b.extend(4u64.to_le_bytes()); // kv
    gguf_string(&mut b, "general.architecture");
    b.extend(8u32.to_le_bytes());
    gguf_string(&mut b, "tiny");
    gguf_string(&mut b, "general.file_type");
    b.extend(4u32.to_le_bytes());
    b.extend(15u32.to_le_bytes());
    gguf_string(&mut b, "tiny.context_length");
    b.extend(4u32.to_le_bytes());
    b.extend(2048u32.to_le_bytes());
    gguf_string(&mut b, "tokenizer.ggml.scores");
    b.extend(9u32.to_le_bytes());
    b.extend(6u32.to_le_bytes()); // f32 array
    b.extend(3u64.to_le_bytes());
    b.extend([0u8; 12]);
    gguf_string(&mut b, "weight");
    b.extend(1u32.to_le_bytes());
    b.extend(elements.to_le_bytes());
    b.extend(0u32.to_le_bytes()); // F32
    b.extend(0u64.to_le_bytes());
    while b.len() % 32 != 0 {
        b.push(0);
    }
    b.extend(vec![0u8; data_bytes]);
    b
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> std::path::PathBuf {
    let p = dir.join(name);
    std::fs::File::create(&p).unwrap().write_all(bytes).unwrap();
    p
}

#[test]
fn inspect_reads_a_synthetic_gguf() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(dir.path(), "tiny.gguf", &synthetic_gguf(8, 32));
    let info = forge_llama::inspect(&p).unwrap();
    assert_eq!(info.architecture, "tiny");
    assert_eq!(info.quantization.as_deref(), Some("Q4_K_M"));
    assert_eq!(info.context_length, Some(2048));
    assert_eq!(info.parameter_count, 8);
    assert_eq!(info.tensor_count, 1);
    assert!(!info.chat_template_present);
    assert_eq!(info.sha256_source, "computed");
    assert_eq!(forge_llama::inspect(&p).unwrap().sha256_source, "cache");
}

#[test]
fn bad_files_are_model_unavailable_naming_only_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let shown = dir.path().display().to_string();
    let cases = [
        (write(dir.path(), "short.gguf", &synthetic_gguf(8, 31)), "truncated"),
        (write(dir.path(), "cut-header.gguf", &synthetic_gguf(8, 32)[..40]), "header ends early"),
        (write(dir.path(), "notes.gguf", b"this is not a model at all"), "not a GGUF file"),
        (dir.path().join("absent.gguf"), "file not found"),
    ];
    for (path, expected) in cases {
        let err = forge_llama::inspect(&path).unwrap_err();
        assert_eq!(err.file, path.file_name().unwrap().to_string_lossy());
        assert!(err.reason.contains(expected), "{}: {err}", err.file);
        assert!(!err.to_string().contains(&shown), "directory leaked: {err}");
    }
}

#[test]
fn a_missing_model_ends_a_run_failed_model_unavailable() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let spec = forge_llama::harness::default_spec(&root, "missing", dir.path());
    let cfg = forge_llama::LlamaConfig::new(dir.path().join("nowhere.gguf"), Mode::Guided);
    let run = forge_llama::harness::run_with_model(&spec, cfg, &forge_llama::harness::control_for(&spec.budgets), &mut |_| {}).unwrap();
    assert_eq!(run.result.status, runtime::RunStatus::Failed);
    assert_eq!(run.result.stop_reason, runtime::StopReason::ModelUnavailable);
    let message = run.result.error.unwrap().message;
    assert!(message.contains("nowhere.gguf") && !message.contains(&dir.path().display().to_string()), "{message}");
}

fn tool_names() -> Vec<&'static str> {
    ToolRegistry::builtin().tool_names()
}

#[test]
fn guided_prefixes_complete_into_decisions_the_runtime_accepts() {
    let cards = ToolRegistry::builtin().cards();
    let caps = Caps::default();
    let completions = [
        ("knowledge_search", "Task Success per batch\"}}"),
        ("calculator", "(72 + 78 + 81 + 85) / 4\"}}"),
        ("plot", "\"A\",\"B\"],\"values\":[1,2],\"title\":\"T\",\"average\":1.5}}"),
    ];
    for (tool, rest) in completions {
        let prefix = grammar::guided_tool_prefix(&cards, tool, &caps).unwrap();
        let text = format!("{prefix}{rest}");
        let decision = runtime::decision::parse_decision(&text, &tool_names()).unwrap_or_else(|e| panic!("{text}: {e}"));
        let args = match decision {
            runtime::decision::Decision::Action(a) => a.arguments,
            other => panic!("{other:?}"),
        };
        ToolRegistry::builtin().validate_arguments(tool, &args).unwrap_or_else(|e| panic!("{tool}: {e:?}"));
    }
    let ids = vec!["obs-knowledge_search-1".to_string(), "obs-calculator-2".to_string()];
    let text = format!("{}The average is 79.\"}}", grammar::guided_final_prefix(&ids));
    let decision = runtime::decision::parse_decision(&text, &tool_names()).unwrap();
    assert!(matches!(decision, runtime::decision::Decision::Final(f) if f.evidence_ids == ids));
}

#[test]
fn generation_schemas_tighten_the_registry() {
    let cards = ToolRegistry::builtin().cards();
    let caps = Caps::default();
    let plot = grammar::guided_tool_schema(&cards, "plot", &caps).unwrap();
    let args = &plot["properties"]["arguments"];
    // Required first, then default-less optionals (average) made required; defaulted ones (y_label) left out.
    assert_eq!(args["required"], json!(["labels", "values", "title", "average"]));
    assert!(args["properties"].get("y_label").is_none());
    assert_eq!(args["properties"]["labels"]["maxItems"], json!(caps.array_items));
    let ks = grammar::guided_tool_schema(&cards, "knowledge_search", &caps).unwrap();
    assert_eq!(ks["properties"]["arguments"]["properties"]["query"]["maxLength"], json!(caps.string_chars));

    let free = grammar::free_schema(runtime::decision::decision_schema(), &cards, &caps).unwrap();
    let branches = free["oneOf"].as_array().unwrap();
    let tools: Vec<&str> = branches.iter().filter_map(|b| b["properties"]["tool"]["const"].as_str()).collect();
    assert_eq!(tools, tool_names());
    assert_eq!(branches.last().unwrap()["properties"]["type"]["const"], json!("final"));
    assert!(matches!(grammar::guided_tool_schema(&cards, "shell", &caps), Err(grammar::GrammarError::UnknownTool(_))));
}

#[test]
fn compact_gbnf_removes_free_whitespace_and_string_escapes_only() {
    let g = [
        r#"root ::= "{" space "}""#,
        r#"space ::= | " " | "\n"{1,2} [ \t]{0,20}"#,
        r#"char ::= [^"\\\x7F\x00-\x1F] | [\\] (["\\bfnrt] | "u" [0-9a-fA-F]{4})"#,
        r#"digit ::= [0-9]"#,
    ]
    .join("\n");
    let want = [r#"root ::= "{" space "}""#, r#"space ::= """#, r#"char ::= [^"\\\x7F\x00-\x1F]"#, r#"digit ::= [0-9]"#].join("\n");
    assert_eq!(grammar::compact_gbnf(&g), want);
}

#[test]
fn json_scanner_stops_after_the_first_top_level_value() {
    let mut s = JsonScanner::default();
    let text = r#"{"a":"}{\"]","b":[1,{"c":2}]}"#;
    for (i, b) in text.bytes().enumerate() {
        assert!(!s.complete(), "complete too early at byte {i}");
        s.feed(b);
    }
    assert!(s.complete());
}

fn request(gap: Gap) -> DecisionRequest {
    DecisionRequest {
        step: 2,
        attempt: 0,
        task: "Decide the release.".into(),
        tools: ToolRegistry::builtin().cards(),
        state: json!({
            "budget": {"steps_left": 10, "tool_calls_left": 9, "seconds_left": 250},
            "feedback": [],
            "observations": [
                {"id": "obs-knowledge_search-1", "tool": "knowledge_search", "ok": true,
                 "result": {"citations": [{"text": "long"}], "summary": "Task Success: Batch A=72"}},
                {"id": "obs-calculator-2", "tool": "calculator", "ok": false,
                 "error": {"code": "forbidden_token", "message": "no names"}, "attempted_arguments": {"expression": "sum(a)"}}
            ]
        }),
        gap,
        repair: None,
        max_new_tokens: 256,
    }
}

#[test]
fn prompts_put_stable_text_first_and_follow_the_mode() {
    let cards = ToolRegistry::builtin().cards();
    let system = prompt::system_prompt(&cards);
    for name in tool_names() {
        assert!(system.contains(&format!("- {name}(")), "{system}");
    }
    assert!(system.contains("top_k?: integer 1..4"), "{system}");

    let guided = prompt::user_message(&request(Gap::Tool { tool: "calculator".into(), hint: "average them".into() }), Mode::Guided);
    let obs = guided.find("obs-knowledge_search-1").unwrap();
    let budget = guided.find("budget left: steps 10, tool calls 9\n").expect(&guided);
    assert!(!guided.contains("seconds"), "only steps and tool calls are shown: {guided}");
    assert!(guided.contains("- obs-knowledge_search-1 (knowledge_search) ok: Task Success: Batch A=72\n"), "{guided}");
    assert!(!guided.contains("citations") && !guided.contains("long"), "bulky citation text is left out: {guided}");
    assert!(
        guided.contains("- obs-calculator-2 (calculator) failed: forbidden_token: no names (arguments were {\"expression\":\"sum(a)\"})\n"),
        "{guided}"
    );
    assert!(obs < budget, "observations must precede the budget (KV reuse): {guided}");
    let next = guided.find("Next: call calculator to average them.\ncalculator: Evaluate").expect(&guided);
    assert!(next > budget, "the step-specific part comes last: {guided}");

    let fin = prompt::user_message(
        &request(Gap::Final { evidence_ids: vec!["obs-1".into()], answer_template: "Average is <average>.".into() }),
        Mode::Guided,
    );
    assert!(fin.contains("Average is <average>.") && fin.contains("obs-1"), "{fin}");

    // Free mode is not told the gap.
    let free = prompt::user_message(&request(Gap::Tool { tool: "calculator".into(), hint: "average them".into() }), Mode::Free);
    assert!(!free.contains("Next: call") && !free.contains("average them"), "{free}");
    let _: Value = json!(null);
}
