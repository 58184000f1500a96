//! Tests that run the real Qwen GGUF through llama.cpp: inspection, a guided and a free AgentEval Mini run,
//! cancellation and deadlines during generation. Skipped (with a message) when the model file is absent,
//! failing instead under FORGE_REQUIRE_MODEL=1. Each is bounded to seconds, the runs to well under a minute.

mod common;

use std::time::{Duration, Instant};

use forge_llama::engine::{
    self, Chooser, EngineError, EngineSettings, GenerateRequest, GrammarMode, Sampling, StopCause,
};
use forge_llama::{Mode, ModelPolicy, ModelPolicySettings, task_run};
use runtime::policy::{Policy, PolicyError, RunControl, TokenShare};
use runtime::{RunStatus, StopReason};

#[test]
fn inspect_reports_the_real_model() {
    let _serial = common::serial();
    let Some(path) = common::model_or_skip("inspect_reports_the_real_model") else {
        return;
    };
    let info = forge_llama::inspect(&path).expect("the fetched model inspects cleanly");
    assert_eq!(info.architecture, "qwen2");
    assert_eq!(info.quantization.as_deref(), Some("Q4_K_M"));
    assert!(info.chat_template_present);
    assert_eq!(info.context_length, Some(32768));
    assert!(
        (400_000_000..700_000_000).contains(&info.parameter_count),
        "{}",
        info.parameter_count
    );
    assert_eq!(info.file_name, path.file_name().unwrap().to_string_lossy());
    assert_eq!(info.sha256.len(), 64);
    if info.bytes == 491_400_064 {
        assert_eq!(
            info.sha256,
            "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
        );
    }
    let runtime = info
        .runtime
        .expect("engine feature reports llama.cpp build info");
    assert!(
        runtime.system_info.contains("CPU"),
        "{}",
        runtime.system_info
    );
    // Cached by size + mtime: a second inspection does not hash 500 MB again.
    let again = forge_llama::inspect(&path).unwrap();
    assert_ne!(again.sha256_source, "computed");
    assert_eq!(again.sha256, info.sha256);
}

#[test]
fn truncated_copy_is_model_unavailable_with_only_the_file_name() {
    let _serial = common::serial();
    let Some(path) =
        common::model_or_skip("truncated_copy_is_model_unavailable_with_only_the_file_name")
    else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("half-model.gguf");
    let bytes = std::fs::read(&path).unwrap();
    std::fs::write(&copy, &bytes[..bytes.len() / 2]).unwrap();

    let err = forge_llama::inspect(&copy).unwrap_err();
    assert_eq!(err.file, "half-model.gguf");
    assert!(err.reason.contains("truncated"), "{err}");
    let dir_text = dir.path().display().to_string();
    assert!(!err.to_string().contains(&dir_text), "path leaked: {err}");

    // The engine refuses it the same way, and a run ends failed/model_unavailable without the directory.
    match engine::load(&copy, EngineSettings::default()) {
        Err(EngineError::Unavailable(u)) => assert_eq!(u.file, "half-model.gguf"),
        other => panic!("expected Unavailable, got {:?}", other.map(|_| "a session")),
    }
    let root = common::workspace_root();
    let artifacts = tempfile::tempdir().unwrap();
    let spec = task_run::spec_for(&root, "agent_eval_mini", "truncated", artifacts.path());
    let run = task_run::run_with_model(
        &spec,
        ModelPolicySettings::new(&copy, Mode::Guided),
        &task_run::control_for(&spec.budgets),
        &mut |_| {},
    )
    .unwrap();
    assert_eq!(
        (run.result.status, run.result.stop_reason),
        (RunStatus::Failed, StopReason::ModelUnavailable)
    );
    let error = run.result.error.expect("a public error");
    assert!(
        error.message.contains("half-model.gguf") && !error.message.contains(&dir_text),
        "{error:?}"
    );
}

