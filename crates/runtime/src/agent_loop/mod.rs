//! The agent loop: one task, one policy, budgets and guards, to a terminal (status, stop_reason).
//!
//! Order per step (runner specification, section 20): cancellation and budgets → policy call →
//! token/time check → decision parse with in-step repair → final gate, or argument validation →
//! guards → budgeted tool attempts with retry → observation → result guard. Stage 06's
//! `StopController` makes the end-of-step call (verified final → completed, step budget →
//! max_steps); stage 04's `run_with_retry` replays retryable tool errors; stage 02's
//! `LoopState` holds the observations (via [`crate::ledger::Ledger`]).
//! This module never parses model text itself, never runs a tool on the caller's thread and never
//! panics on bad model output.
//!
//! Here: the run's types, the step loop and the end. `decide` obtains and checks a decision (repair, the
//! final-answer gate); `act` runs an action (argument checks, guards, budgeted attempts with retry).

mod act;
mod decide;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Instant;

use retry_policy::Retryable;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use stop_conditions::{StopController, StopDecision, StopFacts, StopReason as StageStopReason};

use crate::budget::{BudgetMeter, Budgets};
use crate::decision::{Decision, FinalDecision};
use crate::grounding::Grounding;
use crate::guards::Guards;
use crate::ledger::{Ledger, ObservationRecord, VIEW_FEEDBACK};
use crate::metrics::{self, Counters, Expected, GroundTruth, Metrics, MetricsInput};
use crate::policy::{
    DecisionRequest, Gap, Policy, PolicyError, RepairNote, ResultKind, RunControl,
};
use crate::registry::ToolRegistry;
use crate::task::Task;
use crate::tools::{ArtifactRecord, ArtifactStore, ToolError};
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
    /// The accepted range of a request's `tool_timeout_seconds`, inclusive: the one tool timeout a caller
    /// may set (each attempt still waits at most the run's remaining wall time).
    pub const TOOL_TIMEOUT_SECONDS: (u64, u64) = (1, 120);

    pub fn new(
        run_id: impl Into<String>,
        knowledge_dir: impl Into<PathBuf>,
        artifact_dir: impl Into<PathBuf>,
    ) -> Self {
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

/// The result of a run the runtime never ran or could not finish — cancelled while queued, interrupted by a
/// restart, failed to start — as the service seals it: the [`RunResult`] fields such a run can have, with
/// nothing accepted, no metrics, no artifacts and nothing verified. The same value is the data of the
/// `run.finished` event ([`UnfinishedResult::new`]) and, with the run's id and event count, its result file
/// ([`UnfinishedResult::for_run`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UnfinishedResult {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    pub status: RunStatus,
    pub stop_reason: StopReason,
    pub final_answer: Option<String>,
    pub evidence_ids: Vec<String>,
    pub metrics: Option<Metrics>,
    pub artifacts: Vec<ArtifactRecord>,
    pub steps: u32,
    /// Trace events with the `run.finished` one (the result file only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub events: Option<u64>,
    /// Who wrote the seal instead of the runtime (the event only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sealed_by: Option<String>,
    /// The error's code, when there is an error.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<RunError>,
    /// Always absent: no answer was accepted, so nothing was verified.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verification: Option<crate::claims::Verification>,
}

impl UnfinishedResult {
    /// The `run.finished` data of a run stopped for `stop` after `steps` steps, sealed by `sealed_by`. The
    /// status is the stop reason's own ([`StopReason::status`]).
    pub fn new(stop: StopReason, steps: u32, error: Option<RunError>, sealed_by: &str) -> Self {
        UnfinishedResult {
            run_id: None,
            status: stop.status(),
            stop_reason: stop,
            final_answer: None,
            evidence_ids: Vec::new(),
            metrics: None,
            artifacts: Vec::new(),
            steps,
            events: None,
            sealed_by: Some(sealed_by.to_owned()),
            reason: error.as_ref().map(|e| e.code.clone()),
            error,
            verification: None,
        }
    }

