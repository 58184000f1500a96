//! The evaluation: many real runs (tasks × modes × temperatures × seeds) through the runtime, each scored by
//! its metrics against the task's ground truth, recorded one JSON line per run (so an interrupted
//! evaluation resumes), then summarised honestly — success with its sample size and Wilson interval,
//! pass^k over seeds, the failure breakdown — into `summary.json`, `report.md` and a chart.
//!
//! It measures and reports; it asserts nothing about how good the model is. A run whose ground truth is
//! unavailable is counted as such, never as a success or a failure. Beside the model, the same tasks run under
//! the grammar-only policy (the same grammars and runtime, tokens drawn uniformly among what the grammar
//! allows), so every report says how much of a success the model earned. This file runs and records;
//! `statistics` summarises, `report` writes.

pub mod report;
pub mod statistics;

pub use report::{out_dir, report_markdown, write_reports};
pub use statistics::{
    ConfigSummary, GRAMMAR_ONLY, Lift, newcombe_difference, pass_hat_k, summarize, wilson,
};

use std::collections::BTreeMap;
use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use runtime::TraceEvent;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::task_run::{self, RunSpec};
use forge_decoding::backend::BackendConfig;
use forge_decoding::generation::Chooser;
use forge_decoding::policy::{Mode, ModelPolicySettings};
use forge_decoding::share::TokenShare;

/// One evaluated run, as written to `runs.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    pub task: String,
    /// `model`, or `grammar-only` (absent in records written before the baseline existed: the model).
    #[serde(default = "model_policy")]
    pub policy: String,
    pub mode: String,
    pub temperature: f32,
    pub seed: u32,
    pub model: String,
    pub status: String,
    pub stop_reason: String,
    /// `None` when the task's ground truth is unavailable (or the run was not scored).
    pub task_success: Option<bool>,
    /// `loaded`, or why not (`unavailable: missing …`).
    pub ground_truth: String,
    pub termination_correctness: Option<bool>,
    pub steps: u32,
    pub tool_calls: u32,
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Rejected final answers by gate code (`ungrounded_number`, `final_missing_evidence`, …).
    pub rejected_finals: BTreeMap<String, u32>,
    /// Invalid decisions by parser code.
    pub invalid_decisions: BTreeMap<String, u32>,
    pub decision_latency_ms: Vec<f64>,
    /// Time to build each decision's grounded grammar (it is rebuilt every step).
    #[serde(default)]
    pub grammar_ms: Vec<f64>,
    /// Where generation ran (`in-process`, `llama-server`, …).
    #[serde(default)]
    pub backend: String,
    pub wall_ms: f64,
    pub final_answer: Option<String>,
    /// The metrics' own account of which Task Success checks failed (when scored).
    pub checks: Value,
    pub error: Option<String>,
    /// `correct`, `abstained`, `wrong_accepted` or `no_answer` (the scorer's outcome; absent in old records).
    #[serde(default)]
    pub outcome: Option<String>,
    /// The claims gate's status for the accepted answer (`verified`, `partial`, `unverified`).
    #[serde(default)]
    pub verification: Option<String>,
    /// The claims it could not verify, as `part: reason`.
    #[serde(default)]
    pub unverified: Vec<String>,
    /// Tokens of each decision, in order: what it was for (`knowledge_search`, …, `final`), read and written.
    #[serde(default)]
    pub decision_tokens: Vec<DecisionTokens>,
    /// Output tokens the decoder's masks forced / left a choice, over the decisions that counted them
    /// (absent in records written before the share was counted: read as 0 with `forced_share` unknown).
    #[serde(default)]
    pub forced_tokens: u64,
    #[serde(default)]
    pub choice_tokens: u64,
    /// Decisions whose share is unknown (a server backend applies the grammar out of sight).
    #[serde(default)]
    pub share_unknown_decisions: u32,
    /// forced / (forced + choice) when every decision was counted; `None` when unknown.
    #[serde(default)]
    pub forced_share: Option<f64>,
}

/// The token cost of one decision (a repair is a decision of its own), and who decided its tokens.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DecisionTokens {
    pub gap: String,
    pub input: u32,
    pub output: u32,
    /// Characters of the prefix the runtime wrote before the policy's first token (not in `output`).
    #[serde(default)]
    pub prefix_chars: usize,
    /// Of `output`, how many tokens the masks forced, or why that is unknown (`None` in old records).
    #[serde(default)]
    pub share: Option<TokenShare>,
}

