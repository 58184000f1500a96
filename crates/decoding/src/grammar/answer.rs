//! The final answer's text: the task's template with each slot holding grounded values or row labels and
//! each choice any of its options, or grounded free text when there is no usable template. Which value, which
//! row and which verdict are the model's; the claims gate checks them afterwards, apart.

use forge_language::template::{self, Part};

use super::Inputs;
use super::text::{define_text, escape_json_text as escape, text_numbers};
use crate::gbnf::{Grammar, Node};

/// Row labels one slot may list (`A, B and C` for a top-N slot or a tie): more is a list no template asks for.
const SLOT_VALUES: u32 = 5;
/// Characters of a slot's bracketed note (`(tie)`, `(unverified)`): a remark, not a second answer.
const SLOT_NOTE_CHARS: u32 = 24;

/// The answer text (inside the JSON string): the template with its slots filled from the grounding.
/// Without a usable template, grounded free text.
pub(super) fn answer_node(grammar: &mut Grammar, inputs: &Inputs) -> Node {
    // The template is read by the runtime's own parser: the gate reads answers back by the same parts.
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
    let mut items = Vec::new();
    for part in parts {
        match part {
            Part::Text(text) => items.push(Node::lit(escape(&text))),
            // Every option: which verdict holds is the model's to say and the gate's to check.
            Part::Choice(options) => {
                items.push(Node::one_of_texts(options.iter().map(|o| escape(o))))
            }
            Part::Slot(_) => items.push(slot_node(grammar, inputs)),
        }
    }
    Node::Seq(items)
}

/// One slot: a grounded value, or a row label or a short list of them (`A and B`: a top-N slot or a tie),
/// optionally followed by a bracketed note in words (`(tie)`); grounded free text when the observations hold
/// no value yet. A note holds no digits or brackets: it cannot carry a second value past the gate.
fn slot_node(grammar: &mut Grammar, inputs: &Inputs) -> Node {
    if grammar.has_rule("slot") {
        return Node::rule("slot");
    }
    let numbers: Vec<String> = text_numbers(inputs, true);
    let labels: Vec<String> = inputs.grounding.labels.iter().map(|l| escape(l)).collect();
    if numbers.is_empty() && labels.is_empty() {
        define_text(grammar, inputs);
        grammar.define(
            "slot",
            Node::seq([
                Node::rule("text-seg").repeat(1, 40),
                Node::rule("text-end").opt(),
            ]),
        );
        return Node::rule("slot");
    }
    let mut values = Vec::new();
    if !numbers.is_empty() {
        grammar.define("slot-number", Node::one_of_texts(numbers));
        values.push(Node::rule("slot-number"));
    }
    if !labels.is_empty() {
        grammar.define("slot-label", Node::one_of_texts(labels));
        let joiner = Node::one_of_texts([", ", " and "]);
        values.push(Node::seq([
            Node::rule("slot-label"),
            Node::seq([joiner, Node::rule("slot-label")]).repeat(0, SLOT_VALUES - 1),
        ]));
    }
    let note = Node::seq([
        Node::lit(" ("),
        Node::char_except("\"\\0123456789()[]").repeat(1, SLOT_NOTE_CHARS),
        Node::lit(")"),
    ]);
    grammar.define("slot", Node::seq([Node::Alt(values), note.opt()]));
    Node::rule("slot")
}
