//! Free mode never dead-ends, checked without a model: in every ledger state a run reaches — each scripted
//! fixture's run, and runs of every suite task driven by random strings of the guided and of the free grammars
//! themselves — the free-mode grammar has no rule that derives nothing, and its samples are decisions the
//! runtime accepts (parsed exactly, arguments valid against the registry), not all of them exact repeats.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use forge_decoding::Mode;
use forge_decoding::grammar::{AnswerForm, Caps};
use forge_decoding::policy::{plan, repeat_prefixes};
use runtime::decision::{Decision, parse_decision};
use runtime::fixture::{Fixture, fixture_files};
use runtime::policy::{DecisionRequest, Gap, Policy, PolicyError, PolicyOutput, RunControl};
use runtime::registry::ToolRegistry;
use runtime::{RunConfig, Task};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// Samples drawn per state (a state passes when each is valid and at least one is not an exact repeat).
const SAMPLES: u64 = 12;

/// Checks the free grammar of one request; returns a description of what is wrong, if anything.
fn free_mode_problem(req: &DecisionRequest) -> Option<String> {
    let registry = ToolRegistry::builtin();
    let tools = registry.tool_names();
    let (grammar, _) = match plan(Mode::Free, Caps::default(), AnswerForm::Slots, req) {
        Ok(planned) => planned,
        Err(e) => return Some(format!("no free grammar: {e}")),
    };
    let dead = grammar.unproductive_rules();
    if !dead.is_empty() {
        return Some(format!("rules that derive nothing: {dead:?}"));
    }
    let banned = repeat_prefixes(req);
    let mut fresh = 0;
    for seed in 0..SAMPLES {
        let Some(text) = grammar.sample(seed * 7919 + u64::from(req.step)) else {
            return Some("the grammar derives no decision".into());
        };
        match parse_decision(&text, &tools, Some(req.answer_template.as_str())) {
            Err(e) => return Some(format!("{text}: not a decision: {e}")),
            Ok(Decision::Action(action)) => {
                if let Err(e) = registry.validate_arguments(&action.tool, &action.arguments) {
                    return Some(format!("{text}: arguments refused: {e}"));
                }
            }
            Ok(Decision::Final(fin)) => match &req.gap {
                Gap::Final { evidence_ids, .. } if &fin.evidence_ids == evidence_ids => {}
                other => return Some(format!("{text}: a final answer offered at {other:?}")),
            },
        }
        if !banned.iter().any(|p| text.starts_with(p.as_str())) {
            fresh += 1;
        }
    }
    (fresh == 0).then(|| "every sample repeats an action already run".into())
}

/// Wraps a policy: checks free mode in every state the run reaches, then lets the inner policy decide.
struct Probe<P> {
    inner: P,
    states: usize,
    problems: Vec<String>,
}

impl<P: Policy> Policy for Probe<P> {
    fn name(&self) -> String {
        format!("probe:{}", self.inner.name())
    }
    fn decide(
        &mut self,
        req: &DecisionRequest,
        control: &RunControl,
    ) -> Result<PolicyOutput, PolicyError> {
        self.states += 1;
        if let Some(problem) = free_mode_problem(req) {
            self.problems.push(format!(
                "step {} attempt {}: {problem}",
                req.step, req.attempt
            ));
        }
        self.inner.decide(req, control)
    }
}

/// A policy that writes a random string of the mode's own grammar: every decision it makes is one a decoder
/// could make, so its runs reach the states a model's runs reach.
struct GrammarWalk {
    mode: Mode,
    seed: u64,
}

impl Policy for GrammarWalk {
    fn name(&self) -> String {
        format!("grammar-walk:{}", self.mode)
    }
    fn decide(
        &mut self,
        req: &DecisionRequest,
        _: &RunControl,
    ) -> Result<PolicyOutput, PolicyError> {
        let (grammar, _) = plan(self.mode, Caps::default(), AnswerForm::Slots, req)
            .map_err(|e| PolicyError::Runtime(e.to_string()))?;
        // Free mode masks exact repeats as the policy does; guided mode has one gap and no such mask.
        let banned = if self.mode == Mode::Free {
            repeat_prefixes(req)
        } else {
            Vec::new()
        };
        let text = (0..40)
            .filter_map(|k| {
                grammar.sample(
                    self.seed
                        .wrapping_mul(31)
                        .wrapping_add(u64::from(req.step) * 101 + k),
                )
            })
            .find(|t| !banned.iter().any(|p| t.starts_with(p.as_str())))
            .ok_or_else(|| PolicyError::Runtime("no fresh decision in 40 samples".into()))?;
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

fn control() -> RunControl {
    RunControl::new(Instant::now() + Duration::from_secs(120))
}

#[test]
fn every_scripted_fixture_state_offers_a_valid_free_decision() {
    let dir = tempfile::tempdir().unwrap();
    let mut states = 0;
    let mut problems = Vec::new();
    for path in fixture_files(&root().join("fixtures")).unwrap() {
        let fixture = Fixture::load(&path).unwrap();
        let Ok(task) = fixture.load_task() else {
            continue;
        };
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        let config = fixture.config(&name, root().join("knowledge"), dir.path().join(&name));
        let mut probe = Probe {
            inner: fixture.policy(),
            states: 0,
            problems: Vec::new(),
        };
        runtime::run_task(&task, &mut probe, &config, &control(), &mut |_| {});
        states += probe.states;
        problems.extend(probe.problems.into_iter().map(|p| format!("{name}: {p}")));
    }
    assert!(states > 100, "only {states} states visited");
    assert_eq!(problems, Vec::<String>::new());
}

#[test]
fn every_suite_task_state_reached_by_grammar_walks_offers_a_valid_free_decision() {
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
    let mut states = 0;
    let mut problems = Vec::new();
    for name in &names {
        let task = Task::load_checked(tasks_dir.join(name), root().join("knowledge")).unwrap();
        for (mode, seed) in [(Mode::Guided, 1), (Mode::Free, 2), (Mode::Free, 3)] {
            let run_id = format!("{name}-{mode}-{seed}");
            let config = RunConfig::new(
                run_id.clone(),
                root().join("knowledge"),
                dir.path().join(&run_id),
            );
            let mut probe = Probe {
                inner: GrammarWalk { mode, seed },
                states: 0,
                problems: Vec::new(),
            };
            let result = runtime::run_task(&task, &mut probe, &config, &control(), &mut |_| {});
            states += probe.states;
            problems.extend(probe.problems.into_iter().map(|p| format!("{run_id}: {p}")));
            if let Some(error) = &result.error {
                assert_ne!(error.code, "policy_failed", "{run_id}: {}", error.message);
            }
        }
    }
    assert!(
        states >= names.len() * 3 * 2,
        "only {states} states visited"
    );
    assert_eq!(problems, Vec::<String>::new());
}