    /// The same seal as the run's result file: its id and its event count, not who sealed it.
    pub fn for_run(self, run_id: &str, events: u64) -> Self {
        UnfinishedResult {
            run_id: Some(run_id.to_owned()),
            events: Some(events),
            sealed_by: None,
            ..self
        }
    }
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
    let policy_control = RunControl {
        cancel: control.cancel.clone(),
        shutdown: control.shutdown.clone(),
        deadline: meter.deadline,
    };
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
        disputes: 0,
        reopened: None,
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
            let message = errors
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("; ");
            End::error(StopReason::RuntimeError, "invalid_budgets", message)
        }
        Ok(()) => run.steps(policy),
    };
    // Every cancellation path ends `Cancelled`; the one place that tells a host shutdown apart.
    let end = if end.reason == StopReason::Cancelled && control.is_shutdown() {
        End {
            reason: StopReason::Shutdown,
            ..end
        }
    } else {
        end
    };
    run.finish(end, started)
}

/// How the loop ended, before metrics.
struct End {
    reason: StopReason,
    /// Boxed: a final with its slots is large, and `End` travels in every step's `Err`.
    accepted: Option<Box<FinalDecision>>,
    error: Option<RunError>,
}

impl End {
    fn stop(reason: StopReason) -> Self {
        Self {
            reason,
            accepted: None,
            error: None,
        }
    }
    fn error(reason: StopReason, code: &str, message: impl Into<String>) -> Self {
        Self {
            reason,
            accepted: None,
            error: Some(RunError {
                code: code.into(),
                message: message.into(),
            }),
        }
    }
    fn from_policy_error(error: &PolicyError) -> Self {
        match error {
            PolicyError::ModelUnavailable(_) => Self::error(
                StopReason::ModelUnavailable,
                "model_unavailable",
                error.to_string(),
            ),
            PolicyError::Cancelled => Self::stop(StopReason::Cancelled),
            PolicyError::Timeout => Self::stop(StopReason::Timeout),
            PolicyError::Runtime(_) => {
                Self::error(StopReason::RuntimeError, "policy_failed", error.to_string())
            }
            PolicyError::ScriptExhausted(_) => Self::error(
                StopReason::RuntimeError,
                "script_exhausted",
                error.to_string(),
            ),
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
    /// Finals the claims gate disputed (the answer disagrees with the runtime's own check): after
    /// `max_retries` repairs the next one is accepted as an abstention naming the disagreement.
    disputes: u32,
    /// The calculator observation a dispute re-opened (once per run): the next steps ask for it again instead
    /// of only the final, since the model's own calculation is what its answer followed.
    reopened: Option<Reopened>,
}

/// A calculator observation a dispute re-opened, and what the steps asking for it again say about it.
struct Reopened {
    id: String,
    /// Which required item it answered: the rule check (a verdict dispute) or the calculation (a quantity the
    /// answer states is not the one its slot names).
    kind: ResultKind,
    /// Where the re-opened rule check parted from the rule (empty when the gate named nothing).
    note: String,
}

impl Reopened {
    /// The mark on the old observation in the state view.
    fn mark(&self) -> &'static str {
        match self.kind {
            ResultKind::Boolean => "disputed: the verdict it gave is not the rule's; see feedback",
            _ => "disputed: the answer's quantity is not what this computes; see feedback",
        }
    }

    /// The key of the rejection event that names it (`rule_check_reopened`, `calculation_reopened`).
    fn event_key(&self) -> &'static str {
        match self.kind {
            ResultKind::Boolean => "rule_check_reopened",
            _ => "calculation_reopened",
        }
    }
}

impl Run<'_, '_> {
    fn emit(&mut self, phase: &str, attempt: u32, data: Value) {
        let count = self.ledger.len() as u32;
        let budget = self.meter.snapshot();
        self.tracer
            .emit(phase, self.step, attempt, data, count, budget);
    }

    fn steps(&mut self, policy: &mut dyn Policy) -> End {
        let budgets = &self.config.budgets;
        let controller = match StopController::new(budgets.max_steps, budgets.repeated_action_limit)
        {
            Ok(controller) => controller,
            Err(error) => {
                return End::error(
                    StopReason::RuntimeError,
                    "invalid_budgets",
                    error.to_string(),
                );
            }
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
            let facts = StopFacts {
                step_count: step,
                verified: accepted.is_some(),
                ..StopFacts::default()
            };
            if let StopDecision::Stop(reason) = controller.decide(facts) {
                return match reason {
                    StageStopReason::VerifiedSuccess => End {
                        reason: StopReason::Completed,
                        accepted: accepted.map(Box::new),
                        error: None,
                    },
                    StageStopReason::StepBudgetExhausted => End::stop(StopReason::MaxSteps),
                    other => End::error(
                        StopReason::RuntimeError,
                        "unexpected_stop",
                        format!("stop controller said {other}"),
                    ),
                };
            }
        }
        End::stop(StopReason::MaxSteps)
    }

