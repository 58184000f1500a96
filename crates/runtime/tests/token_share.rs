//! Who wrote each decision, as the runtime records it: the token share a policy reports is added up per run
//! (an unknown share makes the run's share unknown, never a guess), and each valid decision names the fields
//! the runtime's prefix fixed, the fields the policy wrote and the answer the runtime wrote from the policy's
//! slots — without the policy's raw text.

mod common;

use serde_json::json;

#[test]
fn a_guided_runs_shares_add_up_and_each_decision_names_who_wrote_which_field() {
    let o = common::run_fixture("guided_share");
    let m = o.metrics();
    assert_eq!(m.task_success, Some(true));
    assert_eq!((m.forced_tokens, m.choice_tokens), (86, 27));
    assert_eq!(m.forced_tokens + m.choice_tokens, m.output_tokens);
    assert_eq!(m.share_unknown_decisions, 0);
    assert!((m.forced_share.unwrap() - 86.0 / 113.0).abs() < 1e-12);
    let completed: Vec<_> = o
        .events
        .iter()
        .filter(|e| e.phase == "model.completed")
        .collect();
    assert_eq!(
        completed[0].data["share"],
        json!({"status": "counted", "forced": 2, "choice": 9})
    );
    assert_eq!(completed[3].data["forced_share"], json!(1.0));
    let valid: Vec<_> = o
        .events
        .iter()
        .filter(|e| e.phase == "decision.valid")
        .collect();
    assert_eq!(valid.len(), 4);
    assert_eq!(
        valid[1].data["written"],
        json!({
            "runtime_prefix": "{\"type\":\"action\",\"tool\":\"calculator\",\"arguments\":{\"expression\":\"",
            "runtime": ["type", "tool"],
            "policy": ["arguments"],
            "composed": [],
        })
    );
    assert_eq!(
        valid[3].data["written"]["runtime"],
        json!(["type", "evidence_ids"])
    );
    // Given slot by slot: the slots are the policy's, the sentence the runtime wrote from the task's template.
    assert_eq!(valid[3].data["written"]["policy"], json!(["slots"]));
    assert_eq!(valid[3].data["written"]["composed"], json!(["answer"]));
    assert_eq!(
        valid[3].data["decision"]["answer"],
        "Average Task Success is 79; the lowest batch is Batch A with Task Success 72. The release rule is met, so the build is eligible for release."
    );
}

#[test]
fn a_policy_that_cannot_count_leaves_the_runs_share_unknown() {
    // The happy fixture reports no share: a script has no decoder masks, so every decision is unknown, and so
    // is the run's share — its counts stay 0 and are not presented as "0 % forced".
    let o = common::run_fixture("happy");
    let m = o.metrics();
    assert_eq!(m.share_unknown_decisions, 4);
    assert_eq!(
        (m.forced_tokens, m.choice_tokens, m.forced_share),
        (0, 0, None)
    );
    let first = o.first("model.completed");
    assert_eq!(first.data["share"]["status"], "unknown");
    assert!(first.data["forced_share"].is_null());
    // No prefix: every field is the policy's.
    let valid = o.first("decision.valid");
    assert_eq!(valid.data["written"]["runtime"], json!([]));
    assert_eq!(
        valid.data["written"]["policy"],
        json!(["type", "tool", "arguments"])
    );
}
