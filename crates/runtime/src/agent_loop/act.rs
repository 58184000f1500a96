//! An action run: arguments checked against the registry, guards, then budgeted tool attempts with retry
//! on a worker thread with a timeout, and the observation (or the failure) recorded.

use std::sync::mpsc;
use std::time::{Duration, Instant};

use retry_policy::{RetryError, RetryResult, run_with_retry};
use serde_json::{Map, Value, json};

use crate::StopReason;
use crate::decision::ActionDecision;
use crate::guards::{GuardKind, result_digest};
use crate::ledger::{ObservationError, ObservationRecord};
use crate::tools::{ToolContext, ToolError, ToolOutput, call_tool};

use super::*;

impl Run<'_, '_> {
    /// Validates an action's arguments, applies the guards, then dispatches it.
    pub(super) fn act(&mut self, action: ActionDecision) -> Option<End> {
        self.counters.action_attempts += 1;
        let ActionDecision { tool, arguments } = action;
        let proposed = json!({ "tool": tool, "arguments": Value::Object(arguments.clone()) });
        let arguments = match self.registry.validate_arguments(&tool, &arguments) {
            Ok(valid) => valid,
            Err(error) => {
                let message = error.to_string();
                let feedback = error.feedback(&tool);
                return self.refuse_arguments(
                    &tool,
                    arguments,
                    "invalid_arguments",
                    message,
                    feedback,
                );
            }
        };
        // Arguments that contradict the ledger (a chart's average line computed over another column) are
        // refused the same way: recoverable, with what would agree.
        if let Err(inconsistency) = crate::chart_line::check(&arguments, self.ledger.records()) {
            let feedback = format!(
                "{tool} arguments rejected ({}): {}. No tool was run.",
                inconsistency.code, inconsistency.message
            );
            return self.refuse_arguments(
                &tool,
                arguments,
                inconsistency.code,
                inconsistency.message,
                feedback,
            );
        }
        self.counters.valid_actions += 1;
        self.counters.recovered += std::mem::take(&mut self.pending_recovery);
        // The re-opened calculation or rule check proposed again as it was: the model stands by it (see
        // `record_success`), which is no loop.
        let restates_reopened = self.reopened_record().is_some_and(|r| {
            r.tool == tool
                && r.result.as_ref().and_then(|v| v.get("expression"))
                    == arguments.get("expression")
        });
        if !restates_reopened && self.guards.record_action(&tool, &arguments) {
            // Checked before dispatch: the repeated action is not run again.
            return Some(self.guard_stop(
                GuardKind::RepeatedAction,
                json!({ "repeated_action": { "tool": tool, "arguments": Value::Object(arguments) } }),
            ));
        }
        let before = self.ledger.len();
        let end = self.dispatch(&tool, arguments);
        let succeeded = self.ledger.len() > before
            && self
                .ledger
                .records()
                .last()
                .is_some_and(|r| r.ok && r.tool == tool);
        if succeeded && !self.succeeded_actions.contains(&proposed) {
            self.succeeded_actions.push(proposed);
        }
        end
    }

