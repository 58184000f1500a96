//! Decoding grammars for one decision, built per step from the registry's argument schemas (with their
//! `x-grammar` roles), the decision schema's limits, the task's answer template and the run's grounding.
//!
//! Everything a grammar admits also passes the runtime's validation: it is the decision contract made
//! tighter. Numbers a model writes — in calculator expressions, chart values, titles, queries and the
//! final answer — can only be numbers the observations (or the task's own text) established; chart
//! labels only observed row labels; evidence ids only ids of successful observations; and the final
//! answer follows the task's template. The runtime still verifies every claim (its claims gate): the
//! grammar makes wrong writing hard, the gate makes it impossible to accept. This module builds
//! [`gbnf::Grammar`]s and prefixes; it never runs a model.

use serde_json::{Value, json};

use runtime::policy::{Grounding, ResultKind, Series, ToolCard};

use crate::gbnf::{Grammar, Node};

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
    /// What this decision is about, in the task's words (the step's hint, or the task text): it picks
    /// the observed column aggregates, charts and answer slots draw on when it names one.
    pub focus: &'a str,
    pub caps: Caps,
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

/// The observed columns a decision may draw whole-column values from: the one `inputs.focus` names,
/// or every column when it names none (each at most `max_len` values).
fn usable_series<'a>(inputs: &Inputs<'a>, max_len: u32) -> Vec<&'a Series> {
    let fits = |s: &&Series| s.values.len() as u32 <= max_len;
    match inputs.grounding.focus(inputs.focus).filter(fits) {
        Some(series) => vec![series],
        None => inputs.grounding.series.iter().filter(fits).collect(),
    }
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
    let answer = answer_node(&mut grammar, inputs);
    grammar.define("final", final_shell(ids, answer));
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
        let answer = answer_node(&mut grammar, inputs);
        grammar.define("final", final_shell(ids, answer));
        alternatives.push(Node::rule("final"));
    }
    if alternatives.is_empty() {
        return Err(GrammarError::Inconsistent("free mode offers no decision".into()));
    }
    grammar.define("decision", Node::Alt(alternatives));
    finish(grammar)
}

/// Whether a tool has what its arguments need in this state, read from its argument roles: an `expression`
/// needs observed data (a calculation over the task's own numbers only proves nothing), a `label` list needs
/// an observed column of labelled values, a `computed` value a calculator result. Tools with none of these
/// roles can always run.
fn can_run_now(inputs: &Inputs, card: &ToolCard) -> bool {
    let observed_data = !inputs.grounding.series.is_empty() || !inputs.grounding.evidence_ids.is_empty();
    let labelled_column = inputs
        .grounding
        .series
        .iter()
        .any(|s| s.labels.len() == s.values.len() && !s.labels.is_empty());
    written_properties(inputs, card).iter().filter_map(|(_, schema)| role_of(schema)).all(|role| match role {
        "expression" => observed_data,
        "label" | "column" => labelled_column,
        // A chart's line is a value the calculator computed: none yet, no chart yet.
        "computed" => inputs.grounding.computed.iter().any(|n| is_json_number(n)),
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
            let schema = properties.iter().find(|(n, _)| *n == field).map(|(_, s)| *s);
            match schema.and_then(role_of) {
                Some("column") => !column_references(inputs).is_empty(),
                _ => true,
            }
        })
    };
    let chosen = card.alternatives.iter().find(|g| fillable(g)).or(card.alternatives.last());
    properties
        .into_iter()
        .filter(|(name, _)| {
            !card.alternatives.iter().flatten().any(|f| f == *name) || chosen.is_some_and(|g| g.contains(name))
        })
        .collect()
}