fn model_policy() -> String {
    Chooser::Model.as_str().to_owned()
}

/// One planned run: (task, policy, mode, temperature, seed).
pub type RunKey = (String, String, String, String, u32);

impl RunRecord {
    pub fn key(&self) -> RunKey {
        (
            self.task.clone(),
            self.policy.clone(),
            self.mode.clone(),
            format!("{}", self.temperature),
            self.seed,
        )
    }
}

/// One run to do.
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedRun {
    pub task: String,
    pub chooser: Chooser,
    pub mode: Mode,
    pub temperature: f32,
    pub seed: u32,
}

impl PlannedRun {
    pub fn key(&self) -> RunKey {
        (
            self.task.clone(),
            self.chooser.as_str().to_owned(),
            self.mode.to_string(),
            format!("{}", self.temperature),
            self.seed,
        )
    }
}

/// What to evaluate.
#[derive(Debug, Clone)]
pub struct Plan {
    pub tasks: Vec<String>,
    /// Who chooses tokens: the model, and (by default beside it) the grammar-only baseline.
    pub choosers: Vec<Chooser>,
    pub modes: Vec<Mode>,
    pub temperatures: Vec<f32>,
    pub seeds: u32,
    pub model_path: PathBuf,
    /// A short name for reports and the output folder (`qwen2.5-coder-0.5b`).
    pub model_name: String,
    pub tasks_dir: PathBuf,
    pub knowledge_dir: PathBuf,
    /// Where generation runs; a server backend allows `parallel` runs at a time.
    pub backend: BackendConfig,
    /// Runs in flight at once (1 = sequential; more needs a server backend with as many slots).
    pub parallel: usize,
    /// CPU threads of the in-process engine (`None`: the engine's default, one per core up to 8). One
    /// thread keeps a shared, busy machine from stalling the engine's thread barrier.
    pub threads: Option<i32>,
    /// How the model writes a final answer (`None`: the catalogue's measured choice for the model); set to
    /// measure the other form.
    pub answer_form: Option<forge_decoding::grammar::AnswerForm>,
    /// The run's wall-clock budget in seconds (`None`: the default budget). A machine shared with
    /// builds decodes several times slower; a longer budget keeps that from scoring as `timeout`.
    pub wall_clock_s: Option<u64>,
}

impl Plan {
    /// Every planned run, in the order they run: seeds outermost, so a partial evaluation already covers every
    /// task once. The grammar-only policy runs once per (task, mode, seed): no temperature applies to a uniform
    /// draw (it is recorded as 0).
    pub fn runs(&self) -> Vec<PlannedRun> {
        let mut out = Vec::new();
        for seed in 0..self.seeds {
            for &mode in &self.modes {
                for &chooser in &self.choosers {
                    let temperatures: &[f32] = match chooser {
                        Chooser::Model => &self.temperatures,
                        Chooser::GrammarUniform => &[0.0],
                    };
                    for &temperature in temperatures {
                        for task in &self.tasks {
                            out.push(PlannedRun {
                                task: task.clone(),
                                chooser,
                                mode,
                                temperature,
                                seed,
                            });
                        }
                    }
                }
            }
        }
        out
    }
}

#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("cannot write {path}: {source}")]
    Write {
        path: String,
        source: std::io::Error,
    },
    #[error("{path} line {line}: not a run record: {source}")]
    Corrupt {
        path: String,
        line: usize,
        source: serde_json::Error,
    },
    #[error("no task folders under {0}")]
    NoTasks(String),
    #[error("chart: {0}")]
    Chart(String),
    #[error(
        "--parallel {0} needs a server backend: one in-process model decodes one run at a time"
    )]
    ParallelInProcess(usize),
}

/// Task folder names under `tasks_dir` (folders holding a `task.json`), sorted.
pub fn all_tasks(tasks_dir: &Path) -> Result<Vec<String>, EvalError> {
    let read = fs::read_dir(tasks_dir).map_err(|source| EvalError::Read {
        path: tasks_dir.display().to_string(),
        source,
    })?;
    let mut names: Vec<String> = read
        .filter_map(Result::ok)
        .filter(|e| e.path().join("task.json").is_file())
        .filter_map(|e| e.file_name().to_str().map(str::to_owned))
        .collect();
    names.sort();
    if names.is_empty() {
        return Err(EvalError::NoTasks(tasks_dir.display().to_string()));
    }
    Ok(names)
}

