//! The evaluation: many real runs (tasks × modes × temperatures × seeds) through the runtime, each scored by
//! its metrics against the task's ground truth, recorded one JSON line per run (so an interrupted
//! evaluation resumes), then summarised honestly — success with its sample size and Wilson interval,
//! pass^k over seeds, the failure breakdown — into `summary.json`, `report.md` and a chart.
//!
//! It measures and reports; it asserts nothing about how good the model is. A run whose ground truth is
//! unavailable is counted as such, never as a success or a failure.

use std::collections::BTreeMap;
use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use runtime::TraceEvent;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::backend::BackendConfig;
use crate::harness::{self, RunSpec};
use crate::policy::{LlamaConfig, Mode};

/// One evaluated run, as written to `runs.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    pub task: String,
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
}

impl RunRecord {
    pub fn key(&self) -> (String, String, String, u32) {
        (
            self.task.clone(),
            self.mode.clone(),
            format!("{}", self.temperature),
            self.seed,
        )
    }
}

/// What to evaluate.
#[derive(Debug, Clone)]
pub struct Plan {
    pub tasks: Vec<String>,
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
    /// The run's wall-clock budget in seconds (`None`: the default budget). A machine shared with
    /// builds decodes several times slower; a longer budget keeps that from scoring as `timeout`.
    pub wall_clock_s: Option<u64>,
}

