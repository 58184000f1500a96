//! The agent loop: one task, one policy, budgets and guards, to a terminal (status, stop_reason).
//!
//! Order per step (runner specification, section 20): cancellation and budgets → policy call →
//! token/time check → decision parse with in-step repair → final gate, or argument validation →
//! guards → budgeted tool attempts with retry → observation → result guard. Stage 06's
//! `StopController` makes the end-of-step call (verified final → completed, step budget →
//! max_steps); stage 04's `run_with_retry` replays retryable tool errors; stage 02's
//! `LoopState` holds the observations (via [`crate::observe::Ledger`]).
//! This module never parses model text itself, never runs a tool on the caller's thread and never
//! panics on bad model output.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use retry_policy::{run_with_retry, RetryError, RetryResult, Retryable};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use stop_conditions::{StopController, StopDecision, StopFacts, StopReason as StageStopReason};

use crate::budget::{BudgetMeter, Budgets};
use crate::decision::{decision_schema, parse_decision, ActionDecision, Decision, FinalDecision};
use crate::claims;
use crate::grounding::Grounding;
use crate::guards::{result_digest, GuardKind, Guards};
use crate::metrics::{self, Counters, Expected, GroundTruth, Metrics, MetricsInput};
use crate::observe::{Ledger, ObservationError, ObservationRecord, VIEW_FEEDBACK};
use crate::policy::{DecisionRequest, Gap, Policy, PolicyError, RepairNote, RunControl};
use crate::registry::ToolRegistry;
use crate::task::Task;
use crate::tools::{call_tool, ArtifactRecord, ArtifactStore, ToolContext, ToolError, ToolOutput};
use crate::trace::{TraceEvent, Tracer};
use crate::{RunStatus, StopReason};

/// Test-only fault injection: make the n-th attempt of a tool sleep and/or fail before the real
/// tool runs. Scripted fixtures use it; the server never sets it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolFault {
    pub tool: String,
    /// 1-based attempt number of this tool within the run.
    pub call: u32,
    #[serde(default)]
    pub sleep_ms: u64,
    #[serde(default)]
    pub error: Option<ToolFaultError>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolFaultError {
    pub message: String,
    pub retryable: bool,
}

/// Everything about a run except the task and the policy.
#[derive(Debug, Clone)]
pub struct RunConfig {
    /// Opaque id (the server's job id); appears in the result, never as a path.
    pub run_id: String,
    pub budgets: Budgets,
    /// Directory of knowledge markdown files (the task names which ones may be read).
    pub knowledge_dir: PathBuf,
    /// Where this run's artifacts are written.
    pub artifact_dir: PathBuf,
    /// Overrides every tool's registry timeout (the seed's single `tool_timeout_seconds`).
    pub tool_timeout_ms: Option<u64>,
    /// Test-only fault injection (scripted fixtures); empty in normal runs.
    pub tool_faults: Vec<ToolFault>,
}

impl RunConfig {
    pub fn new(run_id: impl Into<String>, knowledge_dir: impl Into<PathBuf>, artifact_dir: impl Into<PathBuf>) -> Self {
        Self {
            run_id: run_id.into(),
            budgets: Budgets::default(),
            knowledge_dir: knowledge_dir.into(),
            artifact_dir: artifact_dir.into(),
            tool_timeout_ms: None,
            tool_faults: Vec::new(),
        }
    }
}

/// A terminal error's public code and message (absolute paths already redacted).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunError {
    pub code: String,
    pub message: String,
}

/// The outcome of [`run_task`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunResult {
    pub run_id: String,
    pub status: RunStatus,
    pub stop_reason: StopReason,
    pub final_answer: Option<String>,
    pub evidence_ids: Vec<String>,
    /// `None` when the run never reached a valid decision loop (model_unavailable, runtime_error).
    pub metrics: Option<Metrics>,
    /// Whether `expected.json` could be read; metrics needing it are `None` when it could not.
    pub ground_truth: GroundTruth,
    pub artifacts: Vec<ArtifactRecord>,
    pub steps: u32,
    /// Trace events kept (≤ 800).
    pub events: u32,
    pub error: Option<RunError>,
    /// Every observation, in order (the full ledger; the policy only ever saw a compact tail).
    pub observations: Vec<Value>,
    /// What the claims gate verified of the accepted answer (`None` without one): `verified`, or an
    /// abstention (`partial`/`unverified`) naming each claim it could not check.
    pub verification: Option<crate::claims::Verification>,
}

