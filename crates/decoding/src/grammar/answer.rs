//! The final answer's text: the task's template with each slot and choice filled from the runtime's answer
//! plan (`Grounding::answer_offers`), or grounded free text when there is no usable template.

use runtime::claims::template::{self, Part};

use super::text::{define_text, text_numbers};
use super::{Inputs, json_string};
use crate::gbnf::{Grammar, Node};

/// The answer text (inside the JSON string): the template with its slots filled from the grounding.
/// Without a usable template, grounded free text.
pub(super) fn answer_node(grammar: &mut Grammar, inputs: &Inputs) -> Node {
    // The runtime's own reading of the template: the gate reads answers back by the same parts.
    let parts = template::parse(inputs.answer_template);
    if !parts
        .iter()
        .any(|p| !matches!(p, Part::Text(t) if t.trim().is_empty()))
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
            Part::Text(text) => items.push(Node::lit(escape(&text))),
            Part::Choice(options) => {
                let allowed: Vec<&String> = offers
                    .get(index)
                    .map(|o| options.iter().filter(|opt| o.contains(opt)).collect())
                    .unwrap_or_default();
                let offered: Vec<&String> = if allowed.is_empty() {
                    options.iter().collect()
                } else {
                    allowed
                };
                items.push(Node::one_of_texts(offered.into_iter().map(|o| escape(o))));
                index += 1;
            }
            Part::Slot(_) => {
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
                    items.push(Node::seq([
                        Node::rule("text-seg").repeat(1, 40),
                        Node::rule("text-end").opt(),
                    ]));
                } else {
                    grammar.define("slot-value", Node::one_of_texts(value_alternatives.iter()));
                    items.push(Node::rule("slot-value"));
                }
            }
        }
    }
    Node::Seq(items)
}
