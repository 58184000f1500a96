//! The final answer: the task's template given slot by slot (`"slots":{"<name>":"<value>",…}`, each slot a
//! grounded value or row labels, each choice any of its options), from which the runtime writes the answer;
//! or the answer text itself (the template filled in place, or grounded free text without one), as the
//! model's [`AnswerForm`] says. Which value, which row and which verdict are the model's; the claims gate
//! checks them afterwards, apart.

use forge_language::answer::{self, Verdict};
use forge_language::template::{self, Part};

pub use crate::answer_form::AnswerForm;

use super::Inputs;
use super::text::{define_text, escape_json_text as escape, slot_numbers};
use crate::gbnf::{Grammar, Node};

/// Row labels one slot may list (`A, B and C` for a top-N slot or a tie): more is a list no template asks for.
const SLOT_VALUES: u32 = 5;
/// Characters of a slot's bracketed note (`(tie)`, `(unverified)`): a remark, not a second answer.
const SLOT_NOTE_CHARS: u32 = 24;

/// Where the final's own field opens, after its evidence ids: `"slots":{` when the answer is given slot by
/// slot, else `"answer":"`. The runtime's guided prefix ends with it.
pub(crate) fn answer_field_opening(inputs: &Inputs) -> &'static str {
    if inputs.answer_form.by_slots(inputs.answer_template) {
        "\"slots\":{"
    } else {
        "\"answer\":\""
    }
}

/// The final's own field, from [`answer_field_opening`] to its closing quote or brace. Slot by slot: each
/// slot named as the template names it (the name right before its value, so the value is written knowing what
/// it stands for), in template order; before the first choice, whether the rule holds as the model's rule check
/// came out (`"rule check":"true"` or `"false"`, both open), and each verdict choice after it in the words the
/// task's verdict phrases give that outcome. As a sentence: the template with each slot filled in place.
pub(super) fn answer_field(grammar: &mut Grammar, inputs: &Inputs) -> Node {
    // The template is read by the runtime's own parser: the runtime reads answers back by the same parts.
    let parts = template::parse(inputs.answer_template);
    if !inputs.answer_form.by_slots(inputs.answer_template) {
        return Node::seq([
            Node::lit(answer_field_opening(inputs)),
            answer_text(grammar, inputs, &parts),
            Node::lit("\""),
        ]);
    }
    let names = template::slot_names(&parts);
    let fillable: Vec<&Part> = parts
        .iter()
        .filter(|p| !matches!(p, Part::Text(_)))
        .collect();
    let slots: Vec<(&String, &Part)> = names.iter().zip(fillable).collect();
    let mut items = vec![Node::lit(answer_field_opening(inputs))];
    let first_choice = template::states_rule_check(&parts)
        .then(|| slots.iter().position(|(_, p)| matches!(p, Part::Choice(_))))
        .flatten();
    let Some(first_choice) = first_choice else {
        items.extend(slot_items(grammar, inputs, &slots, false, None));
        items.push(Node::lit("}"));
        return Node::Seq(items);
    };
    let (before, after) = slots.split_at(first_choice);
    items.extend(slot_items(grammar, inputs, before, false, None));
    let separator = if first_choice == 0 { "" } else { "," };
    items.push(Node::lit(format!(
        "{separator}{}:\"",
        serde_json::to_string(template::RULE_CHECK_KEY).expect("strings serialise")
    )));
    // Either outcome is the model's to state; the verdict words then follow it by the task's own phrases.
    items.push(Node::Alt(
        [true, false]
            .into_iter()
            .map(|holds| {
                let mut branch = vec![Node::lit(format!("{holds}\""))];
                branch.extend(slot_items(grammar, inputs, after, true, Some(holds)));
                Node::Seq(branch)
            })
            .collect(),
    ));
    items.push(Node::lit("}"));
    Node::Seq(items)
}

/// `"<name>":"<value>"` for each slot in order, comma-separated (and after a comma when `after_item`); with
/// `holds`, a verdict choice takes the option its verdict phrases give that outcome.
fn slot_items(
    grammar: &mut Grammar,
    inputs: &Inputs,
    slots: &[(&String, &Part)],
    after_item: bool,
    holds: Option<bool>,
) -> Vec<Node> {
    let mut items = Vec::new();
    for (index, (name, part)) in slots.iter().enumerate() {
        let separator = if index == 0 && !after_item { "" } else { "," };
        items.push(Node::lit(format!(
            "{separator}{}:\"",
            serde_json::to_string(name).expect("strings serialise")
        )));
        items.push(match (part, holds) {
            (Part::Choice(options), Some(holds)) => verdict_words(options, inputs, holds),
            _ => value_node(grammar, inputs, part),
        });
        items.push(Node::lit("\""));
    }
    items
}

/// The options of a choice that say `holds` by the task's verdict phrases; every option when none or all of
/// them do (a choice that is no verdict stays the model's).
fn verdict_words(options: &[String], inputs: &Inputs, holds: bool) -> Node {
    let wanted = if holds { Verdict::Met } else { Verdict::NotMet };
    let saying: Vec<&String> = options
        .iter()
        .filter(|o| answer::verdict_of(o, inputs.verdict_phrases) == wanted)
        .collect();
    if saying.is_empty() || saying.len() == options.len() {
        return Node::one_of_texts(options.iter().map(|o| escape(o)));
    }
    Node::one_of_texts(saying.into_iter().map(|o| escape(o)))
}

/// What fills one slot or choice: every option of a choice (which verdict holds is the model's to say and the
/// gate's to check), a slot's grounded value.
fn value_node(grammar: &mut Grammar, inputs: &Inputs, part: &Part) -> Node {
    match part {
        Part::Choice(options) => Node::one_of_texts(options.iter().map(|o| escape(o))),
        _ => slot_node(grammar, inputs),
    }
}

/// The answer as text: grounded free text without a usable template, else the template with each slot and
/// choice filled in place.
fn answer_text(grammar: &mut Grammar, inputs: &Inputs, parts: &[Part]) -> Node {
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
    Node::Seq(
        parts
            .iter()
            .map(|part| match part {
                Part::Text(text) => Node::lit(escape(text)),
                _ => value_node(grammar, inputs, part),
            })
            .collect(),
    )
}

/// One slot: a grounded value, or a row label or a short list of them (`A and B`: a top-N slot or a tie),
/// optionally followed by a bracketed note in words (`(tie)`); grounded free text when the observations hold
/// no value yet. A note holds no digits or brackets: it cannot carry a second value past the gate.
fn slot_node(grammar: &mut Grammar, inputs: &Inputs) -> Node {
    if grammar.has_rule("slot") {
        return Node::rule("slot");
    }
    let numbers: Vec<String> = slot_numbers(inputs);
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
