//! Trace invariants over every fixture run: contiguous seq, run.finished last, no raw model text,
//! no absolute path, no reasoning-like key; the 800-event cap; and one full trace as a snapshot.

mod common;

use std::time::{Duration, Instant};

use proptest::prelude::*;
use runtime::policy::scripted::{ScriptedDecision, ScriptedPolicy};
use runtime::trace::{MAX_TRACE_EVENTS, Tracer, is_forbidden_key, redact_text, sanitize};
use runtime::{BudgetSnapshot, Budgets, StopReason, TraceEvent};
use serde_json::{Value, json};

fn walk<'a>(value: &'a Value, visit: &mut dyn FnMut(Option<&'a str>, &'a Value)) {
    match value {
        Value::Object(map) => {
            for (key, child) in map {
                visit(Some(key), child);
                walk(child, visit);
            }
        }
        Value::Array(items) => items.iter().for_each(|child| {
            visit(None, child);
            walk(child, visit);
        }),
        _ => {}
    }
}

fn assert_clean(
    name: &str,
    events: &[TraceEvent],
    raw_texts: &[String],
    forbidden_paths: &[String],
) {
    let trace = serde_json::to_value(events).unwrap();
    let text = trace.to_string();
    for raw in raw_texts.iter().filter(|r| r.trim().len() >= 12) {
        // A raw output never appears as a stored string (a parsed, canonical decision may).
        let quoted = serde_json::to_string(raw).unwrap();
        assert!(
            !text.contains(&quoted),
            "{name}: raw model text stored: {raw}"
        );
        if serde_json::from_str::<Value>(raw).is_err() {
            let probe: String = raw.chars().take(40).collect();
            assert!(
                !text.contains(&serde_json::to_string(&probe).unwrap()[1..probe.len()]),
                "{name}: invalid output leaked: {raw}"
            );
        }
    }
    for path in forbidden_paths {
        assert!(
            !text.contains(path.as_str()),
            "{name}: absolute path {path} in trace"
        );
    }
    walk(&trace, &mut |key, value| {
        if let Some(key) = key {
            assert!(!is_forbidden_key(key), "{name}: reasoning-like key {key}");
        }
        if let Value::String(s) = value {
            assert!(
                !s.starts_with('/') || !s[1..].contains('/'),
                "{name}: absolute path {s}"
            );
        }
    });
    let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
    assert_eq!(
        seqs,
        (1..=events.len() as u64).collect::<Vec<_>>(),
        "{name}: seq not contiguous"
    );
    assert_eq!(events.last().unwrap().phase, "run.finished", "{name}");
    assert!(events.len() <= MAX_TRACE_EVENTS, "{name}");
}

#[test]
fn no_fixture_trace_holds_raw_text_paths_or_reasoning_keys() {
    let root = common::repo_root().to_string_lossy().into_owned();
    let mut checked = 0;
    let schema: Value =
        serde_json::from_str(include_str!("../../../schemas/trace_event.schema.json")).unwrap();
    let event_schema = jsonschema::validator_for(&schema).expect("trace event schema compiles");
    for path in runtime::fixture::fixture_files(&common::fixtures_dir()).unwrap() {
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        let fixture = common::fixture(&name);
        let o = common::run_fixture(&name);
        let raw: Vec<String> = fixture.decisions.iter().map(|d| d.text.clone()).collect();
        let artifacts = o.artifact_dir.path().to_string_lossy().into_owned();
        assert_clean(
            &name,
            &o.events,
            &raw,
            &[root.clone(), artifacts, "/home/".into(), "/tmp/".into()],
        );
        for event in &o.events {
            let value = serde_json::to_value(event).unwrap();
            assert!(
                event_schema.is_valid(&value),
                "{name}: event {} does not match trace_event.schema.json: {value}",
                event.seq
            );
        }
        // The same holds for the result the server stores next to the trace.
        let result = serde_json::to_string(&o.result).unwrap();
        assert!(
            !result.contains(&root) && !result.contains("/home/") && !result.contains("/tmp/"),
            "{name}: {result}"
        );
        checked += 1;
    }
    assert!(checked >= 20, "only {checked} fixtures found");
}