/// Records already in `runs.jsonl` (an absent file is an empty list; a torn last line is ignored,
/// any other bad line is an error naming it).
pub fn load_records(path: &Path) -> Result<Vec<RunRecord>, EvalError> {
    let text = match fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => {
            return Err(EvalError::Read {
                path: path.display().to_string(),
                source,
            });
        }
    };
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str(line) {
            Ok(record) => out.push(record),
            // A crash mid-append leaves at most the last line torn: that run is simply run again.
            Err(_) if i + 1 == lines.len() && !text.ends_with('\n') => {}
            Err(source) => {
                return Err(EvalError::Corrupt {
                    path: path.display().to_string(),
                    line: i + 1,
                    source,
                });
            }
        }
    }
    Ok(out)
}

fn append_record(path: &Path, record: &RunRecord) -> Result<(), EvalError> {
    let write_err = |source| EvalError::Write {
        path: path.display().to_string(),
        source,
    };
    let mut file = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(write_err)?;
    let line = serde_json::to_string(record).expect("records serialise") + "\n";
    file.write_all(line.as_bytes()).map_err(write_err)?;
    file.sync_data().map_err(write_err)
}

/// Runs every planned run not yet in `jsonl` (resume), appending each record as it finishes.
/// `progress(done, total, record)` is called after each run.
pub fn execute(
    plan: &Plan,
    jsonl: &Path,
    artifact_root: &Path,
    progress: &mut dyn FnMut(usize, usize, &RunRecord),
) -> Result<Vec<RunRecord>, EvalError> {
    let mut records = load_records(jsonl)?;
    records.retain(|r| r.model == plan.model_name);
    let done: Vec<RunKey> = records.iter().map(RunRecord::key).collect();
    let todo: Vec<PlannedRun> = plan
        .runs()
        .into_iter()
        .filter(|run| !done.contains(&run.key()))
        .collect();
    let total = todo.len();
    if plan.parallel > 1 && matches!(plan.backend, BackendConfig::InProcess) {
        return Err(EvalError::ParallelInProcess(plan.parallel));
    }
    if plan.parallel <= 1 {
        for (i, run) in todo.into_iter().enumerate() {
            let record = run_one(plan, &run, artifact_root);
            append_record(jsonl, &record)?;
            progress(i + 1, total, &record);
            records.push(record);
        }
        return Ok(records);
    }
    // N workers share one queue; the server decodes their requests together (continuous batching).
    // Records are appended here, on the caller's thread, in the order runs finish.
    let mut done = 0;
    for_each_in_parallel(
        todo,
        plan.parallel,
        &|run: PlannedRun| run_one(plan, &run, artifact_root),
        &mut |record| {
            append_record(jsonl, &record)?;
            done += 1;
            progress(done, total, &record);
            records.push(record);
            Ok(())
        },
    )?;
    Ok(records)
}

/// Runs `work` on every job with `workers` threads sharing one queue, handing each result to `each` on
/// the caller's thread as it finishes; an error from `each` stops handing out jobs.
fn for_each_in_parallel<J: Send, R: Send>(
    jobs: Vec<J>,
    workers: usize,
    work: &(dyn Fn(J) -> R + Sync),
    each: &mut dyn FnMut(R) -> Result<(), EvalError>,
) -> Result<(), EvalError> {
    let queue = std::sync::Mutex::new(std::collections::VecDeque::from(jobs));
    let (sender, receiver) = std::sync::mpsc::channel::<R>();
    std::thread::scope(|scope| -> Result<(), EvalError> {
        for _ in 0..workers {
            let sender = sender.clone();
            let queue = &queue;
            scope.spawn(move || {
                loop {
                    // The guard must be dropped before the job runs: held across `work` (as a `while let`
                    // scrutinee's temporary is, for the whole loop body) it lets one worker run at a time.
                    let next = queue.lock().unwrap_or_else(|p| p.into_inner()).pop_front();
                    let Some(job) = next else { return };
                    if sender.send(work(job)).is_err() {
                        return;
                    }
                }
            });
        }
        drop(sender);
        for result in receiver.iter() {
            if let Err(e) = each(result) {
                queue.lock().unwrap_or_else(|p| p.into_inner()).clear();
                return Err(e);
            }
        }
        Ok(())
    })
}

