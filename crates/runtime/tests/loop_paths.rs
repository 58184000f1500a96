//! Every path through the loop, driven by scripted fixtures (no model): the happy chain, repair,
//! argument recovery, tool retry/timeout, budgets, premature finals, loop guards, scoring cases,
//! cancellation and policy failures — on both tasks.

mod common;

use common::{Outcome, run_fixture};
use pretty_assertions::assert_eq;
use runtime::{RunStatus, StopReason};

fn assert_outcome(o: &Outcome, status: RunStatus, reason: StopReason) {
    assert_eq!(
        (o.result.status, o.result.stop_reason),
        (status, reason),
        "phases: {:?}",
        o.phases()
    );
    assert_eq!(o.events.last().unwrap().phase, "run.finished");
}

#[test]
fn every_fixture_ends_as_it_says_with_a_pair_from_the_table() {
    for path in runtime::fixture::fixture_files(&common::fixtures_dir()).unwrap() {
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        let fixture = common::fixture(&name);
        let o = run_fixture(&name);
        assert_eq!(
            (o.result.status, o.result.stop_reason),
            (fixture.expect.status, fixture.expect.stop_reason),
            "{name}: {:?} error={:?}",
            o.phases(),
            o.result.error
        );
        assert_eq!(
            o.result.stop_reason.status(),
            o.result.status,
            "{name}: pair outside the table"
        );
        let finished: Vec<_> = o
            .events
            .iter()
            .filter(|e| e.phase == "run.finished")
            .collect();
        assert_eq!(finished.len(), 1, "{name}");
        assert_eq!(o.events.last().unwrap().phase, "run.finished", "{name}");
        assert_eq!(o.result.events as usize, o.events.len(), "{name}");
    }
}

#[test]
fn happy_chain_completes_with_every_metric() {
    let o = run_fixture("happy");
    assert_outcome(&o, RunStatus::Completed, StopReason::Completed);
    assert_eq!(
        o.result.evidence_ids,
        vec!["obs-knowledge_search-1", "obs-calculator-2", "obs-plot-3"]
    );
    assert!(o.result.final_answer.as_deref().unwrap().contains("79"));
    let m = o.metrics();
    assert_eq!(m.task_success, Some(true));
    assert_eq!(m.valid_action_rate, Some(1.0));
    assert_eq!(m.tool_argument_accuracy, Some(1.0));
    assert_eq!(m.recovery_rate, None, "no recoverable failure: N/A, not 0");
    assert_eq!(m.loop_rate, Some(0.0));
    assert_eq!(m.termination_correctness, Some(true));
    assert_eq!((m.steps, m.model_calls, m.tool_calls), (4, 4, 3));
    assert_eq!(
        (m.action_attempts, m.valid_actions, m.accurate_actions),
        (3, 3, Some(3))
    );
    assert_eq!(
        (m.input_tokens, m.output_tokens, m.prefill_tokens_saved),
        (4800, 200, 2700)
    );
    assert_eq!(m.cost_units, (4800.0 + 2.0 * 200.0) / 1000.0);
    assert!(m.total_latency_ms >= m.tool_latency_ms);
    // One real PNG, stored under the artifact dir, referenced by id only.
    assert_eq!(o.result.artifacts.len(), 1);
    let artifact = &o.result.artifacts[0];
    assert_eq!(artifact.media_type, "image/png");
    let bytes = std::fs::read(o.artifact_dir.path().join(&artifact.file_name)).unwrap();
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
    assert_eq!(bytes.len() as u64, artifact.bytes);
    assert_eq!(
        std::fs::read_dir(o.artifact_dir.path()).unwrap().count(),
        1,
        "no orphan files"
    );
    // Observation ids follow global order; the phases follow section 20's order.
    let ids: Vec<&str> = o
        .result
        .observations
        .iter()
        .map(|v| v["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        vec!["obs-knowledge_search-1", "obs-calculator-2", "obs-plot-3"]
    );
    assert_eq!(
        o.phases(),
        vec![
            "run.started",
            "model.started",
            "model.completed",
            "decision.valid",
            "tool.started",
            "tool.observation",
            "model.started",
            "model.completed",
            "decision.valid",
            "tool.started",
            "tool.observation",
            "model.started",
            "model.completed",
            "decision.valid",
            "tool.started",
            "tool.observation",
            "model.started",
            "model.completed",
            "decision.valid",
            "final.validated",
            "run.finished",
        ]
    );
    let seqs: Vec<u64> = o.events.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, (1..=o.events.len() as u64).collect::<Vec<_>>());
    let counts: Vec<u32> = o
        .events
        .iter()
        .filter(|e| e.phase == "tool.observation")
        .map(|e| e.observation_count)
        .collect();
    assert_eq!(counts, vec![1, 2, 3]);
}

