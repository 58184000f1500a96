//! Calculator expressions a decision may write: the whitelisted shapes of the calculator's own syntax over
//! grounded numbers (`calc-num`, `calc-bool`) and, over observed tables, every calculator function of every
//! observed column by reference (`calc-aggregate`) and comparisons of what a limit bounds over a column with a
//! limit written in numbers the data and the task state (never a result computed from them), with a unit of
//! the column's dimension where its table states one (`calc-check`). Which column, which function, which comparison, which limit and which unit are the model's
//! choice: nothing here reads the task's words or the runtime's reading of its rule.

use forge_tools::calculator::{BinOp, Function, UnaryOp};

use super::text::{escape_json_text, stated_numbers, text_numbers};
use super::{CalcGoal, GrammarError, Inputs, column_references, usable_series};
use crate::gbnf::{Grammar, Node};

/// Terms of one rule check at most (`a <= 30 and b >= 2 and …`): enough for any rule the suite's knowledge
/// states in two or three clauses, few enough that a small model cannot chain on to the token cap.
const CHECK_TERMS: u32 = 4;

/// The grammar of a calculator expression argument (`x-grammar: expression`) for one decision's goal: a
/// number (guided `number` step, or an older task file's undeclared one: its evidence item takes no boolean), a
/// boolean check (guided `boolean` step) or free mode's own choice.
pub(super) fn expression_node(
    grammar: &mut Grammar,
    inputs: &Inputs,
    tool: &str,
    field: &str,
    goal: CalcGoal,
    max_chars: u32,
) -> Result<Node, GrammarError> {
    define_expression(grammar, inputs);
    // Over an observed table, an aggregate names its column by reference (`mean([Wait])`): the calculator
    // resolves it from the ledger, so 5 rows or 500 cost the same few tokens and no value can be mistyped,
    // dropped or invented. Every function, every column: the choice is the model's.
    let references = column_references(inputs);
    let over_table = !references.is_empty();
    if over_table {
        define_table_terms(grammar, inputs, &references, max_chars);
    }
    let root = match goal {
        CalcGoal::Boolean if over_table => "calc-check",
        CalcGoal::Boolean => "calc-bool",
        CalcGoal::Number if over_table => "calc-quantity",
        CalcGoal::Number => "calc-num",
        CalcGoal::Free if over_table => free_choice(grammar, inputs, tool, field, &references)?,
        CalcGoal::Free => "calc-any",
        // Undeclared (older task files): the evidence item takes a number, never a boolean
        // (`RequiredEvidence::accepts`), so a number: over a table, one aggregate.
        CalcGoal::Undeclared if over_table => "calc-aggregate",
        CalcGoal::Undeclared => "calc-num",
    };
    Ok(Node::seq([
        Node::lit("\""),
        Node::rule(root),
        Node::lit("\""),
    ]))
}

/// `calc-aggregate` (every function over every column reference), then the rule check's terms
/// ([`define_check`]). As many terms, and two-operand sides, as fit `max_chars` (the registry's limit) at their
/// longest: every string the grammar admits is one the registry accepts.
fn define_table_terms(
    grammar: &mut Grammar,
    inputs: &Inputs,
    references: &[String],
    max_chars: u32,
) {
    let longest_reference = references
        .iter()
        .map(|r| r.chars().count())
        .max()
        .unwrap_or(0);
    let longest_number = text_numbers(inputs, false)
        .iter()
        .map(|n| n.chars().count() + 1)
        .max()
        .unwrap_or(0);
    // A limit may be brought into its column's unit (`5 * 60`): every factor the unit vocabulary converts by.
    let factors: Vec<String> = forge_language::units::conversion_factors()
        .into_iter()
        .map(forge_language::numbers::canonical)
        .collect();
    let longest_factor = factors.iter().map(|f| f.len()).max().unwrap_or(0);
    let units = unit_groups(inputs);
    // A limit with its unit is the number, a space and the unit's name.
    let longest_unit = units
        .iter()
        .flat_map(|g| &g.names)
        .map(|u| u.chars().count() + 1)
        .max()
        .unwrap_or(0);
    let shape = CheckShape::fitting(
        longest_reference,
        longest_number.max(longest_factor),
        longest_unit,
        max_chars as usize,
    );
    let calls: Vec<String> = references
        .iter()
        .flat_map(|reference| {
            Function::ALL
                .iter()
                .map(move |f| escape_json_text(&format!("{}({reference})", f.name())))
        })
        .collect();
    grammar.define("calc-aggregate", Node::one_of_texts(calls));
    // A check's numbers are stated ones: its limits, and a quantity a bound is taken over (`/ 320`).
    let stated = stated_numbers(inputs);
    let stated = if stated.is_empty() {
        Node::rule("calc-number")
    } else {
        Node::one_of_texts(stated)
    };
    grammar.define("calc-stated", stated);
    let operand = Node::Alt(vec![Node::rule("calc-aggregate"), signed_number()]);
    grammar.define("calc-operand", operand);
    let longest_call = "count()".len() + longest_reference;
    define_quantity(
        grammar,
        2 * longest_call + " /  * ".len() + longest_factor <= max_chars as usize,
    );
    let max_rows = inputs
        .grounding
        .series
        .iter()
        .map(|s| s.values.len())
        .max()
        .unwrap_or(0);
    define_check(grammar, references, shape, factors, &units, max_rows);
}

