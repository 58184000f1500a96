//! Argument values of an action, from each property's schema and `x-grammar` role: labels, grounded numbers
//! and text (a search query among them), column references, computed values, arrays and the paired label/value lists of a
//! chart. Expressions are `expression`'s; this module only dispatches to it.

use serde_json::{Value, json};

use runtime::policy::{Series, ToolCard};

use super::text::{define_text, json_numbers};
use super::{
    CalcGoal, GrammarError, Inputs, column_references, expression, json_string, rule_name,
    usable_series, written_properties,
};
use crate::gbnf::{Grammar, Node};

/// `{"type":"action","tool":"<name>","arguments":{...}}` with one rule per argument.
pub(super) fn action_node(
    grammar: &mut Grammar,
    inputs: &Inputs,
    card: &ToolCard,
    goal: CalcGoal,
) -> Result<Node, GrammarError> {
    let mut items = vec![Node::lit(format!(
        "{}\"tool\":{},\"arguments\":{{",
        super::decision_head(inputs, "action"),
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
pub(super) fn paired_arrays(
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
pub(super) fn value_node(
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
            let max_chars = schema
                .get("maxLength")
                .and_then(Value::as_u64)
                .map_or(u32::MAX, |m| m as u32);
            expression::expression_node(grammar, inputs, tool, field, goal, max_chars)
        }
        ("string", Some("column")) if !column_references(inputs).is_empty() => {
            // A whole observed column by reference: the tool resolves its rows from the ledger.
            let references: Vec<String> = column_references(inputs)
                .iter()
                .map(|r| json_string(r))
                .collect();
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
            // A chart's line is data: the computed value itself, not one of the roundings an answer may print.
            let computed = json_numbers(&inputs.grounding.computed_exact);
            if computed.is_empty() {
                return Ok(number_node(grammar, inputs));
            }
            grammar.define("computed-num", Node::one_of_texts(computed));
            Ok(Node::rule("computed-num"))
        }
        ("number", _) => Ok(number_node(grammar, inputs)),
        ("integer", _) => Ok(integer_node(schema)),
        ("boolean", _) => Ok(Node::one_of_texts(["true", "false"])),
        ("array", _) => {
            let items_schema = schema.get("items").ok_or_else(unsupported)?;
            array_node(grammar, inputs, tool, field, schema, items_schema, goal)
        }
        _ => Err(unsupported()),
    }
}

/// The grammar of an array value: its items' grammar as a rule, repeated within the schema's and the caps' bounds.
fn array_node(
    grammar: &mut Grammar,
    inputs: &Inputs,
    tool: &str,
    field: &str,
    schema: &Value,
    items_schema: &Value,
    goal: CalcGoal,
) -> Result<Node, GrammarError> {
    let caps = &inputs.caps;
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

/// The grammar of an integer value: each value of a small `minimum..=maximum` range, else up to 12 digits.
fn integer_node(schema: &Value) -> Node {
    let min = schema.get("minimum").and_then(Value::as_i64);
    let max = schema.get("maximum").and_then(Value::as_i64);
    match (min, max) {
        (Some(a), Some(b)) if b >= a && b - a <= 32 => {
            Node::one_of_texts((a..=b).map(|n| n.to_string()))
        }
        _ => Node::seq([
            Node::lit("-").opt(),
            Node::Class {
                negated: false,
                ranges: vec![('0', '9')],
            }
            .repeat(1, 12),
        ]),
    }
}

/// A JSON number that is a grounded value (signed, as printed), or any number while nothing is grounded.
pub(super) fn number_node(grammar: &mut Grammar, inputs: &Inputs) -> Node {
    if !grammar.has_rule("json-num") {
        let grounded = json_numbers(&inputs.grounding.numbers);
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
