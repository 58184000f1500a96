//! The policy never sees expected.json: a spy policy records every DecisionRequest of runs on a
//! task whose expected.json is full of canaries, and none of them (keys or values) shows up.
//! Also: the state view stays small (10 observations, 4 feedback messages, capped results).

mod common;

use std::path::Path;

use runtime::policy::scripted::ScriptedPolicy;
use runtime::policy::{DecisionRequest, Policy, PolicyError, PolicyOutput, RunControl};
use runtime::{RunStatus, StopReason, Task};
use serde_json::Value;

/// Wraps a scripted policy and keeps the serialized requests it was shown.
struct Spy {
    inner: ScriptedPolicy,
    requests: Vec<Value>,
}

impl Policy for Spy {
    fn name(&self) -> String {
        "spy".into()
    }
    fn decide(
        &mut self,
        request: &DecisionRequest,
        control: &RunControl,
    ) -> Result<PolicyOutput, PolicyError> {
        self.requests.push(serde_json::to_value(request).unwrap());
        self.inner.decide(request, control)
    }
}

fn copy_task(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    std::fs::copy(from.join("task.json"), to.join("task.json")).unwrap();
}

const CANARY_EXPECTED: &str = r#"{
  "format_version": 1,
  "tools": {
    "knowledge_search": { "result": { "data": { "canary_field_kq7": "CANARY-KNOWLEDGE-5521" } } },
    "calculator": { "result": { "value": 913377.25 } },
    "plot": { "result": { "spec": { "average": 424242.5 } } }
  },
  "causal_order": ["knowledge_search", "calculator", "plot"],
  "final_answer": { "contains_all": ["CANARY-ANSWER-8813"], "contains_any": ["CANARY-VERDICT-3090"], "contains_none": [] },
  "protected_stop_reasons": ["max_steps"]
}"#;

#[test]
fn no_request_carries_any_expected_key_or_value() {
    for (task_name, fixture_name) in [
        ("agent_eval_mini", "happy"),
        ("tool_router_bench", "router_happy"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let task_dir = dir.path().join(task_name);
        copy_task(
            &common::fixtures_dir().join("tasks").join(task_name),
            &task_dir,
        );
        std::fs::write(task_dir.join("expected.json"), CANARY_EXPECTED).unwrap();
        let task = Task::load(&task_dir).unwrap();
        let fixture = common::fixture(fixture_name);
        let mut spy = Spy {
            inner: fixture.policy(),
            requests: Vec::new(),
        };
        let o = common::run_with(&task, &mut spy, |_| {});
        assert_eq!(o.result.status, RunStatus::Completed);
        assert_eq!(spy.requests.len(), 4);
        let shown = serde_json::to_string(&spy.requests).unwrap();
        for canary in [
            "CANARY",
            "canary_field_kq7",
            "913377",
            "424242",
            "contains_all",
            "contains_any",
            "protected_stop_reasons",
            "causal_order",
            "expected",
        ] {
            assert!(
                !shown.contains(canary),
                "{task_name}: the policy saw {canary}"
            );
        }
        // The run was still scored against the canary truth, so the file was really read.
        let m = o.metrics();
        assert_eq!(m.task_success, Some(false));
        assert_eq!(m.accurate_actions, Some(0));
    }
}

#[test]
fn real_expected_values_reach_the_policy_only_through_observations() {
    let fixture = common::fixture("happy");
    let task = common::task("agent_eval_mini");
    let mut spy = Spy {
        inner: fixture.policy(),
        requests: Vec::new(),
    };
    let o = common::run_with(&task, &mut spy, |_| {});
    assert_eq!(o.result.stop_reason, StopReason::Completed);
    // Before any observation the request holds no number of the ground truth.
    let first = spy.requests[0].to_string();
    for value in ["72", "78", "79", "81", "85"] {
        assert!(
            !first.contains(value),
            "first request shows {value} before any tool ran: {first}"
        );
    }
    // The request is exactly the documented shape.
    let keys: Vec<&String> = spy.requests[0].as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        [
            "step",
            "attempt",
            "task",
            "tools",
            "state",
            "gap",
            "missing",
            "grounding",
            "answer_template",
            "verdict_phrases",
            "succeeded_actions",
            "repair",
            "max_new_tokens"
        ]
    );
    // Grounding grows only from observations: the final step may use the observed values.
    let last = &spy.requests[3]["grounding"];
    for value in ["72", "79", "85"] {
        assert!(
            last["numbers"]
                .as_array()
                .unwrap()
                .iter()
                .any(|n| n == value),
            "{last}"
        );
    }
    let state_keys: Vec<&String> = spy.requests[3]["state"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(state_keys, ["observations", "feedback", "budget"]);
    assert_eq!(
        spy.requests[3]["state"]["observations"]
            .as_array()
            .unwrap()
            .len(),
        3
    );
    assert_eq!(spy.requests[3]["gap"]["kind"], "final");
}

#[test]
fn repair_request_carries_the_error_and_schema_but_not_the_invalid_text() {
    let fixture = common::fixture("repair_invalid_json");
    let task = common::task("agent_eval_mini");
    let mut spy = Spy {
        inner: fixture.policy(),
        requests: Vec::new(),
    };
    common::run_with(&task, &mut spy, |_| {});
    let repair = &spy.requests[1];
    assert_eq!(repair["attempt"], 1);
    assert_eq!(repair["repair"]["error_code"], "invalid_json");
    assert_eq!(
        repair["repair"]["schema"]["$id"],
        "forge/decision.schema.json"
    );
    let shown = repair.to_string();
    assert!(
        !shown.contains("Hope this helps") && !shown.contains("Sure!"),
        "{shown}"
    );
    let second = &spy.requests[2];
    assert_eq!(second["repair"]["error_code"], "unexpected_field");
    assert!(
        !second
            .to_string()
            .contains("I should look up the numbers first")
    );
}

#[test]
fn state_view_keeps_the_last_10_observations_and_4_feedback_messages() {
    // 11 invalid-argument actions (distinct, so no guard) then one more call to look at.
    let mut texts: Vec<String> = (0..11)
        .map(|i| format!(r#"{{"type":"action","tool":"knowledge_search","arguments":{{"query":"q{i}","top_k":{}}}}}"#, 9 + i))
        .collect();
    texts.push(r#"{"type":"final","answer":"x","evidence_ids":[]}"#.into());
    let mut spy = Spy {
        inner: ScriptedPolicy::from_texts(texts),
        requests: Vec::new(),
    };
    let task = common::task("agent_eval_mini");
    let o = common::run_with(&task, &mut spy, |config| config.budgets.max_steps = 12);
    assert_eq!(o.result.stop_reason, StopReason::MaxSteps);
    let last = spy.requests.last().unwrap();
    let observations = last["state"]["observations"].as_array().unwrap();
    assert_eq!(observations.len(), 10);
    assert_eq!(observations[0]["id"], "obs-knowledge_search-2");
    assert_eq!(observations[9]["attempted_arguments"]["top_k"], 19);
    assert_eq!(last["state"]["feedback"].as_array().unwrap().len(), 4);
    for observation in observations {
        assert!(observation.to_string().len() < 3_500);
    }
    assert_eq!(
        last["state"]["budget"]["steps_left"], 0,
        "steps left after the current one"
    );
}