#[test]
fn guided_run_completes_agent_eval_mini() {
    let _serial = common::serial();
    let Some(path) = common::model_or_skip("guided_run_completes_agent_eval_mini") else {
        return;
    };
    let root = common::workspace_root();
    let artifacts = tempfile::tempdir().unwrap();
    let spec = task_run::spec_for(&root, "agent_eval_mini", "guided-test", artifacts.path());
    let mut phases = Vec::new();
    let run = task_run::run_with_model(
        &spec,
        ModelPolicySettings::new(&path, Mode::Guided),
        &task_run::control_for(&spec.budgets),
        &mut |e| phases.push(e.phase.clone()),
    )
    .unwrap();
    let r = &run.result;
    eprintln!(
        "guided run: {:?}/{:?} in {:.1}s, answer: {:?}",
        r.status,
        r.stop_reason,
        run.wall_ms / 1e3,
        r.final_answer
    );
    for d in &run.decisions {
        eprintln!("  {d:?}");
    }
    assert_eq!(
        (r.status, r.stop_reason),
        (RunStatus::Completed, StopReason::Completed),
        "{:?}",
        r.error
    );
    let metrics = r.metrics.as_ref().expect("metrics");
    assert_eq!(
        metrics.task_success,
        Some(true),
        "{metrics:?} answer={:?}",
        r.final_answer
    );
    let answer = r.final_answer.as_deref().unwrap();
    assert!(answer.contains("79") && answer.contains("72"), "{answer}");
    // KV reuse: every decision after the first reused the shared prefix.
    assert!(
        run.decisions.iter().skip(1).all(|d| d.reused_tokens > 0),
        "{:?}",
        run.decisions
    );
    assert!(metrics.prefill_tokens_saved > 0);
    // In process every output token is classified: the run's counts add up to its output tokens.
    assert_eq!(metrics.share_unknown_decisions, 0);
    assert_eq!(
        metrics.forced_tokens + metrics.choice_tokens,
        metrics.output_tokens,
        "{metrics:?}"
    );
    assert!(metrics.forced_share.is_some(), "{metrics:?}");
    assert_eq!(phases.last().map(String::as_str), Some("run.finished"));
}

#[test]
fn free_runs_never_fail_on_their_grammar() {
    let _serial = common::serial();
    let Some(path) = common::model_or_skip("free_runs_never_fail_on_their_grammar") else {
        return;
    };
    let root = common::workspace_root();
    // AgentEval Mini, and a task whose free runs once ended at their first token ("the grammar allows no
    // token here") or in a banned repeat's dead end.
    for task in ["agent_eval_mini", "clinic_wait_times"] {
        let artifacts = tempfile::tempdir().unwrap();
        let mut spec = task_run::spec_for(&root, task, "free-test", artifacts.path());
        spec.budgets.max_steps = 8;
        let run = task_run::run_with_model(
            &spec,
            ModelPolicySettings::new(&path, Mode::Free),
            &task_run::control_for(&spec.budgets),
            &mut |_| {},
        )
        .unwrap();
        let r = &run.result;
        let success = r.metrics.as_ref().and_then(|m| m.task_success);
        eprintln!(
            "free run {task}: {:?}/{:?} in {:.1}s, task_success={success:?}, answer={:?}",
            r.status,
            r.stop_reason,
            run.wall_ms / 1e3,
            r.final_answer
        );
        assert_eq!(
            r.stop_reason.status(),
            r.status,
            "status and stop_reason must pair"
        );
        assert!(
            !matches!(
                r.stop_reason,
                StopReason::RuntimeError | StopReason::ModelUnavailable
            ),
            "{task}: {:?}",
            r.error
        );
        assert!(
            r.error.as_ref().is_none_or(|e| e.code != "policy_failed"),
            "{task}: {:?}",
            r.error
        );
        // The grammar makes every output a decision: nothing was invalid.
        assert_eq!(
            r.metrics.as_ref().map(|m| m.invalid_decisions),
            Some(0),
            "{task}"
        );
    }
}

/// A grammar with two ways on, the likelier one banned at its end: the model walks into it, finds every
/// token masked at the closing quote, and must step back to the other way.
const TWO_WAYS: &str = "root ::= \"{\\\"k\\\":\\\"\" (\"abc\" | \"xyz\") \"\\\"}\"\n";

