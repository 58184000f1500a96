//! The honest scorer: expected.json v1 and v2 load into the same checks (v1's old knowledge shape keeps
//! its meaning on real knowledge_search results), subset matching, answer checks with reasons, Termination
//! Correctness that can be false, and ground truth that is reported unavailable — never silently dropped.

mod common;

use std::path::Path;

use pretty_assertions::assert_eq;
use runtime::answer::{Verdict, VerdictPhrases};
use runtime::ledger::{Ledger, ObservationRecord};
use runtime::metrics::{self, Expected, ExpectedError, GroundTruth, UnavailableReason, subset};
use runtime::tools::{ArtifactStore, ToolContext, call_tool};
use runtime::{RunStatus, StopReason, Task};
use serde_json::{Value, json};

fn task_dir(name: &str) -> std::path::PathBuf {
    common::fixtures_dir().join("tasks").join(name)
}

fn record(id: &str, tool: &str, result: Value) -> ObservationRecord {
    ObservationRecord {
        id: id.into(),
        tool: tool.into(),
        ok: true,
        step: 1,
        result: Some(result),
        error: None,
        attempted_arguments: None,
        digest: None,
        artifacts: Vec::new(),
    }
}

/// One real tool call, recorded the way the loop records it.
fn real_observation(tool: &str, arguments: Value, knowledge_file: &str) -> ObservationRecord {
    let artifacts = tempfile::tempdir().unwrap();
    let allowed = vec![knowledge_file.to_owned()];
    let knowledge = common::knowledge_dir();
    let mut store = ArtifactStore::new();
    let mut ctx = ToolContext {
        knowledge_dir: &knowledge,
        allowed_sources: &allowed,
        artifact_dir: artifacts.path(),
        artifacts: &mut store,
        columns: &runtime::tools::NoColumns,
    };
    let output =
        call_tool(tool, arguments.as_object().unwrap(), &mut ctx).expect("the real tool answers");
    let mut ledger = Ledger::new();
    ledger
        .record_success(tool, 1, &output, "digest".into(), 1)
        .unwrap()
        .clone()
}

#[test]
fn both_versions_load_into_one_evidence_list() {
    let v2 = Expected::load(&task_dir("agent_eval_mini")).unwrap();
    assert_eq!(v2.format_version, 2);
    let tools: Vec<&str> = v2.evidence.iter().map(|e| e.tool.as_str()).collect();
    assert_eq!(tools, ["knowledge_search", "calculator", "plot"]);
    assert_eq!(v2.final_answer.numbers, [79.0, 72.0]);
    assert_eq!(v2.final_answer.verdict, Some(true));
    assert_eq!(v2.protected_stop_reasons, [StopReason::Cancelled]);

    let v1 = Expected::load(&task_dir("tool_router_bench")).unwrap();
    assert_eq!(v1.format_version, 1);
    let tools: Vec<&str> = v1.evidence.iter().map(|e| e.tool.as_str()).collect();
    assert_eq!(
        tools,
        ["knowledge_search", "calculator", "plot"],
        "causal_order gives the order"
    );
    let knowledge = &v1.evidence[0];
    let labels: Vec<(&str, f64)> = knowledge
        .labelled_column
        .iter()
        .map(|(l, v)| (l.as_str(), *v))
        .collect();
    assert_eq!(
        labels,
        [
            ("Batch A", 82.0),
            ("Batch B", 74.0),
            ("Batch C", 67.0),
            ("Batch D", 88.0),
            ("Batch E", 79.0)
        ]
    );
    assert_eq!(
        knowledge.result,
        json!({ "data": { "facts": [ { "key": "average_gte", "value": 80 }, { "key": "every_batch_gte", "value": 70 } ] } })
    );
    assert_eq!(
        v1.final_answer.numbers,
        [78.0, 67.0],
        "number-like contains_all entries are numbers"
    );
    assert!(v1.final_answer.words.is_empty());
    assert_eq!(v1.final_answer.any_of.len(), 6);
}

