//! A decision for this step: the policy asked (with repair notes on an invalid proposal), the proposal parsed
//! exactly, a final answer through its gate (evidence, claims, verdicts), guard stops.

use std::time::Instant;

use serde_json::{Value, json};

use crate::StopReason;
use crate::claims;
use crate::decision::{Decision, FinalDecision, decision_schema, parse_decision};
use crate::guards::GuardKind;
use crate::policy::{Gap, Policy, RepairNote};

use super::*;

impl Run<'_, '_> {
    /// One step's decision: the first call plus up to `max_retries` repairs in the same step.
    pub(super) fn obtain_decision(&mut self, policy: &mut dyn Policy) -> Result<Decision, End> {
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
            let (started_phase, completed_phase) = if attempt == 0 {
                ("model.started", "model.completed")
            } else {
                ("model.repair.started", "model.repair.completed")
            };
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
                    let failed_phase = if attempt == 0 {
                        "model.failed"
                    } else {
                        "model.repair.failed"
                    };
                    self.emit(
                        failed_phase,
                        attempt,
                        json!({ "code": policy_error_code(&error), "message": message }),
                    );
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
                    let phase = if attempt == 0 {
                        "decision.valid"
                    } else {
                        "decision.repaired"
                    };
                    if attempt > 0 {
                        self.counters.recovered += 1;
                    }
                    let summary = self.summarize(&decision);
                    self.emit(
                        phase,
                        attempt,
                        json!({ "decision": decision.to_json(), "summary": summary }),
                    );
                    return Ok(decision);
                }
                Err(error) => {
                    self.counters.invalid_decisions += 1;
                    if attempt == 0 {
                        self.counters.recoverable_failures += 1;
                    }
                    self.emit(
                        "decision.invalid",
                        attempt,
                        json!({ "code": error.code(), "error": error.to_string() }),
                    );
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
            repair
                .as_ref()
                .map_or("invalid_decision", |r| r.error_code.as_str()),
            repair
                .as_ref()
                .map_or_else(String::new, |r| r.error.clone()),
        ))
    }

    /// A short public description of the decision, written by the runtime (not the model).
    pub(super) fn summarize(&self, decision: &Decision) -> String {
        match decision {
            Decision::Action(action) => match self.task.gap(self.ledger.records()) {
                Gap::Tool { tool, hint, .. } if tool == action.tool => {
                    format!("run {} to {hint}", action.tool)
                }
                _ => format!("run {}", action.tool),
            },
            Decision::Final(final_decision) => {
                format!(
                    "answer citing {} observation(s)",
                    final_decision.evidence_ids.len()
                )
            }
        }
    }

    /// The evidence gate: every required tool has a successful observation and the final cites
    /// the latest one of each; every cited id exists, succeeded and is current.
    pub(super) fn final_gate(
        &mut self,
        final_decision: FinalDecision,
    ) -> Result<FinalDecision, Option<End>> {
        let found = self.task.evidence(self.ledger.records());
        let items = self.task.required_evidence();
        let cited = &final_decision.evidence_ids;
        let unknown: Vec<&String> = cited
            .iter()
            .filter(|id| self.ledger.get(id).is_none())
            .collect();
        let failed: Vec<&String> = cited
            .iter()
            .filter(|id| self.ledger.get(id).is_some_and(|r| !r.ok))
            .collect();
        // Superseded: an item would accept it, but a later observation is that item's evidence now.
        let stale: Vec<&String> = cited
            .iter()
            .filter(|id| {
                self.ledger.get(id).is_some_and(|r| {
                    let accepting: Vec<usize> =
                        (0..items.len()).filter(|&i| items[i].accepts(r)).collect();
                    !accepting.is_empty()
                        && accepting
                            .iter()
                            .all(|&i| found[i].as_deref() != Some(id.as_str()))
                })
            })
            .collect();
        let missing: Vec<String> = items
            .iter()
            .zip(&found)
            .filter(|(_, id)| id.is_none())
            .map(|(item, _)| item.describe())
            .collect();
        let uncited: Vec<&String> = found
            .iter()
            .flatten()
            .filter(|id| !cited.contains(id))
            .collect();
        let join = |ids: &[&String]| {
            ids.iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        };
        let rejection = if !unknown.is_empty() {
            Some((
                "final_unknown_evidence",
                format!(
                    "evidence_ids name observations that do not exist: {}",
                    join(&unknown)
                ),
            ))
        } else if !failed.is_empty() {
            Some((
                "final_failed_evidence",
                format!("evidence_ids cite failed observations: {}", join(&failed)),
            ))
        } else if !stale.is_empty() {
            Some((
                "final_stale_evidence",
                format!(
                    "evidence_ids cite superseded observations: {}; cite the latest successful one of each tool",
                    join(&stale)
                ),
            ))
        } else if !missing.is_empty() {
            Some((
                "final_missing_evidence",
                format!(
                    "no successful observation yet from: {}; run it before answering",
                    missing.join(", ")
                ),
            ))
        } else if !uncited.is_empty() {
            Some((
                "final_uncited_evidence",
                format!("evidence_ids must also cite: {}", join(&uncited)),
            ))
        } else {
            None
        };
        // The evidence is complete and current: now what the answer says must agree with it.
        let checked = match rejection {
            Some(rejection) => Err(rejection),
            None => claims::check(self.task, &self.ledger, &final_decision)
                .map_err(|r| (r.code, r.message)),
        };
        match checked {
            Ok(claims) => {
                self.emit(
                    "final.validated",
                    0,
                    json!({ "accepted": true, "evidence_ids": cited, "claims": claims.to_json() }),
                );
                // An abstention reads as one: each claim the gate could not verify is marked in the text.
                let answer = claims::marked_answer(self.task, &final_decision.answer, &claims);
                self.verification = Some(claims);
                self.counters.recovered += std::mem::take(&mut self.pending_recovery);
                Ok(FinalDecision {
                    answer,
                    ..final_decision
                })
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
                self.feedback
                    .push(format!("final answer rejected ({code}): {message}"));
                if self
                    .guards
                    .record_rejected_final(&final_decision.answer, cited)
                {
                    return Err(Some(self.guard_stop(
                        GuardKind::RepeatedFinal,
                        json!({ "evidence_ids": cited }),
                    )));
                }
                Err(None)
            }
        }
    }

    pub(super) fn guard_stop(&mut self, kind: GuardKind, detail: Value) -> End {
        self.counters.loop_guard_fired = true;
        let mut data = json!({ "code": kind.code() });
        if let (Some(map), Value::Object(extra)) = (data.as_object_mut(), detail) {
            map.extend(extra);
        }
        self.emit(kind.phase(), 0, data);
        End::stop(StopReason::LoopDetected)
    }
}