/// `calc-quantity`, what a number step computes over a table: one aggregate (`mean([Wait])`), or — when two
/// fit the registry's limit (`ratio_fits`) — one aggregate over another, optionally times a factor the unit
/// vocabulary converts by: a rate the knowledge defines over totals (`sum([Passed]) / sum([Tests]) * 100`).
/// With one aggregate only, the 1.5B could not write such a rate and wrote the mean of the per-row rates
/// (suite, stop 58). Whether a step is a ratio, and of which columns, is the model's; the gate checks the
/// quantity the slot names.
fn define_quantity(grammar: &mut Grammar, ratio_fits: bool) {
    if !ratio_fits {
        grammar.define("calc-quantity", Node::rule("calc-aggregate"));
        return;
    }
    let ratio = Node::seq([
        spaced(&[BinOp::Div]),
        Node::rule("calc-aggregate"),
        Node::seq([spaced(&[BinOp::Mul]), Node::rule("calc-factor")]).opt(),
    ]);
    grammar.define(
        "calc-quantity",
        Node::seq([Node::rule("calc-aggregate"), ratio.opt()]),
    );
}

/// The columns of one dimension of units (time, mass, a share, one currency) and the grounded names a limit of
/// that dimension may be written with after its number (`s`, `minutes`, `克`, …).
struct UnitGroup {
    /// Every name and symbol of the dimension's units, escaped for a JSON string.
    names: Vec<String>,
    /// The references of the observed columns whose values the table states in a unit of the dimension.
    references: Vec<String>,
}

/// The observed columns that state a unit the vocabulary knows, grouped by its dimension (a column is read
/// by its own header and cells: no task word, no rule), each with the grounded units of that dimension.
fn unit_groups(inputs: &Inputs) -> Vec<UnitGroup> {
    let mut groups: Vec<(String, UnitGroup)> = Vec::new();
    for series in &inputs.grounding.series {
        let Some(unit) = series.unit.as_deref().and_then(forge_language::units::read) else {
            continue;
        };
        // Grounded, as a number is: the units the observed text and the task write with their numbers, and
        // the column's own, of the column's dimension; each one the calculator reads as one unit (`per cent`
        // is two words, `mg/L` a unit and a division: a column in such a unit keeps bare limits).
        let names: Vec<String> = inputs
            .grounding
            .units
            .iter()
            .filter(|name| {
                forge_tools::calculator::reads_as_unit(name)
                    && forge_language::units::read(name)
                        .is_some_and(|u| u.dimension == unit.dimension)
            })
            .map(|name| escape_json_text(name))
            .collect();
        if names.is_empty() {
            continue;
        }
        let reference = escape_json_text(&super::series_reference(inputs, series));
        match groups.iter_mut().find(|(d, _)| *d == unit.dimension) {
            Some((_, group)) if !group.references.contains(&reference) => {
                group.references.push(reference)
            }
            Some(_) => {}
            None => groups.push((
                unit.dimension,
                UnitGroup {
                    names,
                    references: vec![reference],
                },
            )),
        }
    }
    groups.into_iter().map(|(_, g)| g).collect()
}