#[test]
fn a_v1_knowledge_expectation_keeps_its_meaning_on_a_real_result() {
    let expected = Expected::load(&task_dir("tool_router_bench")).unwrap();
    let item = &expected.evidence[0];
    let real = real_observation(
        "knowledge_search",
        json!({ "query": "Routing Accuracy by batch and release rule", "top_k": 3 }),
        "tool_router_bench.md",
    );
    assert!(
        Expected::item_matches(item, &real),
        "{}",
        real.result.as_ref().unwrap()
    );
    // The same expectation with one value changed, or one batch missing, no longer matches.
    let text =
        std::fs::read_to_string(task_dir("tool_router_bench").join("expected.json")).unwrap();
    for (from, to) in [
        (r#""value": 67"#, r#""value": 68"#),
        (r#""average_gte": 80"#, r#""average_gte": 81"#),
    ] {
        let changed = Expected::parse(&text.replacen(from, to, 1), "t/expected.json").unwrap();
        assert!(!Expected::item_matches(&changed.evidence[0], &real), "{to}");
    }
    let mut fewer: Value = serde_json::from_str(&text).unwrap();
    fewer["tools"]["knowledge_search"]["result"]["data"]["batches"]
        .as_array_mut()
        .unwrap()
        .pop();
    let fewer = Expected::parse(&fewer.to_string(), "t/expected.json").unwrap();
    assert!(
        !Expected::item_matches(&fewer.evidence[0], &real),
        "v1 listed every batch: a subset is another meaning"
    );
}

#[test]
fn a_v1_knowledge_expectation_reads_the_current_result_shape() {
    let expected = Expected::load(&task_dir("tool_router_bench")).unwrap();
    let item = &expected.evidence[0];
    let rows = |column: &dyn Fn(usize) -> &'static str| {
        let data = [
            ("Batch A", 82),
            ("Batch B", 74),
            ("Batch C", 67),
            ("Batch D", 88),
            ("Batch E", 79),
        ];
        data.iter()
            .enumerate()
            .map(|(i, (label, value))| json!({ "label": label, "values": { column(i): value, "Requests": 100 + i } }))
            .collect::<Vec<_>>()
    };
    let facts = json!([
        { "key": "Minimum score", "value": 1 },
        { "key": "every_batch_gte", "value": 70, "unit": null },
        { "key": "average_gte", "value": 80 }
    ]);
    let shaped = |tables: Value, facts: &Value| {
        record(
            "obs-knowledge_search-1",
            "knowledge_search",
            json!({ "data": { "tables": tables, "facts": facts } }),
        )
    };
    let other_table =
        json!({ "rows": [ { "label": "Batch A", "values": { "Routing Accuracy": 1 } } ] });
    let good = shaped(
        json!([other_table, { "rows": rows(&|_| "Routing Accuracy") }]),
        &facts,
    );
    assert!(Expected::item_matches(item, &good));
    // The values must sit in one column, and the table must hold exactly these rows.
    let split = shaped(
        json!([{ "rows": rows(&|i| if i < 2 { "Routing Accuracy" } else { "Accuracy" }) }]),
        &facts,
    );
    assert!(!Expected::item_matches(item, &split));
    let mut longer = rows(&|_| "Routing Accuracy");
    longer.push(json!({ "label": "Batch F", "values": { "Routing Accuracy": 50 } }));
    assert!(!Expected::item_matches(
        item,
        &shaped(json!([{ "rows": longer }]), &facts)
    ));
    let missing_fact = json!([{ "key": "average_gte", "value": 80 }]);
    assert!(!Expected::item_matches(
        item,
        &shaped(
            json!([{ "rows": rows(&|_| "Routing Accuracy") }]),
            &missing_fact
        )
    ));
}

#[test]
fn subset_matching_rules() {
    let cases: &[(Value, Value, bool)] = &[
        (json!({ "a": 1 }), json!({ "a": 1.0, "b": 2 }), true),
        (json!({ "a": 1 }), json!({ "b": 1 }), false),
        (
            json!([{ "k": "x" }, { "k": "y" }]),
            json!([{ "k": "y", "v": 2 }, { "k": "z" }, { "k": "x" }]),
            true,
        ),
        (json!([{ "k": "x" }]), json!([{ "k": "y" }]), false),
        (json!([1, 2]), json!([1, 2]), true),
        (json!([1, 2]), json!([2, 1]), false),
        (json!([1, 2]), json!([1, 2, 3]), false),
        (json!([]), json!([]), true),
        (json!([]), json!([1]), false),
        (json!(0.1 + 0.2), json!(0.3), true),
        (json!(79), json!(79.0001), false),
        (json!(true), json!(true), true),
        (json!(false), json!(0), false),
        (json!("Batch A"), json!("batch a"), false),
        (json!(null), json!(null), true),
        (
            json!({ "spec": { "labels": ["A", "B"] } }),
            json!({ "spec": { "labels": ["A", "B"], "average": 3 } }),
            true,
        ),
    ];
    for (expected, actual, ok) in cases {
        assert_eq!(subset(expected, actual), *ok, "{expected} ⊆ {actual}");
    }
}

const CLINICS_V2: &str = r#"{
  "format_version": 2,
  "evidence": [
    { "tool": "knowledge_search", "result": { "data": { "tables": [ { "rows": [
        { "label": "Plant 7", "values": { "Wait": 24 } },
        { "label": "南区", "values": { "Wait": 31.5 } } ] } ],
        "facts": [ { "key": "Maximum average wait", "value": 30 } ] } } },
    { "tool": "calculator", "result": { "value": 27.75 } },
    { "tool": "calculator", "result": { "value": true } },
    { "tool": "plot", "result": { "spec": { "labels": ["Plant 7", "南区"], "values": [24, 31.5], "average": 27.75 } } }
  ],
  "final_answer": { "numbers": [27.75, 7], "words": ["南区"], "verdict": true, "none": ["Plant 9"] },
  "protected_stop_reasons": ["cancelled"]
}"#;