#[test]
fn second_task_runs_the_same_chain_on_its_own_data() {
    let o = run_fixture("router_happy");
    assert_outcome(&o, RunStatus::Completed, StopReason::Completed);
    let m = o.metrics();
    assert_eq!(m.task_success, Some(true));
    assert_eq!(m.tool_argument_accuracy, Some(1.0));
    assert_eq!(o.result.observations[1]["result"]["value"], 78);

    let wrong = run_fixture("router_wrong_conclusion");
    assert_outcome(&wrong, RunStatus::Completed, StopReason::Completed);
    assert_eq!(
        wrong.metrics().task_success,
        Some(false),
        "claiming the build ships is wrong for this data"
    );
    assert_eq!(wrong.metrics().tool_argument_accuracy, Some(1.0));

    let recovered = run_fixture("router_repair_and_retry");
    assert_outcome(&recovered, RunStatus::Completed, StopReason::Completed);
    let m = recovered.metrics();
    assert_eq!(m.task_success, Some(true));
    assert_eq!((m.recoverable_failures, m.recovered), (2, 2));
    assert_eq!(m.recovery_rate, Some(1.0));
    assert_eq!(recovered.count("decision.repaired"), 1);
    assert_eq!(recovered.count("tool.retry"), 1);
}

#[test]
fn invalid_output_is_repaired_in_the_same_step() {
    let o = run_fixture("repair_invalid_json");
    assert_outcome(&o, RunStatus::Completed, StopReason::Completed);
    let invalid: Vec<&str> = o
        .events
        .iter()
        .filter(|e| e.phase == "decision.invalid")
        .map(|e| e.data["code"].as_str().unwrap())
        .collect();
    assert_eq!(invalid, vec!["invalid_json", "unexpected_field"]);
    // The refusal is structured: missing contract fields by name, unexpected ones by count.
    let unexpected = o
        .events
        .iter()
        .find(|e| e.data["code"] == "unexpected_field")
        .unwrap();
    assert_eq!(unexpected.data["unexpected_field_count"], 1);
    assert_eq!(unexpected.data["missing_fields"], serde_json::json!([]));
    let repaired = o.first("decision.repaired");
    assert_eq!((repaired.step, repaired.attempt), (1, 2));
    assert_eq!(o.count("model.repair.started"), 2);
    let m = o.metrics();
    assert_eq!(
        (m.steps, m.model_calls),
        (4, 6),
        "repairs add model calls, not steps"
    );
    assert_eq!(
        (m.invalid_decisions, m.recoverable_failures, m.recovered),
        (2, 1, 1)
    );
    assert_eq!(m.recovery_rate, Some(1.0));
    assert_eq!(m.task_success, Some(true));
}

