//! The decision grammars, prompts and guided prefixes against the runtime's own decision parser, and the JSON
//! stop scanner — no model and no llama.cpp: `cargo test -p forge-decoding` runs them in seconds.

use forge_decoding::generation::JsonScanner;
use forge_decoding::grammar::{self, Caps};
use forge_decoding::prompt::{self, Mode};
use pretty_assertions::assert_eq;
use runtime::policy::{DecisionRequest, Gap};
use runtime::policy::{Grounding, ResultKind};
use runtime::registry::ToolRegistry;
use serde_json::{Value, json};

/// The language data's verdict words (what a task without `verdict_phrases` uses).
static PHRASES_DEFAULT: std::sync::LazyLock<forge_language::answer::VerdictPhrases> =
    std::sync::LazyLock::new(Default::default);

fn tool_names() -> Vec<&'static str> {
    ToolRegistry::builtin().tool_names()
}

fn grounding(numbers: &[&str], labels: &[&str], ids: &[&str]) -> Grounding {
    Grounding {
        numbers: numbers.iter().map(|s| s.to_string()).collect(),
        stated: numbers.iter().map(|s| s.to_string()).collect(),
        counts: Vec::new(),
        labels: labels.iter().map(|s| s.to_string()).collect(),
        evidence_ids: ids.iter().map(|s| s.to_string()).collect(),
        series: Vec::new(),
        computed: Vec::new(),
        computed_exact: Vec::new(),
        units: Vec::new(),
    }
}

const TEMPLATE: &str = "Average is <average>; the lowest is <lowest>. The rule is <met / not met>.";

fn inputs<'a>(cards: &'a [runtime::policy::ToolCard], g: &'a Grounding) -> grammar::Inputs<'a> {
    grammar::Inputs {
        tools: cards,
        grounding: g,
        answer_template: TEMPLATE,
        verdict_phrases: &PHRASES_DEFAULT,
        decision_summary: None,
        caps: Caps::default(),
        answer_form: grammar::AnswerForm::Slots,
        done: &[],
    }
}

/// A decision the grammar accepts must also be one the runtime accepts (parse + registry validation).
fn runtime_accepts(text: &str) {
    runtime_accepts_for(text, TEMPLATE)
}

/// [`runtime_accepts`] for a task with its own answer template (a final given slot by slot fills it).
fn runtime_accepts_for(text: &str, template: &str) {
    let decision = runtime::decision::parse_decision(text, &tool_names(), Some(template))
        .unwrap_or_else(|e| panic!("{text}: {e}"));
    if let runtime::decision::Decision::Action(a) = decision {
        ToolRegistry::builtin()
            .validate_arguments(&a.tool, &a.arguments)
            .unwrap_or_else(|e| panic!("{text}: {e:?}"));
    }
}

/// A calculator action writing `expression`, as a guided decision is written.
fn calculator_call(expression: &str) -> String {
    format!(
        r#"{{"type":"action","tool":"calculator","arguments":{{"expression":"{expression}"}}}}"#
    )
}

/// `grammar` accepts a calculator action writing `expression`, and the runtime's decision parser and tool
/// schema take it too.
fn accepts_a_valid_call(grammar: &forge_decoding::gbnf::Grammar, expression: &str) {
    let call = calculator_call(expression);
    assert!(grammar.accepts(&call), "{expression}\n{}", grammar.render());
    runtime_accepts(&call);
}

/// The slots of a final after the guided prefix's `"slots":{`: `"name":"value",…}` and the decision's `}`.
fn slots_after_prefix(values: &[(&str, &str)]) -> String {
    let body: Vec<String> = values
        .iter()
        .map(|(name, value)| format!("{}:{}", json!(name), json!(value)))
        .collect();
    format!("{}}}}}", body.join(","))
}