/// Column references a decision may write (`[Wait]`, `[Hotel | Occupancy]` where two tables share a name):
/// the observed column `inputs.focus` names, or every observed column when it names none.
fn column_references(inputs: &Inputs) -> Vec<String> {
    let referable: Vec<&Series> = match inputs.grounding.focus(inputs.focus) {
        Some(series) => vec![series],
        None => inputs.grounding.series.iter().collect(),
    };
    let mut out: Vec<String> = Vec::new();
    for series in referable {
        let shared = inputs.grounding.series.iter().filter(|s| s.name == series.name).count() > 1;
        let reference = if shared && !series.rows.is_empty() {
            format!("[{} | {}]", series.rows, series.name)
        } else {
            format!("[{}]", series.name)
        };
        if !out.contains(&reference) {
            out.push(reference);
        }
    }
    out
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
        "{{\"type\":\"action\",\"tool\":{},\"arguments\":{{",
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

/// Guided mode, final gap: everything up to the answer text (the runtime knows which evidence to cite).
pub fn guided_final_prefix(evidence_ids: &[String]) -> String {
    format!(
        "{{\"type\":\"final\",\"evidence_ids\":{},\"answer\":\"",
        json!(evidence_ids)
    )
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

/// `{"type":"final","evidence_ids":<ids>,"answer":"<answer>"}`
fn final_shell(ids: Node, answer: Node) -> Node {
    Node::seq([
        Node::lit("{\"type\":\"final\",\"evidence_ids\":"),
        ids,
        Node::lit(",\"answer\":\""),
        answer,
        Node::lit("\"}"),
    ])
}

/// `{"type":"action","tool":"<name>","arguments":{...}}` with one rule per argument.
fn action_node(
    grammar: &mut Grammar,
    inputs: &Inputs,
    card: &ToolCard,
    goal: CalcGoal,
) -> Result<Node, GrammarError> {
    let mut items = vec![Node::lit(format!(
        "{{\"type\":\"action\",\"tool\":{},\"arguments\":{{",
        json!(card.name)
    ))];
    let properties = written_properties(inputs, card);
    let mut i = 0;
    while i < properties.len() {
        let (name, schema) = properties[i];
        if i > 0 {
            items.push(Node::lit(","));
        }
        items.push(Node::lit(format!("{}:", json!(name))));
        let rule = format!("{}-{}", rule_name(&card.name), rule_name(name));
        // Two adjacent arrays that must have equal lengths are written as one rule with one alternative
        // per length, so a chart can never get more values than labels.
        let paired = properties.get(i + 1).filter(|(next, _)| {
            card.same_length.iter().any(|n| n == name)
                && card.same_length.iter().any(|n| n == *next)
        });
        let body = match paired {
            Some((next, next_schema)) => {
                i += 1;
                paired_arrays(
                    grammar,
                    inputs,
                    card,
                    (name, schema),
                    (next, next_schema),
                    goal,
                )?
            }
            None => value_node(grammar, inputs, &card.name, name, schema, goal)?,
        };
        grammar.define(&rule, body);
        items.push(Node::rule(rule));
        i += 1;
    }
    items.push(Node::lit("}}"));
    Ok(Node::Seq(items))
}

/// `[a1,…,an],"second":[b1,…,bn]` for n = 1..=max: two arrays of equal length, the second's key in
/// between. With row labels known, n is at most their number.
fn paired_arrays(
    grammar: &mut Grammar,
    inputs: &Inputs,
    card: &ToolCard,
    first: (&String, &Value),
    second: (&String, &Value),
    goal: CalcGoal,
) -> Result<Node, GrammarError> {
    // Row labels and their numbers from one observed column, copied whole in table order: the chart
    // can neither drop a row nor pair a label with another row's value.
    let labels_then_numbers = first.1["items"].get("x-grammar").and_then(Value::as_str)
        == Some("label")
        && second.1["items"].get("type").and_then(Value::as_str) == Some("number");
    let max_items = [first.1, second.1]
        .iter()
        .filter_map(|s| s.get("maxItems").and_then(Value::as_u64))
        .fold(inputs.caps.array_items, |m, x| m.min(x as u32));
    let columns: Vec<&Series> = usable_series(inputs, max_items)
        .into_iter()
        .filter(|s| s.labels.len() == s.values.len() && s.labels.iter().all(|l| !l.is_empty()))
        .collect();
    if labels_then_numbers && !columns.is_empty() {
        let between = format!(",{}:", json!(second.0));
        return Ok(Node::one_of_texts(columns.iter().map(|s| {
            let labels: Vec<String> = s.labels.iter().map(|l| json_string(l)).collect();
            format!("[{}]{between}[{}]", labels.join(","), s.values.join(","))
        })));
    }
    let mut item_rules = Vec::new();
    let mut max = inputs.caps.array_items;
    for (name, schema) in [first, second] {
        let items_schema = schema
            .get("items")
            .ok_or_else(|| GrammarError::Unsupported {
                tool: card.name.clone(),
                field: name.clone(),
                schema: schema.to_string(),
            })?;
        let item = value_node(
            grammar,
            inputs,
            &card.name,
            &format!("{name}[]"),
            items_schema,
            goal,
        )?;
        let rule = format!("{}-{}-item", rule_name(&card.name), rule_name(name));
        grammar.define(&rule, item);
        item_rules.push(rule);
        if let Some(m) = schema.get("maxItems").and_then(Value::as_u64) {
            max = max.min(m as u32);
        }
    }
    if !inputs.grounding.labels.is_empty() {
        max = max.min(inputs.grounding.labels.len() as u32);
    }
    let list = |rule: &str, n: u32| {
        let mut parts = vec![Node::lit("["), Node::rule(rule)];
        for _ in 1..n {
            parts.push(Node::lit(","));
            parts.push(Node::rule(rule));
        }
        parts.push(Node::lit("]"));
        Node::Seq(parts)
    };
    let between = Node::lit(format!(",{}:", json!(second.0)));
    let alternatives = (1..=max.max(1))
        .map(|n| {
            Node::seq([
                list(&item_rules[0], n),
                between.clone(),
                list(&item_rules[1], n),
            ])
        })
        .collect();
    Ok(Node::Alt(alternatives))
}

/// The grammar of one argument value, from its schema and `x-grammar` role.
fn value_node(
    grammar: &mut Grammar,
    inputs: &Inputs,
    tool: &str,
    field: &str,
    schema: &Value,
    goal: CalcGoal,
) -> Result<Node, GrammarError> {
    let unsupported = || GrammarError::Unsupported {
        tool: tool.into(),
        field: field.into(),
        schema: schema.to_string(),
    };
    let role = schema.get("x-grammar").and_then(Value::as_str);
    let ty = schema.get("type").and_then(Value::as_str).unwrap_or("");
    let caps = &inputs.caps;
    match (ty, role) {
        ("string", Some("expression")) => {
            define_expression(grammar, inputs);
            // A number asked of an observed table is one aggregate over one whole column: a small model
            // chaining `mean(a) + mean(b)` over the wrong columns is the failure this rules out.
            let over_table = !usable_series(inputs, inputs.caps.function_args.max(1)).is_empty();
            // A rule check over rules the knowledge states as understood facts is those comparisons,
            // all of them, joined by `and` in any order: the model decides to check, the knowledge says
            // what the rule is — it cannot flip an operator or compare against the wrong limit.
            if goal == CalcGoal::Boolean && !inputs.grounding.rule_terms.is_empty() {
                let checks = rule_conjunctions(&inputs.grounding.rule_terms);
                grammar.define("rule-check", Node::one_of_texts(checks));
                return Ok(Node::seq([Node::lit("\""), Node::rule("rule-check"), Node::lit("\"")]));
            }
            // The aggregate a number step asks for, when its words name exactly one ("the average …"):
            // a small model sampling at t=0.7 otherwise sometimes sums what it was asked to average.
            // Over an observed table, an aggregate names its column by reference (`mean([Wait])`): the
            // calculator resolves it from the ledger, so 5 rows or 500 cost the same few tokens and no value
            // can be mistyped, dropped or invented. Which column: the one the step's words name, or any.
            let references = column_references(inputs);
            let over_table = over_table || !references.is_empty();
            // What this tool's field already held in a successful action: in free mode an exact repeat of a
            // finite choice is not offered (it could only repeat its observation).
            let run_before: Vec<String> = inputs
                .done
                .iter()
                .filter(|a| a["tool"] == tool)
                .filter_map(|a| a["arguments"][field].as_str().map(|e| escape_json_text(e.trim())))
                .collect();
            if over_table {
                let functions = asked_aggregates(inputs.focus);
                let mut calls: Vec<String> = Vec::new();
                for reference in &references {
                    for function in &functions {
                        let call = escape_json_text(&format!("{function}({reference})"));
                        if !calls.contains(&call) {
                            calls.push(call);
                        }
                    }
                }
                if goal == CalcGoal::Free {
                    // Comparisons may use any aggregate; on its own, only one not computed yet.
                    grammar.define("calc-aggregate", Node::one_of_texts(calls.iter()));
                    calls.retain(|c| !run_before.contains(c));
                    if !calls.is_empty() {
                        grammar.define("calc-asked", Node::one_of_texts(calls));
                    }
                } else {
                    grammar.define("calc-asked", Node::one_of_texts(calls));
                }
            }
            let root = match goal {
                CalcGoal::Boolean => "calc-bool",
                CalcGoal::Number if over_table => "calc-asked",
                CalcGoal::Number => "calc-num",
                // Free mode over a table: the model chooses what to compute — an aggregate of an observed
                // column, comparisons of aggregates with grounded numbers joined by `and`, or (when the
                // runtime read the rule) the rule check itself, as in guided mode.
                CalcGoal::Free if over_table => {
                    let compare = Node::seq([
                        Node::rule("calc-aggregate"),
                        Node::lit(" "),
                        Node::one_of_texts([">=", "<=", "==", "!=", ">", "<"]),
                        Node::lit(" "),
                        Node::rule("calc-number"),
                    ]);
                    grammar.define("calc-compare", compare);
                    // Comparisons of the model's own making only where the runtime could not read the rule:
                    // where it did, the rule check is the one comparison worth running (a small model otherwise
                    // re-checks invented limits step after step).
                    // And once: the runtime cannot verify them, so a second is only a way to wander.
                    let compared = run_before
                        .iter()
                        .any(|e| ["<", ">", "==", "!="].iter().any(|op| e.contains(op)));
                    let mut choices = Vec::new();
                    if inputs.grounding.rule_terms.is_empty() && !compared {
                        choices.push(Node::seq([
                            Node::rule("calc-compare"),
                            Node::seq([Node::lit(" and "), Node::rule("calc-compare")]).opt(),
                        ]));
                    }
                    if grammar.has_rule("calc-asked") {
                        choices.insert(0, Node::rule("calc-asked"));
                    }
                    // The rule check, once: every order of its terms is the same check.
                    let checks: Vec<String> = rule_conjunctions(&inputs.grounding.rule_terms)
                        .iter()
                        .map(|c| escape_json_text(c))
                        .collect();
                    if !inputs.grounding.rule_terms.is_empty() && !checks.iter().any(|c| run_before.contains(c)) {
                        grammar.define("rule-check", Node::one_of_texts(checks));
                        choices.push(Node::rule("rule-check"));
                    }
                    if choices.is_empty() {
                        // Every aggregate computed and the rule checked: nothing new to calculate.
                        return Err(GrammarError::NothingNew(tool.into()));
                    }
                    grammar.define("calc-free", Node::Alt(choices));
                    "calc-free"
                }
                CalcGoal::Free => "calc-any",
                // Undeclared (older task files), over a table: one aggregate, optionally compared with
                // one grounded number — never a chain, which a small model runs on until the token cap.
                CalcGoal::Undeclared if over_table => {
                    let compare = Node::seq([
                        Node::lit(" "),
                        Node::one_of_texts([">=", "<=", "==", "!=", ">", "<"]),
                        Node::lit(" "),
                        Node::rule("calc-number"),
                    ]);
                    grammar.define("calc-any-table", Node::seq([Node::rule("calc-asked"), compare.opt()]));
                    "calc-any-table"
                }
                CalcGoal::Undeclared => "calc-any",
            };
            Ok(Node::seq([
                Node::lit("\""),
                Node::rule(root),
                Node::lit("\""),
            ]))
        }
        ("string", Some("column")) if !column_references(inputs).is_empty() => {
            // A whole observed column by reference: the tool resolves its rows from the ledger.
            let references: Vec<String> =
                column_references(inputs).iter().map(|r| json_string(r)).collect();
            grammar.define("column-reference", Node::one_of_texts(references));
            Ok(Node::rule("column-reference"))
        }
        ("string", Some("label")) if !inputs.grounding.labels.is_empty() => {
            grammar.define(
                "label",
                Node::one_of_texts(inputs.grounding.labels.iter().map(|l| json_string(l))),
            );
            Ok(Node::rule("label"))
        }
        ("string", Some("task-words")) if !task_words(inputs.focus).is_empty() => {
            // A search written in the task's own words always shares words with what the task is about;
            // a small model sampling freely sometimes writes a query nothing matches, then repeats it.
            // Each word at most once, in the order the text uses them: a small model otherwise pads a query by
            // repeating one word ("policy policy policy …") until the token cap, and retrieval degrades.
            // `query-from-i` starts the query at word i or later; `query-after-i` adds words i.. optionally.
            let words: Vec<String> = task_words(inputs.focus).iter().map(|w| escape_json_text(w)).collect();
            let n = words.len();
            for (i, word) in words.iter().enumerate() {
                let next = |kind: &str| Node::rule(format!("query-{kind}-{}", i + 1));
                let after = if i + 1 < n { Some(next("after")) } else { None };
                let start = Node::seq([Node::lit(word.clone())].into_iter().chain(after.clone()));
                grammar.define(
                    &format!("query-from-{i}"),
                    if i + 1 < n { Node::Alt(vec![start, next("from")]) } else { start },
                );
                let add = Node::seq([Node::lit(format!(" {word}"))].into_iter().chain(after.clone()));
                grammar.define(
                    &format!("query-after-{i}"),
                    match after {
                        Some(rest) => Node::Alt(vec![add, rest]),
                        None => add.opt(),
                    },
                );
            }
            Ok(Node::seq([Node::lit("\""), Node::rule("query-from-0"), Node::lit("\"")]))
        }
        ("string", _) => {
            let max = schema
                .get("maxLength")
                .and_then(Value::as_u64)
                .map_or(caps.string_chars, |m| (m as u32).min(caps.string_chars));
            let min = schema
                .get("minLength")
                .and_then(Value::as_u64)
                .map_or(0, |m| (m as u32).min(max));
            define_text(grammar, inputs);
            Ok(Node::seq([
                Node::lit("\""),
                Node::rule("text-seg").repeat(min, max),
                Node::rule("text-end").opt(),
                Node::lit("\""),
            ]))
        }
        ("number", Some("computed")) => {
            let computed: Vec<&String> = inputs
                .grounding
                .computed
                .iter()
                .filter(|n| is_json_number(n))
                .collect();
            if computed.is_empty() {
                return Ok(number_node(grammar, inputs));
            }
            grammar.define("computed-num", Node::one_of_texts(computed));
            Ok(Node::rule("computed-num"))
        }
        ("number", _) => Ok(number_node(grammar, inputs)),
        ("integer", _) => {
            let min = schema.get("minimum").and_then(Value::as_i64);
            let max = schema.get("maximum").and_then(Value::as_i64);
            match (min, max) {
                (Some(a), Some(b)) if b >= a && b - a <= 32 => {
                    Ok(Node::one_of_texts((a..=b).map(|n| n.to_string())))
                }
                _ => Ok(Node::seq([
                    Node::lit("-").opt(),
                    Node::Class {
                        negated: false,
                        ranges: vec![('0', '9')],
                    }
                    .repeat(1, 12),
                ])),
            }
        }
        ("boolean", _) => Ok(Node::one_of_texts(["true", "false"])),
        ("array", _) => {
            let items_schema = schema.get("items").ok_or_else(unsupported)?;
            let item = value_node(
                grammar,
                inputs,
                tool,
                &format!("{field}[]"),
                items_schema,
                goal,
            )?;
            let max = schema
                .get("maxItems")
                .and_then(Value::as_u64)
                .map_or(caps.array_items, |m| (m as u32).min(caps.array_items))
                .max(1);
            let min = schema
                .get("minItems")
                .and_then(Value::as_u64)
                .map_or(0, |m| (m as u32).min(max));
            let rule = format!(
                "{}-{}-item",
                rule_name(tool),
                rule_name(field.trim_end_matches("[]"))
            );
            grammar.define(&rule, item);
            let rest = Node::seq([Node::lit(","), Node::rule(rule.clone())])
                .repeat(min.saturating_sub(1), max - 1);
            let body = Node::seq([Node::rule(rule), rest]);
            Ok(Node::seq([
                Node::lit("["),
                if min == 0 { body.opt() } else { body },
                Node::lit("]"),
            ]))
        }
        _ => Err(unsupported()),
    }
}

/// A JSON number that is a grounded value (signed, as printed), or any number while nothing is grounded.
fn number_node(grammar: &mut Grammar, inputs: &Inputs) -> Node {
    if !grammar.has_rule("json-num") {
        let grounded: Vec<&String> = inputs
            .grounding
            .numbers
            .iter()
            .filter(|n| is_json_number(n))
            .collect();
        let body = if grounded.is_empty() {
            let digits = Node::Class {
                negated: false,
                ranges: vec![('0', '9')],
            };
            Node::seq([
                Node::lit("-").opt(),
                digits.clone().repeat(1, 15),
                Node::seq([Node::lit("."), digits.repeat(1, 4)]).opt(),
            ])
        } else {
            Node::one_of_texts(grounded)
        };
        grammar.define("json-num", body);
    }
    Node::rule("json-num")
}

fn is_json_number(text: &str) -> bool {
    let digits = text.strip_prefix('-').unwrap_or(text);
    let int = digits.split('.').next().unwrap_or("");
    !int.is_empty()
        && (int == "0" || !int.starts_with('0'))
        && serde_json::from_str::<f64>(text).is_ok()
}

/// Grounded numbers as written inside text: unsigned (a `-` is an ordinary character there). Counts
/// (`0..=rows`) only where prose may use them, never in a computation.
fn text_numbers(inputs: &Inputs, with_counts: bool) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let counts = if with_counts {
        inputs.grounding.counts.as_slice()
    } else {
        &[]
    };
    for n in inputs.grounding.numbers.iter().chain(counts) {
        let n = n.trim_start_matches('-').to_owned();
        if !n.is_empty() && !out.contains(&n) {
            out.push(n);
        }
    }
    // Longest first: alternatives are tried in order by the checker, and it reads better.
    out.sort_by_key(|n| std::cmp::Reverse(n.len()));
    out
}

/// Free text inside a JSON string whose digit runs are grounded numbers:
/// `text-seg ::= text-char | num text-after`, `text-end ::= num "."?`.
fn define_text(grammar: &mut Grammar, inputs: &Inputs) {
    if grammar.has_rule("text-seg") {
        return;
    }
    let numbers = text_numbers(inputs, true);
    grammar.define("text-char", text_char("\"\\0123456789"));
    if numbers.is_empty() {
        grammar.define("text-seg", Node::rule("text-char"));
        grammar.define("text-end", Node::rule("text-char"));
        return;
    }
    grammar.define("text-num", Node::one_of_texts(numbers));
    // After a number: not a digit and not a bare decimal point (so 7 and 2 cannot make 72, nor 7 and .5 make 7.5).
    let after = Node::Alt(vec![
        text_char("\"\\0123456789."),
        Node::seq([Node::lit("."), text_char("\"\\0123456789.")]),
    ]);
    grammar.define("text-after", after);
    grammar.define(
        "text-seg",
        Node::Alt(vec![
            Node::rule("text-char"),
            Node::seq([Node::rule("text-num"), Node::rule("text-after")]),
        ]),
    );
    grammar.define(
        "text-end",
        Node::seq([Node::rule("text-num"), Node::lit(".").opt()]),
    );
}

/// One character of JSON string content other than `excluded` (control characters are never allowed;
/// escapes are not needed by any decision and only invite a small model to wander).
fn text_char(excluded: &str) -> Node {
    Node::char_except(excluded)
}

/// The words of `text` (the step's hint, or the task) a `task-words` argument may use: split at white
/// space and punctuation (CJK text at its own punctuation, so a clause is one word), stop words and
/// single characters out, first occurrence order. Not retrieval's tokenizer: that one lower-cases, folds
/// plurals and cuts CJK into n-grams to index passages; a query is written in the words as they stand.
fn task_words(text: &str) -> Vec<String> {
    const SKIP: &[&str] = &["a", "an", "and", "the", "of", "to", "in", "on", "for", "with", "from", "by", "is", "it", "its", "as", "at", "or", "be", "then", "that", "this", "you", "your", "use", "used"];
    let mut words: Vec<String> = Vec::new();
    for raw in text.split(|c: char| c.is_whitespace() || "，。、；：？！（）,.;:?!()\"'`[]{}<>/".contains(c)) {
        let word = raw.trim_matches(|c: char| !c.is_alphanumeric());
        if word.chars().count() < 2 || SKIP.contains(&word.to_lowercase().as_str()) {
            continue;
        }
        if !words.iter().any(|w| w == word) {
            words.push(word.to_owned());
        }
    }
    words
}

/// `text` as it sits inside a JSON string (quotes and backslashes escaped).
fn escape_json_text(text: &str) -> String {
    let quoted = json_string(text);
    quoted[1..quoted.len() - 1].to_owned()
}

/// The calculator functions `focus` (a step's hint) asks for: the one aggregate its words name
/// ("compute the average …" → `mean`), or all five when it names none or several.
fn asked_aggregates(focus: &str) -> Vec<&'static str> {
    // The runtime's lexicon reads which aggregate the words name; none or several leave all open.
    let named = runtime::language::lexicon::aggregates_in(focus);
    match named.as_slice() {
        [one] => vec![one.function()],
        _ => vec!["mean", "sum", "min", "max", "count"],
    }
}

