//! The decision contract: the Rust parser and schemas/decision.schema.json agree on a corpus of
//! good and bad decisions, every bad input gets a stable code, and the schema's tool enum is the
//! registry's tool list.

use pretty_assertions::assert_eq;
use runtime::decision::{Decision, DecisionError, decision_schema, parse_decision};
use runtime::registry::ToolRegistry;
use serde_json::Value;

fn tools() -> Vec<&'static str> {
    ToolRegistry::builtin().tool_names()
}

/// (text, expected code or "ok").
const CORPUS: &[(&str, &str)] = &[
    (
        r#"{"type":"action","tool":"knowledge_search","arguments":{"query":"batches"}}"#,
        "ok",
    ),
    (
        r#"  {"type": "action", "tool": "calculator", "arguments": {"expression": "1+1"}}  "#,
        "ok",
    ),
    (r#"{"type":"action","tool":"plot","arguments":{}}"#, "ok"),
    (
        r#"{"type":"final","answer":"79","evidence_ids":["obs-calculator-2"]}"#,
        "ok",
    ),
    (
        r#"{"type":"final","answer":"done","evidence_ids":[]}"#,
        "ok",
    ),
    (
        r#"{"arguments":{},"tool":"calculator","type":"action"}"#,
        "ok",
    ),
    (
        r#"{"type":"action","tool":"calculator","arguments":{"expression":"1"},"reasoning":"because"}"#,
        "unexpected_field",
    ),
    (
        r#"{"type":"action","tool":"calculator","arguments":{"expression":"1"},"thought":"hmm"}"#,
        "unexpected_field",
    ),
    (
        r#"{"type":"final","answer":"x","evidence_ids":[],"analysis":"..."}"#,
        "unexpected_field",
    ),
    // The public decision summary is part of the contract (the runtime writes it in guided prefixes);
    // an empty one is not.
    (
        r#"{"type":"final","decision_summary":"answer citing nothing","answer":"x","evidence_ids":[]}"#,
        "ok",
    ),
    (
        r#"{"type":"final","decision_summary":"","answer":"x","evidence_ids":[]}"#,
        "field_out_of_range",
    ),
    (
        r#"{"tool":"calculator","arguments":{"expression":"1"}}"#,
        "missing_type",
    ),
    (r#"{"type":"action","tool":"calculator"}"#, "missing_field"),
    (r#"{"type":"action","arguments":{}}"#, "missing_field"),
    (r#"{"type":"final","answer":"x"}"#, "missing_field"),
    (r#"{"type":"final","evidence_ids":[]}"#, "missing_field"),
    (
        r#"{"type":"tool_call","tool":"calculator","arguments":{}}"#,
        "unknown_type",
    ),
    (
        r#"{"type":"ACTION","tool":"calculator","arguments":{}}"#,
        "unknown_type",
    ),
    (
        r#"{"type":7,"tool":"calculator","arguments":{}}"#,
        "wrong_field_type",
    ),
    (
        r#"{"type":"action","tool":"web_search","arguments":{}}"#,
        "unknown_tool",
    ),
    (
        r#"{"type":"action","tool":"Calculator","arguments":{}}"#,
        "unknown_tool",
    ),
    (
        r#"{"type":"action","tool":"calculator","arguments":"1+1"}"#,
        "wrong_field_type",
    ),
    (
        r#"{"type":"action","tool":"calculator","arguments":[]}"#,
        "wrong_field_type",
    ),
    (
        r#"{"type":"action","tool":3,"arguments":{}}"#,
        "wrong_field_type",
    ),
    (
        r#"{"type":"final","answer":"","evidence_ids":[]}"#,
        "field_out_of_range",
    ),
    (
        r#"{"type":"final","answer":79,"evidence_ids":[]}"#,
        "wrong_field_type",
    ),
    (
        r#"{"type":"final","answer":"x","evidence_ids":"obs-plot-3"}"#,
        "wrong_field_type",
    ),
    (
        r#"{"type":"final","answer":"x","evidence_ids":[3]}"#,
        "wrong_field_type",
    ),
    (
        r#"{"type":"final","answer":"x","evidence_ids":[""]}"#,
        "field_out_of_range",
    ),
    (r#"["action"]"#, "not_object"),
    (r#""final""#, "not_object"),
    (r#"null"#, "not_object"),
];

/// Texts that are not a single JSON value (the schema cannot judge them; the parser must refuse).
const NOT_ONE_JSON_VALUE: &[(&str, &str)] = &[
    ("", "empty_output"),
    ("   \n ", "empty_output"),
    ("I will search first.", "invalid_json"),
    (
        "```json\n{\"type\":\"final\",\"answer\":\"x\",\"evidence_ids\":[]}\n```",
        "invalid_json",
    ),
    (
        r#"Sure! {"type":"final","answer":"x","evidence_ids":[]}"#,
        "invalid_json",
    ),
    (
        r#"{"type":"final","answer":"x","evidence_ids":[]} I hope this helps"#,
        "trailing_text",
    ),
    (
        r#"{"type":"final","answer":"x","evidence_ids":[]}{"type":"final","answer":"y","evidence_ids":[]}"#,
        "trailing_text",
    ),
    (
        r#"{"type":"final","answer":"x","evidence_ids":[]"#,
        "invalid_json",
    ),
];

fn code(result: &Result<Decision, DecisionError>) -> &'static str {
    match result {
        Ok(_) => "ok",
        Err(error) => error.code(),
    }
}

#[test]
fn parser_codes_match_the_corpus() {
    let tools = tools();
    for (text, expected) in CORPUS.iter().chain(NOT_ONE_JSON_VALUE) {
        assert_eq!(
            code(&parse_decision(text, &tools)),
            *expected,
            "for {text:?}"
        );
    }
}

#[test]
fn parser_and_schema_agree_on_every_json_value() {
    let validator = jsonschema::validator_for(decision_schema()).expect("decision schema compiles");
    let tools = tools();
    for (text, _) in CORPUS {
        let value: Value = serde_json::from_str(text).unwrap();
        let schema_ok = validator.is_valid(&value);
        let parser_ok = parse_decision(text, &tools).is_ok();
        assert_eq!(parser_ok, schema_ok, "parser and schema disagree on {text}");
    }
}

#[test]
fn schema_tool_enum_is_the_registry() {
    let schema = decision_schema();
    let branches = schema["oneOf"].as_array().unwrap();
    let action = branches
        .iter()
        .find(|b| b["properties"]["type"]["const"] == "action")
        .unwrap();
    let listed: Vec<&str> = action["properties"]["tool"]["enum"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(listed, tools());
    assert_eq!(runtime::decision::decision_types(), vec!["action", "final"]);
}

#[test]
fn accepted_decisions_round_trip_in_contract_form() {
    let tools = tools();
    let text = r#" {"arguments": {"top_k": 2, "query": "release rule"}, "tool": "knowledge_search", "type": "action"} "#;
    let decision = parse_decision(text, &tools).unwrap();
    assert_eq!(
        decision.to_json(),
        serde_json::json!({"type": "action", "tool": "knowledge_search", "arguments": {"top_k": 2, "query": "release rule"}})
    );
    let text = r#"{"type":"final","answer":"79","evidence_ids":["obs-a-1","obs-b-2"]}"#;
    match parse_decision(text, &tools).unwrap() {
        Decision::Final(f) => assert_eq!(f.evidence_ids, vec!["obs-a-1", "obs-b-2"]),
        other => panic!("expected final, got {other:?}"),
    }
}

#[test]
fn errors_name_the_offending_field_but_not_its_value() {
    let tools = tools();
    let error = parse_decision(
        r#"{"type":"action","tool":"calculator","arguments":{},"reasoning":"SECRET-CHAIN"}"#,
        &tools,
    )
    .unwrap_err();
    let message = error.to_string();
    assert!(message.contains("reasoning"), "{message}");
    assert!(!message.contains("SECRET-CHAIN"), "{message}");
    let error = parse_decision(
        r#"{"type":"action","tool":"web_search","arguments":{}}"#,
        &tools,
    )
    .unwrap_err();
    assert!(
        error.to_string().contains("web_search") && error.to_string().contains("calculator"),
        "{error}"
    );
    let long_tool = format!(
        r#"{{"type":"action","tool":"{}","arguments":{{}}}}"#,
        "x".repeat(500)
    );
    let error = parse_decision(&long_tool, &tools).unwrap_err();
    assert!(
        error.to_string().len() < 300,
        "model-supplied text is clipped in messages"
    );
}

#[test]
fn every_code_is_documented() {
    let tools = tools();
    for (text, _) in CORPUS.iter().chain(NOT_ONE_JSON_VALUE) {
        if let Err(error) = parse_decision(text, &tools) {
            assert!(
                DecisionError::CODES.contains(&error.code()),
                "{}",
                error.code()
            );
        }
    }
}