/// `calc-counted` (the rows of a column passing a comparison, counted, compared with `calc-rows`: a number of
/// rows, 0 to `max_rows`), `calc-bound` (what a limit bounds: an aggregate, optionally with one more operand —
/// a ratio of totals), `calc-limit` (the
/// limit: a stated number (`calc-stated`), or two around an arithmetic operator — a share of a stated quantity — or one
/// brought into the column's unit by a factor the unit vocabulary converts by, either optionally followed by
/// one more factor: `85 * 320 / 100`), `calc-unit-N` (a limit on a column whose table states a unit: a grounded
/// number with a unit of that dimension, `5 min`, for the calculator to convert) and
/// `calc-check` (comparisons of a bound with a limit, joined by `and` / `or`).
fn define_check(
    grammar: &mut Grammar,
    references: &[String],
    shape: CheckShape,
    factors: Vec<String>,
    units: &[UnitGroup],
    max_rows: usize,
) {
    define_counted(grammar, references, units);
    let arithmetic: Vec<BinOp> = BinOp::SUM.iter().chain(&BinOp::PRODUCT).copied().collect();
    define_bound(grammar, references, units, shape, &arithmetic);
    grammar.define("calc-factor", Node::one_of_texts(factors));
    // After the limit's number (`85 * 320 / 100`: a percentage of a stated quantity): an arithmetic operand
    // and optionally a third, a factor.
    let arithmetic_tail = shape.two_operand_limit.then(|| {
        Node::seq([
            spaced(&arithmetic),
            Node::Alt(vec![signed_number(), Node::rule("calc-factor")]),
            Node::seq([spaced(&arithmetic), Node::rule("calc-factor")]).opt(),
        ])
    });
    let limit = match &arithmetic_tail {
        Some(tail) => Node::seq([signed_number(), tail.clone().opt()]),
        None => signed_number(),
    };
    grammar.define("calc-limit", limit);
    // What a count of rows is compared with is a number of rows, 0 up to the longest observed column's:
    // a count tolerance states it in words ("at most one site", "至多两个"), so as a grounded number the
    // limit was often not there to write (held-out set 12, stop 59: the 1.5B wrote `count([签约率] < 65%)
    // <= 2025`, a year; offered the row counts, it answered right after one repair).
    let rows = (0..=max_rows).map(|n| n.to_string());
    grammar.define("calc-rows", Node::one_of_texts(rows));
    let mut compares = vec![
        Node::seq([
            Node::rule("calc-bound"),
            spaced(&BinOp::COMPARISON),
            Node::rule("calc-limit"),
        ]),
        Node::seq([
            Node::rule("calc-counted"),
            spaced(&BinOp::COMPARISON),
            Node::rule("calc-rows"),
        ]),
    ];
    compares.extend(unit_compares(grammar, units));
    grammar.define("calc-compare", Node::Alt(compares));
    grammar.define(
        "calc-check",
        Node::seq([
            Node::rule("calc-compare"),
            Node::seq([spaced(&[BinOp::And, BinOp::Or]), Node::rule("calc-compare")])
                .repeat(0, shape.terms - 1),
        ]),
    );
}

/// `calc-counted`: the rows of a column that pass a comparison, counted — how a count tolerance is checked
/// (`count([Wait] > 8 min) <= 1`). The filter's limit is a grounded number, written with a grounded unit of
/// the column's dimension where its table states one, as a limit on the column's sum, mean, min or max is
/// (`calc-unit-N`): a bare number there would be a raw comparison (`count([Wait] > 8)` over seconds against
/// "8 minutes"). Whether to count at all is the model's: on the three count tolerances over columns in a unit
/// that the 1.5B checked with `min` or `mean` instead (suite and held-out set 13), the unit alone changed
/// nothing (stop 59).
fn define_counted(grammar: &mut Grammar, references: &[String], units: &[UnitGroup]) {
    let filter = |columns: Vec<String>, unit: Option<Node>| {
        let counted = columns
            .iter()
            .map(|reference| format!("{}({reference} ", Function::Count.name()))
            .collect::<Vec<_>>();
        let mut parts = vec![
            Node::one_of_texts(counted),
            Node::one_of_texts(BinOp::COMPARISON.iter().map(|op| op.symbol())),
            Node::lit(" "),
            signed_number(),
        ];
        if let Some(unit) = unit {
            parts.extend([Node::lit(" ").opt(), unit]);
        }
        parts.push(Node::lit(")"));
        Node::seq(parts)
    };
    let measured: Vec<&String> = units.iter().flat_map(|g| &g.references).collect();
    let unitless: Vec<String> = references
        .iter()
        .map(|reference| escape_json_text(reference))
        .filter(|reference| !measured.contains(&reference))
        .collect();
    let mut counted = Vec::new();
    if !unitless.is_empty() {
        counted.push(filter(unitless, None));
    }
    for (index, group) in units.iter().enumerate() {
        counted.push(filter(
            group.references.clone(),
            Some(Node::rule(format!("calc-unit-{index}"))),
        ));
    }
    grammar.define("calc-counted", Node::Alt(counted));
}