#[test]
fn repair_exhausted_fails_with_invalid_decision() {
    let o = run_fixture("repair_exhausted");
    assert_outcome(&o, RunStatus::Failed, StopReason::InvalidDecision);
    let codes: Vec<&str> = o
        .events
        .iter()
        .filter(|e| e.phase == "decision.invalid")
        .map(|e| e.data["code"].as_str().unwrap())
        .collect();
    assert_eq!(codes, vec!["missing_type", "trailing_text", "unknown_tool"]);
    let missing_type = o.first("decision.invalid");
    assert_eq!(
        missing_type.data["missing_fields"],
        serde_json::json!(["type"])
    );
    assert_eq!(missing_type.data["unexpected_field_count"], 0);
    assert_eq!(o.result.error.as_ref().unwrap().code, "unknown_tool");
    let m = o.metrics();
    assert_eq!((m.steps, m.model_calls, m.tool_calls), (1, 3, 0));
    assert_eq!(m.valid_action_rate, None, "no parsed action: N/A");
    assert_eq!(m.recovery_rate, Some(0.0));
    assert_eq!(m.task_success, Some(false));
    assert_eq!(
        m.termination_correctness,
        Some(false),
        "the task is solvable: giving up is a wrong ending"
    );
}

#[test]
fn invalid_arguments_become_a_failed_observation_then_get_corrected() {
    let o = run_fixture("invalid_arguments_recovered");
    assert_outcome(&o, RunStatus::Completed, StopReason::Completed);
    let rejected = o.first("tool.rejected");
    let observation = &rejected.data["observation"];
    assert_eq!(observation["id"], "obs-calculator-2");
    assert_eq!(observation["ok"], false);
    assert_eq!(observation["error"]["code"], "invalid_arguments");
    assert!(
        observation["error"]["message"]
            .as_str()
            .unwrap()
            .contains("expression"),
        "names the missing field"
    );
    assert_eq!(
        observation["attempted_arguments"]["formula"],
        "(72 + 78 + 81 + 85) / 4"
    );
    assert!(
        observation["error"].get("retryable").is_none(),
        "never dispatched"
    );
    let m = o.metrics();
    assert_eq!(m.tool_calls, 3, "a rejected action is not a tool call");
    assert_eq!((m.action_attempts, m.valid_actions), (4, 3));
    assert_eq!(m.valid_action_rate, Some(0.75));
    assert_eq!((m.recoverable_failures, m.recovered), (1, 1));
    assert_eq!(m.task_success, Some(true));
    assert_eq!(o.result.evidence_ids[1], "obs-calculator-3");
}

#[test]
fn retryable_tool_error_is_replayed_in_the_same_step() {
    let o = run_fixture("tool_retry_recovered");
    assert_outcome(&o, RunStatus::Completed, StopReason::Completed);
    let retry = o.first("tool.retry");
    assert_eq!((retry.step, retry.attempt), (1, 1));
    assert_eq!(retry.data["error"]["retryable"], true);
    let observation = o.first("tool.observation");
    assert_eq!((observation.step, observation.attempt), (1, 2));
    let m = o.metrics();
    assert_eq!(
        (m.steps, m.tool_calls),
        (4, 4),
        "each attempt counts as a tool call"
    );
    assert_eq!((m.recoverable_failures, m.recovered), (1, 1));
}

#[test]
fn tool_timeout_is_retryable() {
    let o = run_fixture("tool_timeout_recovered");
    assert_outcome(&o, RunStatus::Completed, StopReason::Completed);
    let retry = o.first("tool.retry");
    assert_eq!(retry.data["error"]["code"], "tool_timeout");
    assert_eq!(retry.data["tool"], "calculator");
    let started: Vec<u64> = o
        .events
        .iter()
        .filter(|e| e.phase == "tool.started" && e.data["tool"] == "calculator")
        .map(|e| e.data["timeout_ms"].as_u64().unwrap())
        .collect();
    assert_eq!(started, vec![300, 300]);
    assert_eq!(o.metrics().recovery_rate, Some(1.0));
}

#[test]
fn retries_exhausted_leave_one_failed_observation() {
    let o = run_fixture("tool_retries_exhausted");
    assert_outcome(&o, RunStatus::Completed, StopReason::Completed);
    assert_eq!(o.count("tool.retry"), 2);
    assert_eq!(o.count("tool.failed"), 1);
    let failed = &o.result.observations[0];
    assert_eq!(failed["id"], "obs-knowledge_search-1");
    assert_eq!(failed["ok"], false);
    assert_eq!(failed["error"]["code"], "injected_fault");
    assert_eq!(failed["error"]["retryable"], true);
    let m = o.metrics();
    assert_eq!(m.tool_calls, 6, "3 failed attempts + 3 successful calls");
    assert_eq!((m.recoverable_failures, m.recovered), (3, 0));
    assert_eq!(m.task_success, Some(true));
}

