//! The final answer's text: the task's template with each slot and choice filled from the runtime's answer
//! plan (`Grounding::answer_offers`), or grounded free text when there is no usable template.

use super::value::{define_text, text_numbers};
use super::{Inputs, json_string};
use crate::gbnf::{Grammar, Node};

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
pub(super) fn answer_node(grammar: &mut Grammar, inputs: &Inputs) -> Node {
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