fn run_one(plan: &Plan, run: &PlannedRun, artifact_root: &Path) -> RunRecord {
    let PlannedRun {
        task,
        chooser,
        mode,
        temperature,
        seed,
    } = run.clone();
    let task = task.as_str();
    let run_id = format!(
        "eval-{task}-{}-{mode}-t{temperature}-s{seed}",
        chooser.as_str()
    );
    let spec = RunSpec {
        run_id: run_id.clone(),
        task_dir: plan.tasks_dir.join(task),
        knowledge_dir: plan.knowledge_dir.clone(),
        artifact_dir: artifact_root.join(&run_id),
        budgets: runtime::Budgets {
            wall_clock_s: plan
                .wall_clock_s
                .unwrap_or(runtime::Budgets::default().wall_clock_s),
            ..runtime::Budgets::default()
        },
    };
    let mut config = ModelPolicySettings::new(&plan.model_path, mode);
    config.temperature = temperature;
    config.seed = 1000 + seed;
    config.backend = plan.backend.clone();
    config.chooser = chooser;
    if let Some(threads) = plan.threads {
        config.engine.threads = threads;
    }
    if let Some(form) = plan.answer_form {
        config.answer_form = form;
    }
    let mut rejected: BTreeMap<String, u32> = BTreeMap::new();
    let mut invalid: BTreeMap<String, u32> = BTreeMap::new();
    let mut sink = |event: &TraceEvent| match event.phase.as_str() {
        "final.validated" if event.data["accepted"] == false => {
            *rejected
                .entry(event.data["code"].as_str().unwrap_or("?").to_owned())
                .or_default() += 1;
        }
        "decision.invalid" => {
            *invalid
                .entry(event.data["code"].as_str().unwrap_or("?").to_owned())
                .or_default() += 1
        }
        _ => {}
    };
    let mut record = failed_record(plan, task, chooser, mode, temperature, seed);
    match task_run::run_with_model(
        &spec,
        config,
        &task_run::control_for(&spec.budgets),
        &mut sink,
    ) {
        Err(e) => record.error = Some(e.to_string()),
        Ok(run) => record_run(&mut record, &run),
    }
    record.rejected_finals = rejected;
    record.invalid_decisions = invalid;
    let _ = fs::remove_dir_all(&spec.artifact_dir);
    record
}

/// A run's record before it runs: failed with `runtime_error`, nothing counted (what a run that never
/// started reports).
fn failed_record(
    plan: &Plan,
    task: &str,
    chooser: Chooser,
    mode: Mode,
    temperature: f32,
    seed: u32,
) -> RunRecord {
    RunRecord {
        task: task.to_owned(),
        policy: chooser.as_str().to_owned(),
        mode: mode.to_string(),
        temperature,
        seed,
        model: plan.model_name.clone(),
        status: "failed".into(),
        stop_reason: "runtime_error".into(),
        task_success: None,
        ground_truth: "not_scored".into(),
        termination_correctness: None,
        steps: 0,
        tool_calls: 0,
        input_tokens: 0,
        output_tokens: 0,
        rejected_finals: BTreeMap::new(),
        invalid_decisions: BTreeMap::new(),
        decision_latency_ms: Vec::new(),
        grammar_ms: Vec::new(),
        backend: plan.backend.kind().to_owned(),
        wall_ms: 0.0,
        final_answer: None,
        checks: Value::Null,
        error: None,
        outcome: None,
        verification: None,
        unverified: Vec::new(),
        decision_tokens: Vec::new(),
        forced_tokens: 0,
        choice_tokens: 0,
        share_unknown_decisions: 0,
        forced_share: None,
    }
}

