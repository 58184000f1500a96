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

/// The answer template the corpus's finals given slot by slot fill.
const TEMPLATE: &str = "Average <average>; rule <met / not met>.";

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
    // A final gives its answer as text or slot by slot (the task's template, TEMPLATE here): one of the two.
    (
        r#"{"type":"final","evidence_ids":[],"slots":{"average":"79","met / not met":"met"}}"#,
        "ok",
    ),
    (
        r#"{"type":"final","answer":"x","evidence_ids":[],"slots":{"average":"79","met / not met":"met"}}"#,
        "field_out_of_range",
    ),
    (r#"{"type":"final","evidence_ids":[]}"#, "missing_field"),
    (
        r#"{"type":"final","evidence_ids":[],"slots":{"average":79,"met / not met":"met"}}"#,
        "wrong_field_type",
    ),
    (
        r#"{"type":"final","evidence_ids":[],"slots":{}}"#,
        "field_out_of_range",
    ),
    (
        r#"{"type":"final","evidence_ids":[],"slots":["79","met"]}"#,
        "wrong_field_type",
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
            code(&parse_decision(text, &tools, Some(TEMPLATE))),
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
        let parser_ok = parse_decision(text, &tools, Some(TEMPLATE)).is_ok();
        assert_eq!(parser_ok, schema_ok, "parser and schema disagree on {text}");
    }
}

#[test]
fn a_final_given_slot_by_slot_is_written_into_the_template_or_refused_by_name() {
    let tools = tools();
    let text = r#"{"type":"final","evidence_ids":["obs-a-1"],"slots":{"met / not met":"not met","average":"79"}}"#;
    let Decision::Final(written) = parse_decision(text, &tools, Some(TEMPLATE)).unwrap() else {
        panic!("a final")
    };
    // Any order in, template order kept; the sentence is the template's fixed text with the values in place.
    assert_eq!(written.answer, "Average 79; rule not met.");
    assert_eq!(
        written.slots,
        vec![
            ("average".to_owned(), "79".to_owned()),
            ("met / not met".to_owned(), "not met".to_owned())
        ]
    );
    assert_eq!(
        Decision::Final(written).to_json()["slots"],
        serde_json::json!({"average": "79", "met / not met": "not met"})
    );
    // Refused by name, never guessed: a slot the template lacks or leaves out, an option it does not offer, and
    // slots where the task has no template to fill.
    for (slots, template, needle) in [
        (
            r#"{"average":"79","verdict":"met"}"#,
            Some(TEMPLATE),
            "missing: met / not met; not in the template: verdict",
        ),
        (
            r#"{"average":"79"}"#,
            Some(TEMPLATE),
            "missing: met / not met",
        ),
        (
            r#"{"average":"79","met / not met":"exceeded"}"#,
            Some(TEMPLATE),
            "<met / not met> takes one of its options: met, not met",
        ),
        (
            r#"{"average":"79","met / not met":"met"}"#,
            None,
            "no template with slots",
        ),
        (
            r#"{"average":"79","met / not met":"met"}"#,
            Some("No slots here."),
            "no template with slots",
        ),
    ] {
        let text = format!(r#"{{"type":"final","evidence_ids":[],"slots":{slots}}}"#);
        let error = parse_decision(&text, &tools, template).unwrap_err();
        assert_eq!(error.code(), "field_out_of_range", "{text}");
        assert_eq!(error.fields(), vec!["slots"], "{text}");
        assert!(error.to_string().contains(needle), "{text}: {error}");
    }
}

#[test]
fn a_final_states_its_rule_check_before_the_verdict_words_or_is_refused_by_name() {
    let tools = tools();
    let final_with =
        |slots: &str| format!(r#"{{"type":"final","evidence_ids":[],"slots":{slots}}}"#);
    // Stated: recorded with the decision, kept out of the sentence; left out: nothing stated.
    for (slots, stated) in [
        (
            r#"{"average":"79","rule check":"true","met / not met":"met"}"#,
            Some(true),
        ),
        (
            r#"{"average":"79","rule check":"false","met / not met":"met"}"#,
            Some(false),
        ),
        (r#"{"average":"79","met / not met":"met"}"#, None),
    ] {
        let Decision::Final(written) =
            parse_decision(&final_with(slots), &tools, Some(TEMPLATE)).unwrap()
        else {
            panic!("a final")
        };
        assert_eq!(written.rule_check, stated, "{slots}");
        assert_eq!(written.answer, "Average 79; rule met.", "{slots}");
        assert_eq!(written.slots.len(), 2, "{slots}");
        assert_eq!(
            Decision::Final(written).to_json()["slots"]["rule check"],
            stated.map_or(Value::Null, |holds| Value::String(holds.to_string())),
            "{slots}"
        );
    }
    // Bad input, refused by name: an outcome that is not "true" or "false", and the key under a template
    // with no choice for it to come before.
    for (slots, template, code, needle) in [
        (
            r#"{"average":"79","rule check":"yes","met / not met":"met"}"#,
            TEMPLATE,
            "wrong_field_type",
            "slots.rule check",
        ),
        (
            r#"{"average":"79","rule check":true,"met / not met":"met"}"#,
            TEMPLATE,
            "wrong_field_type",
            "slots.rule check",
        ),
        (
            r#"{"average":"79","rule check":"true"}"#,
            "Average <average>.",
            "field_out_of_range",
            "not in the template: rule check",
        ),
    ] {
        let error = parse_decision(&final_with(slots), &tools, Some(template)).unwrap_err();
        assert_eq!(error.code(), code, "{slots}");
        assert!(error.to_string().contains(needle), "{slots}: {error}");
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
    let decision = parse_decision(text, &tools, None).unwrap();
    assert_eq!(
        decision.to_json(),
        serde_json::json!({"type": "action", "tool": "knowledge_search", "arguments": {"top_k": 2, "query": "release rule"}})
    );
    let text = r#"{"type":"final","answer":"79","evidence_ids":["obs-a-1","obs-b-2"]}"#;
    match parse_decision(text, &tools, None).unwrap() {
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
        None,
    )
    .unwrap_err();
    let message = error.to_string();
    assert!(message.contains("reasoning"), "{message}");
    assert!(!message.contains("SECRET-CHAIN"), "{message}");
    let error = parse_decision(
        r#"{"type":"action","tool":"web_search","arguments":{}}"#,
        &tools,
        None,
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
    let error = parse_decision(&long_tool, &tools, None).unwrap_err();
    assert!(
        error.to_string().len() < 300,
        "model-supplied text is clipped in messages"
    );
}

#[test]
fn every_code_is_documented() {
    let tools = tools();
    for (text, _) in CORPUS.iter().chain(NOT_ONE_JSON_VALUE) {
        if let Err(error) = parse_decision(text, &tools, None) {
            assert!(
                DecisionError::CODES.contains(&error.code()),
                "{}",
                error.code()
            );
        }
    }
}
