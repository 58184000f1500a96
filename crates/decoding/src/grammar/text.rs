//! The grounded text every part of a decision writes: numbers as JSON may write them, as prose writes
//! them (unsigned: a `-` is text there) and as a slot holds them (signed), free text whose digit runs are
//! grounded numbers, and JSON string escaping. Shared by the argument values, the calculator expressions
//! and the final answer.

use super::{Inputs, json_string};
use crate::gbnf::{Grammar, Node};

/// The values among `texts` that a JSON number may be written as (the grammar writes them verbatim).
pub(super) fn json_numbers(texts: &[String]) -> Vec<&String> {
    texts.iter().filter(|n| is_json_number(n)).collect()
}

pub(super) fn is_json_number(text: &str) -> bool {
    let digits = text.strip_prefix('-').unwrap_or(text);
    let int = digits.split('.').next().unwrap_or("");
    !int.is_empty()
        && (int == "0" || !int.starts_with('0'))
        && serde_json::from_str::<f64>(text).is_ok()
}

/// Grounded numbers as written inside text: unsigned (a `-` is an ordinary character there). Counts
/// (`0..=rows`) only where prose may use them, never in a computation.
pub(super) fn text_numbers(inputs: &Inputs, with_counts: bool) -> Vec<String> {
    grounded_numbers(inputs, with_counts, |n| n.trim_start_matches('-'))
}

/// The grounded numbers the data and the task's words state, as a calculator expression writes them
/// (unsigned: a limit's `-` is the expression's own), leaving out results computed from them: a rule's limit
/// is stated, so a model's own mean is no limit to check that mean against (the 1.5B wrote `mean([X]) <=
/// 12.4` where 12.4 was the mean it had just computed and the rule said 12: suite, stop 59). Without a
/// separate list (no observation yet), the grounded numbers.
pub(super) fn stated_numbers(inputs: &Inputs) -> Vec<String> {
    let grounding = inputs.grounding;
    if grounding.stated.is_empty() {
        return text_numbers(inputs, false);
    }
    distinct_longest_first(&grounding.stated, |n| n.trim_start_matches('-'))
}

/// Grounded numbers as a slot holds them: signed as the observations state them, counts included. A slot
/// has no characters of its own, so a negative value's `-` is part of the number: offered unsigned only,
/// a mean of -3.3 could be written as `3.3` alone, which the claims gate rightly refuses as ungrounded
/// (the 1.5B looped on it until the run had no answer: suite, stop 58).
pub(super) fn slot_numbers(inputs: &Inputs) -> Vec<String> {
    grounded_numbers(inputs, true, |n| n)
}

/// The grounded numbers (and counts, `with_counts`) as `written` prints each, without repeats, longest first.
fn grounded_numbers(
    inputs: &Inputs,
    with_counts: bool,
    written: impl Fn(&str) -> &str,
) -> Vec<String> {
    let counts = if with_counts {
        inputs.grounding.counts.as_slice()
    } else {
        &[]
    };
    distinct_longest_first(inputs.grounding.numbers.iter().chain(counts), written)
}

/// `numbers` as `written` prints each, without repeats or empty texts, longest first: alternatives are tried
/// in order by the checker, and it reads better.
fn distinct_longest_first<'n>(
    numbers: impl IntoIterator<Item = &'n String>,
    written: impl Fn(&str) -> &str,
) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for n in numbers {
        let n = written(n).to_owned();
        if !n.is_empty() && !out.contains(&n) {
            out.push(n);
        }
    }
    out.sort_by_key(|n| std::cmp::Reverse(n.len()));
    out
}

/// Free text inside a JSON string whose digit runs are grounded numbers:
/// `text-seg ::= text-char | num text-after`, `text-end ::= num "."?`.
pub(super) fn define_text(grammar: &mut Grammar, inputs: &Inputs) {
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

/// `text` as it sits inside a JSON string (quotes and backslashes escaped).
pub(super) fn escape_json_text(text: &str) -> String {
    let quoted = json_string(text);
    quoted[1..quoted.len() - 1].to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

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