/// Runs one task to a terminal status. Never panics on bad model output; every run ends with a
/// `run.finished` event.
pub fn run_task(
    task: &Task,
    policy: &mut dyn Policy,
    config: &RunConfig,
    control: &RunControl,
    sink: &mut dyn FnMut(&TraceEvent),
) -> RunResult {
    let started = Instant::now();
    let tracer = Tracer::new(
        started,
        sink,
        vec![
            (config.artifact_dir.as_path(), "<artifacts>"),
            (config.knowledge_dir.as_path(), "<knowledge>"),
            (task.dir(), "<task>"),
        ],
    );
    let meter = BudgetMeter::new(config.budgets.clone(), started, control.deadline);
    let policy_control = RunControl { cancel: control.cancel.clone(), shutdown: control.shutdown.clone(), deadline: meter.deadline };
    let guards = Guards::new(
        config.budgets.repeated_action_limit.max(2),
        config.budgets.no_progress_limit.max(2),
    )
    .expect("limits clamped to the stage 06 minimum");
    let mut run = Run {
        task,
        config,
        registry: ToolRegistry::builtin(),
        tracer,
        meter,
        ledger: Ledger::new(),
        guards,
        counters: Counters::default(),
        feedback: Vec::new(),
        artifacts: ArtifactStore::new(),
        artifact_records: Vec::new(),
        policy_control,
        tool_attempts: BTreeMap::new(),
        pending_recovery: 0,
        succeeded_actions: Vec::new(),
        step: 0,
        verification: None,
    };
    run.emit(
        "run.started",
        0,
        json!({
            "run_id": config.run_id,
            "task": task.name(),
            "policy": policy.name(),
            "budgets": config.budgets,
            "required_evidence": task.required_evidence().iter().map(|e| e.describe()).collect::<Vec<_>>(),
        }),
    );
    let end = match config.budgets.validate() {
        Err(errors) => {
            let message = errors.iter().map(ToString::to_string).collect::<Vec<_>>().join("; ");
            End::error(StopReason::RuntimeError, "invalid_budgets", message)
        }
        Ok(()) => run.steps(policy),
    };
    // Every cancellation path ends `Cancelled`; the one place that tells a host shutdown apart.
    let end = if end.reason == StopReason::Cancelled && control.is_shutdown() { End { reason: StopReason::Shutdown, ..end } } else { end };
    run.finish(end, started)
}

/// How the loop ended, before metrics.
struct End {
    reason: StopReason,
    accepted: Option<FinalDecision>,
    error: Option<RunError>,
}

impl End {
    fn stop(reason: StopReason) -> Self {
        Self { reason, accepted: None, error: None }
    }
    fn error(reason: StopReason, code: &str, message: impl Into<String>) -> Self {
        Self { reason, accepted: None, error: Some(RunError { code: code.into(), message: message.into() }) }
    }
    fn from_policy_error(error: &PolicyError) -> Self {
        match error {
            PolicyError::ModelUnavailable(_) => Self::error(StopReason::ModelUnavailable, "model_unavailable", error.to_string()),
            PolicyError::Cancelled => Self::stop(StopReason::Cancelled),
            PolicyError::Timeout => Self::stop(StopReason::Timeout),
            PolicyError::Runtime(_) => Self::error(StopReason::RuntimeError, "policy_failed", error.to_string()),
            PolicyError::ScriptExhausted(_) => Self::error(StopReason::RuntimeError, "script_exhausted", error.to_string()),
        }
    }
}

fn policy_error_code(error: &PolicyError) -> &'static str {
    match error {
        PolicyError::ModelUnavailable(_) => "model_unavailable",
        PolicyError::Cancelled => "cancelled",
        PolicyError::Timeout => "timeout",
        PolicyError::Runtime(_) => "policy_failed",
        PolicyError::ScriptExhausted(_) => "script_exhausted",
    }
}

/// Why a tool attempt did not produce a result: the tool failed, or the run must stop first.
#[derive(Debug)]
enum AttemptError {
    Tool(ToolError),
    Stop(StopReason),
}

impl Retryable for AttemptError {
    fn is_transient(&self) -> bool {
        matches!(self, AttemptError::Tool(error) if error.retryable)
    }
}