/// Calculator expressions over grounded numbers: `calc-num` (arithmetic and aggregates), `calc-bool`
/// (comparisons joined by and/or/not), `calc-any` (either). The shapes follow the calculator's own
/// syntax, so a grammar-made expression always parses.
fn define_expression(grammar: &mut Grammar, inputs: &Inputs) {
    if grammar.has_rule("calc-num") {
        return;
    }
    let sp = || Node::lit(" ").opt();
    let numbers = text_numbers(inputs, false);
    let number = if numbers.is_empty() {
        let digits = Node::Class {
            negated: false,
            ranges: vec![('0', '9')],
        };
        Node::seq([
            digits.clone().repeat(1, 15),
            Node::seq([Node::lit("."), digits.repeat(1, 4)]).opt(),
        ])
    } else {
        Node::one_of_texts(numbers)
    };
    grammar.define("calc-number", number);
    let args_max = inputs.caps.function_args.max(1);
    // An aggregate runs over a whole observed column, copied by the grammar in table order: a small model
    // chooses the function and the column; it cannot drop, repeat or mistype a value. Without an observed
    // table, any grounded arguments.
    let series: Vec<String> = usable_series(inputs, args_max)
        .iter()
        .map(|s| s.values.join(", "))
        .collect();
    let arguments = if series.is_empty() {
        Node::seq([
            Node::rule("calc-num"),
            Node::seq([Node::lit(","), sp(), Node::rule("calc-num")]).repeat(0, args_max - 1),
        ])
    } else {
        Node::one_of_texts(series)
    };
    grammar.define("calc-args", arguments);
    grammar.define(
        "calc-call",
        Node::seq([
            Node::one_of_texts(["mean", "sum", "min", "max", "count"]),
            Node::lit("("),
            Node::rule("calc-args"),
            Node::lit(")"),
        ]),
    );
    grammar.define(
        "calc-atom",
        Node::Alt(vec![
            Node::rule("calc-number"),
            Node::rule("calc-call"),
            Node::seq([
                Node::lit("("),
                sp(),
                Node::rule("calc-num"),
                sp(),
                Node::lit(")"),
            ]),
        ]),
    );
    grammar.define(
        "calc-unary",
        Node::seq([Node::lit("-").opt(), Node::rule("calc-atom")]),
    );
    grammar.define(
        "calc-term",
        Node::seq([
            Node::rule("calc-unary"),
            Node::seq([
                sp(),
                Node::one_of_texts(["*", "/"]),
                sp(),
                Node::rule("calc-unary"),
            ])
            .repeat(0, 4),
        ]),
    );
    grammar.define(
        "calc-num",
        Node::seq([
            Node::rule("calc-term"),
            Node::seq([
                sp(),
                Node::one_of_texts(["+", "-"]),
                sp(),
                Node::rule("calc-term"),
            ])
            .repeat(0, 24),
        ]),
    );
    grammar.define(
        "calc-cmp",
        Node::seq([
            Node::rule("calc-num"),
            sp(),
            Node::one_of_texts([">=", "<=", "==", "!=", ">", "<"]),
            sp(),
            Node::rule("calc-num"),
        ]),
    );
    grammar.define(
        "calc-not",
        Node::seq([Node::lit("not ").opt(), Node::rule("calc-cmp")]),
    );
    grammar.define(
        "calc-bool",
        Node::seq([
            Node::rule("calc-not"),
            Node::seq([
                Node::one_of_texts([" and ", " or "]),
                Node::rule("calc-not"),
            ])
            .repeat(0, 4),
        ]),
    );
    grammar.define(
        "calc-any",
        Node::Alt(vec![Node::rule("calc-bool"), Node::rule("calc-num")]),
    );
}