    /// Records a refused action (no tool runs) as a failed observation, tells the model why, and stops
    /// on the repeated-invalid-arguments guard.
    pub(super) fn refuse_arguments(
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
            ObservationError {
                code: code.into(),
                message: message.clone(),
                retryable: None,
            },
            Some(Value::Object(arguments.clone())),
        );
        let observation = match observation {
            Ok(record) => record.to_json(),
            Err(error) => {
                return Some(End::error(
                    StopReason::RuntimeError,
                    "state_refused",
                    error.to_string(),
                ));
            }
        };
        let count = self.ledger.len();
        self.emit(
            "tool.rejected",
            0,
            json!({ "observation": observation, "state_delta": { "observation_count": count } }),
        );
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
    pub(super) fn dispatch(&mut self, tool: &str, arguments: Map<String, Value>) -> Option<End> {
        let max_attempts = self.config.budgets.max_retries + 1;
        let tool_timeout = Duration::from_millis(
            self.config
                .tool_timeout_ms
                .unwrap_or_else(|| self.registry.timeout_ms(tool)),
        );
        let mut last_error: Option<(ToolError, u32)> = None;
        let mut retryable_failures = 0;
        let outcome = run_with_retry(
            max_attempts,
            |attempt| -> Result<(ToolOutput, Duration), AttemptError> {
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
            },
        );
        match outcome {
            Ok(RetryResult {
                value: (output, latency),
                attempts,
            }) => {
                // Earlier retryable failures of this action were recovered by this success.
                self.counters.recovered += retryable_failures;
                self.record_success(tool, &output, latency, attempts)
            }
            Err(RetryError::Permanent {
                error: AttemptError::Tool(error),
                attempts,
            })
            | Err(RetryError::Exhausted {
                last: AttemptError::Tool(error),
                attempts,
            }) => self.record_tool_failure(tool, &error, attempts).err(),
            Err(RetryError::Permanent {
                error: AttemptError::Stop(reason),
                ..
            })
            | Err(RetryError::Exhausted {
                last: AttemptError::Stop(reason),
                ..
            }) => {
                // The attempts that did run still leave one observation behind.
                if let Some((error, attempts)) = last_error
                    && let Err(end) = self.record_tool_failure(tool, &error, attempts)
                {
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

    /// A successful attempt: its artifacts kept, its observation recorded and traced, and the repeated-result
    /// guard consulted (a stop when it trips).
    fn record_success(
        &mut self,
        tool: &str,
        output: &ToolOutput,
        latency: Duration,
        attempts: u32,
    ) -> Option<End> {
        let digest = result_digest(tool, &output.digest_basis);
        // The calculation or rule check asked for again after a dispute, written the same way: the model stands by
        // it. Its final is then judged (and, still disputed, ends as an abstention), never stopped as a loop.
        let restates_reopened = self
            .reopened_record()
            .is_some_and(|r| r.digest.as_deref() == Some(digest.as_str()));
        for record in &output.artifacts {
            if !self.artifact_records.iter().any(|r| r.id == record.id) {
                self.artifact_records.push(record.clone());
            }
        }
        let recorded = self
            .ledger
            .record_success(
                tool,
                self.step,
                output,
                digest.clone(),
                latency.as_millis() as u64,
            )
            .map(ObservationRecord::to_json);
        let observation = match recorded {
            Ok(observation) => observation,
            Err(error) => {
                return Some(End::error(
                    StopReason::RuntimeError,
                    "state_refused",
                    error.to_string(),
                ));
            }
        };
        let count = self.ledger.len();
        self.emit(
            "tool.observation",
            attempts,
            json!({ "observation": observation, "state_delta": { "observation_count": count } }),
        );
        if !restates_reopened && self.guards.record_result(&digest) {
            return Some(self.guard_stop(GuardKind::RepeatedResult, json!({ "tool": tool })));
        }
        None
    }

    pub(super) fn record_tool_failure(
        &mut self,
        tool: &str,
        error: &ToolError,
        attempts: u32,
    ) -> Result<(), End> {
        let message = self.tracer.scrub_text(&error.message);
        let observation = self
            .ledger
            .record_failure(
                tool,
                self.step,
                ObservationError {
                    code: error.code.to_owned(),
                    message: message.clone(),
                    retryable: Some(error.retryable),
                },
                None,
            )
            .map(ObservationRecord::to_json)
            .map_err(|e| End::error(StopReason::RuntimeError, "state_refused", e.to_string()))?;
        let count = self.ledger.len();
        self.emit(
            "tool.observation",
            attempts,
            json!({ "observation": observation, "state_delta": { "observation_count": count } }),
        );
        self.feedback
            .push(format!("{tool} failed ({}): {message}", error.code));
        Ok(())
    }

    /// Runs one attempt on a worker thread and waits at most `timeout`. A tool still running
    /// after the timeout is abandoned (its artifact writes stay idempotent through the store).
    pub(super) fn execute_with_timeout(
        &mut self,
        tool: &str,
        arguments: &Map<String, Value>,
        timeout: Duration,
    ) -> Result<ToolOutput, ToolError> {
        let call = {
            let counter = self.tool_attempts.entry(tool.to_owned()).or_insert(0);
            *counter += 1;
            *counter
        };
        let fault = self
            .config
            .tool_faults
            .iter()
            .find(|f| f.tool == tool && f.call == call)
            .cloned();
        let (sender, receiver) = mpsc::channel();
        let tool_name = tool.to_owned();
        let arguments = arguments.clone();
        let knowledge_dir = self.config.knowledge_dir.clone();
        let allowed_sources = self.task.file.knowledge_files.clone();
        let artifact_dir = self.config.artifact_dir.clone();
        let mut store = self.artifacts.clone();
        // Column references (`mean([Wait])`) resolve against the tables observed so far, never a file.
        let columns = crate::tools::calculator::TableColumns::from_results(
            self.ledger
                .records()
                .filter(|r| r.ok)
                .filter_map(|r| r.result.as_ref()),
        );
        let spawned = std::thread::Builder::new()
            .name(format!("forge-tool-{tool}"))
            .spawn(move || {
                if let Some(fault) = &fault {
                    if fault.sleep_ms > 0 {
                        std::thread::sleep(Duration::from_millis(fault.sleep_ms));
                    }
                    if let Some(error) = &fault.error {
                        let injected = ToolError {
                            code: "injected_fault",
                            message: error.message.clone(),
                            retryable: error.retryable,
                        };
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
            return Err(ToolError::permanent(
                "tool_spawn_failed",
                format!("cannot start a worker thread: {error}"),
            ));
        }
        match receiver.recv_timeout(timeout) {
            Ok(result) => result,
            Err(mpsc::RecvTimeoutError::Timeout) => Err(ToolError::transient(
                "tool_timeout",
                format!("{tool} did not finish within {} ms", timeout.as_millis()),
            )),
            Err(mpsc::RecvTimeoutError::Disconnected) => Err(ToolError::permanent(
                "tool_crashed",
                format!("{tool} stopped without a result"),
            )),
        }
    }
}