struct Run<'r, 's> {
    task: &'r Task,
    config: &'r RunConfig,
    registry: &'static ToolRegistry,
    tracer: Tracer<'s>,
    meter: BudgetMeter,
    ledger: Ledger,
    guards: Guards,
    counters: Counters,
    feedback: Vec<String>,
    artifacts: ArtifactStore,
    artifact_records: Vec<ArtifactRecord>,
    policy_control: RunControl,
    /// Attempts per tool, for fault injection.
    tool_attempts: BTreeMap<String, u32>,
    /// Recoverable failures waiting for the next valid action or accepted final.
    pending_recovery: u32,
    /// Actions (as proposed) whose dispatch produced a successful observation.
    succeeded_actions: Vec<Value>,
    step: u32,
    /// The claims gate's reading of the accepted final answer.
    verification: Option<crate::claims::Verification>,
}

impl Run<'_, '_> {
    fn emit(&mut self, phase: &str, attempt: u32, data: Value) {
        let count = self.ledger.len() as u32;
        let budget = self.meter.snapshot();
        self.tracer.emit(phase, self.step, attempt, data, count, budget);
    }

    fn steps(&mut self, policy: &mut dyn Policy) -> End {
        let budgets = &self.config.budgets;
        let controller = match StopController::new(budgets.max_steps, budgets.repeated_action_limit) {
            Ok(controller) => controller,
            Err(error) => return End::error(StopReason::RuntimeError, "invalid_budgets", error.to_string()),
        };
        for step in 1..=controller.max_steps() {
            // Between steps: cancellation first, then time and tokens.
            if self.policy_control.is_cancelled() {
                return End::stop(StopReason::Cancelled);
            }
            if let Some(reason) = self.meter.exhausted_before_model_call() {
                return End::stop(reason);
            }
            self.step = step;
            self.meter.usage.steps = step;
            let decision = match self.obtain_decision(policy) {
                Ok(decision) => decision,
                Err(end) => return end,
            };
            let mut accepted = None;
            match decision {
                Decision::Final(final_decision) => match self.final_gate(final_decision) {
                    Ok(final_decision) => accepted = Some(final_decision),
                    Err(Some(end)) => return end,
                    Err(None) => {}
                },
                Decision::Action(action) => {
                    if let Some(end) = self.act(action) {
                        return end;
                    }
                }
            }
            // Stage 06 decides: a verified final ends the run even on the last step.
            let facts = StopFacts { step_count: step, verified: accepted.is_some(), ..StopFacts::default() };
            if let StopDecision::Stop(reason) = controller.decide(facts) {
                return match reason {
                    StageStopReason::VerifiedSuccess => {
                        End { reason: StopReason::Completed, accepted, error: None }
                    }
                    StageStopReason::StepBudgetExhausted => End::stop(StopReason::MaxSteps),
                    other => End::error(StopReason::RuntimeError, "unexpected_stop", format!("stop controller said {other}")),
                };
            }
        }
        End::stop(StopReason::MaxSteps)
    }

    fn request(&self, attempt: u32, repair: Option<RepairNote>, max_new_tokens: u32) -> DecisionRequest {
        let start = self.feedback.len().saturating_sub(VIEW_FEEDBACK);
        let mut grounding = Grounding::build(self.ledger.records(), &self.task_texts());
        if let Some(holds) = claims::established_verdict(&self.task, &self.ledger) {
            let phrases = self.task.verdict_phrases();
            let (said, refused) = if holds { (phrases.met, phrases.not_met) } else { (phrases.not_met, phrases.met) };
            grounding.verdict = said;
            grounding.verdict_refused = refused;
        }
        grounding.answer_offers = claims::answer_offers(self.task, &self.ledger);
        DecisionRequest {
            step: self.step,
            attempt,
            task: self.task.text().to_owned(),
            tools: self.registry.cards(),
            state: json!({
                "observations": self.ledger.compact_view(),
                "feedback": &self.feedback[start..],
                "budget": self.meter.remaining_json(),
            }),
            gap: self.task.gap(self.ledger.records()),
            missing: self.task.missing(self.ledger.records()).iter().map(|e| format!("{}: {}", e.describe(), e.hint)).collect(),
            grounding,
            answer_template: self.task.file.answer_template.clone(),
            succeeded_actions: self.succeeded_actions.clone(),
            repair,
            max_new_tokens,
        }
    }

