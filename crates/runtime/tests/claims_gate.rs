//! The claims gate, driven by scripted fixtures (no model): an answer's numbers must be grounded in the
//! observations it cites (printed rounding allowed) and its verdict must agree with the rule check —
//! declared (a boolean calculator observation) or stated as `key: number` facts. Rejections are
//! recoverable: the repaired final is accepted.

mod common;

use common::run_fixture;
use pretty_assertions::assert_eq;
use runtime::claims::ClaimKind;
use runtime::{RunStatus, StopReason};

/// Runs `task` with scripted `actions`, then a final built by `final_stating` from `wrong`, then the
/// same final from `right`: the shape of every "rejected, then repaired" case below.
fn run_repaired(
    task: &str,
    actions: &[&str],
    final_stating: impl Fn(&str) -> String,
    wrong: &str,
    right: &str,
) -> common::Outcome {
    let task = common::task(task);
    let mut texts: Vec<String> = actions.iter().map(|a| (*a).to_owned()).collect();
    texts.extend([final_stating(wrong), final_stating(right)]);
    let mut policy = runtime::policy::scripted::ScriptedPolicy::from_texts(texts);
    common::run_with(&task, &mut policy, |_| {})
}

#[test]
fn an_ungrounded_number_is_never_accepted() {
    let o = run_fixture("claims_ungrounded_number");
    assert_eq!(
        (o.result.status, o.result.stop_reason),
        (RunStatus::Stopped, StopReason::LoopDetected)
    );
    assert_eq!(
        o.rejection_codes(),
        ["ungrounded_number", "ungrounded_number"]
    );
    assert_eq!(o.result.final_answer, None);
    let rejected = o.first("final.validated");
    let message = rejected.data["message"].as_str().unwrap();
    assert!(
        message.contains("80") && message.contains("obs-calculator-2"),
        "{message}"
    );
    // The model is told why, in the feedback its next decision sees.
    let m = o.metrics();
    assert_eq!((m.recoverable_failures, m.recovered), (2, 0));
}

#[test]
fn a_printed_rounding_is_grounded_and_a_wrong_rounding_is_not() {
    let o = run_fixture("claims_rounding");
    assert_eq!(
        (o.result.status, o.result.stop_reason),
        (RunStatus::Completed, StopReason::Completed)
    );
    // 78.4 rounds nothing observed; 78.3 is `(72 + 78 + 85) / 3`, a mean over a divisor no data states
    // (three of four batches): the model's own number, not evidence.
    assert_eq!(
        o.rejection_codes(),
        ["ungrounded_number", "ungrounded_number"]
    );
    assert!(o.result.final_answer.as_deref().unwrap().contains("79"));
    let accepted = o.last("final.validated");
    assert_eq!(accepted.data["accepted"], true);
    assert_eq!(
        accepted.data["claims"]["status"], "verified",
        "{}",
        accepted.data
    );
    // Verified, yet the scorer still fails the run: the right mean came after the chart (causal order).
    assert_eq!(o.metrics().task_success, Some(false));
    assert_eq!(o.metrics().recovered, 2);
}

#[test]
fn a_verdict_contradicting_the_declared_rule_check_is_rejected_then_repaired() {
    let o = run_fixture("claims_verdict_repaired");
    assert_eq!(
        (o.result.status, o.result.stop_reason),
        (RunStatus::Completed, StopReason::Completed)
    );
    assert_eq!(o.rejection_codes(), ["verdict_contradicts_evidence"]);
    let rejected = o.first("final.validated");
    let message = rejected.data["message"].as_str().unwrap();
    // The runtime's own reading of the rule in the knowledge decides, not the model's rule check; the repair
    // names where the rule is and that the verdict failed its check, not which verdict to write.
    assert!(
        message.contains("obs-knowledge_search-1") && !message.contains("\"missed\""),
        "{message}"
    );
    assert!(
        o.result
            .final_answer
            .as_deref()
            .unwrap()
            .ends_with("missed.")
    );
    let accepted = o.last("final.validated");
    assert_eq!(accepted.data["claims"]["verdict"], false);
    assert_eq!(
        accepted.data["claims"]["rule_source"],
        "obs-knowledge_search-1"
    );
    assert_eq!(o.metrics().task_success, Some(true));
}

#[test]
fn a_verdict_contradicting_rules_stated_as_facts_is_rejected_then_repaired() {
    let o = run_fixture("claims_legacy_verdict");
    assert_eq!(
        (o.result.status, o.result.stop_reason),
        (RunStatus::Completed, StopReason::Completed)
    );
    assert_eq!(o.rejection_codes(), ["verdict_contradicts_evidence"]);
    let message = o.first_gate_message();
    assert!(
        message.contains("obs-knowledge_search-1") && !message.contains("average_gte"),
        "{message}"
    );
    assert_eq!(o.metrics().task_success, Some(true));
}

#[test]
fn the_happy_chains_pass_the_gate_with_their_claims_recorded() {
    for name in ["happy", "router_happy"] {
        let o = run_fixture(name);
        assert_eq!(o.result.status, RunStatus::Completed, "{name}");
        let accepted = o.last("final.validated");
        assert_eq!(accepted.data["accepted"], true, "{name}");
        assert!(
            !accepted.data["claims"]["numbers"]
                .as_array()
                .unwrap()
                .is_empty(),
            "{name}"
        );
    }
}