#[test]
fn total_deadline_cuts_the_attempt_and_stops_with_timeout() {
    let o = run_fixture("total_deadline");
    assert_outcome(&o, RunStatus::Stopped, StopReason::Timeout);
    let started = o.first("tool.started");
    assert!(
        started.data["timeout_ms"].as_u64().unwrap() <= 1000,
        "attempt bounded by the remaining wall time"
    );
    assert_eq!(o.first("tool.retry").data["error"]["code"], "tool_timeout");
    assert_eq!(o.count("tool.started"), 1, "no retry after the deadline");
    assert_eq!(o.result.observations.len(), 1);
    assert!(o.metrics().total_latency_ms < 2500);
    assert_eq!(
        o.metrics().termination_correctness,
        Some(false),
        "the task is solvable: running out of time is a wrong ending"
    );
}

#[test]
fn each_budget_stops_the_run() {
    let steps = run_fixture("budget_steps");
    assert_outcome(&steps, RunStatus::Stopped, StopReason::MaxSteps);
    assert_eq!((steps.metrics().steps, steps.metrics().tool_calls), (2, 2));

    let tools = run_fixture("budget_tool_calls");
    assert_outcome(&tools, RunStatus::Stopped, StopReason::ToolBudget);
    assert_eq!(tools.metrics().tool_calls, 2);
    assert_eq!(
        tools.count("tool.started"),
        2,
        "plot is refused before dispatch"
    );
    assert_eq!(tools.metrics().action_attempts, 3);

    let input = run_fixture("budget_input_tokens");
    assert_outcome(&input, RunStatus::Stopped, StopReason::TokenBudget);
    assert_eq!(input.metrics().input_tokens, 2400);
    assert_eq!(
        input.count("decision.valid"),
        1,
        "the call that crossed the line is not used"
    );
    assert_eq!(input.metrics().tool_calls, 1);

    let output = run_fixture("budget_output_tokens");
    assert_outcome(&output, RunStatus::Stopped, StopReason::TokenBudget);
    assert_eq!(output.metrics().output_tokens, 120);
    assert_eq!(output.metrics().tool_calls, 2);
    let caps: Vec<u64> = output
        .events
        .iter()
        .filter(|e| e.phase == "model.started")
        .map(|e| e.data["max_new_tokens"].as_u64().unwrap())
        .collect();
    assert_eq!(
        caps,
        vec![100, 60, 20],
        "max_new_tokens shrinks with the remaining output budget"
    );
    for o in [&steps, &tools, &input, &output] {
        assert_eq!(o.metrics().task_success, Some(false));
        assert_eq!(
            o.metrics().termination_correctness,
            Some(false),
            "the task is solvable: a budget stop is a wrong ending"
        );
    }
}

#[test]
fn premature_finals_are_rejected_with_feedback() {
    for (name, code) in [
        ("premature_final_no_evidence", "final_missing_evidence"),
        ("premature_final_stale", "final_stale_evidence"),
        ("premature_final_unknown", "final_unknown_evidence"),
    ] {
        let o = run_fixture(name);
        assert_outcome(&o, RunStatus::Completed, StopReason::Completed);
        let verdicts: Vec<(bool, Option<&str>)> = o
            .events
            .iter()
            .filter(|e| e.phase == "final.validated")
            .map(|e| {
                (
                    e.data["accepted"].as_bool().unwrap(),
                    e.data["code"].as_str(),
                )
            })
            .collect();
        assert_eq!(verdicts, vec![(false, Some(code)), (true, None)], "{name}");
        let m = o.metrics();
        assert_eq!((m.recoverable_failures, m.recovered), (1, 1), "{name}");
        assert_eq!(m.task_success, Some(true), "{name}");
    }
}