#[test]
fn guided_grammars_admit_grounded_decisions_the_runtime_accepts() {
    let cards = ToolRegistry::builtin().cards();
    let g = grounding(
        &["0", "1", "2", "3", "4", "72", "78", "81", "85", "79", "70"],
        &["Batch A", "Batch B", "Batch C", "Batch D"],
        &["obs-knowledge_search-1"],
    );
    let i = inputs(&cards, &g);
    let cases: [(&str, Option<ResultKind>, &str); 5] = [
        (
            "knowledge_search",
            None,
            r#"{"type":"action","tool":"knowledge_search","arguments":{"query":"Task Success by batch"}}"#,
        ),
        (
            "calculator",
            Some(ResultKind::Number),
            r#"{"type":"action","tool":"calculator","arguments":{"expression":"mean(72, 78, 81, 85)"}}"#,
        ),
        (
            "calculator",
            Some(ResultKind::Number),
            r#"{"type":"action","tool":"calculator","arguments":{"expression":"(72 + 78 + 81 + 85) / 4"}}"#,
        ),
        (
            "calculator",
            Some(ResultKind::Boolean),
            r#"{"type":"action","tool":"calculator","arguments":{"expression":"79 >= 78 and min(72, 78, 81, 85) >= 70"}}"#,
        ),
        (
            "plot",
            None,
            r#"{"type":"action","tool":"plot","arguments":{"labels":["Batch A","Batch B"],"values":[72,78],"title":"Task Success 4 batches","average":79}}"#,
        ),
    ];
    for (tool, result, text) in cases {
        let grammar = grammar::guided_tool(&i, tool, result).unwrap();
        assert!(
            grammar.accepts(text),
            "{tool}: grammar refuses {text}\n{}",
            grammar.render()
        );
        let prefix = grammar::guided_tool_prefix(&i, tool).unwrap();
        assert!(
            text.starts_with(&prefix) && grammar.accepts_prefix(&prefix),
            "{tool}: prefix {prefix}"
        );
        runtime_accepts(text);
    }
    let ids = vec![
        "obs-knowledge_search-1".to_string(),
        "obs-calculator-2".to_string(),
    ];
    let fin = grammar::guided_final(&i, &ids).unwrap();
    let prefix = grammar::guided_final_prefix(&i, &ids);
    assert!(prefix.ends_with(r#""slots":{"#), "{prefix}");
    let text = format!(
        "{prefix}{}",
        slots_after_prefix(&[
            ("average", "79"),
            ("lowest", "Batch A"),
            ("rule check", "true"),
            ("met / not met", "met")
        ])
    );
    assert!(fin.accepts(&text), "{text}\n{}", fin.render());
    runtime_accepts(&text);
    // The rule check's outcome is stated once, right before the first choice, either way — never skipped,
    // never anything but a truth value — and the verdict words are the ones the task's phrases give it.
    for (rule_check, verdict, accepted) in [
        ("false", "not met", true),
        ("false", "met", false),
        ("true", "not met", false),
        ("maybe", "not met", false),
    ] {
        let other = format!(
            "{prefix}{}",
            slots_after_prefix(&[
                ("average", "79"),
                ("lowest", "Batch A"),
                ("rule check", rule_check),
                ("met / not met", verdict)
            ])
        );
        assert_eq!(fin.accepts(&other), accepted, "{other}");
    }
    let skipped = format!(
        "{prefix}{}",
        slots_after_prefix(&[
            ("average", "79"),
            ("lowest", "Batch A"),
            ("met / not met", "met")
        ])
    );
    assert!(!fin.accepts(&skipped), "{skipped}");
    // Two choices: the outcome is stated once, before the first.
    let two = grammar::Inputs {
        answer_template: "Average <average>; limits <met / not met>; the permit <may / may not> be renewed.",
        ..i
    };
    let fin_two = grammar::guided_final(&two, &ids).unwrap();
    let prefix_two = grammar::guided_final_prefix(&two, &ids);
    let once = format!(
        "{prefix_two}{}",
        slots_after_prefix(&[
            ("average", "79"),
            ("rule check", "true"),
            ("met / not met", "met"),
            ("may / may not", "may")
        ])
    );
    let twice = format!(
        "{prefix_two}{}",
        slots_after_prefix(&[
            ("average", "79"),
            ("rule check", "true"),
            ("met / not met", "met"),
            ("rule check", "true"),
            ("may / may not", "may")
        ])
    );
    assert!(fin_two.accepts(&once), "{once}\n{}", fin_two.render());
    assert!(!fin_two.accepts(&twice), "{twice}");
    // The runtime writes the sentence: the template's fixed text with the model's values in place.
    let runtime::decision::Decision::Final(written) =
        runtime::decision::parse_decision(&text, &tool_names(), Some(TEMPLATE)).unwrap()
    else {
        panic!("a final")
    };
    assert_eq!(
        written.answer,
        "Average is 79; the lowest is Batch A. The rule is met."
    );
    // A template with no slots keeps the answer as text.
    let plain = grammar::Inputs {
        answer_template: "",
        ..i
    };
    assert!(grammar::guided_final_prefix(&plain, &ids).ends_with(r#""answer":""#));
}

#[test]
fn the_sentence_form_fills_the_template_in_place_and_the_catalogue_picks_each_models_form() {
    let cards = ToolRegistry::builtin().cards();
    let g = grounding(&["79", "72"], &["Batch A"], &["obs-a-1"]);
    let i = grammar::Inputs {
        answer_form: grammar::AnswerForm::Sentence,
        ..inputs(&cards, &g)
    };
    let ids = vec!["obs-a-1".to_string()];
    let prefix = grammar::guided_final_prefix(&i, &ids);
    assert!(prefix.ends_with(r#""answer":""#), "{prefix}");
    let fin = grammar::guided_final(&i, &ids).unwrap();
    let text = format!("{prefix}Average is 79; the lowest is Batch A. The rule is met.\"}}");
    assert!(fin.accepts(&text), "{text}\n{}", fin.render());
    runtime_accepts(&text);
    for wrong in [
        "Average is 80; the lowest is Batch A. The rule is met.",
        "Average is 79; the lowest is Batch A. The rule holds.",
    ] {
        assert!(!fin.accepts(&format!("{prefix}{wrong}\"}}")), "{wrong}");
    }
    let request = |form| {
        prompt::user_message(
            &request(Gap::Final {
                evidence_ids: ids.clone(),
                answer_template: TEMPLATE.into(),
            }),
            Mode::Guided,
            form,
        )
    };
    assert!(request(grammar::AnswerForm::Sentence).contains("Fill this template"));
    assert!(request(grammar::AnswerForm::Slots).contains("Give \"slots\""));
    // Each model's form is the catalogue's measured choice; a model it does not list gets slots.
    let form = |file: &str| grammar::AnswerForm::for_model(std::path::Path::new(file));
    assert_eq!(
        form("models/qwen2.5-coder-0.5b.gguf"),
        grammar::AnswerForm::Sentence
    );
    assert_eq!(
        form("models/qwen2.5-coder-1.5b.gguf"),
        grammar::AnswerForm::Slots
    );
    assert_eq!(form("/elsewhere/other.gguf"), grammar::AnswerForm::Slots);
}

#[test]
fn grammars_refuse_unseen_numbers_labels_and_verdicts() {
    let cards = ToolRegistry::builtin().cards();
    let g = grounding(
        &["0", "1", "2", "72", "78", "79.5", "79", "7"],
        &["North", "Plant 7"],
        &["obs-a-1"],
    );
    let i = inputs(&cards, &g);
    let calc = grammar::guided_tool(&i, "calculator", Some(ResultKind::Number)).unwrap();
    assert!(calc.accepts(&calculator_call("mean(72, 78)")));
    for unseen in [
        "mean(72, 77)",
        "(72 + 78) / 3",
        "7 + 5",
        "77",
        "72 + 780",
        "79.55 + 1",
        "72 >= 70",
    ] {
        assert!(!calc.accepts(&calculator_call(unseen)), "accepted {unseen}");
    }
    let check = grammar::guided_tool(&i, "calculator", Some(ResultKind::Boolean)).unwrap();
    assert!(check.accepts(&calculator_call("mean(72, 78) >= 72 and 79.5 <= 79")));
    assert!(
        !check.accepts(&calculator_call("mean(72, 78)")),
        "a rule check must compare"
    );
    let plot = grammar::guided_tool(&i, "plot", None).unwrap();
    let chart = |labels: &str| {
        format!(
            r#"{{"type":"action","tool":"plot","arguments":{{"labels":{labels},"values":[72,78],"title":"Plant 7","average":79.5}}}}"#
        )
    };
    assert!(
        plot.accepts(&chart(r#"["North","Plant 7"]"#)),
        "{}",
        plot.render()
    );
    assert!(
        !plot.accepts(&chart(r#"["North","South"]"#)),
        "unseen label"
    );
    let fin = grammar::guided_final(&i, &["obs-a-1".into()]).unwrap();
    let answer = |average: &str, lowest: &str, verdict: &str| {
        format!(
            "{}{}",
            grammar::guided_final_prefix(&i, &["obs-a-1".into()]),
            slots_after_prefix(&[
                ("average", average),
                ("lowest", lowest),
                (
                    "rule check",
                    if verdict == "met" { "true" } else { "false" }
                ),
                ("met / not met", verdict)
            ])
        )
    };
    assert!(fin.accepts(&answer("79.5", "Plant 7", "not met")));
    assert!(
        !fin.accepts(&answer("80", "Plant 7", "not met")),
        "unseen number"
    );
    assert!(
        !fin.accepts(&answer("79.5", "South", "not met")),
        "unseen label"
    );
    assert!(
        !fin.accepts(&answer("79.5", "North", "unmet")),
        "verdict outside the template"
    );
}

fn series(name: &str, rows: &[(&str, &str)]) -> runtime::policy::Series {
    runtime::policy::Series {
        name: name.into(),
        labels: rows.iter().map(|(l, _)| l.to_string()).collect(),
        values: rows.iter().map(|(_, v)| v.to_string()).collect(),
        rows: String::new(),
        unit: None,
    }
}

fn two_column_grounding() -> Grounding {
    let mut g = grounding(
        &["2.8", "3.4", "5.4", "4820", "3150", "3.5"],
        &["Seafront", "Millbrook", "Eastgate"],
        &["obs-a-1", "obs-b-2"],
    );
    g.series = vec![
        series("Loans", &[("Seafront", "4820"), ("Millbrook", "3150")]),
        series(
            "Arrears rate",
            &[
                ("Seafront", "2.8"),
                ("Millbrook", "3.4"),
                ("Eastgate", "5.4"),
            ],
        ),
    ];
    g.computed = vec!["3.8666666666666667".into(), "3.87".into(), "3.9".into()];
    g.computed_exact = vec!["3.8666666666666667".into()];
    g.numbers.extend(g.computed.clone());
    g
}

#[test]
fn aggregates_run_over_whole_observed_columns() {
    let cards = ToolRegistry::builtin().cards();
    let g = two_column_grounding();
    let i = inputs(&cards, &g);
    let calc = grammar::guided_tool(&i, "calculator", Some(ResultKind::Number)).unwrap();
    // Every function over every observed column: which one the step needs is the model's to choose.
    for ok in [
        "mean([Arrears rate])",
        "sum([Loans])",
        "max([Loans])",
        "count([Arrears rate])",
        // A rate the knowledge defines over totals: one aggregate over another, times a conversion factor.
        "sum([Arrears rate]) / sum([Loans])",
        "sum([Arrears rate]) / sum([Loans]) * 100",
        "mean([Loans]) / max([Loans]) * 1000",
    ] {
        accepts_a_valid_call(&calc, ok);
    }
    // One aggregate over one whole column, or one over another: no partial, reordered or mixed columns, no
    // chains, no number of the data's as a divisor or factor.
    for bad in [
        "sum([Loans]) / 4820",
        "sum([Loans]) * 100",
        "sum([Arrears rate]) / sum([Loans]) * 3.5",
        "sum([Arrears rate]) / sum([Loans]) / sum([Loans])",
        "100 * sum([Arrears rate]) / sum([Loans])",
        "mean(2.8, 3.4)",
        "mean(2.8, 3.4, 5.4, 4820)",
        "mean(3.4, 2.8, 5.4)",
        "max(4820)",
        "(2.8 + 3.4) * 3.5",
        "mean([Loans]) + mean([Arrears rate])",
        "mean([Staff])",
    ] {
        assert!(!calc.accepts(&calculator_call(bad)), "{bad}");
    }
    // A step that declares no result kind (older task files) takes a number, never a boolean: one aggregate.
    let open = grammar::guided_tool(&i, "calculator", None).unwrap();
    assert!(
        open.accepts(&calculator_call("mean([Arrears rate])"))
            && open.accepts(&calculator_call("sum([Loans])"))
    );
    assert!(
        !open.accepts(&calculator_call("mean([Arrears rate]) <= 3.5"))
            && !open.accepts(&calculator_call("mean([Arrears rate]) * 3.5"))
            && !open.accepts(&calculator_call("2.8 + 3.4"))
    );
}

#[test]
fn a_limit_on_a_column_in_a_unit_is_written_with_a_unit_of_its_dimension() {
    let cards = ToolRegistry::builtin().cards();
    // No observed column states a unit: a limit is a number only.
    let plain = two_column_grounding();
    let i = inputs(&cards, &plain);
    let check = grammar::guided_tool(&i, "calculator", Some(ResultKind::Boolean)).unwrap();
    assert!(check.accepts(&calculator_call("mean([Arrears rate]) <= 3.5")));
    assert!(!check.accepts(&calculator_call("mean([Arrears rate]) <= 3.5 %")));
    // `Arrears rate` in %: what its sum, mean, min or max is compared with, and the limit of a filter over its
    // rows, carry a grounded unit of a share (the model's choice: the calculator converts it); a count of its
    // rows, a ratio and the unit-less `Loans` keep bare numbers.
    let mut with_unit = two_column_grounding();
    with_unit.series[1].unit = Some("%".into());
    // Units the observations write with their numbers (grounded as numbers are), of any dimension.
    with_unit.units = ["%", "‰", "percent", "min", "per cent"]
        .map(String::from)
        .to_vec();
    let i = inputs(&cards, &with_unit);
    let check = grammar::guided_tool(&i, "calculator", Some(ResultKind::Boolean)).unwrap();
    for ok in [
        "mean([Arrears rate]) <= 3.5 %",
        "mean([Arrears rate]) <= 3.5 % and max([Arrears rate]) <= 5.4 ‰",
        "max([Arrears rate]) < 5.4 percent",
        "max([Arrears rate]) < 5.4%",
        "mean([Arrears rate]) / 4820 <= 3.5",
        "count([Arrears rate] > 3.5 %) <= 1",
        "count([Arrears rate] >= 5.4‰) <= 2 and mean([Arrears rate]) <= 3.5 %",
        "count([Loans] > 3150) <= 0",
        "count([Arrears rate]) >= 3.5",
        "mean([Loans]) >= 3.5 * 4820 / 100",
        "min([Loans]) > 3150",
        "sum([Arrears rate]) / sum([Loans]) <= 3.5",
    ] {
        accepts_a_valid_call(&check, ok);
        // And the calculator reads it as written.
        runtime::tools::calculator::parse(ok).unwrap_or_else(|e| panic!("{ok}: {e}"));
    }
    for bad in [
        "mean([Arrears rate]) <= 3.5",
        "mean([Arrears rate]) <= 3.5 min",
        "mean([Arrears rate]) <= 3.5 pct",
        "mean([Arrears rate]) <= 3.6 %",
        "mean([Arrears rate]) <= 3.5 * 2.8 %",
        "mean([Arrears rate]) <= 3.5 * 4820 / 100",
        "count([Arrears rate] > 3.5) <= 1",
        "count([Arrears rate] > 3.5 min) <= 1",
        "count([Loans] > 3150 %) <= 1",
        "count([Arrears rate]) <= 2.8 %",
        "max([Arrears rate]) < 5.4 per cent",
        "min([Loans]) > 3150 %",
    ] {
        assert!(!check.accepts(&calculator_call(bad)), "{bad}");
    }
}

#[test]
fn a_rule_check_is_the_models_comparison_of_column_aggregates_with_limits_in_grounded_numbers() {
    let cards = ToolRegistry::builtin().cards();
    let g = two_column_grounding();
    let i = inputs(&cards, &g);
    let check = grammar::guided_tool(&i, "calculator", Some(ResultKind::Boolean)).unwrap();
    // Any comparison, any order of terms, either direction, any column, joined by and / or; a ratio of totals;
    // a share of a stated quantity; a count of rows under a comparison: what the rule says is the model's
    // reading, checked by the gate afterwards.
    for ok in [
        "mean([Arrears rate]) <= 3.5 and max([Arrears rate]) <= 5.4",
        "max([Arrears rate]) <= 5.4 and mean([Arrears rate]) <= 3.5",
        "mean([Arrears rate]) >= 3.5",
        "min([Loans]) > 3150 or mean([Arrears rate]) < 2.8",
        "sum([Arrears rate]) / sum([Loans]) <= 3.5",
        "mean([Arrears rate]) <= 3.5 * 2.8",
        "mean([Arrears rate]) * 2.8 >= 3.5",
        "mean([Arrears rate]) <= -3.5",
        "count([Arrears rate] > 3.5) <= 1",
        "count([Arrears rate] > 3.5) == 0",
        "mean([Arrears rate]) <= 3.5 * 60",
        "max([Loans]) <= 4820 / 1000",
        // A percentage of a stated quantity: the share, the quantity, then a factor (`85 * 320 / 100`).
        "mean([Loans]) >= 3.5 * 4820 / 100",
        "mean([Arrears rate]) <= 3.5 and count([Loans] < -3150) < 3",
    ] {
        accepts_a_valid_call(&check, ok);
    }
    for bad in [
        // A number no observation holds, a column nobody observed, values spelled out, no comparison.
        "mean([Arrears rate]) <= 3.6",
        "mean([Staff]) <= 3.5",
        "mean(2.8, 3.4, 5.4) <= 3.5",
        "mean([Arrears rate])",
        "mean([Arrears rate]) <= 3.5 and",
        // A limit is written in numbers: a column set against a column states none.
        "mean([Arrears rate]) <= max([Arrears rate])",
        "max([Arrears rate]) <= 3.5 * max([Arrears rate])",
        "3.5 >= mean([Arrears rate])",
        // A row count under a comparison with a number no observation holds, or outside a count; a count of
        // rows compared with anything but a number of rows (0 to the longest column's 3).
        "count([Arrears rate] > 3.6) <= 1",
        "mean([Arrears rate] > 3.5) <= 2.8",
        "count([Arrears rate] > 3.5) <= 2.8",
        "count([Arrears rate] > 3.5) <= 4",
        "count([Arrears rate] > 3.5) <= 3.5 * 60",
        // A factor converts a limit; it is no limit of its own, nor a third operand of ungrounded numbers.
        "mean([Arrears rate]) <= 60",
        "mean([Loans]) >= 3.5 * 4820 / 3.6",
        // A limit is stated by the data or the task: the mean just computed (3.87, its rounding 3.9) is no
        // limit to check that mean, or a count's filter, against.
        "mean([Arrears rate]) <= 3.87",
        "mean([Arrears rate]) <= 3.9 and max([Arrears rate]) <= 5.4",
        "count([Arrears rate] > 3.87) <= 1",
        "mean([Loans]) >= 3.5 * 3.87",
    ] {
        assert!(!check.accepts(&calculator_call(bad)), "{bad}");
    }
}

#[test]
fn every_verdict_option_and_every_grounded_value_is_open_to_the_answer() {
    let cards = ToolRegistry::builtin().cards();
    let g = two_column_grounding();
    let mut i = inputs(&cards, &g);
    i.answer_template = "Average <average>%; highest <highest branch>; limits <met / not met>.";
    let ids = vec!["obs-a-1".to_string(), "obs-b-2".to_string()];
    let fin = grammar::guided_final(&i, &ids).unwrap();
    let answer = |average: &str, highest: &str, verdict: &str| {
        format!(
            "{}{}",
            grammar::guided_final_prefix(&i, &ids),
            slots_after_prefix(&[
                ("average", average),
                ("highest branch", highest),
                (
                    "rule check",
                    if verdict == "met" { "true" } else { "false" }
                ),
                ("met / not met", verdict)
            ])
        )
    };
    // The grammar does not know which is right: each of these is the model's to write and the gate's to check.
    for (average, highest, verdict) in [
        ("3.87", "Eastgate", "not met"),
        ("3.87", "Eastgate", "met"),
        ("3.5", "Seafront", "met"),
        ("3.87", "Eastgate and Seafront (tie)", "not met"),
        ("4820", "2.8", "met"),
    ] {
        let text = answer(average, highest, verdict);
        assert!(fin.accepts(&text), "{text}\n{}", fin.render());
        runtime_accepts_for(&text, i.answer_template);
    }
    for (average, highest, verdict) in [
        ("3.6", "Eastgate", "not met"),
        ("3.87", "Westgate", "not met"),
        ("3.87", "Eastgate", "exceeded"),
        // A value slot holds one value; a note is words only, never a second value.
        ("3.87, 2.8", "Eastgate", "not met"),
        ("3.87", "Eastgate (3.5, Seafront)", "not met"),
        ("3.87", "Eastgate (and) Seafront)", "not met"),
    ] {
        let text = answer(average, highest, verdict);
        assert!(!fin.accepts(&text), "{text}");
    }
}

#[test]
fn a_slot_states_a_negative_value_with_its_sign_and_never_without_it() {
    let cards = ToolRegistry::builtin().cards();
    let g = grounding(&["1.4", "-5.2", "-3.3", "3"], &["Old Town", "Quay"], &[]);
    let mut i = inputs(&cards, &g);
    i.answer_template = "The average change was <average change>%, lowest at <lowest site>.";
    let ids = vec!["obs-knowledge_search-1".to_string()];
    let fin = grammar::guided_final(&i, &ids).unwrap();
    let answer = |average: &str| {
        format!(
            "{}{}",
            grammar::guided_final_prefix(&i, &ids),
            slots_after_prefix(&[("average change", average), ("lowest site", "Quay")])
        )
    };
    for stated in ["-3.3", "1.4", "-5.2", "3"] {
        let text = answer(stated);
        assert!(fin.accepts(&text), "{text}\n{}", fin.render());
        runtime_accepts_for(&text, i.answer_template);
    }
    // Only -3.3 and -5.2 are grounded: without its sign the number is one no observation holds, which the
    // claims gate refuses; the grammar must not offer what the gate refuses.
    for unsigned in ["3.3", "5.2", "-1.4", "-3"] {
        assert!(!fin.accepts(&answer(unsigned)), "{unsigned}");
    }
}

#[test]
fn a_chart_draws_a_whole_observed_column_by_reference_with_a_computed_line() {
    let cards = ToolRegistry::builtin().cards();
    let g = two_column_grounding();
    let i = inputs(&cards, &g);
    let plot = grammar::guided_tool(&i, "plot", None).unwrap();
    let chart = |column: &str, average: &str| {
        format!(
            r#"{{"type":"action","tool":"plot","arguments":{{"column":"{column}","title":"Arrears","average":{average}}}}}"#
        )
    };
    let whole = chart("[Arrears rate]", "3.8666666666666667");
    assert!(plot.accepts(&whole), "{}", plot.render());
    runtime_accepts(&whole);
    // Which column is the model's choice.
    assert!(plot.accepts(&chart("[Loans]", "3.8666666666666667")));
    // A chart is data: its line is the computed value itself, not a rounding an answer may print.
    for rounded in ["3.87", "3.9", "3.5"] {
        assert!(
            !plot.accepts(&chart("[Arrears rate]", rounded)),
            "a line {rounded}"
        );
    }
    assert!(!plot.accepts(&chart("[Staff]", "3.8666666666666667")));
    assert_eq!(
        grammar::guided_tool_prefix(&i, "plot").unwrap(),
        r#"{"type":"action","tool":"plot","arguments":{"column":""#
    );
    let listed = r#"{"type":"action","tool":"plot","arguments":{"labels":["Seafront","Millbrook","Eastgate"],"values":[2.8,3.4,5.4],"title":"Arrears","average":3.87}}"#;
    assert!(
        !plot.accepts(listed),
        "a column observed is charted by reference, not spelled out"
    );
}

#[test]
fn free_grammar_offers_every_tool_and_cites_only_successful_observations() {
    let cards = ToolRegistry::builtin().cards();
    let g = grounding(
        &["72", "78"],
        &["North"],
        &["obs-knowledge_search-1", "obs-calculator-2"],
    );
    let ids = g.evidence_ids.clone();
    let free = grammar::free(
        &inputs(&cards, &g),
        runtime::decision::decision_schema(),
        Some(&ids),
    )
    .unwrap();
    for text in [
        r#"{"type":"action","tool":"knowledge_search","arguments":{"query":"wait times"}}"#,
        r#"{"type":"action","tool":"calculator","arguments":{"expression":"72 <= 78"}}"#,
        r#"{"type":"final","evidence_ids":["obs-knowledge_search-1","obs-calculator-2"],"slots":{"average":"72","lowest":"North","rule check":"true","met / not met":"met"}}"#,
    ] {
        assert!(free.accepts(text), "{text}");
        runtime_accepts(text);
    }
    assert!(!free.accepts(r#"{"type":"final","evidence_ids":["obs-plot-9"],"slots":{"average":"72","lowest":"North","rule check":"true","met / not met":"met"}}"#));
    // A template with slots is filled slot by slot: the sentence is the runtime's to write.
    assert!(!free.accepts(r#"{"type":"final","evidence_ids":["obs-knowledge_search-1","obs-calculator-2"],"answer":"Average is 72; the lowest is North. The rule is met."}"#));
    // Before the gate could accept an answer, no final is offered at all.
    let before = grammar::free(
        &inputs(&cards, &g),
        runtime::decision::decision_schema(),
        None,
    )
    .unwrap();
    assert!(!before.accepts(r#"{"type":"final","evidence_ids":["obs-knowledge_search-1","obs-calculator-2"],"answer":"Average is 72; the lowest is North. The rule is met."}"#));
    // With nothing observed, only a search can run: no calculation over the task's own numbers, no chart.
    let none = grounding(&[], &[], &[]);
    let first = grammar::free(
        &inputs(&cards, &none),
        runtime::decision::decision_schema(),
        None,
    )
    .unwrap();
    assert!(
        !first.accepts(r#"{"type":"final","evidence_ids":["obs-a-1"],"answer":"x"}"#),
        "nothing to cite yet"
    );
    assert!(!first.accepts_prefix(r#"{"type":"action","tool":"calculator""#));
    assert!(!first.accepts_prefix(r#"{"type":"action","tool":"plot""#));
    assert!(first.accepts_prefix(r#"{"type":"action","tool":"knowledge_search""#));
    assert!(matches!(
        grammar::guided_tool(&inputs(&cards, &g), "shell", None),
        Err(grammar::GrammarError::UnknownTool(_))
    ));
}

#[test]
fn repeat_prefixes_are_what_the_grammar_would_write() {
    let cards = ToolRegistry::builtin().cards();
    let mut req = request(Gap::Tool {
        tool: "calculator".into(),
        hint: "average them".into(),
        result: None,
    });
    req.succeeded_actions = vec![
        json!({"tool": "knowledge_search", "arguments": {"query": "wait times", "top_k": 3}}),
        json!({"tool": "calculator", "arguments": {"expression": "72 <= 78"}}),
    ];
    let prefixes = forge_decoding::policy::repeat_prefixes(&req);
    assert_eq!(
        prefixes,
        vec![
            r#"{"type":"action","tool":"knowledge_search","arguments":{"query":"wait times""#
                .to_string(),
            r#"{"type":"action","tool":"calculator","arguments":{"expression":"72 <= 78""#
                .to_string(),
        ]
    );
    let g = grounding(&["72", "78"], &[], &["obs-a-1"]);
    let free = grammar::free(
        &inputs(&cards, &g),
        runtime::decision::decision_schema(),
        None,
    )
    .unwrap();
    for p in &prefixes {
        assert!(free.accepts_prefix(p), "{p}");
    }
}

#[test]
fn json_scanner_stops_after_the_first_top_level_value() {
    let mut s = JsonScanner::default();
    let text = r#"{"a":"}{\"]","b":[1,{"c":2}]}"#;
    for (i, b) in text.bytes().enumerate() {
        assert!(!s.complete(), "complete too early at byte {i}");
        s.feed(b);
    }
    assert!(s.complete());
}

fn request(gap: Gap) -> DecisionRequest {
    DecisionRequest {
        step: 2,
        attempt: 0,
        task: "Decide the release.".into(),
        tools: ToolRegistry::builtin().cards(),
        state: json!({
            "budget": {"steps_left": 10, "tool_calls_left": 9, "seconds_left": 250},
            "feedback": [],
            "observations": [
                {"id": "obs-knowledge_search-1", "tool": "knowledge_search", "ok": true,
                 "result": {"citations": [{"text": "long"}], "summary": "Task Success: Batch A=72"}},
                {"id": "obs-calculator-2", "tool": "calculator", "ok": false,
                 "error": {"code": "forbidden_token", "message": "no names"}, "attempted_arguments": {"expression": "sum(a)"}}
            ]
        }),
        gap,
        missing: vec!["calculator: average them".into()],
        grounding: Grounding::default(),
        answer_template: "Average is <average>.".into(),
        verdict_phrases: Default::default(),
        succeeded_actions: Vec::new(),
        repair: None,
        max_new_tokens: 256,
    }
}

#[test]
fn prompts_put_stable_text_first_and_follow_the_mode() {
    let cards = ToolRegistry::builtin().cards();
    let system = prompt::system_prompt(&cards);
    for name in tool_names() {
        assert!(system.contains(&format!("- {name}(")), "{system}");
    }
    assert!(system.contains("top_k?: integer 1..4"), "{system}");

    let guided = prompt::user_message(
        &request(Gap::Tool {
            tool: "calculator".into(),
            hint: "average them".into(),
            result: None,
        }),
        Mode::Guided,
        grammar::AnswerForm::Slots,
    );
    let obs = guided.find("obs-knowledge_search-1").unwrap();
    let budget = guided
        .find("budget left: steps 10, tool calls 9\n")
        .expect(&guided);
    assert!(
        !guided.contains("seconds"),
        "only steps and tool calls are shown: {guided}"
    );
    assert!(
        guided
            .contains("- obs-knowledge_search-1 (knowledge_search) ok: Task Success: Batch A=72\n"),
        "{guided}"
    );
    assert!(
        !guided.contains("citations") && !guided.contains("long"),
        "bulky citation text is left out: {guided}"
    );
    assert!(
        guided.contains("- obs-calculator-2 (calculator) failed: forbidden_token: no names (arguments were {\"expression\":\"sum(a)\"})\n"),
        "{guided}"
    );
    assert!(
        obs < budget,
        "observations must precede the budget (KV reuse): {guided}"
    );
    let next = guided
        .find("Next: call calculator to average them.\ncalculator: Evaluate")
        .expect(&guided);
    assert!(next > budget, "the step-specific part comes last: {guided}");

    let fin = prompt::user_message(
        &request(Gap::Final {
            evidence_ids: vec!["obs-1".into()],
            answer_template: "Average is <average>.".into(),
        }),
        Mode::Guided,
        grammar::AnswerForm::Slots,
    );
    assert!(
        fin.contains("Average is <average>.") && fin.contains("obs-1"),
        "{fin}"
    );

    // Free mode is not told which tool to call next, only what the final-answer gate still needs.
    let free = prompt::user_message(
        &request(Gap::Tool {
            tool: "calculator".into(),
            hint: "average them".into(),
            result: None,
        }),
        Mode::Free,
        grammar::AnswerForm::Slots,
    );
    assert!(!free.contains("Next: call"), "{free}");
    assert!(
        free.contains(
            "Evidence the final answer still needs, in order:\n1. calculator: average them\n"
        ),
        "{free}"
    );
    assert!(
        free.contains("Next: one tool call that produces item 1"),
        "{free}"
    );
    let _: Value = json!(null);
}

#[test]
fn a_search_query_is_the_models_own_text_with_grounded_digits() {
    let cards = ToolRegistry::builtin().cards();
    let g = two_column_grounding();
    let query = |q: &str| {
        format!(r#"{{"type":"action","tool":"knowledge_search","arguments":{{"query":"{q}"}}}}"#)
    };
    let i = inputs(&cards, &g);
    let search = grammar::guided_tool(&i, "knowledge_search", None).unwrap();
    for ok in [
        "arrears rate",
        "branch limits",
        "portfolio quality rules 3.5",
        "查找每家门店的退货率",
    ] {
        assert!(search.accepts(&query(ok)), "{ok}");
        runtime_accepts(&query(ok));
    }
    // Digits only as grounded numbers; never empty; never past the cap.
    let long = "a".repeat(Caps::default().string_chars as usize + 1);
    for bad in ["", "rate 17", long.as_str()] {
        assert!(!search.accepts(&query(bad)), "{bad:?}");
    }
}

#[test]
fn a_guided_prefix_carries_the_runtimes_decision_summary() {
    let cards = ToolRegistry::builtin().cards();
    let g = two_column_grounding();
    let gap = Gap::Tool {
        tool: "calculator".into(),
        hint: "the step's words never reach the summary".into(),
        result: Some(ResultKind::Boolean),
    };
    let summary = gap.summary();
    assert_eq!(summary, "run calculator for a boolean result");
    let i = grammar::Inputs {
        decision_summary: Some(&summary),
        ..inputs(&cards, &g)
    };
    let prefix = grammar::guided_tool_prefix(&i, "calculator").unwrap();
    assert_eq!(
        prefix,
        r#"{"type":"action","decision_summary":"run calculator for a boolean result","tool":"calculator","arguments":{"expression":""#
    );
    let check = grammar::guided_tool(&i, "calculator", Some(ResultKind::Boolean)).unwrap();
    let text = format!("{prefix}mean([Loans]) >= 3150\"}}}}");
    assert!(check.accepts(&text), "{text}");
    runtime_accepts(&text);
    let ids = vec!["obs-a-1".to_string()];
    let summary = Gap::Final {
        evidence_ids: ids.clone(),
        answer_template: TEMPLATE.into(),
    }
    .summary();
    let i = grammar::Inputs {
        decision_summary: Some(&summary),
        ..inputs(&cards, &g)
    };
    let prefix = grammar::guided_final_prefix(&i, &ids);
    assert!(prefix.starts_with(r#"{"type":"final","decision_summary":"answer citing obs-a-1","#));
    let text = format!(
        "{prefix}{}",
        slots_after_prefix(&[
            ("average", "2.8"),
            ("lowest", "Seafront"),
            ("rule check", "true"),
            ("met / not met", "met")
        ])
    );
    assert!(grammar::guided_final(&i, &ids).unwrap().accepts(&text));
    runtime_accepts(&text);
}