/// `calc-bound`: what a limit written as a number bounds — an aggregate of a column whose table states no
/// unit, a count of any column's rows, or a ratio or other two-operand side (in no one column's unit). The
/// rows passing a comparison, counted, are compared apart (`calc-counted`, with a row count).
fn define_bound(
    grammar: &mut Grammar,
    references: &[String],
    units: &[UnitGroup],
    shape: CheckShape,
    arithmetic: &[BinOp],
) {
    // One side is what the limit bounds, over a column; the other is the limit, written in numbers the
    // observations hold. A column compared with a column (`mean([X]) <= max([X])`) states no limit at all:
    // the 1.5B wrote it for "at most the maximum average" in 6 of 23 replayed rule checks.
    // A column whose table states its unit is measured in that unit: what one of its sum, mean, min or max
    // is compared with is written with a unit (`5 min`, `80 %`), which the calculator converts — or as a
    // number brought there by arithmetic. Which unit is the model's; the gate checks the comparison.
    let measured: Vec<&String> = units.iter().flat_map(|g| &g.references).collect();
    let unitless_calls: Vec<String> = references
        .iter()
        .flat_map(|reference| {
            let in_unit = measured.contains(&&escape_json_text(reference));
            Function::ALL
                .iter()
                .filter(move |f| !in_unit || **f == Function::Count)
                .map(move |f| escape_json_text(&format!("{}({reference})", f.name())))
        })
        .collect();
    // A ratio (`sum([A]) / sum([B])`) is in no one column's unit.
    let mut bounds = Vec::new();
    if !unitless_calls.is_empty() {
        bounds.push(Node::one_of_texts(unitless_calls));
    }
    if shape.two_operand_bound {
        bounds.push(Node::seq([
            Node::rule("calc-aggregate"),
            spaced(arithmetic),
            Node::rule("calc-operand"),
        ]));
    }
    grammar.define("calc-bound", Node::Alt(bounds));
}

/// One comparison per dimension of units: a sum, mean, min or max of a column in that dimension compared with
/// a grounded number and a unit of the dimension (`calc-unit-N`). No arithmetic after the number: offered
/// `5 * …` beside `5 min`, the 1.5B multiplied a limit in grams by a mile's factor (`120 * 1.609344`) where
/// the unit was the knowledge's own; a share of a stated quantity over such a column is written as a ratio
/// (`mean([Load]) / 320 >= 0.85`).
fn unit_compares(grammar: &mut Grammar, units: &[UnitGroup]) -> Vec<Node> {
    let mut compares = Vec::new();
    for (index, group) in units.iter().enumerate() {
        let unit_rule = format!("calc-unit-{index}");
        grammar.define(&unit_rule, Node::one_of_texts(group.names.iter().cloned()));
        let calls = group.references.iter().flat_map(|reference| {
            Function::ALL
                .iter()
                .filter(|f| **f != Function::Count)
                .map(move |f| format!("{}({reference})", f.name()))
        });
        // Spaced or glued, as people write it (`5 min`, `120克`): the calculator reads either.
        compares.push(Node::seq([
            Node::one_of_texts(calls),
            spaced(&BinOp::COMPARISON),
            signed_number(),
            Node::lit(" ").opt(),
            Node::rule(&unit_rule),
        ]));
    }
    compares
}

/// An arithmetic or logical operator among `ops`, one space either side (how the check's terms are joined).
fn spaced(ops: &[BinOp]) -> Node {
    Node::seq([
        Node::lit(" "),
        Node::one_of_texts(ops.iter().map(|op| op.symbol())),
        Node::lit(" "),
    ])
}

/// A stated number (never only a computed result), optionally negative: what a rule check's limit is written in.
fn signed_number() -> Node {
    Node::seq([
        Node::lit(UnaryOp::Neg.symbol()).opt(),
        Node::rule("calc-stated"),
    ])
}

/// How much one rule check may hold within the registry's character limit, at its longest: how many
/// comparisons, and whether the bound (`sum([A]) / sum([B])`) and the limit (`85 * 3.2`) may take a second
/// operand. Terms come first: two limits checked in one expression is the common rule, and a long column
/// name must not leave room for one comparison only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct CheckShape {
    pub(super) terms: u32,
    pub(super) two_operand_bound: bool,
    pub(super) two_operand_limit: bool,
}

