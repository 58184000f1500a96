//! The tool registry: loads `schemas/tool_registry.json` (compiled in) and
//! validates tool arguments against it before any tool runs.
//!
//! Validation is two-layered: stage 03's [`ToolContract`] checks argument
//! *names* (missing / unexpected), then a small checker driven by the same JSON
//! Schema checks types, lengths and ranges and applies defaults. The checker
//! supports exactly the keywords listed in [`PROPERTY_KEYWORDS`]; a registry
//! using any other keyword fails to load, so the schema can never promise a
//! constraint that nothing enforces. This module does not run tools.

use std::collections::BTreeSet;
use std::fmt;
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use structured_tool_execution::{ContractError, ToolContract};

/// The registry file, compiled in: the single source of truth.
pub const REGISTRY_JSON: &str = include_str!("../../../schemas/tool_registry.json");

/// The JSON type of an observation's `value`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResultKind {
    Number,
    Boolean,
}

impl ResultKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ResultKind::Number => "number",
            ResultKind::Boolean => "boolean",
        }
    }
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ToolCard {
    pub name: String,
    pub description: String,
    /// JSON Schema of the arguments object, straight from the registry.
    pub arguments_schema: serde_json::Value,
    /// Array arguments that must have equal lengths (the registry's `x-same-length`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub same_length: Vec<String>,
    /// Groups of arguments of which a call gives exactly one (the registry's `x-alternatives`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub alternatives: Vec<Vec<String>>,
}

/// Keywords a property schema may use (anything else is a load error).
pub const PROPERTY_KEYWORDS: &[&str] = &[
    "type",
    "description",
    "minLength",
    "maxLength",
    "minimum",
    "maximum",
    "minItems",
    "maxItems",
    "items",
    "default",
    "x-grammar",
];

/// Values of a property's `x-grammar`: what a decoding grammar should let a model write there.
/// `text` = free text whose digits must be grounded numbers; `expression` = a calculator expression
/// over grounded numbers; `label` = a row label seen in the observations; `number` = a grounded number;
/// `computed` = a number a tool computed (a result's top-level `value`), any grounded number before one exists;
/// `column` = a reference to an observed table column. None of them reads the task's words: what a query
/// says is the model's.
pub const GRAMMAR_ROLES: &[&str] = &[
    "text",
    "expression",
    "label",
    "number",
    "computed",
    "column",
];

/// One tool's entry.
#[derive(Debug, Clone)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    pub timeout_ms: u64,
    /// The JSON Schema of the arguments object, as written in the file.
    pub arguments_schema: Value,
    /// Array arguments that must have equal lengths (`x-same-length`).
    pub same_length: Vec<String>,
    /// Groups of arguments of which a call gives exactly one, whole (`x-alternatives`).
    pub alternatives: Vec<Vec<String>>,
    /// JSON types the tool's result `value` can have (`x-result-kinds`); empty for tools without one.
    pub result_kinds: Vec<ResultKind>,
    contract: ToolContract,
    /// Property name → schema, in file order.
    properties: Vec<(String, Value)>,
}

#[derive(Debug, Clone)]
pub struct ToolRegistry {
    json: Value,
    tools: Vec<ToolSpec>,
}

/// The registry file itself is malformed (a programming error caught by tests).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("tool registry: {0}")]
pub struct RegistryError(pub String);

/// Why a tool's arguments were refused. Every variant names the tool, and the
/// field (`values[2]` for an array item) and offending value where there is one.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ArgumentError {
    #[error("unknown tool {tool:?}")]
    UnknownTool { tool: String },
    #[error("{tool}: missing required argument(s): {}", fields.join(", "))]
    Missing { tool: String, fields: Vec<String> },
    #[error("{tool}: unexpected argument(s): {} (allowed: {})", fields.join(", "), allowed.join(", "))]
    Unexpected {
        tool: String,
        fields: Vec<String>,
        allowed: Vec<String>,
    },
    #[error("{tool}.{field}: expected {expected}, got {}", Shown(value))]
    WrongType {
        tool: String,
        field: String,
        expected: String,
        value: Box<Value>,
    },
    #[error("{tool}.{field}: {constraint}, got {}", Shown(value))]
    OutOfRange {
        tool: String,
        field: String,
        constraint: String,
        value: Box<Value>,
    },
    #[error("{tool}: give exactly one of {} (got {})", groups.iter().map(|g| g.join(" and ")).collect::<Vec<_>>().join(", or "), if given.is_empty() { "none".to_owned() } else { given.join(", ") })]
    Alternatives {
        tool: String,
        groups: Vec<Vec<String>>,
        given: Vec<String>,
    },
    #[error("{tool}: {} must have the same length, got {}", fields.join(" and "), lengths.iter().map(usize::to_string).collect::<Vec<_>>().join(" and "))]
    LengthMismatch {
        tool: String,
        fields: Vec<String>,
        lengths: Vec<usize>,
    },
}

