//! Calculator expressions a decision may write: the whitelisted shapes of the calculator's own syntax over
//! grounded numbers (`calc-num`, `calc-bool`), aggregates over whole observed columns by reference, the rule
//! check the runtime read as a conjunction of its terms, and free mode's choice among them.

use runtime::tools::calculator::{BinOp, Function, UnaryOp};

use super::text::{escape_json_text, text_numbers};
use super::{CalcGoal, GrammarError, Inputs, column_references, usable_series};
use crate::gbnf::{Grammar, Node};

/// The grammar of a calculator expression argument (`x-grammar: expression`) for one decision's goal: the
/// rule check the runtime read, the aggregate a step asks for over an observed column by reference, free
/// mode's own choice, or (older task files, no table) any expression over grounded numbers.
pub(super) fn expression_node(
    grammar: &mut Grammar,
    inputs: &Inputs,
    tool: &str,
    field: &str,
    goal: CalcGoal,
) -> Result<Node, GrammarError> {
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
        return Ok(Node::seq([
            Node::lit("\""),
            Node::rule("rule-check"),
            Node::lit("\""),
        ]));
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
        .filter_map(|a| {
            a["arguments"][field]
                .as_str()
                .map(|e| escape_json_text(e.trim()))
        })
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
                Node::one_of_texts(BinOp::COMPARISON.map(BinOp::symbol)),
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
                .any(|e| BinOp::COMPARISON.iter().any(|op| e.contains(op.symbol())));
            let mut choices = Vec::new();
            if inputs.grounding.rule_terms.is_empty() && !compared {
                choices.push(Node::seq([
                    Node::rule("calc-compare"),
                    Node::seq([
                        Node::lit(format!(" {} ", BinOp::And.symbol())),
                        Node::rule("calc-compare"),
                    ])
                    .opt(),
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
            if !inputs.grounding.rule_terms.is_empty()
                && !checks.iter().any(|c| run_before.contains(c))
            {
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
                Node::one_of_texts(BinOp::COMPARISON.map(BinOp::symbol)),
                Node::lit(" "),
                Node::rule("calc-number"),
            ]);
            grammar.define(
                "calc-any-table",
                Node::seq([Node::rule("calc-asked"), compare.opt()]),
            );
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

/// The calculator functions `focus` (a step's hint) asks for: the one aggregate its words name
/// ("compute the average …" → `mean`), or all five when it names none or several.
pub(super) fn asked_aggregates(focus: &str) -> Vec<&'static str> {
    // The runtime's lexicon reads which aggregate the words name; none or several leave all open.
    let named = runtime::language::lexicon::aggregates_in(focus);
    match named.as_slice() {
        [one] => vec![one.function()],
        _ => Function::ALL.map(Function::name).to_vec(),
    }
}

/// Calculator expressions over grounded numbers: `calc-num` (arithmetic and aggregates), `calc-bool`
/// (comparisons joined by and/or/not), `calc-any` (either). The shapes follow the calculator's own
/// syntax, so a grammar-made expression always parses.
pub(super) fn define_expression(grammar: &mut Grammar, inputs: &Inputs) {
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
            Node::one_of_texts(Function::ALL.map(Function::name)),
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
        Node::seq([
            Node::lit(UnaryOp::Neg.symbol()).opt(),
            Node::rule("calc-atom"),
        ]),
    );
    // One rule per precedence level of the calculator's parser, its operators from the calculator's tables.
    grammar.define(
        "calc-term",
        operator_chain("calc-unary", &BinOp::PRODUCT, 4),
    );
    grammar.define("calc-num", operator_chain("calc-term", &BinOp::SUM, 24));
    grammar.define(
        "calc-cmp",
        Node::seq([
            Node::rule("calc-num"),
            operator(&BinOp::COMPARISON),
            Node::rule("calc-num"),
        ]),
    );
    grammar.define(
        "calc-not",
        Node::seq([
            Node::lit(format!("{} ", UnaryOp::Not.symbol())).opt(),
            Node::rule("calc-cmp"),
        ]),
    );
    let joiners = [BinOp::And, BinOp::Or].map(|op| format!(" {} ", op.symbol()));
    grammar.define(
        "calc-bool",
        Node::seq([
            Node::rule("calc-not"),
            Node::seq([Node::one_of_texts(joiners), Node::rule("calc-not")]).repeat(0, 4),
        ]),
    );
    grammar.define(
        "calc-any",
        Node::Alt(vec![Node::rule("calc-bool"), Node::rule("calc-num")]),
    );
}

/// One of `ops`, optionally spaced on either side, as the calculator's tokenizer allows.
fn operator(ops: &[BinOp]) -> Node {
    let sp = || Node::lit(" ").opt();
    Node::seq([
        sp(),
        Node::one_of_texts(ops.iter().map(|op| op.symbol())),
        sp(),
    ])
}

/// `operand (op operand){0,max}`: one left-associative precedence level of the calculator.
fn operator_chain(operand: &str, ops: &[BinOp], max: u32) -> Node {
    Node::seq([
        Node::rule(operand),
        Node::seq([operator(ops), Node::rule(operand)]).repeat(0, max),
    ])
}

/// Every order of `terms` joined by ` and ` (at most 4 terms are permuted; more keep their order).
pub(super) fn rule_conjunctions(terms: &[String]) -> Vec<String> {
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
