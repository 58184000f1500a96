//! Generation schemas: the JSON Schemas that constrain decoding, derived from schemas/decision.schema.json
//! and the tool registry (never restated by hand), plus the guided-mode JSON prefixes.
//!
//! A generation schema is a strict subset of the decision contract, so everything it admits also passes the
//! runtime's validation. It is tighter in three ways, each for speed or for a small model's sake: string and
//! array lengths are capped, fields are in a fixed order, and optional arguments *without* a registry
//! default (e.g. plot's `average`) are required while those *with* a default (e.g. `top_k`) are left to the
//! runtime. Conversion to GBNF happens in `engine` (the llama.cpp interface).

use serde_json::{Map, Value, json};

use runtime::policy::ToolCard;

/// Caps applied on top of the registry's limits (tokens are the budget that matters on 2 cores).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Caps {
    pub string_chars: u64,
    pub answer_chars: u64,
    pub array_items: u64,
    pub evidence_ids: u64,
}

impl Default for Caps {
    fn default() -> Self {
        Self { string_chars: 120, answer_chars: 480, array_items: 12, evidence_ids: 8 }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GrammarError {
    #[error("unknown tool {0:?} in a guided gap (not in the tool cards)")]
    UnknownTool(String),
    #[error("the decision schema has no {0:?} branch")]
    MissingBranch(&'static str),
}

/// Tighten one argument schema from the registry (recursively) for generation.
pub fn generation_arguments_schema(args: &Value, caps: &Caps) -> Value {
    let mut out = Map::new();
    let props = args.get("properties").and_then(Value::as_object);
    let required: Vec<&str> =
        args.get("required").and_then(Value::as_array).map(|r| r.iter().filter_map(Value::as_str).collect()).unwrap_or_default();
    let mut keep = Map::new();
    let mut req = Vec::new();
    if let Some(props) = props {
        // Required fields first (in registry order), then default-less optional ones, which we require too.
        for (name, schema) in props.iter().filter(|(n, _)| required.contains(&n.as_str())) {
            keep.insert(name.clone(), tighten(schema, caps));
            req.push(Value::String(name.clone()));
        }
        for (name, schema) in props.iter().filter(|(n, s)| !required.contains(&n.as_str()) && s.get("default").is_none()) {
            keep.insert(name.clone(), tighten(schema, caps));
            req.push(Value::String(name.clone()));
        }
    }
    out.insert("type".into(), json!("object"));
    out.insert("properties".into(), Value::Object(keep));
    out.insert("required".into(), Value::Array(req));
    out.insert("additionalProperties".into(), json!(false));
    Value::Object(out)
}

fn tighten(schema: &Value, caps: &Caps) -> Value {
    let mut s = Map::new();
    let ty = schema.get("type").and_then(Value::as_str).unwrap_or("");
    for key in ["type", "enum", "const"] {
        if let Some(v) = schema.get(key) {
            s.insert(key.into(), v.clone());
        }
    }
    match ty {
        "string" => {
            let max = schema.get("maxLength").and_then(Value::as_u64).unwrap_or(caps.string_chars).min(caps.string_chars);
            let min = schema.get("minLength").and_then(Value::as_u64).unwrap_or(0).min(max);
            s.insert("minLength".into(), json!(min));
            s.insert("maxLength".into(), json!(max));
        }
        "integer" => {
            for key in ["minimum", "maximum"] {
                if let Some(v) = schema.get(key) {
                    s.insert(key.into(), v.clone());
                }
            }
        }
        "array" => {
            let max = schema.get("maxItems").and_then(Value::as_u64).unwrap_or(caps.array_items).min(caps.array_items);
            let min = schema.get("minItems").and_then(Value::as_u64).unwrap_or(0).min(max);
            s.insert("minItems".into(), json!(min));
            s.insert("maxItems".into(), json!(max));
            if let Some(items) = schema.get("items") {
                s.insert("items".into(), tighten(items, caps));
            }
        }
        "object" => return generation_arguments_schema(schema, caps),
        // numbers: the grammar cannot bound a float's range; the registry checks it after parsing.
        _ => {}
    }
    Value::Object(s)
}

fn action_schema(card: &ToolCard, caps: &Caps) -> Value {
    json!({
        "type": "object",
        "properties": {
            "type": {"const": "action"},
            "tool": {"const": card.name},
            "arguments": generation_arguments_schema(&card.arguments_schema, caps),
        },
        "required": ["type", "tool", "arguments"],
        "additionalProperties": false,
    })
}

/// Final branch with `evidence_ids` before `answer`, so guided mode can prefill the ids and stop the
/// prefix right where the answer text begins.
fn final_schema(decision_schema: &Value, caps: &Caps) -> Result<Value, GrammarError> {
    let branch = branch(decision_schema, "final").ok_or(GrammarError::MissingBranch("final"))?;
    let props = &branch["properties"];
    let answer_max = props["answer"]["maxLength"].as_u64().unwrap_or(caps.answer_chars).min(caps.answer_chars);
    let ids_max = props["evidence_ids"]["maxItems"].as_u64().unwrap_or(caps.evidence_ids).min(caps.evidence_ids);
    let id_max = props["evidence_ids"]["items"]["maxLength"].as_u64().unwrap_or(64).min(64);
    Ok(json!({
        "type": "object",
        "properties": {
            "type": {"const": "final"},
            "evidence_ids": {"type": "array", "minItems": 1, "maxItems": ids_max,
                              "items": {"type": "string", "minLength": 1, "maxLength": id_max}},
            "answer": {"type": "string", "minLength": 1, "maxLength": answer_max},
        },
        "required": ["type", "evidence_ids", "answer"],
        "additionalProperties": false,
    }))
}

fn branch<'a>(decision_schema: &'a Value, title: &str) -> Option<&'a Value> {
    decision_schema.get("oneOf")?.as_array()?.iter().find(|b| b.get("title").and_then(Value::as_str) == Some(title))
}

/// Free mode: any tool in the registry's decision enum (with its own arguments) or a final answer.
pub fn free_schema(decision_schema: &Value, tools: &[ToolCard], caps: &Caps) -> Result<Value, GrammarError> {
    let action = branch(decision_schema, "action").ok_or(GrammarError::MissingBranch("action"))?;
    let allowed: Vec<&str> = action["properties"]["tool"]["enum"]
        .as_array()
        .map(|e| e.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut alternatives: Vec<Value> =
        tools.iter().filter(|c| allowed.contains(&c.name.as_str())).map(|c| action_schema(c, caps)).collect();
    alternatives.push(final_schema(decision_schema, caps)?);
    Ok(json!({ "oneOf": alternatives }))
}

/// Guided mode, tool gap: one action for exactly `tool`.
pub fn guided_tool_schema(tools: &[ToolCard], tool: &str, caps: &Caps) -> Result<Value, GrammarError> {
    let card = tools.iter().find(|c| c.name == tool).ok_or_else(|| GrammarError::UnknownTool(tool.into()))?;
    Ok(action_schema(card, caps))
}

/// Guided mode, final gap.
pub fn guided_final_schema(decision_schema: &Value, caps: &Caps) -> Result<Value, GrammarError> {
    final_schema(decision_schema, caps)
}

/// The JSON the runtime writes for the model in guided mode: through the tool name and the first argument's
/// key (and its opening quote or bracket), so the model fills only values.
pub fn guided_tool_prefix(tools: &[ToolCard], tool: &str, caps: &Caps) -> Result<String, GrammarError> {
    let card = tools.iter().find(|c| c.name == tool).ok_or_else(|| GrammarError::UnknownTool(tool.into()))?;
    let args = generation_arguments_schema(&card.arguments_schema, caps);
    let mut prefix = format!("{{\"type\":\"action\",\"tool\":{},\"arguments\":{{", json!(tool));
    if let Some((name, schema)) = args["properties"].as_object().and_then(|p| p.iter().next()) {
        prefix.push_str(&format!("{}:", json!(name)));
        match schema.get("type").and_then(Value::as_str) {
            Some("string") => prefix.push('"'),
            Some("array") => prefix.push('['),
            _ => {}
        }
    }
    Ok(prefix)
}

/// Guided mode, final gap: everything up to the answer text (the runtime knows which evidence to cite).
pub fn guided_final_prefix(evidence_ids: &[String]) -> String {
    format!("{{\"type\":\"final\",\"evidence_ids\":{},\"answer\":\"", json!(evidence_ids))
}

/// Make a GBNF grammar from llama.cpp's converter compact: no optional whitespace between JSON tokens, no
/// escape sequences inside strings, at most four decimals in numbers. The converter allows up to ~20 blank characters at every separator
/// and `\\n`-style escapes in every string; a small model wanders into both (each a token decoded for
/// nothing, and an escaped newline is how it drifts into a second paragraph). No decision value needs them.
pub fn compact_gbnf(gbnf: &str) -> String {
    gbnf.lines()
        .map(|line| {
            let rule = line.trim_start();
            if rule.starts_with("space ::=") {
                "space ::= \"\"".to_string()
            } else if rule.starts_with("char ::=") {
                r#"char ::= [^"\\\x7F\x00-\x1F]"#.to_string()
            } else if rule.starts_with("decimal-part ::=") {
                // Values here are percentages, counts and averages; 16 decimals only invite 79.000000000000005.
                "decimal-part ::= [0-9]{1,4}".to_string()
            } else {
                line.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}