#[test]
fn each_loop_guard_stops_with_loop_detected() {
    let action = run_fixture("loop_repeated_action");
    assert_outcome(&action, RunStatus::Stopped, StopReason::LoopDetected);
    assert_eq!(
        action.first("guard.loop_detected").data["code"],
        "repeated_action"
    );
    assert_eq!(
        action.count("tool.started"),
        1,
        "the repeated action is not dispatched"
    );
    assert_eq!(action.metrics().loop_rate, Some(0.5));

    let invalid = run_fixture("loop_repeated_invalid");
    assert_outcome(&invalid, RunStatus::Stopped, StopReason::LoopDetected);
    let guard = invalid.first("guard.no_progress");
    assert_eq!(guard.data["code"], "repeated_invalid_arguments");
    assert!(
        guard.data["validator_error"]
            .as_str()
            .unwrap()
            .contains("expression")
    );
    assert_eq!(
        invalid.metrics().tool_calls,
        1,
        "invalid arguments never reach a tool"
    );
    assert_eq!(invalid.metrics().loop_rate, Some(1.0 / 3.0));

    let result = run_fixture("loop_repeated_result");
    assert_outcome(&result, RunStatus::Stopped, StopReason::LoopDetected);
    assert_eq!(
        result.first("guard.no_progress").data["code"],
        "repeated_result"
    );
    assert_eq!(
        result.metrics().tool_calls,
        3,
        "the result guard fires after the tool ran"
    );

    let finals = run_fixture("loop_repeated_final");
    assert_outcome(&finals, RunStatus::Stopped, StopReason::LoopDetected);
    assert_eq!(
        finals.first("guard.loop_detected").data["code"],
        "repeated_final"
    );
    assert_eq!(finals.metrics().loop_rate, None, "no action proposed: N/A");

    for o in [&action, &invalid, &result, &finals] {
        assert_eq!(
            o.metrics().termination_correctness,
            Some(false),
            "the task is solvable: a loop is a wrong ending"
        );
        assert_eq!(o.metrics().task_success, Some(false));
    }
}

#[test]
fn causal_order_violation_completes_but_fails_the_task() {
    let o = run_fixture("causal_order_violation");
    assert_outcome(&o, RunStatus::Completed, StopReason::Completed);
    let m = o.metrics();
    assert_eq!(m.task_success, Some(false));
    assert_eq!(
        m.accurate_actions,
        Some(2),
        "the calculator ran before any knowledge: not grounded"
    );
    assert_eq!(m.termination_correctness, Some(true));
}

#[test]
fn wrong_value_lowers_accuracy() {
    let o = run_fixture("wrong_value");
    assert_outcome(&o, RunStatus::Completed, StopReason::Completed);
    assert_eq!(o.result.observations[1]["result"]["value"], 78.5);
    // 78.5 was computed over a number no observation holds: the answer stating it is refused.
    let rejected = o
        .events
        .iter()
        .find(|e| e.phase == "final.validated")
        .unwrap();
    assert_eq!(
        rejected.data["code"], "ungrounded_number",
        "{}",
        rejected.data
    );
    let m = o.metrics();
    // The plot still charts the wrong average, so the task fails; two of four actions were accurate.
    assert_eq!(m.task_success, Some(false));
    assert_eq!(m.accurate_actions, Some(2));
    assert_eq!(m.tool_argument_accuracy, Some(0.5));
    assert_eq!(m.valid_action_rate, Some(1.0));
}

