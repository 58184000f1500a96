//! Decoding grammars for one decision, built per step from the registry's argument schemas (with their
//! `x-grammar` roles), the decision schema's limits, the task's answer template and the run's grounding.
//!
//! Everything a grammar admits also passes the runtime's validation: it is the decision contract made
//! tighter, never the answer. A grammar bounds form and grounding only: numbers a model writes — in
//! calculator expressions, chart values, titles, queries and the final answer — can only be numbers the
//! observations (or the task's own text) established; chart labels and answer slots only observed row
//! labels; columns only observed columns; functions and comparisons every one the calculator has; a verdict
//! choice every option of the template; evidence ids only ids of successful observations. What to search,
//! which column, which aggregate, which comparison and which answer are the model's: no grammar reads the
//! task's words, a step's hint, the runtime's rule reading or its answer plan (the claims gate reads those,
//! apart, as a second opinion — `tests/grammar_independence.rs`). This module builds [`gbnf::Grammar`]s and
//! prefixes; it never runs a model.

use serde_json::{Value, json};

use runtime::policy::{Grounding, ResultKind, Series, ToolCard};

use crate::gbnf::{Grammar, Node};

mod answer;
mod expression;
mod text;
mod value;

pub use answer::AnswerForm;
use answer::{answer_field, answer_field_opening};
use value::action_node;

/// Caps applied on top of the registry's limits (tokens are the budget that matters on 2 cores).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Caps {
    /// Characters of a free-text argument (query, title).
    pub string_chars: u32,
    /// Items of an array argument.
    pub array_items: u32,
    /// Evidence ids of a final answer.
    pub evidence_ids: u32,
    /// Arguments of one aggregate function in an expression.
    pub function_args: u32,
}

impl Default for Caps {
    fn default() -> Self {
        Self {
            string_chars: 80,
            array_items: 60,
            evidence_ids: 8,
            function_args: 24,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GrammarError {
    #[error("unknown tool {0:?} (not in the tool cards)")]
    UnknownTool(String),
    #[error("the decision schema has no {0:?} branch")]
    MissingBranch(&'static str),
    #[error("{tool}.{field}: cannot build a grammar for schema {schema}")]
    Unsupported {
        tool: String,
        field: String,
        schema: String,
    },
    #[error("the final answer needs at least one observation to cite")]
    NothingToCite,
    #[error("grammar is inconsistent: {0}")]
    Inconsistent(String),
    /// Free mode: every choice this tool's arguments allow was already run.
    #[error("{0}: every choice was already run")]
    NothingNew(String),
}

/// What a grammar may draw on for one decision.
#[derive(Debug, Clone, Copy)]
pub struct Inputs<'a> {
    pub tools: &'a [ToolCard],
    pub grounding: &'a Grounding,
    pub answer_template: &'a str,
    /// The task's verdict words: which option of a choice says the rule holds (task data, as the template is).
    pub verdict_phrases: &'a forge_language::answer::VerdictPhrases,
    /// Guided mode: the public decision summary the runtime writes in its prefix (`Gap::summary`: the tool
    /// and the kind of result wanted, or the evidence cited). `None` in free mode, where the model chooses.
    pub decision_summary: Option<&'a str>,
    pub caps: Caps,
    /// How the final answer is written (slot by slot, or the template's sentence).
    pub answer_form: AnswerForm,
    /// Actions already run successfully (`{"tool", "arguments"}`): free mode does not offer a finite choice
    /// that would only repeat one (a rule check already made, an aggregate already computed).
    pub done: &'a [Value],
}

/// What a calculator expression is for: a step's declared result kind (guided), an older task's
/// undeclared step, or free mode's own choice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CalcGoal {
    Number,
    Boolean,
    Undeclared,
    Free,
}

impl CalcGoal {
    fn of(result: Option<ResultKind>) -> Self {
        match result {
            Some(ResultKind::Number) => CalcGoal::Number,
            Some(ResultKind::Boolean) => CalcGoal::Boolean,
            None => CalcGoal::Undeclared,
        }
    }
}

/// The observed columns a decision may draw whole-column values from: every one of at most `max_len`
/// values (which column a step is about is the model's choice, not the grammar's).
fn usable_series<'a>(inputs: &Inputs<'a>, max_len: u32) -> Vec<&'a Series> {
    inputs
        .grounding
        .series
        .iter()
        .filter(|s| s.values.len() as u32 <= max_len)
        .collect()
}

