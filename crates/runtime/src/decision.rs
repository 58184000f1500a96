//! The decision contract: parse one model output into an action or a final answer, exactly.
//!
//! The accepted shapes come from `schemas/decision.schema.json` (read here, not restated in code).
//! This module never validates tool *arguments* (that is the registry's job, after the decision is
//! accepted) and never keeps the raw text: callers hash it for the trace and drop it.

use std::sync::OnceLock;

use forge_language::template;
use serde::Deserialize;
use serde_json::{Map, Value};
use structured_tool_execution::{ContractError, ToolContract};

/// The decision schema, embedded so the binary and its schema can never drift apart.
pub const DECISION_SCHEMA_TEXT: &str = include_str!("../../../schemas/decision.schema.json");

/// The decision schema as JSON (for repair notes, `/agent/schema` and grammars).
pub fn decision_schema() -> &'static Value {
    static SCHEMA: OnceLock<Value> = OnceLock::new();
    SCHEMA.get_or_init(|| {
        serde_json::from_str(DECISION_SCHEMA_TEXT)
            .expect("schemas/decision.schema.json is valid JSON")
    })
}

/// A validated decision. Serializes back to exactly the contract's shape.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    Action(ActionDecision),
    Final(FinalDecision),
}

#[derive(Debug, Clone, PartialEq)]
pub struct ActionDecision {
    pub tool: String,
    /// Still unvalidated against the tool's schema.
    pub arguments: Map<String, Value>,
}

/// The `final` branch: the claims gate's own input type, defined beside the gate (a lower crate).
pub use forge_evidence::claims::FinalDecision;

impl Decision {
    /// The decision in contract form; safe for the trace (every field was checked).
    pub fn to_json(&self) -> Value {
        match self {
            Decision::Action(a) => serde_json::json!({
                "type": "action", "tool": a.tool, "arguments": Value::Object(a.arguments.clone())
            }),
            Decision::Final(f) if f.slots.is_empty() => serde_json::json!({
                "type": "final", "answer": f.answer, "evidence_ids": f.evidence_ids
            }),
            // Given slot by slot: the slots as the policy wrote them, and the answer the runtime wrote from them.
            Decision::Final(f) => serde_json::json!({
                "type": "final", "slots": slots_object(&f.slots, f.rule_check), "answer": f.answer,
                "evidence_ids": f.evidence_ids
            }),
        }
    }
}

/// Why a model output is not a decision. Each variant has a stable [`DecisionError::code`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecisionError {
    #[error("the output is empty")]
    Empty,
    #[error("the output is not JSON: {0}")]
    NotJson(String),
    #[error("text follows the JSON object; output exactly one JSON object and nothing else")]
    TrailingText,
    #[error("the decision must be a JSON object, got {0}")]
    NotObject(&'static str),
    #[error("the decision has no \"type\" field (expected \"action\" or \"final\")")]
    MissingType,
    #[error("unknown decision type {0:?} (expected \"action\" or \"final\")")]
    UnknownType(String),
    #[error("{branch} decision is missing field(s): {}", fields.join(", "))]
    MissingField { branch: String, fields: Vec<String> },
    #[error("{branch} decision has unexpected field(s): {} (allowed: {})", fields.join(", "), allowed.join(", "))]
    UnexpectedField {
        branch: String,
        fields: Vec<String>,
        allowed: Vec<String>,
    },
    #[error("field {field:?} must be {expected}")]
    WrongType { field: String, expected: String },
    #[error("field {field:?} is out of range: {message}")]
    OutOfRange { field: String, message: String },
    #[error("unknown tool {tool:?} (known tools: {})", known.join(", "))]
    UnknownTool { tool: String, known: Vec<String> },
}

impl DecisionError {
    /// The decision contract's fields this output left out (`missing_field`, and `type` when it has none).
    pub fn missing_fields(&self) -> Vec<String> {
        match self {
            Self::MissingField { fields, .. } => fields.clone(),
            Self::MissingType => vec!["type".to_owned()],
            _ => Vec::new(),
        }
    }

    /// How many fields the output added beyond the contract (their names are the model's text).
    pub fn unexpected_field_count(&self) -> usize {
        match self {
            Self::UnexpectedField { fields, .. } => fields.len(),
            _ => 0,
        }
    }

    /// The fields the error names (missing, unexpected or mistyped ones; the unknown tool's name); empty for
    /// errors about the text as a whole.
    pub fn fields(&self) -> Vec<String> {
        match self {
            Self::MissingField { fields, .. } | Self::UnexpectedField { fields, .. } => {
                fields.clone()
            }
            Self::WrongType { field, .. } | Self::OutOfRange { field, .. } => vec![field.clone()],
            Self::UnknownTool { .. } => vec!["tool".to_owned()],
            Self::MissingType => vec!["type".to_owned()],
            _ => Vec::new(),
        }
    }