    /// The task's own words, whose numbers a decision may repeat (task text and answer template).
    fn task_texts(&self) -> [&str; 2] {
        [self.task.text(), self.task.file.answer_template.as_str()]
    }

    /// One step's decision: the first call plus up to `max_retries` repairs in the same step.
    fn obtain_decision(&mut self, policy: &mut dyn Policy) -> Result<Decision, End> {
        let tools = self.registry.tool_names();
        let mut repair: Option<RepairNote> = None;
        for attempt in 0..=self.config.budgets.max_retries {
            if attempt > 0 {
                if self.policy_control.is_cancelled() {
                    return Err(End::stop(StopReason::Cancelled));
                }
                if let Some(reason) = self.meter.exhausted_before_model_call() {
                    return Err(End::stop(reason));
                }
            }
            let max_new_tokens = self.meter.max_new_tokens();
            let request = self.request(attempt, repair.clone(), max_new_tokens);
            let (started_phase, completed_phase) =
                if attempt == 0 { ("model.started", "model.completed") } else { ("model.repair.started", "model.repair.completed") };
            self.emit(
                started_phase,
                attempt,
                json!({
                    "policy": policy.name(),
                    "max_new_tokens": max_new_tokens,
                    "gap": request.gap,
                    "repair_code": repair.as_ref().map(|r| r.error_code.clone()),
                }),
            );
            let call_started = Instant::now();
            let outcome = policy.decide(&request, &self.policy_control);
            let latency = call_started.elapsed();
            self.meter.usage.model_calls += 1;
            self.meter.usage.model_latency += latency;
            let output = match outcome {
                Ok(output) => output,
                Err(error) => {
                    let message = self.tracer.scrub_text(&error.to_string());
                    let failed_phase = if attempt == 0 { "model.failed" } else { "model.repair.failed" };
                    self.emit(failed_phase, attempt, json!({ "code": policy_error_code(&error), "message": message }));
                    let mut end = End::from_policy_error(&error);
                    if let Some(run_error) = end.error.as_mut() {
                        run_error.message = message;
                    }
                    return Err(end);
                }
            };
            let usage = &mut self.meter.usage;
            usage.input_tokens += u64::from(output.input_tokens);
            usage.output_tokens += u64::from(output.output_tokens);
            usage.prefill_tokens_saved += u64::from(output.prefill_tokens_saved);
            // The raw text is hashed and parsed here, then dropped: it never enters the trace.
            let parsed = parse_decision(&output.raw_text, &tools);
            self.emit(
                completed_phase,
                attempt,
                json!({
                    "output_blake3": blake3::hash(output.raw_text.as_bytes()).to_hex().to_string(),
                    "output_chars": output.raw_text.chars().count(),
                    "input_tokens": output.input_tokens,
                    "output_tokens": output.output_tokens,
                    "prefill_tokens_saved": output.prefill_tokens_saved,
                    "temperature": output.temperature,
                    "latency_ms": latency.as_millis() as u64,
                }),
            );
            drop(output);
            if let Some(reason) = self.meter.exceeded_after_model_call() {
                return Err(End::stop(reason));
            }
            match parsed {
                Ok(decision) => {
                    let phase = if attempt == 0 { "decision.valid" } else { "decision.repaired" };
                    if attempt > 0 {
                        self.counters.recovered += 1;
                    }
                    let summary = self.summarize(&decision);
                    self.emit(phase, attempt, json!({ "decision": decision.to_json(), "summary": summary }));
                    return Ok(decision);
                }
                Err(error) => {
                    self.counters.invalid_decisions += 1;
                    if attempt == 0 {
                        self.counters.recoverable_failures += 1;
                    }
                    self.emit("decision.invalid", attempt, json!({ "code": error.code(), "error": error.to_string() }));
                    repair = Some(RepairNote {
                        error_code: error.code().to_owned(),
                        error: error.to_string(),
                        schema: decision_schema().clone(),
                    });
                }
            }
        }
        Err(End::error(
            StopReason::InvalidDecision,
            repair.as_ref().map_or("invalid_decision", |r| r.error_code.as_str()),
            repair.as_ref().map_or_else(String::new, |r| r.error.clone()),
        ))
    }