/// Keeps every request a scripted policy is shown.
struct Spy {
    inner: runtime::policy::scripted::ScriptedPolicy,
    requests: Vec<runtime::policy::DecisionRequest>,
}

impl runtime::policy::Policy for Spy {
    fn name(&self) -> String {
        "spy".into()
    }
    fn decide(
        &mut self,
        request: &runtime::policy::DecisionRequest,
        control: &runtime::policy::RunControl,
    ) -> Result<runtime::policy::PolicyOutput, runtime::policy::PolicyError> {
        self.requests.push(request.clone());
        self.inner.decide(request, control)
    }
}

#[test]
fn a_request_never_carries_the_verdict_the_runtime_reads() {
    let fixture = common::fixture("claims_verdict_repaired");
    let task = common::task("clinic_wait_times");
    let mut spy = Spy {
        inner: fixture.policy(),
        requests: Vec::new(),
    };
    let o = common::run_with(&task, &mut spy, |_| {});
    assert_eq!(o.result.stop_reason, StopReason::Completed);
    let phrases = task.verdict_phrases();
    // Before and after the rule check, the grounding a policy's grammar is built from holds only what the
    // observations establish: numbers (the stated ones apart), counts, labels, ids, columns, computed values,
    // units written with numbers — never a verdict.
    assert!(spy.requests.len() >= 5);
    for request in &spy.requests {
        let grounding = serde_json::to_value(&request.grounding).unwrap();
        let keys: Vec<&str> = grounding
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        let mut keys = keys;
        keys.sort();
        assert_eq!(
            keys,
            [
                "computed",
                "computed_exact",
                "counts",
                "evidence_ids",
                "labels",
                "numbers",
                "series",
                "stated",
                "units"
            ]
        );
        let text = grounding.to_string();
        for phrase in phrases.met.iter().chain(&phrases.not_met) {
            assert!(!text.contains(phrase.as_str()), "{phrase} in {text}");
        }
    }
}

#[test]
fn a_coarse_rounding_or_a_count_as_a_percentage_is_not_grounded() {
    // Shape of a real t=0.7 failure: the average return rate 3.7 % stated as "4%". Rounded to whole
    // percent it keeps one significant digit (a different claim, 8 % off), and a percentage is never a
    // count of rows, so the gate refuses it; the repaired "3.7%" is accepted.
    let ids = r#"["obs-knowledge_search-1", "obs-calculator-2", "obs-calculator-3", "obs-plot-4"]"#;
    let final_stating = |average: &str| {
        format!(
            r#"{{"type": "final", "answer": "平均退货率为{average}%，退货率最高的门店是北区门店，本季度退货目标未达成。", "evidence_ids": {ids}}}"#
        )
    };
    let actions = [
        r#"{"type": "action", "tool": "knowledge_search", "arguments": {"query": "门店退货率 退货率考核规则"}}"#,
        r#"{"type": "action", "tool": "calculator", "arguments": {"expression": "mean(3.2, 4.1, 2.8, 4.6, 3.8)"}}"#,
        r#"{"type": "action", "tool": "calculator", "arguments": {"expression": "3.7 <= 3.5 and 4.6 <= 5"}}"#,
        r#"{"type": "action", "tool": "plot", "arguments": {"labels": ["东区门店", "西区门店", "南区门店", "北区门店", "中心门店"], "values": [3.2, 4.1, 2.8, 4.6, 3.8], "average": 3.7, "title": "门店退货率"}}"#,
    ];
    let o = run_repaired("store_return_rate_zh", &actions, final_stating, "4", "3.7");
    assert_eq!(
        (o.result.status, o.result.stop_reason),
        (RunStatus::Completed, StopReason::Completed)
    );
    assert_eq!(o.rejection_codes(), ["ungrounded_number"]);
    let rejected = o.first("final.validated");
    assert!(
        rejected.data["message"]
            .as_str()
            .unwrap()
            .contains("states 4,"),
        "{}",
        rejected.data
    );
    assert!(o.result.final_answer.as_deref().unwrap().contains("3.7%"));
    assert_eq!(o.metrics().task_success, Some(true));
}