    fn request(
        &self,
        attempt: u32,
        repair: Option<RepairNote>,
        max_new_tokens: u32,
    ) -> DecisionRequest {
        let start = self.feedback.len().saturating_sub(VIEW_FEEDBACK);
        // Form and grounding only: the runtime's reading of the rule and of the answer's slots stays with
        // the claims gate, which checks what the model wrote against it (a second opinion, never an offer).
        // Only what a final may cite grounds it: a re-opened observation's numbers no longer do.
        let grounding = Grounding::build(self.current_records(), &self.task_texts());
        DecisionRequest {
            step: self.step,
            attempt,
            task: self.task.text().to_owned(),
            tools: self.registry.cards(),
            state: json!({
                "observations": self.observations_view(),
                "feedback": &self.feedback[start..],
                "budget": self.meter.remaining_json(),
            }),
            gap: self.gap(),
            missing: self
                .task
                .missing(self.current_records())
                .iter()
                .map(|e| format!("{}: {}", e.describe(), e.hint))
                .collect(),
            grounding,
            answer_template: self.task.file.answer_template.clone(),
            verdict_phrases: self.task.verdict_phrases(),
            succeeded_actions: self.succeeded_actions.clone(),
            repair,
            max_new_tokens,
        }
    }

    /// The step the task needs next; while a calculation or rule check a dispute re-opened is asked for again, its
    /// hint carries what the gate named about the old one (never a value or row the runtime computed).
    fn gap(&self) -> Gap {
        let mut gap = self.task.gap(self.current_records());
        if let Some(reopened) = &self.reopened
            && !reopened.note.is_empty()
            && let Gap::Tool { hint, result, .. } = &mut gap
            && *result == Some(reopened.kind)
        {
            hint.push_str(&format!(" (again; {})", reopened.note));
        }
        gap
    }

    /// The ledger's compact view, the re-opened observation marked where it stands: left unmarked, the 1.5B
    /// copied a re-opened rule check byte for byte into the check it was asked to write again.
    fn observations_view(&self) -> Vec<Value> {
        let mut view = self.ledger.compact_view();
        if let Some(old) = &self.reopened {
            for entry in view.iter_mut().filter(|e| e["id"] == old.id.as_str()) {
                entry["note"] = json!(old.mark());
            }
        }
        view
    }

    /// The observation a dispute re-opened, if any.
    fn reopened_record(&self) -> Option<&ObservationRecord> {
        self.ledger.get(&self.reopened.as_ref()?.id)
    }

    /// The observations the next step builds on: every one but the one a dispute re-opened.
    fn current_records(&self) -> impl Iterator<Item = &ObservationRecord> + Clone {
        let reopened = self.reopened.as_ref().map(|r| r.id.as_str());
        self.ledger
            .records()
            .filter(move |r| Some(r.id.as_str()) != reopened)
    }

    /// The task's own words, whose numbers a decision may repeat (task text and answer template).
    fn task_texts(&self) -> [&str; 2] {
        [self.task.text(), self.task.file.answer_template.as_str()]
    }

    fn finish(mut self, end: End, started: Instant) -> RunResult {
        let status = end.reason.status();
        let observations: Vec<ObservationRecord> = self.ledger.records().cloned().collect();
        // Ground truth is loaded for every run and its availability always reported: a missing or
        // invalid expected.json must never look like a scored run.
        let expected = Expected::load(self.task.dir());
        let ground_truth = match GroundTruth::from_load(&expected) {
            GroundTruth::Unavailable { reason, message } => GroundTruth::Unavailable {
                reason,
                message: self.tracer.scrub_text(&message),
            },
            loaded => loaded,
        };
        let metrics = if matches!(
            end.reason,
            StopReason::ModelUnavailable | StopReason::RuntimeError
        ) {
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
            Some(metrics::compute(
                &input,
                expected.as_ref().ok(),
                &self.task.verdict_phrases(),
            ))
        };
        let final_answer = end.accepted.as_ref().map(|f| f.answer.clone());
        let evidence_ids = end
            .accepted
            .as_ref()
            .map(|f| f.evidence_ids.clone())
            .unwrap_or_default();
        let error = end.error.map(|e| RunError {
            code: e.code,
            message: self.tracer.scrub_text(&e.message),
        });
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
            observations: observations
                .iter()
                .map(|o| self.tracer.scrub_value(o.to_json()))
                .collect(),
            verification: self.verification,
        }
    }
}