/// One piece of an answer template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TemplatePart {
    Text(String),
    /// `<a / b>`: one of the alternatives, as written.
    Choice(Vec<String>),
    /// `<name>`: a grounded number or an observed row label.
    Value(String),
}

/// Splits a template into text, choices (`<met / not met>`) and value slots (`<average>`); a `<` without
/// its `>` is text.
pub fn parse_template(template: &str) -> Vec<TemplatePart> {
    let mut parts = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find('<') {
        let Some(close) = rest[open..].find('>').map(|c| open + c) else {
            break;
        };
        if open > 0 {
            parts.push(TemplatePart::Text(rest[..open].to_owned()));
        }
        let inner = rest[open + 1..close].trim();
        let options: Vec<String> = inner
            .split('/')
            .map(|o| o.trim().to_owned())
            .filter(|o| !o.is_empty())
            .collect();
        parts.push(if options.len() >= 2 {
            TemplatePart::Choice(options)
        } else {
            TemplatePart::Value(inner.to_owned())
        });
        rest = &rest[close + 1..];
    }
    if !rest.is_empty() {
        parts.push(TemplatePart::Text(rest.to_owned()));
    }
    parts
}

/// The answer text (inside the JSON string): the template with its slots filled from the grounding.
/// Without a usable template, grounded free text.
fn answer_node(grammar: &mut Grammar, inputs: &Inputs) -> Node {
    let parts = parse_template(inputs.answer_template);
    if !parts
        .iter()
        .any(|p| !matches!(p, TemplatePart::Text(t) if t.trim().is_empty()))
    {
        define_text(grammar, inputs);
        return Node::seq([
            Node::rule("text-seg").repeat(1, 400),
            Node::rule("text-end").opt(),
        ]);
    }
    let escape = |text: &str| {
        let quoted = json_string(text);
        quoted[1..quoted.len() - 1].to_owned()
    };
    let mut value_alternatives: Vec<String> = text_numbers(inputs, true);
    value_alternatives.extend(inputs.grounding.labels.iter().map(|l| escape(l)));
    // What each slot and choice may hold comes from the runtime's answer plan (`claims::answer_offers`),
    // the same plan its claims gate checks against: a value it can vouch for, every candidate when its
    // reading is not certain, or (empty) any grounded value. The grammar reads no words of its own.
    let offers = &inputs.grounding.answer_offers;
    let mut index = 0;
    let mut items = Vec::new();
    for part in parts {
        match part {
            TemplatePart::Text(text) => items.push(Node::lit(escape(&text))),
            TemplatePart::Choice(options) => {
                let allowed: Vec<&String> = offers
                    .get(index)
                    .map(|o| options.iter().filter(|opt| o.contains(opt)).collect())
                    .unwrap_or_default();
                let offered: Vec<&String> = if allowed.is_empty() { options.iter().collect() } else { allowed };
                items.push(Node::one_of_texts(offered.into_iter().map(|o| escape(o))));
                index += 1;
            }
            TemplatePart::Value(_) => {
                let offered: Vec<String> = offers
                    .get(index)
                    .map(|o| o.iter().map(|t| escape(t)).collect())
                    .unwrap_or_default();
                index += 1;
                if !offered.is_empty() {
                    let rule = format!("slot-{index}");
                    grammar.define(&rule, Node::one_of_texts(offered));
                    items.push(Node::rule(rule));
                } else if value_alternatives.is_empty() {
                    define_text(grammar, inputs);
                    items.push(Node::seq([Node::rule("text-seg").repeat(1, 40), Node::rule("text-end").opt()]));
                } else {
                    grammar.define("slot-value", Node::one_of_texts(value_alternatives.iter()));
                    items.push(Node::rule("slot-value"));
                }
            }
        }
    }
    Node::Seq(items)
}