impl ArgumentError {
    /// The observation error code for every argument rejection.
    pub const CODE: &'static str = "invalid_arguments";

    /// Stable sub-kind, useful for feedback and tests.
    pub fn kind(&self) -> &'static str {
        match self {
            ArgumentError::UnknownTool { .. } => "unknown_tool",
            ArgumentError::Missing { .. } => "missing",
            ArgumentError::Unexpected { .. } => "unexpected",
            ArgumentError::WrongType { .. } => "wrong_type",
            ArgumentError::OutOfRange { .. } => "out_of_range",
            ArgumentError::LengthMismatch { .. } => "length_mismatch",
            ArgumentError::Alternatives { .. } => "alternatives",
        }
    }

    /// Every field the error names, in the validator's order (`field` is the first of them).
    pub fn fields(&self) -> Vec<String> {
        match self {
            ArgumentError::UnknownTool { .. } => Vec::new(),
            ArgumentError::Missing { fields, .. }
            | ArgumentError::Unexpected { fields, .. }
            | ArgumentError::LengthMismatch { fields, .. } => fields.clone(),
            ArgumentError::WrongType { field, .. } | ArgumentError::OutOfRange { field, .. } => {
                vec![field.clone()]
            }
            ArgumentError::Alternatives { groups, given, .. } => {
                if given.is_empty() {
                    groups.iter().flatten().cloned().collect()
                } else {
                    given.clone()
                }
            }
        }
    }

    /// What the loop tells the model after refusing `tool`'s arguments (no tool ran).
    pub fn feedback(&self, tool: &str) -> String {
        format!(
            "{tool} arguments rejected ({}): {self}. No tool was run; send corrected arguments that follow the tool's schema.",
            Self::CODE
        )
    }

    /// The first offending field (`None` for an unknown tool).
    pub fn field(&self) -> Option<&str> {
        match self {
            ArgumentError::UnknownTool { .. } => None,
            ArgumentError::Missing { fields, .. }
            | ArgumentError::Unexpected { fields, .. }
            | ArgumentError::LengthMismatch { fields, .. } => fields.first().map(String::as_str),
            ArgumentError::WrongType { field, .. } | ArgumentError::OutOfRange { field, .. } => {
                Some(field)
            }
            ArgumentError::Alternatives { groups, given, .. } => given
                .first()
                .or_else(|| groups.first().and_then(|g| g.first()))
                .map(String::as_str),
        }
    }
}

/// Shows a JSON value in a message: its JSON text, clipped so a huge argument
/// cannot flood feedback (the full value stays in the error's field).
struct Shown<'a>(&'a Value);

impl fmt::Display for Shown<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = self.0.to_string();
        let kind = match self.0 {
            Value::Null => "null",
            Value::Bool(_) => "boolean",
            Value::Number(_) => "number",
            Value::String(s) => {
                return write!(
                    f,
                    "string of {} chars {}",
                    s.chars().count(),
                    clip(&text, 60)
                );
            }
            Value::Array(a) => return write!(f, "array of {} items {}", a.len(), clip(&text, 60)),
            Value::Object(_) => "object",
        };
        write!(f, "{kind} {}", clip(&text, 60))
    }
}

fn clip(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_owned()
    } else {
        format!("{}…", text.chars().take(max).collect::<String>())
    }
}