#[test]
fn reasoning_keys_and_paths_are_scrubbed_from_tool_and_policy_data() {
    // Policy error messages carry paths; the trace shows placeholders instead.
    let task = common::task("agent_eval_mini");
    let mut policy = ScriptedPolicy::new(vec![ScriptedDecision {
        error: Some(runtime::policy::scripted::ScriptedErrorKind::Runtime),
        message: Some(format!(
            "failed reading {}/weights.bin and C:\\models\\q.gguf",
            common::knowledge_dir().display()
        )),
        ..ScriptedDecision::default()
    }]);
    let o = common::run_with(&task, &mut policy, |_| {});
    let text = o.trace_json();
    assert!(
        text.contains("<knowledge>/weights.bin") && text.contains("<path>"),
        "{text}"
    );
    assert!(!text.contains("C:\\\\models"), "{text}");
    assert_eq!(o.result.stop_reason, StopReason::RuntimeError);
}

#[test]
fn trace_is_capped_at_800_events_and_keeps_run_finished() {
    // 100 steps, each: two invalid outputs, then a different invalid-argument action (10 events).
    let mut decisions = Vec::new();
    for step in 0..100 {
        decisions.push(ScriptedDecision::text("not json"));
        decisions.push(ScriptedDecision::text("{\"type\":\"action\"}"));
        decisions.push(ScriptedDecision::text(format!(
            "{{\"type\":\"action\",\"tool\":\"calculator\",\"arguments\":{{\"formula\":\"{step}\"}}}}"
        )));
    }
    let mut policy = ScriptedPolicy::new(decisions);
    let task = common::task("agent_eval_mini");
    let o = common::run_with(&task, &mut policy, |config| {
        config.budgets = Budgets {
            max_steps: 100,
            max_input_tokens: 1_000_000,
            max_output_tokens: 100_000,
            ..Budgets::default()
        };
    });
    assert_eq!(
        o.result.stop_reason,
        StopReason::MaxSteps,
        "{:?}",
        o.result.error
    );
    assert_eq!(o.events.len(), MAX_TRACE_EVENTS);
    assert_eq!(o.result.events as usize, MAX_TRACE_EVENTS);
    assert_eq!(o.events[MAX_TRACE_EVENTS - 2].phase, "trace.truncated");
    assert_eq!(o.count("trace.truncated"), 1);
    let last = o.events.last().unwrap();
    assert_eq!(last.phase, "run.finished");
    assert_eq!(last.seq, MAX_TRACE_EVENTS as u64);
    assert!(last.data["dropped_events"].as_u64().unwrap() > 100);
    assert_eq!(last.data["metrics"]["steps"], 100);
}

#[test]
fn tracer_cap_holds_for_any_event_count() {
    for total in [0usize, 1, 797, 798, 799, 800, 801, 5000] {
        let mut seen = 0usize;
        let mut sink = |_: &TraceEvent| seen += 1;
        let mut tracer = Tracer::new(Instant::now(), &mut sink, vec![]);
        for i in 0..total {
            tracer.emit(
                "tool.started",
                1,
                1,
                json!({ "i": i }),
                0,
                BudgetSnapshot::default(),
            );
        }
        tracer.emit(
            "run.finished",
            1,
            0,
            json!({}),
            0,
            BudgetSnapshot::default(),
        );
        let events = tracer.into_events();
        assert!(events.len() <= MAX_TRACE_EVENTS, "{total}");
        assert_eq!(events.last().unwrap().phase, "run.finished");
        let truncated = events
            .iter()
            .filter(|e| e.phase == "trace.truncated")
            .count();
        assert_eq!(
            truncated,
            usize::from(total > MAX_TRACE_EVENTS - 2),
            "{total}"
        );
        assert_eq!(seen, events.len(), "the sink sees exactly the kept events");
    }
}