/// Guided mode, tool gap: one action for exactly `tool` (a calculator asked for a `boolean` result must
/// write a comparison; asked for a number it must not).
pub fn guided_tool(
    inputs: &Inputs,
    tool: &str,
    result: Option<ResultKind>,
) -> Result<Grammar, GrammarError> {
    let card = card(inputs, tool)?;
    let mut grammar = Grammar::new(Node::rule("action"));
    let action = action_node(&mut grammar, inputs, card, CalcGoal::of(result))?;
    grammar.define("action", action);
    finish(grammar)
}

/// Guided mode, final gap: the final answer citing exactly `evidence_ids`, worded by the task's template.
pub fn guided_final(inputs: &Inputs, evidence_ids: &[String]) -> Result<Grammar, GrammarError> {
    if evidence_ids.is_empty() {
        return Err(GrammarError::NothingToCite);
    }
    let mut grammar = Grammar::new(Node::rule("final"));
    let ids = Node::lit(serde_json::to_string(evidence_ids).expect("strings serialise"));
    let answer = answer_field(&mut grammar, inputs);
    grammar.define("final", final_shell(inputs, ids, answer));
    finish(grammar)
}

/// Free mode: the model chooses the tool and its arguments. Offered are the actions that can run on what has
/// been observed — a search always, the calculator once an observation holds data, a chart once a column is
/// observed — each with the same grounded arguments as in guided mode (a calculation may be an aggregate of
/// any observed column, a comparison of one with grounded numbers, or the rule check the runtime read), and
/// the final answer only once the gate could accept one: `final_ids` is the evidence the gate wants cited
/// when nothing required is missing (`None` before). Exact repeats are masked by the policy, not here.
pub fn free(
    inputs: &Inputs,
    decision_schema: &Value,
    final_ids: Option<&[String]>,
) -> Result<Grammar, GrammarError> {
    let action = branch(decision_schema, "action").ok_or(GrammarError::MissingBranch("action"))?;
    let allowed: Vec<&str> = action["properties"]["tool"]["enum"]
        .as_array()
        .map(|e| e.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    branch(decision_schema, "final").ok_or(GrammarError::MissingBranch("final"))?;
    let mut grammar = Grammar::new(Node::rule("decision"));
    let mut alternatives = Vec::new();
    for card in inputs
        .tools
        .iter()
        .filter(|c| allowed.contains(&c.name.as_str()))
        .filter(|c| can_run_now(inputs, c))
    {
        let name = format!("action-{}", rule_name(&card.name));
        let body = match action_node(&mut grammar, inputs, card, CalcGoal::Free) {
            Ok(body) => body,
            Err(GrammarError::NothingNew(_)) => continue,
            Err(e) => return Err(e),
        };
        grammar.define(&name, body);
        alternatives.push(Node::rule(name));
    }
    if let Some(ids) = final_ids.filter(|ids| !ids.is_empty()) {
        let ids = Node::lit(serde_json::to_string(ids).expect("strings serialise"));
        let answer = answer_field(&mut grammar, inputs);
        grammar.define("final", final_shell(inputs, ids, answer));
        alternatives.push(Node::rule("final"));
    }
    if alternatives.is_empty() {
        return Err(GrammarError::Inconsistent(
            "free mode offers no decision".into(),
        ));
    }
    grammar.define("decision", Node::Alt(alternatives));
    finish(grammar)
}

/// Whether a tool has what its arguments need in this state, read from its argument roles: an `expression`
/// needs observed data (a calculation over the task's own numbers only proves nothing), a `label` list needs
/// an observed column of labelled values, a `computed` value a calculator result. Tools with none of these
/// roles can always run.
fn can_run_now(inputs: &Inputs, card: &ToolCard) -> bool {
    let observed_data =
        !inputs.grounding.series.is_empty() || !inputs.grounding.evidence_ids.is_empty();
    let labelled_column = inputs
        .grounding
        .series
        .iter()
        .any(|s| s.labels.len() == s.values.len() && !s.labels.is_empty());
    written_properties(inputs, card)
        .iter()
        .filter_map(|(_, schema)| role_of(schema))
        .all(|role| match role {
            "expression" => observed_data,
            "label" | "column" => labelled_column,
            // A chart's line is a value the calculator computed: none yet, no chart yet.
            "computed" => !text::json_numbers(&inputs.grounding.computed_exact).is_empty(),
            _ => true,
        })
}

/// A property's `x-grammar` role (an array's: its items').
fn role_of(schema: &Value) -> Option<&str> {
    schema
        .get("x-grammar")
        .or_else(|| schema.get("items").and_then(|i| i.get("x-grammar")))
        .and_then(Value::as_str)
}

/// The properties a generated action of `card` writes: [`generation_properties`], with one group of its
/// alternatives (`x-alternatives`) kept — the first whose roles the observations can fill (a chart by column
/// reference once a column is observed: the same few tokens for 5 rows or 200), else the last.
pub fn written_properties<'a>(inputs: &Inputs, card: &'a ToolCard) -> Vec<(&'a String, &'a Value)> {
    let properties = generation_properties(&card.arguments_schema);
    if card.alternatives.is_empty() {
        return properties;
    }
    let fillable = |group: &Vec<String>| {
        group.iter().all(|field| {
            let schema = properties
                .iter()
                .find(|(n, _)| *n == field)
                .map(|(_, s)| *s);
            match schema.and_then(role_of) {
                Some("column") => !column_references(inputs).is_empty(),
                _ => true,
            }
        })
    };
    let chosen = card
        .alternatives
        .iter()
        .find(|g| fillable(g))
        .or(card.alternatives.last());
    properties
        .into_iter()
        .filter(|(name, _)| {
            !card.alternatives.iter().flatten().any(|f| f == *name)
                || chosen.is_some_and(|g| g.contains(name))
        })
        .collect()
}

