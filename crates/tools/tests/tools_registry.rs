//! Tool registry tests: schemas/tool_registry.json loads, is the one source for
//! cards/timeouts, and argument validation names the field and the value.

use forge_tools::registry::{ArgumentError, REGISTRY_JSON, ToolRegistry};
use pretty_assertions::assert_eq;
use serde_json::{Map, Value, json};

fn validate(tool: &str, raw: Value) -> Result<Map<String, Value>, ArgumentError> {
    ToolRegistry::builtin().validate_arguments(tool, raw.as_object().unwrap())
}

#[test]
fn builtin_registry_loads_the_schema_file() {
    let registry = ToolRegistry::builtin();
    assert_eq!(
        registry.tool_names(),
        ["knowledge_search", "calculator", "plot"]
    );
    let on_disk: Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../schemas/tool_registry.json"
        ))
        .unwrap(),
    )
    .unwrap();
    assert_eq!(registry.as_json(), &on_disk);
    assert_eq!(registry.timeout_ms("knowledge_search"), 5000);
    assert_eq!(registry.timeout_ms("calculator"), 2000);
    assert_eq!(registry.timeout_ms("plot"), 10000);

    let cards = registry.cards();
    assert_eq!(cards.len(), 3);
    assert_eq!(cards[1].name, "calculator");
    assert_eq!(cards[1].arguments_schema, on_disk["tools"][1]["arguments"]);
    assert_eq!(
        cards[1].arguments_schema["properties"]["expression"]["maxLength"],
        json!(240)
    );
    for tool in on_disk["tools"].as_array().unwrap() {
        assert_eq!(
            tool["arguments"]["additionalProperties"],
            json!(false),
            "{}",
            tool["name"]
        );
    }
}

#[test]
fn defaults_are_applied_and_order_follows_the_schema() {
    let args = validate("knowledge_search", json!({ "query": "release rule" })).unwrap();
    assert_eq!(
        Value::Object(args),
        json!({ "query": "release rule", "top_k": 3 })
    );
    let args = validate("knowledge_search", json!({ "top_k": 4.0, "query": "q" })).unwrap();
    assert_eq!(
        serde_json::to_string(&args).unwrap(),
        r#"{"query":"q","top_k":4}"#
    );
    let args = validate(
        "plot",
        json!({ "labels": ["A"], "values": [1.5], "title": "T" }),
    )
    .unwrap();
    assert_eq!(args["y_label"], json!("value"));
    assert!(!args.contains_key("average"));
}

#[test]
fn unknown_tool_and_unknown_or_missing_names() {
    assert_eq!(
        validate("shell", json!({})).unwrap_err(),
        ArgumentError::UnknownTool {
            tool: "shell".into()
        }
    );

    // The seed's examples: `formula` instead of `expression`.
    let error = validate("calculator", json!({ "formula": "1+1" })).unwrap_err();
    assert_eq!(
        error,
        ArgumentError::Missing {
            tool: "calculator".into(),
            fields: vec!["expression".into()]
        }
    );
    assert_eq!(error.field(), Some("expression"));

    let error = validate(
        "calculator",
        json!({ "expression": "1+1", "variables": {} }),
    )
    .unwrap_err();
    assert_eq!(error.kind(), "unexpected");
    assert_eq!(error.field(), Some("variables"));
    assert_eq!(
        error.to_string(),
        "calculator: unexpected argument(s): variables (allowed: expression)"
    );

    let error = validate("knowledge_search", json!({})).unwrap_err();
    assert_eq!(
        error.to_string(),
        "knowledge_search: missing required argument(s): query"
    );
}

