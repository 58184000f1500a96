//! No grammar carries the runtime's reading of a task: for every suite task, runs driven by random strings of
//! the grammars themselves are made twice — once with the task as written, once with its words deliberately
//! misread (its text and every step's hint replaced by a wrong reading that names other aggregates, the other
//! end, the other verdict, with no number changed) — and every decision's grammar and prefix must be the same
//! text in both. A grammar that read the task's words, a step's hint, a focus column, an asked aggregate or an
//! answer plan derived from them would differ here.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use forge_decoding::Mode;
use forge_decoding::grammar::{AnswerForm, Caps};
use forge_decoding::policy::plan;
use runtime::policy::{DecisionRequest, Policy, PolicyError, PolicyOutput, RunControl};
use runtime::{RunConfig, Task};
use serde_json::Value;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// A wrong reading of `text`: its words in reverse order, then a sentence that asks for the other things.
/// Digits are kept as they stand (numbers in the task's own text are grounding, not reading).
fn misread(text: &str) -> String {
    let words: Vec<&str> = text
        .split_whitespace()
        .filter(|w| !w.chars().any(|c| c.is_ascii_digit()))
        .rev()
        .collect();
    let digits: Vec<&str> = text
        .split_whitespace()
        .filter(|w| w.chars().any(|c| c.is_ascii_digit()))
        .collect();
    format!(
        "{} {} Sum the first column, name the lowest row, the standard is met. 合计第一列，最低者达标。",
        words.join(" "),
        digits.join(" ")
    )
}

/// A copy of the task folder `name` with its text and every hint misread.
fn misread_task(name: &str, into: &Path) -> PathBuf {
    let source = root().join("fixtures/tasks").join(name);
    let folder = into.join(name);
    std::fs::create_dir_all(&folder).unwrap();
    for entry in std::fs::read_dir(&source).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), folder.join(entry.file_name())).unwrap();
    }
    let path = folder.join("task.json");
    let mut task: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let text = task["text"].as_str().unwrap().to_owned();
    task["text"] = Value::String(misread(&text));
    for item in task["required_evidence"].as_array_mut().unwrap() {
        if let Some(hint) = item["hint"].as_str().map(str::to_owned) {
            item["hint"] = Value::String(misread(&hint));
        }
    }
    std::fs::write(&path, serde_json::to_string_pretty(&task).unwrap()).unwrap();
    folder
}

/// Writes a random string of the mode's own grammar and keeps every grammar and prefix it was given.
struct RecordingWalk {
    mode: Mode,
    seed: u64,
    planned: Vec<String>,
}

impl Policy for RecordingWalk {
    fn name(&self) -> String {
        format!("recording-walk:{}", self.mode)
    }
    fn decide(
        &mut self,
        req: &DecisionRequest,
        _: &RunControl,
    ) -> Result<PolicyOutput, PolicyError> {
        let (grammar, prefix) = plan(self.mode, Caps::default(), AnswerForm::Slots, req)
            .map_err(|e| PolicyError::Runtime(e.to_string()))?;
        self.planned.push(format!("{prefix}\n{}", grammar.render()));
        let text = grammar
            .sample(
                self.seed
                    .wrapping_mul(31)
                    .wrapping_add(u64::from(req.step) * 101 + u64::from(req.attempt)),
            )
            .ok_or_else(|| PolicyError::Runtime("the grammar derives nothing".into()))?;
        Ok(PolicyOutput {
            raw_text: text,
            input_tokens: 0,
            output_tokens: 1,
            prefill_tokens_saved: 0,
            temperature: None,
            runtime_prefix: String::new(),
            share: runtime::policy::TokenShare::Unknown {
                reason: "grammar walk: whole strings sampled, not tokens".into(),
            },
        })
    }
}

fn walk(task: &Task, mode: Mode, seed: u64, out: &Path) -> Vec<String> {
    let config = RunConfig::new(
        format!("walk-{mode}-{seed}"),
        root().join("knowledge"),
        out.to_path_buf(),
    );
    let mut policy = RecordingWalk {
        mode,
        seed,
        planned: Vec::new(),
    };
    let control = RunControl::new(Instant::now() + Duration::from_secs(120));
    runtime::run_task(task, &mut policy, &config, &control, &mut |_| {});
    policy.planned
}

#[test]
fn every_suite_tasks_grammars_are_the_same_under_a_deliberately_wrong_reading() {
    let dir = tempfile::tempdir().unwrap();
    let tasks_dir = root().join("fixtures/tasks");
    let mut names: Vec<String> = std::fs::read_dir(&tasks_dir)
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.path().join("task.json").is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert!(names.len() >= 34, "{names:?}");
    let mut compared = 0;
    for name in &names {
        let task = Task::load_checked(tasks_dir.join(name), root().join("knowledge")).unwrap();
        let wrong_folder = misread_task(name, &dir.path().join("misread"));
        let wrong = Task::load_checked(&wrong_folder, root().join("knowledge")).unwrap();
        assert_ne!(task.text(), wrong.text());
        for (mode, seed) in [(Mode::Guided, 1), (Mode::Free, 2)] {
            let as_written = walk(
                &task,
                mode,
                seed,
                &dir.path().join(format!("{name}-{mode}-a")),
            );
            let misread = walk(
                &wrong,
                mode,
                seed,
                &dir.path().join(format!("{name}-{mode}-b")),
            );
            assert!(!as_written.is_empty(), "{name} {mode}: no decision");
            assert_eq!(
                as_written.len(),
                misread.len(),
                "{name} {mode}: the runs took different paths"
            );
            for (step, (a, b)) in as_written.iter().zip(&misread).enumerate() {
                assert!(
                    a == b,
                    "{name} {mode}: decision {step}'s grammar changed with the task's reading"
                );
                compared += 1;
            }
        }
    }
    assert!(
        compared >= names.len() * 4,
        "only {compared} grammars compared"
    );
}