    /// A stable snake_case code for the trace, metrics and HTTP errors.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Empty => "empty_output",
            Self::NotJson(_) => "invalid_json",
            Self::TrailingText => "trailing_text",
            Self::NotObject(_) => "not_object",
            Self::MissingType => "missing_type",
            Self::UnknownType(_) => "unknown_type",
            Self::MissingField { .. } => "missing_field",
            Self::UnexpectedField { .. } => "unexpected_field",
            Self::WrongType { .. } => "wrong_field_type",
            Self::OutOfRange { .. } => "field_out_of_range",
            Self::UnknownTool { .. } => "unknown_tool",
        }
    }

    /// Every code this module can produce (documentation and tests).
    pub const CODES: [&'static str; 11] = [
        "empty_output",
        "invalid_json",
        "trailing_text",
        "not_object",
        "missing_type",
        "unknown_type",
        "missing_field",
        "unexpected_field",
        "wrong_field_type",
        "field_out_of_range",
        "unknown_tool",
    ];
}

/// One branch of the schema's `oneOf`, reduced to what the checker needs.
#[derive(Debug)]
struct Branch {
    type_name: String,
    contract: ToolContract,
    properties: Map<String, Value>,
    /// The schema's `oneOf` of required lists: exactly one of these fields must be present.
    exactly_one_of: Vec<String>,
}

fn branches() -> &'static [Branch] {
    static BRANCHES: OnceLock<Vec<Branch>> = OnceLock::new();
    BRANCHES.get_or_init(|| {
        let schema = decision_schema();
        let list = schema["oneOf"]
            .as_array()
            .expect("decision schema has oneOf");
        list.iter()
            .map(|branch| {
                let properties = branch["properties"]
                    .as_object()
                    .expect("branch properties")
                    .clone();
                let type_name = properties["type"]["const"]
                    .as_str()
                    .expect("branch type const")
                    .to_owned();
                let required: Vec<&str> = branch["required"]
                    .as_array()
                    .expect("branch required")
                    .iter()
                    .filter_map(Value::as_str)
                    .collect();
                let optional: Vec<&str> = properties
                    .keys()
                    .map(String::as_str)
                    .filter(|k| !required.contains(k))
                    .collect();
                let exactly_one_of = branch["oneOf"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .flat_map(|alternative| {
                        alternative["required"].as_array().into_iter().flatten()
                    })
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect();
                Branch {
                    contract: ToolContract::new(&type_name, &required, &optional),
                    type_name,
                    properties,
                    exactly_one_of,
                }
            })
            .collect()
    })
}

/// The decision types the schema allows, in schema order.
pub fn decision_types() -> Vec<&'static str> {
    branches().iter().map(|b| b.type_name.as_str()).collect()
}

/// Parses one model output. Leading/trailing whitespace is allowed; anything else around the
/// object is not (a model that adds prose must be repaired, not guessed at).
///
/// `tools` is the registry's tool list; the schema's enum must agree with it (tested), and both
/// are checked so a drift cannot admit a tool the runtime cannot run. `answer_template` is the task's
/// (when it has one): a final given as `slots` is written into it here, so every accepted final has its answer.
pub fn parse_decision(
    text: &str,
    tools: &[&str],
    answer_template: Option<&str>,
) -> Result<Decision, DecisionError> {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err(DecisionError::Empty);
    }
    let mut deserializer = serde_json::Deserializer::from_str(trimmed);
    let value =
        Value::deserialize(&mut deserializer).map_err(|e| DecisionError::NotJson(e.to_string()))?;
    if deserializer.end().is_err() {
        return Err(DecisionError::TrailingText);
    }
    let object = match &value {
        Value::Object(object) => object,
        other => return Err(DecisionError::NotObject(json_type_name(other))),
    };
    let type_value = object.get("type").ok_or(DecisionError::MissingType)?;
    let type_name = type_value
        .as_str()
        .ok_or_else(|| DecisionError::WrongType {
            field: "type".into(),
            expected: "a string".into(),
        })?;
    let branch = branches()
        .iter()
        .find(|b| b.type_name == type_name)
        .ok_or_else(|| DecisionError::UnknownType(clip(type_name, 40)))?;

    // Field names first, with stage 03's contract: missing before unexpected, both sorted.
    branch
        .contract
        .check(object.keys().map(String::as_str))
        .map_err(|error| match error {
            ContractError::Missing { tool, names } => DecisionError::MissingField {
                branch: tool,
                fields: names,
            },
            ContractError::Unexpected { tool, names } => DecisionError::UnexpectedField {
                branch: tool,
                fields: names.into_iter().map(|n| clip(&n, 40)).collect(),
                allowed: branch.properties.keys().cloned().collect(),
            },
        })?;
    let given: Vec<&String> = branch
        .exactly_one_of
        .iter()
        .filter(|f| object.contains_key(f.as_str()))
        .collect();
    match given.as_slice() {
        [_] => {}
        [] if branch.exactly_one_of.is_empty() => {}
        [] => {
            return Err(DecisionError::MissingField {
                branch: branch.type_name.clone(),
                fields: vec![branch.exactly_one_of.join(" or ")],
            });
        }
        [first, ..] => {
            return Err(DecisionError::OutOfRange {
                field: (*first).clone(),
                message: format!("give exactly one of {}", branch.exactly_one_of.join(", ")),
            });
        }
    }
    for (field, rule) in &branch.properties {
        if let Some(value) = object.get(field) {
            check_value(field, value, rule)?;
        }
    }
    match branch.type_name.as_str() {
        "action" => {
            let tool = object["tool"].as_str().unwrap_or_default().to_owned();
            if !tools.contains(&tool.as_str()) {
                return Err(DecisionError::UnknownTool {
                    tool: clip(&tool, 64),
                    known: tools.iter().map(|t| (*t).to_owned()).collect(),
                });
            }
            let arguments = object["arguments"].as_object().cloned().unwrap_or_default();
            Ok(Decision::Action(ActionDecision { tool, arguments }))
        }
        "final" => {
            let (slots, rule_check, answer) = match object.get("slots").and_then(Value::as_object) {
                Some(slots) => written_slots(slots, answer_template)?,
                None => (
                    Vec::new(),
                    None,
                    object["answer"].as_str().unwrap_or_default().to_owned(),
                ),
            };
            Ok(Decision::Final(FinalDecision {
                answer,
                slots,
                rule_check,
                evidence_ids: object["evidence_ids"]
                    .as_array()
                    .map(|ids| {
                        ids.iter()
                            .filter_map(Value::as_str)
                            .map(str::to_owned)
                            .collect()
                    })
                    .unwrap_or_default(),
            }))
        }
        other => Err(DecisionError::UnknownType(other.to_owned())),
    }
}