#[test]
fn wrong_types_name_field_and_value() {
    let error = validate("knowledge_search", json!({ "query": 42 })).unwrap_err();
    assert_eq!(
        error,
        ArgumentError::WrongType {
            tool: "knowledge_search".into(),
            field: "query".into(),
            expected: "a string".into(),
            value: Box::new(json!(42))
        }
    );
    assert_eq!(
        error.to_string(),
        "knowledge_search.query: expected a string, got number 42"
    );

    let error = validate("knowledge_search", json!({ "query": "q", "top_k": 2.5 })).unwrap_err();
    assert_eq!(
        error.to_string(),
        "knowledge_search.top_k: expected an integer, got number 2.5"
    );
    let error = validate("knowledge_search", json!({ "query": "q", "top_k": "3" })).unwrap_err();
    assert_eq!(error.field(), Some("top_k"));
    assert_eq!(error.kind(), "wrong_type");
    assert_eq!(
        validate("calculator", json!({ "expression": ["1+1"] }))
            .unwrap_err()
            .kind(),
        "wrong_type"
    );
    assert_eq!(
        validate(
            "plot",
            json!({ "labels": ["A", 1], "values": [1, 2], "title": "T" })
        )
        .unwrap_err()
        .field(),
        Some("labels[1]")
    );
}

#[test]
fn ranges_and_lengths_name_field_and_value() {
    // The seed's example: top_k = 8.
    let error = validate("knowledge_search", json!({ "query": "q", "top_k": 8 })).unwrap_err();
    assert_eq!(
        error,
        ArgumentError::OutOfRange {
            tool: "knowledge_search".into(),
            field: "top_k".into(),
            constraint: "must be between 1 and 4".into(),
            value: Box::new(json!(8))
        }
    );
    assert_eq!(
        error.to_string(),
        "knowledge_search.top_k: must be between 1 and 4, got number 8"
    );
    assert_eq!(
        validate("knowledge_search", json!({ "query": "q", "top_k": 0 }))
            .unwrap_err()
            .kind(),
        "out_of_range"
    );
    assert_eq!(
        validate("knowledge_search", json!({ "query": "" }))
            .unwrap_err()
            .kind(),
        "out_of_range"
    );
    assert!(validate("knowledge_search", json!({ "query": "é".repeat(500) })).is_ok());
    assert_eq!(
        validate("knowledge_search", json!({ "query": "q".repeat(501) }))
            .unwrap_err()
            .field(),
        Some("query")
    );

    let long = "1+".repeat(120) + "1"; // 241 characters
    let error = validate("calculator", json!({ "expression": long })).unwrap_err();
    assert_eq!(error.field(), Some("expression"));
    assert!(
        error.to_string().starts_with(
            "calculator.expression: length must be 1..=240 characters, got string of 241 chars"
        ),
        "{error}"
    );
    assert!(validate("calculator", json!({ "expression": &long[..240] })).is_ok());

    let error = validate(
        "plot",
        json!({ "labels": ["A"], "values": [2e9], "title": "T" }),
    )
    .unwrap_err();
    assert_eq!(error.field(), Some("values[0]"));
}

#[test]
fn a_registry_with_an_unenforced_keyword_does_not_load() {
    let mut json: Value = serde_json::from_str(REGISTRY_JSON).unwrap();
    json["tools"][1]["arguments"]["properties"]["expression"]["pattern"] = json!("^[0-9]+$");
    let error = ToolRegistry::from_json_str(&json.to_string()).unwrap_err();
    assert!(
        error.to_string().contains("unsupported keyword `pattern`"),
        "{error}"
    );

    let mut json: Value = serde_json::from_str(REGISTRY_JSON).unwrap();
    json["tools"][0]["arguments"]["additionalProperties"] = json!(true);
    assert!(
        ToolRegistry::from_json_str(&json.to_string())
            .unwrap_err()
            .to_string()
            .contains("additionalProperties")
    );

    let mut json: Value = serde_json::from_str(REGISTRY_JSON).unwrap();
    json["tools"][0]["arguments"]["properties"]["top_k"]["default"] = json!(9);
    assert!(
        ToolRegistry::from_json_str(&json.to_string())
            .unwrap_err()
            .to_string()
            .contains("default of `top_k`")
    );

    let mut json: Value = serde_json::from_str(REGISTRY_JSON).unwrap();
    json["tools"][2]["x-same-length"] = json!(["labels", "title"]);
    assert!(ToolRegistry::from_json_str(&json.to_string()).is_err());
}