proptest! {
    #[test]
    fn sanitize_drops_reasoning_keys_at_any_depth(
        key in prop::sample::select(vec!["thought", "Reasoning", "ANALYSIS", "thoughts", "chain_of_thought"]),
        depth in 0usize..5,
        keep in "[a-z]{1,8}",
    ) {
        prop_assume!(!is_forbidden_key(&keep));
        let mut value = json!({ key: "hidden", keep.clone(): 1 });
        for _ in 0..depth {
            value = json!({ "nested": [value] });
        }
        let clean = sanitize(value, &[]).to_string();
        prop_assert!(!clean.contains("hidden"));
        prop_assert!(clean.contains(&keep));
    }

    #[test]
    fn redact_text_hides_absolute_paths(
        dirs in prop::collection::vec("[a-zA-Z0-9_.-]{1,10}", 2..5),
        prefix in "[a-z ]{0,10}",
    ) {
        prop_assume!(!dirs[0].starts_with('-') && !dirs[0].starts_with('.'));
        let path = format!("/{}", dirs.join("/"));
        let text = format!("{prefix} cannot open {path}: denied");
        let clean = redact_text(&text, &[]);
        prop_assert!(!clean.contains(&path), "{}", clean);
        prop_assert!(clean.contains("<path>"));
    }

    #[test]
    fn redact_text_keeps_arithmetic(a in 0u32..1000, b in 1u32..1000) {
        let text = format!("({a} + {b}) / 4 = x; {a}/{b}");
        prop_assert_eq!(redact_text(&text, &[]), text);
    }
}

fn redact_volatile(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (key, child) in map.iter_mut() {
                if matches!(
                    key.as_str(),
                    "elapsed_ms"
                        | "wall_clock_ms"
                        | "latency_ms"
                        | "tool_latency_ms"
                        | "total_latency_ms"
                        | "model_latency_ms"
                ) || key.ends_with("blake3")
                    || key == "bytes"
                    || key == "score"
                {
                    *child = Value::String(format!("[{key}]"));
                } else if key == "id" && child.as_str().is_some_and(|s| s.starts_with("art-")) {
                    *child = Value::String("[artifact-id]".into());
                } else if key == "file_name" {
                    *child = Value::String("[file]".into());
                } else if key == "summary" && child.as_str().is_some_and(|s| s.contains("art-")) {
                    *child = Value::String("[plot-summary]".into());
                } else if key == "seconds_left" {
                    *child = Value::String("[s]".into());
                } else {
                    redact_volatile(child);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(redact_volatile),
        _ => {}
    }
}

#[test]
fn happy_trace_snapshot() {
    let o = common::run_fixture("happy");
    let mut events = serde_json::to_value(&o.events).unwrap();
    redact_volatile(&mut events);
    insta::assert_json_snapshot!("happy_trace", events, {
        "[].data.run_id" => "[run-id]",
    });
}

#[test]
fn wall_clock_budget_bounds_the_policy() {
    // A policy that would think for 5 s is interrupted by the 1 s run deadline.
    let task = common::task("agent_eval_mini");
    let mut policy = ScriptedPolicy::new(vec![ScriptedDecision {
        sleep_ms: 5_000,
        ..ScriptedDecision::text("{}")
    }]);
    let started = Instant::now();
    let o = common::run_with(&task, &mut policy, |config| config.budgets.wall_clock_s = 1);
    assert!(started.elapsed() < Duration::from_secs(3));
    assert_eq!(o.result.stop_reason, StopReason::Timeout);
    assert_eq!(o.first("model.failed").data["code"], "timeout");
}

#[test]
fn the_trace_schema_refuses_what_the_runtime_never_emits() {
    let schema: Value =
        serde_json::from_str(include_str!("../../../schemas/trace_event.schema.json")).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let o = common::run_fixture("happy");
    let good = serde_json::to_value(&o.events[0]).unwrap();
    assert!(validator.is_valid(&good));
    for (field, value) in [
        ("phase", json!("model.thinking")),
        ("seq", json!(0)),
        ("raw_output", json!("...")),
    ] {
        let mut bad = good.clone();
        bad[field] = value;
        assert!(!validator.is_valid(&bad), "{field}");
    }
}