    /// A short public description of the decision, written by the runtime (not the model).
    fn summarize(&self, decision: &Decision) -> String {
        match decision {
            Decision::Action(action) => match self.task.gap(self.ledger.records()) {
                Gap::Tool { tool, hint, .. } if tool == action.tool => format!("run {} to {hint}", action.tool),
                _ => format!("run {}", action.tool),
            },
            Decision::Final(final_decision) => {
                format!("answer citing {} observation(s)", final_decision.evidence_ids.len())
            }
        }
    }

    /// The evidence gate: every required tool has a successful observation and the final cites
    /// the latest one of each; every cited id exists, succeeded and is current.
    fn final_gate(&mut self, final_decision: FinalDecision) -> Result<FinalDecision, Option<End>> {
        let found = self.task.evidence(self.ledger.records());
        let items = self.task.required_evidence();
        let cited = &final_decision.evidence_ids;
        let unknown: Vec<&String> = cited.iter().filter(|id| self.ledger.get(id).is_none()).collect();
        let failed: Vec<&String> = cited.iter().filter(|id| self.ledger.get(id).is_some_and(|r| !r.ok)).collect();
        // Superseded: an item would accept it, but a later observation is that item's evidence now.
        let stale: Vec<&String> = cited
            .iter()
            .filter(|id| {
                self.ledger.get(id).is_some_and(|r| {
                    let accepting: Vec<usize> = (0..items.len()).filter(|&i| items[i].accepts(r)).collect();
                    !accepting.is_empty() && accepting.iter().all(|&i| found[i].as_deref() != Some(id.as_str()))
                })
            })
            .collect();
        let missing: Vec<String> =
            items.iter().zip(&found).filter(|(_, id)| id.is_none()).map(|(item, _)| item.describe()).collect();
        let uncited: Vec<&String> = found.iter().flatten().filter(|id| !cited.contains(id)).collect();
        let join = |ids: &[&String]| ids.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ");
        let rejection = if !unknown.is_empty() {
            Some(("final_unknown_evidence", format!("evidence_ids name observations that do not exist: {}", join(&unknown))))
        } else if !failed.is_empty() {
            Some(("final_failed_evidence", format!("evidence_ids cite failed observations: {}", join(&failed))))
        } else if !stale.is_empty() {
            Some(("final_stale_evidence", format!("evidence_ids cite superseded observations: {}; cite the latest successful one of each tool", join(&stale))))
        } else if !missing.is_empty() {
            Some(("final_missing_evidence", format!("no successful observation yet from: {}; run it before answering", missing.join(", "))))
        } else if !uncited.is_empty() {
            Some(("final_uncited_evidence", format!("evidence_ids must also cite: {}", join(&uncited))))
        } else {
            None
        };
        // The evidence is complete and current: now what the answer says must agree with it.
        let checked = match rejection {
            Some(rejection) => Err(rejection),
            None => claims::check(self.task, &self.ledger, &final_decision).map_err(|r| (r.code, r.message)),
        };
        match checked {
            Ok(claims) => {
                self.emit(
                    "final.validated",
                    0,
                    json!({ "accepted": true, "evidence_ids": cited, "claims": claims.to_json() }),
                );
                self.verification = Some(claims);
                self.counters.recovered += std::mem::take(&mut self.pending_recovery);
                Ok(final_decision)
            }
            Err((code, message)) => {
                self.emit(
                    "final.validated",
                    0,
                    json!({ "accepted": false, "code": code, "message": message, "evidence_ids": cited }),
                );
                self.counters.rejected_finals += 1;
                self.counters.recoverable_failures += 1;
                self.pending_recovery += 1;
                self.feedback.push(format!("final answer rejected ({code}): {message}"));
                if self.guards.record_rejected_final(&final_decision.answer, cited) {
                    return Err(Some(self.guard_stop(GuardKind::RepeatedFinal, json!({ "evidence_ids": cited }))));
                }
                Err(None)
            }
        }
    }

    fn guard_stop(&mut self, kind: GuardKind, detail: Value) -> End {
        self.counters.loop_guard_fired = true;
        let mut data = json!({ "code": kind.code() });
        if let (Some(map), Value::Object(extra)) = (data.as_object_mut(), detail) {
            map.extend(extra);
        }
        self.emit(kind.phase(), 0, data);
        End::stop(StopReason::LoopDetected)
    }