/// Fills `record` from a finished run: its status, metrics, verification and per-decision figures.
fn record_run(record: &mut RunRecord, run: &task_run::ModelRun) {
    let r = &run.result;
    record.status = r.status.as_str().into();
    record.stop_reason = r.stop_reason.as_str().into();
    record.ground_truth =
        ground_truth_text(&serde_json::to_value(r).unwrap_or(Value::Null)["ground_truth"]);
    if let Some(m) = &r.metrics {
        record.task_success = m.task_success;
        record.termination_correctness = m.termination_correctness;
        record.steps = m.steps;
        record.tool_calls = m.tool_calls;
        record.input_tokens = m.input_tokens;
        record.output_tokens = m.output_tokens;
        record.forced_tokens = m.forced_tokens;
        record.choice_tokens = m.choice_tokens;
        record.share_unknown_decisions = m.share_unknown_decisions;
        record.forced_share = m.forced_share;
        let metrics = serde_json::to_value(m).unwrap_or(Value::Null);
        record.checks = metrics
            .get("task_success_checks")
            .cloned()
            .unwrap_or(Value::Null);
    }
    record.final_answer = r.final_answer.clone();
    record.outcome = r
        .metrics
        .as_ref()
        .and_then(|m| m.outcome)
        .map(|o| o.as_str().to_owned());
    record.verification = r
        .verification
        .as_ref()
        .map(|v| v.status.as_str().to_owned());
    record.unverified = r
        .verification
        .as_ref()
        .map(|v| v.unverified())
        .unwrap_or_default();
    record.error = r
        .error
        .as_ref()
        .map(|e| format!("{}: {}", e.code, e.message));
    record.decision_latency_ms = run
        .decisions
        .iter()
        .map(|d| (d.latency_ms * 10.0).round() / 10.0)
        .collect();
    record.decision_tokens = run
        .decisions
        .iter()
        .map(|d| DecisionTokens {
            gap: d.gap.clone(),
            input: d.input_tokens,
            output: d.output_tokens,
            prefix_chars: d.prefix_chars,
            share: Some(d.share.clone()),
        })
        .collect();
    record.grammar_ms = run
        .decisions
        .iter()
        .map(|d| (d.grammar_ms * 1000.0).round() / 1000.0)
        .collect();
    record.wall_ms = (run.wall_ms * 10.0).round() / 10.0;
}

