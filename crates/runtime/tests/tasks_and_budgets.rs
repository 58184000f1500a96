//! Bad input at the runtime's own boundaries: budgets, task folders, knowledge files, fixtures.

mod common;

use std::path::Path;

use runtime::policy::scripted::ScriptedPolicy;
use runtime::task::TaskError;
use runtime::{Budgets, RunStatus, StopReason, Task};

#[test]
fn default_budgets_are_the_specification_defaults_and_valid() {
    let b = Budgets::default();
    assert_eq!(
        (
            b.max_steps,
            b.max_tool_calls,
            b.wall_clock_s,
            b.max_input_tokens,
            b.max_output_tokens,
            b.max_retries
        ),
        (12, 10, 300, 32_000, 4_000, 2)
    );
    assert!(b.validate().is_ok());
}

#[test]
fn out_of_range_budgets_are_all_reported_by_field() {
    let b = Budgets {
        max_retries: 4,
        repeated_action_limit: 1,
        no_progress_limit: 9,
        max_steps: 0,
        ..Budgets::default()
    };
    let errors = b.validate().unwrap_err();
    let fields: Vec<&str> = errors.iter().map(|e| e.field.as_str()).collect();
    assert_eq!(
        fields,
        vec![
            "max_steps",
            "max_retries",
            "repeated_action_limit",
            "no_progress_limit"
        ]
    );
    assert!(
        errors[1].message.contains("0 and 3") && errors[1].message.contains('4'),
        "{}",
        errors[1]
    );
    // Unknown budget fields are refused, not ignored.
    assert!(serde_json::from_str::<Budgets>(r#"{"max_step": 3}"#).is_err());
    let partial: Budgets = serde_json::from_str(r#"{"max_steps": 3}"#).unwrap();
    assert_eq!((partial.max_steps, partial.max_tool_calls), (3, 10));
}

#[test]
fn a_run_with_invalid_budgets_fails_cleanly() {
    let task = common::task("agent_eval_mini");
    let mut policy = ScriptedPolicy::from_texts(Vec::<String>::new());
    let o = common::run_with(&task, &mut policy, |c| c.budgets.max_retries = 7);
    assert_eq!(
        (o.result.status, o.result.stop_reason),
        (RunStatus::Failed, StopReason::RuntimeError)
    );
    assert_eq!(o.result.error.as_ref().unwrap().code, "invalid_budgets");
    assert_eq!(o.events.last().unwrap().phase, "run.finished");
    assert_eq!(o.count("model.started"), 0);
}

fn write_task(dir: &Path, body: &str) -> Result<Task, TaskError> {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("task.json"), body).unwrap();
    Task::load(dir)
}

#[test]
fn bad_task_folders_get_typed_errors() {
    let tmp = tempfile::tempdir().unwrap();
    assert!(matches!(
        Task::load(tmp.path().join("missing")),
        Err(TaskError::Read { .. })
    ));
    assert!(matches!(
        write_task(&tmp.path().join("a"), "{"),
        Err(TaskError::Parse { .. })
    ));
    let good =
        std::fs::read_to_string(common::fixtures_dir().join("tasks/agent_eval_mini/task.json"))
            .unwrap();
    for (name, from, to, needle) in [
        (
            "b",
            "\"knowledge_search\", \"hint\"",
            "\"web_search\", \"hint\"",
            "web_search",
        ),
        (
            "c",
            "\"agent_eval_mini.md\"",
            "\"../secrets.md\"",
            "../secrets.md",
        ),
        (
            "d",
            "\"agent_eval_mini.md\"",
            "\"/etc/passwd\"",
            "plain .md",
        ),
        (
            "e",
            "\"format_version\": 1",
            "\"format_version\": 2",
            "format_version",
        ),
    ] {
        let body = good.replacen(from, to, 1);
        assert_ne!(body, good);
        let error = write_task(&tmp.path().join(name), &body).unwrap_err();
        assert!(matches!(error, TaskError::Invalid { .. }), "{error}");
        assert!(error.to_string().contains(needle), "{error}");
        assert!(
            !error
                .to_string()
                .contains(&tmp.path().to_string_lossy().into_owned()),
            "no absolute path: {error}"
        );
    }
    let extra = good.replacen(
        "\"format_version\": 1",
        "\"format_version\": 1, \"expected\": {}",
        1,
    );
    assert!(
        matches!(
            write_task(&tmp.path().join("f"), &extra),
            Err(TaskError::Parse { .. })
        ),
        "unknown task fields are refused"
    );
}

#[test]
fn new_task_fields_are_checked_and_old_folders_still_load() {
    let tmp = tempfile::tempdir().unwrap();
    let suite =
        std::fs::read_to_string(common::fixtures_dir().join("tasks/clinic_wait_times/task.json"))
            .unwrap();
    for (name, from, to, needle) in [
        // A boolean rule check only from a tool that can return one (x-result-kinds).
        (
            "g",
            "\"tool\": \"calculator\", \"result\": \"boolean\"",
            "\"tool\": \"plot\", \"result\": \"boolean\"",
            "never returns",
        ),
        // The same (tool, result) twice.
        (
            "h",
            "\"result\": \"boolean\"",
            "\"result\": \"number\"",
            "twice",
        ),
        (
            "i",
            "\"true\": [\"achieved\"]",
            "\"true\": []",
            "verdict_phrases",
        ),
    ] {
        let body = suite.replacen(from, to, 1);
        assert_ne!(body, suite, "{name}");
        let error = write_task(&tmp.path().join(name), &body).unwrap_err();
        assert!(error.to_string().contains(needle), "{name}: {error}");
    }
    let bad_kind = suite.replacen("\"result\": \"boolean\"", "\"result\": \"text\"", 1);
    assert!(matches!(
        write_task(&tmp.path().join("j"), &bad_kind),
        Err(TaskError::Parse { .. })
    ));
    // Every folder of the repository loads with its knowledge, in either format.
    for entry in std::fs::read_dir(common::fixtures_dir().join("tasks")).unwrap() {
        let dir = entry.unwrap().path();
        if dir.join("task.json").is_file() {
            Task::load_checked(&dir, common::knowledge_dir())
                .unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        }
    }
}

#[test]
fn load_checked_reads_the_knowledge_the_task_names() {
    let tmp = tempfile::tempdir().unwrap();
    let task_dir = tmp.path().join("t");
    std::fs::create_dir_all(&task_dir).unwrap();
    let good =
        std::fs::read_to_string(common::fixtures_dir().join("tasks/agent_eval_mini/task.json"))
            .unwrap();
    std::fs::write(task_dir.join("task.json"), &good).unwrap();
    let knowledge = tmp.path().join("kb");
    std::fs::create_dir_all(&knowledge).unwrap();
    let missing = Task::load_checked(&task_dir, &knowledge).unwrap_err();
    assert!(
        matches!(&missing, TaskError::Knowledge { file, .. } if file == "agent_eval_mini.md"),
        "{missing}"
    );
    std::fs::write(
        knowledge.join("agent_eval_mini.md"),
        b"# Notes\n\n\xff broken",
    )
    .unwrap();
    let corrupt = Task::load_checked(&task_dir, &knowledge).unwrap_err();
    assert!(
        corrupt.to_string().contains("knowledge_corrupt"),
        "{corrupt}"
    );
    // Prose only: the chart the task asks for has nothing to draw.
    std::fs::write(
        knowledge.join("agent_eval_mini.md"),
        "# Notes\n\nThe release rule is written in prose.\n",
    )
    .unwrap();
    let no_table = Task::load_checked(&task_dir, &knowledge).unwrap_err();
    assert!(
        no_table
            .to_string()
            .contains("no knowledge file has a table"),
        "{no_table}"
    );
    assert!(
        !no_table
            .to_string()
            .contains(&tmp.path().to_string_lossy().into_owned()),
        "no absolute path: {no_table}"
    );
    std::fs::write(
        knowledge.join("agent_eval_mini.md"),
        "# Notes\n\n| Site | Score |\n|---|---|\n| A | 1 |\n",
    )
    .unwrap();
    assert!(Task::load_checked(&task_dir, &knowledge).is_ok());
}

fn knowledge_run(prepare: impl FnOnce(&Path)) -> common::Outcome {
    let knowledge = tempfile::tempdir().unwrap();
    prepare(knowledge.path());
    let fixture = common::fixture("happy");
    let task = common::task("agent_eval_mini");
    // The happy script plus its final once more: the refused final repeats, so the run stops.
    let mut decisions = fixture.decisions.clone();
    decisions.push(decisions.last().unwrap().clone());
    let mut policy = ScriptedPolicy::new(decisions);
    let dir = knowledge.path().to_path_buf();
    let o = common::run_with(&task, &mut policy, move |c| c.knowledge_dir = dir);
    drop(knowledge);
    o
}

#[test]
fn missing_or_corrupt_knowledge_gives_a_failed_observation_with_a_code() {
    let missing = knowledge_run(|_| {});
    let observation = &missing.result.observations[0];
    assert_eq!(
        (
            observation["ok"].as_bool(),
            observation["error"]["code"].as_str()
        ),
        (Some(false), Some("knowledge_missing"))
    );
    assert_eq!(
        missing.count("tool.retry"),
        0,
        "a missing file is not retried"
    );

    let corrupt = knowledge_run(|dir| {
        std::fs::write(dir.join("agent_eval_mini.md"), b"# T\n\n\xff\xfe broken").unwrap()
    });
    let observation = &corrupt.result.observations[0];
    assert_eq!(observation["error"]["code"], "knowledge_corrupt");
    for o in [&missing, &corrupt] {
        // The run goes on: the script's calculator and plot still run, the final is refused.
        assert_eq!(o.result.stop_reason, StopReason::LoopDetected);
        assert_eq!(o.metrics().task_success, Some(false));
        assert!(
            o.events
                .iter()
                .any(|e| e.phase == "final.validated" && e.data["code"] == "final_failed_evidence")
        );
        assert!(
            !o.trace_json().contains("/tmp/"),
            "no absolute path in the trace"
        );
    }
}

#[test]
fn fixture_files_refuse_unknown_fields() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("bad.json");
    std::fs::write(&path, r#"{"format_version":1,"description":"x","decisions":[],"expect":{"status":"completed","stop_reason":"completed"},"expected":{}}"#).unwrap();
    let error = runtime::fixture::Fixture::load(&path).unwrap_err();
    assert!(error.to_string().contains("expected"), "{error}");
    assert!(runtime::fixture::Fixture::load(tmp.path().join("none.json")).is_err());
    assert!(
        runtime::fixture::Fixture::load(common::fixtures_dir().join("happy.json"))
            .map(|f| f.policy())
            .is_ok()
    );
}