impl ToolRegistry {
    /// The compiled-in registry. Panics only if the shipped file is malformed,
    /// which `registry_loads` style tests catch before release.
    pub fn builtin() -> &'static ToolRegistry {
        static BUILTIN: OnceLock<ToolRegistry> = OnceLock::new();
        BUILTIN.get_or_init(|| {
            ToolRegistry::from_json_str(REGISTRY_JSON)
                .unwrap_or_else(|e| panic!("schemas/tool_registry.json: {e}"))
        })
    }

    pub fn from_json_str(text: &str) -> Result<Self, RegistryError> {
        let json: Value =
            serde_json::from_str(text).map_err(|e| RegistryError(format!("not JSON: {e}")))?;
        let entries = json
            .get("tools")
            .and_then(Value::as_array)
            .ok_or_else(|| RegistryError("missing `tools` array".into()))?;
        let mut tools = Vec::new();
        let mut names = BTreeSet::new();
        for entry in entries {
            let tool = load_tool(entry)?;
            if !names.insert(tool.name.clone()) {
                return Err(RegistryError(format!(
                    "tool {} is declared twice",
                    tool.name
                )));
            }
            tools.push(tool);
        }
        if tools.is_empty() {
            return Err(RegistryError("no tools".into()));
        }
        Ok(Self { json, tools })
    }

    pub fn tool_names(&self) -> Vec<&str> {
        self.tools.iter().map(|t| t.name.as_str()).collect()
    }

    pub fn spec(&self, tool: &str) -> Option<&ToolSpec> {
        self.tools.iter().find(|t| t.name == tool)
    }

    /// The kinds of `value` the tool can return (`x-result-kinds` in the registry).
    pub fn result_kinds(&self, tool: &str) -> &[ResultKind] {
        self.spec(tool).map_or(&[], |t| t.result_kinds.as_slice())
    }

    /// What the model is shown: name, description, argument schema.
    pub fn cards(&self) -> Vec<ToolCard> {
        self.tools
            .iter()
            .map(|t| ToolCard {
                name: t.name.clone(),
                description: t.description.clone(),
                arguments_schema: t.arguments_schema.clone(),
                same_length: t.same_length.clone(),
                alternatives: t.alternatives.clone(),
            })
            .collect()
    }

    /// The tool's timeout per attempt. Unknown tools (which never reach
    /// dispatch) get the smallest declared timeout.
    pub fn timeout_ms(&self, tool: &str) -> u64 {
        self.spec(tool).map(|t| t.timeout_ms).unwrap_or_else(|| {
            self.tools
                .iter()
                .map(|t| t.timeout_ms)
                .min()
                .unwrap_or(1000)
        })
    }

    /// The registry file as JSON (served at /agent/schema, fed to the grammar).
    pub fn as_json(&self) -> &Value {
        &self.json
    }

    /// Checks `args` for `tool` and returns them normalised: properties in schema
    /// order, defaults applied, integer-valued numbers for integer fields.
    pub fn validate_arguments(
        &self,
        tool: &str,
        args: &Map<String, Value>,
    ) -> Result<Map<String, Value>, ArgumentError> {
        let spec = self.spec(tool).ok_or_else(|| ArgumentError::UnknownTool {
            tool: tool.to_owned(),
        })?;
        spec.contract
            .check(args.keys().map(String::as_str))
            .map_err(|e| match e {
                ContractError::Missing { tool, names } => ArgumentError::Missing {
                    tool,
                    fields: names,
                },
                ContractError::Unexpected { tool, names } => ArgumentError::Unexpected {
                    tool,
                    fields: names,
                    allowed: spec.properties.iter().map(|(n, _)| n.clone()).collect(),
                },
            })?;

        // Exactly one group of alternatives, whole: a chart by column reference or by labels and values.
        if !spec.alternatives.is_empty() {
            let present =
                |g: &Vec<String>| g.iter().filter(|f| args.contains_key(f.as_str())).count();
            let whole = spec
                .alternatives
                .iter()
                .filter(|g| present(g) == g.len())
                .count();
            let touched = spec.alternatives.iter().filter(|g| present(g) > 0).count();
            if whole != 1 || touched != 1 {
                return Err(ArgumentError::Alternatives {
                    tool: spec.name.clone(),
                    groups: spec.alternatives.clone(),
                    given: spec
                        .alternatives
                        .iter()
                        .flatten()
                        .filter(|f| args.contains_key(f.as_str()))
                        .cloned()
                        .collect(),
                });
            }
        }
        let mut normalized = Map::new();
        for (name, schema) in &spec.properties {
            match args.get(name) {
                Some(value) => {
                    let value = check_value(&spec.name, name, schema, value)?;
                    normalized.insert(name.clone(), value);
                }
                None => {
                    if let Some(default) = schema.get("default") {
                        normalized.insert(name.clone(), default.clone());
                    }
                }
            }
        }
        if !spec.same_length.is_empty()
            && spec.same_length.iter().all(|f| normalized.contains_key(f))
        {
            let lengths: Vec<usize> = spec
                .same_length
                .iter()
                .map(|f| {
                    normalized
                        .get(f)
                        .and_then(Value::as_array)
                        .map_or(0, Vec::len)
                })
                .collect();
            if lengths.windows(2).any(|w| w[0] != w[1]) {
                return Err(ArgumentError::LengthMismatch {
                    tool: spec.name.clone(),
                    fields: spec.same_length.clone(),
                    lengths,
                });
            }
        }
        Ok(normalized)
    }
}