/// The hand-written checker and an independent JSON Schema implementation must
/// agree on every sample: the file means the same thing to the validator here,
/// the grammar (llama crate) and any client reading /agent/schema.
#[test]
fn the_checker_agrees_with_the_jsonschema_crate() {
    let registry = ToolRegistry::builtin();
    let samples: &[(&str, Value)] = &[
        ("knowledge_search", json!({ "query": "release rule" })),
        ("knowledge_search", json!({ "query": "q", "top_k": 1 })),
        ("knowledge_search", json!({ "query": "q", "top_k": 4 })),
        ("knowledge_search", json!({ "query": "q", "top_k": 5 })),
        ("knowledge_search", json!({ "query": "q", "top_k": 0 })),
        ("knowledge_search", json!({ "query": "q", "top_k": 2.5 })),
        ("knowledge_search", json!({ "query": "q", "top_k": "3" })),
        ("knowledge_search", json!({ "query": "" })),
        ("knowledge_search", json!({ "query": "x".repeat(500) })),
        ("knowledge_search", json!({ "query": "x".repeat(501) })),
        (
            "knowledge_search",
            json!({ "query": "q", "path": "/etc/passwd" }),
        ),
        ("knowledge_search", json!({})),
        (
            "calculator",
            json!({ "expression": "(72 + 78 + 81 + 85) / 4" }),
        ),
        ("calculator", json!({ "expression": "1".repeat(240) })),
        ("calculator", json!({ "expression": "1".repeat(241) })),
        ("calculator", json!({ "expression": 79 })),
        ("calculator", json!({ "formula": "1+1" })),
        (
            "plot",
            json!({ "labels": ["A"], "values": [1], "title": "T" }),
        ),
        (
            "plot",
            json!({ "labels": ["A", "B"], "values": [1, 2.5], "title": "T", "average": 1.75, "y_label": "%" }),
        ),
        ("plot", json!({ "labels": [], "values": [], "title": "T" })),
        (
            "plot",
            json!({ "labels": ["A"], "values": [null], "title": "T" }),
        ),
        (
            "plot",
            json!({ "labels": ["A"], "values": ["NaN"], "title": "T" }),
        ),
        (
            "plot",
            json!({ "labels": [""], "values": [1], "title": "T" }),
        ),
        (
            "plot",
            json!({ "labels": ["A"], "values": [1], "title": "" }),
        ),
        (
            "plot",
            json!({ "labels": ["A"], "values": [1], "title": "T", "kind": "bar" }),
        ),
        (
            "plot",
            json!({ "labels": vec!["A"; 21], "values": vec![1; 21], "title": "T" }),
        ),
        (
            "plot",
            json!({ "labels": vec!["A"; 20], "values": vec![1; 20], "title": "T" }),
        ),
        (
            "plot",
            json!({ "labels": ["A"], "values": [1], "title": "T", "average": "79" }),
        ),
    ];
    for (tool, args) in samples {
        let schema = &registry.spec(tool).unwrap().arguments_schema;
        assert!(
            jsonschema::meta::is_valid(schema),
            "{tool}: not a valid JSON Schema"
        );
        let reference = jsonschema::validator_for(schema).unwrap().is_valid(args);
        let ours = registry.validate_arguments(tool, args.as_object().unwrap());
        assert_eq!(ours.is_ok(), reference, "{tool} {args}: ours = {ours:?}");
    }
    // The one rule JSON Schema cannot state (equal array lengths) is ours alone.
    let mismatched = json!({ "labels": ["A", "B"], "values": [1], "title": "T" });
    assert!(
        jsonschema::validator_for(&registry.spec("plot").unwrap().arguments_schema)
            .unwrap()
            .is_valid(&mismatched)
    );
    assert_eq!(
        registry
            .validate_arguments("plot", mismatched.as_object().unwrap())
            .unwrap_err()
            .kind(),
        "length_mismatch"
    );
}