#[test]
fn a_host_shutdown_ends_cancelled_shutdown_and_a_user_cancel_stays_cancelled() {
    let fixture = common::fixture("happy");
    let task = common::task(&fixture.task);
    let artifact_dir = tempfile::tempdir().unwrap();
    let config = fixture.config("run-shutdown", common::knowledge_dir(), artifact_dir.path());
    for (shutdown, reason) in [(false, StopReason::Cancelled), (true, StopReason::Shutdown)] {
        let control = runtime::policy::RunControl::new(
            std::time::Instant::now() + std::time::Duration::from_secs(60),
        );
        control.cancel();
        control
            .shutdown
            .store(shutdown, std::sync::atomic::Ordering::SeqCst);
        let mut events = Vec::new();
        let result = runtime::run_task(
            &task,
            &mut fixture.policy(),
            &config,
            &control,
            &mut |e: &runtime::TraceEvent| events.push(e.clone()),
        );
        assert_eq!(
            (result.status, result.stop_reason),
            (RunStatus::Cancelled, reason)
        );
        let finished = events.last().unwrap();
        assert_eq!(
            (finished.phase.as_str(), &finished.data["stop_reason"]),
            ("run.finished", &serde_json::json!(reason.as_str()))
        );
    }
}

#[test]
fn cancellation_mid_run_stops_at_the_next_step() {
    let o = run_fixture("cancel_mid_run");
    assert_outcome(&o, RunStatus::Cancelled, StopReason::Cancelled);
    assert_eq!(o.metrics().steps, 2);
    assert_eq!(
        o.metrics().tool_calls,
        1,
        "cancel is checked before dispatch: the calculator never ran"
    );
    assert_eq!(o.count("decision.valid"), 2);
    assert_eq!(o.count("model.started"), 2);
    assert_eq!(o.metrics().task_success, Some(false));
    assert_eq!(o.metrics().termination_correctness, Some(true));
}

#[test]
fn policy_failures_end_without_metrics() {
    let o = run_fixture("model_unavailable");
    assert_outcome(&o, RunStatus::Failed, StopReason::ModelUnavailable);
    assert!(o.result.metrics.is_none());
    let error = o.result.error.as_ref().unwrap();
    assert_eq!(error.code, "model_unavailable");
    assert!(
        error.message.contains("<path>") && !error.message.contains("/home/alice"),
        "{}",
        error.message
    );
    assert!(!o.trace_json().contains("/home/alice"));

    let o = run_fixture("policy_runtime_error");
    assert_outcome(&o, RunStatus::Failed, StopReason::RuntimeError);
    assert!(o.result.metrics.is_none());
    assert_eq!(o.result.error.as_ref().unwrap().code, "policy_failed");
}

#[test]
fn hostile_tool_input_is_refused_with_codes_and_the_run_goes_on() {
    let o = run_fixture("hostile_tool_input");
    assert_outcome(&o, RunStatus::Completed, StopReason::Completed);
    let failures: Vec<(String, String)> = o
        .result
        .observations
        .iter()
        .filter(|obs| obs["ok"] == false)
        .map(|obs| {
            (
                obs["tool"].as_str().unwrap().to_owned(),
                obs["error"]["code"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let expected: Vec<(String, String)> = [
        ("calculator", "forbidden_token"),
        ("calculator", "overflow"),
        ("calculator", "division_by_zero"),
        ("calculator", "invalid_arguments"),
        ("plot", "invalid_arguments"),
        ("plot", "invalid_arguments"),
        ("plot", "invalid_arguments"),
    ]
    .iter()
    .map(|(t, c)| ((*t).to_owned(), (*c).to_owned()))
    .collect();
    assert_eq!(failures, expected);
    let decision_errors: Vec<&str> = o
        .events
        .iter()
        .filter(|e| e.phase == "decision.invalid")
        .map(|e| e.data["code"].as_str().unwrap())
        .collect();
    assert_eq!(
        decision_errors,
        vec!["invalid_json"],
        "NaN is not JSON: a decision error, repaired in the step"
    );
    let m = o.metrics();
    assert_eq!(
        (m.steps, m.model_calls, m.tool_calls),
        (11, 12, 6),
        "only dispatched attempts count as tool calls"
    );
    assert_eq!(
        (m.action_attempts, m.valid_actions, m.accurate_actions),
        (10, 6, Some(3))
    );
    assert_eq!(m.task_success, Some(true));
}