/// `loaded`, or `unavailable: <reason>` from the result's ground-truth field (string or object).
fn ground_truth_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Object(m) => {
            let status = m.get("status").and_then(Value::as_str).unwrap_or("unknown");
            match m.get("reason").and_then(Value::as_str) {
                Some(reason) => format!("{status}: {reason}"),
                None => status.to_owned(),
            }
        }
        _ => "not_scored".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::statistics::failed_checks;
    use super::*;

    #[test]
    fn parallel_workers_really_run_at_the_same_time() {
        // Each job waits (up to 10 s) until `workers` jobs are in flight together. If workers ran one at
        // a time (a queue lock held across the job), no job would ever see more than 1 in flight.
        use std::sync::atomic::{AtomicUsize, Ordering};
        let workers = 4;
        let (in_flight, peak) = (AtomicUsize::new(0), AtomicUsize::new(0));
        let work = |job: usize| -> (usize, usize) {
            let now = in_flight.fetch_add(1, Ordering::SeqCst) + 1;
            peak.fetch_max(now, Ordering::SeqCst);
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
            while peak.load(Ordering::SeqCst) < workers && std::time::Instant::now() < deadline {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            in_flight.fetch_sub(1, Ordering::SeqCst);
            (job, peak.load(Ordering::SeqCst))
        };
        let mut results = Vec::new();
        for_each_in_parallel((0..workers).collect(), workers, &work, &mut |r| {
            results.push(r);
            Ok(())
        })
        .unwrap();
        results.sort();
        assert_eq!(
            results,
            (0..workers).map(|j| (j, workers)).collect::<Vec<_>>()
        );
        // An error from the caller's side stops the queue: not every job runs.
        let mut handed = 0;
        let stopped = for_each_in_parallel((0..100).collect(), 2, &|j: usize| j, &mut |_| {
            handed += 1;
            Err(EvalError::ParallelInProcess(0))
        });
        assert!(stopped.is_err());
        assert!(handed == 1);
    }

    #[test]
    fn wilson_interval_matches_known_values() {
        let (lo, hi) = wilson(0, 10);
        assert!(lo == 0.0 && (hi - 0.2775).abs() < 1e-3, "{lo} {hi}");
        let (lo, hi) = wilson(10, 10);
        assert!(
            (lo - 0.7225).abs() < 1e-3 && (hi - 1.0).abs() < 1e-9,
            "{lo} {hi}"
        );
        let (lo, hi) = wilson(15, 16);
        assert!(
            (lo - 0.717).abs() < 2e-3 && (hi - 0.989).abs() < 2e-3,
            "{lo} {hi}"
        );
        assert_eq!(wilson(0, 0), (0.0, 1.0));
    }

    #[test]
    fn pass_hat_k_is_taus_estimator() {
        assert_eq!(pass_hat_k(5, 5, 5), 1.0);
        assert_eq!(pass_hat_k(4, 5, 5), 0.0);
        assert!((pass_hat_k(4, 5, 1) - 0.8).abs() < 1e-12);
        assert!((pass_hat_k(4, 5, 2) - 0.6).abs() < 1e-12); // C(4,2)/C(5,2) = 6/10
        assert!(pass_hat_k(1, 5, 6).is_nan());
    }

    fn record(task: &str, success: Option<bool>, status: &str) -> RunRecord {
        RunRecord {
            task: task.into(),
            policy: "model".into(),
            mode: "guided".into(),
            temperature: 0.7,
            seed: 0,
            model: "m".into(),
            status: status.into(),
            stop_reason: if status == "completed" {
                "completed".into()
            } else {
                "loop_detected".into()
            },
            task_success: success,
            ground_truth: if success.is_some() {
                "loaded".into()
            } else {
                "unavailable: missing".into()
            },
            termination_correctness: None,
            steps: 4,
            tool_calls: 3,
            input_tokens: 1000,
            output_tokens: 100,
            rejected_finals: BTreeMap::from([("ungrounded_number".into(), 1)]),
            invalid_decisions: BTreeMap::new(),
            decision_latency_ms: vec![100.0, 300.0],
            grammar_ms: vec![0.05],
            backend: "in-process".into(),
            wall_ms: 2000.0,
            final_answer: None,
            checks: serde_json::json!({"numbers": false, "verdict": true}),
            error: None,
            outcome: None,
            verification: None,
            unverified: Vec::new(),
            decision_tokens: Vec::new(),
            forced_tokens: 60,
            choice_tokens: 40,
            share_unknown_decisions: 0,
            forced_share: Some(0.6),
        }
    }

    #[test]
    fn summaries_count_honestly() {
        let records = vec![
            record("a", Some(true), "completed"),
            record("a", Some(false), "completed"),
            record("b", Some(false), "stopped"),
            record("c", None, "completed"),
        ];
        let s = &summarize(&records)[0];
        assert_eq!((s.runs, s.scored, s.successes), (4, 3, 1));
        assert_eq!(s.accepted_but_wrong, 1);
        assert_eq!(s.ground_truth_unavailable, 1);
        assert_eq!(s.rejected_finals["ungrounded_number"], 4);
        // Counted for the two runs scored wrong only; `expected: false` is ground truth, not a failure.
        assert_eq!(s.failed_checks["numbers"], 2);
        let mut verdict_false = record("a", Some(false), "completed");
        verdict_false.checks =
            serde_json::json!({"verdict": {"expected": false, "found": "met", "ok": false}});
        assert_eq!(failed_checks(&verdict_false.checks), ["verdict.ok"]);
        assert_eq!(s.per_task["a"], (1, 2));
        let md = report_markdown(&summarize(&records), "");
        assert!(
            md.contains("| m | model | guided | 0.7 | 1/3 (33 %)"),
            "{md}"
        );
        assert!(md.contains("n/a (no grammar-only runs)"), "{md}");
    }

    #[test]
    fn newcombe_interval_matches_the_published_example() {
        // Newcombe (1998), table II, example (a): 56/70 vs 48/80, method 10: 0.0524 to 0.3339.
        let (d, lo, hi) = newcombe_difference(56, 70, 48, 80).unwrap();
        assert!((d - 0.2).abs() < 1e-9, "{d}");
        assert!(
            (lo - 0.0524).abs() < 5e-4 && (hi - 0.3339).abs() < 5e-4,
            "{lo} {hi}"
        );
        assert_eq!(newcombe_difference(1, 0, 1, 2), None);
    }

    #[test]
    fn the_models_lift_is_measured_against_the_grammar_only_runs_of_its_mode() {
        let mut records = Vec::new();
        for (i, ok) in [true, true, true, false].into_iter().enumerate() {
            records.push(record(&format!("t{i}"), Some(ok), "completed"));
        }
        for (i, ok) in [true, false, false, false].into_iter().enumerate() {
            let mut r = record(&format!("t{i}"), Some(ok), "completed");
            r.policy = GRAMMAR_ONLY.into();
            r.temperature = 0.0;
            records.push(r);
        }
        let summaries = summarize(&records);
        assert_eq!(summaries.len(), 2);
        let (model, baseline) = (&summaries[0], &summaries[1]);
        assert_eq!(
            (model.policy.as_str(), baseline.policy.as_str()),
            ("model", GRAMMAR_ONLY)
        );
        let lift = model
            .lift_over_grammar_only
            .as_ref()
            .expect("a baseline of the same mode");
        assert!((lift.difference - 0.5).abs() < 1e-9);
        assert_eq!((lift.baseline_successes, lift.baseline_scored), (1, 4));
        assert!(lift.newcombe_95.0 < 0.5 && lift.newcombe_95.1 > 0.5);
        assert_eq!(baseline.lift_over_grammar_only, None);
        let md = report_markdown(&summaries, "");
        assert!(
            md.contains("| m | grammar-only | guided | uniform | 1/4"),
            "{md}"
        );
        assert!(md.contains("+50 pp"), "{md}");
    }

    #[test]
    fn the_forced_share_is_pooled_per_configuration_and_unknown_runs_are_kept_apart() {
        let counted = |forced: u32, choice: u32, gap: &str| DecisionTokens {
            gap: gap.into(),
            input: 900,
            output: forced + choice,
            prefix_chars: 60,
            share: Some(TokenShare::Counted { forced, choice }),
        };
        let mut records = Vec::new();
        for mode in ["guided", "free"] {
            for (i, ok) in [true, true, false].into_iter().enumerate() {
                let mut r = record(&format!("t{i}"), Some(ok), "completed");
                r.mode = mode.into();
                r.decision_tokens = vec![counted(20, 30, "calculator"), counted(40, 10, "final")];
                (r.forced_tokens, r.choice_tokens, r.forced_share) = (60, 40, Some(0.6));
                if i == 2 {
                    // One run on a server: its share is unknown and stays out of the pool.
                    r.share_unknown_decisions = 2;
                    r.forced_share = None;
                }
                records.push(r);
                let mut g = record(&format!("t{i}"), Some(i == 0), "completed");
                (g.policy, g.temperature, g.mode) = (GRAMMAR_ONLY.into(), 0.0, mode.into());
                g.decision_tokens = vec![counted(45, 5, "calculator"), counted(50, 0, "final")];
                (g.forced_tokens, g.choice_tokens, g.forced_share) = (95, 5, Some(0.95));
                records.push(g);
            }
        }
        let summaries = summarize(&records);
        assert_eq!(summaries.len(), 4);
        for c in &summaries {
            let share = &c.token_share;
            match c.policy.as_str() {
                "model" => {
                    assert_eq!((share.runs_counted, share.runs_unknown), (2, 1));
                    assert_eq!((share.forced_tokens, share.choice_tokens), (120, 80));
                    assert_eq!(share.of_gap("final"), Some(0.8));
                    // The lift is reported in both modes, against that mode's grammar-only runs.
                    let lift = c.lift_over_grammar_only.as_ref().expect(&c.mode);
                    assert!((lift.difference - (2.0 / 3.0 - 1.0 / 3.0)).abs() < 1e-9);
                }
                _ => {
                    assert_eq!(share.forced_share, Some(0.95));
                    assert_eq!(share.of_gap("final"), Some(1.0));
                }
            }
        }
        let md = report_markdown(&summaries, "");
        assert!(md.contains("## Who decided the tokens"), "{md}");
        assert!(
            md.contains("| m | model | free | 0.7 | 2/3 (67 %) | 60 % | 120 / 80 | 80 % | 2 / 1 |"),
            "{md}"
        );
        assert!(
            md.contains("| m | grammar-only | guided | uniform | 1/3 (33 %) | 95 % | 285 / 15 | 100 % | 3 / 0 |"),
            "{md}"
        );
        let json = serde_json::to_value(&summaries[0]).unwrap();
        assert_eq!(
            json["token_share"]["by_gap"]["final"],
            serde_json::json!([80, 20])
        );
    }

    #[test]
    fn the_grammar_only_policy_runs_once_per_task_mode_and_seed() {
        let plan = Plan {
            tasks: vec!["a".into(), "b".into()],
            choosers: vec![Chooser::Model, Chooser::GrammarUniform],
            modes: vec![Mode::Guided, Mode::Free],
            temperatures: vec![0.0, 0.7],
            seeds: 2,
            model_path: PathBuf::from("m.gguf"),
            model_name: "m".into(),
            tasks_dir: PathBuf::new(),
            knowledge_dir: PathBuf::new(),
            backend: BackendConfig::InProcess,
            parallel: 1,
            threads: None,
            answer_form: None,
            wall_clock_s: None,
        };
        let runs = plan.runs();
        let grammar_only = runs
            .iter()
            .filter(|r| r.chooser == Chooser::GrammarUniform)
            .count();
        assert_eq!(runs.len(), 2 * 2 * (2 * 2 + 2));
        assert_eq!(grammar_only, 2 * 2 * 2);
        assert!(
            runs.iter()
                .filter(|r| r.chooser == Chooser::GrammarUniform)
                .all(|r| r.temperature == 0.0)
        );
        // Old records (no policy field) read as the model's.
        let mut old = serde_json::to_value(record("a", Some(true), "completed")).unwrap();
        old.as_object_mut().unwrap().remove("policy");
        let back: RunRecord = serde_json::from_value(old).unwrap();
        assert_eq!(back.policy, "model");
    }

    #[test]
    fn a_record_round_trips_with_its_token_share_and_old_records_read_it_as_unknown() {
        let mut counted = record("a", Some(true), "completed");
        counted.decision_tokens = vec![
            DecisionTokens {
                gap: "calculator".into(),
                input: 900,
                output: 20,
                prefix_chars: 64,
                share: Some(TokenShare::Counted {
                    forced: 12,
                    choice: 8,
                }),
            },
            DecisionTokens {
                gap: "final".into(),
                input: 950,
                output: 30,
                prefix_chars: 80,
                share: Some(TokenShare::Unknown {
                    reason: "llama-server: masks out of sight".into(),
                }),
            },
        ];
        let line = serde_json::to_string(&counted).unwrap();
        let back: RunRecord = serde_json::from_str(&line).unwrap();
        assert_eq!(back, counted);
        let value: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(
            value["decision_tokens"][0]["share"],
            serde_json::json!({"status": "counted", "forced": 12, "choice": 8})
        );
        assert_eq!(value["decision_tokens"][1]["share"]["status"], "unknown");
        assert_eq!(value["forced_share"], 0.6);
        // Written before the share was counted: no counts, the share unknown (never a made-up 0 %).
        let mut old = value.clone();
        for key in [
            "forced_tokens",
            "choice_tokens",
            "share_unknown_decisions",
            "forced_share",
        ] {
            old.as_object_mut().unwrap().remove(key);
        }
        for d in old["decision_tokens"].as_array_mut().unwrap() {
            d.as_object_mut().unwrap().remove("share");
            d.as_object_mut().unwrap().remove("prefix_chars");
        }
        let old: RunRecord = serde_json::from_value(old).unwrap();
        assert_eq!((old.forced_tokens, old.forced_share), (0, None));
        assert_eq!(old.decision_tokens[0].share, None);
        // A share that is neither counted nor unknown is refused, naming the field.
        let mut bad = value;
        bad["decision_tokens"][0]["share"] = serde_json::json!({"status": "guessed", "forced": 1});
        let err = serde_json::from_value::<RunRecord>(bad).unwrap_err();
        assert!(err.to_string().contains("guessed"), "{err}");
    }

    #[test]
    fn torn_last_line_is_ignored_and_other_damage_is_reported() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("runs.jsonl");
        let line = serde_json::to_string(&record("a", Some(true), "completed")).unwrap();
        fs::write(&path, format!("{line}\n{}", &line[..20])).unwrap();
        assert_eq!(load_records(&path).unwrap().len(), 1);
        fs::write(&path, format!("{}\n{line}\n", &line[..20])).unwrap();
        assert!(matches!(
            load_records(&path),
            Err(EvalError::Corrupt { line: 1, .. })
        ));
        assert!(
            load_records(&dir.path().join("absent.jsonl"))
                .unwrap()
                .is_empty()
        );
    }
}