fn clinic_ledger() -> Vec<ObservationRecord> {
    vec![
        record(
            "obs-knowledge_search-1",
            "knowledge_search",
            json!({ "data": {
                "tables": [ { "rows": [
                    { "label": "南区", "values": { "Wait": 31.5, "Staff": 7 } },
                    { "label": "Plant 7", "values": { "Wait": 24, "Staff": 9 } } ] } ],
                "facts": [ { "key": "Maximum average wait", "value": 30, "unit": "min" } ] },
              "citations": [ { "id": "kb-clinics-wait-times-2024", "chunk_id": "wait-times-2024" } ] }),
        ),
        record(
            "obs-calculator-2",
            "calculator",
            json!({ "expression": "(24 + 31.5) / 2", "value": 27.75 }),
        ),
        record(
            "obs-calculator-3",
            "calculator",
            json!({ "expression": "27.75 <= 30", "value": true }),
        ),
        record(
            "obs-plot-4",
            "plot",
            json!({ "spec": { "labels": ["Plant 7", "南区"], "values": [24, 31.5], "average": 27.75 } }),
        ),
    ]
}

#[test]
fn v2_checks_numbers_words_verdict_and_none_with_reasons() {
    let expected = Expected::parse(CLINICS_V2, "clinics/expected.json").unwrap();
    let ledger = clinic_ledger();
    let zh = VerdictPhrases {
        met: vec!["达成".into()],
        not_met: vec!["未达成".into()],
    };
    let cases: &[(&str, &VerdictPhrases, &[&str])] = &[
        (
            "平均等待27.8分钟，南区最长，相差7分钟；目标达成。(obs-calculator-2)",
            &zh,
            &[],
        ),
        (
            "平均等待27.8分钟；南区最长，差7；目标未达成。",
            &zh,
            &["the verdict should be met; the answer says not met"],
        ),
        (
            "Plant 7 is fine, 南区 waits longest, the average is 27.8 and the target is met (obs-calculator-3).",
            &VerdictPhrases::default(),
            &["the answer does not state 7"],
        ),
        (
            "Average 28 minutes; 南区 is longest by 7; the target is met.",
            &VerdictPhrases::default(),
            &["the answer does not state 27.75"],
        ),
        (
            "Average 27.75, gap 7, Plant 9 aside, 南区 longest: target met but not met.",
            &VerdictPhrases::default(),
            &[
                "the verdict should be met; the answer says both met and not met",
                "the answer says \"Plant 9\", which it must not",
            ],
        ),
        (
            "Average 27.75, gap 7, not Plant 9; 南区 longest; the target is met.",
            &VerdictPhrases::default(),
            &[],
        ),
    ];
    for (answer, phrases, failures) in cases {
        let checks = metrics::success_checks(&expected, Some(answer), &ledger, phrases);
        assert_eq!(checks.failures, *failures, "{answer}");
        let observations: Vec<Option<&str>> = checks
            .evidence
            .iter()
            .map(|e| e.observation.as_deref())
            .collect();
        assert_eq!(
            observations,
            [
                Some("obs-knowledge_search-1"),
                Some("obs-calculator-2"),
                Some("obs-calculator-3"),
                Some("obs-plot-4")
            ]
        );
    }
    // Out of causal order: a rule check that spells the average before the average was computed guessed it.
    let mut swapped = clinic_ledger();
    swapped.swap(1, 2);
    let checks = metrics::success_checks(
        &expected,
        Some("27.75, 7, 南区, met"),
        &swapped,
        &VerdictPhrases::default(),
    );
    assert_eq!(
        checks.failures,
        ["evidence 3 (calculator) uses 27.75 before obs-calculator-2 established it"]
    );
    assert_eq!(
        metrics::accurate_actions(&expected, &swapped),
        3,
        "the boolean check ran before the average it depends on"
    );
    assert_eq!(metrics::accurate_actions(&expected, &clinic_ledger()), 4);
    // Written by column reference the check depends on no calculation: the two calculations are one causal
    // step and may come in either order (what a model choosing its own order in free mode does).
    let mut by_reference = clinic_ledger();
    by_reference[2] = record(
        "obs-calculator-3",
        "calculator",
        json!({ "expression": "mean([Wait]) <= 30", "value": true }),
    );
    by_reference.swap(1, 2);
    let checks = metrics::success_checks(
        &expected,
        Some("27.75, 7, 南区, met"),
        &by_reference,
        &VerdictPhrases::default(),
    );
    assert_eq!(checks.failures, Vec::<String>::new());
    assert_eq!(metrics::accurate_actions(&expected, &by_reference), 4);
    // A chart whose line is the average drawn before the average was computed guessed it; drawn after the
    // average, it may come before or after a rule check it does not use.
    let mut chart_first = clinic_ledger();
    chart_first[2] = by_reference[1].clone();
    let plot = chart_first.remove(3);
    chart_first.insert(1, plot);
    let checks = metrics::success_checks(
        &expected,
        Some("27.75, 7, 南区, met"),
        &chart_first,
        &VerdictPhrases::default(),
    );
    assert_eq!(
        checks.failures,
        ["evidence 4 (plot) uses 27.75 before obs-calculator-2 established it"]
    );
    let mut chart_before_check = clinic_ledger();
    chart_before_check[2] = by_reference[1].clone();
    chart_before_check.swap(2, 3);
    let checks = metrics::success_checks(
        &expected,
        Some("27.75, 7, 南区, met"),
        &chart_before_check,
        &VerdictPhrases::default(),
    );
    assert_eq!(checks.failures, Vec::<String>::new());
    // A calculation over values typed before they were looked up guessed them.
    let mut guessed = clinic_ledger();
    guessed.swap(0, 1);
    let checks = metrics::success_checks(
        &expected,
        Some("27.75, 7, 南区, met"),
        &guessed,
        &VerdictPhrases::default(),
    );
    assert_eq!(
        checks.failures,
        ["evidence 2 (calculator) uses 24 before obs-knowledge_search-1 established it"]
    );
    // No accepted final: every answer check is skipped and the reason comes first.
    let checks = metrics::success_checks(&expected, None, &ledger, &VerdictPhrases::default());
    assert_eq!(checks.failures, ["no accepted final answer"]);
    assert!(!checks.final_accepted);
}