fn load_tool(entry: &Value) -> Result<ToolSpec, RegistryError> {
    let text = |key: &str| {
        entry
            .get(key)
            .and_then(Value::as_str)
            .filter(|s| !s.trim().is_empty())
            .map(str::to_owned)
            .ok_or_else(|| RegistryError(format!("a tool lacks a non-empty `{key}`")))
    };
    let name = text("name")?;
    let description = text("description")?;
    let err = |msg: String| RegistryError(format!("{name}: {msg}"));
    let timeout_ms = entry
        .get("timeout_ms")
        .and_then(Value::as_u64)
        .filter(|t| *t > 0)
        .ok_or_else(|| err("`timeout_ms` must be a positive integer".into()))?;
    let (schema, properties, required) = arguments_of(&name, entry)?;
    let same_length: Vec<String> = match entry.get("x-same-length") {
        None => Vec::new(),
        Some(v) => v
            .as_array()
            .and_then(|a| {
                a.iter()
                    .map(|v| v.as_str().map(str::to_owned))
                    .collect::<Option<Vec<_>>>()
            })
            .ok_or_else(|| err("`x-same-length` must be an array of names".into()))?,
    };
    for field in &same_length {
        let is_array = properties
            .iter()
            .any(|(n, p)| n == field && p.get("type") == Some(&Value::from("array")));
        if !is_array {
            return Err(err(format!(
                "`x-same-length` names `{field}`, which is not an array property"
            )));
        }
    }
    let alternatives: Vec<Vec<String>> = match entry.get("x-alternatives") {
        None => Vec::new(),
        Some(v) => serde_json::from_value(v.clone()).map_err(|e| {
            err(format!(
                "`x-alternatives` must be a list of lists of names: {e}"
            ))
        })?,
    };
    for field in alternatives.iter().flatten() {
        if !properties.iter().any(|(n, _)| n == field) || required.contains(field) {
            return Err(err(format!(
                "`x-alternatives` names `{field}`, which is not an optional property"
            )));
        }
    }
    let result_kinds: Vec<ResultKind> = match entry.get("x-result-kinds") {
        None => Vec::new(),
        Some(v) => serde_json::from_value(v.clone()).map_err(|e| {
            err(format!(
                "`x-result-kinds` must list \"number\"/\"boolean\": {e}"
            ))
        })?,
    };
    let required_refs: Vec<&str> = required.iter().map(String::as_str).collect();
    let optional: Vec<&str> = properties
        .iter()
        .map(|(n, _)| n.as_str())
        .filter(|n| !required_refs.contains(n))
        .collect();
    let contract = ToolContract::new(&name, &required_refs, &optional);
    Ok(ToolSpec {
        name,
        description,
        timeout_ms,
        arguments_schema: schema.clone(),
        same_length,
        alternatives,
        result_kinds,
        contract,
        properties,
    })
}