#[test]
fn a_grounded_number_stated_for_the_wrong_row_is_rejected_then_repaired() {
    // Shape of a real t=0.7 failure: the lowest batch named right, but given the rule's minimum (70, a
    // grounded number) as its value instead of its own (67). Grounded is not enough: a number written
    // right after a row label must be that row's value.
    let ids = r#"["obs-knowledge_search-1", "obs-calculator-2", "obs-plot-3"]"#;
    let final_stating = |value: &str| {
        format!(
            r#"{{"type": "final", "answer": "Average Routing Accuracy is 78; the lowest batch is Batch C with Routing Accuracy {value}. The release rule is not met, so the build may not ship.", "evidence_ids": {ids}}}"#
        )
    };
    let actions = [
        r#"{"type": "action", "tool": "knowledge_search", "arguments": {"query": "Routing Accuracy by batch and release rule", "top_k": 3}}"#,
        r#"{"type": "action", "tool": "calculator", "arguments": {"expression": "(82 + 74 + 67 + 88 + 79) / 5"}}"#,
        r#"{"type": "action", "tool": "plot", "arguments": {"labels": ["Batch A", "Batch B", "Batch C", "Batch D", "Batch E"], "values": [82, 74, 67, 88, 79], "average": 78, "title": "Routing Accuracy by batch"}}"#,
    ];
    let o = run_repaired("tool_router_bench", &actions, final_stating, "70", "67");
    assert_eq!(
        (o.result.status, o.result.stop_reason),
        (RunStatus::Completed, StopReason::Completed)
    );
    assert_eq!(o.rejection_codes(), ["misattributed_number"]);
    let rejected = o.first("final.validated");
    let message = rejected.data["message"].as_str().unwrap();
    // The repair names the row and the check that failed, never the value the runtime reads there.
    assert!(
        message.contains("Batch C 70") && !message.contains("67"),
        "{message}"
    );
    assert!(
        o.result
            .final_answer
            .as_deref()
            .unwrap()
            .contains("Routing Accuracy 67.")
    );
    assert_eq!(o.metrics().task_success, Some(true));
    assert_eq!(o.metrics().recovered, 1);
}

#[test]
fn a_whole_number_for_a_value_with_decimals_is_rejected_then_repaired() {
    // Shape of a real t=0.7 failure that was accepted: the average pass completion 81.5 stated as "82%".
    // A whole number reads as exact, and 82 sits between two observed values (81.5 and a row's 82.5),
    // so it stands for neither; the gate, the grammar and the scorer share that rule. "81.5%" is accepted.
    let ids = r#"["obs-knowledge_search-1", "obs-calculator-2", "obs-calculator-3", "obs-plot-4"]"#;
    let final_stating = |average: &str| {
        format!(
            r#"{{"type": "final", "answer": "{average}% is the average pass completion and Ospreys has the lowest; the academy qualifies for the style bonus.", "evidence_ids": {ids}}}"#
        )
    };
    let actions = [
        r#"{"type": "action", "tool": "knowledge_search", "arguments": {"query": "pass completion of every team and style bonus criteria"}}"#,
        r#"{"type": "action", "tool": "calculator", "arguments": {"expression": "mean(82.5, 79.0, 84.5, 77.0, 81.0, 85.0)"}}"#,
        r#"{"type": "action", "tool": "calculator", "arguments": {"expression": "81.5 >= 80 and 77.0 >= 75"}}"#,
        r#"{"type": "action", "tool": "plot", "arguments": {"labels": ["Falcons", "Harriers", "Kestrels", "Ospreys", "Merlins", "Buzzards"], "values": [82.5, 79.0, 84.5, 77.0, 81.0, 85.0], "average": 81.5, "title": "Pass completion by team"}}"#,
    ];
    let o = run_repaired(
        "team_pass_completion",
        &actions,
        final_stating,
        "82",
        "81.5",
    );
    assert_eq!(
        (o.result.status, o.result.stop_reason),
        (RunStatus::Completed, StopReason::Completed)
    );
    assert_eq!(o.rejection_codes(), ["ungrounded_number"]);
    let rejected = o.first("final.validated");
    assert!(
        rejected.data["message"]
            .as_str()
            .unwrap()
            .contains("states 82"),
        "{}",
        rejected.data
    );
    assert!(
        o.result
            .final_answer
            .as_deref()
            .unwrap()
            .starts_with("81.5%")
    );
    assert_eq!(o.metrics().task_success, Some(true));
    assert_eq!(o.metrics().recovered, 1);
}

/// The accepted final's verification, from its `final.validated` event.
fn verification(o: &common::Outcome) -> serde_json::Value {
    o.events
        .iter()
        .rev()
        .find(|e| e.phase == "final.validated" && e.data["accepted"] == true)
        .expect("an accepted final")
        .data["claims"]
        .clone()
}

#[test]
fn two_verdict_choices_that_disagree_are_rejected_then_repaired() {
    let o = run_fixture("claims_verdicts_disagree");
    assert_eq!(
        (o.result.status, o.result.stop_reason),
        (RunStatus::Completed, StopReason::Completed)
    );
    assert_eq!(o.rejection_codes(), ["verdicts_disagree"]);
    assert_eq!(
        verification(&o)["status"],
        "verified",
        "{}",
        verification(&o)
    );
    assert_eq!(
        o.metrics().outcome,
        Some(runtime::metrics::Outcome::Correct)
    );
}

#[test]
fn a_label_slot_naming_the_wrong_row_is_rejected_then_repaired() {
    let o = run_fixture("claims_wrong_row");
    assert_eq!(o.rejection_codes(), ["wrong_row"]);
    let rejected = o.first("final.validated");
    // The slot and the column it was checked over are named; the row the runtime reads there is not.
    let message = rejected.data["message"].as_str().unwrap();
    assert!(
        message.contains("<highest kiln>")
            && message.contains("[NOx]")
            && !message.contains("Shuttle kiln"),
        "{}",
        rejected.data
    );
    assert_eq!(verification(&o)["status"], "verified");
}