#[test]
fn a_rule_check_written_the_other_way_round_is_the_same_evidence_and_the_verdict_is_judged_once() {
    let expected = Expected::parse(CLINICS_V2, "clinics/expected.json").unwrap();
    // The rule is "average wait at most 30"; the model checked whether it was exceeded.
    let mut inverse = clinic_ledger();
    inverse[2] = record(
        "obs-calculator-3",
        "calculator",
        json!({ "expression": "27.75 > 30", "value": false }),
    );
    let phrases = VerdictPhrases::default();
    let right = metrics::success_checks(
        &expected,
        Some("Average 27.75, gap 7, 南区 longest; the target is met."),
        &inverse,
        &phrases,
    );
    assert_eq!(right.failures, Vec::<String>::new());
    assert_eq!(
        right.evidence[2].observation.as_deref(),
        Some("obs-calculator-3")
    );
    // A verdict that follows the inverted check is wrong, and said so, once, on the answer.
    let wrong = metrics::success_checks(
        &expected,
        Some("Average 27.75, gap 7, 南区 longest; the target is not met."),
        &inverse,
        &phrases,
    );
    assert_eq!(
        wrong.failures,
        ["the verdict should be met; the answer says not met"]
    );
    // A task that expects no verdict keeps the boolean exact: only a true check is its evidence.
    let no_verdict = Expected::parse(
        &CLINICS_V2.replace(r#""verdict": true, "#, ""),
        "clinics/expected.json",
    )
    .unwrap();
    assert!(!no_verdict.evidence[2].rule_check);
    assert!(!Expected::item_matches(
        &no_verdict.evidence[2],
        &inverse[2]
    ));
    assert!(Expected::item_matches(&expected.evidence[2], &inverse[2]));
    // A rule check is still a boolean of its own tool: a number is not one.
    assert!(!Expected::item_matches(&expected.evidence[2], &inverse[1]));
}

#[test]
fn v1_answer_checks_are_words_not_substrings() {
    let expected = Expected::load(&task_dir("tool_router_bench")).unwrap();
    let real = real_observation(
        "knowledge_search",
        json!({ "query": "Routing Accuracy by batch and release rule", "top_k": 3 }),
        "tool_router_bench.md",
    );
    let ledger = vec![
        real,
        record("obs-calculator-2", "calculator", json!({ "value": 78 })),
        record(
            "obs-plot-3",
            "plot",
            json!({ "spec": { "labels": ["Batch A", "Batch B", "Batch C", "Batch D", "Batch E"], "values": [82, 74, 67, 88, 79], "average": 78 } }),
        ),
    ];
    let defaults = VerdictPhrases::default();
    let cases: &[(&str, bool)] = &[
        ("Average 78, lowest 67: the rule is not met.", true),
        ("Average 78, lowest 67: Batch C fails the minimum.", true),
        ("Average 78, lowest 67: no batch fails.", false),
        ("Average 178, lowest 67: the rule is not met.", false),
        ("Average 78, lowest 67.5: the rule is not met.", false),
        ("Average 78, lowest 67: the build is not eligible.", true),
        ("Average 78, lowest 67: the build is eligible.", false),
    ];
    for (answer, ok) in cases {
        assert_eq!(
            metrics::task_success(&expected, Some(answer), &ledger, &defaults),
            *ok,
            "{answer}"
        );
    }
}

#[test]
fn happy_runs_score_with_their_reasons() {
    let o = common::run_fixture("happy");
    assert_eq!(o.result.ground_truth, GroundTruth::Loaded);
    let finished = o.events.last().unwrap();
    assert_eq!(finished.data["ground_truth"], json!({ "status": "loaded" }));
    let checks = o.metrics().task_success_checks.as_ref().unwrap();
    assert!(
        checks.final_accepted && checks.failures.is_empty(),
        "{checks:?}"
    );
    assert_eq!(checks.verdict.as_ref().map(|v| v.found), Some(Verdict::Met));
    assert_eq!(
        checks.numbers.iter().map(|n| n.stated).collect::<Vec<_>>(),
        [true, true]
    );

    let o = common::run_fixture("router_wrong_conclusion");
    let checks = o.metrics().task_success_checks.as_ref().unwrap();
    assert_eq!(o.metrics().task_success, Some(false));
    assert_eq!(checks.failures.len(), 1, "{:?}", checks.failures);
    assert!(
        checks.failures[0].starts_with("the answer says none of"),
        "{:?}",
        checks.failures
    );
}

#[test]
fn one_full_metrics_json() {
    let o = common::run_fixture("wrong_value");
    insta::assert_json_snapshot!("wrong_value_metrics", o.metrics(), {
        ".model_latency_ms" => "[latency]",
        ".tool_latency_ms" => "[latency]",
        ".total_latency_ms" => "[latency]",
    });
}

#[test]
fn termination_correctness_can_be_false() {
    // agent_eval_mini is solvable: only a cancel is a correct early ending.
    for (fixture, correct) in [
        ("loop_repeated_action", false),
        ("loop_repeated_final", false),
        ("budget_steps", false),
        ("repair_exhausted", false),
        ("total_deadline", false),
        ("cancel_mid_run", true),
        ("happy", true),
    ] {
        let o = common::run_fixture(fixture);
        assert_eq!(
            o.metrics().termination_correctness,
            Some(correct),
            "{fixture}: {:?}",
            o.result.stop_reason
        );
    }
    // tool_router_bench's v1 file still protects every stop reason: the same stop is correct there.
    let (_dir, task) = copy_task_with_expected(
        "tool_router_bench",
        Some(
            &std::fs::read_to_string(task_dir("tool_router_bench").join("expected.json")).unwrap(),
        ),
    );
    let mut policy = runtime::policy::scripted::ScriptedPolicy::from_texts(vec![
        r#"{"type":"action","tool":"calculator","arguments":{"expression":"1 + 1"}}"#.to_owned();
        2
    ]);
    let o = common::run_with(&task, &mut policy, |_| {});
    assert_eq!(o.result.stop_reason, StopReason::LoopDetected);
    assert_eq!(o.metrics().termination_correctness, Some(true));
}

fn copy_task_with_expected(name: &str, expected: Option<&str>) -> (tempfile::TempDir, Task) {
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join(name);
    std::fs::create_dir_all(&copy).unwrap();
    std::fs::copy(task_dir(name).join("task.json"), copy.join("task.json")).unwrap();
    if let Some(text) = expected {
        std::fs::write(copy.join("expected.json"), text).unwrap();
    }
    let task = Task::load(&copy).unwrap();
    (dir, task)
}

#[test]
fn missing_or_invalid_ground_truth_is_reported_never_silent() {
    let cases: &[(Option<&str>, UnavailableReason, &str)] = &[
        (
            None,
            UnavailableReason::Missing,
            "agent_eval_mini/expected.json does not exist",
        ),
        (
            Some("{ not json"),
            UnavailableReason::Invalid,
            "is not valid JSON",
        ),
        (
            Some(r#"{"format_version": 3}"#),
            UnavailableReason::Invalid,
            "format_version must be 1 or 2, got 3",
        ),
    ];
    for (text, reason, needle) in cases {
        let (dir, task) = copy_task_with_expected("agent_eval_mini", *text);
        let fixture = common::fixture("happy");
        let mut policy = fixture.policy();
        let o = common::run_with(&task, &mut policy, |_| {});
        assert_eq!(o.result.status, RunStatus::Completed);
        let GroundTruth::Unavailable {
            reason: got,
            message,
        } = &o.result.ground_truth
        else {
            panic!(
                "{text:?}: ground truth reported as {:?}",
                o.result.ground_truth
            )
        };
        assert_eq!(got, reason, "{message}");
        assert!(message.contains(needle), "{message}");
        assert!(
            !message.contains(&*dir.path().to_string_lossy()) && !message.contains("/tmp"),
            "{message}"
        );
        let finished = o.events.last().unwrap();
        assert_eq!(
            finished.data["ground_truth"],
            serde_json::to_value(&o.result.ground_truth).unwrap()
        );
        assert_eq!(finished.data["ground_truth"]["status"], "unavailable");
        let m = o.metrics();
        assert_eq!(
            (
                m.task_success,
                m.tool_argument_accuracy,
                m.termination_correctness,
                m.accurate_actions
            ),
            (None, None, None, None)
        );
        assert!(m.task_success_checks.is_none());
        assert_eq!(
            (m.valid_action_rate, m.steps),
            (Some(1.0), 4),
            "metrics without ground truth are still reported"
        );
    }
}

/// Files both the schema and the loader refuse, with the words the loader's message must hold.
const INVALID: &[(&str, &str)] = &[
    (r#"{"evidence": []}"#, "format_version is missing"),
    (
        r#"{"format_version": "2"}"#,
        "format_version must be 1 or 2",
    ),
    (
        r#"{"format_version": 2, "evidence": [{"tool": "calculator", "result": {"value": 1}}], "final_answer": {}, "protected_stop_reasons": [], "tools": {}}"#,
        "unknown field `tools`",
    ),
    (
        r#"{"format_version": 2, "evidence": [{"tool": "calculator", "result": {"value": 1}, "hint": "x"}], "final_answer": {}, "protected_stop_reasons": []}"#,
        "unknown field `hint`",
    ),
    (
        r#"{"format_version": 2, "evidence": [{"tool": "calculator", "result": {"value": 1}}], "final_answer": {"contains_all": ["1"]}, "protected_stop_reasons": []}"#,
        "unknown field `contains_all`",
    ),
    (
        r#"{"format_version": 2, "evidence": [], "final_answer": {}, "protected_stop_reasons": []}"#,
        "evidence must list at least one item",
    ),
    (
        r#"{"format_version": 2, "evidence": [{"tool": "web_search", "result": {}}], "final_answer": {}, "protected_stop_reasons": []}"#,
        "unknown tool \"web_search\"",
    ),
    (
        r#"{"format_version": 2, "evidence": [{"tool": "calculator", "result": 79}], "final_answer": {}, "protected_stop_reasons": []}"#,
        "evidence[0].result must be an object, got a number",
    ),
    (
        r#"{"format_version": 2, "evidence": [{"tool": "calculator", "result": {"value": 1}}], "final_answer": {"words": [" "]}, "protected_stop_reasons": []}"#,
        "final_answer.words holds an empty entry",
    ),
    (
        r#"{"format_version": 2, "evidence": [{"tool": "calculator", "result": {"value": 1}}], "final_answer": {}, "protected_stop_reasons": ["gave_up"]}"#,
        "unknown variant `gave_up`",
    ),
    (
        r#"{"format_version": 2, "evidence": [{"tool": "calculator", "result": {"value": 1}}], "final_answer": {}}"#,
        "missing field `protected_stop_reasons`",
    ),
    (
        r#"{"format_version": 1, "evidence": [], "tools": {"calculator": {"result": {}}}, "causal_order": ["calculator"], "final_answer": {}, "protected_stop_reasons": []}"#,
        "unknown field `evidence`",
    ),
    (
        r#"{"format_version": 1, "tools": {"calculator": {"result": {}}}, "causal_order": ["calculator"], "final_answer": {"contains_some": []}, "protected_stop_reasons": []}"#,
        "unknown field `contains_some`",
    ),
];

/// Cross-field rules a JSON Schema cannot state: only the loader refuses these.
const INVALID_ACROSS_FIELDS: &[(&str, &str)] = &[
    (
        r#"{"format_version": 1, "tools": {"calculator": {"result": {}}}, "causal_order": ["calculator", "plot"], "final_answer": {}, "protected_stop_reasons": []}"#,
        "causal_order names \"plot\", which has no entry in tools",
    ),
    (
        r#"{"format_version": 1, "tools": {"calculator": {"result": {}}, "plot": {"result": {}}}, "causal_order": ["calculator"], "final_answer": {}, "protected_stop_reasons": []}"#,
        "tools names \"plot\", which causal_order does not list",
    ),
    (
        r#"{"format_version": 1, "tools": {"calculator": {"result": {}}}, "causal_order": ["calculator", "calculator"], "final_answer": {}, "protected_stop_reasons": []}"#,
        "causal_order names \"calculator\" twice",
    ),
    (
        r#"{"format_version": 1, "tools": {"knowledge_search": {"result": {"data": {"batches": [{"label": "A"}]}}}}, "causal_order": ["knowledge_search"], "final_answer": {}, "protected_stop_reasons": []}"#,
        "data.batches[0] must be {\"label\": string, \"value\": number}",
    ),
];

#[test]
fn invalid_files_are_refused_by_the_loader_and_the_schema_alike() {
    let schema: Value =
        serde_json::from_str(include_str!("../../../schemas/expected.schema.json")).unwrap();
    let validator = jsonschema::validator_for(&schema).expect("expected.schema.json compiles");
    for (text, needle) in INVALID {
        let error = Expected::parse(text, "t/expected.json").expect_err(text);
        assert!(matches!(error.reason(), UnavailableReason::Invalid));
        assert!(error.to_string().contains(needle), "{text}: {error}");
        let value: Value = serde_json::from_str(text).unwrap();
        assert!(!validator.is_valid(&value), "the schema accepts {text}");
    }
    for (text, needle) in INVALID_ACROSS_FIELDS {
        let error = Expected::parse(text, "t/expected.json").expect_err(text);
        assert!(error.to_string().contains(needle), "{text}: {error}");
    }
    assert!(matches!(
        Expected::parse("[", "t/expected.json"),
        Err(ExpectedError::Json { .. })
    ));
}

#[test]
fn every_task_file_and_test_file_agrees_with_the_schema() {
    let schema: Value =
        serde_json::from_str(include_str!("../../../schemas/expected.schema.json")).unwrap();
    let validator = jsonschema::validator_for(&schema).expect("expected.schema.json compiles");
    let mut seen = 0;
    for entry in std::fs::read_dir(common::fixtures_dir().join("tasks")).unwrap() {
        let path = entry.unwrap().path().join("expected.json");
        if !Path::new(&path).exists() {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let value: Value = serde_json::from_str(&text).unwrap();
        let errors: Vec<String> = validator
            .iter_errors(&value)
            .map(|e| e.to_string())
            .collect();
        assert_eq!(errors, Vec::<String>::new(), "{}", path.display());
        Expected::parse(&text, "task/expected.json")
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        seen += 1;
    }
    assert!(seen >= 2);
    let clinics: Value = serde_json::from_str(CLINICS_V2).unwrap();
    assert!(validator.is_valid(&clinics));
}