    /// Validates an action's arguments, applies the guards, then dispatches it.
    fn act(&mut self, action: ActionDecision) -> Option<End> {
        self.counters.action_attempts += 1;
        let ActionDecision { tool, arguments } = action;
        let proposed = json!({ "tool": tool, "arguments": Value::Object(arguments.clone()) });
        let arguments = match self.registry.validate_arguments(&tool, &arguments) {
            Ok(valid) => valid,
            Err(error) => {
                let message = error.to_string();
                let feedback = format!(
                    "{tool} arguments rejected (invalid_arguments): {message}. No tool was run; send corrected arguments that follow the tool's schema."
                );
                return self.refuse_arguments(&tool, arguments, "invalid_arguments", message, feedback);
            }
        };
        // Arguments that contradict the ledger (a chart's average line computed over another column) are
        // refused the same way: recoverable, with what would agree.
        if let Err(inconsistency) = crate::consistency::check(&arguments, self.ledger.records()) {
            let feedback = format!(
                "{tool} arguments rejected ({}): {}. No tool was run.",
                inconsistency.code, inconsistency.message
            );
            return self.refuse_arguments(&tool, arguments, inconsistency.code, inconsistency.message, feedback);
        }
        self.counters.valid_actions += 1;
        self.counters.recovered += std::mem::take(&mut self.pending_recovery);
        if self.guards.record_action(&tool, &arguments) {
            // Checked before dispatch: the repeated action is not run again.
            return Some(self.guard_stop(
                GuardKind::RepeatedAction,
                json!({ "repeated_action": { "tool": tool, "arguments": Value::Object(arguments) } }),
            ));
        }
        let before = self.ledger.len();
        let end = self.dispatch(&tool, arguments);
        let succeeded = self.ledger.len() > before && self.ledger.records().last().is_some_and(|r| r.ok && r.tool == tool);
        if succeeded && !self.succeeded_actions.contains(&proposed) {
            self.succeeded_actions.push(proposed);
        }
        end
    }

    /// Records a refused action (no tool runs) as a failed observation, tells the model why, and stops
    /// on the repeated-invalid-arguments guard.
    fn refuse_arguments(
        &mut self,
        tool: &str,
        arguments: Map<String, Value>,
        code: &str,
        message: String,
        feedback: String,
    ) -> Option<End> {
        let observation = self.ledger.record_failure(
            tool,
            self.step,
            ObservationError { code: code.into(), message: message.clone(), retryable: None },
            Some(Value::Object(arguments.clone())),
        );
        let observation = match observation {
            Ok(record) => record.to_json(),
            Err(error) => return Some(End::error(StopReason::RuntimeError, "state_refused", error.to_string())),
        };
        let count = self.ledger.len();
        self.emit("tool.rejected", 0, json!({ "observation": observation, "state_delta": { "observation_count": count } }));
        self.feedback.push(feedback);
        self.counters.recoverable_failures += 1;
        self.pending_recovery += 1;
        if self.guards.record_invalid(tool, &arguments) {
            return Some(self.guard_stop(
                GuardKind::RepeatedInvalidArguments,
                json!({ "tool": tool, "validator_error": message }),
            ));
        }
        None
    }