impl Plan {
    /// Every (task, mode, temperature, seed), in the order they run: seeds outermost, so a partial
    /// evaluation already covers every task once.
    pub fn runs(&self) -> Vec<(String, Mode, f32, u32)> {
        let mut out = Vec::new();
        for seed in 0..self.seeds {
            for &mode in &self.modes {
                for &temperature in &self.temperatures {
                    for task in &self.tasks {
                        out.push((task.clone(), mode, temperature, seed));
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
    let done: Vec<_> = records.iter().map(RunRecord::key).collect();
    let todo: Vec<_> = plan
        .runs()
        .into_iter()
        .filter(|(task, mode, temp, seed)| {
            !done.contains(&(task.clone(), mode.to_string(), format!("{temp}"), *seed))
        })
        .collect();
    let total = todo.len();
    if plan.parallel > 1 && matches!(plan.backend, BackendConfig::InProcess) {
        return Err(EvalError::ParallelInProcess(plan.parallel));
    }
    if plan.parallel <= 1 {
        for (i, (task, mode, temperature, seed)) in todo.into_iter().enumerate() {
            let record = run_one(plan, &task, mode, temperature, seed, artifact_root);
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
        &|(task, mode, temperature, seed)| run_one(plan, &task, mode, temperature, seed, artifact_root),
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
            scope.spawn(move || loop {
                // The guard must be dropped before the job runs: held across `work` (as a `while let`
                // scrutinee's temporary is, for the whole loop body) it lets one worker run at a time.
                let next = queue.lock().unwrap_or_else(|p| p.into_inner()).pop_front();
                let Some(job) = next else { return };
                if sender.send(work(job)).is_err() {
                    return;
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

fn run_one(
    plan: &Plan,
    task: &str,
    mode: Mode,
    temperature: f32,
    seed: u32,
    artifact_root: &Path,
) -> RunRecord {
    let run_id = format!("eval-{task}-{mode}-t{temperature}-s{seed}");
    let spec = RunSpec {
        run_id: run_id.clone(),
        task_dir: plan.tasks_dir.join(task),
        knowledge_dir: plan.knowledge_dir.clone(),
        artifact_dir: artifact_root.join(&run_id),
        budgets: runtime::Budgets {
            wall_clock_s: plan.wall_clock_s.unwrap_or(runtime::Budgets::default().wall_clock_s),
            ..runtime::Budgets::default()
        },
    };
    let mut config = LlamaConfig::new(&plan.model_path, mode);
    config.temperature = temperature;
    config.seed = 1000 + seed;
    config.backend = plan.backend.clone();
    if let Some(threads) = plan.threads {
        config.engine.threads = threads;
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
    let mut record = RunRecord {
        task: task.to_owned(),
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
    };
    match harness::run_with_model(
        &spec,
        config,
        &harness::control_for(&spec.budgets),
        &mut sink,
    ) {
        Err(e) => record.error = Some(e.to_string()),
        Ok(run) => {
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
                let metrics = serde_json::to_value(m).unwrap_or(Value::Null);
                record.checks = metrics
                    .get("task_success_checks")
                    .cloned()
                    .unwrap_or(Value::Null);
            }
            record.final_answer = r.final_answer.clone();
            record.outcome = r.metrics.as_ref().and_then(|m| m.outcome).map(|o| o.as_str().to_owned());
            record.verification = r.verification.as_ref().map(|v| v.status.as_str().to_owned());
            record.unverified = r.verification.as_ref().map(|v| v.unverified()).unwrap_or_default();
            record.error = r
                .error
                .as_ref()
                .map(|e| format!("{}: {}", e.code, e.message));
            record.decision_latency_ms = run
                .decisions
                .iter()
                .map(|d| (d.latency_ms * 10.0).round() / 10.0)
                .collect();
            record.grammar_ms = run
                .decisions
                .iter()
                .map(|d| (d.grammar_ms * 1000.0).round() / 1000.0)
                .collect();
            record.wall_ms = (run.wall_ms * 10.0).round() / 10.0;
        }
    }
    record.rejected_finals = rejected;
    record.invalid_decisions = invalid;
    let _ = fs::remove_dir_all(&spec.artifact_dir);
    record
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

/// Wilson score interval for `successes` out of `n` at 95 % (z = 1.96); `(0, 1)` when n = 0.
pub fn wilson(successes: u32, n: u32) -> (f64, f64) {
    if n == 0 {
        return (0.0, 1.0);
    }
    let z = 1.959_963_984_540_054_f64;
    let n_f = f64::from(n);
    let p = f64::from(successes) / n_f;
    let denominator = 1.0 + z * z / n_f;
    let centre = p + z * z / (2.0 * n_f);
    let margin = z * ((p * (1.0 - p) + z * z / (4.0 * n_f)) / n_f).sqrt();
    (
        ((centre - margin) / denominator).max(0.0),
        ((centre + margin) / denominator).min(1.0),
    )
}

fn choose(n: u32, k: u32) -> f64 {
    if k > n {
        return 0.0;
    }
    (0..k).fold(1.0, |acc, i| acc * f64::from(n - i) / f64::from(i + 1))
}

/// τ-bench's pass^k for one task with `c` successes in `n` trials: the chance that k trials drawn without
/// replacement all succeed, C(c, k) / C(n, k).
pub fn pass_hat_k(c: u32, n: u32, k: u32) -> f64 {
    if n == 0 || k == 0 || k > n {
        return f64::NAN;
    }
    choose(c, k) / choose(n, k)
}

fn percentile(sorted: &[f64], p: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = (p * (sorted.len() - 1) as f64).round() as usize;
    Some(sorted[rank.min(sorted.len() - 1)])
}

/// The figures for one model × mode × temperature.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ConfigSummary {
    pub model: String,
    pub mode: String,
    pub temperature: f32,
    pub runs: u32,
    /// Runs whose ground truth was available (the denominator of the success rate).
    pub scored: u32,
    pub successes: u32,
    pub success_rate: Option<f64>,
    pub wilson_95: (f64, f64),
    /// pass^k for k = 1..=seeds, averaged over tasks with that many scored trials.
    pub pass_hat_k: Vec<(u32, f64)>,
    /// Completed runs whose accepted final answer was still scored wrong (the scorer's `wrong_accepted`:
    /// a verified answer that fails the checks, or a verified answer on a task that cannot be verified).
    pub accepted_but_wrong: u32,
    /// Runs that ended with an answer whose claims were not all verified (each named), on a task that
    /// could be answered: neither a success nor a wrong answer.
    #[serde(default)]
    pub abstained: u32,
    pub ground_truth_unavailable: u32,
    pub stop_reasons: BTreeMap<String, u32>,
    pub rejected_finals: BTreeMap<String, u32>,
    pub invalid_decisions: BTreeMap<String, u32>,
    pub failed_checks: BTreeMap<String, u32>,
    pub per_task: BTreeMap<String, (u32, u32)>,
    pub mean_input_tokens: f64,
    pub mean_output_tokens: f64,
    pub decision_latency_p50_ms: Option<f64>,
    pub decision_latency_p95_ms: Option<f64>,
    pub wall_per_run_p50_s: Option<f64>,
    pub wall_per_run_mean_s: f64,
    pub wall_total_s: f64,
    /// Per-step grammar build time (build + render), median and 95th percentile.
    pub grammar_p50_ms: Option<f64>,
    pub grammar_p95_ms: Option<f64>,
}

/// Groups records by (model, mode, temperature) and computes every figure.
pub fn summarize(records: &[RunRecord]) -> Vec<ConfigSummary> {
    let mut groups: BTreeMap<(String, String, String), Vec<&RunRecord>> = BTreeMap::new();
    for r in records {
        groups
            .entry((
                r.model.clone(),
                r.mode.clone(),
                format!("{}", r.temperature),
            ))
            .or_default()
            .push(r);
    }
    groups
        .into_values()
        .map(|rs| {
            let first = rs[0];
            let scored: Vec<&&RunRecord> = rs.iter().filter(|r| r.task_success.is_some()).collect();
            let successes = scored
                .iter()
                .filter(|r| r.task_success == Some(true))
                .count() as u32;
            let mut per_task: BTreeMap<String, (u32, u32)> = BTreeMap::new();
            for r in &scored {
                let entry = per_task.entry(r.task.clone()).or_default();
                entry.1 += 1;
                entry.0 += u32::from(r.task_success == Some(true));
            }
            let max_k = per_task.values().map(|(_, n)| *n).max().unwrap_or(0);
            let pass_hat_k = (1..=max_k)
                .map(|k| {
                    let values: Vec<f64> = per_task
                        .values()
                        .filter(|(_, n)| *n >= k)
                        .map(|(c, n)| pass_hat_k(*c, *n, k))
                        .collect();
                    (k, values.iter().sum::<f64>() / values.len().max(1) as f64)
                })
                .collect();
            let count = |f: &dyn Fn(&RunRecord) -> Vec<String>| {
                let mut m: BTreeMap<String, u32> = BTreeMap::new();
                for r in &rs {
                    for key in f(r) {
                        *m.entry(key).or_default() += 1;
                    }
                }
                m
            };
            let sum_maps = |f: &dyn Fn(&RunRecord) -> &BTreeMap<String, u32>| {
                let mut m: BTreeMap<String, u32> = BTreeMap::new();
                for r in &rs {
                    for (k, v) in f(r) {
                        *m.entry(k.clone()).or_default() += v;
                    }
                }
                m
            };
            let mut latencies: Vec<f64> = rs
                .iter()
                .flat_map(|r| r.decision_latency_ms.iter().copied())
                .collect();
            latencies.sort_by(f64::total_cmp);
            let mut grammar: Vec<f64> = rs
                .iter()
                .flat_map(|r| r.grammar_ms.iter().copied())
                .collect();
            grammar.sort_by(f64::total_cmp);
            let mut walls: Vec<f64> = rs.iter().map(|r| r.wall_ms / 1e3).collect();
            walls.sort_by(f64::total_cmp);
            let n = rs.len() as f64;
            ConfigSummary {
                model: first.model.clone(),
                mode: first.mode.clone(),
                temperature: first.temperature,
                runs: rs.len() as u32,
                scored: scored.len() as u32,
                successes,
                success_rate: (!scored.is_empty())
                    .then(|| f64::from(successes) / scored.len() as f64),
                wilson_95: wilson(successes, scored.len() as u32),
                pass_hat_k,
                accepted_but_wrong: rs
                    .iter()
                    .filter(|r| match r.outcome.as_deref() {
                        Some(outcome) => outcome == "wrong_accepted",
                        None => r.status == "completed" && r.task_success == Some(false),
                    })
                    .count() as u32,
                abstained: rs.iter().filter(|r| r.outcome.as_deref() == Some("abstained")).count() as u32,
                ground_truth_unavailable: rs
                    .iter()
                    .filter(|r| r.ground_truth.starts_with("unavailable"))
                    .count() as u32,
                stop_reasons: count(&|r| vec![r.stop_reason.clone()]),
                rejected_finals: sum_maps(&|r| &r.rejected_finals),
                invalid_decisions: sum_maps(&|r| &r.invalid_decisions),
                // Only runs scored wrong: a successful run's checks hold false leaves too (the other
                // alternatives of an any_of group).
                failed_checks: count(&|r| if r.task_success == Some(false) { failed_checks(&r.checks) } else { Vec::new() }),
                per_task,
                mean_input_tokens: rs.iter().map(|r| r.input_tokens as f64).sum::<f64>() / n,
                mean_output_tokens: rs.iter().map(|r| r.output_tokens as f64).sum::<f64>() / n,
                decision_latency_p50_ms: percentile(&latencies, 0.5),
                decision_latency_p95_ms: percentile(&latencies, 0.95),
                wall_per_run_p50_s: percentile(&walls, 0.5),
                wall_per_run_mean_s: walls.iter().sum::<f64>() / n,
                wall_total_s: walls.iter().sum::<f64>(),
                grammar_p50_ms: percentile(&grammar, 0.5),
                grammar_p95_ms: percentile(&grammar, 0.95),
            }
        })
        .collect()
}

/// Names of the Task Success checks that failed, from the metrics' breakdown (any object whose boolean
/// leaves are false; `evidence[2]` style for arrays). `expected` is what the ground truth says (a verdict
/// of false is not a failed check).
fn failed_checks(checks: &Value) -> Vec<String> {
    fn walk(prefix: &str, v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Bool(false) => out.push(prefix.to_owned()),
            Value::Object(m) => {
                for (k, v) in m.iter().filter(|(k, _)| k.as_str() != "expected") {
                    let p = if prefix.is_empty() {
                        k.clone()
                    } else {
                        format!("{prefix}.{k}")
                    };
                    walk(&p, v, out);
                }
            }
            Value::Array(items) => {
                for (i, v) in items.iter().enumerate() {
                    walk(&format!("{prefix}[{i}]"), v, out);
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk("", checks, &mut out);
    out
}

fn percent(x: Option<f64>) -> String {
    x.map_or("n/a".into(), |x| format!("{:.0} %", x * 100.0))
}

/// `report.md`: the side-by-side table, the per-task table and the failure breakdown.
pub fn report_markdown(summaries: &[ConfigSummary], note: &str) -> String {
    let mut s = String::from("# Evaluation report\n\n");
    if !note.is_empty() {
        s.push_str(note);
        s.push_str("\n\n");
    }
    s.push_str("| model | mode | temperature | Task Success | 95 % Wilson | pass^k | accepted but wrong | abstained | GT unavailable | decision p50 / p95 | wall per run (p50) | tokens in / out (mean) |\n");
    s.push_str("|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for c in summaries {
        let pass = c
            .pass_hat_k
            .iter()
            .map(|(k, v)| format!("k={k}: {:.2}", v))
            .collect::<Vec<_>>()
            .join(", ");
        s.push_str(&format!(
            "| {} | {} | {} | {}/{} ({}) | {:.0}–{:.0} % | {} | {} | {} | {} | {} / {} ms | {} s | {:.0} / {:.0} |\n",
            c.model,
            c.mode,
            c.temperature,
            c.successes,
            c.scored,
            percent(c.success_rate),
            c.wilson_95.0 * 100.0,
            c.wilson_95.1 * 100.0,
            if pass.is_empty() { "n/a".into() } else { pass },
            c.accepted_but_wrong,
            c.abstained,
            c.ground_truth_unavailable,
            c.decision_latency_p50_ms.map_or("n/a".into(), |v| format!("{v:.0}")),
            c.decision_latency_p95_ms.map_or("n/a".into(), |v| format!("{v:.0}")),
            c.wall_per_run_p50_s.map_or("n/a".into(), |v| format!("{v:.1}")),
            c.mean_input_tokens,
            c.mean_output_tokens,
        ));
    }
    let tasks: Vec<&String> = {
        let mut t: Vec<&String> = summaries.iter().flat_map(|c| c.per_task.keys()).collect();
        t.sort();
        t.dedup();
        t
    };
    s.push_str("\n## Per task (successes / scored runs)\n\n| task |");
    for c in summaries {
        s.push_str(&format!(" {} {} t={} |", c.model, c.mode, c.temperature));
    }
    s.push_str("\n|---|");
    s.push_str(&"---|".repeat(summaries.len()));
    s.push('\n');
    for task in tasks {
        s.push_str(&format!("| {task} |"));
        for c in summaries {
            match c.per_task.get(task) {
                Some((ok, n)) => s.push_str(&format!(" {ok}/{n} |")),
                None => s.push_str(" – |"),
            }
        }
        s.push('\n');
    }
    s.push_str("\n## Failure breakdown\n\n");
    for c in summaries {
        let list = |m: &BTreeMap<String, u32>| {
            if m.is_empty() {
                "none".to_owned()
            } else {
                m.iter()
                    .map(|(k, v)| format!("{k} {v}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        };
        s.push_str(&format!(
            "- **{} {} t={}** — stop reasons: {}; rejected finals: {}; invalid decisions: {}; failed checks: {}\n",
            c.model,
            c.mode,
            c.temperature,
            list(&c.stop_reasons),
            list(&c.rejected_finals),
            list(&c.invalid_decisions),
            list(&c.failed_checks),
        ));
    }
    s
}

/// Writes `summary.json`, `report.md` and `success.png` (success per task, one bar series per
/// mode × temperature) into `out_dir`.
pub fn write_reports(
    out_dir: &Path,
    summaries: &[ConfigSummary],
    note: &str,
) -> Result<(), EvalError> {
    let write = |name: &str, bytes: &[u8]| {
        let path = out_dir.join(name);
        fs::write(&path, bytes).map_err(|source| EvalError::Write {
            path: path.display().to_string(),
            source,
        })
    };
    let json = serde_json::json!({ "note": note, "configs": summaries });
    write(
        "summary.json",
        (serde_json::to_string_pretty(&json).expect("summaries serialise") + "\n").as_bytes(),
    )?;
    write("report.md", report_markdown(summaries, note).as_bytes())?;
    let mut tasks: Vec<String> = summaries
        .iter()
        .flat_map(|c| c.per_task.keys().cloned())
        .collect();
    tasks.sort();
    tasks.dedup();
    if tasks.is_empty() {
        return Ok(());
    }
    let series: Vec<(String, Vec<f64>)> = summaries
        .iter()
        .map(|c| {
            let name = format!("{} t={}", c.mode, c.temperature);
            let values = tasks
                .iter()
                .map(|t| {
                    c.per_task.get(t).map_or(0.0, |(ok, n)| {
                        100.0 * f64::from(*ok) / f64::from((*n).max(1))
                    })
                })
                .collect();
            (name, values)
        })
        .collect();
    let title = format!(
        "Task Success per task — {}",
        summaries.first().map_or("", |c| c.model.as_str())
    );
    let png = runtime::tools::plot::render_grouped_png(&title, &tasks, &series, "Task Success (%)")
        .map_err(|e| EvalError::Chart(e.to_string()))?;
    write("success.png", &png)
}

/// The folder a model's evaluation writes to: `<root>/<model name>`.
pub fn out_dir(root: &Path, model_name: &str) -> PathBuf {
    root.join(model_name)
}

#[cfg(test)]
mod tests {
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
        assert_eq!(results, (0..workers).map(|j| (j, workers)).collect::<Vec<_>>());
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
        verdict_false.checks = serde_json::json!({"verdict": {"expected": false, "found": "met", "ok": false}});
        assert_eq!(failed_checks(&verdict_false.checks), ["verdict.ok"]);
        assert_eq!(s.per_task["a"], (1, 2));
        let md = report_markdown(&summarize(&records), "");
        assert!(md.contains("| m | guided | 0.7 | 1/3 (33 %)"), "{md}");
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