/// A final's `slots` checked against the task's answer template: exactly the template's slot names (in any
/// order), each a string, a choice one of its options, and — under a template with a choice — optionally the
/// rule check's stated outcome ("true" or "false"). Returned in template order, with that outcome and the
/// answer the template spells with them (its fixed text, each value where its part stands).
fn written_slots(
    slots: &Map<String, Value>,
    answer_template: Option<&str>,
) -> Result<WrittenSlots, DecisionError> {
    let parts = template::parse(answer_template.unwrap_or_default());
    let names = template::slot_names(&parts);
    let rule_check = if template::states_rule_check(&parts) {
        stated_rule_check(slots.get(template::RULE_CHECK_KEY))?
    } else {
        None
    };
    let is_rule_check = |key: &str| rule_check.is_some() && key == template::RULE_CHECK_KEY;
    let out_of_range = |message: String| DecisionError::OutOfRange {
        field: "slots".into(),
        message,
    };
    if names.is_empty() {
        return Err(out_of_range(
            "this task's answer has no template with slots: write it as answer".into(),
        ));
    }
    let missing: Vec<&String> = names.iter().filter(|n| !slots.contains_key(*n)).collect();
    let unknown: Vec<String> = slots
        .keys()
        .filter(|k| !names.contains(k) && !is_rule_check(k))
        .map(|k| clip(k, 40))
        .collect();
    if !missing.is_empty() || !unknown.is_empty() {
        return Err(out_of_range(format!(
            "the slots must be exactly the template's ({}); missing: {}; not in the template: {}",
            names.join(", "),
            list_or_none(missing.iter().map(|n| n.as_str())),
            list_or_none(unknown.iter().map(String::as_str))
        )));
    }
    let choices = parts.iter().filter_map(|p| match p {
        template::Part::Text(_) => None,
        template::Part::Slot(_) => Some(None),
        template::Part::Choice(options) => Some(Some(options)),
    });
    let written: Vec<(String, String)> = names
        .iter()
        .zip(choices)
        .map(|(name, options)| {
            let value = slots[name]
                .as_str()
                .ok_or_else(|| DecisionError::WrongType {
                    field: format!("slots.{name}"),
                    expected: "a string".into(),
                })?;
            if let Some(options) = options
                && !options.iter().any(|o| o == value)
            {
                return Err(out_of_range(format!(
                    "<{name}> takes one of its options: {}",
                    options.join(", ")
                )));
            }
            Ok((name.clone(), value.to_owned()))
        })
        .collect::<Result<_, _>>()?;
    let values: Vec<&str> = written.iter().map(|(_, v)| v.as_str()).collect();
    let answer = template::fill(&parts, &values);
    Ok((written, rule_check, answer))
}