/// Column references a decision may write (`[Wait]`, `[Hotel | Occupancy]` where two tables share a name):
/// every observed column.
fn column_references(inputs: &Inputs) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for series in &inputs.grounding.series {
        let reference = series_reference(inputs, series);
        if !out.contains(&reference) {
            out.push(reference);
        }
    }
    out
}

/// How a calculator expression names `series`: `[Name]`, or `[Rows | Name]` when another observed table has
/// a column of that name.
fn series_reference(inputs: &Inputs, series: &Series) -> String {
    let shared = inputs
        .grounding
        .series
        .iter()
        .filter(|s| s.name == series.name)
        .count()
        > 1;
    if shared && !series.rows.is_empty() {
        format!("[{} | {}]", series.rows, series.name)
    } else {
        format!("[{}]", series.name)
    }
}

/// A JSON Schema of the same decision shape, without grounding — for backends that take only a schema
/// (OpenAI-compatible servers). Guided tool step: the one action; guided final: the final branch; free: any.
pub fn json_schema(
    tools: &[ToolCard],
    decision_schema: &Value,
    mode: crate::prompt::Mode,
    gap: &runtime::policy::Gap,
) -> Result<Value, GrammarError> {
    let action = |card: &ToolCard| {
        let props = generation_properties(&card.arguments_schema);
        let mut properties = serde_json::Map::new();
        for (name, schema) in &props {
            properties.insert((*name).clone(), strip_extensions(schema));
        }
        json!({
            "type": "object",
            "properties": {
                "type": {"const": "action"},
                "tool": {"const": card.name},
                "arguments": {"type": "object", "properties": properties,
                              "required": props.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(),
                              "additionalProperties": false},
            },
            "required": ["type", "tool", "arguments"],
            "additionalProperties": false,
        })
    };
    let final_branch = branch(decision_schema, "final")
        .ok_or(GrammarError::MissingBranch("final"))?
        .clone();
    match (mode, gap) {
        (crate::prompt::Mode::Guided, runtime::policy::Gap::Tool { tool, .. }) => Ok(action(
            tools
                .iter()
                .find(|c| &c.name == tool)
                .ok_or_else(|| GrammarError::UnknownTool(tool.clone()))?,
        )),
        (crate::prompt::Mode::Guided, runtime::policy::Gap::Final { .. }) => Ok(final_branch),
        (crate::prompt::Mode::Free, _) => {
            let mut any: Vec<Value> = tools.iter().map(action).collect();
            any.push(final_branch);
            Ok(json!({ "oneOf": any }))
        }
    }
}