#[test]
fn a_value_slot_filled_with_a_label_is_rejected_then_repaired() {
    let o = run_fixture("claims_slot_type");
    assert_eq!(o.rejection_codes(), ["slot_type_mismatch"]);
    assert_eq!(verification(&o)["status"], "verified");
}

#[test]
fn the_right_aggregate_over_the_wrong_column_is_rejected_then_recomputed() {
    let o = run_fixture("claims_wrong_quantity");
    assert_eq!(
        (o.result.status, o.result.stop_reason),
        (RunStatus::Completed, StopReason::Completed)
    );
    assert_eq!(o.rejection_codes(), ["wrong_quantity"]);
    let rejected = o.first("final.validated");
    assert!(
        rejected.data["message"]
            .as_str()
            .unwrap()
            .contains("[Turbidity]"),
        "{}",
        rejected.data
    );
    let v = verification(&o);
    assert_eq!(v["status"], "verified", "{v}");
    assert!(
        o.result
            .final_answer
            .as_deref()
            .unwrap()
            .contains("0.9 NTU")
    );
}

#[test]
fn a_verdict_on_a_rule_the_knowledge_does_not_state_is_an_abstention() {
    let o = run_fixture("claims_no_rule_abstains");
    assert_eq!(
        (o.result.status, o.result.stop_reason),
        (RunStatus::Completed, StopReason::Completed)
    );
    assert!(o.rejection_codes().is_empty());
    let v = o.result.verification.clone().expect("verification");
    assert_eq!(v.status, runtime::claims::VerificationStatus::Partial);
    let verdict = v
        .claims
        .iter()
        .find(|c| c.kind == ClaimKind::Verdict)
        .unwrap();
    assert_eq!(verdict.status, runtime::claims::ClaimStatus::Unverified);
    assert!(
        verdict.detail.contains("the model's own comparison"),
        "{}",
        verdict.detail
    );
    assert!(
        v.claims
            .iter()
            .filter(|c| c.kind != ClaimKind::Verdict)
            .all(|c| c.status == runtime::claims::ClaimStatus::Verified),
        "{v:?}"
    );
    // The task's expected outcome is an abstention: this run is right, and counted as such.
    assert_eq!(
        o.metrics().outcome,
        Some(runtime::metrics::Outcome::Correct)
    );
}

#[test]
fn a_rule_over_all_the_rows_is_not_checked_when_a_row_has_no_value() {
    // Measured first (stop 56): the gate checked the rule over the four centres with a figure and verified "met".
    let o = run_fixture("claims_missing_row_abstains");
    assert_eq!(
        (o.result.status, o.result.stop_reason),
        (RunStatus::Completed, StopReason::Completed)
    );
    let v = o.result.verification.clone().expect("verification");
    let verdict = v
        .claims
        .iter()
        .find(|c| c.kind == ClaimKind::Verdict)
        .unwrap();
    assert_eq!(
        verdict.status,
        runtime::claims::ClaimStatus::Unverified,
        "{v:?}"
    );
    assert!(
        verdict
            .detail
            .contains("Cedar Park has no value in [Booking rate]"),
        "{}",
        verdict.detail
    );
    // The user reads the abstention in the answer itself.
    assert!(
        o.result
            .final_answer
            .as_deref()
            .unwrap()
            .contains("met [unverified]"),
        "{:?}",
        o.result.final_answer
    );
    assert_eq!(
        o.metrics().outcome,
        Some(runtime::metrics::Outcome::Correct)
    );
}

/// Clinic wait times run by script through every required tool (the rule check written loosely, so the
/// runtime's own reading decides the verdict), then the same final `answer` written `finals` times: what the
/// gate does with an answer the model holds to.
fn clinic_run_holding_to(answer: &str, finals: usize) -> common::Outcome {
    let actions = [
        r#"{"type": "action", "tool": "knowledge_search", "arguments": {"query": "wait times by clinic and wait-time standard"}}"#,
        r#"{"type": "action", "tool": "calculator", "arguments": {"expression": "mean([Wait])"}}"#,
        r#"{"type": "action", "tool": "calculator", "arguments": {"expression": "mean([Wait]) <= 40 and max([Wait]) <= 40"}}"#,
        r#"{"type": "action", "tool": "plot", "arguments": {"column": "[Wait]", "average": 32, "title": "Walk-in wait by clinic"}}"#,
    ];
    let ids = [
        "obs-knowledge_search-1",
        "obs-calculator-2",
        "obs-calculator-3",
        "obs-plot-4",
    ];
    let held =
        serde_json::json!({"type": "final", "answer": answer, "evidence_ids": ids}).to_string();
    let mut texts: Vec<String> = actions.iter().map(|a| (*a).to_owned()).collect();
    texts.extend(std::iter::repeat_n(held, finals));
    let mut policy = runtime::policy::scripted::ScriptedPolicy::from_texts(texts);
    common::run_with(&common::task("clinic_wait_times"), &mut policy, |_| {})
}