    /// Runs a validated action with stage 04's retry: budgets before every attempt, each attempt
    /// on a worker thread bounded by min(tool timeout, remaining wall time).
    fn dispatch(&mut self, tool: &str, arguments: Map<String, Value>) -> Option<End> {
        let max_attempts = self.config.budgets.max_retries + 1;
        let tool_timeout = Duration::from_millis(self.config.tool_timeout_ms.unwrap_or_else(|| self.registry.timeout_ms(tool)));
        let mut last_error: Option<(ToolError, u32)> = None;
        let mut retryable_failures = 0;
        let outcome = run_with_retry(max_attempts, |attempt| -> Result<(ToolOutput, Duration), AttemptError> {
            if self.policy_control.is_cancelled() {
                return Err(AttemptError::Stop(StopReason::Cancelled));
            }
            if let Some(reason) = self.meter.exhausted_before_dispatch() {
                return Err(AttemptError::Stop(reason));
            }
            self.meter.usage.tool_calls += 1;
            let timeout = tool_timeout.min(self.meter.remaining_time());
            self.emit(
                "tool.started",
                attempt,
                json!({ "tool": tool, "arguments": Value::Object(arguments.clone()), "timeout_ms": timeout.as_millis() as u64 }),
            );
            let attempt_started = Instant::now();
            let result = self.execute_with_timeout(tool, &arguments, timeout);
            let latency = attempt_started.elapsed();
            self.meter.usage.tool_latency += latency;
            match result {
                Ok(output) => Ok((output, latency)),
                Err(error) => {
                    let will_retry = error.retryable && attempt < max_attempts;
                    if error.retryable {
                        self.counters.recoverable_failures += 1;
                        retryable_failures += 1;
                    }
                    let message = self.tracer.scrub_text(&error.message);
                    self.emit(
                        if will_retry { "tool.retry" } else { "tool.failed" },
                        attempt,
                        json!({
                            "tool": tool,
                            "error": { "code": error.code, "message": message, "retryable": error.retryable },
                            "latency_ms": latency.as_millis() as u64,
                        }),
                    );
                    last_error = Some((error.clone(), attempt));
                    Err(AttemptError::Tool(error))
                }
            }
        });
        match outcome {
            Ok(RetryResult { value: (output, latency), attempts }) => {
                // Earlier retryable failures of this action were recovered by this success.
                self.counters.recovered += retryable_failures;
                let digest = result_digest(tool, &output.digest_basis);
                for record in &output.artifacts {
                    if !self.artifact_records.iter().any(|r| r.id == record.id) {
                        self.artifact_records.push(record.clone());
                    }
                }
                let recorded = self
                    .ledger
                    .record_success(tool, self.step, &output, digest.clone(), latency.as_millis() as u64)
                    .map(ObservationRecord::to_json);
                let observation = match recorded {
                    Ok(observation) => observation,
                    Err(error) => return Some(End::error(StopReason::RuntimeError, "state_refused", error.to_string())),
                };
                let count = self.ledger.len();
                self.emit("tool.observation", attempts, json!({ "observation": observation, "state_delta": { "observation_count": count } }));
                if self.guards.record_result(&digest) {
                    return Some(self.guard_stop(GuardKind::RepeatedResult, json!({ "tool": tool })));
                }
                None
            }
            Err(RetryError::Permanent { error: AttemptError::Tool(error), attempts })
            | Err(RetryError::Exhausted { last: AttemptError::Tool(error), attempts }) => {
                self.record_tool_failure(tool, &error, attempts).err()
            }
            Err(RetryError::Permanent { error: AttemptError::Stop(reason), .. })
            | Err(RetryError::Exhausted { last: AttemptError::Stop(reason), .. }) => {
                // The attempts that did run still leave one observation behind.
                if let Some((error, attempts)) = last_error
                    && let Err(end) = self.record_tool_failure(tool, &error, attempts) {
                        return Some(end);
                    }
                Some(End::stop(reason))
            }
            Err(RetryError::InvalidBudget { max_attempts }) => Some(End::error(
                StopReason::RuntimeError,
                "invalid_budgets",
                format!("retry budget {max_attempts} is invalid"),
            )),
        }
    }

    fn record_tool_failure(&mut self, tool: &str, error: &ToolError, attempts: u32) -> Result<(), End> {
        let message = self.tracer.scrub_text(&error.message);
        let observation = self
            .ledger
            .record_failure(
                tool,
                self.step,
                ObservationError { code: error.code.to_owned(), message: message.clone(), retryable: Some(error.retryable) },
                None,
            )
            .map(ObservationRecord::to_json)
            .map_err(|e| End::error(StopReason::RuntimeError, "state_refused", e.to_string()))?;
        let count = self.ledger.len();
        self.emit("tool.observation", attempts, json!({ "observation": observation, "state_delta": { "observation_count": count } }));
        self.feedback.push(format!("{tool} failed ({}): {message}", error.code));
        Ok(())
    }