fn strip_extensions(schema: &Value) -> Value {
    match schema {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(k, _)| !k.starts_with("x-"))
                .map(|(k, v)| (k.clone(), strip_extensions(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// The JSON the runtime writes for the model in guided mode: through the tool name and the first
/// argument's key (and its opening quote or bracket), so the model fills only values.
pub fn guided_tool_prefix(inputs: &Inputs, tool: &str) -> Result<String, GrammarError> {
    let card = card(inputs, tool)?;
    let mut prefix = format!(
        "{}\"tool\":{},\"arguments\":{{",
        decision_head(inputs, "action"),
        json!(tool)
    );
    if let Some((name, schema)) = written_properties(inputs, card).into_iter().next() {
        prefix.push_str(&format!("{}:", json!(name)));
        match schema.get("type").and_then(Value::as_str) {
            Some("string") => prefix.push('"'),
            Some("array") => prefix.push('['),
            _ => {}
        }
    }
    Ok(prefix)
}

/// Guided mode, final gap: everything up to the first slot's name, or the answer text when the template has
/// no slots (the runtime knows which evidence to cite).
pub fn guided_final_prefix(inputs: &Inputs, evidence_ids: &[String]) -> String {
    format!(
        "{}\"evidence_ids\":{},{}",
        decision_head(inputs, "final"),
        json!(evidence_ids),
        answer_field_opening(inputs)
    )
}

/// `{"type":"<branch>",` and, in guided mode, the runtime's `"decision_summary":"…",`: the start of every
/// decision the runtime writes.
pub(crate) fn decision_head(inputs: &Inputs, branch: &str) -> String {
    let mut head = format!("{{\"type\":{},", json!(branch));
    if let Some(summary) = inputs.decision_summary {
        head.push_str(&format!("\"decision_summary\":{},", json!(summary)));
    }
    head
}

/// The properties a generated action writes, in the registry's order: the required ones and the optional ones
/// without a registry default (written too, e.g. a chart's average line); optional ones with a default are left
/// to the runtime. Of alternative groups, [`written_properties`] keeps one.
pub fn generation_properties(arguments_schema: &Value) -> Vec<(&String, &Value)> {
    let required: Vec<&str> = arguments_schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(props) = arguments_schema
        .get("properties")
        .and_then(Value::as_object)
    else {
        return Vec::new();
    };
    props
        .iter()
        .filter(|(n, s)| required.contains(&n.as_str()) || s.get("default").is_none())
        .collect()
}

fn card<'a>(inputs: &Inputs<'a>, tool: &str) -> Result<&'a ToolCard, GrammarError> {
    inputs
        .tools
        .iter()
        .find(|c| c.name == tool)
        .ok_or_else(|| GrammarError::UnknownTool(tool.into()))
}

fn branch<'a>(decision_schema: &'a Value, title: &str) -> Option<&'a Value> {
    decision_schema
        .get("oneOf")?
        .as_array()?
        .iter()
        .find(|b| b.get("title").and_then(Value::as_str) == Some(title))
}

fn finish(grammar: Grammar) -> Result<Grammar, GrammarError> {
    grammar
        .check()
        .map_err(|e| GrammarError::Inconsistent(e.to_string()))?;
    Ok(grammar)
}

fn rule_name(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect()
}

fn json_string(text: &str) -> String {
    serde_json::to_string(text).expect("strings serialise")
}

/// `{"type":"final",["decision_summary":…,]"evidence_ids":<ids>,<"slots":{…} or "answer":"…">}`
fn final_shell(inputs: &Inputs, ids: Node, answer_field: Node) -> Node {
    Node::seq([
        Node::lit(format!(
            "{}\"evidence_ids\":",
            decision_head(inputs, "final")
        )),
        ids,
        Node::lit(","),
        answer_field,
        Node::lit("}"),
    ])
}