#[test]
fn a_verdict_disputed_through_every_repair_ends_as_an_abstention_naming_the_dispute() {
    // The model holds to "achieved" where the rule the knowledge states is missed: rejected with the check
    // named, then, repeated, accepted as an abstention — the runtime neither certifies the model's verdict
    // nor writes its own.
    let o = clinic_run_holding_to(
        "Across the clinics the average wait is 32 minutes and Dean Park has the longest wait, so the standard is achieved.",
        3,
    );
    assert_eq!(
        (o.result.status, o.result.stop_reason),
        (RunStatus::Completed, StopReason::Completed),
        "{:?}",
        o.result.error
    );
    assert_eq!(o.rejection_codes(), ["verdict_contradicts_evidence"]);
    let claims = verification(&o);
    assert_eq!(claims["status"], "disputed", "{claims}");
    let all = claims["claims"].as_array().unwrap();
    let disputed: Vec<&serde_json::Value> =
        all.iter().filter(|c| c["status"] == "disputed").collect();
    assert_eq!(disputed.len(), 1, "{claims}");
    assert_eq!(disputed[0]["part"], "<achieved / missed>", "{claims}");
    assert_eq!(disputed[0]["stated"], "verdict_contradicts_evidence");
    assert!(
        disputed[0]["detail"]
            .as_str()
            .unwrap()
            .contains("obs-knowledge_search-1")
    );
    // What the gate could check beside the dispute is kept: the average and the longest-wait clinic agree.
    assert!(
        all.iter()
            .filter(|c| c["status"] != "disputed")
            .all(|c| c["status"] == "verified"),
        "{claims}"
    );
    assert_eq!(all.len(), 3, "{claims}");
    assert_eq!(
        o.metrics().outcome,
        Some(runtime::metrics::Outcome::Abstained)
    );
    // The text a user reads marks the disputed part, and only it.
    let shown = o.result.final_answer.as_deref().unwrap();
    assert_eq!(shown.matches("[unverified]").count(), 1, "{shown}");
    assert!(shown.contains("achieved [unverified]"), "{shown}");
}