    /// Runs one attempt on a worker thread and waits at most `timeout`. A tool still running
    /// after the timeout is abandoned (its artifact writes stay idempotent through the store).
    fn execute_with_timeout(&mut self, tool: &str, arguments: &Map<String, Value>, timeout: Duration) -> Result<ToolOutput, ToolError> {
        let call = {
            let counter = self.tool_attempts.entry(tool.to_owned()).or_insert(0);
            *counter += 1;
            *counter
        };
        let fault = self.config.tool_faults.iter().find(|f| f.tool == tool && f.call == call).cloned();
        let (sender, receiver) = mpsc::channel();
        let tool_name = tool.to_owned();
        let arguments = arguments.clone();
        let knowledge_dir = self.config.knowledge_dir.clone();
        let allowed_sources = self.task.file.knowledge_files.clone();
        let artifact_dir = self.config.artifact_dir.clone();
        let mut store = self.artifacts.clone();
        // Column references (`mean([Wait])`) resolve against the tables observed so far, never a file.
        let columns = crate::tools::calculator::TableColumns::from_results(
            self.ledger.records().filter(|r| r.ok).filter_map(|r| r.result.as_ref()),
        );
        let spawned = std::thread::Builder::new().name(format!("forge-tool-{tool}")).spawn(move || {
            if let Some(fault) = &fault {
                if fault.sleep_ms > 0 {
                    std::thread::sleep(Duration::from_millis(fault.sleep_ms));
                }
                if let Some(error) = &fault.error {
                    let injected = ToolError { code: "injected_fault", message: error.message.clone(), retryable: error.retryable };
                    let _ = sender.send(Err(injected));
                    return;
                }
            }
            let mut ctx = ToolContext {
                knowledge_dir: &knowledge_dir,
                allowed_sources: &allowed_sources,
                artifact_dir: &artifact_dir,
                artifacts: &mut store,
                columns: &columns,
            };
            let _ = sender.send(call_tool(&tool_name, &arguments, &mut ctx));
        });
        if let Err(error) = spawned {
            return Err(ToolError::permanent("tool_spawn_failed", format!("cannot start a worker thread: {error}")));
        }
        match receiver.recv_timeout(timeout) {
            Ok(result) => result,
            Err(mpsc::RecvTimeoutError::Timeout) => Err(ToolError::transient(
                "tool_timeout",
                format!("{tool} did not finish within {} ms", timeout.as_millis()),
            )),
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                Err(ToolError::permanent("tool_crashed", format!("{tool} stopped without a result")))
            }
        }
    }

    fn finish(mut self, end: End, started: Instant) -> RunResult {
        let status = end.reason.status();
        let observations: Vec<ObservationRecord> = self.ledger.records().cloned().collect();
        // Ground truth is loaded for every run and its availability always reported: a missing or
        // invalid expected.json must never look like a scored run.
        let expected = Expected::load(self.task.dir());
        let ground_truth = match GroundTruth::from_load(&expected) {
            GroundTruth::Unavailable { reason, message } => {
                GroundTruth::Unavailable { reason, message: self.tracer.scrub_text(&message) }
            }
            loaded => loaded,
        };
        let metrics = if matches!(end.reason, StopReason::ModelUnavailable | StopReason::RuntimeError) {
            None
        } else {
            let input = MetricsInput {
                status,
                stop_reason: end.reason,
                accepted_answer: end.accepted.as_ref().map(|f| f.answer.as_str()),
                verification: self.verification.as_ref().map(|v| v.status),
                observations: &observations,
                counters: &self.counters,
                usage: &self.meter.usage,
                total_latency: started.elapsed(),
            };
            Some(metrics::compute(&input, expected.as_ref().ok(), &self.task.verdict_phrases()))
        };
        let final_answer = end.accepted.as_ref().map(|f| f.answer.clone());
        let evidence_ids = end.accepted.as_ref().map(|f| f.evidence_ids.clone()).unwrap_or_default();
        let error = end.error.map(|e| RunError { code: e.code, message: self.tracer.scrub_text(&e.message) });
        let dropped = self.tracer.dropped();
        self.emit(
            "run.finished",
            0,
            json!({
                "status": status,
                "stop_reason": end.reason,
                "final_answer": final_answer,
                "evidence_ids": evidence_ids,
                "metrics": metrics,
                "ground_truth": ground_truth,
                "error": error,
                "steps": self.meter.usage.steps,
                "artifacts": self.artifact_records,
                "dropped_events": dropped,
                "verification": self.verification,
            }),
        );
        RunResult {
            run_id: self.config.run_id.clone(),
            status,
            stop_reason: end.reason,
            final_answer,
            evidence_ids,
            metrics,
            ground_truth,
            artifacts: self.artifact_records,
            steps: self.meter.usage.steps,
            events: self.tracer.len() as u32,
            error,
            observations: observations.iter().map(|o| self.tracer.scrub_value(o.to_json())).collect(),
            verification: self.verification,
        }
    }
}