#[test]
fn generation_steps_back_from_a_dead_end_its_banned_repeats_make() {
    let _serial = common::serial();
    let Some(path) =
        common::model_or_skip("generation_steps_back_from_a_dead_end_its_banned_repeats_make")
    else {
        return;
    };
    let session = engine::load(&path, EngineSettings::default()).unwrap();
    let mut s = session.lock().unwrap();
    let prompt = s
        .chat_prompt(
            "You reply with JSON only.",
            r#"Reply with exactly {"k":"abc"}"#,
        )
        .unwrap();
    let banned = vec![r#"{"k":"abc""#.to_string()];
    let request = |chooser, seed| GenerateRequest {
        prompt: &prompt,
        prefill: "",
        grammar: Some(TWO_WAYS),
        grammar_mode: GrammarMode::CheckFirst,
        sampling: Sampling {
            chooser,
            seed,
            ..Sampling::default()
        },
        max_new_tokens: 32,
        stop_at_json_end: true,
        banned_prefixes: &banned,
    };
    // Unbanned, the model writes what it was asked for: the banned way is the likelier one.
    let free = s
        .generate(
            &GenerateRequest {
                banned_prefixes: &[],
                ..request(Chooser::Model, 1)
            },
            &mut |_| None,
        )
        .unwrap();
    assert_eq!(free.text, r#"{"k":"abc"}"#);
    let backed_out = s
        .generate(&request(Chooser::Model, 1), &mut |_| None)
        .unwrap();
    assert_eq!(backed_out.text, r#"{"k":"xyz"}"#);
    // The grammar-only chooser: no prompt read, any allowed way, never the banned one.
    for seed in 0..6 {
        let uniform = s
            .generate_uniform(&request(Chooser::GrammarUniform, seed), &mut |_| None)
            .unwrap();
        assert_eq!(uniform.text, r#"{"k":"xyz"}"#, "seed {seed}");
        assert_eq!(uniform.input_tokens, 0);
    }
    let both: std::collections::BTreeSet<String> = (0..12)
        .map(|seed| {
            let r = GenerateRequest {
                banned_prefixes: &[],
                ..request(Chooser::GrammarUniform, seed)
            };
            s.generate_uniform(&r, &mut |_| None).unwrap().text
        })
        .collect();
    assert_eq!(
        both.len(),
        2,
        "a uniform draw takes both ways over a dozen seeds: {both:?}"
    );
}

/// The token share over llama.cpp's own grammar mask and the model's vocabulary: after the runtime's prefix
/// `{"k":"` the grammar leaves one choice (`abc` or `xyz`, whichever token starts it) and forces the rest,
/// however the model spells it; the prefix is in neither count. Both choosers and both grammar modes count alike.
#[test]
fn the_share_counts_one_choice_and_forces_the_rest() {
    let _serial = common::serial();
    let Some(path) = common::model_or_skip("the_share_counts_one_choice_and_forces_the_rest")
    else {
        return;
    };
    let session = engine::load(&path, EngineSettings::default()).unwrap();
    let mut s = session.lock().unwrap();
    let prompt = s
        .chat_prompt("You reply with JSON only.", r#"Reply with {"k":"xyz"}"#)
        .unwrap();
    let request = |chooser, grammar_mode, prefill| GenerateRequest {
        prompt: &prompt,
        prefill,
        grammar: Some(TWO_WAYS),
        grammar_mode,
        sampling: Sampling {
            chooser,
            seed: 3,
            ..Sampling::default()
        },
        max_new_tokens: 32,
        stop_at_json_end: true,
        banned_prefixes: &[],
    };
    for mode in [GrammarMode::CheckFirst, GrammarMode::Full] {
        let g = s
            .generate(&request(Chooser::Model, mode, r#"{"k":""#), &mut |_| None)
            .unwrap();
        assert_eq!(
            g.share,
            TokenShare::Counted {
                forced: g.output_tokens - 1,
                choice: 1
            },
            "{mode:?}: {}",
            g.text
        );
        assert!(g.output_tokens >= 2, "{}", g.text);
    }
    for seed in 0..4 {
        let r = GenerateRequest {
            sampling: Sampling {
                chooser: Chooser::GrammarUniform,
                seed,
                ..Sampling::default()
            },
            ..request(Chooser::GrammarUniform, GrammarMode::Full, r#"{"k":""#)
        };
        let g = s.generate_uniform(&r, &mut |_| None).unwrap();
        assert_eq!(
            g.share,
            TokenShare::Counted {
                forced: g.output_tokens - 1,
                choice: 1
            },
            "seed {seed}: {}",
            g.text
        );
    }
    // A grammar with fixed text, alternatives, digits and a free string: the check-first classification (top
    // candidates, first bytes, one byte's tokens) agrees position by position with the whole-vocabulary walk of
    // `GrammarMode::Full`, on the same greedy text.
    let mixed = r#"root ::= "{\"answer\":\"The wait is " [0-9] [0-9]? " minutes, so the rule is " ("met" | "not met") ". " [a-z ]{0,12} "\"}""#;
    let mixed_request = |mode| GenerateRequest {
        grammar: Some(mixed),
        ..request(Chooser::Model, mode, r#"{"answer":""#)
    };
    let check_first = s
        .generate(&mixed_request(GrammarMode::CheckFirst), &mut |_| None)
        .unwrap();
    let full = s
        .generate(&mixed_request(GrammarMode::Full), &mut |_| None)
        .unwrap();
    assert_eq!(check_first.text, full.text);
    assert_eq!(check_first.share, full.share, "{}", full.text);
    let TokenShare::Counted { forced, choice } = full.share else {
        panic!("counted in process")
    };
    assert!(
        forced >= 5 && choice >= 2,
        "{forced} forced, {choice} choice: {}",
        full.text
    );
    assert!(
        check_first.full_grammar_passes < full.full_grammar_passes,
        "the shortcuts spare whole-vocabulary passes: {} vs {}",
        check_first.full_grammar_passes,
        full.full_grammar_passes
    );
    // Without the prefix the model writes `{"k":"` itself, under the same mask: forced tokens, one choice.
    let g = s
        .generate(
            &request(Chooser::Model, GrammarMode::CheckFirst, ""),
            &mut |_| None,
        )
        .unwrap();
    let TokenShare::Counted { forced, choice } = g.share else {
        panic!("in process the share is counted: {:?}", g.share)
    };
    assert_eq!(
        (choice, forced + choice),
        (1, g.output_tokens),
        "{}",
        g.text
    );
    assert!(
        forced >= 3,
        "the fixed `{{\"k\":\"` and `\"}}` are forced: {}",
        g.text
    );
}

#[test]
fn the_grammar_only_policy_runs_a_task_without_reading_the_prompt() {
    let _serial = common::serial();
    let Some(path) =
        common::model_or_skip("the_grammar_only_policy_runs_a_task_without_reading_the_prompt")
    else {
        return;
    };
    let root = common::workspace_root();
    let artifacts = tempfile::tempdir().unwrap();
    let spec = task_run::spec_for(
        &root,
        "agent_eval_mini",
        "grammar-only-test",
        artifacts.path(),
    );
    let mut config = ModelPolicySettings::new(&path, Mode::Guided);
    config.chooser = Chooser::GrammarUniform;
    config.temperature = 0.7;
    let run = task_run::run_with_model(
        &spec,
        config,
        &task_run::control_for(&spec.budgets),
        &mut |_| {},
    )
    .unwrap();
    let r = &run.result;
    eprintln!(
        "grammar-only run: {:?}/{:?}, answer={:?}",
        r.status, r.stop_reason, r.final_answer
    );
    assert_eq!(r.stop_reason.status(), r.status);
    assert!(
        !matches!(
            r.stop_reason,
            StopReason::RuntimeError | StopReason::ModelUnavailable
        ),
        "{:?}",
        r.error
    );
    assert!(!run.decisions.is_empty());
    assert!(
        run.decisions
            .iter()
            .all(|d| d.input_tokens == 0 && d.prefill_tokens == 0),
        "{:?}",
        run.decisions
    );
}

fn long_request<'a>(prompt: &'a str) -> GenerateRequest<'a> {
    GenerateRequest {
        prompt,
        prefill: "",
        grammar: None,
        grammar_mode: GrammarMode::CheckFirst,
        sampling: Sampling::default(),
        max_new_tokens: 64,
        stop_at_json_end: false,
        banned_prefixes: &[],
    }
}

#[test]
fn cancellation_during_generation_stops_within_one_token() {
    let _serial = common::serial();
    let Some(path) = common::model_or_skip("cancellation_during_generation_stops_within_one_token")
    else {
        return;
    };
    let session = engine::load(&path, EngineSettings::default()).unwrap();
    let mut s = session.lock().unwrap();
    let prompt = s
        .chat_prompt("You count.", "Count from 1 to 100, separated by commas.")
        .unwrap();
    let mut polls_after_cancel = 0;
    let err = s
        .generate(&long_request(&prompt), &mut |generated| {
            if generated >= 3 {
                polls_after_cancel += 1;
                Some(StopCause::Cancelled)
            } else {
                None
            }
        })
        .unwrap_err();
    // The flag went up once 3 tokens existed; not a single further token was decoded.
    assert_eq!(err, EngineError::Cancelled { generated: 3 });
    assert_eq!(polls_after_cancel, 1);
    drop(s);

    // Through the Policy: a cancel flag raised from another thread ends decide() with Cancelled quickly.
    let mut policy = forge_llama::load_policy(ModelPolicySettings::new(&path, Mode::Free)).unwrap();
    let control = RunControl::new(Instant::now() + Duration::from_secs(60));
    let flag = control.clone();
    let raiser = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        flag.cancel();
        Instant::now()
    });
    let request = sample_request();
    let result = policy.decide(&request, &control);
    let returned = Instant::now();
    let raised = raiser.join().unwrap();
    assert_eq!(result, Err(PolicyError::Cancelled));
    // The flag is polled before every llama.cpp call (one token, or one prefill chunk of 64 tokens).
    eprintln!(
        "decide() returned {:?} after the cancel flag went up",
        returned.duration_since(raised)
    );
}

#[test]
fn deadline_during_generation_is_a_timeout() {
    let _serial = common::serial();
    let Some(path) = common::model_or_skip("deadline_during_generation_is_a_timeout") else {
        return;
    };
    let session = engine::load(&path, EngineSettings::default()).unwrap();
    {
        let mut s = session.lock().unwrap();
        let prompt = s
            .chat_prompt("You count.", "Count from 1 to 100, separated by commas.")
            .unwrap();
        let err = s
            .generate(&long_request(&prompt), &mut |g| {
                (g >= 5).then_some(StopCause::Timeout)
            })
            .unwrap_err();
        assert_eq!(err, EngineError::Timeout { generated: 5 });
    }
    // A whole run whose deadline passes while the model works ends stopped/timeout. The model's policy is
    // entered only once the deadline has passed (the runtime checked it just before the call), so the
    // deadline falls inside the first model call on any machine, however fast its first prefill is.
    let root = common::workspace_root();
    let artifacts = tempfile::tempdir().unwrap();
    let spec = task_run::spec_for(&root, "agent_eval_mini", "deadline-test", artifacts.path());
    let task = runtime::Task::load_checked(&spec.task_dir, &spec.knowledge_dir).unwrap();
    let mut config =
        runtime::RunConfig::new(spec.run_id.clone(), &spec.knowledge_dir, &spec.artifact_dir);
    config.budgets = spec.budgets.clone();
    let control = RunControl::new(Instant::now() + Duration::from_millis(50));
    let mut policy = AfterDeadline(forge_llama::policy(ModelPolicySettings::new(
        &path,
        Mode::Guided,
    )));
    let mut phases = Vec::new();
    let result = runtime::run_task(&task, &mut policy, &config, &control, &mut |e| {
        phases.push(e.phase.clone())
    });
    assert_eq!(
        (result.status, result.stop_reason),
        (RunStatus::Stopped, StopReason::Timeout),
        "{phases:?}"
    );
    // The deadline hit inside the first model call (not between steps): no decision was ever made.
    assert!(
        phases.contains(&"model.started".to_string())
            && !phases.iter().any(|p| p.starts_with("decision.")),
        "{phases:?}"
    );
}

/// The model's own policy, called only once the run's deadline has passed.
struct AfterDeadline(ModelPolicy);

impl Policy for AfterDeadline {
    fn name(&self) -> String {
        self.0.name()
    }
    fn decide(
        &mut self,
        request: &runtime::policy::DecisionRequest,
        control: &RunControl,
    ) -> Result<runtime::policy::PolicyOutput, PolicyError> {
        while !control.past_deadline() {
            std::thread::sleep(Duration::from_millis(5));
        }
        self.0.decide(request, control)
    }
}

fn sample_request() -> runtime::policy::DecisionRequest {
    runtime::policy::DecisionRequest {
        step: 1,
        attempt: 0,
        task: "Count the batches in the knowledge base and explain every step in detail.".into(),
        tools: runtime::registry::ToolRegistry::builtin().cards(),
        state: serde_json::json!({"observations": [], "feedback": [], "budget": {}}),
        gap: runtime::policy::Gap::Tool {
            tool: "knowledge_search".into(),
            hint: "find the batches".into(),
            result: None,
        },
        missing: vec!["knowledge_search: find the batches".into()],
        grounding: runtime::policy::Grounding::default(),
        answer_template: "There are <count> batches.".into(),
        verdict_phrases: Default::default(),
        succeeded_actions: Vec::new(),
        repair: None,
        max_new_tokens: 256,
    }
}