/// A final's slots in template order, the rule check's stated outcome, and the answer written from them.
type WrittenSlots = (Vec<(String, String)>, Option<bool>, String);

/// The rule check's outcome as a final states it in its slots: absent, or "true" or "false".
fn stated_rule_check(value: Option<&Value>) -> Result<Option<bool>, DecisionError> {
    match value {
        None => Ok(None),
        Some(Value::String(text)) if text == "true" => Ok(Some(true)),
        Some(Value::String(text)) if text == "false" => Ok(Some(false)),
        Some(_) => Err(DecisionError::WrongType {
            field: format!("slots.{}", template::RULE_CHECK_KEY),
            expected: "\"true\" or \"false\"".into(),
        }),
    }
}

/// `slots` as the decision's JSON object, with the rule check's stated outcome when there is one.
fn slots_object(slots: &[(String, String)], rule_check: Option<bool>) -> Value {
    let stated = rule_check.map(|holds| (template::RULE_CHECK_KEY.to_owned(), holds.to_string()));
    Value::Object(
        slots
            .iter()
            .cloned()
            .chain(stated)
            .map(|(k, v)| (k, Value::String(v)))
            .collect(),
    )
}

fn list_or_none<'a>(items: impl Iterator<Item = &'a str>) -> String {
    let items: Vec<&str> = items.collect();
    if items.is_empty() {
        "none".into()
    } else {
        items.join(", ")
    }
}

/// Checks one value against the subset of JSON Schema the decision schema uses.
fn check_value(field: &str, value: &Value, rule: &Value) -> Result<(), DecisionError> {
    if let Some(constant) = rule.get("const")
        && value != constant
    {
        return Err(DecisionError::OutOfRange {
            field: field.into(),
            message: format!("must be {constant}"),
        });
    }
    if let Some(expected) = rule.get("type").and_then(Value::as_str) {
        let ok = match expected {
            "string" => value.is_string(),
            "object" => value.is_object(),
            "array" => value.is_array(),
            "integer" => value.is_i64() || value.is_u64(),
            "number" => value.is_number(),
            "boolean" => value.is_boolean(),
            _ => true,
        };
        if !ok {
            return Err(DecisionError::WrongType {
                field: field.into(),
                expected: format!("of type {expected}"),
            });
        }
    }
    if let Some(allowed) = rule.get("enum").and_then(Value::as_array)
        && !allowed.contains(value)
    {
        if field == "tool" {
            let known = allowed
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect();
            return Err(DecisionError::UnknownTool {
                tool: clip(value.as_str().unwrap_or_default(), 64),
                known,
            });
        }
        return Err(DecisionError::OutOfRange {
            field: field.into(),
            message: "not an allowed value".into(),
        });
    }
    if let Some(text) = value.as_str() {
        within(
            field,
            text.chars().count() as u64,
            rule,
            ("minLength", "maxLength"),
            "characters",
        )?;
    }
    if let Some(members) = value.as_object() {
        within(
            field,
            members.len() as u64,
            rule,
            ("minProperties", "maxProperties"),
            "entries",
        )?;
        // An object of free names (the final's slots): each value follows the one rule.
        if let Some(member_rule) = rule.get("additionalProperties").filter(|r| r.is_object()) {
            for (name, member) in members {
                check_value(&format!("{field}.{}", clip(name, 40)), member, member_rule)?;
            }
        }
    }
    if let Some(items) = value.as_array() {
        within(
            field,
            items.len() as u64,
            rule,
            ("minItems", "maxItems"),
            "items",
        )?;
        if let Some(item_rule) = rule.get("items") {
            for (index, item) in items.iter().enumerate() {
                check_value(&format!("{field}[{index}]"), item, item_rule)?;
            }
        }
    }
    Ok(())
}

/// A length (characters, entries, items) against the rule's lower and upper bound keywords.
fn within(
    field: &str,
    len: u64,
    rule: &Value,
    (min_key, max_key): (&str, &str),
    noun: &str,
) -> Result<(), DecisionError> {
    let out_of_range = |message: String| DecisionError::OutOfRange {
        field: field.into(),
        message,
    };
    if let Some(min) = rule.get(min_key).and_then(Value::as_u64)
        && len < min
    {
        return Err(out_of_range(format!("at least {min} {noun}, got {len}")));
    }
    if let Some(max) = rule.get(max_key).and_then(Value::as_u64)
        && len > max
    {
        return Err(out_of_range(format!("at most {max} {noun}, got {len}")));
    }
    Ok(())
}

/// The JSON type of `value` with its article, for error messages ("a string", "null").
pub fn json_type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Shortens model-supplied text before it goes into an error message.
fn clip(text: &str, max_chars: usize) -> String {
    if text.chars().count() <= max_chars {
        text.to_owned()
    } else {
        let mut out: String = text.chars().take(max_chars).collect();
        out.push('…');
        out
    }
}