/// A tool's `arguments`: the schema, its properties in order, its required names.
type Arguments<'e> = (&'e Value, Vec<(String, Value)>, Vec<String>);

/// A tool's `arguments` schema (an object of known keywords, no additional properties), its properties in
/// order and its required names, each property's schema and default checked.
fn arguments_of<'e>(name: &str, entry: &'e Value) -> Result<Arguments<'e>, RegistryError> {
    let err = |msg: String| RegistryError(format!("{name}: {msg}"));
    let schema = entry
        .get("arguments")
        .ok_or_else(|| err("missing `arguments`".into()))?;
    if schema.get("type").and_then(Value::as_str) != Some("object") {
        return Err(err("`arguments.type` must be \"object\"".into()));
    }
    if schema.get("additionalProperties") != Some(&Value::Bool(false)) {
        return Err(err("`arguments.additionalProperties` must be false".into()));
    }
    for key in schema.as_object().into_iter().flat_map(|o| o.keys()) {
        if ![
            "type",
            "properties",
            "required",
            "additionalProperties",
            "description",
        ]
        .contains(&key.as_str())
        {
            return Err(err(format!("unsupported keyword `arguments.{key}`")));
        }
    }
    let properties: Vec<(String, Value)> = schema
        .get("properties")
        .and_then(Value::as_object)
        .ok_or_else(|| err("missing `arguments.properties`".into()))?
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let required: Vec<String> = match schema.get("required") {
        None => Vec::new(),
        Some(r) => r
            .as_array()
            .and_then(|a| {
                a.iter()
                    .map(|v| v.as_str().map(str::to_owned))
                    .collect::<Option<Vec<_>>>()
            })
            .ok_or_else(|| err("`required` must be an array of names".into()))?,
    };
    for field in &required {
        if !properties.iter().any(|(n, _)| n == field) {
            return Err(err(format!("required `{field}` is not a property")));
        }
    }
    for (field, prop) in &properties {
        check_property_schema(name, field, prop)?;
        if let Some(default) = prop.get("default") {
            if required.contains(field) {
                return Err(err(format!("`{field}` is required and has a default")));
            }
            check_value(name, field, prop, default)
                .map_err(|e| err(format!("default of `{field}` is invalid: {e}")))?;
        }
    }
    Ok((schema, properties, required))
}

fn check_property_schema(tool: &str, path: &str, schema: &Value) -> Result<(), RegistryError> {
    let err = |msg: String| RegistryError(format!("{tool}.{path}: {msg}"));
    let object = schema
        .as_object()
        .ok_or_else(|| err("schema must be an object".into()))?;
    for key in object.keys() {
        if !PROPERTY_KEYWORDS.contains(&key.as_str()) {
            return Err(err(format!(
                "unsupported keyword `{key}` (the validator would ignore it)"
            )));
        }
    }
    let ty = object
        .get("type")
        .and_then(Value::as_str)
        .ok_or_else(|| err("missing `type`".into()))?;
    let allowed: &[&str] = match ty {
        "string" => &["minLength", "maxLength"],
        "integer" | "number" => &["minimum", "maximum"],
        "array" => &["minItems", "maxItems", "items"],
        "boolean" => &[],
        other => return Err(err(format!("unsupported type `{other}`"))),
    };
    if let Some(role) = object.get("x-grammar")
        && !role.as_str().is_some_and(|r| GRAMMAR_ROLES.contains(&r))
    {
        return Err(err(format!(
            "`x-grammar` must be one of {GRAMMAR_ROLES:?}, got {role}"
        )));
    }
    for key in object.keys() {
        if !["type", "description", "default", "x-grammar"].contains(&key.as_str())
            && !allowed.contains(&key.as_str())
        {
            return Err(err(format!(
                "keyword `{key}` does not apply to type `{ty}`"
            )));
        }
    }
    for key in ["minLength", "maxLength", "minItems", "maxItems"] {
        if let Some(v) = object.get(key) {
            v.as_u64()
                .ok_or_else(|| err(format!("`{key}` must be a non-negative integer")))?;
        }
    }
    for key in ["minimum", "maximum"] {
        if let Some(v) = object.get(key) {
            v.as_f64()
                .ok_or_else(|| err(format!("`{key}` must be a number")))?;
        }
    }
    if ty == "array" {
        let items = object
            .get("items")
            .ok_or_else(|| err("arrays need `items`".into()))?;
        check_property_schema(tool, &format!("{path}[]"), items)?;
    }
    Ok(())
}

