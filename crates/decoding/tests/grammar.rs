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

fn tool_names() -> Vec<&'static str> {
    ToolRegistry::builtin().tool_names()
}

fn grounding(numbers: &[&str], labels: &[&str], ids: &[&str]) -> Grounding {
    Grounding {
        numbers: numbers.iter().map(|s| s.to_string()).collect(),
        counts: Vec::new(),
        labels: labels.iter().map(|s| s.to_string()).collect(),
        evidence_ids: ids.iter().map(|s| s.to_string()).collect(),
        series: Vec::new(),
        computed: Vec::new(),
        computed_exact: Vec::new(),
        rule_terms: Vec::new(),
        verdict: Vec::new(),
        verdict_refused: Vec::new(),
        answer_offers: Vec::new(),
    }
}

const TEMPLATE: &str = "Average is <average>; the lowest is <lowest>. The rule is <met / not met>.";

fn inputs<'a>(cards: &'a [runtime::policy::ToolCard], g: &'a Grounding) -> grammar::Inputs<'a> {
    grammar::Inputs {
        tools: cards,
        grounding: g,
        answer_template: TEMPLATE,
        focus: "",
        caps: Caps::default(),
        done: &[],
    }
}

/// A decision the grammar accepts must also be one the runtime accepts (parse + registry validation).
fn runtime_accepts(text: &str) {
    let decision = runtime::decision::parse_decision(text, &tool_names())
        .unwrap_or_else(|e| panic!("{text}: {e}"));
    if let runtime::decision::Decision::Action(a) = decision {
        ToolRegistry::builtin()
            .validate_arguments(&a.tool, &a.arguments)
            .unwrap_or_else(|e| panic!("{text}: {e:?}"));
    }
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
    let text = format!(
        "{}Average is 79; the lowest is Batch A. The rule is met.\"}}",
        grammar::guided_final_prefix(&ids)
    );
    assert!(fin.accepts(&text), "{text}\n{}", fin.render());
    runtime_accepts(&text);
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
    let expr = |e: &str| {
        format!(r#"{{"type":"action","tool":"calculator","arguments":{{"expression":"{e}"}}}}"#)
    };
    assert!(calc.accepts(&expr("mean(72, 78)")));
    for unseen in [
        "mean(72, 77)",
        "(72 + 78) / 3",
        "7 + 5",
        "77",
        "72 + 780",
        "79.55 + 1",
        "72 >= 70",
    ] {
        assert!(!calc.accepts(&expr(unseen)), "accepted {unseen}");
    }
    let check = grammar::guided_tool(&i, "calculator", Some(ResultKind::Boolean)).unwrap();
    assert!(check.accepts(&expr("mean(72, 78) >= 72 and 79.5 <= 79")));
    assert!(
        !check.accepts(&expr("mean(72, 78)")),
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
    let answer = |a: &str| {
        format!(
            "{}{a}\"}}",
            grammar::guided_final_prefix(&["obs-a-1".into()])
        )
    };
    assert!(fin.accepts(&answer(
        "Average is 79.5; the lowest is Plant 7. The rule is not met."
    )));
    assert!(
        !fin.accepts(&answer(
            "Average is 80; the lowest is Plant 7. The rule is not met."
        )),
        "unseen number"
    );
    assert!(
        !fin.accepts(&answer(
            "Average is 79.5; the lowest is South. The rule is not met."
        )),
        "unseen label"
    );
    assert!(
        !fin.accepts(&answer(
            "Average is 79.5; the lowest is North. The rule is unmet."
        )),
        "verdict outside the template"
    );
}

fn series(name: &str, rows: &[(&str, &str)]) -> runtime::policy::Series {
    runtime::policy::Series {
        name: name.into(),
        labels: rows.iter().map(|(l, _)| l.to_string()).collect(),
        values: rows.iter().map(|(_, v)| v.to_string()).collect(),
        rows: String::new(),
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
    let expr = |e: &str| {
        format!(r#"{{"type":"action","tool":"calculator","arguments":{{"expression":"{e}"}}}}"#)
    };
    let calc = grammar::guided_tool(&i, "calculator", Some(ResultKind::Number)).unwrap();
    for ok in ["mean([Arrears rate])", "sum([Loans])"] {
        assert!(calc.accepts(&expr(ok)), "{ok}");
    }
    // One aggregate over one whole column: no partial, reordered or mixed columns, no chains.
    for bad in [
        "mean(2.8, 3.4)",
        "mean(2.8, 3.4, 5.4, 4820)",
        "mean(3.4, 2.8, 5.4)",
        "max(4820)",
        "(2.8 + 3.4) * 3.5",
        "mean([Loans]) + mean([Arrears rate])",
    ] {
        assert!(!calc.accepts(&expr(bad)), "{bad}");
    }
    let check = grammar::guided_tool(&i, "calculator", Some(ResultKind::Boolean)).unwrap();
    assert!(check.accepts(&expr(
        "mean(2.8, 3.4, 5.4) <= 3.5 and max(2.8, 3.4, 5.4) <= 5.4"
    )));
    // A step that declares no result kind (older task files): a comparison or one aggregate, no chains.
    let open = grammar::guided_tool(&i, "calculator", None).unwrap();
    assert!(
        open.accepts(&expr("mean([Arrears rate])"))
            && open.accepts(&expr("mean([Arrears rate]) <= 3.5"))
    );
    assert!(
        !open.accepts(&expr("mean([Arrears rate]) * 3.5")) && !open.accepts(&expr("2.8 + 3.4"))
    );
    assert!(
        !open.accepts(&expr("mean([Arrears rate]) <= 3.5 and 2.8 <= 3.4")),
        "no chains of comparisons either"
    );
}

#[test]
fn a_number_step_that_names_its_aggregate_gets_that_one() {
    let cards = ToolRegistry::builtin().cards();
    let g = two_column_grounding();
    let expr = |e: &str| {
        format!(r#"{{"type":"action","tool":"calculator","arguments":{{"expression":"{e}"}}}}"#)
    };
    let step = |focus: &'static str| {
        let i = grammar::Inputs {
            focus,
            ..inputs(&cards, &g)
        };
        grammar::guided_tool(&i, "calculator", Some(ResultKind::Number)).unwrap()
    };
    let average = step("compute the average arrears rate of all branches");
    assert!(average.accepts(&expr("mean([Arrears rate])")));
    assert!(
        !average.accepts(&expr("sum([Arrears rate])"))
            && !average.accepts(&expr("max([Arrears rate])"))
    );
    let total = step("work out the total loans");
    assert!(total.accepts(&expr("sum([Loans])")) && !total.accepts(&expr("mean([Loans])")));
    // Two aggregates named, or none: every function stays open.
    let both = step("the total arrears rate against the average");
    assert!(
        both.accepts(&expr("sum([Arrears rate])")) && both.accepts(&expr("mean([Arrears rate])"))
    );
    let none = step("compute the figure");
    assert!(none.accepts(&expr("count([Arrears rate])")) && none.accepts(&expr("sum([Loans])")));
    // The rule check is not narrowed: a rule compares an average and a row.
    let i = grammar::Inputs {
        focus: "check that the average is at most 3.5 and the highest at most 5.4",
        ..inputs(&cards, &g)
    };
    let check = grammar::guided_tool(&i, "calculator", Some(ResultKind::Boolean)).unwrap();
    assert!(check.accepts(&expr(
        "mean(2.8, 3.4, 5.4) <= 3.5 and max(2.8, 3.4, 5.4) <= 5.4"
    )));
}

#[test]
fn a_rule_check_over_understood_rules_is_those_rules_in_any_order() {
    let cards = ToolRegistry::builtin().cards();
    let mut g = two_column_grounding();
    g.rule_terms = vec![
        "mean(2.8, 3.4, 5.4) <= 3.5".into(),
        "max(2.8, 3.4, 5.4) <= 5".into(),
    ];
    let i = inputs(&cards, &g);
    let expr = |e: &str| {
        format!(r#"{{"type":"action","tool":"calculator","arguments":{{"expression":"{e}"}}}}"#)
    };
    let check = grammar::guided_tool(&i, "calculator", Some(ResultKind::Boolean)).unwrap();
    for ok in [
        "mean(2.8, 3.4, 5.4) <= 3.5 and max(2.8, 3.4, 5.4) <= 5",
        "max(2.8, 3.4, 5.4) <= 5 and mean(2.8, 3.4, 5.4) <= 3.5",
    ] {
        assert!(check.accepts(&expr(ok)), "{ok}");
        runtime_accepts(&expr(ok));
    }
    for bad in [
        "mean([Arrears rate]) <= 3.5",
        "mean(2.8, 3.4, 5.4) >= 3.5 and max(2.8, 3.4, 5.4) <= 5",
        "mean(2.8, 3.4, 5.4) <= 5 and max(2.8, 3.4, 5.4) <= 3.5",
        "mean(4820, 3150) <= 3.5 and max(2.8, 3.4, 5.4) <= 5",
    ] {
        assert!(!check.accepts(&expr(bad)), "{bad}");
    }
}

#[test]
fn once_the_rule_check_decides_the_verdict_the_answer_can_only_report_it() {
    let cards = ToolRegistry::builtin().cards();
    let mut g = grounding(&["72", "79"], &["North"], &["obs-a-1"]);
    let ids = vec!["obs-a-1".to_string()];
    let answer = |a: &str| format!("{}{a}\"}}", grammar::guided_final_prefix(&ids));
    let open = grammar::guided_final(&inputs(&cards, &g), &ids).unwrap();
    for verdict in ["met", "not met"] {
        assert!(
            open.accepts(&answer(&format!(
                "Average is 79; the lowest is North. The rule is {verdict}."
            ))),
            "{verdict}"
        );
    }
    g.verdict = vec!["not met".into()];
    g.verdict_refused = vec!["met".into()];
    // The runtime's answer plan offers only the phrase of the verdict its rule reading established.
    g.answer_offers = vec![vec![], vec![], vec!["not met".into()]];
    let decided = grammar::guided_final(&inputs(&cards, &g), &ids).unwrap();
    assert!(decided.accepts(&answer(
        "Average is 79; the lowest is North. The rule is not met."
    )));
    assert!(
        !decided.accepts(&answer(
            "Average is 79; the lowest is North. The rule is met."
        )),
        "the rule check says not met"
    );
}

#[test]
fn a_step_that_names_a_column_draws_on_that_column_only() {
    let cards = ToolRegistry::builtin().cards();
    let g = two_column_grounding();
    let mut i = inputs(&cards, &g);
    i.focus = "compute the average arrears rate of all branches";
    let expr = |e: &str| {
        format!(r#"{{"type":"action","tool":"calculator","arguments":{{"expression":"{e}"}}}}"#)
    };
    let calc = grammar::guided_tool(&i, "calculator", Some(ResultKind::Number)).unwrap();
    assert!(calc.accepts(&expr("mean([Arrears rate])")));
    assert!(
        !calc.accepts(&expr("mean([Loans])")),
        "the step names the arrears rate column"
    );
    // The chart draws that column whole, by reference (the same few tokens for 3 rows or 200); its line is a
    // computed value.
    i.focus = "chart each branch's arrears rate with the average as a line";
    let plot = grammar::guided_tool(&i, "plot", None).unwrap();
    let chart = |column: &str, average: &str| {
        format!(
            r#"{{"type":"action","tool":"plot","arguments":{{"column":"{column}","title":"Arrears","average":{average}}}}}"#
        )
    };
    let whole = chart("[Arrears rate]", "3.8666666666666667");
    assert!(plot.accepts(&whole), "{}", plot.render());
    runtime_accepts(&whole);
    // A chart is data: its line is the computed value itself, not a rounding an answer may print.
    for rounded in ["3.87", "3.9"] {
        assert!(
            !plot.accepts(&chart("[Arrears rate]", rounded)),
            "a rounded line {rounded}"
        );
    }
    assert_eq!(
        grammar::guided_tool_prefix(&i, "plot").unwrap(),
        r#"{"type":"action","tool":"plot","arguments":{"column":""#
    );
    assert!(
        !plot.accepts(&chart("[Loans]", "3.8666666666666667")),
        "another column"
    );
    assert!(
        !plot.accepts(&chart("[Arrears rate]", "3.5")),
        "a line that was not computed"
    );
    let listed = r#"{"type":"action","tool":"plot","arguments":{"labels":["Seafront","Millbrook","Eastgate"],"values":[2.8,3.4,5.4],"title":"Arrears","average":3.87}}"#;
    assert!(
        !plot.accepts(listed),
        "a column observed is charted by reference, not spelled out"
    );
    // The answer's slots: the average is a computed value, the highest row is that column's highest row.
    i.focus = "Look up the arrears rate of every branch and decide whether the limits hold.";
    i.answer_template = "Average <average>%; highest <highest branch>; limits <met / not met>.";
    // The runtime's answer plan: the mean of the column the task names, and its highest row.
    let mut g2 = g.clone();
    g2.answer_offers = vec![
        vec!["3.87".into(), "3.9".into()],
        vec!["Eastgate".into()],
        vec![],
    ];
    i.grounding = &g2;
    let ids = vec!["obs-a-1".to_string(), "obs-b-2".to_string()];
    let fin = grammar::guided_final(&i, &ids).unwrap();
    let answer = |a: &str| format!("{}{a}\"}}", grammar::guided_final_prefix(&ids));
    assert!(
        fin.accepts(&answer("Average 3.87%; highest Eastgate; limits not met.")),
        "{}",
        fin.render()
    );
    assert!(
        !fin.accepts(&answer("Average 3.5%; highest Eastgate; limits not met.")),
        "a rule value is not the average"
    );
    assert!(
        !fin.accepts(&answer("Average 3.87%; highest Seafront; limits not met.")),
        "not the highest row"
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
        r#"{"type":"final","evidence_ids":["obs-knowledge_search-1","obs-calculator-2"],"answer":"Average is 72; the lowest is North. The rule is met."}"#,
    ] {
        assert!(free.accepts(text), "{text}");
        runtime_accepts(text);
    }
    assert!(!free.accepts(r#"{"type":"final","evidence_ids":["obs-plot-9"],"answer":"Average is 72; the lowest is North. The rule is met."}"#));
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
fn a_search_query_is_written_in_the_tasks_own_words() {
    let cards = ToolRegistry::builtin().cards();
    let g = two_column_grounding();
    let query = |q: &str| {
        format!(r#"{{"type":"action","tool":"knowledge_search","arguments":{{"query":"{q}"}}}}"#)
    };
    let i = grammar::Inputs {
        focus: "find the arrears rate of each branch and the portfolio quality limits",
        ..inputs(&cards, &g)
    };
    let search = grammar::guided_tool(&i, "knowledge_search", None).unwrap();
    for ok in [
        "arrears rate",
        "arrears rate branch portfolio quality limits",
        "branch",
        "rate limits",
    ] {
        assert!(search.accepts(&query(ok)), "{ok}");
        runtime_accepts(&query(ok));
    }
    // Each word at most once, in the hint's order: a query cannot pad itself by repeating a word.
    for bad in [
        "",
        "Seafront loans",
        "arrears  rate",
        "the",
        "arrears rate zzz",
        "rate rate",
        "branch branch branch",
        "limits arrears",
    ] {
        assert!(!search.accepts(&query(bad)), "{bad:?}");
    }
    // Chinese: the hint's clauses are its words.
    let zh = grammar::Inputs {
        focus: "查找每家门店的退货率和退货率考核规则",
        ..inputs(&cards, &g)
    };
    let search = grammar::guided_tool(&zh, "knowledge_search", None).unwrap();
    assert!(search.accepts(&query("查找每家门店的退货率和退货率考核规则")));
}

#[test]
fn a_value_slot_after_an_extreme_slot_offers_only_that_rows_value() {
    // Shape of a real t=0.7 failure: "the lowest batch is Batch C with Routing Accuracy 70", where 70 is
    // the rule's minimum (grounded, so an open slot allowed it) and Batch C's value is 67.
    let cards = ToolRegistry::builtin().cards();
    let mut g = grounding(
        &["82", "74", "67", "88", "70", "80", "78"],
        &["Batch A", "Batch B", "Batch C", "Batch D"],
        &["obs-a-1"],
    );
    g.series = vec![series(
        "Routing Accuracy",
        &[
            ("Batch A", "82"),
            ("Batch B", "74"),
            ("Batch C", "67"),
            ("Batch D", "88"),
        ],
    )];
    g.computed = vec!["77.75".into(), "77.8".into(), "78".into()];
    g.computed_exact = vec!["77.75".into()];
    let template = "Average is <average>; the lowest batch is <lowest batch> with Routing Accuracy <its value>.";
    // The runtime's answer plan (claims::answer_offers) for that template over this column.
    g.answer_offers = vec![vec!["78".into()], vec!["Batch C".into()], vec!["67".into()]];
    let i = grammar::Inputs {
        answer_template: template,
        ..inputs(&cards, &g)
    };
    let ids = vec!["obs-a-1".to_string()];
    let fin = grammar::guided_final(&i, &ids).unwrap();
    let answer = |value: &str| {
        format!(
            "{}Average is 78; the lowest batch is Batch C with Routing Accuracy {value}.\"}}",
            grammar::guided_final_prefix(&ids)
        )
    };
    assert!(fin.accepts(&answer("67")), "{}", fin.render());
    runtime_accepts(&answer("67"));
    for wrong in ["70", "82", "88", "78"] {
        assert!(!fin.accepts(&answer(wrong)), "accepted {wrong}");
    }
    // "Highest" names the other end, and its value follows it.
    g.answer_offers = vec![vec!["Batch D".into()], vec!["88".into()]];
    let i = grammar::Inputs {
        answer_template: "The top is <highest batch> at <its value>.",
        ..inputs(&cards, &g)
    };
    let fin = grammar::guided_final(&i, &ids).unwrap();
    let text = |label: &str, value: &str| {
        format!(
            "{}The top is {label} at {value}.\"}}",
            grammar::guided_final_prefix(&ids)
        )
    };
    assert!(fin.accepts(&text("Batch D", "88")));
    assert!(!fin.accepts(&text("Batch D", "67")));
}