impl CheckShape {
    /// The richest shape whose longest check fits `max_chars`, given the longest column reference, the
    /// longest grounded number (with its sign) and the longest unit a limit may carry (with its space, 0
    /// when none) in characters.
    pub(super) fn fitting(
        reference: usize,
        number: usize,
        unit: usize,
        max_chars: usize,
    ) -> CheckShape {
        let aggregate = reference + "count()".len();
        // `count([Rate] <= -7.5 %) <= 2`: a count of rows under a comparison, with one number of rows.
        let counted = reference + "count( <= )".len() + number + unit + " <= ".len() + number;
        let operand = aggregate.max(number);
        let compare = |bound_two: bool, limit_two: bool| {
            let bound = if bound_two {
                aggregate + " / ".len() + operand
            } else {
                aggregate
            };
            // A limit is a number with its unit, or (`limit_two`) up to three numbers around operators.
            let limit = if limit_two {
                (3 * number + 2 * " * ".len()).max(number + unit)
            } else {
                number + unit
            };
            (bound + " <= ".len() + limit).max(counted)
        };
        // " and " joins the terms.
        let check = |terms: usize, compare: usize| terms * compare + (terms - 1) * " and ".len();
        let shapes = [(true, true), (true, false), (false, false)];
        for least_terms in [2, 1] {
            for (bound_two, limit_two) in shapes {
                let terms = (least_terms..=CHECK_TERMS as usize)
                    .rev()
                    .find(|&n| check(n, compare(bound_two, limit_two)) <= max_chars);
                if let Some(terms) = terms {
                    return CheckShape {
                        terms: terms as u32,
                        two_operand_bound: bound_two,
                        two_operand_limit: limit_two,
                    };
                }
            }
        }
        CheckShape {
            terms: 1,
            two_operand_bound: false,
            two_operand_limit: false,
        }
    }
}

/// Free mode over a table: an aggregate not computed yet, or a check while none has run. A successful
/// action run again exactly can only repeat its observation; a second check is only a way to wander.
fn free_choice(
    grammar: &mut Grammar,
    inputs: &Inputs,
    tool: &str,
    field: &str,
    references: &[String],
) -> Result<&'static str, GrammarError> {
    let run_before: Vec<String> = inputs
        .done
        .iter()
        .filter(|a| a["tool"] == tool)
        .filter_map(|a| a["arguments"][field].as_str().map(|e| e.trim().to_owned()))
        .collect();
    let fresh: Vec<String> = references
        .iter()
        .flat_map(|reference| {
            Function::ALL
                .iter()
                .map(move |f| format!("{}({reference})", f.name()))
        })
        .filter(|call| !run_before.contains(call))
        .map(|call| escape_json_text(&call))
        .collect();
    let checked = run_before
        .iter()
        .any(|e| BinOp::COMPARISON.iter().any(|op| e.contains(op.symbol())));
    let mut choices = Vec::new();
    if !fresh.is_empty() {
        grammar.define("calc-fresh", Node::one_of_texts(fresh));
        choices.push(Node::rule("calc-fresh"));
    }
    if !checked {
        choices.push(Node::rule("calc-check"));
    }
    if choices.is_empty() {
        return Err(GrammarError::NothingNew(tool.into()));
    }
    grammar.define("calc-free", Node::Alt(choices));
    Ok("calc-free")
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

#[cfg(test)]
mod tests {
    use super::CheckShape;

    #[test]
    fn a_check_keeps_two_comparisons_before_second_operands() {
        // Short names: four comparisons, each side with a second operand.
        let short = CheckShape::fitting("[Wait]".len(), "-12.5".len(), 0, 240);
        assert_eq!(
            short,
            CheckShape {
                terms: 4,
                two_operand_bound: true,
                two_operand_limit: true
            }
        );
        // A long column name and an exact computed mean among the numbers: two comparisons still fit, the
        // limit gives up its second operand first.
        let long = CheckShape::fitting(
            "[Highest chiller temperature]".len(),
            "-3.8666666666666667".len(),
            0,
            240,
        );
        assert_eq!(long.terms, 2);
        assert!(long.two_operand_bound && !long.two_operand_limit);
        // Nothing fits twice: one comparison, one operand a side.
        let huge = CheckShape::fitting(150, 10, 0, 240);
        assert_eq!(
            huge,
            CheckShape {
                terms: 1,
                two_operand_bound: false,
                two_operand_limit: false
            }
        );
    }
}