/// Every order of `terms` joined by ` and ` (at most 4 terms are permuted; more keep their order).
fn rule_conjunctions(terms: &[String]) -> Vec<String> {
    fn permute(rest: &[String], prefix: &mut Vec<String>, out: &mut Vec<String>) {
        if rest.is_empty() {
            out.push(prefix.join(" and "));
            return;
        }
        for i in 0..rest.len() {
            let mut remaining = rest.to_vec();
            let term = remaining.remove(i);
            prefix.push(term);
            permute(&remaining, prefix, out);
            prefix.pop();
        }
    }
    if terms.len() > 4 {
        return vec![terms.join(" and ")];
    }
    let mut out = Vec::new();
    permute(terms, &mut Vec::new(), &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_split_into_parts() {
        assert_eq!(
            parse_template("Average is <average>; rule <met / not met>. <oops"),
            vec![
                TemplatePart::Text("Average is ".into()),
                TemplatePart::Value("average".into()),
                TemplatePart::Text("; rule ".into()),
                TemplatePart::Choice(vec!["met".into(), "not met".into()]),
                TemplatePart::Text(". <oops".into()),
            ]
        );
        assert_eq!(
            parse_template("规则<满足/不满足>。")[1],
            TemplatePart::Choice(vec!["满足".into(), "不满足".into()])
        );
    }

    #[test]
    fn json_numbers() {
        for ok in ["0", "79", "-3.5", "98.96666666666667"] {
            assert!(is_json_number(ok), "{ok}");
        }
        for bad in ["05", "", "-", "1.", "1e5x"] {
            assert!(!is_json_number(bad), "{bad}");
        }
    }
}