#[test]
fn every_disagreement_of_one_answer_is_named_at_once_and_marked_where_it_stands() {
    // Two slots disagree with the runtime's check (the longest-wait clinic and the verdict): the one rejection
    // names both, so one repair can fix both; held to, the answer is accepted as disputed with both parts marked.
    let o = clinic_run_holding_to(
        "Across the clinics the average wait is 32 minutes and Castle Hill has the longest wait, so the standard is achieved.",
        2,
    );
    assert_eq!(
        (o.result.status, o.result.stop_reason),
        (RunStatus::Completed, StopReason::Completed),
        "{:?}",
        o.result.error
    );
    let feedback: Vec<String> = o
        .events
        .iter()
        .filter(|e| e.phase == "final.validated" && e.data["accepted"] == false)
        .map(|e| e.data["message"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(feedback.len(), 1, "{feedback:?}");
    assert!(
        feedback[0].contains("2 places")
            && feedback[0].contains("<longest-wait clinic>")
            && feedback[0].contains("<achieved / missed>"),
        "{}",
        feedback[0]
    );
    // The repair note names the parts and the checks, never the runtime's row or verdict.
    assert!(!feedback[0].contains("Dean Park"), "{}", feedback[0]);
    let claims = verification(&o);
    let disputed: Vec<String> = claims["claims"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["status"] == "disputed")
        .map(|c| format!("{} {}", c["part"], c["stated"]))
        .collect();
    assert_eq!(
        disputed,
        [
            r#""<longest-wait clinic>" "wrong_row""#,
            r#""<achieved / missed>" "verdict_contradicts_evidence""#
        ],
        "{claims}"
    );
    let shown = o.result.final_answer.as_deref().unwrap();
    assert_eq!(shown.matches("[unverified]").count(), 2, "{shown}");
    assert!(shown.contains("Castle Hill [unverified]"), "{shown}");
}

#[test]
fn a_slot_that_is_an_average_columns_own_name_claims_the_columns_average_when_no_row_precedes_it() {
    // People head a per-row column "Average wait (min)" and then ask for "<average wait>" across the rows:
    // with no row named before the slot, it is the column's average (checked: a row's value is refused),
    // not a row's own value left unverified.
    let knowledge = tempfile::tempdir().unwrap();
    let text =
        std::fs::read_to_string(common::knowledge_dir().join("clinic_wait_times.md")).unwrap();
    assert!(text.contains("| Wait (min) |"));
    std::fs::write(
        knowledge.path().join("clinic_wait_times.md"),
        text.replace("| Wait (min) |", "| Average wait (min) |"),
    )
    .unwrap();
    let actions = [
        r#"{"type": "action", "tool": "knowledge_search", "arguments": {"query": "wait times by clinic and wait-time standard"}}"#,
        r#"{"type": "action", "tool": "calculator", "arguments": {"expression": "mean([Average wait])"}}"#,
        r#"{"type": "action", "tool": "calculator", "arguments": {"expression": "mean([Average wait]) <= 30 and max([Average wait]) <= 40"}}"#,
        r#"{"type": "action", "tool": "plot", "arguments": {"column": "[Average wait]", "average": 32, "title": "Walk-in wait by clinic"}}"#,
    ];
    let ids = [
        "obs-knowledge_search-1",
        "obs-calculator-2",
        "obs-calculator-3",
        "obs-plot-4",
    ];
    let finals = [
        "Across the clinics the average wait is 28 minutes and Dean Park has the longest wait, so the standard is missed.",
        "Across the clinics the average wait is 32 minutes and Dean Park has the longest wait, so the standard is missed.",
    ];
    let mut texts: Vec<String> = actions.iter().map(|a| (*a).to_owned()).collect();
    texts.extend(finals.iter().map(|f| {
        serde_json::json!({"type": "final", "answer": f, "evidence_ids": ids}).to_string()
    }));
    let mut policy = runtime::policy::scripted::ScriptedPolicy::from_texts(texts);
    let dir = knowledge.path().to_path_buf();
    let o = common::run_with(&common::task("clinic_wait_times"), &mut policy, move |c| {
        c.knowledge_dir = dir;
    });
    assert_eq!(o.rejection_codes(), ["wrong_quantity"]);
    assert_eq!(
        (o.result.status, o.result.stop_reason),
        (RunStatus::Completed, StopReason::Completed),
        "{:?}",
        o.result.error
    );
    let v = o.result.verification.as_ref().expect("verification");
    assert_eq!(
        v.status,
        runtime::claims::VerificationStatus::Verified,
        "{v:?}"
    );
    let average = v
        .claims
        .iter()
        .find(|c| c.part == "<average wait>")
        .unwrap();
    assert_eq!(average.kind, ClaimKind::Aggregate, "{average:?}");
}

#[test]
fn a_number_in_the_template_s_own_text_is_the_task_s_word_not_a_row_s_value() {
    // `bakery_satisfaction_tolerance_zh`'s template reads "…最低的是<最低门店>，11月服务考核<达标 / 未达标>。":
    // the "11" after the row's slot is the task's month, written by the template, not the model. Read as the
    // lowest store's value, it disputed the right answer (gate probe, before this test).
    let ids = r#"["obs-knowledge_search-1", "obs-calculator-2", "obs-calculator-3", "obs-plot-4"]"#;
    let final_stating = |row: &str| {
        format!(
            r#"{{"type": "final", "slots": {{"平均满意度": "90.5", "最低门店": "{row}", "达标 / 未达标": "达标"}}, "evidence_ids": {ids}}}"#
        )
    };
    let actions = [
        r#"{"type": "action", "tool": "knowledge_search", "arguments": {"query": "各门店满意度 月度考核", "top_k": 3}}"#,
        r#"{"type": "action", "tool": "calculator", "arguments": {"expression": "mean([满意度])"}}"#,
        r#"{"type": "action", "tool": "calculator", "arguments": {"expression": "mean([满意度]) >= 90 and count([满意度] < 85) <= 1"}}"#,
        r#"{"type": "action", "tool": "plot", "arguments": {"column": "[满意度]", "title": "各门店满意度", "average": 90.5}}"#,
    ];
    let o = run_repaired(
        "bakery_satisfaction_tolerance_zh",
        &actions,
        final_stating,
        "人民路店",
        "滨江店",
    );
    // The wrong row is refused for its rank alone; the right one is verified, the month claiming nothing.
    assert_eq!(o.rejection_codes(), ["wrong_row"]);
    assert_eq!(
        verification(&o)["status"],
        "verified",
        "{}",
        verification(&o)
    );
    assert!(
        o.result
            .final_answer
            .as_deref()
            .unwrap()
            .contains("滨江店，11月")
    );
    assert_eq!(o.metrics().task_success, Some(true));
}

/// The clinic task's final answer citing the rule check `check`, with verdict words `verdict`.
fn clinic_final(check: &str, verdict: &str) -> String {
    format!(
        r#"{{"type": "final", "answer": "Across the clinics the average wait is 32 minutes and Dean Park has the longest wait, so the standard is {verdict}.", "evidence_ids": ["obs-knowledge_search-1", "obs-calculator-2", "{check}", "obs-plot-4"]}}"#
    )
}

/// The clinic task's rule check with the average's limit written 40 instead of 30: true where the rule fails.
const CLINIC_WRONG_CHECK: &str = r#"{"type": "action", "tool": "calculator", "arguments": {"expression": "32 <= 40 and 38 <= 40"}}"#;

/// The clinic task's actions up to its plot, with [`CLINIC_WRONG_CHECK`] as the rule check (obs-calculator-3).
fn clinic_actions_with_a_wrong_check() -> Vec<String> {
    vec![
        r#"{"type": "action", "tool": "knowledge_search", "arguments": {"query": "wait times by clinic and wait-time standard"}}"#.to_owned(),
        r#"{"type": "action", "tool": "calculator", "arguments": {"expression": "mean(28, 35, 31.5, 38, 29.5, 33, 29)"}}"#.to_owned(),
        CLINIC_WRONG_CHECK.to_owned(),
        r#"{"type": "action", "tool": "plot", "arguments": {"labels": ["Abbey Road", "Bridgend", "Castle Hill", "Dean Park", "Fairview", "Greenbank", "Hollins"], "values": [28, 35, 31.5, 38, 29.5, 33, 29], "average": 32, "title": "Walk-in wait by clinic"}}"#.to_owned(),
    ]
}

/// The clinic task with [`CLINIC_WRONG_CHECK`], a disputed "achieved", the rule check redone as `recheck`
/// and "missed" citing it; the run and every request the policy was asked.
fn clinic_check_redone(recheck: &str) -> (common::Outcome, Spy) {
    let task = common::task("clinic_wait_times");
    let mut texts = clinic_actions_with_a_wrong_check();
    texts.extend([
        clinic_final("obs-calculator-3", "achieved"),
        serde_json::json!({"type": "action", "tool": "calculator", "arguments": {"expression": recheck}})
            .to_string(),
        clinic_final("obs-calculator-5", "missed"),
    ]);
    let mut spy = Spy {
        inner: runtime::policy::scripted::ScriptedPolicy::from_texts(texts),
        requests: Vec::new(),
    };
    let o = common::run_with(&task, &mut spy, |_| {});
    (o, spy)
}

/// Whether `gap` asks for a calculator call whose result is of `kind`.
fn asks_calculator_for(gap: &runtime::policy::Gap, kind: runtime::policy::ResultKind) -> bool {
    matches!(gap, runtime::policy::Gap::Tool { tool, result: Some(k), .. } if tool == "calculator" && *k == kind)
}

#[test]
fn a_verdict_dispute_reopens_the_rule_check_once_so_a_wrong_comparison_can_be_redone() {
    // Guided mode offered only the final after a verdict dispute, so a model whose own comparison was wrong
    // (here the average's limit written 40 instead of 30) could only contradict its check or repeat it.
    let (o, spy) = clinic_check_redone("32 <= 30 and 38 <= 40");
    assert_eq!(
        (o.result.status, o.result.stop_reason),
        (RunStatus::Completed, StopReason::Completed)
    );
    assert_eq!(o.rejection_codes(), ["verdict_contradicts_evidence"]);
    assert_eq!(
        o.first("final.validated").data["rule_check_reopened"],
        "obs-calculator-3"
    );
    // The request after the dispute asks for the rule check again, not for the final.
    let after = &spy.requests[5];
    assert!(
        asks_calculator_for(&after.gap, runtime::policy::ResultKind::Boolean),
        "{:?}",
        after.gap
    );
    assert!(
        after.missing.iter().any(|m| m.starts_with("calculator")),
        "{:?}",
        after.missing
    );
    assert_eq!(o.metrics().task_success, Some(true));
}

#[test]
fn a_verdict_dispute_names_the_limit_the_models_rule_check_left_out_never_a_computed_value() {
    // The rule check compared both numbers with 40: the average's own limit (30) is missing from it. The
    // repair note names that limit by its key and what it limits, not the average or the row the runtime read.
    let (o, spy) = clinic_check_redone("mean([Wait]) <= 30 and max([Wait]) <= 40");
    let message = o.first_gate_message();
    let message = message.as_str();
    // The step that asks for the check again carries the same note beside its hint.
    let runtime::policy::Gap::Tool { hint, .. } = &spy.requests[5].gap else {
        panic!("{:?}", spy.requests[5].gap)
    };
    assert!(
        hint.ends_with("(again; your rule check obs-calculator-3 (`32 <= 40 and 38 <= 40`): it leaves out the limit \"Maximum average wait\", a limit on the mean of [Wait])"),
        "{hint}"
    );
    // The disputed check stays in the state view, marked where it stands.
    let view = spy.requests[5].state["observations"].as_array().unwrap();
    let old = view.iter().find(|o| o["id"] == "obs-calculator-3").unwrap();
    assert!(
        old["note"].as_str().unwrap().starts_with("disputed"),
        "{old}"
    );
    assert!(
        message.contains(
            "your rule check obs-calculator-3 (`32 <= 40 and 38 <= 40`): it leaves out the limit \"Maximum average wait\", a limit on the mean of [Wait]"
        ),
        "{message}"
    );
    assert!(!message.contains("compare each limit"), "{message}");
    // The limit the check did compare is not named, and no value the runtime computed is written.
    assert!(!message.contains("Maximum wait at any clinic"), "{message}");
    assert!(
        !message.contains("32 >") && !message.contains("Dean Park"),
        "{message}"
    );
    // Redone by column reference, the check follows both limits and the verdict is verified.
    assert_eq!(o.metrics().task_success, Some(true));
}

#[test]
fn a_verdict_dispute_names_the_other_limits_number_and_a_limit_on_every_row_compared_with_the_mean()
{
    // The same rules, checked by reference the wrong way: the average compared with the every-row limit's
    // number, so the average's limit is compared with another's number and the every-row limit with the mean.
    let task = common::task("clinic_wait_times");
    let mut texts = clinic_actions_with_a_wrong_check();
    texts[2] = r#"{"type": "action", "tool": "calculator", "arguments": {"expression": "mean([Wait]) <= 40"}}"#.to_owned();
    texts.extend(std::iter::repeat_n(
        clinic_final("obs-calculator-3", "achieved"),
        3,
    ));
    let mut policy = runtime::policy::scripted::ScriptedPolicy::from_texts(texts);
    let o = common::run_with(&task, &mut policy, |_| {});
    let message = o.first_gate_message();
    assert!(
        message.contains("it compares `mean([Wait])` with the number of another limit, not with the one \"Maximum average wait\" sets"),
        "{message}"
    );
    assert!(
        message.contains("it compares `mean([Wait])` with the limit \"Maximum wait at any clinic\", a limit on every row of [Wait] on its own"),
        "{message}"
    );
    assert_eq!(
        o.result.verification.as_ref().map(|v| v.status),
        Some(runtime::claims::VerificationStatus::Disputed)
    );
}

#[test]
fn a_reopened_rule_check_written_the_same_way_again_is_no_loop_and_the_run_ends_as_an_abstention() {
    // Seen on the suite (1.5B): the model asked to compare again wrote the same comparison, the repeated-result
    // guard stopped the run, and the user got no answer where an abstention naming the dispute was due.
    let task = common::task("clinic_wait_times");
    let mut texts = clinic_actions_with_a_wrong_check();
    texts.push(clinic_final("obs-calculator-3", "achieved"));
    // Written with other spacing (the same resolved comparison), and written exactly as before.
    for again in [
        CLINIC_WRONG_CHECK.replace("32 <= 40", "32<=40"),
        CLINIC_WRONG_CHECK.to_owned(),
    ] {
        let mut texts = texts.clone();
        texts.push(again.clone());
        texts.extend(std::iter::repeat_n(
            clinic_final("obs-calculator-5", "achieved"),
            4,
        ));
        let mut policy = runtime::policy::scripted::ScriptedPolicy::from_texts(texts);
        let o = common::run_with(&task, &mut policy, |_| {});
        assert_eq!(
            (o.result.status, o.result.stop_reason),
            (RunStatus::Completed, StopReason::Completed),
            "{again}: {:?}",
            o.result.error
        );
        assert_eq!(
            o.result.verification.as_ref().map(|v| v.status),
            Some(runtime::claims::VerificationStatus::Disputed),
            "{again}"
        );
    }
}

#[test]
fn a_disputed_quantity_reopens_the_calculation_so_the_model_can_compute_what_its_slot_names() {
    // The model averaged the providers' rates (82) where the slot names the overall rate the knowledge defines
    // (a ratio of totals). Guided mode had only the final left, so the repair's "compute that with the
    // calculator" could not be followed: the calculation is asked for again, once.
    let task = common::task("apprentice_completion_overall");
    let action = |tool: &str, arguments: serde_json::Value| {
        serde_json::json!({"type": "action", "tool": tool, "arguments": arguments}).to_string()
    };
    let last = |value: &str, renewed: &str, calc: &str| {
        serde_json::json!({"type": "final", "answer": format!("The overall completion rate was {value} per 100 starts and Eastway Works had the lowest completion rate, so the contract {renewed}."),
            "evidence_ids": ["obs-knowledge_search-1", calc, "obs-calculator-3", "obs-plot-4"]}).to_string()
    };
    let texts = vec![
        action(
            "knowledge_search",
            serde_json::json!({"query": "completions starts providers funding renewal"}),
        ),
        action(
            "calculator",
            serde_json::json!({"expression": "mean([Completion rate])"}),
        ),
        action(
            "calculator",
            serde_json::json!({"expression": "sum([Completions]) / sum([Starts]) * 100 >= 80"}),
        ),
        action(
            "plot",
            serde_json::json!({"column": "[Completion rate]", "title": "Completion rate"}),
        ),
        last("82", "is not renewed", "obs-calculator-2"),
        action(
            "calculator",
            serde_json::json!({"expression": "sum([Completions]) / sum([Starts]) * 100"}),
        ),
        last("78.5", "is not renewed", "obs-calculator-5"),
    ];
    let mut spy = Spy {
        inner: runtime::policy::scripted::ScriptedPolicy::from_texts(texts),
        requests: Vec::new(),
    };
    let o = common::run_with(&task, &mut spy, |_| {});
    assert_eq!(o.rejection_codes(), ["wrong_quantity"]);
    assert_eq!(
        o.first("final.validated").data["calculation_reopened"],
        "obs-calculator-2"
    );
    // The request after the dispute asks for the calculation again, its old result marked where it stands.
    let after = &spy.requests[5];
    assert!(
        asks_calculator_for(&after.gap, runtime::policy::ResultKind::Number),
        "{:?}",
        after.gap
    );
    let view = after.state["observations"].as_array().unwrap();
    let old = view.iter().find(|o| o["id"] == "obs-calculator-2").unwrap();
    assert!(
        old["note"].as_str().unwrap().starts_with("disputed"),
        "{old}"
    );
    // Only what the final may cite grounds it: the disputed value no longer does.
    let next = &spy.requests[6];
    assert!(
        !next.grounding.numbers.iter().any(|n| n == "82"),
        "{:?}",
        next.grounding.numbers
    );
    assert!(
        next.grounding.numbers.iter().any(|n| n == "78.5"),
        "{:?}",
        next.grounding.numbers
    );
    assert_eq!(
        (o.result.status, o.result.stop_reason),
        (RunStatus::Completed, StopReason::Completed)
    );
    assert_eq!(
        verification(&o)["status"],
        "verified",
        "{}",
        verification(&o)
    );
    assert_eq!(o.metrics().task_success, Some(true));
}