/// Checks one value against its (already load-checked) property schema and
/// returns it normalised. `field` is the path shown in errors.
fn check_value(
    tool: &str,
    field: &str,
    schema: &Value,
    value: &Value,
) -> Result<Value, ArgumentError> {
    let ty = schema["type"].as_str().unwrap_or_default();
    let wrong_type = |expected: &str| ArgumentError::WrongType {
        tool: tool.to_owned(),
        field: field.to_owned(),
        expected: expected.to_owned(),
        value: Box::new(value.clone()),
    };
    let out_of_range = |constraint: String| ArgumentError::OutOfRange {
        tool: tool.to_owned(),
        field: field.to_owned(),
        constraint,
        value: Box::new(value.clone()),
    };
    let bound = |key: &str| schema.get(key).and_then(Value::as_f64);
    let count = |key: &str| schema.get(key).and_then(Value::as_u64).map(|n| n as usize);
    match ty {
        "string" => {
            let s = value.as_str().ok_or_else(|| wrong_type("a string"))?;
            let chars = s.chars().count();
            let (min, max) = (count("minLength"), count("maxLength"));
            if min.is_some_and(|m| chars < m) || max.is_some_and(|m| chars > m) {
                return Err(out_of_range(format!(
                    "length must be {}",
                    range_text(min, max, "characters")
                )));
            }
            Ok(value.clone())
        }
        "integer" | "number" => {
            let x = value.as_f64().ok_or_else(|| {
                wrong_type(if ty == "integer" {
                    "an integer"
                } else {
                    "a number"
                })
            })?;
            // 3.0 is an integer in JSON Schema; 2.5 is not.
            if ty == "integer"
                && (x.fract() != 0.0 || !(value.is_i64() || value.is_u64() || x.abs() < 9.0e15))
            {
                return Err(wrong_type("an integer"));
            }
            let (min, max) = (bound("minimum"), bound("maximum"));
            if min.is_some_and(|m| x < m) || max.is_some_and(|m| x > m) {
                let constraint = match (min, max) {
                    (Some(lo), Some(hi)) => {
                        format!("must be between {} and {}", fmt_num(lo), fmt_num(hi))
                    }
                    (Some(lo), None) => format!("must be at least {}", fmt_num(lo)),
                    (None, Some(hi)) => format!("must be at most {}", fmt_num(hi)),
                    (None, None) => unreachable!(),
                };
                return Err(out_of_range(constraint));
            }
            Ok(if ty == "integer" {
                Value::from(x as i64)
            } else {
                value.clone()
            })
        }
        "boolean" => value
            .as_bool()
            .map(Value::Bool)
            .ok_or_else(|| wrong_type("a boolean")),
        "array" => {
            let items = value.as_array().ok_or_else(|| wrong_type("an array"))?;
            let (min, max) = (count("minItems"), count("maxItems"));
            if min.is_some_and(|m| items.len() < m) || max.is_some_and(|m| items.len() > m) {
                return Err(out_of_range(format!(
                    "must have {}",
                    range_text(min, max, "items")
                )));
            }
            let item_schema = &schema["items"];
            items
                .iter()
                .enumerate()
                .map(|(i, item)| check_value(tool, &format!("{field}[{i}]"), item_schema, item))
                .collect::<Result<Vec<_>, _>>()
                .map(Value::Array)
        }
        _ => Err(wrong_type(ty)),
    }
}

fn range_text(min: Option<usize>, max: Option<usize>, unit: &str) -> String {
    match (min, max) {
        (Some(lo), Some(hi)) => format!("{lo}..={hi} {unit}"),
        (Some(lo), None) => format!("at least {lo} {unit}"),
        (None, Some(hi)) => format!("at most {hi} {unit}"),
        (None, None) => format!("any number of {unit}"),
    }
}

fn fmt_num(x: f64) -> String {
    crate::number_value(x).to_string()
}
